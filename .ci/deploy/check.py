#!/usr/bin/env python3
"""CI (issue 25): examples/deploy.py -- stock nginx in front of three mcp_min processes --
driven by the official Python SDK client (mcp 2.3.0), unmodified.

    python3 .ci/deploy/check.py            # from anywhere; .ci/run runs it

Started with any python3, it installs what it needs when absent -- nginx (apt-get install -y
nginx) and the SDK (python3 -m venv .peers && .peers/bin/pip install mcp==2.3.0; .peers/ is
git-ignored) -- and prints one "SKIP" line and exits 0 when it cannot have them; then it runs
itself again with .peers/bin/python. One line a check: PASS or FAIL; exit 1 on any FAIL.

What it checks, in this order (deploy.py serves .ci/deploy/server.py: the user store, plus
tools that return the id of the process that ran them):
  0. examples/nginx.conf shows what deploy.py writes for three processes;
  1. handshake era, Streamable HTTP: 10 sessions x 20 calls at once; every call answered, each
     session on the one process its id names, the sessions spread over all three processes;
  2. the same over legacy SSE (GET /sse, POST /messages?sessionId=...);
  3. 2026-07-28 round robin: calls reach all three processes; a request with two elicitation
     rounds completes with its rounds on different processes (requestState travels);
  4. forwarded headers: the Host and Origin checks see what the client sent to nginx; a client's
     own X-Forwarded-* are replaced by nginx; believed from --forwarded-allow-ips, ignored from
     anyone else; the client's address in the trace; /healthz;
  5. SIGTERM to one process under load: what it accepted is answered, nothing else fails, and its
     sessions then get 404 "start a new session" from another process, not a hang;
  6. SIGKILL of a process with a call in flight: the client's resumption gets the same 404, and
     the call ends with an error (no hang); deploy.py stops everything on SIGTERM;
  7. --stateless: every request round robin, no session id.
"""
import builtins
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = os.path.join(ROOT, ".peers")
SDK = "2.3.0"
DEPLOY = os.path.join(ROOT, "examples", "deploy.py")
SERVER = os.path.join(HERE, "server.py")
MCP_MIN = os.path.join(ROOT, "mcp_min.py")
CHECK_TIMEOUT = 30      # seconds any one check may take
# deploy.py's stderr (its processes' logs, nginx's errors): $DEPLOY_STDERR if set, else nowhere
DEPLOY_STDERR = open(os.environ.get("DEPLOY_STDERR") or os.devnull, "a")
MODE = "2026-07-28"


##############################################################################
# Bootstrap (any python3, standard library): nginx and the SDK, or a skip
##############################################################################

def skip(why):
    print(f"!! SKIP the deploy check (.ci/deploy): {why}", flush=True)
    sys.exit(0)


def quiet(*command):
    return subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def find_nginx():
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def bootstrap():
    if not find_nginx() and shutil.which("apt-get"):
        # A fresh machine may have no package lists yet: one update, then one more try.
        if not quiet("apt-get", "install", "-y", "nginx"):
            quiet("apt-get", "update")
            quiet("apt-get", "install", "-y", "nginx")
    if not find_nginx():
        skip("nginx is not installed and apt-get could not install it")
    python = os.path.join(PEERS, "bin", "python")
    has_sdk = [python, "-c", f"import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '{SDK}')"]
    if not (os.path.exists(python) and quiet(*has_sdk)):
        if not os.path.exists(python) and not quiet(sys.executable, "-m", "venv", PEERS):
            skip("could not make the .peers venv")
        if not quiet(python, "-m", "pip", "install", "-q", f"mcp=={SDK}"):
            skip(f"could not install the official Python SDK (mcp=={SDK}) into .peers")
    os.execv(python, [python, os.path.abspath(__file__), "--in-peers"])


if __name__ == "__main__" and "--in-peers" not in sys.argv:
    bootstrap()

import logging                       # noqa: E402  (from here on: inside .peers, with the SDK)
import warnings                      # noqa: E402
warnings.simplefilter("ignore")
logging.getLogger("mcp").setLevel(logging.ERROR)   # "Session termination failed: 404": expected here
import http.client                   # noqa: E402
import anyio                         # noqa: E402
import httpx2                        # noqa: E402
import mcp_types as types            # noqa: E402
from mcp import Client, ClientSession                       # noqa: E402
from mcp.client.sse import sse_client                       # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

FAILED = []


def report(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f" -- {detail}" if detail else ""), flush=True)
    if not ok:
        FAILED.append(name)


def describe(e):
    if isinstance(e, getattr(builtins, "BaseExceptionGroup", ())):     # Python 3.11+
        return " | ".join(describe(x) for x in e.exceptions)
    return f"{type(e).__name__}: {e}"[:300]


async def check(name, fn, *args):
    """Run one check: PASS with what it returned, FAIL with why."""
    try:
        with anyio.fail_after(CHECK_TIMEOUT):
            report(name, True, await fn(*args) or "")
    except AssertionError as e:
        report(name, False, str(e)[:600])
    except TimeoutError:
        report(name, False, f"no end within {CHECK_TIMEOUT} s")
    except Exception as e:      # noqa: BLE001  (a check fails; the others still run)
        import traceback
        traceback.print_exc()
        report(name, False, describe(e))


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content or [])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


##############################################################################
# examples/deploy.py, as a user runs it
##############################################################################

class Deploy:
    def __init__(self, *extra):
        self.port = free_port()
        self.url = f"http://localhost:{self.port}"
        self.proc = subprocess.Popen([sys.executable, DEPLOY, "--port", str(self.port), "--processes", "3",
                                      "--server", SERVER, "--", *extra], cwd=ROOT, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=DEPLOY_STDERR, text=True)
        self.nodes, self.lines = {}, []     # node name -> (pid, port)
        deadline = time.monotonic() + 30
        for line in self.proc.stdout:
            self.lines.append(line)
            if (found := re.match(r"deploy: (n\d+) pid (\d+) on 127\.0\.0\.1:(\d+)", line)):
                self.nodes[found.group(1)] = int(found.group(2)), int(found.group(3))
            elif (found := re.match(r"deploy: nginx pid (\d+) .* files in (\S+)", line)):
                self.nginx, self.prefix = int(found.group(1)), found.group(2)
            elif line.startswith("deploy: ready") or time.monotonic() > deadline:
                break
        if not line.startswith("deploy: ready"):
            raise AssertionError(f"deploy.py did not start: {''.join(self.lines)}")

    @property
    def pids(self):
        return {pid for pid, _ in self.nodes.values()}

    def node_of(self, pid):
        return next(name for name, (p, _) in self.nodes.items() if p == pid)

    def more_lines(self):
        """What deploy.py printed since (it prints a line when a process exits)."""
        os.set_blocking(self.proc.stdout.fileno(), False)
        while (line := self.proc.stdout.readline()):
            self.lines.append(line)
        return "".join(self.lines)

    def stop(self):
        """SIGTERM, as a service manager stops it: everything ends, and the folder goes."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(30)
        os.set_blocking(self.proc.stdout.fileno(), True)
        rest = self.proc.stdout.read()
        self.proc.stdout.close()
        left = [pid for pid in [self.nginx, *self.pids] if alive(pid)]
        return code, rest, left, os.path.exists(self.prefix)


def raw(port, method, path, body=None, headers=(), source="127.0.0.1"):
    """One request from `source` (another loopback address is another client): (status, headers, text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **dict(headers)}
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None, h)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode(errors="replace")
    finally:
        conn.close()


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "check", "version": "1"}}}


##############################################################################
# The official client through nginx
##############################################################################

class Recorder:
    """An httpx2 client for the SDK that notes the session ids the server hands out."""
    def __init__(self):
        self.session_ids = []

    async def on_response(self, response):
        if (sid := response.headers.get("mcp-session-id")) and sid not in self.session_ids:
            self.session_ids.append(sid)

    def client(self):
        return httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120),
                                  event_hooks={"response": [self.on_response]})


async def session_calls(session, calls):
    """`calls` calls at once, half whoami and half getUser: the process ids that answered."""
    pids = []

    async def one(k):
        if k % 2:
            result = await session.call_tool("whoami", {})
            assert not result.is_error, text_of(result)
            pids.append(int(text_of(result)))
        else:
            result = await session.call_tool("getUser", {"name": "John"})
            assert not result.is_error and "john@example.com" in text_of(result), text_of(result)
    async with anyio.create_task_group() as tg:
        for k in range(calls):
            tg.start_soon(one, k)
    return pids


async def spread(deploy, open_session, what):
    """10 sessions at once, 20 calls each: each on the process its id names, all three used."""
    sessions = {}

    async def one(i):
        async with open_session() as (sid, session):
            await session.initialize()
            sessions[i] = sid(), set(await session_calls(session, 20))
    async with anyio.create_task_group() as tg:
        for i in range(10):
            tg.start_soon(one, i)
    wrong = [(sid, pids) for sid, pids in sessions.values()
             if len(pids) != 1 or deploy.nodes.get(sid.partition(".")[0], (0,))[0] not in pids]
    assert len(sessions) == 10 and not wrong, f"sessions not on the process their id names: {wrong}"
    used = {next(iter(pids)) for _, pids in sessions.values()}
    assert used == deploy.pids, f"10 sessions on {len(used)} of the 3 processes"
    per_node = sorted(sid.partition(".")[0] for sid, _ in sessions.values())
    return f"{what}: 10 sessions x 20 calls answered; session ids by node {per_node}"


def streamable(url):
    """A handshake-era session over Streamable HTTP: yields (session id getter, ClientSession)."""
    @contextlib.asynccontextmanager
    async def opened():
        recorder = Recorder()
        async with recorder.client() as hc, streamable_http_client(url + "/mcp", http_client=hc) as (r, w), \
                ClientSession(r, w) as session:
            yield (lambda: recorder.session_ids[0]), session
    return opened


def legacy(url):
    """A legacy HTTP+SSE session: yields (session id getter, ClientSession)."""
    @contextlib.asynccontextmanager
    async def opened():
        ids = []
        async with sse_client(url + "/sse", on_session_created=ids.append) as (r, w), \
                ClientSession(r, w) as session:
            yield (lambda: ids[0]), session
    return opened


async def answer(context, params):
    """The SDK's elicitation callback: the user accepts."""
    return types.ElicitResult(action="accept", content={"ok": True})


async def modern_round_robin(deploy):
    async with Client(deploy.url + "/mcp", mode=MODE, elicitation_callback=answer) as client:
        pids = [int(text_of(await client.call_tool("whoami", {}))) for _ in range(12)]
        assert set(pids) == deploy.pids, f"12 calls reached {len(set(pids))} of the 3 processes: {pids}"
        runs = []
        for _ in range(6):
            result = await client.call_tool("two_questions", {})
            assert not result.is_error, text_of(result)
            runs.append([deploy.node_of(int(pid)) for pid in text_of(result).split()])
    moved = [run for run in runs if len(set(run)) > 1]
    assert moved, f"no request had its rounds on two processes: {runs}"
    return f"12 calls over {sorted(set(map(deploy.node_of, pids)))}; 6 two-round requests, rounds on " \
           f"{runs} (each a different process: {sum(len(set(r)) == 3 for r in runs)} of 6)"


async def forwarded(deploy, trace_dir):
    port, n1_port = deploy.port, deploy.nodes["n1"][1]
    out = []

    def expect(status, *args, **options):
        got = raw(*args, **options)
        assert got[0] == status, f"{args[1:3]} {options}: {got[0]} {got[2][:200]}, not {status}"
        return got

    expect(200, port, "GET", "/healthz")
    expect(403, port, "POST", "/mcp", INITIALIZE, {"Host": "evil.example"})      # DNS rebinding
    # What a client says in X-Forwarded-Host, nginx replaces with the Host it sent.
    expect(200, port, "POST", "/mcp", INITIALIZE, {"Host": f"localhost:{port}",
                                                   "X-Forwarded-Host": "evil.example"})
    out.append("through nginx: Host evil.example 403, a client's own X-Forwarded-Host replaced")
    # The public name (--allow-host mcp.example.com): a page of that origin may call; the same
    # name over https is another origin (X-Forwarded-Proto says http here).
    public = {"Host": "mcp.example.com"}
    expect(200, port, "POST", "/mcp", INITIALIZE, {**public, "Origin": "http://mcp.example.com"})
    expect(403, port, "POST", "/mcp", INITIALIZE, {**public, "Origin": "https://mcp.example.com"})
    expect(403, port, "POST", "/mcp", INITIALIZE, {**public, "Origin": "http://evil.example"})
    out.append("Origin: its own public origin 200, https:// of it and others 403")
    # Straight to a process, from 127.0.0.1, which it trusts: its X-Forwarded-Host is believed.
    expect(403, n1_port, "POST", "/mcp", INITIALIZE, {"X-Forwarded-Host": "evil.example"})
    expect(200, n1_port, "POST", "/mcp", INITIALIZE, {"X-Forwarded-Host": "mcp.example.com",
                                                    "X-Forwarded-Proto": "https",
                                                    "Origin": "https://mcp.example.com"})
    out.append("a trusted peer's X-Forwarded-Host/-Proto believed")
    # A process that trusts no proxy ignores them all.
    trace = os.path.join(trace_dir, "plain.jsonl")
    plain = subprocess.Popen([sys.executable, MCP_MIN, "serve", SERVER, "--port", "0", f"--trace={trace}"],
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while not (found := re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)):
            line = plain.stderr.readline()
            assert line, "the plain process did not start"
        plain_port = int(found.group(1))
        expect(200, plain_port, "POST", "/mcp", INITIALIZE, {"X-Forwarded-Host": "evil.example"})
        expect(403, plain_port, "POST", "/mcp", INITIALIZE, {"X-Forwarded-Host": "mcp.example.com",
                                                           "X-Forwarded-Proto": "https",
                                                           "Origin": "https://mcp.example.com"})
    finally:
        plain.terminate()
        plain.wait(10)
        plain.stderr.close()
    out.append("without --forwarded-allow-ips all ignored")
    # The client's address: a request from 127.0.0.2 through nginx, with a forged X-Forwarded-For.
    expect(200, port, "POST", "/mcp", INITIALIZE, {"Host": f"localhost:{port}", "X-Forwarded-For": "6.6.6.6"},
           source="127.0.0.2")
    heads = []
    for name in deploy.nodes:
        with open(os.path.join(trace_dir, f"{name}.jsonl")) as f:
            heads += [json.loads(line)["head"] for line in f if '"POST /mcp' in line]
    assert any(h.endswith("(from 127.0.0.2)") for h in heads), f"no trace names the client: {heads[-5:]}"
    assert not any("6.6.6.6" in h for h in heads), "the forged address was believed"
    out.append("the trace names the client (127.0.0.2), not nginx nor a forged X-Forwarded-For")
    return "; ".join(out)


async def on_node(stack, deploy, node, sse=False):
    """A handshake-era session on `node` (new sessions, round robin, until one lands there) over
    Streamable HTTP, or legacy SSE; entered into `stack`: (session id, session)."""
    for _ in range(12):
        ids, attempt = [], contextlib.AsyncExitStack()
        if sse:
            r, w = await attempt.enter_async_context(
                sse_client(deploy.url + "/sse", on_session_created=ids.append))
        else:
            recorder = Recorder()
            ids = recorder.session_ids
            hc = await attempt.enter_async_context(recorder.client())
            r, w = await attempt.enter_async_context(
                streamable_http_client(deploy.url + "/mcp", http_client=hc))
        session = await attempt.enter_async_context(ClientSession(r, w))
        await session.initialize()
        if ids[0].startswith(node + "."):
            await session.list_tools()      # the SDK checks results against it: asked now, not later
            await stack.enter_async_context(attempt)
            return ids[0], session
        await attempt.aclose()
    raise AssertionError(f"12 sessions, none on {node}")


async def sigterm_under_load(deploy):
    """n2 gets SIGTERM while 8 round-robin (2026-07-28) clients call, and a 1.5 s call of a
    session of n2's runs: that call is answered, no other call fails, n2's session then gets
    404 "start a new session" from another process, and deploy.py sees n2 exit 0."""
    n2 = deploy.nodes["n2"][0]
    calls = {"ok": 0, "failed": [], "after": set()}
    stop, gone = anyio.Event(), anyio.Event()

    async def load():
        async with Client(deploy.url + "/mcp", mode=MODE) as client:
            while not stop.is_set():
                try:
                    result = await client.call_tool("whoami", {})
                    assert not result.is_error, text_of(result)
                    calls["ok"] += 1
                    if gone.is_set():
                        calls["after"].add(int(text_of(result)))
                except Exception as e:      # noqa: BLE001
                    calls["failed"].append(describe(e))
    async with contextlib.AsyncExitStack() as stack:
        sid, session = await on_node(stack, deploy, "n2")
        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(load)
            while calls["ok"] < 50:     # under load
                await anyio.sleep(0.01)
            with anyio.fail_after(10):
                async with anyio.create_task_group() as inner:
                    napped = []

                    async def nap():
                        napped.append(int(text_of(await session.call_tool("nap", {"seconds": 1.5}))))
                    inner.start_soon(nap)
                    await anyio.sleep(0.3)      # the call is in flight
                    before = calls["ok"]
                    os.kill(n2, signal.SIGTERM)
            while alive(n2):
                await anyio.sleep(0.02)
            gone.set()
            await anyio.sleep(1.0)
            stop.set()
        t0 = time.monotonic()
        try:
            with anyio.fail_after(10):
                after = f"answered?! {text_of(await session.call_tool('whoami', {}))}"
        except Exception as e:      # noqa: BLE001
            after = f"{describe(e)} ({time.monotonic() - t0:.1f} s)"
    assert napped == [n2], f"the call in flight on n2 answered {napped}"
    assert not calls["failed"], f"{len(calls['failed'])} of {calls['ok']} calls failed: {calls['failed'][:3]}"
    assert calls["after"] and n2 not in calls["after"], calls["after"]
    assert "start a new session" in after, f"n2's session after n2 left: {after}"
    assert "deploy: n2 exited with code 0" in deploy.more_lines(), "deploy.py did not see n2 exit 0"
    return f"{calls['ok']} calls ({before} before the SIGTERM), 0 failed; n2's call in flight answered; " \
           f"n2's session then: {after}"


async def sigkill_resume(deploy):
    """n3 dies (SIGKILL) with a 30 s call in flight on a Streamable HTTP session of its, past the
    first second (so answered on a primed SSE stream), and one on a legacy SSE session. The SDK
    resumes the first (GET + Last-Event-ID), which nginx sends to a backup process: 404 "start a
    new session"; both calls end with an error, neither hangs."""
    n3 = deploy.nodes["n3"][0]
    outcome = {}

    async def slow(label, session):
        t0 = time.monotonic()
        try:
            outcome[label] = f"answered?! {text_of(await session.call_tool('nap', {'seconds': 30}))}"
        except Exception as e:      # noqa: BLE001
            outcome[label] = f"{describe(e)} after {time.monotonic() - t0:.1f} s"
    async with contextlib.AsyncExitStack() as stack:
        sid, session = await on_node(stack, deploy, "n3")
        _, legacy_session = await on_node(stack, deploy, "n3", sse=True)
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow, "Streamable HTTP", session)
            tg.start_soon(slow, "legacy SSE", legacy_session)
            await anyio.sleep(1.5)
            os.kill(n3, signal.SIGKILL)
    status, _, body = raw(deploy.port, "GET", "/mcp", None, {
        "Host": f"localhost:{deploy.port}", "Mcp-Session-Id": sid, "Last-Event-ID": "1-0",
        "Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    assert len(outcome) == 2 and not any("answered" in o for o in outcome.values()), outcome
    assert status == 404 and "start a new session" in body, (status, body)
    return f"the calls: {outcome}; a resumption GET through nginx: {status} {json.loads(body)['error']}"


async def stateless(deploy):
    recorder = Recorder()
    async with recorder.client() as hc, \
            streamable_http_client(deploy.url + "/mcp", http_client=hc) as (r, w), \
            ClientSession(r, w) as session:
        await session.initialize()
        pids = [int(text_of(await session.call_tool("whoami", {}))) for _ in range(12)]
    assert not recorder.session_ids, recorder.session_ids
    assert set(pids) == deploy.pids, f"12 calls on {len(set(pids))} of 3 processes"
    async with Client(deploy.url + "/mcp", mode=MODE, elicitation_callback=answer) as client:
        result = await client.call_tool("two_questions", {})
        assert not result.is_error, text_of(result)
    return f"handshake era, no session id: 12 calls over {sorted(set(map(deploy.node_of, pids)))}; " \
           f"2026-07-28 two rounds on {[deploy.node_of(int(p)) for p in text_of(result).split()]}"


def shipped_conf_is_written():
    """What deploy.py writes for ports 8001-8003 is what examples/nginx.conf shows (comments aside)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("deploy", DEPLOY)
    deploy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(deploy)
    with open(deploy.CONF, encoding="utf-8") as f:
        shipped = f.read().partition("# --- processes: begin")[2].partition("\n")[2]
    shipped = shipped.partition("# --- processes: end")[0]
    words = lambda text: re.sub(r"#[^\n]*", "", text).split()     # noqa: E731
    return words(shipped) == words(deploy.processes_block([8001, 8002, 8003]))


async def main():
    started = time.monotonic()
    report("examples/nginx.conf is what deploy.py writes", shipped_conf_is_written())
    with tempfile.TemporaryDirectory() as traces:
        deploy = Deploy("--allow-host", "mcp.example.com", f"--trace={traces}/{{node}}.jsonl")
        try:
            report("deploy.py --processes 3: nginx and three processes", True,
                   ", ".join(f"{n} pid {p}" for n, (p, _) in deploy.nodes.items()))
            await check("handshake era over Streamable HTTP", spread, deploy, streamable(deploy.url),
                        "Streamable HTTP")
            await check("handshake era over legacy SSE", spread, deploy, legacy(deploy.url), "legacy SSE")
            await check("2026-07-28 round robin, multi-round elicitation", modern_round_robin, deploy)
            await check("forwarded headers, Host/Origin, client address, /healthz", forwarded, deploy, traces)
            await check("SIGTERM to n2 under load: nothing accepted is lost", sigterm_under_load, deploy)
            await check("SIGKILL of n3 with calls in flight: resumption gets 404, no hang", sigkill_resume,
                        deploy)
        finally:
            code, rest, left, folder = deploy.stop()
        report("deploy.py stops everything on SIGTERM", code == 0 and not left and not folder,
               f"exit {code}, still running {left}, folder left {folder}")
    deploy = Deploy("--stateless")
    try:
        await check("--stateless: round robin", stateless, deploy)
    finally:
        code, rest, left, folder = deploy.stop()
    print(f"== deploy check: {len(FAILED)} failed, {time.monotonic() - started:.0f} s", flush=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
