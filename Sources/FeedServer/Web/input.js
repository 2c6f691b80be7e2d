// input.js — gestures to moves: the mouse wheel (one card per gesture: a gesture ends after WHEEL_GAP ms without
// wheel events, so a trackpad's inertia tail does not move again), Arrow Up/Down and j/k, Page Up/Down, touch swipes
// (pointer events: the feed follows the finger, a swipe past SWIPE_PX or flicked faster than FLICK_PX_PER_MS moves
// one card), pull-to-refresh (a touch drag downwards on the first card past PULL_PX reloads the listing, with a hint
// that follows the finger), tap/click to pause, Space to pause, m to mute, d for the debug overlay. Any other
// scrolling (the scrollbar, a script, assistive technology) lands on a card through CSS scroll-snap, and view.js
// follows it.
import { inputTime } from './util.js';

const WHEEL_GAP = 180;        // ms of wheel silence that ends a gesture
const WHEEL_MIN = 4;          // |deltaY| (px) that starts a move
const SWIPE_PX = 60;          // a drag this long moves one card...
const FLICK_PX_PER_MS = 0.4;  // ...or a shorter one this fast
const TAP_PX = 10;            // at most this much movement for a tap
const GLIDE_MS = 200;         // the feed gliding into place after a swipe
const PULL_PX = 110;          // a drag downwards on the first card this long refreshes the listing

/**
 * @param {HTMLElement} scroller
 * @param {object} on  {move(delta, source, t0, noScroll) → Promise<bool>, position(), height(), hold(bool),
 *                      toggle(), mute(), debug(), pull(progress: 0 hides the hint, 1 and more: release refreshes),
 *                      refresh(source, t0)}
 */
export function bindInput(scroller, on) {
  // --- wheel ---
  let lastWheel = -Infinity;
  let moved = false;            // this gesture has moved already
  scroller.addEventListener('wheel', e => {
    if (e.ctrlKey) return;      // pinch-zoom
    e.preventDefault();
    const t = inputTime(e);
    if (t - lastWheel > WHEEL_GAP) moved = false;
    lastWheel = t;
    const dy = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaMode === 2 ? e.deltaY * 400 : e.deltaY;
    if (moved || Math.abs(dy) < WHEEL_MIN) return;
    moved = true;
    on.move(Math.sign(dy), 'wheel', t);
  }, { passive: false });

  // --- keys ---
  addEventListener('keydown', e => {
    if (e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName)) return;
    const t = inputTime(e);
    const key = e.key;
    let handled = true;
    if (key === 'ArrowDown' || key === 'j' || key === 'PageDown') on.move(1, 'key', t);
    else if (key === 'ArrowUp' || key === 'k' || key === 'PageUp') on.move(-1, 'key', t);
    else if (key === ' ' || key === 'Spacebar') on.toggle();
    else if (key === 'm') on.mute();
    else if (key === 'd') on.debug();
    else handled = false;
    if (handled) e.preventDefault();     // no native scroll on top of our move
  });

  // --- touch (and pen) swipes, following the finger ---
  // While a finger is down (and while the feed glides into place afterwards) scroll-snap is off and the view ignores
  // scroll positions (on.hold); the feed follows the finger by its scrollTop, then glides to the card it lands on.
  let drag = null;              // {id, y0, t0, top0, dy, pull}
  let suppressClick = 0;
  let glide = 0;                // the running glide's animation frame
  scroller.addEventListener('pointerdown', e => {
    if (e.pointerType === 'mouse' || drag) return;
    cancelAnimationFrame(glide);
    on.hold(true);
    scroller.style.scrollSnapType = 'none';
    // On the first card, at the top, a drag downwards pulls to refresh instead of scrolling.
    const pull = on.position() === 0 && scroller.scrollTop <= 1;
    drag = { id: e.pointerId, y0: e.clientY, t0: inputTime(e), top0: scroller.scrollTop, dy: 0, pull };
  });
  scroller.addEventListener('pointermove', e => {
    if (!drag || e.pointerId !== drag.id) return;
    drag.dy = e.clientY - drag.y0;
    if (drag.pull && drag.dy > TAP_PX) { on.pull(drag.dy / PULL_PX); return; }
    if (drag.pull) on.pull(0);
    if (Math.abs(drag.dy) > TAP_PX) scroller.scrollTop = drag.top0 - drag.dy;
  });
  const end = async e => {
    if (!drag || e.pointerId !== drag.id) return;
    const { dy, t0, pull } = drag;
    drag = null;
    const t = inputTime(e);
    const dt = Math.max(1, t - t0);
    if (Math.abs(dy) > TAP_PX) suppressClick = t + 400;
    if (pull && dy > TAP_PX) {
      on.pull(0);
      glideTo(0);
      if (e.type === 'pointerup' && dy >= PULL_PX) on.refresh('pull', t);
      return;
    }
    const swipe = e.type === 'pointerup' && (Math.abs(dy) >= SWIPE_PX
      || (Math.abs(dy) > TAP_PX * 2 && Math.abs(dy) / dt >= FLICK_PX_PER_MS));
    if (swipe) await on.move(dy < 0 ? 1 : -1, 'touch', t, true);   // plays at once; the feed glides meanwhile
    glideTo(on.position() * on.height());
  };
  const glideTo = top => {
    const from = scroller.scrollTop;
    const start = performance.now();
    const step = now => {
      const k = Math.min(1, (now - start) / GLIDE_MS);
      scroller.scrollTop = from + (top - from) * (1 - (1 - k) ** 3);   // ease-out
      if (k < 1) { glide = requestAnimationFrame(step); return; }
      scroller.style.scrollSnapType = '';
      on.hold(false);
    };
    if (Math.abs(top - from) < 1) step(start + GLIDE_MS); else glide = requestAnimationFrame(step);
  };
  scroller.addEventListener('pointerup', end);
  scroller.addEventListener('pointercancel', end);

  // --- tap / click the video to pause or resume ---
  scroller.addEventListener('click', e => {
    if (performance.now() < suppressClick || e.target.closest('button, a')) return;
    on.toggle();
  });
}
