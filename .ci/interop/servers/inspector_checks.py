#!/usr/bin/env python3
"""MCP Inspector CLI 0.15 (Node 20) checks: tools/list and tools/call over stdio, /sse and /mcp.
usage: inspector_checks.py stdio | sse URL | http URL"""
import json, os, subprocess, sys, time, uuid
from common import report, LOGDIR, check_stdio_exit, HERE, MAIN, PEERS

NODE_DIR = os.path.join(PEERS, "node")
kind = sys.argv[1]
url = sys.argv[2] if len(sys.argv) > 2 else None
C = f"inspector-cli 0.15 {kind}"
prefix = "i" + uuid.uuid4().hex[:6]

def run(method_args, log=None):
    if kind == "stdio":
        target = [sys.executable, os.path.join(HERE, "stdio_watch.py"), log, "python3", MAIN, "serve", "--stdio"]
    else:
        target = [url, "--transport", "sse" if kind == "sse" else "http"]
    cmd = ["npx", "--no-install", "mcp-inspector", "--cli", *target, *method_args]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=NODE_DIR, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as e:
        return None, "", f"timeout 60s", 60
    return p.returncode, p.stdout, p.stderr, time.time() - t0

def parsed(out):
    try: return json.loads(out)
    except Exception: return None

def case(name, args, judge):
    log = None
    if kind == "stdio":
        log = os.path.join(LOGDIR, f"inspector-stdio-{name.split()[0].replace('/', '_')}.wire.log"); open(log, "w").close()
    rc, out, err, dt = run(args, log)
    j = parsed(out)
    try:
        ok, detail = judge(rc, j, out)
    except Exception as e:
        ok, detail = False, f"{type(e).__name__}: {e}"
    if not ok:
        detail += f" | rc={rc} stdout={out[:300]!r} stderr={err.strip()[-400:]!r}"
    report(C, name, ok, f"{detail} ({dt:.1f}s)")
    if log:
        ok2, d2 = check_stdio_exit(log)
        report(C, f"{name}: server exits <=5s after CLI closes stdin", ok2, d2)

def texts(j):
    return "\n".join(c.get("text", "") for c in j.get("content", [])) + json.dumps(j.get("structuredContent"))

case("tools/list", ["--method", "tools/list"],
     lambda rc, j, o: (rc == 0 and j and {"getUsers", "addUser", "getUser", "deleteUser"} <= {t["name"] for t in j["tools"]},
                       ",".join(t["name"] for t in (j or {}).get("tools", []))))
case("tools/call getUsers", ["--method", "tools/call", "--tool-name", "getUsers"],
     lambda rc, j, o: (rc == 0 and j and not j.get("isError") and "John" in texts(j), texts(j or {})[:100]))
n = prefix + "add"
case("tools/call addUser (string args)", ["--method", "tools/call", "--tool-name", "addUser", "--tool-arg", f"name={n}", "--tool-arg", f"email={n}@example.com"],
     lambda rc, j, o: (rc == 0 and j and not j.get("isError") and f"Added {n}" in texts(j), texts(j or {})[:100]))
if kind != "stdio":   # state persists across CLI runs only on a long-lived HTTP server
    case("tools/call getUser sees added user", ["--method", "tools/call", "--tool-name", "getUser", "--tool-arg", f"name={n}"],
         lambda rc, j, o: (rc == 0 and j and not j.get("isError") and f"{n}@example.com" in texts(j), texts(j or {})[:100]))
case("tools/call getUser missing arg -> isError", ["--method", "tools/call", "--tool-name", "getUser"],
     lambda rc, j, o: (bool(j) and j.get("isError") is True, texts(j or {})[:100]))
case("tools/call unknown tool -> error", ["--method", "tools/call", "--tool-name", "noSuchTool"],
     lambda rc, j, o: (rc != 0 or bool(j and j.get("isError")), f"rc={rc}"))
