#!/usr/bin/env python3
"""A raw HTTP/2 client for the abuse tests: plain sockets, frames built by hand.

Modes (each prints one line of key=value results):

  flood HOST:PORT SECONDS
      one connection sending HEADERS + RST_STREAM pairs (the "rapid reset" pattern)
      for SECONDS; reconnects when the server closes the connection. Prints the local
      port of each connection it made.
  healthy HOST:PORT SECONDS [health|ngfn]
      sequential calls on one connection: grpc.health.v1.Health/Check, or with ngfn
      CloudProvider/NodeGroupForNode (what cluster-autoscaler calls most); an answer is
      a DATA frame followed by the trailers (END_STREAM); anything else is an error.
      Prints the call count, errors, latency percentiles and the local port.
  headers-only HOST:PORT CALLS CONNECTIONS WAIT [GRPC_TIMEOUT]
      opens CALLS streams (HEADERS without END_STREAM, no body; no grpc-timeout, or the
      one given, such as 1H) spread over CONNECTIONS connections, then waits up to WAIT seconds for the server to close
      each stream (trailers or RST_STREAM) and prints how many it closed.
  big-header HOST:PORT BYTES
      one call whose metadata carries a BYTES-long header (split into CONTINUATION
      frames); prints what the server answered: trailers, rst, goaway or nothing.
  no-message HOST:PORT
      one Health/Check call that ends (END_STREAM on its HEADERS) without a request
      message; prints what the server answered and, for trailers, whether they hold
      grpc-status 3 and the message "request message missing" (gRPC 1.51 sends both as
      plain literals).
  no-message-timeout HOST:PORT
      one Health/Check call with a 1 s deadline (grpc-timeout) that never sends its
      message nor ends its stream; prints what the server answered and, for trailers,
      whether they hold grpc-status 4 (DEADLINE_EXCEEDED).
  deadlines HOST:PORT SECONDS STREAMS TIMEOUT_MS GROUP
      a well-behaved client as grpc-go is: STREAMS threads share one connection, each
      making CloudProvider/NodeGroupIncreaseSize calls of GROUP (delta 1) with a
      TIMEOUT_MS deadline (grpc-timeout) one after the other for SECONDS; a call not
      answered by its deadline is reset (RST_STREAM CANCEL) and the next one opened at
      once. Then one NodeGroupForNode call on the same connection, retried while it
      is refused as busy. Prints the calls, how many were answered and reset, whether
      the connection was closed (GOAWAY or its end) and the final call's outcome
      (final=ok when answered with a message).
  pings HOST:PORT COUNT INTERVAL
      one connection without calls that sends COUNT PING frames INTERVAL seconds apart
      (a client's keepalive, as grpc-go's keepalive.ClientParameters with
      PermitWithoutStream), then waits 2 s; prints the acks it got, whether the server
      sent a GOAWAY (with its debug data) and whether it closed the connection.
"""
import socket
import struct
import sys
import threading
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 3, 4, 6, 7, 8, 9)
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
HEALTH = "/grpc.health.v1.Health/Check"


def frame(ftype, flags, stream, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, stream & 0x7FFFFFFF) + payload


def hpack_int(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_literal(name, value):
    """Literal header field without indexing, new name, no Huffman."""
    n, v = name.encode(), value.encode()
    return b"\x00" + hpack_int(len(n), 7) + n + hpack_int(len(v), 7) + v


def request_block(path, extra=()):
    fields = [(":method", "POST"), (":scheme", "http"), (":path", path),
              (":authority", "localhost"), ("content-type", "application/grpc"),
              ("te", "trailers")] + list(extra)
    return b"".join(hpack_literal(k, v) for k, v in fields)


def settings_frame():
    # ENABLE_PUSH=0, INITIAL_WINDOW_SIZE=1 MiB
    return frame(SETTINGS, 0, 0, struct.pack(">HI", 2, 0) + struct.pack(">HI", 4, 1 << 20))


class Conn:
    """One connection; a reader thread answers SETTINGS and PING and records per-stream
    events: ('data'|'end'|'rst'|'goaway', time)."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.wlock = threading.Lock()  # frames of one writer at a time
        self.events = {}
        self.trailers = {}
        self.goaway = False
        self.goaway_debug = b""
        self.ping_acks = 0
        self.closed = False
        self.next_id = 1
        self.sock.sendall(PREFACE + settings_frame() +
                          frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 24)))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def send(self, data):
        with self.lock:
            if self.closed:
                raise OSError("closed")
        self._sendall(data)

    def _sendall(self, data):
        with self.wlock:
            self.sock.sendall(data)

    def open_stream(self, make_frames):
        """Take the next stream id and send make_frames(id) under the write lock, so
        that threads sharing the connection open their streams in id order."""
        with self.lock:
            if self.closed:
                raise OSError("closed")
        with self.wlock:
            sid = self.new_stream()
            self.sock.sendall(make_frames(sid))
        return sid

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise OSError("eof")
            buf += chunk
        return buf

    def _event(self, stream, what):
        with self.cond:
            self.events.setdefault(stream, []).append((what, time.monotonic()))
            self.cond.notify_all()

    def _read(self):
        try:
            self.sock.settimeout(None)
            while True:
                head = self._recv_exact(9)
                n = (head[0] << 16) | (head[1] << 8) | head[2]
                ftype, flags = head[3], head[4]
                stream = struct.unpack(">I", head[5:9])[0] & 0x7FFFFFFF
                payload = self._recv_exact(n) if n else b""
                if ftype == SETTINGS and not flags & ACK:
                    self._sendall(frame(SETTINGS, ACK, 0))
                elif ftype == PING and not flags & ACK:
                    self._sendall(frame(PING, ACK, 0, payload))
                elif ftype == PING:
                    with self.cond:
                        self.ping_acks += 1
                        self.cond.notify_all()
                elif ftype == DATA:
                    if n:
                        self._sendall(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", n)) +
                                          frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", n)))
                    self._event(stream, "data")
                    if flags & END_STREAM:
                        self._event(stream, "end")
                elif ftype == HEADERS and flags & END_STREAM:
                    self.trailers[stream] = payload
                    self._event(stream, "end")
                elif ftype == RST_STREAM:
                    self._event(stream, "rst")
                elif ftype == GOAWAY:
                    with self.cond:
                        self.goaway = True
                        self.goaway_debug = payload[8:]
                        self.cond.notify_all()
        except (OSError, ValueError):  # reset, or closed under us by close()
            pass
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def new_stream(self):
        sid = self.next_id
        self.next_id += 2
        return sid

    def wait_end(self, stream, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                ev = [e for e, _ in self.events.get(stream, [])]
                if "end" in ev or "rst" in ev or self.closed:
                    return ev
                left = deadline - time.monotonic()
                if left <= 0:
                    return ev
                self.cond.wait(left)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def flood(addr, seconds, path=HEALTH):
    block = request_block(path)
    end = time.monotonic() + seconds
    streams = reconnects = 0
    conn = Conn(addr)
    ports = [conn.sock.getsockname()[1]]
    while time.monotonic() < end:
        batch = []
        for _ in range(500):
            sid = conn.new_stream()
            batch.append(frame(HEADERS, END_HEADERS, sid, block))
            batch.append(frame(RST_STREAM, 0, sid, struct.pack(">I", 8)))
        try:
            conn.send(b"".join(batch))
            streams += 500
        except OSError:
            conn.close()
            reconnects += 1
            time.sleep(0.01)
            try:
                conn = Conn(addr)
            except OSError:
                time.sleep(0.1)
                conn = Conn(addr)
            ports.append(conn.sock.getsockname()[1])
        if conn.next_id > (1 << 30):
            conn.close()
            conn = Conn(addr)
            ports.append(conn.sock.getsockname()[1])
            reconnects += 1
    goaway = conn.goaway
    conn.close()
    print(f"streams={streams} reconnects={reconnects} goaway={int(goaway)} "
          f"ports={','.join(map(str, ports))}")


# NodeGroupForNode of a node frugal does not manage: answered OK with no group.
NODE_GROUP_FOR_NODE = "/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider/NodeGroupForNode"
NGFN_BODY = b"\x0a\x0d" + b"\x0a\x0b" + b"kind://none"  # node { providerID }


def grpc_message(body):
    return b"\x00" + struct.pack(">I", len(body)) + body


def healthy(addr, seconds, method="health"):
    conn = Conn(addr)
    path, body = (HEALTH, b"") if method == "health" else (NODE_GROUP_FOR_NODE, NGFN_BODY)
    block = request_block(path, [("grpc-timeout", "5S")])
    port = conn.sock.getsockname()[1]
    lat, errors, kinds = [], 0, {}
    start = time.monotonic()
    end = start + seconds
    while time.monotonic() < end:
        sid = conn.new_stream()
        t0 = time.monotonic()
        try:
            conn.send(frame(HEADERS, END_HEADERS, sid, block) +
                      frame(DATA, END_STREAM, sid, grpc_message(body)))
        except OSError:
            errors += 1
            conn.close()
            conn = Conn(addr)
            continue
        ev = conn.wait_end(sid, 5)
        dt = time.monotonic() - t0
        if ev[:1] == ["data"] and "end" in ev and "rst" not in ev:
            lat.append(dt)
        else:
            errors += 1
            key = (",".join(ev) or "timeout") + "@%.1f" % (t0 - start)
            if "end" in ev and ev[:1] != ["data"]:
                key += ":" + conn.trailers.get(sid, b"")[:80].hex()
            kinds[key] = kinds.get(key, 0) + 1
            if conn.closed:
                conn.close()
                conn = Conn(addr)
        time.sleep(0.005)
    conn.close()
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(len(lat) * p))] * 1000 if lat else -1
    print(f"calls={len(lat) + errors} ok={len(lat)} errors={errors} "
          f"p50_ms={pct(0.50):.2f} p99_ms={pct(0.99):.2f} max_ms={pct(1.0):.2f} "
          f"port={port} error_kinds={kinds}")


INCREASE_SIZE = "/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider/NodeGroupIncreaseSize"


def deadlines(addr, seconds, streams, timeout_ms, group):
    conn = Conn(addr)
    port = conn.sock.getsockname()[1]
    block = request_block(INCREASE_SIZE, [("grpc-timeout", "%dm" % timeout_ms)])
    g = group.encode()
    body = grpc_message(b"\x08\x01" + b"\x12" + bytes([len(g)]) + g)  # delta 1, id
    end = time.monotonic() + seconds
    counts = {"calls": 0, "answered": 0, "reset": 0, "failed": 0}
    count_lock = threading.Lock()

    def one_slot():
        while time.monotonic() < end:
            try:
                sid = conn.open_stream(lambda sid: frame(HEADERS, END_HEADERS, sid, block) +
                                       frame(DATA, END_STREAM, sid, body))
            except OSError:
                with count_lock:
                    counts["failed"] += 1
                return
            ev = conn.wait_end(sid, timeout_ms / 1000.0)
            what = "answered"
            if "end" not in ev and "rst" not in ev:
                if conn.closed:
                    what = "failed"
                else:  # its deadline passed: grpc-go resets the stream (CANCEL)
                    what = "reset"
                    try:
                        conn.send(frame(RST_STREAM, 0, sid, struct.pack(">I", 8)))
                    except OSError:
                        what = "failed"
            with count_lock:
                counts["calls"] += 1
                counts[what] += 1

    threads = [threading.Thread(target=one_slot) for _ in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The last call may find the connection's share still held by the calls the client
    # reset (they leave as the parked changes drain): it is retried while refused as busy.
    final = "closed"
    retry_end = time.monotonic() + 15
    while not conn.closed:
        try:
            sid = conn.open_stream(lambda sid: frame(HEADERS, END_HEADERS, sid, request_block(
                NODE_GROUP_FOR_NODE, [("grpc-timeout", "5S")])) +
                frame(DATA, END_STREAM, sid, grpc_message(NGFN_BODY)))
            ev = conn.wait_end(sid, 5)
        except OSError:
            break
        if ev[:1] == ["data"] and "end" in ev and "rst" not in ev:
            final = "ok"
            break
        final = ",".join(ev) or "timeout"
        busy = "end" in ev and b"grpc-status\x018" in conn.trailers.get(sid, b"")
        if not busy or time.monotonic() > retry_end:
            break
        time.sleep(0.2)
    print(f"calls={counts['calls']} answered={counts['answered']} reset={counts['reset']} "
          f"failed={counts['failed']} closed={int(conn.closed or conn.goaway)} "
          f"final={final} port={port}")
    conn.close()


def pings(addr, count, interval):
    conn = Conn(addr)
    start = time.monotonic()
    sent = 0
    for i in range(count):
        if i:
            time.sleep(interval)
        try:
            conn.send(frame(PING, 0, 0, struct.pack(">Q", i + 1)))
            sent += 1
        except OSError:
            break
    deadline = time.monotonic() + 2
    with conn.cond:
        while not conn.closed and time.monotonic() < deadline:
            conn.cond.wait(max(0.0, deadline - time.monotonic()))
    debug = conn.goaway_debug.decode("ascii", "replace").replace(" ", "_")
    print(f"sent={sent} acks={conn.ping_acks} goaway={int(conn.goaway)} debug={debug or '-'} "
          f"closed={int(conn.closed)} seconds={time.monotonic() - start:.1f}")
    conn.close()


def headers_only(addr, calls, connections, wait, timeout=None):
    conns = [Conn(addr) for _ in range(connections)]
    block = request_block(HEALTH, [("grpc-timeout", timeout)] if timeout else ())
    opened = []
    for i in range(calls):
        c = conns[i % connections]
        sid = c.new_stream()
        c.send(frame(HEADERS, END_HEADERS, sid, block))
        opened.append((c, sid))
    t0 = time.monotonic()
    print(f"opened={calls}", flush=True)
    deadline = t0 + wait
    closed = 0
    for c, sid in opened:
        ev = c.wait_end(sid, max(0.0, deadline - time.monotonic()))
        closed += 1 if ("end" in ev or "rst" in ev or c.closed) else 0
    print(f"closed={closed} seconds={time.monotonic() - t0:.1f}")
    for c in conns:
        c.close()


def big_header(addr, size):
    conn = Conn(addr)
    sid = conn.new_stream()
    block = request_block(HEALTH, [("grpc-timeout", "5S"), ("x-big", "a" * size)])
    chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)]
    out = [frame(HEADERS, END_HEADERS if len(chunks) == 1 else 0, sid, chunks[0])]
    for i, ch in enumerate(chunks[1:], 1):
        out.append(frame(CONTINUATION, END_HEADERS if i == len(chunks) - 1 else 0, sid, ch))
    out.append(frame(DATA, END_STREAM, sid, b"\x00\x00\x00\x00\x00"))
    try:
        conn.send(b"".join(out))
    except OSError:
        pass
    ev = conn.wait_end(sid, 5)
    what = "ok" if ev[:1] == ["data"] else "trailers" if "end" in ev else "rst" if "rst" in ev else \
        "goaway" if conn.goaway or conn.closed else "nothing"
    print(f"answer={what}")
    conn.close()


def no_message(addr, timeout=None):
    conn = Conn(addr)
    sid = conn.new_stream()
    if timeout is None:
        conn.send(frame(HEADERS, END_HEADERS | END_STREAM, sid, request_block(HEALTH)))
    else:
        conn.send(frame(HEADERS, END_HEADERS, sid, request_block(HEALTH, [("grpc-timeout", timeout)])))
    ev = conn.wait_end(sid, 5)
    what = "trailers" if "end" in ev else "rst" if "rst" in ev else "nothing"
    t = conn.trailers.get(sid, b"")
    status = [c for c in "34" if b"grpc-status\x01" + c.encode() in t]
    missing = b"request message missing" in t
    print(f"answer={what}" + "".join(f" grpc-status={c}" for c in status) +
          (" grpc-message=request message missing" if missing else ""))
    conn.close()


def main(argv):
    mode = argv[1]
    if mode == "flood":
        flood(argv[2], float(argv[3]), *argv[4:5])
    elif mode == "healthy":
        healthy(argv[2], float(argv[3]), *argv[4:5])
    elif mode == "headers-only":
        headers_only(argv[2], int(argv[3]), int(argv[4]), float(argv[5]), *argv[6:7])
    elif mode == "big-header":
        big_header(argv[2], int(argv[3]))
    elif mode == "no-message":
        no_message(argv[2])
    elif mode == "no-message-timeout":
        no_message(argv[2], "1S")
    elif mode == "pings":
        pings(argv[2], int(argv[3]), float(argv[4]))
    elif mode == "deadlines":
        deadlines(argv[2], float(argv[3]), int(argv[4]), int(argv[5]), argv[6])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
