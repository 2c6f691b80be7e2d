"""A `videofeed serve` process on a free port for the scripts that test it (serve-native-test.py, serve-abr-test.py).

    server = ServeProcess(videofeed, folder, work, ["--refresh", "1"])
    ... server.url ...
    server.stop()

Its stdout goes to WORK/serve.out once it has said where it listens, its stderr to WORK/serve.err (`server.log()`
gives the tail); the cache is WORK/cache.
"""

import os
import re
import subprocess
import threading
import time


def media_files(paths, extensions):
    """Each path that is a file, and the files of each folder whose extension is in `extensions`, sorted by name."""
    out = []
    for a in paths:
        if os.path.isdir(a):
            out += sorted(os.path.join(a, n) for n in os.listdir(a) if os.path.splitext(n)[1].lower() in extensions)
        else:
            out.append(a)
    return out


class ServeProcess:
    def __init__(self, videofeed, folder, work, extra=(), start_timeout=60):
        self.err_path = os.path.join(work, "serve.err")
        self.out = open(os.path.join(work, "serve.out"), "w")
        self.proc = subprocess.Popen([videofeed, "serve", folder, "--port", "0", "--cache", os.path.join(work, "cache"),
                                      "--log-level", "warning", *extra],
                                     stdout=subprocess.PIPE, stderr=open(self.err_path, "w"), text=True)
        self.url = None
        deadline = time.time() + start_timeout
        while time.time() < deadline and not self.url:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.match(r"listening on (http://\S+?)/?$", line.strip())
            if m:
                self.url = m.group(1)
        if not self.url:
            self.stop()
            raise RuntimeError("the server did not start: " + self.log())
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stdout:
            self.out.write(line)

    @property
    def alive(self):
        return self.proc.poll() is None

    def log(self, chars=2000):
        try:
            return open(self.err_path).read()[-chars:]
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
