// socket.js — the viewer's position for the server (docs/serve.md, GET /api/ws): `hello` with the rendition first,
// then `at` {index, item, time} on every move and about once a second while playing (`item`: the public_id on
// screen, by which the server places the viewer in a feed that changes; `index` is a hint); the server answers
// `swipe` {index, hit}, `window` {current, items} and `feed` {generation, total, head, removed} (when the socket
// opens and whenever the listing changes). Reconnects with back-off when the socket drops or cannot open; the page
// works without it.

const BACKOFF_MS = [500, 1000, 2000, 5000, 10000];

export class FeedSocket {
  /** @param {(msg: object) => void} onMessage  @param {(status: string) => void} onStatus */
  constructor(onMessage, onStatus) {
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.helloMsg = null;
    this.lastAt = null;
    this.ws = null;
    this.failures = 0;
    this.status = 'connecting';
    this.connect();
  }

  connect() {
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/ws`;
    let ws;
    try { ws = new WebSocket(url); } catch { return this.retry(); }
    this.ws = ws;
    this.setStatus('connecting');
    ws.onopen = () => {
      this.failures = 0;
      this.setStatus('open');
      this.flush();
    };
    ws.onmessage = e => {
      let msg;
      try { msg = JSON.parse(e.data); } catch { return; }
      if (msg && typeof msg === 'object') this.onMessage(msg);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.retry();
    };
  }

  retry() {
    const wait = BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)];
    this.setStatus(`closed, retrying in ${wait / 1000} s`);
    setTimeout(() => this.connect(), wait);
  }

  setStatus(s) { this.status = s; this.onStatus(s); }

  get open() { return !!this.ws && this.ws.readyState === WebSocket.OPEN; }

  /** Send `hello` first (again on every reconnect), then the last position so the server knows the window. */
  flush() {
    if (!this.open || !this.helloMsg) return;
    this.ws.send(JSON.stringify(this.helloMsg));
    if (this.lastAt) this.ws.send(JSON.stringify(this.lastAt));
  }

  /** {type: 'hello', rendition, width, height, bandwidth}; re-sent when it changes. */
  hello(msg) {
    const changed = JSON.stringify(msg) !== JSON.stringify(this.helloMsg);
    this.helloMsg = msg;
    if (changed) this.flush();
  }

  /** {type: 'at', index, item, time, codec}: `codec` is what the card on screen plays, once it plays. */
  at(index, item, time, codec = null) {
    this.lastAt = { type: 'at', index, item, time: Math.round(time * 1000) / 1000, codec };
    if (this.open && this.helloMsg) this.ws.send(JSON.stringify(this.lastAt));
  }
}
