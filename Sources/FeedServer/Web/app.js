// app.js — the page's entry point: loads the feed, resumes at the position in the URL hash (#i=7&item=<public_id>),
// wires input, the WebSocket and the debug overlay, and publishes a read-only state object `window.videofeed` for
// tests and benchmarks, plus a `videofeed:firstframe` CustomEvent on window ({index, publicId, ms, source,
// mediaTime: the frame's time in the rendition}) when the new card paints its first frame after a swipe.
import { FeedSource } from './feed.js';
import { FeedView } from './view.js';
import { bindInput } from './input.js';
import { FeedSocket } from './socket.js';
import { Overlay } from './overlay.js';
import { pickRendition } from './util.js';

const scroller = document.getElementById('feed');
const track = document.getElementById('track');
const muteButton = document.getElementById('mute');
const statusBox = document.getElementById('status');

const MAX_SWIPES = 1000;      // swipes kept for `window.videofeed.swipes`

const state = { ready: false, socketStatus: 'connecting', window: null, lastSwipe: null, swipes: [], errors: [],
                warnings: [], hello: null };

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
  onWarn: (card, message) => {
    const text = `${card.item.public_id}: ${message}`;
    if (!state.warnings.includes(text)) state.warnings.push(text);
    console.warn(text);
  },
  onCards: () => overlay.render(),
});
const overlay = new Overlay(document.getElementById('debug'), snapshot);
const socket = new FeedSocket(answer, s => { state.socketStatus = s; overlay.render(); });

/** A card became current: record the swipe, tell the server, keep the position in the URL. */
function moved(card, source, t0) {
  const index = feed.index(card.pos);
  if (source !== 'load') {
    state.lastSwipe = { at: t0, source, index, position: card.pos, publicId: card.item.public_id,
                        firstFrameMs: null, hit: null };
    state.swipes.push(state.lastSwipe);
    if (state.swipes.length > MAX_SWIPES) state.swipes.shift();
  }
  if (card.failed) shownError(card);
  muteButton.classList.toggle('silent', card.item.has_audio === false);   // no sound to unmute
  sayHello(card);
  socket.at(index, 0);
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

/** `hello` names the rendition this viewer plays (for the first playable item seen) and its box in device pixels. */
function sayHello(card) {
  const box = view.box();
  const source = card.item.renditions && card.item.renditions.length ? card.item
    : feed.items.find(it => it.renditions && it.renditions.length);
  // Cards listed before their manifest (pending) name no rendition yet: the box alone decides the server's choice.
  const r = source && pickRendition(source.renditions, box.w, box.h);
  if (state.hello && state.hello.width === box.w && state.hello.height === box.h && (state.hello.rendition || !r)) return;
  state.hello = { type: 'hello', rendition: r ? r.name : null, width: box.w, height: box.h };
  socket.hello(state.hello);
}

/** The server's answers: `swipe` {index, hit} and `window` {current, items}. */
function answer(msg) {
  if (msg.type === 'window') {
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
    index: view.current < 0 ? -1 : feed.index(view.current), position: view.current, total: feed.total,
    publicId: card ? card.item.public_id : null, cards: view.cards.length, attached: view.attached, playhead,
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
});
muteButton.addEventListener('click', e => { e.stopPropagation(); settings.setMuted(!settings.muted); });
settings.setMuted(true);

// About once a second while playing, the playhead for the server's prefetch.
setInterval(() => {
  const card = view.card;
  if (card && card.playing) socket.at(feed.index(card.pos), card.time);
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

/** The position a hash names: the item at `i` when it is `item` (or no item is named), else where `item` is. */
async function resolve(target) {
  const pos = await find(target);
  return feed.wraps ? pos % feed.items.length : pos;
}

async function find({ i, item }) {
  if (i != null && (await feed.reach(i)) && (item == null || feed.item(i).public_id === item)) return i;
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
  view.sync();
  if (feed.index(view.current) !== feed.index(pos) || view.current < 0) view.show(pos, 'hash', performance.now());
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
  view.sync();
  if (!view.cards.length) return showStatus('Nothing to watch yet: the feed is empty.');
  view.show(pos < view.cards.length ? pos : 0, 'load', null);
  state.ready = true;
}

// --- the read-only state for tests and benchmarks ---
Object.defineProperty(window, 'videofeed', {
  enumerable: true,
  value: Object.freeze({
    get ready() { return state.ready; },
    /** The current item's feed index (modulo `total` after a wrap). */
    get index() { return view.current < 0 ? -1 : feed.index(view.current); },
    /** The current card's position in the page (keeps growing as the feed wraps). */
    get position() { return view.current; },
    get publicId() { return view.card ? view.card.item.public_id : null; },
    get total() { return feed.total; },
    /** Cards loaded (positions in the page). */
    get cards() { return view.cards.length; },
    /** Cards with a MediaSource attached (at most 5). */
    get attached() { return view.attached; },
    /** {at: performance.now() of the input, source, index, position, publicId, firstFrameMs, hit}. */
    get lastSwipe() { return state.lastSwipe ? { ...state.lastSwipe } : null; },
    get swipes() { return state.swipes.map(s => ({ ...s })); },
    /** public_ids shown as error cards. */
    get errors() { return [...state.errors]; },
    /** Media problems the page got round (a last segment the server could not make), one line each. */
    get warnings() { return [...state.warnings]; },
    /** The server's last `window` message. */
    get window() { return state.window ? JSON.parse(JSON.stringify(state.window)) : null; },
    get rendition() { return view.card && view.card.rendition ? view.card.rendition.name : null; },
    get socket() { return state.socketStatus; },
    get muted() { return settings.muted; },
    get paused() { const m = view.card && view.card.media; return m ? m.video.paused : true; },
    get currentTime() { return view.card ? view.card.time : 0; },
  }),
});

start();
