// view.js — the vertical feed: one card per viewport in a scroll-snapping container (so plain scrolling works as
// well), the current position, and the window around it: `ahead` cards after the current one and `behind` before it
// attached with their first segment held (card.js; the cards ahead also fetch and keep what follows it, up to 4 s),
// posters of ± `posters`, every card further away freed. The window is the server's policy's (its `policy` message,
// setWindow(); docs/serve.md): the default policy's is +2/-2 with posters ± 3, which the page keeps until the server
// says. Moves come from input.js (keys, wheel, touch), from the scroll position settling (scroll-snap fallback) or
// from the URL hash.
//
// A card shows a listing slot (feed.js): the cards follow the listing's order, skipping items the server removed,
// and once the listing has ended go round again. An item removed after its card was made goes from the cards the
// viewer has not reached (drop()); the current card and those before it stay where they are, so the viewer never
// moves. reset() lets every card go for a listing reloaded from its first page.
import { Card } from './card.js';

// Until the server's `policy` message: the default policy's window. `ahead`/`behind`: cards attached (MediaSource,
// init, seg-0 held) after and before the current one; `posters`: cards whose poster is loaded on each side.
export const STANDARD_WINDOW = Object.freeze({ ahead: 2, behind: 2, posters: 3 });
const MAX_ATTACHED = 8;  // cards attached on one side at most, whatever the server says (as PageWindow.maxAttached)
const PAGE_AHEAD = 3;    // ask for the next page when within this many cards (or the posters' reach) of the end
const HOLD_MS = 3000;    // on a miss, how long the neighbours wait for the current card's first frame at most
const START_MS = 250;    // on a hit, how long the window's changes wait for the new card's next frame at most

export class FeedView {
  /**
   * @param {HTMLElement} scroller  the scroll-snap container
   * @param {HTMLElement} track     the cards' parent inside it
   * @param {FeedSource} feed
   * @param {object} hooks          {settings, onMove(card, source, t0), onFrame(card, ms, mediaTime), onFail(card),
   *                                 onWarn(card, message), onSwitch(card, from, to), onPick(card), onCards()}
   */
  constructor(scroller, track, feed, hooks) {
    this.scroller = scroller;
    this.track = track;
    this.feed = feed;
    this.hooks = hooks;
    this.cards = [];
    this.live = new Set();     // cards holding a poster or media
    this.current = -1;
    this.busy = false;         // a move waits for a page
    this.hold = false;         // a finger (or the glide after it) owns the scroll position: do not follow it
    this.leaving = false;      // a jump waits for its listing page (leave()): the old window is let go
    this.moves = 0;            // activations so far: a deferred window change applies to the latest only
    this.epoch = 0;            // grows on reset(): a move that waited for a page of the old listing is dropped
    this.wrapped = false;      // a card shows the listing again from its start (wrap-around)
    this.window = { ...STANDARD_WINDOW };   // the cards kept around the current one (setWindow)
    this.measure();
    addEventListener('resize', () => { this.measure(); this.scrollTo(this.current); });
    let settle = 0;
    scroller.addEventListener('scroll', () => {
      clearTimeout(settle);
      settle = setTimeout(() => this.settled(), 150);
    }, { passive: true });
    scroller.addEventListener('scrollend', () => { clearTimeout(settle); this.settled(); });
  }

  measure() {
    this.h = this.scroller.clientHeight || innerHeight;
    document.documentElement.style.setProperty('--card-h', `${this.h}px`);
  }

  /** The box a card's video is shown in, in device pixels (decides the rendition). */
  box() {
    const dpr = devicePixelRatio || 1;
    return { w: Math.round(this.scroller.clientWidth * dpr), h: Math.round(this.h * dpr) };
  }

  /** Make cards for every listing slot that is loaded and not removed (and, once the feed wraps, a few past the
   *  current one). */
  sync() {
    const ahead = this.current + this.window.ahead + this.window.posters + 1;
    const env = {
      settings: this.hooks.settings, box: () => this.box(),
      onFail: card => this.hooks.onFail(card),
      onFrame: (card, ms, mediaTime) => this.hooks.onFrame(card, ms, mediaTime),
      onWarn: (card, message) => this.hooks.onWarn(card, message),
      onSwitch: (card, from, to) => { if (this.hooks.onSwitch) this.hooks.onSwitch(card, from, to); },
      onPick: card => { if (this.hooks.onPick) this.hooks.onPick(card); },
      playingShort: card => { const c = this.card; return !!c && c !== card && c.short; },
      onGone: card => this.gone(card),
      fill: item => this.feed.fill(item),
      abandon: item => this.feed.abandon(item),
      lookup: item => this.feed.lookup(item.public_id),
    };
    const added = document.createDocumentFragment();
    for (;;) {
      const last = this.cards[this.cards.length - 1];
      const slot = this.feed.nextSlot(last ? last.slot : -1);
      if (slot < 0) break;
      const wraps = this.wrapped || (!!last && slot <= last.slot);
      if (wraps && this.cards.length >= ahead) break;
      this.wrapped = wraps;
      const card = new Card(this.cards.length, this.feed.items[slot], env);
      card.slot = slot;
      this.cards.push(card);
      added.append(card.el);
    }
    if (added.childNodes.length) {
      this.track.append(added);
      this.hooks.onCards();
    }
  }

  get card() { return this.cards[this.current]; }

  /** The feed index the server knows the item at a position by (its `index` in the listing it came in; with
   *  wrap-around, the item's own), -1 for none. */
  indexAt(pos) {
    const card = this.cards[pos];
    if (!card) return -1;
    return Number.isInteger(card.item.index) ? card.item.index : card.slot;
  }

  /** The position of a card showing listing slot `slot`: the current card if it does, else the first; -1 none. */
  posOf(slot) {
    if (this.card && this.card.slot === slot) return this.current;
    const card = this.cards.find(c => c.slot === slot);
    return card ? card.pos : -1;
  }

  /** Items the server removed go from the cards the viewer has not reached (after the current one), the cards after
   *  them move up, and the window is kept; the current card and those before it stay, so the viewer does not
   *  move. Returns how many cards went. */
  drop() {
    let dropped = 0;
    for (let pos = this.cards.length - 1; pos > this.current; pos--) {
      const card = this.cards[pos];
      if (!this.feed.isRemoved(card.item)) continue;
      if (card.active) card.deactivate();
      card.far();
      this.live.delete(card);
      card.el.remove();
      this.cards.splice(pos, 1);
      dropped++;
    }
    if (!dropped) return 0;
    this.cards.forEach((card, pos) => card.moveTo(pos));
    this.wrapped = this.cards.some((card, pos) => pos > 0 && card.slot <= this.cards[pos - 1].slot);
    this.sync();
    if (this.current >= 0 && !this.leaving) this.keepWindow();
    this.hooks.onCards();
    return dropped;
  }

  /** A card learnt from the server that its item is gone (410): the listing marks it, and if the viewer has not
   *  reached it, it goes. */
  gone(card) {
    if (!this.cards.includes(card)) return;      // a card of a listing reloaded since
    this.feed.markRemoved(card.item.public_id);
    if (card.pos > this.current) this.drop();
    if (this.hooks.onGone) this.hooks.onGone(card);
  }

  /** Let every card go (a listing reloaded from its first page follows); nothing is current. */
  reset() {
    this.epoch++;
    this.moves++;
    clearTimeout(this.holding);
    if (this.card) this.card.deactivate();
    for (const card of this.cards) {
      card.far();
      card.el.remove();
    }
    this.cards = [];
    this.live.clear();
    this.current = -1;
    this.leaving = false;
    this.wrapped = false;
    this.hooks.onCards();
  }

  scrollTo(pos) {
    if (pos >= 0) this.scroller.scrollTo({ top: pos * this.h, behavior: 'instant' });
  }

  /** Move by `delta` cards (±1) because of an input at `t0`; waits for the next page at the end of what is loaded.
   *  `noScroll`: the caller moves the scroll position itself (a touch swipe glides there). */
  async go(delta, source, t0, noScroll = false) {
    if (this.busy || this.current < 0) return false;
    const target = this.current + delta;
    if (target < 0) return false;
    const epoch = this.epoch;
    if (target >= this.cards.length) this.sync();
    // A page may add nothing to show (its items removed meanwhile): a few more are asked for.
    for (let pages = 0; target >= this.cards.length && !this.feed.done && pages < 5; pages++) {
      this.busy = true;
      try { await this.feed.loadMore(); } finally { this.busy = false; }
      if (epoch !== this.epoch) return false;       // the listing was reloaded meanwhile
      this.sync();
      if (this.feed.error) break;
    }
    if (target >= this.cards.length) return false;
    if (noScroll) this.activate(target, source, t0); else this.show(target, source, t0);
    return true;
  }

  /** Jump to a position (scrolls there and makes it current). */
  show(pos, source, t0) {
    this.scrollTo(pos);
    this.activate(pos, source, t0);
  }

  /** The scroll position came to rest (scroll-snap fallback: scrollbar, Page Down, a plain trackpad scroll). */
  settled() {
    if (!this.h || this.current < 0 || this.hold) return;
    const pos = Math.round(this.scroller.scrollTop / this.h);
    if (pos !== this.current && pos >= 0 && pos < this.cards.length) this.activate(pos, 'scroll', performance.now());
  }

  activate(pos, source, t0) {
    if (pos === this.current || !this.cards[pos]) return;
    this.leaving = false;
    const previous = this.cards[this.current];
    const card = this.cards[pos];
    this.current = pos;
    // Back to a card whose item the server removed since: its removed card, not what the browser may have cached.
    if (this.feed.isRemoved(card.item) && !card.gone) card.removed();
    const ready = card.ready;
    card.activate(source === 'load' ? null : t0);   // first: play() as early as possible
    if (previous) previous.deactivate();
    this.sync();                       // a wrapping feed grows as the viewer goes on
    this.hooks.onMove(card, source, t0);
    // A card ready to play (a prefetched neighbour) starts alone: the new neighbour it brings into the window (a
    // <video>, its MediaSource, its init) and the card freed at the far end wait for its first frame, or START_MS,
    // so that neither shares the main thread or the media threads with its start.
    const move = ++this.moves;
    if (ready && !card.failed && source !== 'load') {
      card.afterNextFrame(() => { if (move === this.moves) this.keepWindow(); }, START_MS);
    } else {
      this.keepWindow();
    }
    if (!this.feed.done && pos + Math.max(PAGE_AHEAD, this.window.posters) >= this.cards.length) {
      this.feed.loadMore().then(() => { this.sync(); this.keepWindow(); });
    }
  }

  /** The server's window ({ahead, behind, posters}, its `policy` message): kept from now on. Anything but whole
   *  numbers with posters reaching at least as far as the attached cards is ignored; at most MAX_ATTACHED cards are
   *  attached on a side. The cards outside it go at once; new neighbours come now if the current card is shown,
   *  else when it is (keepWindow's hold). Returns whether the window changed. */
  setWindow(w) {
    const ok = n => Number.isInteger(n) && n >= 0;
    if (!w || !ok(w.ahead) || !ok(w.behind) || !ok(w.posters)) return false;
    const ahead = Math.min(w.ahead, MAX_ATTACHED), behind = Math.min(w.behind, MAX_ATTACHED);
    const next = { ahead, behind, posters: Math.min(Math.max(w.posters, ahead, behind), MAX_ATTACHED + 1) };
    const now = this.window;
    if (next.ahead === now.ahead && next.behind === now.behind && next.posters === now.posters) return false;
    this.window = next;
    if (this.current < 0 || this.leaving) return true;
    this.sync();
    this.trim();
    if (this.card && this.card.shown) this.keepNeighbours();
    return true;
  }

  /** Whether the card `d` positions from the current one (negative: before it) is attached in the window. */
  attaches(d) { return d > 0 ? d <= this.window.ahead : -d <= this.window.behind; }

  /** Cards outside the window let go: their media past the attached cards, their poster too past the posters. */
  trim() {
    const c = this.current;
    for (const card of this.live) {
      const d = card.pos - c;
      if (Math.abs(d) > this.window.posters) { card.far(); this.live.delete(card); }
      else if (!this.attaches(d)) card.free();
    }
  }

  /** Preload the window's cards around the current one (nearest first), posters of ± posters, free the rest. On a
   *  miss (the current card has no frame yet) the neighbours wait until it shows one, fails, or HOLD_MS pass: their
   *  requests would share the server's workers with the one the viewer waits for. */
  keepWindow() {
    const c = this.current;
    this.trim();
    const current = this.card;
    if (current) {
      current.near();
      current.preload();
      this.live.add(current);
      if (!current.shown) {
        // Each hold clears only its own timer: a card left behind may still show later and call its release.
        let timer = 0;
        const release = () => {
          clearTimeout(timer);
          if (this.current === c) this.keepNeighbours();
        };
        clearTimeout(this.holding);
        timer = this.holding = setTimeout(release, HOLD_MS);
        current.whenShown(release);
        return;
      }
    }
    this.keepNeighbours();
  }

  /** Before a jump to a position that needs a listing page first: every card but the current one lets go of its
   *  media and poster, so that the page request does not wait behind their requests (a browser keeps at most six
   *  connections per host, and a segment the server is still making holds one until it is made). The window
   *  around the target is preloaded once it is listed. */
  leave() {
    this.leaving = true;       // until the jump moves (activate) or comes back here (stay): no neighbour preloads
    clearTimeout(this.holding);
    for (const card of this.live) {
      if (card !== this.card) { card.far(); this.live.delete(card); }
    }
  }

  /** The jump after leave() stayed where it was: the window again. */
  stay() {
    this.leaving = false;
    this.keepWindow();
  }

  keepNeighbours() {
    if (this.leaving) return;
    const c = this.current;
    const { ahead, behind, posters } = this.window;
    // Nearest first, the card ahead before the one behind at the same distance (+1, -1, +2, -2, ...).
    for (let k = 1; k <= Math.max(ahead, behind); k++) {
      for (const d of [k, -k]) {
        const card = this.cards[c + d];
        if (!card || !this.attaches(d)) continue;
        if (this.feed.isRemoved(card.item)) card.removed(); else card.preload(d > 0);
        this.live.add(card);
      }
    }
    for (let d = -posters; d <= posters; d++) {
      const card = this.cards[c + d];
      if (card) { card.near(); this.live.add(card); }
    }
    if (this.card) this.live.add(this.card);
  }

  /** Cards with a MediaSource attached (bounded by ahead + behind + 1). */
  get attached() {
    let n = 0;
    for (const card of this.live) if (card.attached) n++;
    return n;
  }

  setMuted(muted) { for (const card of this.live) card.setMuted(muted); }
}
