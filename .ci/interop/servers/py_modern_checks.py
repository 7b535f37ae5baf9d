#!/usr/bin/env python3
"""Python SDK (mcp 2.x) client PINNED to 2026-07-28 (`mcp.Client(..., mode="2026-07-28")`: no initialize,
no discover probe; every request carries its own _meta) against examples/everything.py (a mcp_min Server).
usage: py_modern_checks.py stdio | http URL
Checks: server/discover (serverInfo "everything"), tools/list, echo, MRTR elicitation / sampling / two rounds
(the SDK's elicitation_callback / sampling_callback answer the input_required results), subscriptions/listen
hearing notifications/tools/list_changed (trigger from the same client; over HTTP also from another client),
x-mcp-header (Mcp-Param-*) if the server has test_custom_header, no initialize / Mcp-Session-Id on the wire,
clean close. Prints PASS/FAIL/SKIP lines."""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
import mcp.client.streamable_http as sh
from common import report, check_stdio_exit, raw_post, LOGDIR, ROOT, HERE
from py_checks import Battery, CHECK_TIMEOUT, fmt_exc, text_of

MODE = "2026-07-28"
APP = os.environ.get("INTEROP_MODERN_APP", os.path.join(ROOT, "examples", "everything.py"))   # stdio server script
LISTEN_WAIT = 5.0
ANSWERS = {"name": "Alice", "color": "blue"}


class Asker:
    """The SDK client's callbacks: they answer the input requests of input_required results."""
    def __init__(self):
        self.elicited, self.sampled = [], []

    async def elicitation(self, ctx, params):
        self.elicited.append(params.message)
        props = (params.requested_schema or {}).get("properties", {})
        return types.ElicitResult(action="accept", content={k: ANSWERS.get(k, "x") for k in props})

    async def sampling(self, ctx, params):
        self.sampled.append(params)
        return types.CreateMessageResult(role="assistant", model="fake-model", stop_reason="endTurn",
                                         content=types.TextContent(type="text", text="SAMPLED-BY-SDK"))


# ---------- what went over the wire -------------------------------------------------------
class HttpTap:
    """httpx2 hooks on the SDK's own HTTP client: request bodies/headers, response session ids, DELETEs."""
    def __init__(self):
        self.posts, self.session_ids, self.deletes = [], [], []   # posts: (headers, body dict)

    async def on_request(self, req):
        if req.method == "DELETE":
            self.deletes.append(str(req.url))
        if req.method == "POST":
            try:
                self.posts.append((dict(req.headers), json.loads(req.content)))
            except Exception:
                pass

    async def on_response(self, resp):
        sid = resp.headers.get("mcp-session-id")
        if sid and sid not in self.session_ids:
            self.session_ids.append(sid)

    def install(self):
        orig = sh.create_mcp_http_client
        def factory(*a, **kw):
            c = orig(*a, **kw)
            c.event_hooks = {"request": [self.on_request], "response": [self.on_response]}
            return c
        sh.create_mcp_http_client = factory

    def sent(self):
        return [b for _, b in self.posts]


def stdio_sent(log):
    """Client->server messages from a stdio_watch.py log (C> lines)."""
    try:
        return [m for d, m in stdio_lines(log) if d == "C>"]
    except FileNotFoundError:
        return []


def rounds(sent, tool):
    """The tools/call requests for `tool` (one per MRTR round) and whether each carried inputResponses."""
    calls = [m for m in sent if m.get("method") == "tools/call" and (m.get("params") or {}).get("name") == tool]
    return len(calls), [sorted((m["params"].get("inputResponses") or {}).keys()) for m in calls], \
        ["requestState" in m["params"] for m in calls]


# ---------- the battery ----------------------------------------------------------------------
async def battery(C, c, asker, b, sent, other=None):
    """c: a connected pinned Client; sent(): client->server messages so far; other(): a second Client CM."""
    async def discover():
        raw = await c.session.send_discover(MODE)
        d = types.DiscoverResult.model_validate(raw)
        c.session.adopt(d)
        name = c.server_info and c.server_info.name
        assert name == "everything", f"serverInfo={c.server_info!r} (_meta={raw.get('_meta')})"
        assert MODE in d.supported_versions, d.supported_versions
        return f"serverInfo={name} supportedVersions={d.supported_versions} ttlMs={d.ttl_ms} cacheScope={d.cache_scope}"

    async def list_tools():
        r = await c.list_tools()
        names = {t.name for t in r.tools}
        need = {"echo", "test_input_required_result_elicitation", "test_input_required_result_sampling",
                "test_input_required_result_multi_round", "test_trigger_tool_change"}
        assert need <= names, f"missing {sorted(need - names)}"
        return f"{len(names)} tools"

    async def echo():
        r = await c.call_tool("echo", {"text": "hi"})
        assert not r.is_error and text_of(r) == "hi", text_of(r)
        return f"{text_of(r)!r}"

    async def elicit():
        n0 = len(asker.elicited)
        r = await c.call_tool("test_input_required_result_elicitation", {})
        asked = asker.elicited[n0:]
        n, resp, st = rounds(sent(), "test_input_required_result_elicitation")
        assert not r.is_error and text_of(r) == "Hello, Alice!", f"result {text_of(r)!r}"
        assert asked == ["What is your name?"], f"callback saw {asked}"
        assert n == 2 and resp[1] == ["user_name"], f"{n} tools/call on the wire, inputResponses keys {resp}"
        return f"{text_of(r)!r}; {n} rounds, inputResponses {resp}, requestState echoed {st}"

    async def sample():
        n0 = len(asker.sampled)
        r = await c.call_tool("test_input_required_result_sampling", {})
        n, resp, st = rounds(sent(), "test_input_required_result_sampling")
        assert not r.is_error and "SAMPLED-BY-SDK" in text_of(r), f"result {text_of(r)!r}"
        assert len(asker.sampled) == n0 + 1, f"sampling callback called {len(asker.sampled) - n0} times"
        assert n == 2 and resp[1] == ["capital_question"], f"{n} tools/call on the wire, inputResponses keys {resp}"
        return f"{text_of(r)!r}; {n} rounds"

    async def multi():
        n0 = len(asker.elicited)
        r = await c.call_tool("test_input_required_result_multi_round", {})
        asked = asker.elicited[n0:]
        n, resp, st = rounds(sent(), "test_input_required_result_multi_round")
        assert not r.is_error and text_of(r) == "Alice likes blue", f"result {text_of(r)!r}; callback saw {asked}"
        assert [a.split(":")[0] for a in asked] == ["Step 1", "Step 2"], f"callback saw {asked}"
        assert n == 3, f"{n} tools/call on the wire, inputResponses keys {resp}"
        return f"{text_of(r)!r}; {n} rounds, inputResponses {resp}, requestState echoed {st}"

    async def listen_with(trigger_client, how):
        async with c.listen(tools_list_changed=True) as sub:
            assert sub.honored.tools_list_changed, f"ack honored {sub.honored}"
            t0 = time.time()
            r = await trigger_client.call_tool("test_trigger_tool_change", {})
            assert text_of(r) == "tools changed", text_of(r)
            try:
                with anyio.fail_after(LISTEN_WAIT):
                    ev = await sub.__anext__()
            except TimeoutError:
                raise AssertionError(f"no event within {LISTEN_WAIT}s after {how} called test_trigger_tool_change")
            dt = time.time() - t0
            assert type(ev).__name__ == "ToolsListChanged", ev
        r = await c.call_tool("echo", {"text": "after listen"})      # leaving the listen leaves c usable
        assert text_of(r) == "after listen", text_of(r)
        return f"ack {sub.subscription_id!r} honored toolsListChanged; {type(ev).__name__} {dt*1000:.0f} ms after the {how} called test_trigger_tool_change; usable after"

    async def listen_same():
        return await listen_with(c, "same client")

    async def listen_other():
        async with other() as c2:
            return await listen_with(c2, "other client")

    async def custom_header():
        tools = {t.name: t for t in (await c.list_tools()).tools}
        if "test_custom_header" not in tools:
            return "SKIP"
        out = []
        for region in ("eu-west", "Zürich"):
            r = await c.call_tool("test_custom_header", {"region": region})
            assert not r.is_error and text_of(r) == f"region {region}", text_of(r)
            hdr = [h.get("mcp-param-region") for h, m in getattr(sent, "posts", lambda: [])()
                   if (m.get("params") or {}).get("arguments", {}).get("region") == region]
            out.append(f"{region!r} -> {text_of(r)!r}" + (f" (Mcp-Param-Region: {hdr[-1]})" if hdr else ""))
        return "; ".join(out)

    await b.one("server/discover (serverInfo everything)", discover)
    await b.one("tools/list", list_tools)
    await b.one("call echo", echo)
    await b.one("MRTR elicitation (input_required -> elicitation_callback -> retry)", elicit)
    await b.one("MRTR sampling (input_required -> sampling_callback -> retry)", sample)
    await b.one("MRTR two rounds (multi_round)", multi)
    await b.one("subscriptions/listen hears tools/list_changed (same client)", listen_same)
    if other:       # HTTP: one server process serves every client
        await b.one("subscriptions/listen hears tools/list_changed (another client)", listen_other)
        await b.one("x-mcp-header tool (Mcp-Param-Region, ASCII + non-ASCII)", custom_header)
    else:           # stdio: the listen was ended by notifications/cancelled
        await b.one("listen cancelled: server sends nothing more for it", lambda: after_cancel(c, sent))


async def after_cancel(c, sent):
    """stdio: the SDK ends a listen with notifications/cancelled (sent lazily, after the context exits).
    After it the server must send nothing for that subscription: no response, no more list_changed."""
    log = sent.log
    for _ in range(40):
        cancel = [i for i, (d, m) in enumerate(stdio_lines(log)) if d == "C>" and m.get("method") == "notifications/cancelled"]
        if cancel:
            break
        await anyio.sleep(0.05)
    assert cancel, "the SDK sent no notifications/cancelled for its listen within 2 s"
    lines = stdio_lines(log)
    sub = lines[cancel[-1]][1]["params"]["requestId"]
    r = await c.call_tool("test_trigger_tool_change", {})
    assert text_of(r) == "tools changed", text_of(r)
    await anyio.sleep(0.5)
    later = [m for d, m in stdio_lines(log)[cancel[-1] + 1:] if d == "S<" and (
        m.get("id") == sub or ((m.get("params") or {}).get("_meta") or {}).get("io.modelcontextprotocol/subscriptionId") == sub)]
    assert not later, f"after the cancel the server still sent {later[:2]}"
    return f"C> notifications/cancelled {{requestId: {sub!r}}}; trigger again -> nothing for {sub!r} (no response, no notification)"


def stdio_lines(log):
    out = []
    for line in open(log):
        p = line.rstrip("\n").split(" ", 2)
        if len(p) == 3 and p[1] in ("C>", "S<"):
            try:
                out.append((p[1], json.loads(p[2])))
            except ValueError:
                pass
    return out


def wire_clean(C, sent):
    methods = [m.get("method") for m in sent]
    bad = [m for m in methods if m in ("initialize", "notifications/initialized", "ping")]
    no_meta = [m.get("method") for m in sent if "id" in m and
               ((m.get("params") or {}).get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion") != MODE]
    report(C, "no initialize/initialized/ping sent; every request has _meta protocolVersion 2026-07-28",
           not bad and not no_meta, f"{len(sent)} messages sent; handshake ones {bad}; requests without the _meta claim {no_meta}")


# ---------- variants ---------------------------------------------------------------------------
async def v_stdio():
    C = "py mcp.Client(stdio, 2026-07-28)"
    log = os.path.join(LOGDIR, "py-modern-stdio.wire.log"); open(log, "w").close()
    asker = Asker()
    params = StdioServerParameters(command=sys.executable,
                                   args=[os.path.join(HERE, "stdio_watch.py"), log, "--", "python3", APP])
    t0 = time.time()
    try:
        async with Client(params, mode=MODE, elicitation_callback=asker.elicitation,
                          sampling_callback=asker.sampling) as c:
            report(C, "connect (pinned: no handshake, no probe)", c.protocol_version == MODE,
                   f"{time.time()-t0:.2f}s proto={c.protocol_version}")
            sent = lambda: stdio_sent(log)
            sent.log = log
            await battery(C, c, asker, SkipAware(C, c), sent)
    except Exception as e:
        report(C, "connect/session", False, f"after {time.time()-t0:.2f}s: {fmt_exc(e)}")
    wire_clean(C, stdio_sent(log))
    ok, d = check_stdio_exit(log)
    report(C, "clean close (server exits <=5s after stdin EOF)", ok, d)


async def v_http(url):
    C = "py mcp.Client(url, 2026-07-28)"
    tap = HttpTap(); tap.install()
    asker = Asker()
    sent = lambda: tap.sent()
    sent.posts = lambda: tap.posts
    other = lambda: Client(url, mode=MODE)
    t0 = time.time()
    try:
        async with Client(url, mode=MODE, elicitation_callback=asker.elicitation,
                          sampling_callback=asker.sampling) as c:
            report(C, "connect (pinned: no handshake, no probe)", c.protocol_version == MODE,
                   f"{time.time()-t0:.2f}s proto={c.protocol_version}")
            await battery(C, c, asker, SkipAware(C, c), sent, other)
    except Exception as e:
        report(C, "connect/session", False, f"after {time.time()-t0:.2f}s: {fmt_exc(e)}")
    wire_clean(C, tap.sent())
    missing = [m.get("method") for h, m in tap.posts if "id" in m and
               (h.get("mcp-method") != m.get("method") or h.get("mcp-protocol-version") != MODE)]
    report(C, "every POST has Mcp-Method + MCP-Protocol-Version headers matching the body", not missing,
           f"{len(tap.posts)} POSTs; mismatched {missing}")
    report(C, "no Mcp-Session-Id minted (2026-07-28)", not tap.session_ids, f"session ids seen={tap.session_ids}")
    # clean close: nothing to DELETE; the server is still fine for the next client
    st, _, body = raw_post(url, {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODE, "io.modelcontextprotocol/clientCapabilities": {}}}},
        {"mcp-protocol-version": MODE, "mcp-method": "server/discover"})
    report(C, "clean close (no DELETE; server still answers a fresh discover)", not tap.deletes and st == 200,
           f"DELETEs sent={tap.deletes}; fresh server/discover -> {st} {body[:60]!r}")


class SkipAware(Battery):
    """Battery.one (PASS/FAIL, timeout), plus: a check returning "SKIP" prints a SKIP line."""
    async def one(self, name, fn):
        skipped = []
        async def wrapped():
            d = await fn()
            if d == "SKIP":
                skipped.append(name)
                raise _Skip()
            return d
        try:
            with anyio.fail_after(CHECK_TIMEOUT):
                detail = await wrapped()
            report(self.client, name, True, detail or "")
            return True
        except _Skip:
            print(f"SKIP [{self.client}] {name} -- the server has no test_custom_header tool", flush=True)
        except AssertionError as e:
            report(self.client, name, False, f"assertion: {e}")
        except TimeoutError:
            report(self.client, name, False, f"timed out after {CHECK_TIMEOUT}s")
        except Exception as e:
            report(self.client, name, False, fmt_exc(e))
        return False


class _Skip(Exception):
    pass


if __name__ == "__main__":
    kind, rest = sys.argv[1], sys.argv[2:]
    anyio.run({"stdio": v_stdio, "http": v_http}[kind], *rest)
