// feed.js — the listing: pages of GET /api/feed?limit=N&cursor=C&pending=1 loaded on demand (Cloudinary's shape:
// `resources`, `next_cursor` absent on the last page, `total`, `generation`). The cursor is opaque: it names the last
// item listed, so the next page starts after that item wherever it now is, and a viewer paging while items arrive or
// go sees no item twice and skips none. Once the listing has ended the feed wraps around.
//
// The listing is live (docs/serve.md, "The page and a live feed"): items the server says were removed are marked
// and left out of what the viewer has not reached yet (view.js), `total` and `generation` follow the server's `feed`
// messages, and reload() starts the listing again from its first page (the "New videos" pill, pull-to-refresh).
//
// `pending=1`: the server answers at once, listing an item whose manifest it has not made yet as a pending card
// (its own fields and poster); `fill()` asks for that one card whole (`item=<public_id>`) when it is about to play.

const RETRY_MS = 2000;   // wait before asking again after a failed page

export class FeedSource {
  constructor(limit = 10) {
    this.limit = limit;
    this.epoch = 0;          // grows on reload(): answers to an older listing's requests are dropped
    this.clear();
    this.generation = null;  // the newest listing generation the server has told of (pages and `feed` messages)
    this.removed = new Map();   // public_id → the generation it was removed at (`feed` messages)
  }

  clear() {
    this.items = [];         // the listing in order, one entry per public_id; removed items stay, marked
    this.ids = new Set();
    this.cursor = null;
    this.done = false;       // the last page has been read
    this.total = null;
    this.headGeneration = null;   // the generation of the first page's answer
    this.error = null;       // the last page error, until a page loads
    this.loading = null;     // the page request under way
    this.retryAt = 0;
    for (const fill of (this.fills || new Map()).values()) fill.abort.abort();
    this.fills = new Map();  // public_id → the one-card request under way
  }

  /** GET one listing page (`cursor` null: the first); throws with the server's reason on an error answer. */
  async fetchPage(cursor) {
    const url = `/api/feed?limit=${this.limit}&pending=1`
      + (cursor != null ? `&cursor=${encodeURIComponent(cursor)}` : '');
    const res = await fetch(url, { cache: 'no-store' });
    const page = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}${page.error ? ': ' + page.error : ''}`);
    return page;
  }

  /** Take a page in: its items after those listed (an item listed already, or removed after this page's
   *  generation, is not listed twice), the cursor after its last item, total and generation. */
  accept(page) {
    const before = this.items.length;
    const generation = Number.isInteger(page.generation) ? page.generation : null;
    if (generation != null) {
      if (this.headGeneration == null && !this.items.length) this.headGeneration = generation;
      this.generation = Math.max(this.generation ?? generation, generation);
    }
    for (const r of page.resources || []) {
      if (!r || typeof r.public_id !== 'string' || this.ids.has(r.public_id)) continue;
      const gone = this.removed.get(r.public_id);
      if (gone != null) {
        if (generation == null || gone > generation) continue;   // removed since this answer
        this.removed.delete(r.public_id);                        // listed again since it was removed
      }
      this.ids.add(r.public_id);
      this.items.push(r);
    }
    if (typeof page.total === 'number') this.total = page.total;
    if (page.next_cursor != null && page.next_cursor !== '' && (page.resources || []).length) {
      this.cursor = page.next_cursor;
    } else {
      this.done = true;
      if (typeof page.total !== 'number') this.total = this.items.length;
    }
    this.error = null;
    return this.items.length > before;
  }

  /** Load the next page (one at a time); resolves true when items were added. */
  loadMore() {
    if (this.done) return Promise.resolve(false);
    if (this.loading) return this.loading;
    const wait = Math.max(0, this.retryAt - Date.now());
    const epoch = this.epoch;
    const loading = (async () => {
      if (wait) await new Promise(r => setTimeout(r, wait));
      try {
        const page = await this.fetchPage(this.cursor);
        return epoch === this.epoch && this.accept(page);
      } catch (e) {
        if (epoch !== this.epoch) return false;
        this.error = e;
        this.retryAt = Date.now() + RETRY_MS;
        return false;
      } finally {
        if (this.loading === loading) this.loading = null;
      }
    })();
    this.loading = loading;
    return loading;
  }

  /** The listing again from its first page (the newest items). The old listing stays until that page is in, and
   *  stays as it was if it fails (the error is thrown). */
  async reload() {
    const epoch = ++this.epoch;
    const page = await this.fetchPage(null);
    if (epoch !== this.epoch) return false;       // a later reload won
    this.clear();
    this.accept(page);
    return true;
  }

  /** A `feed` message of the server: {generation, total, head, removed: [public_id]}. Returns the public_ids newly
   *  marked removed. An older message than a page already read (they cross) still counts for its removals. */
  live(msg) {
    const generation = Number.isInteger(msg.generation) ? msg.generation : null;
    const newest = generation == null || this.generation == null || generation >= this.generation;
    if (generation != null && newest) this.generation = generation;
    if (typeof msg.total === 'number' && newest) this.total = msg.total;
    const marked = [];
    for (const id of Array.isArray(msg.removed) ? msg.removed : []) {
      if (typeof id !== 'string') continue;
      if (!this.removed.has(id) && this.ids.has(id)) marked.push(id);
      this.removed.set(id, generation ?? Infinity);
    }
    return marked;
  }

  /** A card's media answered 410 and the listing no longer has the item: it counts as removed from now. */
  markRemoved(publicId) {
    if (!this.removed.has(publicId)) this.removed.set(publicId, this.generation ?? Infinity);
  }

  /** Whether the server said this item was removed (after the page that listed it). */
  isRemoved(item) { return !!item && this.removed.has(item.public_id); }

  /** The first item the listing has that is not removed, or null. */
  get head() {
    return this.items.find(r => !this.isRemoved(r)) || null;
  }

  /** The listing slot after `slot` whose item is not removed (-1 before the first): the next one loaded, or once
   *  the listing has ended the first one again (wrap-around); -1 when none is loaded yet (or none is left). */
  nextSlot(slot) {
    for (let s = slot + 1; s < this.items.length; s++) if (!this.isRemoved(this.items[s])) return s;
    if (!this.done) return -1;
    for (let s = 0; s <= Math.min(slot, this.items.length - 1); s++) if (!this.isRemoved(this.items[s])) return s;
    return -1;
  }

  /** The whole card of a pending item (one request per item, shared); it replaces the pending one in the listing.
   *  An item the server no longer has (410, or 404) rejects with `{gone: true}`. */
  fill(item) {
    if (!item.pending) return Promise.resolve(item);
    const known = this.items.find(r => r.public_id === item.public_id && !r.pending);   // filled for another card
    if (known) return Promise.resolve(known);
    let fill = this.fills.get(item.public_id);
    if (!fill) {
      const abort = new AbortController();
      const p = this.lookup(item.public_id, abort.signal).then(full => {
        const at = this.items.indexOf(item);
        if (at >= 0) this.items[at] = full;
        return full;
      });
      fill = { p, abort, users: 0 };
      const fills = this.fills;
      fills.set(item.public_id, fill);
      const done = () => { if (fills.get(item.public_id) === fill) fills.delete(item.public_id); };
      p.then(done, done);
    }
    fill.users++;
    return fill.p;
  }

  /** The item's whole card as the server lists it now (GET /api/feed?item=<public_id>); rejects with an Error
   *  whose `gone` is true when the server answers 410 (removed) or 404 (not listed). */
  async lookup(publicId, signal) {
    const url = `/api/feed?item=${encodeURIComponent(publicId)}`;
    const res = await fetch(url, { cache: 'no-store', signal });
    const page = await res.json().catch(() => ({}));
    if (!res.ok) {
      throw Object.assign(new Error(`GET ${url}: HTTP ${res.status}${page.error ? ': ' + page.error : ''}`),
        { status: res.status, gone: res.status === 410 || res.status === 404 });
    }
    const full = (page.resources || [])[0];
    if (!full || full.public_id !== publicId) throw new Error(`GET ${url}: no item ${publicId} in the answer`);
    return full;
  }

  /** A card that asked fill(item) no longer wants it: the request is aborted once no card does (the server then
   *  withdraws the manifest it waits for, which would hold a worker, and a browser connection, for an item the
   *  viewer left). */
  abandon(item) {
    const fill = this.fills.get(item.public_id);
    if (!fill || --fill.users > 0) return;
    this.fills.delete(item.public_id);
    fill.abort.abort();
  }

  /** The item in a listing slot, or undefined when it is not loaded (yet); once the listing has ended, slots past
   *  its end wrap around. */
  item(slot) {
    if (slot < 0) return undefined;
    if (slot < this.items.length) return this.items[slot];
    return this.done && this.items.length ? this.items[slot % this.items.length] : undefined;
  }

  /** Whether positions go on for ever (the listing ended and is not empty). */
  get wraps() { return this.done && this.items.length > 0; }

  /** The first slot whose item has this public_id and is not removed (-1: none), loading up to `maxPages` more
   *  pages. */
  async find(publicId, maxPages = 100) {
    for (let pages = 0; ; pages++) {
      const i = this.items.findIndex(r => r.public_id === publicId && !this.isRemoved(r));
      if (i >= 0) return i;
      if (this.done || pages >= maxPages || !(await this.loadMore()) && this.error) return -1;
    }
  }

  /** Load pages until slot `slot` exists (or the listing ends / fails); resolves whether it exists. */
  async reach(slot, maxPages = 100) {
    for (let pages = 0; this.item(slot) === undefined; pages++) {
      if (this.done || pages >= maxPages) return this.item(slot) !== undefined;
      await this.loadMore();
      if (this.error) return false;
    }
    return true;
  }
}
