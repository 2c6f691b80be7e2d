"""The rendition rule (EngineSupport's RenditionRule, util.js pickAmong) for the Python harnesses that model the page
(serve-abr-test.py, serve-replay.py), checked against the same cases: Fixtures/rendition-rule.json."""
import json
import os


def pick(renditions, w, h, bps=None):
    """The rendition for a w x h box: the smallest that covers its width or height, else the largest; with `bps`, the
    largest at or below that one whose `bandwidth` fits (0 or none fits any), else the smallest. Equal areas go to the
    earlier, except that when nothing fits the network the last of the smallest is taken. None when there are none."""
    rs = list(renditions or [])
    if not rs:
        return None
    area = lambda r: r["width"] * r["height"]
    large = sorted((r for r in rs if r["width"] >= w or r["height"] >= h), key=area)
    box = large[0] if large else max(rs, key=area)
    if bps is None:
        return box
    below = sorted((r for r in rs if area(r) <= area(box)), key=lambda r: -area(r))
    return next((r for r in below if not (r.get("bandwidth") or 0) > 0 or r["bandwidth"] <= bps), below[-1])


def check():
    """Raises AssertionError naming the first case of Fixtures/rendition-rule.json this copy gets wrong."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "rendition-rule.json")
    with open(path) as f:
        cases = json.load(f)["cases"]
    for c in cases:
        rs = [{"width": w, "height": h, "bandwidth": b} for w, h, b in c["renditions"]]
        got = pick(rs, c["box"][0], c["box"][1], c["bps"])
        index = None if got is None else next(i for i, r in enumerate(rs) if r is got)
        assert index == c["expect"], f"rendition rule: {c['name']}: {index}, the server's {c['expect']}"
    return len(cases)


if __name__ == "__main__":
    print(f"rendition_rule: {check()} cases as the server picks them")
