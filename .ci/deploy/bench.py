#!/usr/bin/env python3
"""Side by side through the same nginx (examples/nginx.conf): mcp_min with 1 and 3 processes
(examples/deploy.py) and the official Python SDK server with 1 process and 3 (stateless,
round robin: its session ids carry no routing key), measured by the shared harness
bench_mcp.py over Streamable HTTP, the targets interleaved round by round. Not run by CI.

    MCP_SHARED=../shared .peers/bin/python .ci/deploy/bench.py --rounds 5
    (the SDK targets need .peers/ with mcp==2.3.0; --no-sdk leaves them out)

Prints one line per run, then the medians as a table. Each run: -n sequential calls on one
session, then -c sessions at once, -k calls each, of getUser(name="John") -- the user store
every target serves (mcp_min: examples/user_store.py, SQLite; the SDK: a Python list).
"""
import argparse
import importlib.util
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("MCP_SHARED") or os.path.join(ROOT, "..", "shared")
spec = importlib.util.spec_from_file_location("deploy", os.path.join(ROOT, "examples", "deploy.py"))
deploy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(deploy)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"bench: {what} did not listen on {port}")


class McpMin:
    """examples/deploy.py, as a user runs it."""
    def __init__(self, processes, *extra):
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, deploy.__file__, "--port", str(self.port),
                                      "--processes", str(processes), "--", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.pids = []
        for line in self.proc.stdout:
            if line.startswith("deploy: n"):
                self.pids.append(int(line.split()[3]))
            if line.startswith("deploy: ready"):
                break
        else:
            raise SystemExit("bench: deploy.py did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


class Direct:
    """One mcp_min process without nginx: what nginx costs."""
    def __init__(self):
        self.port, self.folder = free_port(), tempfile.mkdtemp(prefix="mcp-bench-")
        server = os.path.join(ROOT, "examples", "user_store.py")
        env = dict(os.environ, USER_STORE_DB=os.path.join(self.folder, "users.db"))
        self.proc = subprocess.Popen([sys.executable, deploy.MCP_MIN, "serve", server, "--port",
                                      str(self.port)], env=env, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "mcp_min")
        self.pids = [self.proc.pid]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        shutil.rmtree(self.folder, ignore_errors=True)


class Sdk:
    """N processes of the shared bench's SDK server (bench/peers/sdk_server.py) behind nginx
    with examples/nginx.conf, as deploy.py writes it."""
    def __init__(self, processes, *extra):
        python = os.path.join(ROOT, ".peers", "bin", "python")
        server = os.path.join(SHARED, "bench", "peers", "sdk_server.py")
        self.prefix = tempfile.mkdtemp(prefix="mcp-bench-")
        os.chmod(self.prefix, 0o711)
        ports = [free_port() for _ in range(processes)]
        self.children = [subprocess.Popen([python, server, "http", "--port", str(p), "--json", *extra],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True) for p in ports]
        for port, child in zip(ports, self.children):
            wait_port(port, child, "the SDK server")
        self.pids = [child.pid for child in self.children]
        self.port = free_port()
        with open(deploy.CONF, encoding="utf-8") as f:
            conf = deploy.nginx_conf(f.read(), self.port, ports, self.prefix)
        with open(os.path.join(self.prefix, "mcp.conf"), "w", encoding="utf-8") as f:
            f.write(conf)
        with open(os.path.join(self.prefix, "nginx.conf"), "w", encoding="utf-8") as f:
            f.write(deploy.MAIN_CONF.format(prefix=self.prefix))
        self.nginx = subprocess.Popen([deploy.find_nginx(None), "-p", self.prefix, "-c",
                                       os.path.join(self.prefix, "nginx.conf"), "-e", "stderr"],
                                      stderr=subprocess.DEVNULL, start_new_session=True)
        wait_port(self.port, self.nginx, "nginx")

    def stop(self):
        for child in [self.nginx, *self.children]:
            child.send_signal(signal.SIGQUIT if child is self.nginx else signal.SIGTERM)
        for child in [self.nginx, *self.children]:
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)


def cpu_seconds(pids):
    """User + system CPU seconds of these processes so far (Linux /proc)."""
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("-n", type=int, default=500, help="sequential calls (default 500)")
    p.add_argument("-c", type=int, default=20, help="concurrent sessions (default 20)")
    p.add_argument("-k", type=int, default=100, help="calls per concurrent session (default 100)")
    p.add_argument("--no-sdk", action="store_true")
    a = p.parse_args()
    targets = {"mcp_min x1, direct": Direct, "mcp_min x1": lambda: McpMin(1),
               "mcp_min x3": lambda: McpMin(3)}
    if not a.no_sdk:
        targets.update({"SDK x1": lambda: Sdk(1), "SDK x3 stateless": lambda: Sdk(3, "--stateless")})
    started = {name: make() for name, make in targets.items()}
    results = {name: [] for name in targets}
    try:
        for r in range(a.rounds):
            for name, target in started.items():
                cpu = cpu_seconds(target.pids)
                command = [sys.executable, os.path.join(SHARED, "bench", "bench_mcp.py"), "--http",
                           f"http://127.0.0.1:{target.port}/mcp", "-n", str(a.n), "-c", str(a.c),
                           "-k", str(a.k), "--tool", "getUser", "--args", '{"name": "John"}']
                run = subprocess.run(command, capture_output=True, text=True, timeout=600)
                out = json.loads(run.stdout.strip().splitlines()[-1])
                out["server_cpu_s"] = cpu_seconds(target.pids) - cpu
                results[name].append(out)
                seq, conc = out["seq"], out["conc"]
                print(f"round {r + 1} {name:18} seq {seq['calls_per_s']:6.0f}/s "
                      f"p50 {seq['p50_us'] / 1e3:5.2f} ms | "
                      f"{a.c}x{a.k} {conc['calls_per_s']:6.0f}/s p50 {conc['p50_us'] / 1e3:6.2f} ms p99 "
                      f"{conc['p99_us'] / 1e3:6.2f} ms | errors {seq['errors'] + conc['errors']} | "
                      f"server CPU {out['server_cpu_s']:.1f} s", flush=True)
    finally:
        for target in started.values():
            target.stop()
    print(f"\nmedians of {a.rounds} interleaved rounds (nginx, the servers and the client share the cores)")
    print(f"| target | seq calls/s | seq p50 ms | {a.c}x{a.k} calls/s | p50 ms | p99 ms | errors "
          "| server CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in results.items():
        def med(*path):
            values = []
            for o in runs:
                for key in path:
                    o = o[key]
                values.append(o)
            return statistics.median(values)
        errors = sum(o["seq"]["errors"] + o["conc"]["errors"] for o in runs)
        print(f"| {name} | {med('seq', 'calls_per_s'):,.0f} | {med('seq', 'p50_us') / 1e3:.2f} | "
              f"{med('conc', 'calls_per_s'):,.0f} | {med('conc', 'p50_us') / 1e3:.2f} | "
              f"{med('conc', 'p99_us') / 1e3:.2f} | {errors} | {med('server_cpu_s'):.1f} |")


if __name__ == "__main__":
    main()
