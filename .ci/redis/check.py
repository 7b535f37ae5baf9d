#!/usr/bin/env python3
"""CI (issue 42): three mcp_min processes sharing one real redis-server (--task-store redis://),
each on its own port with --node, checked with our client and raw 2026-07-28 requests.

    python3 .ci/redis/check.py              # .ci/run runs it; standard library only
    python3 .ci/redis/check.py --figures    # then the figures: tasks/get per second, memory

Needs redis-server (Debian: apt-get install redis-server; .ci/run installs it when absent): one
"SKIP" line and exit 0 without it. One line a check, PASS or FAIL; exit 1 on any FAIL.
  1. a task started on n1 is working on n2 (raw tasks/get) and completed, with its result, on n3
     (our Client);
  2. a listen on n2 (2026-07-28, raw) and a subscription on n1 (2025-11-25, our Client) hear of a
     resource a tool on n3 updated, once each and in order;
  3. hostile task ids (Redis metacharacters) are unknown tasks, nothing more;
  4. n1 killed (SIGKILL) mid-task: n2 says failed within 20 s;
  5. redis-server stopped: a clear error naming the store (never its password), the process up
     and serving what needs no store; started again: the first task is still there.
"""
import asyncio
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
import mcp_min      # noqa: E402

SERVER = os.path.join(HERE, "server.py")
PASSWORD = "ci-" + secrets.token_hex(8) + ":@/"     # URL metacharacters, %-encoded in the URL
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
DEATH_BOUND = 20.0      # seconds from a node's death to its tasks failing elsewhere (issue 42)
FAILED = []


def report(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f" -- {detail}" if detail else ""), flush=True)
    if not ok:
        FAILED.append(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """redis-server on a free port of 127.0.0.1, with a password and AOF (fsync always)."""

    def __init__(self):
        self.dir, self.port = tempfile.mkdtemp(prefix="mcp-redis-"), free_port()
        self.url = f"redis://:{quote(PASSWORD, safe='')}@127.0.0.1:{self.port}/0"
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", self.dir,
             "--requirepass", PASSWORD, "--logfile", os.path.join(self.dir, "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                self.command("PING")
                return
            except (OSError, mcp_min.McpError):
                time.sleep(0.05)
        raise SystemExit("redis-server did not start")

    def command(self, *args):
        conn = mcp_min._Resp(mcp_min._RedisUrl(self.url))
        try:
            return conn.call(*args)
        finally:
            conn.close()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(20)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Node:
    """`mcp_min.py serve .ci/redis/server.py --port 0 --node NAME --task-store URL`."""

    def __init__(self, name, store, env):
        self.name = name
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"mcp-{name}-", suffix=".log")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "mcp_min.py"), "serve", SERVER, "--port", "0",
             "--node", name, "--task-store", store],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 20
        while not (found := re.search(r"http://127\.0\.0\.1:(\d+)/mcp", self.logged())):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{name} did not listen: {self.logged()}")
            time.sleep(0.05)
        self.port = int(found.group(1))
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def logged(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def post(self, id_, method, params, timeout=30):
        """A raw 2026-07-28 request: its answer (JSON, or the last message of an SSE stream)."""
        params = dict(params, _meta={"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                     "io.modelcontextprotocol/clientCapabilities": TASKS})
        body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        headers = {"Content-Type": "application/json", "MCP-Protocol-Version": "2026-07-28",
                   "Accept": "application/json, text/event-stream", "Mcp-Method": method}
        if "name" in params or "taskId" in params:
            # what a header cannot carry goes base64 (PROTOCOL.md: =?base64?...?=)
            headers["Mcp-Name"] = mcp_min._header_value(str(params.get("name", params.get("taskId"))))
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("POST", "/mcp", body.encode(), headers)
            response = conn.getresponse()
            data = response.read().decode()
        finally:
            conn.close()
        if response.getheader("Content-Type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in data.splitlines() if line.startswith("data:")][-1]
        return json.loads(data)

    def healthy(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status == 200
        finally:
            conn.close()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Listen:
    """A raw 2026-07-28 subscriptions/listen on `node`, read as SSE."""

    def __init__(self, node, uris):
        self.sock = socket.create_connection(("127.0.0.1", node.port), 30)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
            "notifications": {"resourceSubscriptions": uris},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
        self.sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            b"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        self.buffer = b""
        self.ack = self.next()

    def next(self):
        """The next message on the stream (SSE data), within the socket's timeout."""
        while True:
            found = re.search(rb"(?m)^data: ?(.*)\r?\n", self.buffer)
            if found:
                self.buffer = self.buffer[found.end():]
                return json.loads(found.group(1))
            data = self.sock.recv(65536)
            if not data:
                raise AssertionError("the listen's stream ended")
            self.buffer += data


def task_status(node, task_id, want, bound, id_=100):
    """Polls tasks/get on `node` until the task is `want`: (the task, seconds it took)."""
    started = time.monotonic()
    while True:
        task = node.post(id_, "tasks/get", {"taskId": task_id})
        if task.get("result", {}).get("status") == want:
            return task["result"], time.monotonic() - started
        if time.monotonic() - started > bound:
            raise AssertionError(f"not {want} within {bound} s: {task}")
        time.sleep(0.1)


async def completed_with_our_client(node, task_id):
    client = mcp_min.Client(node.url, era="2026-07-28")
    async with client:
        handle = mcp_min.TaskHandle(client, {"resultType": "task", "taskId": task_id,
                                             "status": "working", "pollIntervalMs": 100})
        return await handle.result(30)


async def subscribe_with_our_client(node, uris, heard, ready):
    client = mcp_min.Client(node.url, era="handshake",
                            on_notification=lambda method, params: heard.append((method, params)))
    async with client:
        for uri in uris:
            await client.subscribe(uri)
        ready.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass


def main():
    if not shutil.which("redis-server"):
        print("!! SKIP the Redis check (.ci/redis): redis-server is not installed", flush=True)
        return 0
    figures = "--figures" in sys.argv
    redis = Redis()
    env = dict(os.environ, MCP_MIN_STATE_KEY=secrets.token_urlsafe(32), PYTHONPATH=ROOT)
    nodes = []
    try:
        n1, n2, n3 = nodes = [Node(f"n{i}", redis.url, env) for i in (1, 2, 3)]
        # 1. A task across the three nodes.
        made = n1.post(1, "tools/call", {"name": "wait", "arguments": {"seconds": 1.5}})["result"]
        task_id = made["taskId"]
        seen = n2.post(2, "tasks/get", {"taskId": task_id})["result"]["status"]
        result = asyncio.run(completed_with_our_client(n3, task_id))
        text = result["content"][0]["text"]
        report("a task started on n1 is working on n2 and completed, with its result, on n3",
               made["resultType"] == "task" and seen == "working"
               and text == f"waited 1.5 s in {n1.proc.pid}", f"n2 saw {seen}; n3: {text!r}")

        # 2. Changes across nodes.
        listen = Listen(n2, ["note://board", "note://end"])
        heard, ready = [], __import__("threading").Event()
        loop = asyncio.new_event_loop()
        subscribing = loop.create_task(subscribe_with_our_client(n1, ["note://board", "note://end"], heard,
                                                                  ready))
        thread = __import__("threading").Thread(target=loop.run_until_complete, args=(subscribing,),
                                                daemon=True)
        thread.start()
        ready.wait(30)
        n3.post(3, "tools/call", {"name": "touch", "arguments": {"uri": "note://other"}})
        for i in range(3):
            n3.post(4 + i, "tools/call", {"name": "touch", "arguments": {"uri": "note://board"}})
        n3.post(7, "tools/call", {"name": "touch", "arguments": {"uri": "note://end"}})  # the last
        got = [listen.next()]
        while got[-1]["params"]["uri"] != "note://end":
            got.append(listen.next())
        uris = [message["params"]["uri"] for message in got]
        deadline = time.monotonic() + 10
        while ("notifications/resources/updated", {"uri": "note://end"}) not in heard:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        want = ["note://board"] * 3 + ["note://end"]
        report("a listen on n2 hears notifications/resources/updated for a URI a tool on n3 "
               "updated, once each, in order",
               listen.ack["method"] == "notifications/subscriptions/acknowledged" and uris == want
               and all(m["method"] == "notifications/resources/updated" for m in got), f"{uris}")
        report("a 2025-11-25 subscription on n1 hears it too, once each, in order",
               heard == [("notifications/resources/updated", {"uri": uri}) for uri in want],
               f"{[params['uri'] for _, params in heard]}")

        # 3. Hostile ids: data to Redis, never commands; unknown tasks to the caller.
        hostile = ["*1\r\n$8\r\nFLUSHALL\r\n", "x\" '; EVAL", "\x00" * 10, "{" + "a" * 62 + "}"]
        answers = [n2.post(20 + i, "tasks/get", {"taskId": bad}) for i, bad in enumerate(hostile)]
        still = n3.post(30, "tasks/get", {"taskId": task_id}).get("result", {}).get("status")
        report("task ids with Redis metacharacters are unknown tasks, and nothing else happens",
               all(a.get("error", {}).get("code") == mcp_min.INVALID_PARAMS for a in answers)
               and still == "completed", f"{[a.get('error', {}).get('message') for a in answers]}")

        # 4. A node's death.
        orphan = n1.post(40, "tools/call", {"name": "wait", "arguments": {"seconds": 600}})["result"]
        os.kill(n1.proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        n1.proc.wait()
        failed, _ = task_status(n2, orphan["taskId"], "failed", DEATH_BOUND + 5)
        died_in = time.monotonic() - killed
        report(f"n1 killed mid-task: n2 says failed within {DEATH_BOUND:g} s",
               died_in <= DEATH_BOUND and failed["error"]["code"] == mcp_min.INTERNAL_ERROR,
               f"{died_in:.1f} s: {failed['statusMessage']!r}")

        # 5. Redis stopped, then started again.
        redis.stop()
        lost = n2.post(50, "tasks/get", {"taskId": task_id})
        message = lost.get("error", {}).get("message", "")
        call = n3.post(51, "tools/call", {"name": "wait", "arguments": {"seconds": 5}})
        touched = n2.post(52, "tools/call", {"name": "touch", "arguments": {"uri": "note://x"}})
        report("redis-server stopped: a clear error naming the store, the process up",
               message.startswith(f"The task store redis://127.0.0.1:{redis.port}/0 is unreachable")
               and "The task store" in call.get("error", {}).get("message", "")
               and PASSWORD not in json.dumps([lost, call]) and n2.healthy()
               and "touched" in touched["result"]["content"][0]["text"], message)
        redis.start()
        again, back_in = task_status(n2, task_id, "completed", 15)
        report("redis-server started again: the first task is still there, no restart",
               again["result"]["content"][0]["text"] == text, f"answered again after {back_in:.1f} s")
        logs = "".join(node.logged() for node in nodes)
        report("the password is in no log", PASSWORD not in logs and quote(PASSWORD, safe="") not in logs)
        if figures:
            print_figures(redis, nodes[1:], died_in)
        loop.call_soon_threadsafe(subscribing.cancel)
    finally:
        for node in nodes:
            node.close()
        redis.close()
    if FAILED:
        print(f"!! {len(FAILED)} Redis check(s) failed", flush=True)
        return 1
    return 0


def gets_per_second(nodes, task_ids, seconds=3.0, clients=4):
    """tasks/get per second over keep-alive connections, `clients` threads spread over `nodes`."""
    import threading
    counts = [0] * clients
    stop = time.monotonic() + seconds

    def run(i):
        node = nodes[i % len(nodes)]
        conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=30)
        for n in range(1 << 30):
            task_id = task_ids[n % len(task_ids)]
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tasks/get", "params": {
                "taskId": task_id, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                             "io.modelcontextprotocol/clientCapabilities": TASKS}}})
            conn.request("POST", "/mcp", body.encode(), {
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get", "Mcp-Name": task_id})
            answer = conn.getresponse().read()
            if b'"status"' not in answer:
                raise AssertionError(answer[:300])
            counts[i] += 1
            if time.monotonic() > stop:
                break
        conn.close()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / seconds


def print_figures(redis, nodes, died_in):
    """The issue's figures, measured here (short runs, on whatever this machine is)."""
    before = int(re.search(rb"used_memory:(\d+)", redis.command("INFO", "memory")).group(1))
    ids = [nodes[0].post(200 + i, "tools/call", {"name": "wait", "arguments": {"seconds": 0.6}})
           ["result"]["taskId"] for i in range(200)]
    task_status(nodes[0], ids[-1], "completed", 30)
    after = int(re.search(rb"used_memory:(\d+)", redis.command("INFO", "memory")).group(1))
    print(f"FIGURE Redis memory per task (INFO memory, 200 completed tasks): "
          f"{(after - before) / 200:.0f} bytes", flush=True)
    print(f"FIGURE tasks/get per second, one node (Redis): {gets_per_second(nodes[:1], ids):.0f}",
          flush=True)
    env = dict(os.environ, PYTHONPATH=ROOT)
    nodes = [*nodes, Node("n4", redis.url, env)]    # three again (n1 was killed)
    try:
        print(f"FIGURE tasks/get per second, across {len(nodes)} nodes (Redis): "
              f"{gets_per_second(nodes, ids, clients=6):.0f}", flush=True)
    finally:
        nodes[-1].close()
    tmp = tempfile.mkdtemp()
    try:
        lite = Node("s1", os.path.join(tmp, "tasks.db"), env)
        try:
            lite_ids = [lite.post(400 + i, "tools/call", {"name": "wait", "arguments": {
                "seconds": 0.6}})["result"]["taskId"] for i in range(50)]
            task_status(lite, lite_ids[-1], "completed", 30)
            print(f"FIGURE tasks/get per second, one node (SQLite file): "
                  f"{gets_per_second([lite], lite_ids):.0f}", flush=True)
        finally:
            lite.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"FIGURE from a node's SIGKILL to its task read failed on another: {died_in:.1f} s",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
