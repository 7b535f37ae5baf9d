"""A small MCP benchmark harness: standard library only, any MCP server, three transports.

It spawns the server itself, speaks raw JSON-RPC (no SDK), and measures:
  cold start   spawn -> the initialize result, in ms (stdio: the median of several spawns)
  sequential   N tools/call one after another: calls/s, p50 and p99 latency in us
  concurrent   stdio: W requests kept in flight on the one pipe, W x K calls;
               HTTP: C sessions with a call in flight on each, K calls each (one thread)
  memory       the server's resident set (its process and children, from /proc) at the end
Every answer is checked (its id, no error, no isError, the user's email in its text): a
fast wrong server gets no figure, only its failure. The call is getUser {"name": "John"},
which mcp_min's demo (`python3 -m mcp_min serve`), our floors and sdk_server.py all serve.

    python3 .ci/bench/harness.py stdio 'python3 -m mcp_min serve --stdio' [-n 2000] [-w 20] [-k 100]
    python3 .ci/bench/harness.py http 'python3 -m mcp_min serve --port {port}' [-n 1000] [-c 20] [-k 100]
    python3 .ci/bench/harness.py sse 'python3 -m mcp_min serve --port {port}'    (legacy HTTP+SSE)
One JSON line out. Run from the repository root: commands run there, {port} is a free port.
"""
import glob, json, os, select, shlex, socket, statistics, subprocess, sys, tempfile, time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 30                # seconds: for an answer, and for a server to start listening
CALL = {"name": "getUser", "arguments": {"name": "John"}}
EXPECT = "john@example.com"     # in the answer's text: the right user, not just any result
SDK_INSTALL = 'python3 -m venv .peers && .peers/bin/pip install "mcp==2.3.0"'
# Printed above the ratio lines of stdio.py and http.py, so that a reader of the output knows what
# they are and what a miss means.
GOALS = ("Ratios: mcp_min's figure over the official SDK's (\"of SDK\", \"x SDK\") or the stdlib floor's "
         "(p99/p50: mcp_min's own); in parentheses, the project's own goal for that ratio. A miss means "
         "the project has not reached its goal against the SDK yet, not that anything fails for a user.")
now = time.perf_counter_ns


class Failed(Exception):
    """A run that gives no figure: a wrong answer, a server that died or went quiet."""


def request(id_, method, params=None):
    return {"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params else {})}


def check(msg, id_, call=True):
    """The result of msg, after checking it answers request id_ without an error."""
    if not isinstance(msg, dict) or msg.get("id") != id_:
        raise Failed(f"expected the answer to request {id_!r}, got {json.dumps(msg)[:300]}")
    result = msg.get("result")
    if "error" in msg or not isinstance(result, dict):
        raise Failed(f"request {id_!r} failed: {json.dumps(msg)[:300]}")
    content = result.get("content")
    if call and (result.get("isError") or not isinstance(content, list) or not any(
            isinstance(c, dict) and EXPECT in str(c.get("text")) for c in content)):
        raise Failed(f"call {id_!r}: not the user asked for: {json.dumps(result)[:300]}")
    return result


def rss_mb(pid):
    """Resident memory of pid and its descendants, in MB (VmRSS from /proc)."""
    kb, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                kb += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            for kids in glob.glob(f"/proc/{p}/task/*/children"):
                with open(kids) as f:
                    todo += [int(k) for k in f.read().split()]
        except (OSError, StopIteration):
            pass
    return kb / 1024


def figures(name, latencies_ns, wall_ns):
    """calls/s (as `name`), p50 and p99 in us of a timed stretch."""
    lat = sorted(latencies_ns)
    def pct(p): return lat[min(len(lat) - 1, len(lat) * p // 100)] / 1000
    return {name: len(lat) / (wall_ns / 1e9), f"{name}_p50_us": pct(50), f"{name}_p99_us": pct(99)}


class Spawned:
    """A server process started from a command line, its stderr kept in a file."""

    def __init__(self, cmd, pipes=False):
        self.cmd, self.err = cmd, tempfile.TemporaryFile()
        self.started = now()
        try:
            self.proc = subprocess.Popen(shlex.split(cmd), cwd=ROOT, stderr=self.err, bufsize=0,
                                         stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                                         stdout=subprocess.PIPE if pipes else subprocess.DEVNULL)
        except OSError as e:
            raise Failed(f"cannot start it: {e}") from None

    def stop(self):
        ends = [self.proc.terminate, self.proc.kill]
        if self.proc.stdin:
            ends.insert(0, self.proc.stdin.close)   # a stdio server ends at EOF
        for end in ends:
            end()
            try:
                self.proc.wait(2)
                break
            except subprocess.TimeoutExpired:
                pass
        for pipe in (self.proc.stdout, self.err):
            if pipe:
                pipe.close()

    def stderr(self):
        self.err.seek(0)
        return self.err.read()[-400:].decode(errors="replace").strip()


########################################################################################
# Sessions: send(message), then receive(its id) -> the answer (None for a notification)

class Session:
    version = "2025-06-18"

    def post(self, msg):
        self.send(msg)
        return self.receive(msg.get("id"))

    def initialize(self):
        result = check(self.post(request(0, "initialize", {
            "protocolVersion": self.version, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}})), 0, call=False)
        self.ready = now()
        self.negotiated(result.get("protocolVersion"))
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def negotiated(self, version):
        pass

    def start(self, id_):
        self.send(request(id_, "tools/call", CALL))

    def finish(self, id_):
        check(self.receive(id_), id_)

    def call(self, id_):
        self.start(id_)
        self.finish(id_)


class Stdio(Session):
    """A server on a pipe, one JSON message a line."""

    def __init__(self, cmd):
        self.server, self.buf = Spawned(cmd, pipes=True), b""
        self.fd = self.server.proc.stdout.fileno()

    def send(self, msg):
        self.server.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    def receive(self, id_):
        return None if id_ is None else self.next_answer()

    def next_answer(self):
        """A request from the server gets an error, a notification is skipped."""
        while True:
            while b"\n" not in self.buf:
                if not select.select([self.fd], [], [], TIMEOUT)[0]:
                    raise Failed(f"no answer in {TIMEOUT} s")
                data = os.read(self.fd, 65536)
                if not data:
                    raise Failed("the server closed its stdout")
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if not isinstance(msg, dict) or "method" not in msg:
                return msg
            if "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not here"}})

    def close(self):
        self.server.stop()


class Connection:
    """One HTTP/1.1 keep-alive connection to 127.0.0.1, blocking, reopened when closed."""

    def __init__(self, port):
        self.port, self.sock, self.buf = port, None, b""

    def send(self, method, target, headers, body=None):
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buf = b""
        head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        if body is not None:
            head += f"Content-Length: {len(body)}\r\n"
        self.sock.sendall(head.encode() + b"\r\n" + (body or b""))

    def head(self):
        """The status and headers (lower-case names) of the response."""
        lines = self.until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        fields = (line.partition(":") for line in lines[1:] if line)
        return int(lines[0].split()[1]), {k.strip().lower(): v.strip() for k, _, v in fields}

    def pieces(self, headers):
        """The body as it comes: by Content-Length, in chunks, or until the server closes."""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while size := int(self.until(b"\r\n").split(b";")[0], 16):
                yield self.exactly(size + 2)[:-2]
            self.until(b"\r\n")
        elif "content-length" in headers:
            yield self.exactly(int(headers["content-length"]))
        else:
            while data := self.buf or self.sock.recv(65536):
                self.buf = b""
                yield data
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()

    def body(self, headers):
        return b"".join(self.pieces(headers))

    def more(self):
        data = self.sock.recv(65536)
        if not data:
            raise Failed("the server closed the connection")
        self.buf += data

    def until(self, end):
        while (at := self.buf.find(end)) < 0:
            self.more()
        data, self.buf = self.buf[:at], self.buf[at + len(end):]
        return data

    def exactly(self, n):
        while len(self.buf) < n:
            self.more()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None


def events(pieces):
    """Server-sent events (name, data) from the pieces of a text/event-stream body."""
    buf = b""
    for piece in pieces:
        buf = (buf + piece).replace(b"\r\n", b"\n")
        while b"\n\n" in buf:
            block, buf = buf.split(b"\n\n", 1)
            name, data = "message", []
            for line in block.decode().split("\n"):
                field, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if field == "event":
                    name = value
                elif field == "data":
                    data.append(value)
            if data:
                yield name, "\n".join(data)


def answer_in(messages, id_):
    return next((m for m in messages if isinstance(m, dict) and m.get("id") == id_ and "method" not in m), None)


class StreamableHttp(Session):
    """Streamable HTTP (2025-03-26 on): each message POSTed, its answer JSON or an event stream."""

    def __init__(self, port, path="/mcp"):
        self.conn, self.path = Connection(port), path
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def negotiated(self, version):
        self.headers["MCP-Protocol-Version"] = version

    def send(self, msg):
        self.method = msg.get("method")
        self.conn.send("POST", self.path, self.headers, json.dumps(msg).encode())

    def receive(self, id_):
        status, headers = self.conn.head()
        body = self.conn.body(headers)
        if "mcp-session-id" in headers:
            self.headers["Mcp-Session-Id"] = headers["mcp-session-id"]
        if status not in (200, 202):
            raise Failed(f"HTTP {status} to {self.method}: {body[:200]!r}")
        if id_ is None:
            return None
        if headers.get("content-type", "").startswith("text/event-stream"):
            return answer_in((json.loads(data) for _, data in events([body])), id_)
        return json.loads(body)

    def socket(self):
        return self.conn.sock

    def close(self):
        if "Mcp-Session-Id" in self.headers:
            self.conn.send("DELETE", self.path, self.headers)
            self.conn.body(self.conn.head()[1])
        self.conn.close()


class LegacySse(Session):
    """HTTP+SSE (2024-11-05): a GET stream names where to POST; the answers come on the stream."""
    version = "2024-11-05"

    def __init__(self, port, path="/sse"):
        self.stream, self.poster = Connection(port), Connection(port)
        self.stream.send("GET", path, {"Accept": "text/event-stream"})
        status, headers = self.stream.head()
        if status != 200:
            raise Failed(f"HTTP {status} to GET {path}")
        self.events = events(self.stream.pieces(headers))
        name, data = next(self.events)
        if name != "endpoint":
            raise Failed(f"the stream began with {name!r}, not the endpoint")
        url = urllib.parse.urlsplit(urllib.parse.urljoin(path, data))
        self.endpoint = url.path + (f"?{url.query}" if url.query else "")

    def send(self, msg):
        self.method = msg.get("method")
        self.poster.send("POST", self.endpoint, {"Content-Type": "application/json"}, json.dumps(msg).encode())

    def receive(self, id_):
        status, headers = self.poster.head()
        self.poster.body(headers)
        if status not in (200, 202):
            raise Failed(f"HTTP {status} to {self.method}")
        if id_ is None:
            return None
        for name, data in self.events:
            if name == "message" and (found := answer_in([json.loads(data)], id_)):
                return found
        raise Failed("the event stream ended")

    def socket(self):
        return self.poster.sock

    def close(self):
        self.stream.close()
        self.poster.close()


########################################################################################
# Runs

def sequential(session, n, first_id):
    latencies, start = [], now()
    for id_ in range(first_id, first_id + n):
        t = now()
        session.call(id_)
        latencies.append(now() - t)
    return figures("seq", latencies, now() - start)


def in_flight(session, window, total, first_id):
    """stdio: keep `window` calls in flight on the pipe until `total` are answered."""
    sent, latencies, next_id, last = {}, [], first_id, first_id + total
    start = now()
    while sent or next_id < last:
        while len(sent) < window and next_id < last:
            sent[next_id] = now()
            session.start(next_id)
            next_id += 1
        msg = session.next_answer()
        id_ = msg.get("id") if isinstance(msg, dict) else None
        if id_ not in sent:
            raise Failed(f"an answer to no request in flight: {json.dumps(msg)[:300]}")
        check(msg, id_)
        latencies.append(now() - sent.pop(id_))
    return figures("conc", latencies, now() - start)


def at_once(sessions, k):
    """HTTP: a call in flight on every session until each has made k; one thread, select()."""
    ids = {s: iter(range(1 + i * k, 1 + (i + 1) * k)) for i, s in enumerate(sessions)}
    sent, latencies = {}, []
    start = now()
    for s in sessions:
        sent[s] = (next(ids[s]), now())
        s.start(sent[s][0])
    while sent:
        ready = select.select([s.socket() for s in sent], [], [], TIMEOUT)[0]
        if not ready:
            raise Failed(f"no answer in {TIMEOUT} s")
        for s in [s for s in sent if s.socket() in ready]:
            id_, t = sent.pop(s)
            s.finish(id_)
            latencies.append(now() - t)
            if (id_ := next(ids[s], None)) is not None:
                sent[s] = (id_, now())
                s.start(id_)
    return figures("conc", latencies, now() - start)


def bench_stdio(cmd, n=2000, window=20, k=100, cold_runs=5, warmup=20):
    """Cold start (median of cold_runs spawns), then on the last spawn: warm-up, sequential, in flight."""
    colds = []
    for i in range(cold_runs):
        session = Stdio(cmd)
        try:
            session.initialize()
            colds.append((session.ready - session.server.started) / 1e6)
            if i + 1 < cold_runs:
                continue
            sequential(session, warmup, 1)
            out = {"cold_ms": statistics.median(colds), **sequential(session, n, warmup + 1),
                   **in_flight(session, window, window * k, warmup + n + 1),
                   "rss_mb": rss_mb(session.server.proc.pid)}
        except (Failed, OSError, ValueError) as e:
            raise Failed(f"{e}; stderr: {session.server.stderr() or '(empty)'}") from None
        finally:
            session.close()
    return out


def listening(server, port):
    """Wait until the spawned server accepts connections on port."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.proc.poll() is not None or time.monotonic() > deadline:
                raise Failed(f"the server did not listen on port {port}") from None
            time.sleep(0.005)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_http(kind, cmd, n=1000, c=20, k=100, path=None, warmup=20):
    """kind "http" (Streamable HTTP, default path /mcp) or "sse" (legacy, /sse); cmd has {port}."""
    port = free_port()
    make = StreamableHttp if kind == "http" else LegacySse
    path = path or ("/mcp" if kind == "http" else "/sse")
    server = Spawned(cmd.format(port=port))
    try:
        listening(server, port)
        session = make(port, path)
        session.initialize()
        out = {"cold_ms": (session.ready - server.started) / 1e6}
        sequential(session, warmup, 1)
        out.update(sequential(session, n, warmup + 1))
        session.close()
        sessions = [make(port, path) for _ in range(c)]
        for s in sessions:
            s.initialize()
        out.update(at_once(sessions, k))
        for s in sessions:
            s.close()
        out["rss_mb"] = rss_mb(server.proc.pid)
        return out
    except (Failed, OSError, ValueError) as e:
        raise Failed(f"{e}; stderr: {server.stderr() or '(empty)'}") from None
    finally:
        server.stop()


def sdk_missing():
    """Why the official SDK cannot run here (None when .peers/bin/python imports it)."""
    python = os.path.join(ROOT, ".peers", "bin", "python")
    if os.path.exists(python) and subprocess.run([python, "-c", "import mcp.server.mcpserver"], cwd=ROOT,
                                                 capture_output=True).returncode == 0:
        return None
    return f".peers/bin/python cannot import mcp; to add it: {SDK_INSTALL}"


def side_by_side(prog, targets, rounds):
    """Interleaved rounds over {name: run() -> figures}: each target's medians, and whether all ran.
    Targets named sdk* are skipped, in one line, when the official SDK is not installed."""
    sdk = [name for name in targets if name.startswith("sdk")]
    if sdk and (why := sdk_missing()):
        print(f"{prog}: skipping {', '.join(sdk)}: {why}")
        targets = {name: run for name, run in targets.items() if name not in sdk}
    runs = {name: [] for name in targets}
    for _ in range(rounds):
        for name, run in targets.items():
            try:
                runs[name].append(run())
            except Failed as e:
                print(f"{prog}: {name}: no figures: {e}", file=sys.stderr)
    medians = {name: {k: statistics.median(r[k] for r in rows) for k in rows[0]}
               for name, rows in runs.items() if rows}
    return medians, all(runs.values())


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("kind", choices=["stdio", "http", "sse"])
    p.add_argument("cmd", help="the server's command line ({port}: where an HTTP server must listen)")
    p.add_argument("-n", type=int, help="sequential calls (stdio 2000, HTTP 1000)")
    p.add_argument("-w", type=int, default=20, help="stdio: calls in flight")
    p.add_argument("-c", type=int, default=20, help="HTTP: sessions at once")
    p.add_argument("-k", type=int, default=100, help="calls per session (HTTP) or per slot in flight (stdio)")
    p.add_argument("--path", help="HTTP: the endpoint (default /mcp, or /sse for sse)")
    a = p.parse_args()
    try:
        if a.kind == "stdio":
            result = bench_stdio(a.cmd, a.n or 2000, a.w, a.k)
        else:
            result = bench_http(a.kind, a.cmd, a.n or 1000, a.c, a.k, a.path)
    except Failed as e:
        sys.exit(f"harness.py: {a.cmd}: {e}")
    print(json.dumps(result))
