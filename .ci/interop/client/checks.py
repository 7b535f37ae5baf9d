#!/usr/bin/env python3
"""OUR client (mcp_min.Client) against OFFICIAL servers.

usage: checks.py GROUP [GROUP...]   groups: everything sdk eras cli robust   (default: all)
Prints `PASS|FAIL|SKIP name -- detail`; for a FAIL, the tail of the client's wire trace
(<repo>/.peers/logs/interop-client/<name>.jsonl, written by Client(trace=FILE)). Exit status 0 iff no FAIL.
Ports 18200-18299 (see PORTS). Every server started here is stopped here (by pid).
"""
import asyncio, json, os, shlex, socket, subprocess, sys, time, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))          # repo root (.ci/interop/client/../../..)
PEERS = os.environ.get("MCP_PEERS", os.path.join(ROOT, ".peers"))      # venv + node/ with the official servers
SHARED = os.environ.get("MCP_SHARED", os.path.join(ROOT, "..", "shared"))
MAIN = os.path.join(ROOT, "mcp_min.py")

sys.path.insert(0, ROOT)
import mcp_min                                   # noqa: E402
from mcp_min import Client, McpError             # noqa: E402

LOGS = os.path.join(ROOT, ".peers", "logs", "interop-client")
os.makedirs(LOGS, exist_ok=True)
PEERPY = os.path.join(PEERS, "bin", "python")
EVERY = os.path.join(PEERS, "node", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
SDKSRV = os.path.join(HERE, "sdk_full_server.py")
LOOPBACK = os.path.join(SHARED, "conformance", "loopback.cjs")
PORTS = {"ev-sse": 18201, "ev-http": 18202, "sdk-sse": 18211, "sdk-http": 18212,
         "kill-ev-http": 18221, "kill-ev-sse": 18222, "kill-sdk-http": 18223, "kill-sdk-sse": 18224,
         "era-sdk-http": 18231}

RESULTS = []
SKIPS = []


def skip(name, why):
    SKIPS.append(name)
    print(f"SKIP {name} -- {why}", flush=True)


def report(name, ok, detail="", trace=None):
    RESULTS.append((name, ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f" -- {detail}" if detail else ""), flush=True)
    if not ok and trace:
        print(wire_tail(trace), flush=True)


def wire_tail(path, n=14):
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        return "    (no trace file)"
    out = []
    for line in lines[-n:]:
        try:
            r = json.loads(line)
        except ValueError:
            out.append("    " + line[:300]); continue
        msg = r.get("message")
        s = f"    {r.get('t', 0):8.3f} {r.get('dir')} {r.get('channel')} {r.get('head', '')}"
        if r.get("headers"):
            s += " " + json.dumps(r["headers"])
        if msg is not None:
            s += " " + (json.dumps(msg) if not isinstance(msg, str) else msg)[:300]
        out.append(s)
    return f"    wire ({path}, last {len(out)} of {len(lines)} records):\n" + "\n".join(out)


def trace_records(path):
    recs = []
    try:
        for line in open(path):
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    except FileNotFoundError:
        pass
    return recs


def tpath(name):
    p = os.path.join(LOGS, name.replace("/", "_").replace(" ", "_") + ".jsonl")
    if os.path.exists(p):
        os.remove(p)
    return p


# -- servers -----------------------------------------------------------------------
class Proc:
    """A server we start; stopped by its pid only."""
    def __init__(self, argv, port=None, env=None, name="srv"):
        self.port, self.name = port, name
        self.log = os.path.join(LOGS, f"server-{name}.log")
        e = dict(os.environ, **(env or {}))
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(self.log, "w"),
                                  stderr=subprocess.STDOUT, env=e)
        if port:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    return
                except OSError:
                    if self.p.poll() is not None:
                        raise RuntimeError(f"{name} exited rc={self.p.returncode}; see {self.log}")
                    time.sleep(0.05)
            self.stop()
            raise RuntimeError(f"{name} did not listen on {port}")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(3)
            except subprocess.TimeoutExpired:
                self.kill()


def port_free(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # TIME_WAIT leftovers are fine
    try:
        s.bind(("127.0.0.1", port)); return True
    except OSError:
        return False
    finally:
        s.close()


def everything_http(mode, port, name):
    return Proc(["node", EVERY, mode], port,
                env={"PORT": str(port), "NODE_OPTIONS": f'--require "{LOOPBACK}"'}, name=name)


def sdk_http(mode, port, name):
    return Proc([PEERPY, SDKSRV, mode, "--port", str(port)], port, name=name)


EV_STDIO = ["node", EVERY, "stdio"]
SDK_STDIO = [PEERPY, SDKSRV, "stdio"]


def text_of(result):
    return " ".join(c.get("text", "") for c in result.get("content", []) if isinstance(c, dict))


async def run_check(name, coro_fn, limit=30):
    """coro_fn(trace_path) -> detail string (raise/assert on failure)."""
    tp = tpath(name)
    try:
        detail = await asyncio.wait_for(coro_fn(tp), limit)
        report(name, True, detail or "", tp)
    except asyncio.TimeoutError:
        report(name, False, f"HUNG: no outcome within {limit}s (harness timeout)", tp)
    except AssertionError as e:
        report(name, False, f"assertion: {e}", tp)
    except McpError as e:
        report(name, False, f"McpError code={e.code} message={e.message!r} data={e.data!r}", tp)
    except Exception as e:
        report(name, False, f"{type(e).__name__}: {e} | {traceback.format_exc().splitlines()[-3].strip()}", tp)


def transport_name(c):
    return type(c._transport).__name__ if c._transport else None


# -- group 1: server-everything ----------------------------------------------------
def sampler(calls):
    def handle(params):
        calls.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "SAMPLED-BY-MCP_MIN"},
                "model": "fake-model", "stopReason": "endTurn"}
    return handle


async def everything_suite(label, target, transport="auto"):
    kw = dict(transport=transport, timeout=20)

    async def basics(tp):
        async with Client(target, trace=tp, **kw) as c:
            tools = await c.list_tools()
            names = [t["name"] for t in tools]
            assert "echo" in names, names
            r = await c.call_tool("echo", {"message": "hi there"})
            assert "hi there" in text_of(r) and not r.get("isError"), r
            return f"{len(tools)} tools via {transport_name(c)} (proto {c.protocol_version}); echo -> {text_of(r)!r}"
    await run_check(f"everything/{label}/tools+echo", basics)

    async def resources(tp):
        async with Client(target, trace=tp, **kw) as c:
            res = await c.list_resources()
            assert res, "no resources"
            r = await c.read_resource(res[0]["uri"])
            assert r["contents"] and r["contents"][0]["uri"] == res[0]["uri"], r
            tmpl = await c.list_resource_templates()
            r2 = await c.read_resource("demo://resource/dynamic/text/1")
            assert r2["contents"][0].get("text"), r2
            return (f"{len(res)} resources, read {res[0]['uri']} ({len(json.dumps(r))} B); "
                    f"{len(tmpl)} templates; dynamic/text/1 ok")
    await run_check(f"everything/{label}/resources", resources)

    async def prompts(tp):
        async with Client(target, trace=tp, **kw) as c:
            ps = [p["name"] for p in await c.list_prompts()]
            assert "args-prompt" in ps, ps
            r = await c.get_prompt("args-prompt", {"city": "Oslo", "state": "Viken"})
            t = r["messages"][0]["content"]["text"]
            assert "Oslo, Viken" in t, r
            r2 = await c.get_prompt("simple-prompt")
            assert r2["messages"], r2
            return f"prompts {ps}; args-prompt -> {t!r}"
    await run_check(f"everything/{label}/prompts", prompts)

    async def logging_(tp):
        logs = []
        got = asyncio.Event()

        def on_log(p):
            logs.append(p); got.set()
        async with Client(target, trace=tp, on_log=on_log, **kw) as c:
            await c.set_log_level("debug")
            r = await c.call_tool("toggle-simulated-logging")
            assert not r.get("isError"), r
            try:
                await asyncio.wait_for(got.wait(), 8)
            finally:
                await c.call_tool("toggle-simulated-logging")   # stop it
            assert logs, "no notifications/message arrived within 8 s"
            return f"{len(logs)} log notification(s), first: {logs[0]}"
    await run_check(f"everything/{label}/logging", logging_)

    async def progress(tp):
        prog = []
        async with Client(target, trace=tp, **kw) as c:
            r = await c.call_tool("trigger-long-running-operation", {"duration": 1.5, "steps": 3},
                                  on_progress=prog.append)
            assert "completed" in text_of(r), r
            assert [p.get("progress") for p in prog] == [1, 2, 3], prog
            return f"progress {[(p['progress'], p.get('total')) for p in prog]}; result {text_of(r)!r}"
    await run_check(f"everything/{label}/progress", progress)

    async def sampling(tp):
        calls = []
        async with Client(target, trace=tp, sampling=sampler(calls), **kw) as c:
            names = [t["name"] for t in await c.list_tools()]
            assert "trigger-sampling-request" in names, f"sampling tool not offered: {names}"
            r = await c.call_tool("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 20})
            assert calls, "sampling handler never called"
            assert "SAMPLED-BY-MCP_MIN" in text_of(r), r
            return f"handler got {calls[0]['messages'][0]['content']['text']!r}; tool result contains our text"
    await run_check(f"everything/{label}/sampling", sampling)


# -- group 2: official Python SDK MCPServer ----------------------------------------
async def sdk_suite(label, target, transport="auto"):
    kw = dict(transport=transport, timeout=20)

    async def tools(tp):
        async with Client(target, trace=tp, **kw) as c:
            names = [t["name"] for t in await c.list_tools()]
            assert {"echo", "add", "log_things", "progress", "slow"} <= set(names), names
            r = await c.call_tool("echo", {"text": "hey"})
            assert text_of(r) == "hey", r
            r2 = await c.call_tool("add", {"a": 2, "b": 40})
            assert r2.get("structuredContent", {}).get("result") == 42 or text_of(r2) == "42", r2
            r3 = await c.call_tool("add", {"a": "x"})
            assert r3.get("isError"), r3
            return f"{names}; echo ok; add=42; bad args -> isError via {transport_name(c)} ({c.protocol_version})"
    await run_check(f"sdk/{label}/tools", tools)

    async def resources(tp):
        async with Client(target, trace=tp, **kw) as c:
            res = await c.list_resources()
            assert any(r["uri"] == "res://greeting" for r in res), res
            r = await c.read_resource("res://greeting")
            assert r["contents"][0]["text"] == "hello from the sdk", r
            tm = await c.list_resource_templates()
            assert any(t["uriTemplate"] == "res://user/{name}" for t in tm), tm
            r2 = await c.read_resource("res://user/ada")
            assert r2["contents"][0]["text"] == "user ada", r2
            return "list/read static + template ok"
    await run_check(f"sdk/{label}/resources", resources)

    async def prompts(tp):
        async with Client(target, trace=tp, **kw) as c:
            ps = await c.list_prompts()
            assert any(p["name"] == "review" for p in ps), ps
            r = await c.get_prompt("review", {"code": "x=1"})
            t = r["messages"][0]["content"]["text"]
            assert "x=1" in t, r
            return f"review -> {t!r}"
    await run_check(f"sdk/{label}/prompts", prompts)

    async def logging_(tp):
        logs = []
        async with Client(target, trace=tp, on_log=logs.append, **kw) as c:
            try:
                await c.set_log_level("info")
                level_note = "setLevel info ok"
            except McpError as e:
                level_note = f"setLevel -> server error {e.code} {e.message!r} (server-side)"
            r = await c.call_tool("log_things")
            assert text_of(r) == "logged", r
            await asyncio.sleep(0.3)
            assert logs, "no notifications/message received"
            return f"{level_note}; got {[(p['level'], p['data']) for p in logs]}"
    await run_check(f"sdk/{label}/logging", logging_)

    async def progress(tp):
        prog = []
        async with Client(target, trace=tp, **kw) as c:
            r = await c.call_tool("progress", {"steps": 4}, on_progress=prog.append)
            assert text_of(r) == "done 4", r
            assert [p["progress"] for p in prog] == [1, 2, 3, 4], prog
            return f"{[(p['progress'], p.get('total'), p.get('message')) for p in prog]}"
    await run_check(f"sdk/{label}/progress", progress)


# -- group 2b: both eras (2026-07-28 and handshake) vs the official Python SDK MCPServer --------
ANSWERS = {"name": "Alice", "color": "blue"}


def asker(elicited):
    """Our elicitation handler: accepts, filling each asked property from ANSWERS."""
    def handle(params):
        elicited.append(params.get("message"))
        props = (params.get("requestedSchema") or {}).get("properties") or {}
        return {"action": "accept", "content": {k: ANSWERS.get(k, "x") for k in props}}
    return handle


def wire(tp, direction):
    return [r["message"] for r in trace_records(tp) if r.get("dir") == direction and isinstance(r.get("message"), dict)]


def rounds(tp, tool):
    """Our tools/call requests for `tool` (one per 2026-07-28 round): (count, inputResponses keys, requestStates)."""
    calls = [m["params"] for m in wire(tp, "C→S")
             if m.get("method") == "tools/call" and (m.get("params") or {}).get("name") == tool]
    return len(calls), [sorted((p.get("inputResponses") or {}).keys()) for p in calls], \
        [p.get("requestState") for p in calls]


def s2c_requests(tp, method):
    return [m for m in wire(tp, "S→C") if m.get("method") == method and "id" in m]


async def era_suite(label, target, era, transport="auto", other=None):
    """OUR client pinned to one era (`era="2026-07-28"` or `"handshake"`) vs sdk_full_server.py.
    other: a target for a second client (HTTP: same server process) that triggers the tool-list change."""
    modern = era != "handshake"
    kw = dict(transport=transport, timeout=20, era=era)
    pre = f"eras/{era}/{label}"

    def client(tp, elicited=None, sampled=None, **more):
        return Client(target, trace=tp, elicitation=asker(elicited if elicited is not None else []),
                      sampling=sampler(sampled if sampled is not None else []), **kw, **more)

    async def connect(tp):
        async with client(tp) as c:
            version, is_modern, info = c.protocol_version, c.modern, c.server_info
            names = [t["name"] for t in await c.list_tools()]
            r = await c.call_tool("echo", {"text": "hey"})
        sent = [m.get("method") for m in wire(tp, "C→S")]
        heads = [r.get("head", "") for r in trace_records(tp) if r.get("channel") == "http"]
        sids = {(r.get("headers") or {}).get("mcp-session-id") for r in trace_records(tp)} - {None}
        assert is_modern == modern and (version == era if modern else version in mcp_min.PROTOCOL_VERSIONS), \
            f"era {era}: protocol_version={version} modern={is_modern}"
        assert (info or {}).get("name") == "sdk-full", f"server_info={info}"
        if modern:
            assert sent[0] == "server/discover" and "initialize" not in sent and "notifications/initialized" not in sent, sent[:4]
            assert not sids and not any(h.startswith(("GET", "DELETE")) for h in heads), \
                f"2026-07-28 over HTTP: session ids {sids}, GET/DELETE {[h for h in heads if h.startswith(('GET', 'DELETE'))]}"
        else:
            assert sent[:2] == ["initialize", "notifications/initialized"] and "server/discover" not in sent, sent[:4]
        assert {"greet", "ask_llm", "two_step", "manual_ask", "change_tools"} <= set(names), names
        assert text_of(r) == "hey" and not r.get("isError"), r
        how = "server/discover" if modern else "initialize + initialized"
        http = f"; HTTP session ids {sorted(sids) or 'none'}" + (f", {[h for h in heads if h.startswith(('GET', 'DELETE'))]}" if heads else "") \
            if isinstance(target, str) and target.startswith("http") else ""
        return f"{how} -> {version}, server {info.get('name')!r}; {len(names)} tools; echo ok{http}"
    await run_check(f"{pre}/connect+tools+echo", connect)

    async def elicit(tp):
        elicited = []
        async with client(tp, elicited) as c:
            r = await c.call_tool("greet")
        assert text_of(r) == "Hello, Alice!" and not r.get("isError"), r
        assert elicited == ["What is your name?"], elicited
        n, keys, states = rounds(tp, "greet")
        if modern:
            assert n == 2 and len(keys[1]) == 1 and not s2c_requests(tp, "elicitation/create"), (n, keys)
            return f"{text_of(r)!r}: input_required -> our elicitation handler -> retry; {n} rounds, inputResponses {keys}"
        assert n == 1 and len(s2c_requests(tp, "elicitation/create")) == 1, (n, keys)
        return f"{text_of(r)!r}: server->client elicitation/create mid-call, answered by our handler"
    await run_check(f"{pre}/elicitation (Resolve+Elicit)", elicit)

    async def sample(tp):
        sampled = []
        async with client(tp, sampled=sampled) as c:
            r = await c.call_tool("ask_llm")
        assert text_of(r) == "model said: SAMPLED-BY-MCP_MIN", r
        assert len(sampled) == 1 and sampled[0]["messages"][0]["content"]["text"] == "Capital of France?", sampled
        n, keys, _ = rounds(tp, "ask_llm")
        if modern:
            assert n == 2 and not s2c_requests(tp, "sampling/createMessage"), (n, keys)
            return f"{text_of(r)!r}; {n} rounds, inputResponses {keys}"
        assert n == 1 and len(s2c_requests(tp, "sampling/createMessage")) == 1, n
        return f"{text_of(r)!r}; server->client sampling/createMessage mid-call"
    await run_check(f"{pre}/sampling (Resolve+Sample)", sample)

    async def two(tp):
        elicited = []
        async with client(tp, elicited) as c:
            r = await c.call_tool("two_step")
        assert text_of(r) == "Alice likes blue", (r, elicited)
        assert elicited == ["What is your name?", "Alice, what is your favourite colour?"], elicited
        n, keys, states = rounds(tp, "two_step")
        if modern:
            assert n == 3 and all(states[1:]), (n, keys, states)
            return f"{text_of(r)!r}; {n} rounds, inputResponses {keys}, requestState echoed in rounds 2-3"
        assert n == 1 and len(s2c_requests(tp, "elicitation/create")) == 2, n
        return f"{text_of(r)!r}; two elicitation/create requests mid-call"
    await run_check(f"{pre}/two dependent asks", two)

    if modern:
        async def manual(tp):
            elicited = []
            async with client(tp, elicited) as c:
                r = await c.call_tool("manual_ask")
            n, keys, states = rounds(tp, "manual_ask")
            given = [m["result"].get("requestState") for m in wire(tp, "S→C")
                     if (m.get("result") or {}).get("resultType") == "input_required"]
            assert text_of(r) == "manual: Alice state=state-42", (r, elicited)
            # the SDK seals the tool's "state-42" (RequestStateSecurity): we must echo what it sent, unparsed
            assert n == 2 and keys[1] == ["q"] and given and states == [None, given[0]], (n, keys, states, given)
            return (f"{text_of(r)!r}; requestState ({len(given[0])} chars, sealed by the SDK) echoed byte for byte, "
                    f"inputResponses {keys[1]}")
        await run_check(f"{pre}/hand-written InputRequiredResult + requestState", manual)

        async def ctx_elicit(tp):
            async with client(tp) as c:
                try:
                    r = await c.call_tool("ctx_elicit")
                    raise AssertionError(f"expected the SDK to refuse ctx.elicit at 2026-07-28, got {r}")
                except McpError as e:
                    err = e
                r2 = await c.call_tool("echo", {"text": "still"})
            assert text_of(r2) == "still", r2
            return f"SDK answers McpError {err.code} {err.message[:70]!r} (ctx.elicit needs a back-channel); client still usable"
        await run_check(f"{pre}/SDK ctx.elicit -> error, client usable", ctx_elicit)

        async def listen(tp, via_other=False):
            got, heard = [], asyncio.Event()
            async with client(tp) as c:
                task = asyncio.ensure_future(c.listen(on_tools=lambda p: (got.append(p), heard.set())))
                for _ in range(100):    # wait for the acknowledgment (in our trace)
                    if any(m.get("method") == "notifications/subscriptions/acknowledged" for m in wire(tp, "S→C")):
                        break
                    await asyncio.sleep(0.05)
                else:
                    task.cancel()
                    raise AssertionError(f"no notifications/subscriptions/acknowledged within 5 s (listen done={task.done()})")
                if via_other:
                    async with Client(other, timeout=20, era=era, transport=transport) as c2:
                        r = await c2.call_tool("change_tools")
                else:
                    r = await c.call_tool("change_tools")
                assert text_of(r) == "tools changed", r
                try:
                    await asyncio.wait_for(heard.wait(), 5)
                except asyncio.TimeoutError:
                    raise AssertionError("on_tools not called within 5 s of change_tools")
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                r2 = await c.call_tool("echo", {"text": "after"})
                assert text_of(r2) == "after", r2
            ack = [m for m in wire(tp, "S→C") if m.get("method") == "notifications/subscriptions/acknowledged"][0]
            ended = [m for m in wire(tp, "C→S") if m.get("method") == "notifications/cancelled"]
            return (f"ack {ack['params'].get('notifications')}; on_tools got {got[0]}; cancelled the listen task "
                    + ("(stdio: notifications/cancelled sent)" if ended else "(HTTP: stream closed)") + "; usable after")
        await run_check(f"{pre}/listen(on_tools) hears tools/list_changed", listen)
        if other:
            await run_check(f"{pre}/listen(on_tools), change made by another client",
                            lambda tp: listen(tp, via_other=True))
    else:
        async def ctx_elicit(tp):
            elicited = []
            async with client(tp, elicited) as c:
                r = await c.call_tool("ctx_elicit")
            assert text_of(r) == "ctx: accept Alice", r
            return f"{text_of(r)!r}; elicitation/create requests: {len(s2c_requests(tp, 'elicitation/create'))}"
        await run_check(f"{pre}/SDK ctx.elicit (server->client request)", ctx_elicit)

        async def list_changed(tp):
            notes, heard = [], asyncio.Event()

            def on_note(method, params):
                notes.append(method)
                if method == "notifications/tools/list_changed":
                    heard.set()
            async with client(tp, on_notification=on_note) as c:
                r = await c.call_tool("change_tools")
                try:
                    await asyncio.wait_for(heard.wait(), 5)
                except asyncio.TimeoutError:
                    raise AssertionError(f"no notifications/tools/list_changed within 5 s; notifications {notes}")
                try:    # what listen() does in this era (2026-07-28 only): for the SKIP line below
                    await asyncio.wait_for(c.listen(on_tools=lambda p: None), 5)
                    how = "returned"
                except McpError as e:
                    how = f"McpError {e.code} {e.message!r}"
                except asyncio.TimeoutError:
                    how = "no answer within 5 s"
            era_notes[label] = how
            return f"on_notification got {notes}"
        era_notes = {}
        await run_check(f"{pre}/tools/list_changed via on_notification (session)", list_changed)
        skip(f"{pre}/listen(on_tools)", "subscriptions/listen is 2026-07-28 only; with this handshake session "
             f"listen() -> {era_notes.get(label, 'not reached')}")


async def auto_era(label, target, transport="auto"):
    async def check(tp):
        async with Client(target, trace=tp, timeout=20, transport=transport) as c:
            version, info = c.protocol_version, c.server_info
            r = await c.call_tool("echo", {"text": "auto"})
        sent = [m.get("method") for m in wire(tp, "C→S")]
        assert version == "2026-07-28" and "initialize" not in sent and sent[0] == "server/discover", (version, sent[:3])
        assert text_of(r) == "auto", r
        return f"era auto -> {version} (first sent {sent[:2]}, no initialize); server {info.get('name')!r}"
    await run_check(f"eras/auto/{label}", check)


# -- auto probe --------------------------------------------------------------------
async def auto_probe(label, url, expect):
    async def check(tp):
        async with Client(url, trace=tp, timeout=20) as c:
            kind = transport_name(c)
            tools = await c.list_tools()
        recs = trace_records(tp)
        heads = [r.get("head", "") for r in recs if r.get("channel") == "http" or "head" in r][:6]
        assert kind == expect, f"auto chose {kind}, expected {expect}; first HTTP heads {heads}"
        return f"auto -> {kind}, {len(tools)} tools; first exchanges {heads[:4]}"
    await run_check(f"auto/{label}", check)


# -- CLI ---------------------------------------------------------------------------
def cli(name, target, extra=(), expect_trace=False):
    extra_args = extra
    argv = ["python3", MAIN, "client", target, "tools/list", *extra]
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=40)
    except subprocess.TimeoutExpired:
        report(name, False, "CLI hung > 40 s"); return
    dt = time.time() - t0
    ok = p.returncode == 0
    detail = f"rc={p.returncode} {dt:.2f}s"
    try:
        n = len(json.loads(p.stdout)["tools"]); detail += f", {n} tools"
    except Exception:
        ok = False; detail += f", stdout not a tools JSON: {p.stdout[:200]!r}"
    if expect_trace:
        # expect_trace: the era the CLI must end up in ("handshake", or "2026-07-28" with a server that speaks it)
        import re
        err = p.stderr
        if expect_trace == "2026-07-28":
            need = ["C→S", "S→C", "server/discover", "tools/list"]
            extra = [w for w in ("request #1 initialize", "request #2 initialize", "notifications/initialized")
                     if re.search(re.escape(w) + r"\b", err)]
            words = "server/discover/tools/list, no initialize"
        else:
            need, extra = ["C→S", "S→C", "initialize", "notifications/initialized", "tools/list"], []
            words = "initialize/initialized/tools/list"
            if "--protocol" in extra_args:      # the era pinned: no server/discover probe either
                extra = ["server/discover"] if "server/discover" in err else []
                words += ", no server/discover"
        missing = [w for w in need if w not in err]
        ok = ok and not missing and not extra
        detail += f"; trace {len(err.splitlines())} stderr lines" + (
            f", MISSING {missing}" if missing else f", UNEXPECTED {extra}" if extra else f", has C→S/S→C {words}")
        with open(os.path.join(LOGS, name.replace("/", "_") + ".stderr.txt"), "w") as f:
            f.write(err)
    if not ok:
        detail += f"; stderr tail: {p.stderr[-600:]!r}"
    report(name, ok, detail)


# -- robustness ----------------------------------------------------------------------
def cancelled_sent(tp, req_id=None):
    for r in trace_records(tp):
        m = r.get("message")
        if isinstance(m, dict) and m.get("method") == "notifications/cancelled" and r.get("dir") == "C→S":
            return m
        if isinstance(m, str) and "notifications/cancelled" in m:
            return m
    return None


async def timeout_check(label, target, tool, args, transport="auto", probe=False):
    """A call times out on our side (McpError REQUEST_TIMEOUT < 3 s) and is cancelled: handshake era and
    2026-07-28 stdio by notifications/cancelled; 2026-07-28 Streamable HTTP by closing the request's stream
    (PROTOCOL §7.4: no notifications/cancelled there). probe: the SDK server's slow_tracked/was_cancelled
    tools tell whether the server really cancelled the handler."""
    async def check(tp):
        async with Client(target, trace=tp, timeout=20, transport=transport) as c:
            t0 = time.time()
            tag = f"{label}-{time.time()}"
            try:
                r = await c.call_tool(tool, dict(args, tag=tag) if probe else args, timeout=1.0)
                raise AssertionError(f"no timeout; got {r}")
            except McpError as err:
                dt, e = time.time() - t0, err
                assert e.code == mcp_min.REQUEST_TIMEOUT, f"wrong error code {e.code} {e.message}"
            assert dt < 3, f"timeout error only after {dt:.2f}s"
            await asyncio.sleep(0.3)
            m = cancelled_sent(tp)
            by_stream = c.modern and isinstance(c._transport, mcp_min._StreamableHttp)
            if by_stream:
                how = "2026-07-28 HTTP: request stream closed" + (f" (also sent {json.dumps(m)[:120]})" if m else \
                                                                 ", no notifications/cancelled")
            else:
                assert m, "no notifications/cancelled on the wire"
                how = f"sent {json.dumps(m)[:160]}"
            if probe:
                seen = (await c.call_tool("was_cancelled", {"tag": tag})).get("structuredContent", {}).get("result")
                assert seen is True, f"the server did not cancel the handler ({how}); was_cancelled -> {seen}"
                how += "; server cancelled the handler (was_cancelled)"
            pong = await c.ping()
            return f"McpError {e.code} {e.message!r} after {dt:.2f}s ({c.protocol_version}); {how}; ping after -> {pong}"
    await run_check(f"robust/timeout/{label}", check)


async def kill_check(label, target_fn, tool, args, transport="auto", on_progress=None):
    """target_fn() -> (target, killer, server); killer(client) kills the server.
    The client's own request timeout is 15 s; the call must fail < 5 s after the kill."""
    async def check(tp):
        target, killer, server = target_fn()
        try:
            async with Client(target, trace=tp, timeout=15, transport=transport) as c:
                call = asyncio.ensure_future(c.call_tool(tool, args, on_progress=on_progress))
                await asyncio.sleep(1.2)
                assert not call.done(), f"call finished early: {call}"
                t0 = time.time()
                killer(c)
                try:
                    r = await asyncio.wait_for(call, 25)
                    raise AssertionError(f"call returned {r} after kill?")
                except asyncio.TimeoutError:
                    raise AssertionError("pending call still not failed 25 s after the server was killed")
                except McpError as e:
                    dt = time.time() - t0
                    assert dt < 5, (f"pending call failed only {dt:.2f}s after the kill, with McpError "
                                    f"{e.code} {e.message!r} (the client's own request timeout, not the lost connection)")
                    return f"pending call failed {dt:.2f}s after kill: McpError {e.code} {e.message!r}"
        finally:
            if server:
                server.kill()
    await run_check(f"robust/kill/{label}", check, limit=45)


def stdio_target(argv):
    def make():
        def killer(c):
            c._transport.process.kill()     # the child our client spawned, by its pid
        return argv, killer, None
    return make


def http_target(start, url_suffix):
    def make():
        srv = start()
        return f"http://127.0.0.1:{srv.port}{url_suffix}", (lambda c: srv.kill()), srv
    return make


# -- main ------------------------------------------------------------------------------
async def main(groups):
    if "everything" in groups:
        print("### 1. server-everything", flush=True)
        await everything_suite("stdio", EV_STDIO)
        s = everything_http("sse", PORTS["ev-sse"], "everything-sse")
        h = everything_http("streamableHttp", PORTS["ev-http"], "everything-http")
        try:
            await everything_suite("sse", f"http://127.0.0.1:{s.port}/sse", transport="sse")
            await everything_suite("http", f"http://127.0.0.1:{h.port}/mcp", transport="http")
            await auto_probe("everything-sse-url", f"http://127.0.0.1:{s.port}/sse", "_LegacySse")
            await auto_probe("everything-mcp-url", f"http://127.0.0.1:{h.port}/mcp", "_StreamableHttp")
        finally:
            s.stop(); h.stop()
    if "sdk" in groups:
        print("### 2. official Python SDK MCPServer", flush=True)
        await sdk_suite("stdio", SDK_STDIO)
        s = sdk_http("sse", PORTS["sdk-sse"], "sdk-sse")
        h = sdk_http("http", PORTS["sdk-http"], "sdk-http")
        try:
            await sdk_suite("sse", f"http://127.0.0.1:{s.port}/sse", transport="sse")
            await sdk_suite("http", f"http://127.0.0.1:{h.port}/mcp", transport="http")
            await auto_probe("sdk-sse-url", f"http://127.0.0.1:{s.port}/sse", "_LegacySse")
            await auto_probe("sdk-mcp-url", f"http://127.0.0.1:{h.port}/mcp", "_StreamableHttp")
        finally:
            s.stop(); h.stop()
    if "eras" in groups:
        print("### 2b. both eras (2026-07-28, handshake, auto) vs the official Python SDK MCPServer", flush=True)
        for era in ("2026-07-28", "handshake"):
            await era_suite("sdk-stdio", SDK_STDIO, era)
        await auto_era("sdk-stdio", SDK_STDIO)
        h = sdk_http("http", PORTS["era-sdk-http"], "era-sdk-http")
        try:
            url = f"http://127.0.0.1:{h.port}/mcp"
            for era in ("2026-07-28", "handshake"):
                await era_suite("sdk-http", url, era, transport="http", other=url)
            await auto_era("sdk-http", url, transport="http")
        finally:
            h.stop()
    if "cli" in groups:
        print("### 3. CLI", flush=True)
        s = everything_http("sse", PORTS["ev-sse"], "cli-everything-sse")
        h = everything_http("streamableHttp", PORTS["ev-http"], "cli-everything-http")
        s2 = sdk_http("sse", PORTS["sdk-sse"], "cli-sdk-sse")
        h2 = sdk_http("http", PORTS["sdk-http"], "cli-sdk-http")
        try:
            targets = {"everything-stdio": shlex.join(EV_STDIO),   # shlex: paths may contain spaces
                       "everything-sse": f"http://127.0.0.1:{s.port}/sse",
                       "everything-http": f"http://127.0.0.1:{h.port}/mcp",
                       "sdk-stdio": shlex.join(SDK_STDIO),
                       "sdk-sse": f"http://127.0.0.1:{s2.port}/sse",
                       "sdk-http": f"http://127.0.0.1:{h2.port}/mcp"}
            for n, t in targets.items():
                cli(f"cli/{n}/tools-list", t)
            # server-everything (TS SDK 1.x) is of the handshake era; the Python SDK 2.3 speaks 2026-07-28 too
            for n, era in (("everything-stdio", "handshake"), ("everything-sse", "handshake"),
                           ("everything-http", "handshake"), ("sdk-http", "2026-07-28")):
                cli(f"cli/{n}/--trace", targets[n], ["--trace"], expect_trace=era)
            cli("cli/sdk-http/--trace--protocol-2025-11-25", targets["sdk-http"],
                ["--trace", "--protocol", "2025-11-25"], expect_trace="handshake")
        finally:
            for x in (s, h, s2, h2):
                x.stop()
    if "robust" in groups:
        print("### 4. robustness", flush=True)
        lro = ("trigger-long-running-operation", {"duration": 20, "steps": 20})
        await timeout_check("everything-stdio", EV_STDIO, *lro)
        await timeout_check("sdk-stdio", SDK_STDIO, "slow_tracked", {"seconds": 5}, probe=True)
        h = everything_http("streamableHttp", PORTS["ev-http"], "robust-everything-http")
        s = everything_http("sse", PORTS["ev-sse"], "robust-everything-sse")
        h2 = sdk_http("http", PORTS["sdk-http"], "robust-sdk-http")
        try:
            await timeout_check("everything-http", f"http://127.0.0.1:{h.port}/mcp", *lro, transport="http")
            await timeout_check("everything-sse", f"http://127.0.0.1:{s.port}/sse", *lro, transport="sse")
            await timeout_check("sdk-http", f"http://127.0.0.1:{h2.port}/mcp", "slow_tracked", {"seconds": 5},
                                transport="http", probe=True)
        finally:
            h.stop(); s.stop(); h2.stop()
        await kill_check("everything-stdio", stdio_target(EV_STDIO), *lro)
        await kill_check("sdk-stdio", stdio_target(SDK_STDIO), "slow", {"seconds": 20})
        await kill_check("everything-http", http_target(
            lambda: everything_http("streamableHttp", PORTS["kill-ev-http"], "kill-everything-http"), "/mcp"),
            *lro, transport="http")
        await kill_check("everything-http+progress", http_target(
            lambda: everything_http("streamableHttp", PORTS["kill-ev-http"], "kill-everything-http-progress"), "/mcp"),
            *lro, transport="http", on_progress=lambda p: None)
        await kill_check("sdk-http", http_target(
            lambda: sdk_http("http", PORTS["kill-sdk-http"], "kill-sdk-http"), "/mcp"),
            "slow", {"seconds": 20}, transport="http")
        await kill_check("everything-sse", http_target(
            lambda: everything_http("sse", PORTS["kill-ev-sse"], "kill-everything-sse"), "/sse"),
            *lro, transport="sse")
        await kill_check("sdk-sse", http_target(
            lambda: sdk_http("sse", PORTS["kill-sdk-sse"], "kill-sdk-sse"), "/sse"),
            "slow", {"seconds": 20}, transport="sse")


if __name__ == "__main__":
    groups = sys.argv[1:] or ["everything", "sdk", "eras", "cli", "robust"]
    busy = [p for p in PORTS.values() if not port_free(p)]
    if busy:
        sys.exit(f"ports busy: {busy}")
    asyncio.run(main(groups))
    fails = [n for n, ok in RESULTS if not ok]
    print(f"=== {len(RESULTS) - len(fails)} PASS, {len(fails)} FAIL, {len(SKIPS)} SKIP" + (f": {fails}" if fails else ""))
    sys.exit(1 if fails else 0)
