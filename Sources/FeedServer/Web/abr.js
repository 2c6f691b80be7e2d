// abr.js — what the network can carry, for choosing a rendition (adaptive bitrate).
//
// Throughput is measured on the media the page fetches (segments and init segments, card.js's get()), as bytes over
// the time they took to arrive: from each response's first byte (so neither the round trip nor the time the server
// spends making a cold segment counts as a slow network) to its last. Fetches that overlap share the link, so the
// meter counts the link's busy time once: a sample is the bytes that arrived while at least one fetch was receiving,
// over that time, taken whenever a fetch ends.
//
// The estimate is hls.js's: two exponentially weighted moving averages of the samples, weighted by their seconds,
// with half-lives of 3 s (fast) and 9 s (slow); the estimate is the lower of the two, so it drops quickly and climbs
// slowly. Before any sample it is the browser's own guess (Network Information's `downlink`, as shaka-player uses),
// else 1 Mb/s.
//
// The rendition for a card (util.js pickRendition): the one the viewport asks for, or the largest below it whose
// bandwidth (the listing's peak rate, video and audio) fits the estimate times a safety factor — 0.8 for a card about
// to start, 0.7 to switch the playing card up and 0.95 before it switches down (hls.js's factors), so a playing card
// does not flap between two rungs.

const FAST_HALF_LIFE_S = 3;
const SLOW_HALF_LIFE_S = 9;
const MIN_SAMPLE_MS = 20;           // shorter busy times are counted as this long (a burst from a local cache)
const MIN_SAMPLE_BYTES = 16 * 1024; // smaller samples say more about latency than throughput: kept for the next one
const DEFAULT_BPS = 1_000_000;
const MAX_BPS = 500_000_000;

/** Safety factors on the estimate: a new card's start, switching the playing card up, keeping it (not down). */
export const START_FACTOR = 0.8;
export const UP_FACTOR = 0.7;
export const KEEP_FACTOR = 0.95;

class Ewma {
  constructor(halfLife) {
    this.alpha = Math.exp(Math.log(0.5) / halfLife);
    this.estimate = 0;
    this.totalWeight = 0;
  }

  sample(weight, value) {
    const adjusted = Math.pow(this.alpha, weight);
    this.estimate = value * (1 - adjusted) + adjusted * this.estimate;
    this.totalWeight += weight;
  }

  /** The average with the zero start corrected for (as if the first sample had always been). */
  get value() {
    const zeroFactor = 1 - Math.pow(this.alpha, this.totalWeight);
    return zeroFactor > 0 ? this.estimate / zeroFactor : this.estimate;
  }
}

export class BandwidthMeter {
  constructor() {
    this.fast = new Ewma(FAST_HALF_LIFE_S);
    this.slow = new Ewma(SLOW_HALF_LIFE_S);
    this.samples = 0;
    this.receiving = 0;      // fetches between their first byte and their end
    this.busyMs = 0;         // link time with at least one fetch receiving, since the last sample
    this.bytes = 0;          // bytes that arrived in that time
    this.last = 0;           // performance.now() of the last arrival or change while receiving
    this.listeners = new Set();
  }

  /** Bits per second: the lower of the two averages; the browser's guess (or 1 Mb/s) before any sample. */
  get estimate() {
    if (!this.samples) return initialGuess();
    return Math.min(this.fast.value, this.slow.value);
  }

  /** Calls `listener(estimate)` after each sample; returns a function that stops it. */
  onChange(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reads `response`'s body to the end as an ArrayBuffer, metering its arrival (`progress(bytes so far)` after each
   *  chunk). */
  async read(response, signal, progress = null) {
    if (!response.body || !response.body.getReader) return response.arrayBuffer();
    const reader = response.body.getReader();
    const chunks = [];
    let size = 0;
    let started = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const now = performance.now();
        if (!started) {
          started = true;
          // The link was idle before this first chunk: its bytes came in during the round trip, not timed.
          if (this.receiving > 0) this.arrived(now, value.byteLength); else this.last = now;
          this.receiving++;
        } else {
          this.arrived(now, value.byteLength);
        }
        chunks.push(value);
        size += value.byteLength;
        if (progress) progress(size);
        if (signal && signal.aborted) throw new DOMException('aborted', 'AbortError');
      }
    } finally {
      if (started) {
        this.arrived(performance.now(), 0);
        this.receiving--;
        this.take();
      }
    }
    const out = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) { out.set(c, at); at += c.byteLength; }
    return out.buffer;
  }

  arrived(now, bytes) {
    if (this.receiving > 0) this.busyMs += Math.max(0, now - this.last);
    this.last = now;
    this.bytes += bytes;
  }

  /** A fetch ended: what arrived since the last sample is one (when it is large enough to say something). */
  take() {
    if (this.bytes < MIN_SAMPLE_BYTES) return;
    const ms = Math.max(this.busyMs, MIN_SAMPLE_MS);
    const bps = Math.min(MAX_BPS, this.bytes * 8 / (ms / 1000));
    this.fast.sample(ms / 1000, bps);
    this.slow.sample(ms / 1000, bps);
    this.samples++;
    this.busyMs = 0;
    this.bytes = 0;
    const estimate = this.estimate;
    for (const listener of this.listeners) listener(estimate);
  }
}

function initialGuess() {
  const c = navigator.connection;
  const mbps = c && Number.isFinite(c.downlink) && c.downlink > 0 ? c.downlink : null;
  return mbps ? mbps * 1e6 : DEFAULT_BPS;
}

/** The page's one meter: every card's media is metered into it. */
export const meter = new BandwidthMeter();
