"""Several processes of a server behind stock nginx, on this machine, in the foreground: what
examples/nginx.conf describes, with the ports filled in, to try before deploying it.

    python3 examples/deploy.py --port 8080 --processes 3
    python3 mcp_min.py client http://localhost:8080/mcp tools/call getUsers

It starts N processes of examples/user_store.py (`mcp_min.py serve`, each on a free port of
127.0.0.1, named n1..nN with --node, sharing one MCP_MIN_STATE_KEY and one users database),
then nginx listening on 127.0.0.1:PORT with examples/nginx.conf, its files in a temporary
folder: no root needed. Ctrl-C or SIGTERM stops nginx and every process (work in flight gets
serve's --shutdown-grace), then removes the folder. Options after "--" go to every process,
with {node} in them replaced by its name:

    python3 examples/deploy.py --port 8080 --processes 2 -- --stateless
    python3 examples/deploy.py --port 8080 --server examples/everything.py -- --trace={node}.jsonl

With --task-store the processes keep their tasks there: a SQLite file shares them on this machine;
redis://[:PASSWORD@]HOST:PORT/DB (rediss:// for TLS) across machines, and through it each process
hears the others' changes (a resource updated on one reaches the listens and subscriptions held on
every other). Redis is the recipe for several machines (see examples/nginx.conf and the README):

    python3 examples/deploy.py --port 8080 --server examples/everything.py \
        --task-store redis://127.0.0.1:6379/0

Needs nginx (Debian: apt-get install nginx); --nginx PATH if it is not in PATH or /usr/sbin.
"""
import argparse
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MCP_MIN = os.path.join(HERE, "..", "mcp_min.py")
CONF = os.path.join(HERE, "nginx.conf")
START_TIMEOUT = 20.0    # seconds a process or nginx gets to start listening


def processes_block(ports):
    """What examples/nginx.conf has between its "processes" lines, for these ports (n1 on the first)."""
    lines = []
    for i, port in enumerate(ports, 1):
        others = [p for p in ports if p != port]
        lines += [f"upstream mcp_n{i} {{", f"    server 127.0.0.1:{port} max_fails=0;",
                  *(f"    server 127.0.0.1:{p} backup;" for p in others),
                  "    keepalive 8;", "    keepalive_timeout 10s;", "}"]
    lines += ["upstream mcp_any {", *(f"    server 127.0.0.1:{p};" for p in ports),
              "    keepalive 32;", "    keepalive_timeout 10s;", "}",
              "map $http_mcp_session_id$arg_sessionId $mcp_upstream {", "    default   mcp_any;",
              *(f"    ~^n{i}\\.    mcp_n{i};" for i in range(1, len(ports) + 1)), "}"]
    return "\n".join(lines) + "\n"


def nginx_conf(template, port, ports, logs):
    """examples/nginx.conf for `ports`, listening on 127.0.0.1:`port`, logging into `logs`."""
    head, begin, rest = template.partition("# --- processes: begin")
    _, end, tail = rest.partition("# --- processes: end")
    listen = "listen 127.0.0.1:8080;"
    if not (begin and end and listen in tail and "/var/log/nginx/" in tail):
        raise SystemExit(f"deploy: {CONF} has lost the lines this script fills in")
    tail = tail.replace(listen, f"listen 127.0.0.1:{port};").replace("/var/log/nginx/", logs + os.sep)
    return f"{head}{begin} (written by examples/deploy.py)\n{processes_block(ports)}{end}{tail}"


MAIN_CONF = """\
# Written by examples/deploy.py: nginx's own files in {prefix}, nothing outside it.
daemon off;                     # deploy.py is the supervisor: nginx stays in the foreground
worker_processes auto;
pid {prefix}/nginx.pid;
error_log stderr warn;
worker_shutdown_timeout 10s;    # on stop, SSE streams still open after this are cut
events {{
    worker_connections 1024;    # a stream holds two: the client's and the process's
}}
http {{
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    access_log off;             # mcp.conf's server has its own
    include {prefix}/mcp.conf;
}}
"""


def find_nginx(given):
    path = given or shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if not path:
        raise SystemExit("deploy: nginx not found (Debian: apt-get install nginx; else --nginx PATH)")
    return path


def forward(name, stream):
    """A child's stderr onto ours, each line marked with whose it is."""
    for line in stream:
        sys.stderr.write(f"[{name}] {line}")
    stream.close()


def start_process(name, target, env, extra):
    """`mcp_min.py serve TARGET --node NAME` on a free port: (process, port)."""
    command = [sys.executable, MCP_MIN, "serve", target, "--port", "0", "--node", name,
               "--forwarded-allow-ips", "127.0.0.1", *(option.replace("{node}", name) for option in extra)]
    # Its own session: a Ctrl-C in the terminal reaches deploy.py alone, which passes one signal on.
    proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    for line in proc.stderr:
        sys.stderr.write(f"[{name}] {line}")
        if (found := re.search(r"serving MCP on http://127\.0\.0\.1:(\d+)/", line)):
            threading.Thread(target=forward, args=(name, proc.stderr), daemon=True).start()
            return proc, int(found.group(1))
    raise SystemExit(f"deploy: {name} exited before it listened (code {proc.wait()})")


def wait_listening(port, proc):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True, help="nginx listens on 127.0.0.1:PORT")
    p.add_argument("--processes", type=int, default=3, metavar="N", help="how many (default 3)")
    p.add_argument("--server", default=os.path.join(HERE, "user_store.py"), metavar="TARGET",
                   help="what each process serves, as `mcp_min.py serve TARGET` takes it "
                        "(default examples/user_store.py)")
    p.add_argument("--nginx", metavar="PATH", help="the nginx binary (default: from PATH, or /usr/sbin)")
    p.add_argument("--task-store", metavar="FILE|URL",
                   help="where every process keeps its tasks: a SQLite file, or redis://... (default: "
                        "each its own, in memory)")
    p.add_argument("extra", nargs="*", metavar="-- SERVE_OPTIONS", help="passed to every process")
    args = p.parse_args(argv)
    if not 1 <= args.processes <= 64:
        p.error("--processes: 1 to 64")
    nginx = find_nginx(args.nginx)
    if args.task_store:     # each process gets it, as serve's option
        args.extra = ["--task-store", args.task_store, *args.extra]

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    prefix = tempfile.mkdtemp(prefix="mcp-deploy-")
    if os.geteuid() == 0:
        os.chmod(prefix, 0o711)     # nginx's workers run as nobody: they must reach their temp folders
    # One key for all: a 2026-07-28 request's later rounds may reach any process.
    env = dict(os.environ, MCP_MIN_STATE_KEY=os.environ.get("MCP_MIN_STATE_KEY") or secrets.token_urlsafe(32),
               USER_STORE_DB=os.environ.get("USER_STORE_DB") or os.path.join(prefix, "users.db"))
    children = {}   # name -> Popen
    code = 0
    try:
        ports = []
        for i in range(1, args.processes + 1):
            proc, port = start_process(f"n{i}", args.server, env, args.extra)
            children[f"n{i}"] = proc
            ports.append(port)
            print(f"deploy: n{i} pid {proc.pid} on 127.0.0.1:{port}", flush=True)
        with open(CONF, encoding="utf-8") as f:
            conf = nginx_conf(f.read(), args.port, ports, prefix)
        with open(os.path.join(prefix, "mcp.conf"), "w", encoding="utf-8") as f:
            f.write(conf)
        with open(os.path.join(prefix, "nginx.conf"), "w", encoding="utf-8") as f:
            f.write(MAIN_CONF.format(prefix=prefix))
        command = [nginx, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf"), "-e", "stderr"]
        proxy = children["nginx"] = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                                     start_new_session=True)
        if not wait_listening(args.port, proxy):
            raise SystemExit(f"deploy: nginx did not listen on 127.0.0.1:{args.port} (see above)")
        print(f"deploy: nginx pid {proxy.pid} on http://127.0.0.1:{args.port}/mcp (legacy SSE: /sse), "
              f"files in {prefix}", flush=True)
        print("deploy: ready; Ctrl-C stops everything", flush=True)
        gone = set()
        while not stop.wait(0.2):
            for name, child in children.items():
                if name not in gone and child.poll() is not None:
                    gone.add(name)
                    print(f"deploy: {name} exited with code {child.returncode}", flush=True)
            if proxy.poll() is not None:
                code = 1
                break
    except SystemExit as e:
        print(e, file=sys.stderr)
        code = 1
    finally:
        # nginx stops taking connections and finishes what it carries; each process finishes its
        # work in flight (its --shutdown-grace) and ends its streams.
        for name, child in children.items():
            if child.poll() is None:
                child.send_signal(signal.SIGQUIT if name == "nginx" else signal.SIGTERM)
        deadline = time.monotonic() + 30
        for child in children.values():
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        shutil.rmtree(prefix, ignore_errors=True)
    print("deploy: stopped", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
