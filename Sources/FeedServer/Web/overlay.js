// overlay.js — the debug overlay (toggle with `d`): the WebSocket, the rendition, the engine's window as the server
// last sent it (current ± 2 with ready / working / queued / failed), hit or miss of the last swipe and the time from
// that input to the new card's first painted frame, cards loaded and attached, errors.

export class Overlay {
  /** @param {() => object} read  a snapshot of app.js's state */
  constructor(el, read) {
    this.el = el;
    this.read = read;
    this.timer = 0;
  }

  get visible() { return !this.el.hidden; }

  toggle() {
    this.el.hidden = !this.el.hidden;
    clearInterval(this.timer);
    if (this.visible) {
      this.render();
      this.timer = setInterval(() => this.render(), 250);
    }
  }

  render() {
    if (!this.visible) return;
    const s = this.read();
    const w = s.window;
    const states = w ? [...w.items, { index: w.current, state: 'current' }].sort((a, b) => a.index - b.index) : [];
    const sw = s.lastSwipe;
    const lines = [
      ['ws', s.socketStatus],
      ['rendition', `${s.rendition || '–'}  (box ${s.box.w}x${s.box.h})`],
      ['item', `${s.index}${s.total != null ? ' / ' + s.total : ''}  ${s.publicId || ''}  (position ${s.position})`],
      ['window', w ? states.map(i => `<span class="st-${esc(i.state)}">${i.index} ${esc(i.state)}</span>`).join('  ')
                   : 'no window from the server yet'],
      ['last swipe', sw ? `${sw.source} → ${sw.index}  first frame ${sw.firstFrameMs == null ? '…' : sw.firstFrameMs.toFixed(0) + ' ms'}  `
                        + (sw.hit == null ? 'hit ?' : sw.hit ? '<span class="st-ready">hit</span>' : '<span class="st-failed">miss</span>') : '–'],
      ['playhead', s.playhead],
      ['cards', `${s.cards} loaded, ${s.attached} attached${s.errors.length ? ', errors: ' + s.errors.map(esc).join(', ') : ''}`],
    ];
    this.el.innerHTML = lines.map(([k, v]) => `<div><b>${k}</b> ${k === 'window' || k === 'last swipe' ? v : esc(v)}</div>`).join('');
  }
}

function esc(s) {
  return String(s).replace(/[&<>"]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
}
