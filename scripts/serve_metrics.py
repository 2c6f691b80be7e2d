"""`GET /metrics` of `videofeed serve`, read by the load test (serve-load.py) and the swipe benchmark
(serve-swipe-bench.py): one reader of the Prometheus text format, so both scripts agree on what a counter says.

Standard library only. Scripts run as `python3 scripts/NAME.py` find this module beside them (sys.path[0]).
"""

import http.client
import urllib.parse


def parse(text):
    """Prometheus text exposition as {name{labels}: value}. Comments (# HELP, # TYPE) and blank lines are skipped,
    as is a sample whose value is not a number."""
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            values[name] = float(value)
        except ValueError:
            pass
    return values


def fetch(base_url, timeout=10):
    """The server's metrics at BASE_URL (http://host:port/…); {} when the server cannot be reached or does not
    answer 200."""
    url = urllib.parse.urlsplit(base_url)
    try:
        conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=timeout)
        try:
            conn.request("GET", url.path.rstrip("/") + "/metrics")
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return {}
    if response.status != 200:
        return {}
    return parse(body.decode(errors="replace"))
