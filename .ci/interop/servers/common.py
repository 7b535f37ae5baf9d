"""Shared helpers for the interop checks (Python side)."""
import os, signal, socket, subprocess, sys, time, json, urllib.request, urllib.error

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))          # repo root (.ci/interop/servers/../../..)
PEERS = os.environ.get("MCP_PEERS", os.path.join(ROOT, ".peers"))      # venv + node/ with the official clients
MAIN = os.path.join(ROOT, "mcp_min.py")
LOGDIR = os.environ.get("INTEROP_LOGDIR", os.path.join(ROOT, ".peers", "logs", "interop-servers"))
os.makedirs(LOGDIR, exist_ok=True)

RESULTS = []

def report(client, name, ok, detail=""):
    RESULTS.append((client, name, ok, detail))
    line = f"{'PASS' if ok else 'FAIL'} [{client}] {name}"
    if detail:
        line += f" -- {detail}"
    print(line, flush=True)

def watch_cmd(log):
    """The server command, wrapped by stdio_watch.py (wire log + exit watch)."""
    import shlex
    cmd = os.environ.get("INTEROP_SERVER_CMD")
    server = shlex.split(cmd) if cmd else ["python3", MAIN, "serve", "--stdio"]   # list: MAIN may contain spaces
    return sys.executable, [os.path.join(HERE, "stdio_watch.py"), log, "--", *server]

def read_watch(log):
    pid = eof = exit_ = None
    try:
        for line in open(log):
            p = line.split()
            if p and p[0] == "PID": pid = int(p[1])
            elif p and p[0] == "EOF": eof = float(p[1])
            elif p and p[0] == "EXIT": exit_ = (int(p[1]), float(p[2]))
    except FileNotFoundError:
        pass
    return pid, eof, exit_

def _alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for l in f:
                if l.startswith("State:"):
                    return "Z" not in l
    except FileNotFoundError:
        return False
    return True

def check_stdio_exit(log, limit=5.0):
    """(ok, detail): did the server exit on its own within `limit` s of stdin EOF?
    Kills (by pid) a server still alive after the limit."""
    t_start = time.time()
    while True:
        pid, eof, ex = read_watch(log)
        now = time.time()
        if pid and eof:
            if ex:
                dt = ex[1] - eof
                return dt <= limit, f"server exited rc={ex[0]} {dt:.2f}s after stdin EOF"
            if not _alive(pid):
                return now - eof <= limit, f"server gone {now-eof:.2f}s after stdin EOF (observed; wrapper was killed)"
            if now > eof + limit:
                os.kill(pid, signal.SIGKILL)
                return False, f"server (pid {pid}) still alive {now-eof:.1f}s after stdin EOF -> killed"
        elif now - t_start > limit + 3:
            if pid and _alive(pid):
                os.kill(pid, signal.SIGKILL)
            return False, "no PID in watch log" if pid is None else "client never closed the server's stdin (server killed)"
        time.sleep(0.05)

def free_port_ok(port):
    """True if nothing listens on 127.0.0.1:port (TIME_WAIT leftovers are fine: the server sets SO_REUSEADDR)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port)); return True
    except OSError:
        return False
    finally:
        s.close()

class HttpServer:
    """python3 mcp_min.py serve --port P [extra] with --trace to a log file
    (app: a script that calls server.run(), e.g. examples/everything.py, instead of `mcp_min.py serve`)."""
    def __init__(self, port, extra=(), name="http", app=None):
        self.port = port
        self.log = os.path.join(LOGDIR, f"server-{name}-{port}.log")
        head = ["python3", app] if app else ["python3", MAIN, "serve"]
        self.proc = subprocess.Popen([*head, "--port", str(port), "--trace", *extra],
                                     stdin=subprocess.DEVNULL, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close(); return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited rc={self.proc.returncode}, see {self.log}")
                time.sleep(0.05)
        raise RuntimeError("server did not start listening")
    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try: self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill(); self.proc.wait()

def raw_post(url, body, headers=None, timeout=5):
    """POST JSON; returns (status, headers, body_text). Never raises on HTTP errors."""
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
         "mcp-protocol-version": "2025-11-25"}
    h.update(headers or {})
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode(errors="replace")
