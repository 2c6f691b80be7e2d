// card.js — one card of the feed: the poster at once, then the item's rendition through Media Source Extensions
// (a MediaSource with one SourceBuffer: init, then the segments in order, fetched a segment or two ahead of the
// playhead, endOfStream() after the last), or an error card when the item or its media fails.
//
// Adaptive bitrate (abr.js): a card starts with the rendition its box asks for, or a smaller one when the network's
// estimate cannot carry it; while it plays, each segment boundary may switch it (down as soon as the estimate falls
// under the playing rung's rate, up only with a margin): the new rung's init is appended (changeType when its
// codecs differ), then its segments from there on — every rung's segment k covers the same span.
//
// On a slow link the card on screen comes first: a neighbour's fetch waits (3 s at most) while it has less than
// SHORT_S buffered ahead and more to fetch; the cards attached ahead (view.js: as many as the server's policy
// prepares ahead, +1 and +2 by default), their first segment held, fetch what follows it up to EARLY_S and keep it
// for the swipe; a segment of the playing card whose bytes come too slowly for what is
// buffered is given up for the smallest rung (getPlaying).
//
// Loops without a seam: an item up to UNROLL_S long (and UNROLL_BYTES of media) keeps what it appended, and once
// its last segment is in, appends it all again after itself (timestampOffset one item's length further each time),
// AHEAD_S ahead of the playhead: the wrap is the next frame in the buffer, not a seek (a seek to the start drops a
// frame or more at each wrap, 23 of 90 on a 3-frame clip). A longer item loops with the element's own `loop`, a seek
// within what is buffered (seeking() appends again what the browser evicted). A segment the server
// cannot make past the first (404, 416, 422: past the item's real end, or a tail without a picture) ends the item
// there, as its end would, with a warning rather than an error card.
//
// A card listed before the server made its manifest is pending: it shows its poster, and the first preload() asks
// for the whole card (env.fill) and goes on from there.
//
// An item whose media answers 410 Gone changed or went since it was listed: the card asks the listing for the item
// as it is now (env.lookup); a new version starts the card again with it (once), an item the server no longer has
// shows the calm "This video was removed" card (not the error card), and the feed goes on.
//
// Life of a card:   near()      poster loaded (within the window's posters: current ± 3 by default)
//                   preload()   MediaSource attached, init appended, seg-0 fetched and held (the window's attached
//                               cards: current ± 2 by default): the poster shows (it is the first frame)
//                   activate()  seg-0 appended, plays (muted unless unmuted), loops, streams the rest ahead
//                   deactivate() paused; the next preload() attaches it afresh with seg-0 held again
//                   free()      MediaSource detached (removeAttribute('src'), load()), fetches aborted
//
// Why seg-0 is held rather than appended: Chromium calls requestVideoFrameCallback for a frame it presents after
// the call. A video paused on its first frame, already presented, calls back for the *second* frame after play():
// a frame interval after the swipe and more (130 ms at p50 on a 10.5 fps phone clip). With seg-0 appended together
// with play(), the first frame is decoded and presented after the swipe, within one or two display frames at any
// frame rate (scripts/rvfc-probe.py, modes `mse` and `append`; docs/benchmarks.md). The viewer sees the same picture
// meanwhile: the poster is the first frame.
import { area, MediaSourceClass, pickRendition, playable, relativeTime, sameCodec, segmentTimes } from './util.js';
import { KEEP_FACTOR, meter, START_FACTOR, UP_FACTOR } from './abr.js';

const AHEAD_S = 4;                 // seconds appended ahead of the playhead while playing (two 2 s segments)
const UNROLL_S = 10;               // items up to this long loop by appending themselves again (no seek at the wrap)
const UNROLL_BYTES = 8 << 20;       // ... when what they appended is at most this much
const LOOP_KEEP_S = 5;             // seconds of an unrolled loop kept behind the playhead
const ABANDON_AFTER_MS = 400;      // a playing card's segment fetch may be given up after this long ...
const ABANDON_AHEAD_S = 1.5;       // ... when less than this is buffered ahead and the rest would come too late
const NO_UP_AFTER_ABANDON_MS = 5000;   // after a fetch was given up, no switch up for this long
const EARLY_S = 4;                 // the next card fetches the segments that start within this (as AHEAD_S playing)
const SHORT_S = 1.5;               // the card on screen with less than this buffered ahead has the link first
const NEIGHBOUR_WAIT_MS = 3000;    // ... for this long at most
const UP_BUFFER_S = 2;             // a playing card switches up only with this much buffered ahead (a larger
                                   // segment and an init cost more than they would have a moment before)
const RETRIES = [300, 1000];       // back-off (ms) before retrying a failed fetch (network error or 5xx)

export class Card {
  /**
   * @param {number} pos      position in the feed (grows past `total` when the feed wraps around)
   * @param {object} item     a resource of /api/feed
   * @param {object} env      {settings: {muted, setMuted}, box(): {w, h}, onFail(card), onFrame(card, ms, mediaTime),
   *                           onWarn(card, message), onSwitch(card, from, to): the playing rung changed,
   *                           onGone(card): the item is removed, fill(item) → Promise<whole
   *                           item>, abandon(item): the fill is no longer wanted, lookup(item) → Promise<the item
   *                           as listed now>}
   */
  constructor(pos, item, env) {
    this.pos = pos;
    this.item = item;
    this.env = env;
    this.active = false;
    this.failed = null;        // the error message once the card shows its error
    this.gone = false;         // the card shows "This video was removed"
    this.rechecked = false;    // a 410 made the card ask for its item again (once)
    this.media = null;         // {video, ms, sb, url, abort, next, initDone, pumping, fetches, held, played}
    this.rendition = null;
    this.watch = 0;            // token of the pending first-frame measurement
    this.frame = 0;            // the progress bar's animation frame
    this.wanted = false;       // preload() asked for media and free() has not dropped it since
    this.filling = null;       // a pending item's whole card, being asked for
    this.startAt = null;       // activate()'s t0 while the whole card is awaited
    this.onShown = [];         // callbacks for the first frame presented (or the card failing)
    this.el = this.build();
    if (item.error) this.fail(item.error);
  }

  build() {
    const el = document.createElement('section');
    el.className = 'card';
    el.dataset.pos = this.pos;
    el.dataset.publicId = this.item.public_id;
    el.innerHTML = `
      <img class="poster" alt="" decoding="async">
      <div class="spinner" aria-hidden="true"></div>
      <div class="paused" aria-hidden="true"></div>
      <div class="meta"><div class="id"></div><div class="when"></div></div>
      <div class="progress"><div class="bar"></div></div>
      <div class="error" role="alert" hidden><div class="title">This video can’t be played</div>
        <div class="id"></div><div class="message"></div><div class="hint">Swipe to go on</div></div>
      <div class="removed" role="status" hidden><div class="title">This video was removed</div>
        <div class="id"></div><div class="hint">Swipe to go on</div></div>`;
    el.querySelectorAll('.id').forEach(n => { n.textContent = this.item.public_id; });
    const when = el.querySelector('.when');
    when.textContent = relativeTime(this.item.created_at);
    when.title = this.item.created_at || '';
    this.poster = el.querySelector('.poster');
    this.bar = el.querySelector('.bar');
    return el;
  }

  /** The card's position changed (cards before it went, view.drop()). */
  moveTo(pos) {
    if (pos === this.pos) return;
    this.pos = pos;
    this.el.dataset.pos = pos;
  }

  /** Within a few cards of the current one: load the poster. */
  near() {
    if (this.item.poster && !this.poster.getAttribute('src')) this.poster.src = this.item.poster;
  }

  /** Far away: drop the poster too. */
  far() {
    this.free();
    if (this.poster.getAttribute('src')) this.poster.removeAttribute('src');
  }

  get attached() { return !!this.media; }

  /** Attach a MediaSource, append init and fetch seg-0 to hold until activate(). Idempotent, but a card played
   *  since it was attached is attached afresh: its first frame would be presented already. With `early` (a card
   *  attached ahead of the current one), the segments that start within EARLY_S are fetched too once seg-0 is held, and kept for activate(): on a
   *  slow network the next segments are then not what the viewer waits for a second after the swipe. */
  preload(early = !!this.early) {
    this.near();
    this.wanted = true;
    this.early = early;
    if (this.media && this.media.played && !this.active) {
      this.free();
      this.wanted = true;
    }
    if (this.media && this.media.held) this.fetchEarly(this.media);
    if (this.media || this.failed || this.gone) return;
    if (this.item.pending) return this.fillPending();
    if (!MediaSourceClass) return this.fail('this browser has no Media Source Extensions');
    const { w, h } = this.env.box();
    // The rung the box asks for, within what the network's estimate affords (chosen again on every attach); a
    // card shown at once plays the H.264 ladder while its AV1 set is not made (util.js pickRendition).
    const r = pickRendition(this.item.renditions, w, h, meter.estimate * START_FACTOR, this.active);
    if (!r) {
      const mimes = (this.item.renditions || []).map(x => x.mime).join(', ') || 'no renditions';
      return this.fail(`no rendition this browser can play (${mimes})`);
    }
    this.rendition = r;
    // The card on screen tells the server what it plays (the ladder, for a card whose AV1 set was not made).
    if (this.active && this.env.onPick) this.env.onPick(this);
    this.times = segmentTimes(r);
    if (!this.times) return this.fail(`the listing gives no segment_durations for ${r.name || r.mime}`);
    const video = document.createElement('video');
    video.muted = this.env.settings.muted;
    video.loop = true;               // like TikTok: the current item loops; a swipe moves on
    video.playsInline = true;
    video.preload = 'auto';
    video.disableRemotePlayback = true;   // required by ManagedMediaSource
    const ms = new MediaSourceClass();
    const m = { video, ms, sb: null, url: URL.createObjectURL(ms), abort: new AbortController(), next: 0,
                initDone: false, pumping: false, fetches: new Map(), held: null, played: false, mime: r.mime,
                early: new Map(),  // url → promise of the bytes of a segment fetched before it is wanted
                controllers: new Map(), progress: new Map(),  // url → its fetch's AbortController, bytes so far
                ended: false,
                // An unrolled loop: what was appended, in order ({init: name of the rendition whose init it is, or
                // null, data}), its bytes, the rendition last initialised, copies appended, and one copy's span.
                kept: this.times.total <= UNROLL_S ? [] : null, keptBytes: 0, initialised: null, loops: 0,
                period: null, start: 0 };
    this.media = m;
    ms.addEventListener('sourceopen', () => this.open(m), { once: true });
    video.addEventListener('error', () => {
      if (this.media === m) this.fail(mediaErrorText(video.error));
    });
    video.addEventListener('timeupdate', () => { if (this.active) this.pump(); });
    for (const e of ['playing', 'seeked', 'timeupdate']) {
      video.addEventListener(e, () => { if (this.active && this.media === m && !this.frame) this.tick(); });
    }
    video.addEventListener('seeking', () => this.seeking(m));
    video.addEventListener('waiting', () => this.el.classList.add('waiting'));
    for (const e of ['playing', 'seeked', 'pause']) video.addEventListener(e, () => this.el.classList.remove('waiting'));
    video.src = m.url;
    this.poster.after(video);
    // The poster stays until the video has presented a frame, so the card never flashes black.
    const presented = () => {
      if (this.media !== m) return;
      this.el.classList.add('has-frame');
      this.settle();
    };
    if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(presented);
    else video.addEventListener('loadeddata', presented, { once: true });
  }

  /** Ask for a pending item's whole card; then preload (and play, if current) as if it had been listed whole. */
  fillPending() {
    if (this.filling || !this.env.fill) return;
    this.filling = this.env.fill(this.item).then(full => {
      this.filling = null;
      this.item = full;
      if (full.error) return this.fail(full.error);
      if (this.active) this.activate(this.startAt);
      else if (this.wanted) this.preload();
    }, e => {
      this.filling = null;
      // Abandoned by free(); wanted again since: ask again.
      if (e && e.name === 'AbortError') { if (this.active || this.wanted) this.fillPending(); return; }
      if (e && e.gone) return this.removed();
      if (this.active || this.wanted) this.fail(e.message || String(e));
    });
  }

  open(m) {
    if (this.media !== m) return;
    try {
      m.sb = m.ms.addSourceBuffer(this.rendition.mime);
    } catch (e) {
      return this.fail(`cannot play ${this.rendition.mime}: ${e.message}`);
    }
    if (this.times.total > 0) {
      try { m.ms.duration = this.times.total; } catch { /* set again by endOfStream() */ }
    }
    this.pump();
  }

  /** Append init and segments in order, as far as needed: init when preloaded (seg-0 fetched and held), AHEAD_S past
   *  the playhead when active; at each segment boundary of the playing card, the rung the network affords. */
  async pump() {
    const m = this.media;
    if (!m || !m.sb || m.pumping) return;
    m.pumping = true;
    try {
      while (this.media === m) {
        const segments = this.rendition.segments;
        if (!m.initDone) {
          // The next segment is asked for together with the init (one round trip less); its failure is reported
          // when it is awaited below.
          if (m.next < segments.length && !(m.next === 0 && m.held)) this.get(m, segments[m.next]).catch(() => {});
          if (m.mime !== this.rendition.mime && m.sb.changeType) m.sb.changeType(this.rendition.mime);
          m.mime = this.rendition.mime;
          const init = await this.get(m, this.rendition.init);
          await this.append(m, init);
          this.keep(m, init, this.rendition);
          m.initDone = true;
          continue;
        }
        const k = m.next;
        if (k >= segments.length || m.ended) {
          if (m.kept) {
            // Unrolled: another copy once the playhead is within AHEAD_S of the end (pump runs again on timeupdate).
            if (this.active && await this.loopAgain(m)) continue;
            break;
          }
          if (m.ms.readyState === 'open' && !m.sb.updating) m.ms.endOfStream();
          break;
        }
        const limit = this.active ? m.video.currentTime + AHEAD_S : 0;
        if (k > 0 && this.times.starts[k] >= limit) break;
        if (k > 0 && this.active && this.adapt(m)) continue;
        // Fetch the following segment while this one is appended, if it is wanted too; not while the card waits for
        // its first frame (a miss): the server would make both at once, each with half the CPU.
        if (k + 1 < segments.length && this.times.starts[k + 1] < limit && (k > 0 || this.shown)) {
          this.get(m, segments[k + 1]).catch(() => {});
        }
        let data;
        try {
          data = k === 0 && m.held ? m.held : k > 0 && this.active ? await this.getPlaying(m, segments[k], k)
            : await this.get(m, segments[k]);
          m.held = null;
          if (k === 0 && !this.active && this.media === m) {
            // Held until activate(): appended now, the first frame would be presented before the swipe.
            m.held = data;
            this.el.classList.add('ready');
            this.fetchEarly(m);
            break;
          }
        } catch (e) {
          if (e.abandoned) {
            // Too slow for what is buffered: the smallest rung from this segment on (its init first), and no
            // switch up for a while.
            m.noUpUntil = performance.now() + NO_UP_AFTER_ABANDON_MS;
            this.switchTo(m, e.abandoned);
            continue;
          }
          // A segment the server cannot make, past the first (past the item's real end: the listing's duration
          // was more than what decodes; or a 0.01 s tail past the last picture): the item ends where the last
          // appended segment ends and loops from there, as at its end; said in window.videofeed.warnings, not with
          // an error card. Gone (410), server errors and the first segment are failures.
          if (!e.status || e.status === 410 || e.status >= 500 || k === 0) throw e;
          if (this.env.onWarn) this.env.onWarn(this, `${e.message}; ended at ${this.times.starts[k].toFixed(2)} s`);
          this.times = { starts: this.times.starts.slice(0, k), total: this.times.starts[k] };
          m.ended = true;
          continue;
        }
        await this.append(m, data);
        this.keep(m, data, null);
        if (m.next === k) m.next = k + 1;
        if (k === 0 && !this.active) this.rewind(m);
      }
    } catch (e) {
      if (this.media === m && e.status === 410) this.recheck();
      else if (this.media === m && e.name !== 'AbortError') this.fail(e.message || String(e));
    } finally {
      m.pumping = false;
    }
  }

  /** At a segment boundary of the playing card: switch to the rung the network affords when it is another — down
   *  as soon as the estimate (with KEEP_FACTOR's margin) cannot carry the playing one, up when it carries a larger
   *  one with UP_FACTOR's. The new rung's init is appended next (pump), then its segments from `m.next` on.
   *  Returns whether it switched. */
  adapt(m) {
    // The next segment is here already (fetched ahead at this rung): play it, decide at the boundary after.
    if (m.early.has(this.rendition.segments[m.next])) return false;
    const { w, h } = this.env.box();
    const playing = this.rendition;
    const renditions = sameCodec(this.item.renditions, playing);
    let want = playing;
    const keep = pickRendition(renditions, w, h, meter.estimate * KEEP_FACTOR);
    if (keep && area(keep) < area(playing)) want = keep;
    else if (!(performance.now() < m.noUpUntil) && this.bufferedAhead(m) >= UP_BUFFER_S) {
      const up = pickRendition(renditions, w, h, meter.estimate * UP_FACTOR);
      if (up && area(up) > area(playing)) want = up;
    }
    if (!want || want === playing) return false;
    this.switchTo(m, want);
    return true;
  }

  /** Seconds buffered ahead of the playhead. */
  bufferedAhead(m) {
    const v = m.video, b = v.buffered;
    return b.length ? Math.max(0, b.end(b.length - 1) - v.currentTime) : 0;
  }

  switchTo(m, rendition) {
    const playing = this.rendition;
    this.rendition = rendition;
    m.initDone = false;
    if (this.env.onSwitch) this.env.onSwitch(this, playing, rendition);
  }

  /** GET a segment the playing card needs next, given up (rejected with `abandoned`: the smallest rung) when it
   *  comes too slowly for what is buffered — hls.js's abandon rule: after ABANDON_AFTER_MS, when the playhead is
   *  within ABANDON_AHEAD_S of the end of what is buffered and, at the rate its bytes have come so far, the rest
   *  would arrive after that. The fetch is aborted; what came so far counted in the estimate. */
  getPlaying(m, url, k) {
    const renditions = playable(sameCodec(this.item.renditions, this.rendition)).filter(r => r.mime && r.segments);
    const smallest = renditions.reduce((a, r) => (!a || area(r) < area(a) ? r : a), null);
    const p = this.get(m, url);
    if (!smallest || smallest === this.rendition) return p;
    const started = performance.now();
    // The segment's size at most: the rung's peak rate over the segment's length.
    const starts = this.times.starts;
    const seconds = (k + 1 < starts.length ? starts[k + 1] : this.times.total) - starts[k];
    const expected = (this.rendition.bandwidth || 0) / 8 * Math.max(0.1, seconds);
    return new Promise((resolve, reject) => {
      const timer = setInterval(() => {
        if (this.media !== m || !this.active) return;
        const elapsed = performance.now() - started;
        const ahead = this.bufferedAhead(m);
        const got = m.progress.get(url) || 0;
        const rate = got > 0 ? got / elapsed : 0;     // bytes per ms so far
        const rest = rate > 0 ? Math.max(0, expected - got) / rate : Infinity;
        // Only a response whose bytes come slowly: one that has not started is the server making the segment, and
        // another rung would have to be made too.
        if (got > 0 && elapsed > ABANDON_AFTER_MS && ahead < ABANDON_AHEAD_S && rest > ahead * 1000) {
          clearInterval(timer);
          const controller = m.controllers.get(url);
          if (controller) controller.abort();
          reject(Object.assign(new Error(`GET ${url}: too slow, abandoned`), { abandoned: smallest }));
        }
      }, 100);
      p.then(v => { clearInterval(timer); resolve(v); }, e => { clearInterval(timer); reject(e); });
    });
  }

  /** Keeps what was appended for an unrolled loop (`rendition`: this is its init), until it is too much. */
  keep(m, data, rendition) {
    if (!m.kept) return;
    if (rendition && m.initialised === rendition) return;
    m.kept.push({ init: rendition, data });
    if (rendition) m.initialised = rendition;
    m.keptBytes += data.byteLength;
    if (m.keptBytes > UNROLL_BYTES) m.kept = null;
  }

  /** Appends the item again after its end when the playhead is within AHEAD_S of the buffered end: its inits and
   *  segments as first appended, one copy's span further on (timestampOffset). Drops what is LOOP_KEEP_S behind the
   *  playhead. Returns whether it appended. */
  async loopAgain(m) {
    const v = m.video, b = v.buffered;
    if (!b.length || m.sb.updating) return false;
    const end = b.end(b.length - 1);
    if (m.period == null) {
      if (!m.loops) m.video.loop = false;
      m.start = b.start(0);
      m.period = end - m.start;
      if (!(m.period > 0.01)) { m.kept = null; m.video.loop = true; return false; }
    }
    if (end - v.currentTime >= AHEAD_S) return false;
    m.loops++;
    m.sb.timestampOffset = m.loops * m.period;
    for (const piece of m.kept) {
      if (this.media !== m) return false;
      if (piece.init && piece.init !== m.initialised) {
        if (m.mime !== piece.init.mime && m.sb.changeType) m.sb.changeType(piece.init.mime);
        m.mime = piece.init.mime;
        m.initialised = piece.init;
      } else if (piece.init) {
        continue;
      }
      await this.append(m, piece.data);
    }
    const behind = v.currentTime - LOOP_KEEP_S;
    if (b.length && b.start(0) < behind - 1 && !m.sb.updating) {
      await new Promise(resolve => {
        m.sb.addEventListener('updateend', resolve, { once: true });
        m.sb.remove(0, behind);
      });
    }
    return true;
  }

  /** A seek into a span that is no longer buffered (the browser evicted it) re-appends from its segment. */
  seeking(m) {
    if (this.media !== m || !m.sb || m.loops) return;
    const t = m.video.currentTime;
    const b = m.video.buffered;
    for (let i = 0; i < b.length; i++) if (b.start(i) <= t + 0.05 && t < b.end(i)) return;
    let k = 0;
    while (k + 1 < this.times.starts.length && this.times.starts[k + 1] <= t) k++;
    m.next = k;
    this.pump();
  }

  /** The next card, its seg-0 held: the segments after it that start within EARLY_S fetched and kept (at the
   *  rendition seg-0 was held at), one after the other. */
  async fetchEarly(m) {
    const segments = this.rendition.segments;
    if (!this.early || this.media !== m || segments.length < 2 || m.fetchingEarly) return;
    m.fetchingEarly = true;
    for (let k = 1; k < segments.length && this.times.starts[k] < EARLY_S; k++) {
      if (this.media !== m || this.active || m.next > k) break;
      const url = segments[k];
      if (m.early.has(url)) continue;
      const p = this.get(m, url);
      m.early.set(url, p);
      try { await p; } catch { m.early.delete(url); break; }
    }
  }

  /** GET a media URL as an ArrayBuffer (shared if already under way), retrying network errors and 5xx. */
  get(m, url) {
    const early = m.early.get(url);
    if (early) {
      m.early.delete(url);
      return early;
    }
    let p = m.fetches.get(url);
    if (!p) {
      // Its own controller, so that one fetch can be given up (getPlaying); freeing the card aborts them all.
      const controller = new AbortController();
      const abort = () => controller.abort();
      m.abort.signal.addEventListener('abort', abort, { once: true });
      m.controllers.set(url, controller);
      const signal = controller.signal;
      p = (async () => {
        // A neighbour's fetch waits (NEIGHBOUR_WAIT_MS at most) while the card on screen is short of media: on a
        // slow link, fetches share it evenly whatever their priority.
        if (!this.active) await this.neighbourTurn(signal);
        for (let attempt = 0; ; attempt++) {
          let res;
          try {
            res = await fetch(url, { signal, priority: this.active ? 'high' : 'low' });
          } catch (e) {
            if (e.name === 'AbortError' || attempt >= RETRIES.length) throw e.name === 'AbortError' ? e : new Error(`GET ${url}: ${e.message}`);
            await sleep(RETRIES[attempt]);
            continue;
          }
          // Read through the bandwidth meter: every media byte is a throughput sample (abr.js).
          if (res.ok) return meter.read(res, signal, n => m.progress.set(url, n));
          if (res.status < 500 || attempt >= RETRIES.length) {
            throw Object.assign(new Error(`GET ${url}: HTTP ${res.status}${await errorText(res)}`), { status: res.status });
          }
          await sleep(RETRIES[attempt]);
        }
      })();
      m.fetches.set(url, p);
      const done = () => {
        m.fetches.delete(url);
        m.controllers.delete(url);
        m.progress.delete(url);
        m.abort.signal.removeEventListener('abort', abort);
      };
      p.then(done, done);
    }
    return p;
  }

  /** Resolves when the card on screen is not short of media (env.playingShort()), or after NEIGHBOUR_WAIT_MS. */
  async neighbourTurn(signal) {
    const until = performance.now() + NEIGHBOUR_WAIT_MS;
    while (this.env.playingShort && this.env.playingShort(this) && performance.now() < until && !signal.aborted) {
      await sleep(100);
    }
  }

  /** Whether this card plays and is short of media: less than SHORT_S buffered ahead and more to fetch. */
  get short() {
    const m = this.media;
    if (!this.active || !m || !m.sb || m.ended || m.kept && m.period != null) return false;
    if (m.next >= this.rendition.segments.length) return false;
    return this.bufferedAhead(m) < SHORT_S;
  }

  /** appendBuffer() as a promise; on QuotaExceededError drop what is well behind the playhead and try once more. */
  append(m, data, retried = false) {
    return new Promise((resolve, reject) => {
      const sb = m.sb;
      const done = () => { off(); resolve(); };
      const err = () => { off(); reject(new Error('the media could not be decoded (SourceBuffer error)')); };
      const off = () => { sb.removeEventListener('updateend', done); sb.removeEventListener('error', err); };
      sb.addEventListener('updateend', done);
      sb.addEventListener('error', err);
      try {
        sb.appendBuffer(data);
      } catch (e) {
        off();
        const t = m.video.currentTime;
        if (e.name === 'QuotaExceededError' && !retried && t > 10) {
          sb.addEventListener('updateend', () => this.append(m, data, true).then(resolve, reject), { once: true });
          sb.remove(0, t - 5);
        } else {
          reject(e);
        }
      }
    });
  }

  /** Becomes the current card: append the held seg-0 and play from the start, report the first painted frame after
   *  `t0`. */
  activate(t0) {
    this.active = true;
    this.el.classList.add('active');
    this.el.classList.remove('user-paused');
    this.startAt = t0;
    this.preload();
    const m = this.media;
    if (!m) return;     // failed, or pending: fillPending() comes back here
    if (m.played) this.rewind(m);     // back before the window attached it afresh: from the start
    m.played = true;
    const token = ++this.watch;
    if (t0 != null && m.video.requestVideoFrameCallback) {
      m.video.requestVideoFrameCallback((now, meta) => {
        if (token !== this.watch || !this.active || this.media !== m) return;
        this.env.onFrame(this, Math.max(0, (meta.expectedDisplayTime || now) - t0), meta.mediaTime);
      });
    }
    this.play();
    this.pump();
    this.tick();
  }

  play() {
    const m = this.media;
    if (!m) return;
    m.video.muted = this.env.settings.muted;
    m.video.play().catch(e => {
      // Autoplay with sound refused: go on muted (the mute button shows it).
      if (e.name === 'NotAllowedError' && !m.video.muted && this.media === m && this.active) {
        this.env.settings.setMuted(true);
        m.video.play().catch(() => {});
      }
    });
  }

  /** No longer current: paused where it is. The next preload() attaches it afresh; it is not sent back to the start
   *  here, as that seek would decode again from the keyframe on the media threads while the new card starts. */
  deactivate() {
    this.active = false;
    this.watch++;
    this.el.classList.remove('active', 'user-paused', 'waiting');
    const m = this.media;
    if (m) m.video.pause();
    this.bar.style.transform = 'scaleX(0)';
  }

  /** Park a paused video on its first frame: the start of what is buffered (a rendition whose first picture is
   *  not at 0, e.g. 0.01 s after an MPEG-TS start offset, starts ~80 ms sooner from there than from 0). */
  rewind(m) {
    const v = m.video;
    if (v.readyState === 0) return;
    const b = v.buffered;
    const start = b.length && b.start(0) < 0.5 ? b.start(0) : 0;
    if (Math.abs(v.currentTime - start) > 0.001) v.currentTime = start;
  }

  /** Tap to pause / resume. */
  toggle() {
    const m = this.media;
    if (!m || !this.active) return;
    if (m.video.paused) { this.el.classList.remove('user-paused'); this.play(); }
    else { m.video.pause(); this.el.classList.add('user-paused'); }
  }

  get userPaused() { return this.el.classList.contains('user-paused'); }

  setMuted(muted) { if (this.media) this.media.video.muted = muted; }

  /** The progress bar, redrawn every animation frame while the current card's video moves: not while it waits for
   *  media or is paused (its `playing`, `seeked` and `timeupdate` events start the loop again). */
  tick() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    const m = this.media;
    if (!this.active || !m) return;
    const d = this.times.total || m.video.duration;
    if (d > 0 && Number.isFinite(d)) this.bar.style.transform = `scaleX(${Math.min(1, this.time / d)})`;
    if (m.video.paused || m.video.readyState < HTMLMediaElement.HAVE_FUTURE_DATA) return;
    this.frame = requestAnimationFrame(() => this.tick());
  }

  /** Detach the MediaSource so the decoder and its buffers go; the card can be preloaded again later. */
  free() {
    this.wanted = false;
    if (this.filling && !this.active && this.env.abandon) {
      // The whole card is not wanted any more: its request goes (fillPending's rejection handler ends `filling`).
      this.env.abandon(this.item);
    }
    const m = this.media;
    if (!m) return;
    this.media = null;
    this.watch++;
    m.abort.abort();
    m.video.pause();
    m.video.removeAttribute('src');
    m.video.load();
    URL.revokeObjectURL(m.url);
    m.video.remove();
    this.el.classList.remove('has-frame', 'waiting', 'ready');
  }

  /** The item's media answered 410: ask the listing for the item as it is now. A new version (another poster URL:
   *  the URLs carry the version) starts this card again with it, once (or shows its error); an item the server no
   *  longer has, the same version again or an error card without a version is removed. */
  async recheck() {
    if (this.rechecking || this.gone || this.failed) return;
    this.rechecking = true;
    let now = null;
    try {
      if (!this.rechecked && this.env.lookup) now = await this.env.lookup(this.item);
    } catch (e) {
      if (!e.gone) now = null;       // the listing cannot say: the item's media is gone all the same
    } finally {
      this.rechecking = false;
    }
    if (this.gone || this.failed) return;
    // Not a new version: no answer, the same poster, or an error card (it has no poster; a job that found the
    // source gone fails so while the listing has not caught up).
    if (!now || !now.poster || now.poster === this.item.poster) return this.removed();
    this.rechecked = true;
    this.item = now;
    if (now.error) return this.fail(now.error);
    const wanted = this.wanted;
    this.free();
    this.rendition = null;
    this.wanted = wanted;
    if (this.poster.getAttribute('src')) this.poster.src = now.poster;
    if (this.active) this.activate(this.startAt);
    else if (this.wanted) this.preload();
  }

  /** Show the calm removed card: the server no longer has the item (its media answered 410 and the listing does
   *  not list it). Not an error: the feed goes on. */
  removed() {
    if (this.gone || this.failed) return;
    this.gone = true;
    this.free();
    this.el.classList.add('gone');
    this.el.querySelector('.removed').hidden = false;
    if (this.env.onGone) this.env.onGone(this);
    this.settle();
  }

  /** Show the error card (public_id + message); the feed goes on. */
  fail(message) {
    if (this.failed || this.gone) return;
    this.failed = String(message);
    this.free();
    this.el.classList.add('failed');
    const box = this.el.querySelector('.error');
    box.querySelector('.message').textContent = this.failed;
    box.hidden = false;
    if (this.env.onFail) this.env.onFail(this);
    this.settle();
  }

  /** Whether the card has shown a frame of its video, or its error: nothing more is on its way for the viewer. */
  get shown() { return !!this.failed || this.gone || this.el.classList.contains('has-frame'); }

  /** Whether activate() needs nothing from the server: shown, or its first segment held (a prefetched neighbour). */
  get ready() { return this.shown || !!(this.media && this.media.held); }

  /** Calls `callback` once: at the next frame the video presents, or after `ms` (no video, or it does not move). */
  afterNextFrame(callback, ms) {
    let done = false;
    const once = () => { if (!done) { done = true; clearTimeout(timer); callback(); } };
    const timer = setTimeout(once, ms);
    const m = this.media;
    if (m && m.video.requestVideoFrameCallback) m.video.requestVideoFrameCallback(once);
  }

  /** Calls `callback` once the card is shown (at once if it is). */
  whenShown(callback) {
    if (this.shown) callback(); else this.onShown.push(callback);
  }

  settle() {
    const waiting = this.onShown;
    this.onShown = [];
    for (const callback of waiting) callback();
  }

  /** Playhead (s) and whether it is playing, for the WebSocket's `at`. */
  get time() {
    const m = this.media;
    if (!m) return 0;
    const t = m.video.currentTime;
    // In an unrolled loop, the time within the item.
    return m.period ? m.start + ((t - m.start) % m.period + m.period) % m.period : t;
  }
  get playing() { return !!this.media && !this.media.video.paused; }
}

function sleep(ms) { return new Promise(r => setTimeout(r, ms)); }

/** The reason an error answer gives: `{"error": "..."}` or plain text (first 200 characters). */
async function errorText(res) {
  try {
    const text = (await res.text()).trim();
    let reason = text;
    try { reason = JSON.parse(text).error || text; } catch { /* plain text */ }
    return reason ? `: ${String(reason).slice(0, 200)}` : '';
  } catch { return ''; }
}

function mediaErrorText(error) {
  if (!error) return 'the media failed';
  const kinds = { 1: 'aborted', 2: 'network error', 3: 'decode error', 4: 'format not supported' };
  return `${kinds[error.code] || 'media error'}${error.message ? ': ' + error.message : ''}`;
}
