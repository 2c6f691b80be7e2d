// app.js — the page's entry point: loads the feed, resumes at the position in the URL hash (#i=7&item=<public_id>),
// wires input, the WebSocket and the debug overlay, and publishes a read-only state object `window.videofeed` for
// tests and benchmarks, plus a `videofeed:firstframe` CustomEvent on window ({index, publicId, ms, source,
// mediaTime: the frame's time in the rendition}) when the new card paints its first frame after a swipe.
//
// The feed is live: the server's `feed` messages (socket.js) say when the listing changed. Items removed that the
// viewer has not reached go from the cards (view.js); when the listing's first item is not the page's, the
// "New videos" pill shows at the top without moving the viewer, and tapping it (or pulling down on the first card)
// reloads the listing from its first page and shows the newest item.
import { FeedSource } from './feed.js';
import { FeedView } from './view.js';
import { bindInput } from './input.js';
import { FeedSocket } from './socket.js';
import { Overlay } from './overlay.js';
import { inputTime, pickRendition } from './util.js';
import { meter, START_FACTOR } from './abr.js';

const scroller = document.getElementById('feed');
const track = document.getElementById('track');
const muteButton = document.getElementById('mute');
const statusBox = document.getElementById('status');
const newerButton = document.getElementById('newer');
const pullHint = document.getElementById('pull');

const MAX_SWIPES = 1000;      // swipes kept for `window.videofeed.swipes`

const state = { ready: false, socketStatus: 'connecting', window: null, lastSwipe: null, swipes: [], errors: [],
                warnings: [], hello: null, removed: [], lastFeed: null, newItems: false, refreshing: null,
                refreshes: 0, switches: [], policy: null };
const MAX_SWITCHES = 1000;    // rung switches kept for `window.videofeed.switches`

const settings = {
  muted: true,                // autoplay policy: start muted
  setMuted(muted) {
    settings.muted = muted;
    view.setMuted(muted);
    muteButton.classList.toggle('muted', muted);
    muteButton.setAttribute('aria-label', muted ? 'Unmute' : 'Mute');
    muteButton.title = muted ? 'Unmute (m)' : 'Mute (m)';
  },
};

// Items per page: 10, or ?limit=N (1…50) in the page's URL (the browser test pages through a short feed with it).
const pageSize = Math.min(50, Math.max(1, Number.parseInt(new URLSearchParams(location.search).get('limit'), 10) || 10));
const feed = new FeedSource(pageSize);
const view = new FeedView(scroller, track, feed, {
  settings,
  onMove: moved,
  onFrame: firstFrame,
  onFail: card => { if (card === view.card) shownError(card); },
  onGone: card => { if (card === view.card) shownRemoved(card); },
  onWarn: (card, message) => {
    const text = `${card.item.public_id}: ${message}`;
    if (!state.warnings.includes(text)) state.warnings.push(text);
    console.warn(text);
  },
  onSwitch: (card, from, to) => {
    state.switches.push({ at: performance.now(), publicId: card.item.public_id, from: from.name, to: to.name,
                          bandwidth: Math.round(meter.estimate) });
    if (state.switches.length > MAX_SWITCHES) state.switches.shift();
  },
  // The card on screen chose its rendition (after its card was filled): the server learns its codec now, not a
  // second later.
  onPick: card => { if (card === view.card) socket.at(view.indexAt(card.pos), card.item.public_id, 0, codecOf(card)); },
  onCards: () => overlay.render(),
});
const overlay = new Overlay(document.getElementById('debug'), snapshot);
const socket = new FeedSocket(answer, s => { state.socketStatus = s; overlay.render(); });

/** The codec a card plays (`h264`, `av1`), once it chose a rendition. */
function codecOf(card) {
  return card.rendition ? card.rendition.codec || null : null;
}

/** A card became current: record the swipe, tell the server, keep the position in the URL. */
function moved(card, source, t0) {
  const index = view.indexAt(card.pos);
  if (source !== 'load') {
    state.lastSwipe = { at: t0, source, index, position: card.pos, publicId: card.item.public_id,
                        firstFrameMs: null, hit: null };
    state.swipes.push(state.lastSwipe);
    if (state.swipes.length > MAX_SWIPES) state.swipes.shift();
  }
  if (card.failed) shownError(card);
  if (card.gone) shownRemoved(card);
  muteButton.classList.toggle('silent', card.item.has_audio === false);   // no sound to unmute
  sayHello(card);
  socket.at(index, card.item.public_id, 0, codecOf(card));
  const id = encodeURIComponent(card.item.public_id).replace(/%2F/gi, '/');
  history.replaceState(null, '', `#i=${index}&item=${id}`);
  overlay.render();
}

/** The new card painted its first frame (at `mediaTime` in its rendition) `ms` after the swipe's input. */
function firstFrame(card, ms, mediaTime) {
  const s = state.lastSwipe;
  if (!s || s.position !== card.pos || s.firstFrameMs != null) return;
  s.firstFrameMs = Math.round(ms * 10) / 10;
  window.dispatchEvent(new CustomEvent('videofeed:firstframe',
    { detail: { index: s.index, publicId: s.publicId, ms: s.firstFrameMs, source: s.source, mediaTime } }));
  overlay.render();
}

function shownError(card) {
  if (!state.errors.includes(card.item.public_id)) state.errors.push(card.item.public_id);
}

function shownRemoved(card) {
  if (!state.removed.includes(card.item.public_id)) state.removed.push(card.item.public_id);
}

/** `hello` names the rendition this viewer plays (for the first playable item seen) and its codec (`av1` where the
 *  card plays its AV1 renditions: the server then makes those ahead), its box in device pixels, and what its network
 *  affords: the peak rate of the rung a new card would start with when that is below the box's rung (the server
 *  makes that rung ahead, by the same rule), else nothing. Sent again when any of them changes. */
function sayHello(card) {
  if (!card) return;
  const box = view.box();
  const source = card.item.renditions && card.item.renditions.length ? card.item
    : feed.items.find(it => it.renditions && it.renditions.length);
  // Cards listed before their manifest (pending) name no rendition yet: the box alone decides the server's choice.
  const r = source && pickRendition(source.renditions, box.w, box.h);
  const capped = source && pickRendition(source.renditions, box.w, box.h, meter.estimate * START_FACTOR);
  const bandwidth = capped && r && capped !== r && capped.bandwidth > 0 ? capped.bandwidth : null;
  const codec = r && r.codec ? r.codec : null;
  if (state.hello && state.hello.width === box.w && state.hello.height === box.h && (state.hello.rendition || !r)
      && state.hello.bandwidth === bandwidth && (state.hello.codec === codec || !r)) return;
  state.hello = { type: 'hello', rendition: r ? r.name : null, width: box.w, height: box.h, bandwidth, codec };
  socket.hello(state.hello);
}
// A new estimate may change the rung new cards start with: the server's prefetch follows.
meter.onChange(() => sayHello(view.card));

/** The server's answers: `swipe` {index, hit}, `window` {current, items}, `feed` {generation, total, head,
 *  removed} and, on connect, `policy` {name, attach: {ahead, behind}, posters}: the window the page keeps. */
function answer(msg) {
  if (msg.type === 'policy') {
    const attach = msg.attach || {};
    view.setWindow({ ahead: attach.ahead, behind: attach.behind, posters: msg.posters });
    state.policy = typeof msg.name === 'string' ? msg.name : null;
  } else if (msg.type === 'feed') {
    const marked = feed.live(msg);
    if (!state.lastFeed || !Number.isInteger(msg.generation) || !Number.isInteger(state.lastFeed.generation)
        || msg.generation >= state.lastFeed.generation) {
      state.lastFeed = { generation: msg.generation, head: typeof msg.head === 'string' ? msg.head : null };
    }
    if (marked.length) view.drop();
    // An empty feed that has items now: nothing to move, so they are shown at once.
    if (started && !view.cards.length && !state.refreshing && (msg.total > 0 || msg.head)) refresh('load', null);
    showNewer();
  } else if (msg.type === 'window') {
    state.window = { current: msg.current, items: Array.isArray(msg.items) ? msg.items : [] };
  } else if (msg.type === 'swipe') {
    for (let i = state.swipes.length - 1; i >= 0; i--) {
      const s = state.swipes[i];
      if (s.index === msg.index && s.hit == null) { s.hit = !!msg.hit; break; }
    }
  }
  overlay.render();
}

function snapshot() {
  const card = view.card;
  const m = card && card.media;
  let playhead = '–';
  if (m) {
    const b = m.video.buffered;
    const ranges = Array.from({ length: b.length }, (_, i) => `${b.start(i).toFixed(1)}–${b.end(i).toFixed(1)}`);
    playhead = `${m.video.currentTime.toFixed(2)} s of ${card.times.total.toFixed(2)} s, buffered ${ranges.join(' ') || 'nothing'}`
      + `${m.video.paused ? ', paused' : ''}`;
  } else if (card && card.failed) {
    playhead = 'error card';
  }
  return {
    socketStatus: state.socketStatus, window: state.window, lastSwipe: state.lastSwipe, errors: state.errors,
    warnings: state.warnings,
    rendition: card && card.rendition ? card.rendition.name : null, box: view.box(),
    index: view.current < 0 ? -1 : view.indexAt(view.current), position: view.current, total: feed.total,
    generation: feed.generation, newItems: state.newItems,
    publicId: card ? card.item.public_id : null, cards: view.cards.length, attached: view.attached, playhead,
    pageWindow: view.window, policy: state.policy,
  };
}

// --- input ---
bindInput(scroller, {
  move: (delta, source, t0, noScroll) => view.go(delta, source, t0, noScroll),
  position: () => view.current,
  hold: on => { view.hold = on; },
  toggle: () => { if (view.card) view.card.toggle(); },
  mute: () => settings.setMuted(!settings.muted),
  debug: () => overlay.toggle(),
  height: () => view.h,
  pull: progress => pulled(progress),
  refresh: (source, t0) => refresh(source, t0),
});
newerButton.addEventListener('click', e => { e.stopPropagation(); refresh('newer', inputTime(e)); });
muteButton.addEventListener('click', e => { e.stopPropagation(); settings.setMuted(!settings.muted); });
settings.setMuted(true);

// About once a second while playing, the playhead for the server's prefetch.
setInterval(() => {
  const card = view.card;
  if (card && card.playing) {
    socket.at(view.indexAt(card.pos), card.item.public_id, card.time, codecOf(card));
  }
}, 1000);

// A hidden tab pauses the current card; coming back resumes it (unless the viewer paused it).
document.addEventListener('visibilitychange', () => {
  const card = view.card;
  if (!card || !card.media) return;
  if (document.hidden) card.media.video.pause();
  else if (!card.userPaused) card.play();
});

// --- the position in the URL hash ---
function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const i = Number.parseInt(p.get('i'), 10);
  return { i: Number.isInteger(i) && i >= 0 ? i : null, item: p.get('item') };
}

/** The position a hash names: the item at `i` when it is `item` (or no item is named), else where `item` is; the
 *  first card when neither is listed. */
async function resolve(target) {
  const slot = await find(target);
  view.sync();
  return Math.max(0, view.posOf(feed.wraps ? slot % feed.items.length : slot));
}

async function find({ i, item }) {
  if (i != null && (await feed.reach(i)) && (item == null || feed.item(i).public_id === item)
      && !feed.isRemoved(feed.item(i))) return i;
  if (item != null) {
    const found = await feed.find(item);
    if (found >= 0) return found;
  }
  return 0;
}

addEventListener('hashchange', async () => {
  const target = readHash();
  const listed = target.i != null && feed.item(target.i) !== undefined
    && (target.item == null || feed.item(target.i).public_id === target.item);
  if (!listed) view.leave();    // the listing request first, not behind the old window's media requests
  const pos = await resolve(target);
  if ((pos !== view.current || view.current < 0) && view.cards[pos]) view.show(pos, 'hash', performance.now());
  if (view.leaving) view.stay();     // it did not move (the same item, or none to show): the window again
});

function showStatus(text) {
  statusBox.textContent = text || '';
  statusBox.hidden = !text;
}

async function start() {
  while (!(await feed.loadMore()) && feed.error) {
    showStatus(`Can’t load the feed: ${feed.error.message}. Retrying…`);
  }
  showStatus('');
  const pos = await resolve(readHash());
  started = true;
  if (!view.cards.length) return showStatus('Nothing to watch yet: the feed is empty.');
  view.show(pos < view.cards.length ? pos : 0, 'load', null);
  state.ready = true;
  showNewer();
}
let started = false;

// --- a live feed: the "New videos" pill, pull-to-refresh ---

/** The pill shows when the server's last `feed` message names another first item than the page's (and is not older
 *  than the page's first page); the viewer is not moved. */
function showNewer() {
  const last = state.lastFeed;
  const head = feed.head;
  const stale = last && Number.isInteger(last.generation) && feed.headGeneration != null
    && last.generation < feed.headGeneration;
  const show = !!(last && last.head && head && !stale && last.head !== head.public_id) && !state.refreshing;
  if (show !== state.newItems) {
    state.newItems = show;
    newerButton.hidden = !show;
  }
  overlay.render();
}

/** The listing again from its first page, showing its first item (the newest): the pill's tap, a pull on the first
 *  card, or an empty feed's retry. One at a time; the old cards stay until the new first page is in. */
function refresh(source, t0) {
  if (state.refreshing) return state.refreshing;
  newerButton.hidden = true;
  newerButton.disabled = true;
  state.newItems = false;
  state.refreshing = (async () => {
    try {
      await feed.reload();
    } catch (e) {
      showStatus(`Can’t load the newest videos: ${e.message}`);
      setTimeout(() => showStatus(''), 3000);
      return false;
    } finally {
      state.refreshing = null;
      newerButton.disabled = false;
    }
    view.reset();
    view.sync();
    if (view.cards.length) {
      showStatus('');
      view.show(0, source, t0);
      state.ready = true;
    } else {
      showStatus('Nothing to watch yet: the feed is empty.');
    }
    state.refreshes++;
    showNewer();
    return true;
  })();
  return state.refreshing;
}

/** The pull-to-refresh hint follows the finger: `progress` 0 hides it, 1 and more says a release refreshes. */
function pulled(progress) {
  if (!progress) {
    pullHint.classList.remove('pulling', 'armed');
    pullHint.style.transform = '';
    return;
  }
  const y = Math.min(1.4, progress) * 64;
  pullHint.classList.add('pulling');
  pullHint.classList.toggle('armed', progress >= 1);
  pullHint.style.transform = `translate(-50%, ${y}px) rotate(${Math.min(1, progress) * 180}deg)`;
}

// --- the read-only state for tests and benchmarks ---
Object.defineProperty(window, 'videofeed', {
  enumerable: true,
  value: Object.freeze({
    get ready() { return state.ready; },
    /** The current item's feed index (its `index` in the listing page it came in). */
    get index() { return view.current < 0 ? -1 : view.indexAt(view.current); },
    /** The current card's position in the page (keeps growing as the feed wraps). */
    get position() { return view.current; },
    get publicId() { return view.card ? view.card.item.public_id : null; },
    get total() { return feed.total; },
    /** Cards loaded (positions in the page). */
    get cards() { return view.cards.length; },
    /** Cards with a MediaSource attached (at most pageWindow.ahead + pageWindow.behind + 1). */
    get attached() { return view.attached; },
    /** The window the page keeps around the current card, {ahead, behind, posters}: cards attached after and
     *  before it, cards with their poster loaded on each side. The server's policy's (its `policy` message), the
     *  default policy's (+2/-2, posters ±3) until it says. */
    get pageWindow() { return { ...view.window }; },
    /** The server's prefetch policy by name, once its `policy` message came (null before). */
    get policy() { return state.policy; },
    /** {at: performance.now() of the input, source, index, position, publicId, firstFrameMs, hit}. */
    get lastSwipe() { return state.lastSwipe ? { ...state.lastSwipe } : null; },
    get swipes() { return state.swipes.map(s => ({ ...s })); },
    /** public_ids shown as error cards. */
    get errors() { return [...state.errors]; },
    /** public_ids shown as "This video was removed" cards (not errors). */
    get removed() { return [...state.removed]; },
    /** The "New videos" pill is shown (the server's listing starts with another item than the page's). */
    get newItems() { return state.newItems; },
    /** The newest listing generation the page knows of (listing answers and the server's `feed` messages). */
    get generation() { return feed.generation; },
    /** Listings reloaded from the first page (pill taps, pulls). */
    get refreshes() { return state.refreshes; },
    /** For tests: what a tap on the pill does (the listing from its first page, its first item shown); resolves
     *  whether it reloaded. */
    refresh() { return refresh('newer', performance.now()).then(ok => !!ok); },
    /** Media problems the page got round (a last segment the server could not make), one line each. */
    get warnings() { return [...state.warnings]; },
    /** The server's last `window` message. */
    get window() { return state.window ? JSON.parse(JSON.stringify(state.window)) : null; },
    get rendition() { return view.card && view.card.rendition ? view.card.rendition.name : null; },
    /** The card's box in device pixels, {w, h} (what the rendition rule reads). */
    get box() { return { ...view.box() }; },
    /** The bandwidth estimate in bits per second (abr.js) and how many samples it rests on. */
    get bandwidth() { return Math.round(meter.estimate); },
    get bandwidthSamples() { return meter.samples; },
    /** Rung switches of playing cards: {at, publicId, from, to, bandwidth}. */
    get switches() { return state.switches.map(s => ({ ...s })); },
    get socket() { return state.socketStatus; },
    get muted() { return settings.muted; },
    get paused() { const m = view.card && view.card.media; return m ? m.video.paused : true; },
    get currentTime() { return view.card ? view.card.time : 0; },
  }),
});

start();
