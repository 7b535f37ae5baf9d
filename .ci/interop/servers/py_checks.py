#!/usr/bin/env python3
"""Python SDK (mcp 2.x) interop checks against mcp_min.py.
usage: py_checks.py cs-stdio | client-stdio | cs-sse URL | cs-http URL | client-http URL | two-sessions URL
Prints PASS/FAIL lines."""
import json, os, sys, time, uuid, warnings
warnings.simplefilter("ignore")
import anyio, httpx2
import mcp
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.sse import sse_client
import mcp.client.streamable_http as sh
from mcp.client.streamable_http import streamable_http_client
from common import report, watch_cmd, check_stdio_exit, raw_post, LOGDIR, read_watch

CHECK_TIMEOUT = 20

def fmt_exc(e):
    if isinstance(e, BaseExceptionGroup):
        return " | ".join(fmt_exc(x) for x in e.exceptions)
    s = f"{type(e).__module__}.{type(e).__name__}: {e}"
    err = getattr(e, "error", None)
    if err is not None:
        s += f" [code={getattr(err, 'code', None)} data={getattr(err, 'data', None)}]"
    return s

def text_of(res):
    parts = [getattr(c, "text", "") for c in (res.content or [])]
    if getattr(res, "structured_content", None) is not None:
        parts.append(json.dumps(res.structured_content))
    return "\n".join(parts)

class Battery:
    def __init__(self, client, s):
        self.client, self.s = client, s
        self.prefix = "u" + uuid.uuid4().hex[:6]

    async def one(self, name, fn):
        try:
            with anyio.fail_after(CHECK_TIMEOUT):
                detail = await fn()
            report(self.client, name, True, detail or "")
            return True
        except AssertionError as e:
            report(self.client, name, False, f"assertion: {e}")
        except TimeoutError:
            report(self.client, name, False, f"timed out after {CHECK_TIMEOUT}s")
        except Exception as e:
            report(self.client, name, False, fmt_exc(e))
        return False

    async def usable(self):
        r = await self.s.call_tool("getUsers", {})
        assert not r.is_error and "John" in text_of(r), f"getUsers after error: {text_of(r)!r}"

    async def list_tools(self):
        r = await self.s.list_tools()
        names = sorted(t.name for t in r.tools)
        assert {"getUsers", "addUser", "getUser", "deleteUser"} <= set(names), names
        return ",".join(names)

    async def get_users(self):
        r = await self.s.call_tool("getUsers", {})
        t = text_of(r)
        assert not r.is_error, t
        assert "John" in t and "jane@example.com" in t, t
        return None

    async def add_user(self):
        n = self.prefix + "add"
        r = await self.s.call_tool("addUser", {"name": n, "email": f"{n}@example.com"})
        assert not r.is_error, text_of(r)
        r2 = await self.s.call_tool("getUsers", {})
        assert n in text_of(r2), f"{n} not in {text_of(r2)!r}"

    async def unknown_tool(self):
        how = None
        try:
            r = await self.s.call_tool("noSuchTool", {})
            assert r.is_error, f"no error: {text_of(r)!r}"
            how = f"isError result: {text_of(r)[:80]!r}"
        except (AssertionError, TimeoutError):
            raise
        except Exception as e:
            how = f"raised {fmt_exc(e)[:120]}"
        await self.usable()
        return how + "; still usable"

    async def missing_arg(self):
        r = await self.s.call_tool("getUser", {})
        assert r.is_error, f"expected isError result, got {text_of(r)!r}"
        await self.usable()
        return f"{text_of(r)[:80]!r}; still usable"

    async def ping(self):
        await self.s.send_ping()

    async def ping_gone(self):
        # 2026-07-28 removed ping: a modern server answers it -32601 (the SDK sends it anyway).
        try:
            await self.s.send_ping()
        except Exception as e:
            assert "-32601" in fmt_exc(e) or "Method not found" in fmt_exc(e), fmt_exc(e)
            return "-32601, as 2026-07-28 says"
        raise AssertionError("ping answered in 2026-07-28")

    async def concurrent(self):
        names = [f"{self.prefix}c{i}" for i in range(20)]
        out = {}
        async def call(n):
            out[n] = await self.s.call_tool("addUser", {"name": n, "email": f"{n}@example.com"})
        async with anyio.create_task_group() as tg:
            for n in names:
                tg.start_soon(call, n)
        bad = [(n, text_of(out.get(n)) if n in out else None) for n in names
               if n not in out or out[n].is_error or f"Added {n} <{n}@example.com>" not in text_of(out[n])]
        assert not bad, f"{len(bad)} wrong answers, e.g. {bad[:3]}"
        return "20/20 own answers"

    async def run(self):
        await self.one("tools/list", self.list_tools)
        await self.one("call getUsers", self.get_users)
        await self.one("addUser then getUsers", self.add_user)
        await self.one("unknown tool -> error, usable", self.unknown_tool)
        await self.one("getUser missing arg -> isError, usable", self.missing_arg)
        if getattr(self.s, "protocol_version", None) == "2026-07-28":   # mcp.Client, auto mode
            await self.one("ping (gone in 2026-07-28)", self.ping_gone)
        else:
            await self.one("ping", self.ping)
        await self.one("20 concurrent tools/call", self.concurrent)

# ---------- capture HTTP traffic (session id, DELETE status) -----------------
class Tap:
    def __init__(self):
        self.session_ids, self.deletes, self.endpoint = [], [], None
    async def on_response(self, resp):
        sid = resp.headers.get("mcp-session-id")
        if sid and sid not in self.session_ids:
            self.session_ids.append(sid)
        if resp.request.method == "DELETE":
            self.deletes.append(resp.status_code)
    def client(self, **kw):
        return httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), event_hooks={"response": [self.on_response]}, **kw)

def patch_default_http_client(tap):
    orig = sh.create_mcp_http_client
    def factory(*a, **kw):
        c = orig(*a, **kw)
        c.event_hooks = {"request": [], "response": [tap.on_response]}
        return c
    sh.create_mcp_http_client = factory

def check_http_close(client, url, tap, era=None):
    if era == "2026-07-28":     # the auto client chose the stateless era: no session to close
        report(client, "no session in 2026-07-28 (none minted)", not tap.session_ids,
               f"session ids seen={tap.session_ids}")
        return
    if os.environ.get("INTEROP_STATELESS"):
        print(f"SKIP [{client}] clean close (stateless: no session; DELETE statuses seen={tap.deletes})", flush=True)
        return
    if not tap.session_ids:
        report(client, "clean close (DELETE, then 404)", False, "server sent no mcp-session-id")
        return
    sid = tap.session_ids[-1]
    st, _, body = raw_post(url, {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}, {"mcp-session-id": sid})
    ok = tap.deletes and tap.deletes[-1] in (200, 202, 204) and st == 404
    report(client, "clean close (DELETE, then 404)", bool(ok),
           f"DELETE status={tap.deletes}; later POST with old session -> {st} {body[:100]!r}")

# ---------- variants -----------------------------------------------------------
async def cs_stdio():
    C = "py ClientSession+stdio_client"
    log = os.path.join(LOGDIR, "py-cs-stdio.wire.log"); open(log, "w").close()
    cmd, args = watch_cmd(log)
    try:
        async with stdio_client(StdioServerParameters(command=cmd, args=args)) as (r, w), ClientSession(r, w) as s:
            t0 = time.time()
            try:
                with anyio.fail_after(CHECK_TIMEOUT):
                    init = await s.initialize()
                report(C, "initialize", True, f"{time.time()-t0:.2f}s proto={init.protocol_version} server={init.server_info.name}")
            except Exception as e:
                report(C, "initialize", False, fmt_exc(e)); return
            await Battery(C, s).run()
    except Exception as e:
        report(C, "session teardown", False, fmt_exc(e))
    ok, d = check_stdio_exit(log)
    report(C, "clean close (server exits <=5s after stdin EOF)", ok, d)

async def client_stdio():
    C = "py mcp.Client(stdio, auto)"
    log = os.path.join(LOGDIR, "py-client-stdio.wire.log"); open(log, "w").close()
    cmd, args = watch_cmd(log)
    t0 = time.time()
    try:
        async with Client(StdioServerParameters(command=cmd, args=args)) as c:
            dt = time.time() - t0
            report(C, "initialize (auto: discover probe then fallback)", True, f"proto={c.protocol_version} server={c.server_info and c.server_info.name}")
            report(C, "connect time < 3s", dt < 3, f"{dt:.2f}s")
            await Battery(C, c).run()
    except Exception as e:
        report(C, "connect/session", False, f"after {time.time()-t0:.2f}s: {fmt_exc(e)}")
    ok, d = check_stdio_exit(log)
    report(C, "clean close (server exits <=5s after stdin EOF)", ok, d)

async def cs_sse(url):
    C = "py ClientSession+sse_client"
    sids = []
    try:
        async with sse_client(url, on_session_created=sids.append) as (r, w), ClientSession(r, w) as s:
            t0 = time.time()
            try:
                with anyio.fail_after(CHECK_TIMEOUT):
                    init = await s.initialize()
                report(C, "initialize", True, f"{time.time()-t0:.2f}s proto={init.protocol_version}")
            except Exception as e:
                report(C, "initialize", False, fmt_exc(e)); return
            await Battery(C, s).run()
    except Exception as e:
        report(C, "session teardown", False, fmt_exc(e))
    if not sids:
        report(C, "clean close (stream closed -> session gone, 404)", False, "no session id seen"); return
    base = url.rsplit("/sse", 1)[0]
    st = None
    for _ in range(40):
        st, _, body = raw_post(f"{base}/messages?sessionId={sids[0]}", {"jsonrpc": "2.0", "id": 9, "method": "ping"})
        if st == 404: break
        await anyio.sleep(0.1)
    report(C, "clean close (stream closed -> session gone, 404)", st == 404, f"POST to old endpoint -> {st} {body[:100]!r}")

async def cs_http(url):
    C = "py ClientSession+streamable_http_client"
    tap = Tap()
    try:
        async with tap.client() as hc, streamable_http_client(url, http_client=hc) as (r, w), ClientSession(r, w) as s:
            t0 = time.time()
            try:
                with anyio.fail_after(CHECK_TIMEOUT):
                    init = await s.initialize()
                report(C, "initialize", True, f"{time.time()-t0:.2f}s proto={init.protocol_version} sid={tap.session_ids}")
            except Exception as e:
                report(C, "initialize", False, fmt_exc(e)); return
            await Battery(C, s).run()
    except Exception as e:
        report(C, "session teardown", False, fmt_exc(e))
    check_http_close(C, url, tap)

async def client_http(url):
    C = "py mcp.Client(url, auto)"
    tap = Tap(); patch_default_http_client(tap)
    t0 = time.time()
    era = None
    try:
        async with Client(url) as c:
            era = c.protocol_version
            dt = time.time() - t0
            report(C, "initialize (auto: discover probe then fallback)", True, f"proto={c.protocol_version} server={c.server_info and c.server_info.name}")
            report(C, "connect time < 3s", dt < 3, f"{dt:.2f}s")
            await Battery(C, c).run()
    except Exception as e:
        report(C, "connect/session", False, f"after {time.time()-t0:.2f}s: {fmt_exc(e)}")
    check_http_close(C, url, tap, era)

async def two_sessions(url):
    C = "py two /mcp sessions"
    ta, tb = Tap(), Tap()
    try:
        async with ta.client() as ha, tb.client() as hb, \
                streamable_http_client(url, http_client=ha) as (ra, wa), ClientSession(ra, wa) as a:
            async with streamable_http_client(url, http_client=hb) as (rb, wb), ClientSession(rb, wb) as b:
                with anyio.fail_after(CHECK_TIMEOUT):
                    await a.initialize(); await b.initialize()
                sa, sb = ta.session_ids[:1], tb.session_ids[:1]
                report(C, "distinct session ids", bool(sa and sb and sa != sb), f"A={sa} B={sb}")
                # interleaved concurrent calls with overlapping JSON-RPC ids
                out = {}
                async def call(sess, tag, i):
                    n = f"s{tag}{uuid.uuid4().hex[:4]}{i}"
                    r = await sess.call_tool("addUser", {"name": n, "email": f"{n}@example.com"})
                    out[(tag, i)] = (n, text_of(r))
                with anyio.fail_after(CHECK_TIMEOUT):
                    async with anyio.create_task_group() as tg:
                        for i in range(10):
                            tg.start_soon(call, a, "A", i); tg.start_soon(call, b, "B", i)
                bad = [(k, v) for k, v in out.items() if f"Added {v[0]} " not in v[1]]
                report(C, "interleaved calls (same JSON-RPC ids) answered on own session", len(out) == 20 and not bad,
                       f"{len(out)} answers, bad={bad[:3]}")
            # B closed (DELETE sent); A must still work and B's id must be gone
            try:
                with anyio.fail_after(CHECK_TIMEOUT):
                    r = await a.call_tool("getUsers", {})
                okA = not r.is_error and "John" in text_of(r)
                st, _, body = raw_post(url, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, {"mcp-session-id": sb[0]}) if sb else (None, None, "")
                report(C, "closing B leaves A usable, B gone", okA and st == 404,
                       f"A getUsers ok={okA}; B DELETE={tb.deletes}; POST with B's id -> {st} {body[:80]!r}")
            except Exception as e:
                report(C, "closing B leaves A usable, B gone", False, fmt_exc(e))
    except Exception as e:
        report(C, "session", False, fmt_exc(e))

if __name__ == "__main__":
    kind, rest = sys.argv[1], sys.argv[2:]
    fn = {"cs-stdio": cs_stdio, "client-stdio": client_stdio, "cs-sse": cs_sse, "cs-http": cs_http,
          "client-http": client_http, "two-sessions": two_sessions}[kind]
    anyio.run(fn, *rest)
