// util.js — small helpers shared by the page's modules: relative dates ("3 days ago"), the rendition a card plays
// (AV1 where this browser's MSE takes it, else H.264; the smallest one at least as large as the box it is shown in,
// else the largest; capped by what the network affords), and the MediaSource constructor this browser has.

/** MediaSource, or ManagedMediaSource (Safari 17+ on iPhone), or null when the browser has neither. */
export const MediaSourceClass = window.ManagedMediaSource || window.MediaSource || null;

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const UNITS = [['year', 31536000], ['month', 2592000], ['week', 604800], ['day', 86400], ['hour', 3600], ['minute', 60]];

/** `created_at` (ISO 8601) as "just now", "5 minutes ago", "yesterday", "3 days ago", "2 months ago"... */
export function relativeTime(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return '';
  const s = (t - now) / 1000;
  if (Math.abs(s) < 60) return 'just now';
  for (const [unit, seconds] of UNITS) {
    if (Math.abs(s) >= seconds) return rtf.format(Math.trunc(s / seconds), unit);
  }
  return 'just now';
}

/** Whether this browser's MSE can play a rendition (by its `mime`, e.g. video/mp4; codecs="avc1.64001f,mp4a.40.2"). */
export function canPlay(rendition) {
  try { return !!MediaSourceClass && MediaSourceClass.isTypeSupported(rendition.mime); } catch { return false; }
}

/**
 * The renditions a card chooses among: its AV1 ones (`codec: "av1"`, listed by `serve --codecs h264,av1`) when this
 * browser's MSE takes every one of them, else its supported H.264 ones. One codec per card: a card never switches
 * codec midway. The server's rule for a viewer that says `codec: "av1"` (ItemManifest.renditions(playing:)).
 * With `h264`, the H.264 ones whatever the browser takes.
 */
export function playable(renditions, h264 = false) {
  const all = renditions || [];
  const av1 = all.filter(r => r.codec === 'av1');
  if (!h264 && av1.length && av1.every(canPlay)) return av1;
  return all.filter(r => r.codec !== 'av1' && canPlay(r));
}

/** The renditions of `renditions` of the codec `r` is of: a card switches rung within its codec, never across. */
export function sameCodec(renditions, r) {
  const codec = (r && r.codec) || 'h264';
  return (renditions || []).filter(x => (x.codec || 'h264') === codec);
}

/**
 * The rendition to play in a box of `w`x`h` device pixels, among the `playable` ones: the smallest at least as large
 * as the picture will be shown (object-fit: contain, so the rendition covers the box's width or its height), else the
 * largest. With `bps` (what the network affords, bits per second), that one or the largest below it whose
 * `bandwidth` (its peak rate) fits, else the smallest: the server's rule for the same box and bandwidth
 * (ItemManifest.rendition(forBox:_:within:audio:codec:)). With `now` (a card shown at once, not ahead of a swipe),
 * an AV1 rendition whose first segment was not made when the card was listed (`ready: false`: the server makes AV1
 * on demand, and a cold item's AV1 first segment takes about twice the H.264 one's time) gives way to the H.264
 * ladder, made with the card. null when none is supported.
 */
export function pickRendition(renditions, w, h, bps = null, now = false) {
  const chosen = pickAmong(playable(renditions), w, h, bps);
  if (now && chosen && chosen.ready === false) return pickAmong(playable(renditions, true), w, h, bps) || chosen;
  return chosen;
}

/** The rule itself, on renditions already playable: the server's (EngineSupport's RenditionRule), checked against
 *  the same cases (Fixtures/rendition-rule.json) in the page and in Swift. Equal areas go to the earlier rendition,
 *  except that when nothing fits the network the last of the smallest is taken. */
export function pickAmong(ok, w, h, bps) {
  if (!ok.length) return null;
  const large = ok.filter(r => r.width >= w || r.height >= h).sort((a, b) => area(a) - area(b));
  const box = large[0] || ok.slice().sort((a, b) => area(b) - area(a))[0];
  if (bps == null || !Number.isFinite(bps)) return box;
  const below = ok.filter(r => area(r) <= area(box)).sort((a, b) => area(b) - area(a));
  return below.find(r => !(r.bandwidth > 0) || r.bandwidth <= bps) || below[below.length - 1];
}

/** A rendition's size in pixels (how renditions are ordered). */
export function area(r) { return r ? r.width * r.height : 0; }

/** Start times (s) of each segment of a rendition, and the total, from its `segment_durations` (the server lists
 *  them with every rendition: the grid is the server's setting); null when they are missing or do not match. */
export function segmentTimes(rendition) {
  const d = rendition.segment_durations;
  if (!Array.isArray(d) || d.length !== rendition.segments.length || !d.every(x => Number.isFinite(x) && x >= 0)) {
    return null;
  }
  const starts = [];
  let t = 0;
  for (const x of d) { starts.push(t); t += x; }
  return { starts, total: t };
}

/** The time of an input event on the performance.now() clock: the event's own stamp (when the OS saw it, however
 *  late a busy page runs the handler) unless it is not a sane one. */
export function inputTime(event) {
  const now = performance.now();
  const t = event && event.timeStamp;
  return t > 0 && t <= now && now - t < 10000 ? t : now;
}
