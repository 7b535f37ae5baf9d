#!/usr/bin/env python3
"""Start mcp_min.py serve --port PORT --trace [flags] (trace -> $INTEROP_LOGDIR, default .peers/logs/interop-servers/), run CMD, stop the server.
usage: with_server.py PORT NAME [--app=SCRIPT] [server flags...] -- CMD ARGS...   ({URL} in CMD -> http://127.0.0.1:PORT)
--app=SCRIPT (path relative to the repo root, e.g. examples/everything.py): run `python3 SCRIPT --port PORT --trace [flags]`
instead of `mcp_min.py serve` (a script ending in server.run())."""
import os, subprocess, sys
from common import HttpServer, ROOT
i = sys.argv.index("--")
port, name, extra, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:i], sys.argv[i + 1:]
app = next((os.path.join(ROOT, x.split("=", 1)[1]) for x in extra if x.startswith("--app=")), None)
extra = [x for x in extra if not x.startswith("--app=")]
cmd = [c.replace("{URL}", f"http://127.0.0.1:{port}") for c in cmd]
srv = HttpServer(port, extra, name=name, app=app)
rc = 1
try:
    rc = subprocess.call(cmd, timeout=300)
except subprocess.TimeoutExpired:
    print(f"FAIL [{name}] harness timeout (300s)")
finally:
    srv.stop()
print(f"(server trace: {srv.log})", flush=True)
sys.exit(rc)
