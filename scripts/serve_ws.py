"""A minimal WebSocket client (RFC 6455) and the nearest-rank percentile, shared by the serve test scripts
(serve-load.py, serve-replay.py).

    ws = WebSocket(host, port, "/api/ws")
    ws.send_text(json.dumps({...}))
    message = ws.receive()          # str (text) or bytes (binary); raises WebSocketClosed
    ws.close()

Standard library only.
"""

import base64
import hashlib
import os
import socket
import struct
import threading


# --------------------------------------------------------------------------------------------------------------------
# A minimal WebSocket client (RFC 6455): text frames out (masked), frames in (unmasked), ping/pong, close.

class WebSocketClosed(Exception):
    pass


class WebSocket:
    def __init__(self, host, port, path, timeout=30.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise WebSocketClosed("connection closed during the upgrade")
            head += chunk
            if len(head) > 65536:
                raise WebSocketClosed("upgrade answer too long")
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        if len(lines[0].split()) < 2 or lines[0].split()[1] != "101":
            raise WebSocketClosed(f"upgrade refused: {lines[0]!r}")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        if headers.get("sec-websocket-accept") != accept.decode():
            raise WebSocketClosed("bad Sec-WebSocket-Accept")
        self.send_lock = threading.Lock()
        self.closed = False

    def _send_frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        with self.send_lock:
            self.sock.sendall(header + mask + masked)

    def send_text(self, text):
        if self.closed:
            raise WebSocketClosed("closed")
        self._send_frame(0x1, text.encode())

    def _read_exact(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise WebSocketClosed("connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def receive(self):
        """The next text or binary message (str or bytes); answers pings; raises WebSocketClosed on close."""
        parts, first_opcode = [], None
        while True:
            b0, b1 = self._read_exact(2)
            fin, opcode, n = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read_exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read_exact(8))[0]
            mask = self._read_exact(4) if b1 & 0x80 else None
            payload = self._read_exact(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                self.closed = True
                try:
                    self._send_frame(0x8, payload[:2])
                except OSError:
                    pass
                raise WebSocketClosed("closed by the server" + (f" ({struct.unpack('!H', payload[:2])[0]})"
                                                                if len(payload) >= 2 else ""))
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode in (0x1, 0x2):
                first_opcode, parts = opcode, [payload]
            elif opcode == 0x0:
                parts.append(payload)
            if fin and first_opcode is not None:
                data = b"".join(parts)
                return data.decode() if first_opcode == 0x1 else data

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self._send_frame(0x8, struct.pack("!H", 1000))
            except OSError:
                pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def percentile(values, p):
    """Nearest-rank percentile of a list (p in 0..100): the smallest value with at least p % of the values at or
    below it, sorted(values)[ceil(p * n / 100) - 1] (index clamped to 0..n-1); None for an empty list."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]
