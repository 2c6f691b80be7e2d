// feed.js — the listing: pages of GET /api/feed?limit=N&cursor=C&pending=1 loaded on demand (Cloudinary's shape:
// `resources`, `next_cursor` absent on the last page, `total` once the end is known). Once the listing has ended the
// feed wraps around: position p shows item p mod n, and the index sent to the server is the item's own `index`.
// `pending=1`: the server answers at once, listing an item whose manifest it has not made yet as a pending card
// (its own fields and poster); `fill()` asks for that one card whole when it is about to play.

const RETRY_MS = 2000;   // wait before asking again after a failed page

export class FeedSource {
  constructor(limit = 10) {
    this.limit = limit;
    this.items = [];
    this.cursor = null;
    this.done = false;       // the last page has been read
    this.total = null;
    this.error = null;       // the last page error, until a page loads
    this.loading = null;     // the page request under way
    this.retryAt = 0;
  }

  /** Load the next page (one at a time); resolves true when items were added. */
  loadMore() {
    if (this.done) return Promise.resolve(false);
    if (this.loading) return this.loading;
    const wait = Math.max(0, this.retryAt - Date.now());
    const url = `/api/feed?limit=${this.limit}&pending=1` + (this.cursor != null ? `&cursor=${encodeURIComponent(this.cursor)}` : '');
    this.loading = (async () => {
      if (wait) await new Promise(r => setTimeout(r, wait));
      try {
        const res = await fetch(url, { cache: 'no-store' });
        const page = await res.json().catch(() => ({}));
        if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}${page.error ? ': ' + page.error : ''}`);
        const before = this.items.length;
        for (const r of page.resources || []) this.items.push(r);
        if (typeof page.total === 'number') this.total = page.total;
        if (page.next_cursor != null && page.next_cursor !== '' && (page.resources || []).length) {
          this.cursor = page.next_cursor;
        } else {
          this.done = true;
          this.total = this.items.length;
        }
        this.error = null;
        return this.items.length > before;
      } catch (e) {
        this.error = e;
        this.retryAt = Date.now() + RETRY_MS;
        return false;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  /** The whole card of a pending item (one request per item, shared); it replaces the pending one in the listing. */
  fill(item) {
    if (!item.pending) return Promise.resolve(item);
    const known = this.items.find(r => r.index === item.index && !r.pending);   // filled for another position
    if (known) return Promise.resolve(known);
    this.fills = this.fills || new Map();
    let fill = this.fills.get(item.index);
    if (!fill) {
      const url = `/api/feed?limit=1&cursor=${encodeURIComponent(item.index)}`;
      const abort = new AbortController();
      const p = (async () => {
        const res = await fetch(url, { cache: 'no-store', signal: abort.signal });
        const page = await res.json().catch(() => ({}));
        if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}${page.error ? ': ' + page.error : ''}`);
        const full = (page.resources || [])[0];
        if (!full || full.index !== item.index) throw new Error(`GET ${url}: no item ${item.index}`);
        const at = this.items.indexOf(item);
        if (at >= 0) this.items[at] = full;
        return full;
      })();
      fill = { p, abort, users: 0 };
      this.fills.set(item.index, fill);
      const done = () => { if (this.fills.get(item.index) === fill) this.fills.delete(item.index); };
      p.then(done, done);
    }
    fill.users++;
    return fill.p;
  }

  /** A card that asked fill(item) no longer wants it: the request is aborted once no card does (the server then
   *  withdraws the manifest it waits for, which would hold a worker, and a browser connection, for an item the
   *  viewer left). */
  abandon(item) {
    const fill = this.fills && this.fills.get(item.index);
    if (!fill || --fill.users > 0) return;
    this.fills.delete(item.index);
    fill.abort.abort();
  }

  /** The item shown at a position, or undefined when it is not loaded (yet). */
  item(pos) {
    if (pos < 0) return undefined;
    if (pos < this.items.length) return this.items[pos];
    return this.done && this.items.length ? this.items[pos % this.items.length] : undefined;
  }

  /** Whether positions go on for ever (the listing ended and is not empty). */
  get wraps() { return this.done && this.items.length > 0; }

  /** The item's feed index as the server knows it (modulo `total` after a wrap). */
  index(pos) {
    const it = this.item(pos);
    if (it && Number.isInteger(it.index)) return it.index;
    return this.wraps ? pos % this.items.length : pos;
  }

  /** The first position whose item has this public_id (-1: none), loading up to `maxPages` more pages. */
  async find(publicId, maxPages = 100) {
    for (let pages = 0; ; pages++) {
      const i = this.items.findIndex(r => r.public_id === publicId);
      if (i >= 0) return i;
      if (this.done || pages >= maxPages || !(await this.loadMore()) && this.error) return -1;
    }
  }

  /** Load pages until position `pos` exists (or the listing ends / fails); resolves whether it exists. */
  async reach(pos, maxPages = 100) {
    for (let pages = 0; this.item(pos) === undefined; pages++) {
      if (this.done || pages >= maxPages) return this.item(pos) !== undefined;
      await this.loadMore();
      if (this.error) return false;
    }
    return true;
  }
}
