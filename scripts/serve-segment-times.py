#!/usr/bin/env python3
"""How long `videofeed serve` takes to make a later segment on request, once the item's manifest exists.

    python3 scripts/serve-segment-times.py BASE_URL [--segment 1] [--rendition 720x1280]

Lists the whole feed (every manifest made: each rendition's init is in the cache), then asks for seg-K of the
named rendition (the first one when absent) of every item in turn, one request at a time, and prints each one's
time from sending the request to the last byte, by source, with the median. Run it against a server with a fresh
cache and a single viewer (nothing else running) to compare two builds on the same feed: each request makes its
segment then, as a viewer's next segment after a cold start is made.

Standard library only. Exit status 0, or 2 when the server cannot be used.
"""

import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse


def get(host, port, path):
    connection = http.client.HTTPConnection(host, port, timeout=120)
    start = time.perf_counter()
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - start) * 1000
    connection.close()
    return response.status, body, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--segment", type=int, default=1, help="the segment asked for (default 1)")
    parser.add_argument("--rendition", default="720x1280", help="rendition name (default 720x1280)")
    options = parser.parse_args()
    parts = urllib.parse.urlsplit(options.url)
    host, port = parts.hostname, parts.port or 80
    cards, cursor = [], ""
    while cursor is not None:
        query = {"limit": "20"} | ({"cursor": cursor} if cursor else {})
        status, body, _ = get(host, port, "/api/feed?" + urllib.parse.urlencode(query))
        if status != 200:
            print(f"serve-segment-times: /api/feed -> {status}", file=sys.stderr)
            return 2
        page = json.loads(body)
        cards += page.get("resources", [])
        cursor = page.get("next_cursor")
    rows = []
    for card in cards:
        renditions = card.get("renditions") or []
        rendition = next((r for r in renditions if r.get("name") == options.rendition), renditions[0] if renditions else None)
        if not rendition or len(rendition.get("segments", [])) <= options.segment:
            continue
        status, body, ms = get(host, port, rendition["segments"][options.segment])
        if status != 200:
            print(f"serve-segment-times: {card['public_id']} seg-{options.segment} -> {status}", file=sys.stderr)
            continue
        rows.append((card["public_id"], ms, len(body)))
    if not rows:
        print("serve-segment-times: no item has that segment", file=sys.stderr)
        return 2
    for public_id, ms, size in rows:
        print(f"{public_id:48} {ms:8.1f} ms {size:9d} bytes")
    times = [ms for _, ms, _ in rows]
    print(f"seg-{options.segment} of {len(rows)} items: median {statistics.median(times):.1f} ms, "
          f"mean {statistics.fmean(times):.1f} ms, total {sum(times) / 1000:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
