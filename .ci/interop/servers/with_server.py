#!/usr/bin/env python3
"""Start mcp_min.py serve --port PORT --trace [flags] (trace -> $INTEROP_LOGDIR, default .peers/logs/interop-servers/), run CMD, stop the server.
usage: with_server.py PORT NAME [server flags...] -- CMD ARGS...   ({URL} in CMD -> http://127.0.0.1:PORT)"""
import subprocess, sys
from common import HttpServer
i = sys.argv.index("--")
port, name, extra, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:i], sys.argv[i + 1:]
cmd = [c.replace("{URL}", f"http://127.0.0.1:{port}") for c in cmd]
srv = HttpServer(port, extra, name=name)
rc = 1
try:
    rc = subprocess.call(cmd, timeout=300)
except subprocess.TimeoutExpired:
    print(f"FAIL [{name}] harness timeout (300s)")
finally:
    srv.stop()
print(f"(server trace: {srv.log})", flush=True)
sys.exit(rc)
