#!/usr/bin/env python3
"""Python SDK (mcp 2.x) ClientSession + streamable_http_client RESUMING our server's SSE streams
(2025-11-25 "Resumability and Redelivery", SEP-1699), through a TCP relay in this process that records
the HTTP requests on the wire and, when armed, cuts a connection after it relays notifications/progress.
usage: py_resume_checks.py reconnect URL RELAY_PORT TRACE_JSONL   (server: examples/everything.py)
       py_resume_checks.py cut URL RELAY_PORT TRACE_JSONL         (server: resume_server.py)
URL: the server's /mcp; the SDK talks to http://127.0.0.1:RELAY_PORT/mcp; TRACE_JSONL: the server's --trace=FILE.
reconnect: test_reconnection (the tool ends its POST stream with ctx.close_sse_stream()) returns its text, the
  SDK having resumed with GET + Last-Event-ID (seen by the relay, the SDK's own HTTP client and the server trace).
cut: a tools/call whose POST connection the relay aborts (RST both sides) right after the first
  notifications/progress: the SDK resumes with GET + Last-Event-ID and gets the result (answer replayed; answer
  still to come; the rest of three progress replayed, each once). progress_callback sees each progress once.
Prints PASS/FAIL/SKIP lines. INTEROP_RESUME_NEGATIVE=1 (harness validation): the SDK's reconnection is
disabled (monkeypatched), so the resume checks must FAIL."""
import asyncio, json, logging, os, re, socket, struct, sys, time, warnings
warnings.simplefilter("ignore")
from common import report
try:
    import anyio, httpx2
    from mcp import ClientSession
    import mcp.client.streamable_http as sh
    from mcp.client.streamable_http import streamable_http_client
    from py_checks import CHECK_TIMEOUT, fmt_exc, text_of
except ImportError as e:        # no .peers venv: nothing to test with
    print(f"SKIP [py resume] all checks -- the Python SDK is not importable here ({e}); see ../README.md", flush=True)
    sys.exit(0)

MARK = b"notifications/progress"
RECONNECT_TEXT = "Reconnection test completed successfully"


# ---------- the relay ---------------------------------------------------------------------------
class Conn:
    def __init__(self, n):
        self.n, self.requests, self.s2c, self.cut = n, [], bytearray(), None
        self.c2s = bytearray()

    def response(self, req):
        """The bytes the server sent on this connection after `req` and before the next request."""
        i = self.requests.index(req)
        end = self.requests[i + 1]["off"] if i + 1 < len(self.requests) else len(self.s2c)
        return bytes(self.s2c[req["off"]:end])


class Relay:
    """127.0.0.1:port -> upstream. Records every request (method, path, lower-cased headers, JSON body) per
    connection and what the server sent back. arm(): the next server->client bytes that contain
    notifications/progress are relayed up to the end of that SSE event, then both sides are aborted (RST)."""
    def __init__(self, upstream_port):
        self.up, self.conns, self.armed, self.cuts = upstream_port, [], False, []

    async def start(self, port):
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", port)

    async def stop(self):
        self.server.close()

    def arm(self):
        self.armed = True

    def gets_with_last_event_id(self):
        return [(c, r) for c in self.conns for r in c.requests if r["method"] == "GET" and "last-event-id" in r["headers"]]

    async def _handle(self, cr, cw):
        conn = Conn(len(self.conns) + 1)
        self.conns.append(conn)
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.up)
        except OSError:
            cw.transport.abort(); return
        done = asyncio.Event()
        t1 = asyncio.ensure_future(self._c2s(conn, cr, uw))
        t2 = asyncio.ensure_future(self._s2c(conn, ur, cw, uw, done))
        try:
            await asyncio.wait([t1, t2], return_when=asyncio.FIRST_COMPLETED)
            if not done.is_set():   # one side ended normally: let the other drain a moment
                await asyncio.wait([t1, t2], timeout=1.0)
        except asyncio.CancelledError:
            pass                    # the harness is exiting
        finally:
            for t in (t1, t2):
                t.cancel()
            for w in (cw, uw):
                w.transport.abort()

    async def _c2s(self, conn, cr, uw):
        buf = bytearray()
        while (data := await cr.read(65536)):
            conn.c2s += data
            buf += data
            while (end := buf.find(b"\r\n\r\n")) >= 0:
                head = bytes(buf[:end]).decode("latin-1").split("\r\n")
                headers = dict((k.strip().lower(), v.strip()) for k, _, v in (h.partition(":") for h in head[1:]))
                size = int(headers.get("content-length", "0") or 0)
                if len(buf) < end + 4 + size:
                    break
                body = bytes(buf[end + 4:end + 4 + size])
                del buf[:end + 4 + size]
                try:
                    msg = json.loads(body) if body else None
                except ValueError:
                    msg = None
                method, path = (head[0].split(" ") + ["", ""])[:2]
                conn.requests.append({"method": method, "path": path, "headers": headers, "msg": msg,
                                      "t": time.time(), "off": len(conn.s2c)})
            if uw.is_closing():
                return
            uw.write(data)
            await uw.drain()
        uw.write_eof() if uw.can_write_eof() else None

    async def _s2c(self, conn, ur, cw, uw, done):
        tail = b""
        while (data := await ur.read(65536)):
            window = tail + data
            if self.armed and MARK in window:
                self.armed = False
                end = window.find(b"\n\n", window.find(MARK))
                keep = len(data) if end < 0 else max(0, end + 2 - len(tail))
                conn.s2c += data[:keep]
                cw.write(data[:keep])
                cw.transport.set_write_buffer_limits(0)
                await cw.drain()                 # handed to the kernel ...
                await asyncio.sleep(0.1)         # ... and read by the client, before the RST
                for w in (cw, uw):
                    sock = w.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    w.transport.abort()
                conn.cut = {"t": time.time(), "relayed": len(conn.s2c), "dropped": len(data) - keep}
                self.cuts.append(conn)
                done.set()
                return
            tail = window[-64:]
            conn.s2c += data
            if cw.is_closing():
                return
            cw.write(data)
            await cw.drain()
        cw.write_eof() if cw.can_write_eof() else None


# ---------- the SDK side: its HTTP client's view, and its log -----------------------------------
class HttpTap:
    def __init__(self):
        self.seen = []      # (t, method, last-event-id or None, status, content-type)

    async def on_response(self, resp):
        self.seen.append((time.time(), resp.request.method, resp.request.headers.get("last-event-id"),
                          resp.status_code, resp.headers.get("content-type", "").split(";")[0]))

    def client(self):
        return httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), event_hooks={"response": [self.on_response]})


class SdkLog(logging.Handler):
    """What mcp.client.streamable_http logs (INFO: "SSE stream disconnected, reconnecting...",
    "Reconnected to SSE stream"): which code path the SDK took."""
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        if record.levelno >= logging.INFO:
            self.lines.append((time.time(), record.getMessage()))

    def install(self):
        lg = logging.getLogger("mcp.client.streamable_http")
        lg.setLevel(logging.DEBUG)
        lg.addHandler(self)
        lg.propagate = False

    def since(self, t0):
        return [m for t, m in self.lines if t >= t0]


def trace_records(path):
    out = []
    try:
        for line in open(path, encoding="utf-8"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    except FileNotFoundError:
        pass
    return out


def resume_notes(path, start):
    """From the server trace (records after index `start`): the GETs with last-event-id, the notes of
    resumed and parted streams, and the index of each."""
    recs = trace_records(path)[start:]
    gets = [(i, r["headers"]["last-event-id"]) for i, r in enumerate(recs)
            if r.get("head") == "GET /mcp" and "last-event-id" in (r.get("headers") or {})]
    notes = [(i, r["head"]) for i, r in enumerate(recs) if r.get("channel") == "sse" and r["head"].startswith("(")]
    return recs, gets, notes


def answer_index(recs, req_id):
    """Index of the trace record carrying the result of request `req_id` (an SSE event or a JSON body)."""
    return next((i for i, r in enumerate(recs) if r.get("dir", "").startswith("S") and
                 (r.get("message") or {}).get("id") == req_id and "result" in (r.get("message") or {})), None)


class Run:
    def __init__(self, C, relay, tap, log, trace):
        self.C, self.relay, self.tap, self.log, self.trace = C, relay, tap, log, trace

    async def one(self, name, fn):
        try:
            with anyio.fail_after(CHECK_TIMEOUT):
                detail = await fn()
            report(self.C, name, True, detail or "")
            return True
        except AssertionError as e:
            report(self.C, name, False, f"assertion: {e}")
        except TimeoutError:
            report(self.C, name, False, f"timed out after {CHECK_TIMEOUT}s")
        except Exception as e:
            report(self.C, name, False, fmt_exc(e))
        return False

    def tool_post(self, name):
        """(connection, request) of the last POST tools/call `name` on the wire."""
        return [(c, q) for c in self.relay.conns for q in c.requests if q["method"] == "POST" and
                isinstance(q["msg"], dict) and (q["msg"].get("params") or {}).get("name") == name][-1]

    def resumed(self, n_before, text):
        """The GETs with Last-Event-ID since `n_before`; assert one carried `text` back."""
        gets = self.relay.gets_with_last_event_id()[n_before:]
        assert gets, "no GET with Last-Event-ID went over the wire"
        carried = [(c, q) for c, q in gets if text.encode() in c.response(q)]
        assert carried, f"GETs with Last-Event-ID {leids(gets)}: none carried {text!r}"
        return gets, carried[0]


def leids(gets):
    return [q["headers"]["last-event-id"] for _, q in gets]


def negative_control():
    """Harness validation: an SDK that does not resume a stream that ended without its response."""
    async def no_reconnect(self, ctx, last_event_id, retry_interval_ms=None, attempt=0):
        await self._resolve_abandoned_request(ctx.read_stream_writer, ctx.session_message.message.id,
                                              "reconnection disabled by INTEROP_RESUME_NEGATIVE")
    sh.StreamableHTTPTransport._handle_reconnection = no_reconnect
    print("(INTEROP_RESUME_NEGATIVE=1: the SDK's _handle_reconnection is disabled: resume checks must FAIL)", flush=True)


# ---------- the checks --------------------------------------------------------------------------------
async def connect(C, url, relay_port, trace, body):
    port = int(url.split(":")[2].split("/")[0])
    relay, tap, log = Relay(port), HttpTap(), SdkLog()
    log.install()
    await relay.start(relay_port)
    r = Run(C, relay, tap, log, trace)
    try:
        async with tap.client() as hc, \
                streamable_http_client(f"http://127.0.0.1:{relay_port}/mcp", http_client=hc) as (rd, wr), \
                ClientSession(rd, wr) as s:
            try:
                with anyio.fail_after(CHECK_TIMEOUT):
                    init = await s.initialize()
                ok = init.protocol_version == "2025-11-25"
                report(C, "initialize (2025-11-25: resumable streams, priming events)", ok,
                       f"proto={init.protocol_version} server={init.server_info.name}")
                if not ok:
                    return
            except Exception as e:
                report(C, "initialize", False, fmt_exc(e)); return
            await body(r, s)
    except Exception as e:
        report(C, "session teardown", False, fmt_exc(e))
    finally:
        await relay.stop()


async def v_reconnect(url, relay_port, trace):
    C = "py ClientSession+streamable_http_client (resume)"

    async def body(r, s):
        async def reconnection():
            n0, t0 = len(r.relay.gets_with_last_event_id()), time.time()
            res = await s.call_tool("test_reconnection", {})
            dt = time.time() - t0
            assert not res.is_error and text_of(res) == RECONNECT_TEXT, f"result {text_of(res)!r}"
            gets, (conn, get) = r.resumed(n0, RECONNECT_TEXT)
            post, preq = r.tool_post("test_reconnection")
            req_id, sent = preq["msg"]["id"], post.response(preq)
            last = get["headers"]["last-event-id"]
            primed = re.findall(rb"id: (\d+-\d+)\nretry: (\d+)", sent)
            assert primed and primed[-1][0].decode() == last, f"POST stream priming ids {primed}, GET Last-Event-ID {last}"
            assert RECONNECT_TEXT.encode() not in sent, "the answer came on the POST stream itself"
            assert len(gets) == 1, f"{len(gets)} GETs with Last-Event-ID: {leids(gets)}"
            wait = get["t"] - preq["t"]
            sdk = [x for x in r.tap.seen if x[0] >= t0 and x[2]]
            assert sdk and sdk[-1][3] == 200 and sdk[-1][4] == "text/event-stream", f"SDK saw {sdk}"
            return (f"{text_of(res)!r} in {dt:.2f}s; POST #{req_id} stream primed id {last} retry {primed[-1][1].decode()} "
                    f"ms, ended without the answer; GET Last-Event-ID: {last} {wait:.2f}s after the POST -> "
                    f"{sdk[-1][3]} {sdk[-1][4]} carrying the answer; SDK log {r.log.since(t0)}")

        async def server_view():
            recs, gets, notes = resume_notes(trace, 0)
            assert gets, "the server trace shows no GET /mcp with last-event-id"
            req = max((x for x in recs if x.get("method") == "tools/call" and x.get("name") == "test_reconnection"),
                      key=lambda x: x["t"])
            parted = [(i, h) for i, h in notes if "resumes it with GET" in h]
            resumed = [(i, h) for i, h in notes if h.startswith("(the stream resumes after")]
            ans = answer_index(recs, req["id"])
            assert parted and resumed and ans is not None, f"notes {notes}, answer at {ans}"
            assert parted[-1][0] < gets[-1][0] < resumed[-1][0] < ans, \
                f"order: parted {parted[-1][0]}, GET {gets[-1][0]}, resumed {resumed[-1][0]}, answer {ans}"
            return (f"trace: {parted[-1][1]} -> GET /mcp last-event-id {gets[-1][1]} -> {resumed[-1][1]} -> "
                    f"answer to #{req['id']} ({recs[ans]['head']}) on the resumed stream")

        async def usable():
            res = await s.call_tool("echo", {"text": "after resume"})
            assert text_of(res) == "after resume", text_of(res)
            return f"{text_of(res)!r}"

        await r.one("test_reconnection: server ends the POST stream, SDK resumes (GET + Last-Event-ID), gets the text",
                    reconnection)
        await r.one("server trace: stream parted, GET with last-event-id, answer on the resumed stream", server_view)
        await r.one("session usable after the resume (echo)", usable)

    await connect(C, url, relay_port, trace, body)


async def v_cut(url, relay_port, trace):
    C = "py ClientSession+streamable_http_client (cut stream)"

    async def body(r, s):
        async def cut_call(steps, gap, wait, expect_replayed):
            n0, start, t0 = len(r.relay.gets_with_last_event_id()), len(trace_records(trace)), time.time()
            cuts0, got = len(r.relay.cuts), []
            async def on_progress(progress, total, message):
                got.append(progress)
            r.relay.arm()
            res = await s.call_tool("slow_progress", {"steps": steps, "gap": gap, "wait": wait},
                                    progress_callback=on_progress)
            dt = time.time() - t0
            r.relay.armed = False
            expect = f"done: {steps} progress, waited {wait} s"
            assert len(r.relay.cuts) == cuts0 + 1, "the relay cut nothing (no notifications/progress relayed?)"
            cut = r.relay.cuts[-1]
            post, preq = r.tool_post("slow_progress")
            assert post is cut, f"the relay cut connection #{cut.n}, the POST went on #{post.n}"
            sent = post.response(preq)
            assert not res.is_error and text_of(res) == expect, \
                f"result {text_of(res)!r} (isError={res.is_error}); SDK log {r.log.since(t0)}"
            req_id = preq["msg"]["id"]
            gets, (conn, get) = r.resumed(n0, expect)
            last = get["headers"]["last-event-id"]
            ids = re.findall(rb"id: (\d+-\d+)\n", sent)
            assert ids and ids[-1].decode() == last and sent.count(MARK) == 1, \
                f"cut stream ids {ids} ({sent.count(MARK)} progress), GET Last-Event-ID {last}"
            assert expect.encode() not in sent, "the answer got through before the cut"
            assert len(gets) == 1, f"{len(gets)} GETs with Last-Event-ID: {leids(gets)}"
            await anyio.sleep(0.1)      # progress callbacks are spawned by the SDK: let them run
            assert sorted(got) == [float(i) for i in range(1, steps + 1)], f"progress_callback saw {got}"
            recs, tgets, notes = resume_notes(trace, start)
            resumed = [h for i, h in notes if h.startswith("(the stream resumes after")]
            m = re.match(r"\(the stream resumes after (\S+); events sent again: (\d+)\)", resumed[-1] if resumed else "")
            assert m and m.group(1) == last, f"server notes {notes}"
            assert int(m.group(2)) == expect_replayed, \
                f"server replayed {m.group(2)} events, expected {expect_replayed}: {resumed[-1]}"
            wait_get = get["t"] - cut.cut["t"]
            return (f"{text_of(res)!r} in {dt:.2f}s; relay cut POST #{req_id}'s connection (RST both sides) after "
                    f"{len(sent)} bytes of its answer, last id {last}; GET Last-Event-ID: {last} {wait_get:.2f}s later "
                    f"carried the answer; server: {resumed[-1]}; progress_callback saw {got}; "
                    f"SDK log {r.log.since(t0)}")

        async def usable():
            res = await s.call_tool("echo", {"text": "after cuts"})
            assert text_of(res) == "after cuts", text_of(res)
            return f"{text_of(res)!r}; {len(r.relay.cuts)} cuts, {len(r.relay.gets_with_last_event_id())} GETs with Last-Event-ID in all"

        await r.one("POST cut after its progress, answer sent before the resume: SDK resumes, answer replayed",
                    lambda: cut_call(1, 0.05, 0.5, 1))
        await r.one("POST cut after its progress, call still running at the resume: answer comes live on the GET",
                    lambda: cut_call(1, 0.05, 2.5, 0))
        await r.one("POST cut after the 1st of 3 progress (50 ms apart): the other two and the answer replayed, each once",
                    lambda: cut_call(3, 0.05, 0.3, 3))
        await r.one("session usable after the cuts (echo)", usable)

    await connect(C, url, relay_port, trace, body)


if __name__ == "__main__":
    if os.environ.get("INTEROP_RESUME_NEGATIVE"):
        negative_control()
    kind, url, relay_port, trace = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    anyio.run({"reconnect": v_reconnect, "cut": v_cut}[kind], url, relay_port, trace)
