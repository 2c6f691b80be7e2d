// overlay.js — the debug overlay (toggle with `d`): the WebSocket, the rendition, the engine's window as the server
// last sent it (current ± 2 with ready / working / queued / failed), hit or miss of the last swipe and the time from
// that input to the new card's first painted frame, cards loaded and attached with the page's window (the server's
// policy's), errors and warnings, the listing's generation and whether newer items wait above.

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
    // current ± 2 in feed order around the current item (across the wrap), the current one marked.
    const offset = i => {
      const d = i - w.current;
      return s.total ? ((d % s.total) + s.total + Math.floor(s.total / 2)) % s.total - Math.floor(s.total / 2) : d;
    };
    const states = w ? w.items.filter(i => i.index !== w.current).concat(
      [{ index: w.current, state: (w.items.find(i => i.index === w.current) || {}).state || 'current', current: true }])
      .sort((a, b) => offset(a.index) - offset(b.index)) : [];
    const sw = s.lastSwipe;
    const lines = [
      ['ws', s.socketStatus],
      ['rendition', `${s.rendition || '–'}  (box ${s.box.w}x${s.box.h})`],
      ['item', `${s.index}${s.total != null ? ' / ' + s.total : ''}  ${s.publicId || ''}  (position ${s.position})`],
      ['window', w ? states.map(i => `<span class="st-${esc(i.state)}${i.current ? ' current' : ''}">${i.index} ${esc(i.state)}</span>`).join('  ')
                   : 'no window from the server yet'],
      ['last swipe', sw ? `${sw.source} → ${sw.index}  first frame ${sw.firstFrameMs == null ? '…' : sw.firstFrameMs.toFixed(0) + ' ms'}  `
                        + (sw.hit == null ? 'hit ?' : sw.hit ? '<span class="st-ready">hit</span>' : '<span class="st-failed">miss</span>') : '–'],
      ['playhead', s.playhead],
      ['cards', `${s.cards} loaded, ${s.attached} attached${s.errors.length ? ', errors: ' + s.errors.join(', ') : ''}`],
      ['page window', `+${s.pageWindow.ahead}/-${s.pageWindow.behind} attached, posters ±${s.pageWindow.posters}`
                      + `  (${s.policy ? 'policy ' + s.policy : 'default until the server says'})`],
      ['feed', `generation ${s.generation ?? '–'}${s.newItems ? ', new videos above' : ''}`],
    ];
    for (const w of s.warnings.slice(-3)) lines.push(['warning', w]);
    this.el.innerHTML = lines.map(([k, v]) => `<div><b>${k}</b> ${k === 'window' || k === 'last swipe' ? v : esc(v)}</div>`).join('');
  }
}

function esc(s) {
  return String(s).replace(/[&<>"]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
}
