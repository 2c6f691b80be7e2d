#!/usr/bin/env python3
"""Check that transcoded outputs really play in Chromium (headless, through Playwright).

Usage: python3 scripts/browser-check.py [--json] [--timeout S] ITEM...

Each ITEM is a progressive MP4 (``*.mp4``) or an fMP4/CMAF HLS media playlist (``*.m3u8``: an
``#EXT-X-MAP:URI=...`` init segment and ``#EXTINF`` media segments, URIs relative to the playlist).
``PATH#codecs=avc1.64001f,mp4a.40.2`` gives the RFC 6381 codec string; without it the string is derived
with ffprobe (avcC/hvcC/av1C bytes when present, else profile and level).

For every item the page checks MediaSource.isTypeSupported('video/mp4; codecs="..."'), then
  - MP4: a muted <video src> plays to its end (playbackRate 4);
  - m3u8: one MediaSource SourceBuffer gets the init segment and every media segment in order, endOfStream(),
    then the same playback; the buffered ranges must form one range (gaps <= 0.1 s) and the duration must be
    within 0.1 s of the playlist's EXTINF sum.
Playback passes when `ended` fired, no `error` fired, currentTime is within 0.25 s of duration, videoWidth and
videoHeight are > 0 and requestVideoFrameCallback fired at least once.

Media is served by a threaded HTTP server on 127.0.0.1 (ephemeral port) with Range support (206).
Chromium is /usr/bin/chromium (Debian's package; $CHROMIUM overrides), Playwright's own browser downloads are
not used. Install both with `make browser-deps`.

Output: one line per item, `ok|FAIL  path  WxH  duration  note`, or a JSON list with --json.
Exit status: 0 all passed, 1 some failed, 2 usage error or chromium/playwright/ffprobe missing.
"""

import argparse
import http.server
import json
import mimetypes
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PLAYBACK_RATE = 4
END_TOLERANCE = 0.25     # currentTime vs duration at `ended`
GAP_TOLERANCE = 0.1      # largest gap allowed between buffered ranges (HLS)
EXTINF_TOLERANCE = 0.1   # MSE duration vs the playlist's EXTINF sum (HLS)


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------------------------------------------------
# Codec strings (RFC 6381) from ffprobe

def _extradata(stream):
    """ffprobe -show_data prints extradata as a hexdump: 'offset: xxxx xxxx ...  ascii'."""
    out = bytearray()
    for line in (stream.get("extradata") or "").splitlines():
        m = re.match(r"^[0-9a-fA-F]{8}: ((?:[0-9a-fA-F]{2,4} ?)+)", line)
        if m:
            out += bytes.fromhex(m.group(1).replace(" ", ""))
    return bytes(out)


H264_PROFILES = {  # ffprobe profile name -> (profile_idc, constraint byte); used only without an avcC box
    "Constrained Baseline": (66, 0xE0), "Baseline": (66, 0x00), "Main": (77, 0x40), "Extended": (88, 0x00),
    "High": (100, 0x00), "High 10": (110, 0x00), "High 10 Intra": (110, 0x10), "High 4:2:2": (122, 0x00),
    "High 4:2:2 Intra": (122, 0x10), "High 4:4:4 Predictive": (244, 0x00), "High 4:4:4 Intra": (244, 0x10),
    "CAVLC 4:4:4": (44, 0x00), "CAVLC 4:4:4 Intra": (44, 0x10),
}


def _bit_depth(stream):
    if stream.get("bits_per_raw_sample", "").isdigit():
        return int(stream["bits_per_raw_sample"])
    m = re.search(r"p(\d+)(le|be)$", stream.get("pix_fmt", ""))
    return int(m.group(1)) if m else 8


def _video_codec(s):
    name, tag, ed = s.get("codec_name"), s.get("codec_tag_string", ""), _extradata(s)
    if name == "h264":
        prefix = tag if tag in ("avc1", "avc3") else "avc1"
        if len(ed) >= 4 and ed[0] == 1:                       # avcC: version, profile, constraints, level
            return "%s.%02x%02x%02x" % (prefix, ed[1], ed[2], ed[3])
        idc, cons = H264_PROFILES.get(s.get("profile", ""), (None, None))
        level = s.get("level", -99)
        if idc is None or level is None or level <= 0:
            raise ValueError("cannot derive an avc1 string (profile %r, level %r); give PATH#codecs=..."
                             % (s.get("profile"), level))
        return "%s.%02x%02x%02x" % (prefix, idc, cons, level)
    if name == "hevc":
        prefix = tag if tag in ("hvc1", "hev1") else "hvc1"
        if len(ed) >= 13 and ed[0] == 1:                      # hvcC
            space, tier, idc = ed[1] >> 6, (ed[1] >> 5) & 1, ed[1] & 0x1F
            compat = int.from_bytes(ed[2:6], "big")
            compat = int("{:032b}".format(compat)[::-1], 2)
            cons = bytearray(ed[6:12])
            while cons and cons[-1] == 0:
                cons.pop()
            parts = [prefix, "%s%d" % (["", "A", "B", "C"][space], idc), "%X" % compat,
                     "%s%d" % ("LH"[tier], ed[12])] + ["%X" % b for b in cons]
            return ".".join(parts)
        idc = {"Main": 1, "Main 10": 2, "Main Still Picture": 3, "Rext": 4}.get(s.get("profile", ""), 1)
        compat = {1: 6, 2: 4}.get(idc, 1 << idc)              # general_profile_compatibility_flags, reversed
        return "%s.%d.%X.L%d.B0" % (prefix, idc, compat, max(s.get("level", 93), 0) or 93)
    if name == "vp9":
        m = re.search(r"(\d)", s.get("profile", "Profile 0"))
        profile = int(m.group(1)) if m else 0
        level = s.get("level", -99)
        if not level or level <= 0:                            # pick the smallest level whose picture size fits
            area = int(s.get("width", 0)) * int(s.get("height", 0))
            level = 62
            for lv, size in ((10, 36864), (11, 73728), (20, 122880), (21, 245760), (30, 552960),
                             (31, 983040), (40, 2228224), (50, 8912896), (60, 35651584)):
                if area <= size:
                    level = lv
                    break
        return "vp09.%02d.%02d.%02d" % (profile, level, _bit_depth(s))
    if name == "av1":
        if len(ed) >= 4 and ed[0] & 0x7F == 1:                # av1C
            profile, level = ed[1] >> 5, ed[1] & 0x1F
            tier = "H" if ed[2] >> 7 else "M"
            depth = 12 if (ed[2] >> 6) & 1 and (ed[2] >> 5) & 1 else 10 if (ed[2] >> 6) & 1 else 8
            return "av01.%d.%02d%s.%02d" % (profile, level, tier, depth)
        profile = {"Main": 0, "High": 1, "Professional": 2}.get(s.get("profile", ""), 0)
        return "av01.%d.%02dM.%02d" % (profile, max(s.get("level", 8), 0), _bit_depth(s))
    raise ValueError("no codec string known for video codec %r; give PATH#codecs=..." % name)


def _audio_codec(s):
    name = s.get("codec_name")
    if name == "aac":
        aot = {"LC": 2, "HE-AAC": 5, "HE-AACv2": 29, "Main": 1, "SSR": 3, "LTP": 4}.get(s.get("profile", ""))
        ed = _extradata(s)
        if aot is None and ed:
            aot = ed[0] >> 3
        return "mp4a.40.%d" % (aot or 2)
    return {"opus": "opus", "flac": "flac", "mp3": "mp4a.6B", "ac3": "ac-3", "eac3": "ec-3",
            "alac": "alac"}.get(name) or _raise("no codec string known for audio codec %r; give PATH#codecs=..." % name)


def _raise(msg):
    raise ValueError(msg)


def probe(path):
    """(codec string, ffprobe facts) for an MP4 or an m3u8 (the playlist is probed through ffmpeg's HLS demuxer,
    falling back to its init segment)."""
    if not shutil.which("ffprobe"):
        raise UsageError("ffprobe not found (run `make deps`), or give every ITEM as PATH#codecs=...")
    cmd = ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-show_data", "-of", "json", path]
    r = subprocess.run(cmd, capture_output=True, text=True)
    streams = json.loads(r.stdout or "{}").get("streams", []) if r.returncode == 0 else []
    if not streams and path.endswith(".m3u8"):
        init = parse_playlist(path)["init"]
        if init:
            r = subprocess.run(cmd[:-1] + [os.path.join(os.path.dirname(path), init)], capture_output=True, text=True)
            streams = json.loads(r.stdout or "{}").get("streams", []) if r.returncode == 0 else []
    if not streams:
        raise ValueError("ffprobe found no streams: %s" % (r.stderr.strip().splitlines() or ["?"])[-1])
    codecs = []
    for s in streams:
        if s.get("codec_type") == "video" and s.get("disposition", {}).get("attached_pic") != 1:
            codecs.append(_video_codec(s))
    for s in streams:
        if s.get("codec_type") == "audio":
            codecs.append(_audio_codec(s))
    if not codecs:
        raise ValueError("no audio or video stream")
    return ",".join(codecs)


# ---------------------------------------------------------------------------------------------------------------
# Playlists (the page parses them too; this copy only finds the files to serve and the init segment for ffprobe)

def parse_playlist(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [l.strip() for l in f]
    if not lines or lines[0] != "#EXTM3U":
        raise ValueError("not an M3U8 playlist (no #EXTM3U)")
    if any(l.startswith("#EXT-X-STREAM-INF") for l in lines):
        raise ValueError("a master playlist; give a media playlist")
    init, segs, extinf = None, [], 0.0
    for l in lines:
        if l.startswith("#EXT-X-MAP:"):
            m = re.search(r'URI="([^"]*)"', l)
            init = m.group(1) if m else None
        elif l.startswith("#EXTINF:"):
            extinf += float(l[8:].split(",")[0])
        elif l and not l.startswith("#"):
            segs.append(l)
    if not init:
        raise ValueError("no #EXT-X-MAP init segment (only fMP4/CMAF playlists are supported)")
    if not segs:
        raise ValueError("no media segments")
    return {"init": init, "segments": segs, "extinf": extinf}


# ---------------------------------------------------------------------------------------------------------------
# HTTP server with Range support

PAGE = b"<!doctype html><html><head><meta charset=utf-8><title>browser-check</title></head><body></body></html>"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    roots = {}            # "/m/<n>/" -> directory
    stats = {}            # URL path -> {"200": n, "206": n}
    lock = threading.Lock()

    def log_message(self, *a):
        pass

    def _count(self, path, status):
        with self.lock:
            d = self.stats.setdefault(path, {})
            d[status] = d.get(status, 0) + 1

    def _resolve(self):
        url = urllib.parse.urlsplit(self.path).path
        m = re.match(r"^(/m/\d+/)(.*)$", url)
        if not m or m.group(1) not in self.roots:
            return None, url
        root = os.path.realpath(self.roots[m.group(1)])
        full = os.path.realpath(os.path.join(root, urllib.parse.unquote(m.group(2))))
        if full != root and not full.startswith(root + os.sep):
            return None, url
        return (full, url) if os.path.isfile(full) else (None, url)

    def _send_simple(self, code, body=b"", ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        try:
            self._get()
        except (BrokenPipeError, ConnectionResetError):
            pass          # Chromium cancels media requests freely (seeks, range probes)

    def _get(self):
        if urllib.parse.urlsplit(self.path).path in ("/", "/index.html"):
            return self._send_simple(200, PAGE, "text/html; charset=utf-8")
        if urllib.parse.urlsplit(self.path).path == "/favicon.ico":
            return self._send_simple(204)
        full, url = self._resolve()
        if full is None:
            return self._send_simple(404, b"not found")
        size = os.path.getsize(full)
        ext = os.path.splitext(full)[1].lower()
        ctype = {".mp4": "video/mp4", ".m4s": "video/iso.segment", ".m4v": "video/mp4", ".m4a": "audio/mp4",
                 ".m3u8": "application/vnd.apple.mpegurl", ".cmfv": "video/mp4", ".cmfa": "audio/mp4"}.get(
                     ext, mimetypes.guess_type(full)[0] or "application/octet-stream")
        start, end, status = 0, size - 1, 200
        rng = self.headers.get("Range")
        if rng:
            m = re.match(r"^bytes=(\d*)-(\d*)$", rng.strip())
            if not m or (m.group(1) == "" and m.group(2) == ""):
                return self._range_error(size)
            if m.group(1) == "":                      # suffix: the last N bytes
                n = int(m.group(2))
                start, end = max(size - n, 0), size - 1
            else:
                start = int(m.group(1))
                end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            if start >= size or start > end:
                return self._range_error(size)
            status = 206
        self._count(url, str(status))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Cache-Control", "no-store")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        if self.command == "HEAD":
            return
        with open(full, "rb") as f:
            f.seek(start)
            left = end - start + 1
            while left > 0:
                chunk = f.read(min(left, 256 * 1024))
                if not chunk:
                    break
                self.wfile.write(chunk)
                left -= len(chunk)

    def _range_error(self, size):
        self.send_response(416)
        self.send_header("Content-Range", "bytes */%d" % size)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


# ---------------------------------------------------------------------------------------------------------------
# The page's side

JS_COMMON = r"""
const ranges = (tr) => { const r = []; for (let i = 0; i < tr.length; i++) r.push([tr.start(i), tr.end(i)]); return r; };
const mediaErr = (v) => v.error ? {code: v.error.code, message: v.error.message || ''} : null;
function makeVideo() {
  const v = document.createElement('video');
  v.muted = true; v.playsInline = true; v.preload = 'auto';
  v.width = 180; v.height = 320;
  document.body.appendChild(v);
  return v;
}
// Resolves once `ended`, `error`, a stall or the deadline ends playback; starts playing at args.rate.
function playToEnd(v, args, extra) {
  return new Promise((resolve) => {
    const st = Object.assign({ended: false, error: null, frames: 0, playError: null, events: []}, extra || {});
    let done = false, lastT = -1, lastMove = performance.now();
    const finish = (why) => {
      if (done) return; done = true; clearTimeout(deadline); clearInterval(watch);
      resolve(Object.assign(st, {why, currentTime: v.currentTime, duration: v.duration,
        videoWidth: v.videoWidth, videoHeight: v.videoHeight, buffered: ranges(v.buffered),
        readyState: v.readyState, networkState: v.networkState, paused: v.paused, error: st.error || mediaErr(v)}));
    };
    const deadline = setTimeout(() => finish('timeout'), args.timeoutMs);
    const watch = setInterval(() => {      // no progress for stallMs while playing: give up early
      if (v.currentTime !== lastT) { lastT = v.currentTime; lastMove = performance.now(); }
      else if (performance.now() - lastMove > args.stallMs) finish('stalled');
    }, 100);
    v.addEventListener('error', () => { st.error = mediaErr(v); finish('error'); });
    v.addEventListener('ended', () => { st.ended = true; finish('ended'); });
    for (const e of ['loadedmetadata', 'canplay', 'playing', 'waiting', 'stalled']) {
      v.addEventListener(e, () => { if (st.events.length < 40) st.events.push(e + '@' + v.currentTime.toFixed(2)); });
    }
    if ('requestVideoFrameCallback' in v) {
      const cb = (now, meta) => { st.frames++; st.lastFrameMediaTime = meta.mediaTime; v.requestVideoFrameCallback(cb); };
      v.requestVideoFrameCallback(cb);
    } else st.noRVFC = true;
    v.defaultPlaybackRate = args.rate; v.playbackRate = args.rate;
    const p = v.play();
    if (p) p.catch((e) => { st.playError = e.name + ': ' + e.message; setTimeout(() => finish('play() rejected'), 300); });
  });
}
"""

JS_MP4 = JS_COMMON + r"""
return (async () => {
  const supported = MediaSource.isTypeSupported(args.mime);
  const v = makeVideo();
  v.src = args.url;
  const r = await playToEnd(v, args, {});
  r.supported = supported;
  return r;
})();
"""

JS_HLS = JS_COMMON + r"""
const out = {supported: MediaSource.isTypeSupported(args.mime), segments: 0};
let setupTimer;
const setupDeadline = new Promise((res) => { setupTimer = setTimeout(() => res(Object.assign(out,
  {setupError: 'timeout: fetching and appending took over ' + args.timeoutMs / 1000 + ' s'})), args.timeoutMs); });
return Promise.race([setupDeadline, (async () => {
  let v;
  try {
    const resp = await fetch(args.url, {cache: 'no-store'});
    if (!resp.ok) throw new Error('playlist: HTTP ' + resp.status);
    const lines = (await resp.text()).split(/\r?\n/).map((l) => l.trim());
    let init = null, extinf = 0, pendingRange = null, initRange = null; const segs = [];
    for (const l of lines) {
      if (l.startsWith('#EXT-X-MAP:')) {
        const m = /URI="([^"]*)"/.exec(l); init = m && m[1];
        const b = /BYTERANGE="(\d+)(?:@(\d+))?"/.exec(l); if (b) initRange = [+b[2] || 0, +b[1]];
      } else if (l.startsWith('#EXTINF:')) extinf += parseFloat(l.slice(8));
      else if (l.startsWith('#EXT-X-BYTERANGE:')) {
        const b = /(\d+)(?:@(\d+))?/.exec(l.slice(17));
        const prev = segs.length ? segs[segs.length - 1] : null;
        const off = b[2] !== undefined ? +b[2] : (prev && prev.range ? prev.range[0] + prev.range[1] : 0);
        pendingRange = [off, +b[1]];
      } else if (l && !l.startsWith('#')) { segs.push({uri: l, range: pendingRange}); pendingRange = null; }
    }
    out.extinf = extinf;
    if (!init) throw new Error('no #EXT-X-MAP init segment');
    const get = async (uri, range) => {
      const h = range ? {Range: 'bytes=' + range[0] + '-' + (range[0] + range[1] - 1)} : {};
      const r = await fetch(new URL(uri, args.url), {headers: h, cache: 'no-store'});
      if (!r.ok) throw new Error(uri + ': HTTP ' + r.status);
      return r.arrayBuffer();
    };
    v = makeVideo();
    const ms = new MediaSource();
    v.src = URL.createObjectURL(ms);
    await new Promise((res) => ms.addEventListener('sourceopen', res, {once: true}));
    const sb = ms.addSourceBuffer(args.mime);     // throws NotSupportedError for an unsupported codec string
    const append = (buf, what) => new Promise((res, rej) => {
      const ok = () => { sb.removeEventListener('error', bad); res(); };
      const bad = () => {                        // the element's error (the parser's reason) follows shortly
        sb.removeEventListener('updateend', ok);
        setTimeout(() => rej(new Error('appendBuffer(' + what + ') failed' + (v.error ? ': ' + v.error.message : ''))), 100);
      };
      sb.addEventListener('updateend', ok, {once: true});
      sb.addEventListener('error', bad, {once: true});
      sb.appendBuffer(buf);
    });
    await append(await get(init, initRange), init);
    out.afterAppend = [];
    for (const s of segs) {
      if (ms.readyState !== 'open') throw new Error('MediaSource ' + ms.readyState + ' before ' + s.uri + (v.error ? ': ' + v.error.message : ''));
      await append(await get(s.uri, s.range), s.uri);
      out.segments++;
      out.afterAppend.push(ranges(sb.buffered));
    }
    ms.endOfStream();
    out.mseDuration = ms.duration;
    out.bufferedBeforePlay = ranges(v.buffered);
  } catch (e) {
    out.setupError = e.name + ': ' + e.message;
    return out;
  } finally {
    clearTimeout(setupTimer);
  }
  return await playToEnd(v, args, out);       // playback has its own deadline
})()]);
"""


# ---------------------------------------------------------------------------------------------------------------

def judge(item, r):
    """Failure reasons for one result."""
    fails = []
    if r.get("pageError"):
        fails.append(r["pageError"])
        return fails
    if not r.get("supported"):
        fails.append("MediaSource.isTypeSupported(%s) is false" % item["mime"])
    if r.get("setupError"):
        fails.append(r["setupError"])
        return fails
    if r.get("error"):
        fails.append("media error %s: %s" % (r["error"].get("code"), r["error"].get("message") or "?"))
    if r.get("playError") and not r.get("error"):
        fails.append("play() rejected: " + r["playError"])
    if not r.get("ended"):
        fails.append("no ended event (%s at %.2f s)" % (r.get("why"), r.get("currentTime") or 0))
    dur, t = r.get("duration"), r.get("currentTime")
    if not isinstance(dur, (int, float)) or dur != dur or dur <= 0 or dur == float("inf"):
        fails.append("duration is %r" % dur)
    elif t is None or abs(dur - t) > END_TOLERANCE:
        fails.append("stopped at %.3f s of %.3f s" % (t or 0, dur))
    if not (r.get("videoWidth") or 0) > 0 or not (r.get("videoHeight") or 0) > 0:
        fails.append("no video size (%sx%s)" % (r.get("videoWidth"), r.get("videoHeight")))
    if r.get("noRVFC"):
        fails.append("requestVideoFrameCallback is missing")
    elif not r.get("frames"):
        fails.append("no frame painted (requestVideoFrameCallback never fired)")
    if item["kind"] == "hls":
        buf = r.get("bufferedBeforePlay") or r.get("buffered") or []
        gaps = [buf[i + 1][0] - buf[i][1] for i in range(len(buf) - 1)]
        if not buf:
            fails.append("nothing buffered")
        elif any(g > GAP_TOLERANCE for g in gaps):
            fails.append("buffered has gaps: " + " ".join("%.3f-%.3f" % (a, b) for a, b in buf))
        mdur = r.get("mseDuration")
        if isinstance(mdur, (int, float)) and abs(mdur - r.get("extinf", 0)) > EXTINF_TOLERANCE:
            fails.append("duration %.3f s but EXTINF sum %.3f s" % (mdur, r.get("extinf", 0)))
    return fails


def parse_item(spec):
    path, codecs = spec, None
    if "#codecs=" in spec:
        path, codecs = spec.rsplit("#codecs=", 1)
        if not codecs:
            raise UsageError("%s: empty #codecs=" % spec)
    low = path.lower()
    if low.endswith(".mp4"):
        kind = "mp4"
    elif low.endswith(".m3u8"):
        kind = "hls"
    else:
        raise UsageError("%s: an ITEM is a .mp4 or an .m3u8 (optionally #codecs=...)" % spec)
    return {"spec": spec, "path": path, "kind": kind, "codecs": codecs}


def main(argv):
    ap = argparse.ArgumentParser(prog="browser-check.py", description="Check that MP4s and fMP4 HLS playlists "
                                 "play to their end in headless Chromium.",
                                 usage="%(prog)s [--json] [--timeout S] ITEM...  "
                                       "(ITEM: file.mp4 | playlist.m3u8, optionally #codecs=...)")
    ap.add_argument("--json", action="store_true", help="print a JSON list instead of one line per item")
    ap.add_argument("--timeout", type=float, default=60.0, metavar="S",
                    help="seconds allowed for each item's playback (default 60; a stall of 5 s ends it earlier)")
    ap.add_argument("items", nargs="*", metavar="ITEM")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    if not a.items:
        ap.print_usage(sys.stderr)
        return 2
    if a.timeout <= 0:
        print("browser-check: --timeout must be > 0", file=sys.stderr)
        return 2
    try:
        items = [parse_item(s) for s in a.items]
    except UsageError as e:
        print("browser-check: %s" % e, file=sys.stderr)
        return 2

    try:
        from playwright.sync_api import sync_playwright, Error as PWError
    except ImportError:
        print("browser-check: the playwright Python package is missing; run `make browser-deps`", file=sys.stderr)
        return 2
    if not os.access(CHROMIUM, os.X_OK):
        print("browser-check: %s is missing; run `make browser-deps`" % CHROMIUM, file=sys.stderr)
        return 2

    # Work out what to serve and which codec string to test; a bad item fails alone.
    Handler.roots, Handler.stats = {}, {}
    for n, it in enumerate(items):
        it["problem"] = None
        try:
            if not os.path.isfile(it["path"]):
                raise ValueError("no such file")
            if it["kind"] == "hls":
                pl = parse_playlist(it["path"])
                it["extinf"] = pl["extinf"]
                d = os.path.dirname(os.path.abspath(it["path"]))
                missing = [u for u in [pl["init"]] + pl["segments"]
                           if "://" not in u and not os.path.isfile(os.path.join(d, urllib.parse.unquote(u)))]
                if missing:
                    raise ValueError("missing segment files: " + " ".join(missing[:5]))
            if not it["codecs"]:
                it["codecs"] = probe(it["path"])
        except UsageError as e:
            print("browser-check: %s" % e, file=sys.stderr)
            return 2
        except (ValueError, OSError, json.JSONDecodeError) as e:
            it["problem"] = str(e)
        it["mime"] = 'video/mp4; codecs="%s"' % (it["codecs"] or "")
        prefix = "/m/%d/" % n
        Handler.roots[prefix] = os.path.dirname(os.path.abspath(it["path"]))
        it["urlpath"] = prefix + urllib.parse.quote(os.path.basename(it["path"]))

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_address[1]

    args = ["--autoplay-policy=no-user-gesture-required", "--disable-dev-shm-usage",
            "--disable-background-media-suspend", "--disable-renderer-backgrounding",
            "--disable-background-timer-throttling"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")
    results = []
    t0 = time.monotonic()
    try:
        with sync_playwright() as pw:
            try:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
            except PWError as e:
                print("browser-check: cannot start %s: %s\n(run `make browser-deps`)"
                      % (CHROMIUM, str(e).strip().splitlines()[0]), file=sys.stderr)
                return 2
            ctx = browser.new_context()
            for it in items:
                started = time.monotonic()
                if it["problem"]:
                    r = {"pageError": it["problem"]}
                else:
                    page = ctx.new_page()
                    console = []
                    page.on("console", lambda m, c=console: c.append(m.text) if m.type == "error" else None)
                    page.on("pageerror", lambda e, c=console: c.append(str(e)))
                    js_args = {"url": base + it["urlpath"], "mime": it["mime"], "rate": PLAYBACK_RATE,
                               "timeoutMs": int(a.timeout * 1000), "stallMs": int(min(5.0, a.timeout) * 1000)}
                    try:
                        page.goto(base + "/", timeout=30000)
                        page.set_default_timeout((a.timeout + 60) * 1000)
                        r = page.evaluate("(args) => { %s }" % (JS_MP4 if it["kind"] == "mp4" else JS_HLS), js_args)
                    except PWError as e:
                        r = {"pageError": "page: " + str(e).strip().splitlines()[0]}
                    if console:
                        r["console"] = console[:10]
                    page.close()
                fails = judge(it, r)
                prefix = it["urlpath"][:it["urlpath"].index("/", 3) + 1]      # "/m/<n>/"
                served = {urllib.parse.unquote(k[len(prefix):]): v for k, v in Handler.stats.items()
                          if k.startswith(prefix)}
                r.update(path=it["path"], kind=it["kind"], codecs=it["codecs"], ok=not fails, failures=fails,
                         seconds=round(time.monotonic() - started, 2), served=served)
                results.append(r)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()

    if a.json:
        keys = ["path", "ok", "kind", "codecs", "supported", "videoWidth", "videoHeight", "duration", "currentTime",
                "ended", "frames", "buffered", "bufferedBeforePlay", "mseDuration", "extinf", "segments", "error",
                "playError", "setupError", "pageError", "why", "events", "console", "served", "seconds", "failures"]
        print(json.dumps([{k: r[k] for k in keys if k in r} for r in results], indent=2))
    else:
        for r in results:
            w, h = r.get("videoWidth"), r.get("videoHeight")
            size = "%dx%d" % (w, h) if w and h else "-"
            dur = r.get("duration")
            dur = "%.3fs" % dur if isinstance(dur, (int, float)) and 0 < dur < float("inf") else "-"
            ranges = sum(v.get("206", 0) for v in r["served"].values())
            if r["ok"]:
                note = "%s; %d frames painted; %s" % (r["codecs"], r.get("frames", 0),
                    "%d segments, buffered %s" % (r.get("segments", 0), " ".join("%.3f-%.3f" % tuple(x) for x in r.get("bufferedBeforePlay", [])))
                    if r["kind"] == "hls" else "%d range requests" % ranges)
            else:
                note = "%s; %s" % (r["codecs"] or "?", "; ".join(r["failures"]))
            print("%-4s  %s  %s  %s  %s" % ("ok" if r["ok"] else "FAIL", r["path"], size, dur, note))
        print("browser-check: %d ok, %d failed, %.1f s" % (sum(r["ok"] for r in results),
              sum(not r["ok"] for r in results), time.monotonic() - t0), file=sys.stderr)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
