#!/usr/bin/env bash
# Interop checks: official MCP clients (Python SDK 2.x, TS SDK 1.x, Inspector CLI 0.15) vs the repo's mcp_min.py.
# usage: bash .ci/interop/servers/run_all.sh [--no-extras]        (from the repo root; any cwd works)
# Peers (venv + node/) come from $MCP_PEERS, default <repo>/.peers (see ../README.md for the install).
# Prints PASS/FAIL/SKIP per check; server traces and stdio wire logs go to <repo>/.peers/logs/interop-servers/.
# Ports used: 18101-18104 (py), 18111-18112 (ts), 18121-18122 (inspector), 18131-18134 (extras),
# 18141-18142 (py pinned to 2026-07-28 vs examples/everything.py), 18151-18154 (py resumption: servers + relays),
# 18161 (py OAuth sign-in).
set -u
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ inside .ci/
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
PEERS="${MCP_PEERS:-$ROOT/.peers}"
export MCP_PEERS="$PEERS"
cd "$HERE"
PY="$PEERS/bin/python"
export INTEROP_LOGDIR="$ROOT/.peers/logs/interop-servers"
rm -rf "$INTEROP_LOGDIR"; mkdir -p "$INTEROP_LOGDIR"
OUT="$INTEROP_LOGDIR/summary.txt"
EXTRAS=1; [ "${1:-}" = "--no-extras" ] && EXTRAS=0

for p in 18101 18102 18103 18104 18111 18112 18121 18122 18131 18132 18133 18134 18141 18142 18151 18152 18153 18154 18161; do
  if ! "$PY" -c "import sys; from common import free_port_ok; sys.exit(0 if free_port_ok($p) else 1)"; then
    echo "port $p is busy; stop whatever is on it first" >&2; exit 2
  fi
done

run() { echo "== $*" ; "$@" 2>&1 | grep -v "^\s*$" ; }
{
  echo "### 1. Python SDK $("$PY" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
  run timeout 120 "$PY" py_checks.py cs-stdio
  run timeout 120 "$PY" py_checks.py client-stdio
  run "$PY" with_server.py 18101 py-sse        -- "$PY" py_checks.py cs-sse       '{URL}/sse'
  run "$PY" with_server.py 18102 py-http       -- "$PY" py_checks.py cs-http      '{URL}/mcp'
  run "$PY" with_server.py 18103 py-client     -- "$PY" py_checks.py client-http  '{URL}/mcp'
  run "$PY" with_server.py 18104 py-two        -- "$PY" py_checks.py two-sessions '{URL}/mcp'

  echo "### 1b. Python SDK mcp.Client pinned to 2026-07-28 vs examples/everything.py (MRTR, subscriptions/listen)"
  run timeout 120 "$PY" py_modern_checks.py stdio
  run "$PY" with_server.py 18141 py-modern-http --app=examples/everything.py -- "$PY" py_modern_checks.py http '{URL}/mcp'

  echo "### 1c. Python SDK ClientSession resuming SSE streams (2025-11-25, SEP-1699): test_reconnection; a POST cut by a relay"
  if [ -x "$PY" ] && "$PY" -c 'import mcp' 2>/dev/null; then
    T1="$INTEROP_LOGDIR/py-resume-18151.trace.jsonl"; T2="$INTEROP_LOGDIR/py-resume-cut-18153.trace.jsonl"
    run "$PY" with_server.py 18151 py-resume --app=examples/everything.py --trace="$T1" -- "$PY" py_resume_checks.py reconnect '{URL}/mcp' 18152 "$T1"
    run "$PY" with_server.py 18153 py-resume-cut --app=.ci/interop/servers/resume_server.py --trace="$T2" -- "$PY" py_resume_checks.py cut '{URL}/mcp' 18154 "$T2"
  else
    echo "SKIP [py resume] resumption checks -- no Python SDK (mcp) in $PEERS (see ../README.md for the install)"
  fi

  echo "### 1d. Python SDK OAuthClientProvider signs in to serve --auth-server (issue 14)"
  if [ -x "$PY" ]; then run timeout 120 "$PY" oauth_checks.py 18161
  else echo "SKIP [py OAuthClientProvider] no venv at $PEERS"; fi

  echo "### 2. TS SDK $(node -p 'require(process.argv[1] + "/node/node_modules/@modelcontextprotocol/sdk/package.json").version' "$PEERS") (node $(node --version))"
  run timeout 120 node ts_checks.mjs stdio
  run "$PY" with_server.py 18111 ts-sse  -- node ts_checks.mjs sse  '{URL}/sse'
  run "$PY" with_server.py 18112 ts-http -- node ts_checks.mjs http '{URL}/mcp'

  echo "### 3. MCP Inspector CLI 0.15"
  run timeout 300 "$PY" inspector_checks.py stdio
  run "$PY" with_server.py 18121 insp-sse  -- "$PY" inspector_checks.py sse  '{URL}/sse'
  run "$PY" with_server.py 18122 insp-http -- "$PY" inspector_checks.py http '{URL}/mcp'

  if [ $EXTRAS = 1 ]; then
    echo "### extras: server modes --json-response and --stateless (and 2026-07-28 with --json-response)"
    run "$PY" with_server.py 18131 py-json --json-response -- "$PY" py_checks.py cs-http '{URL}/mcp'
    run "$PY" with_server.py 18132 ts-json --json-response -- node ts_checks.mjs http '{URL}/mcp'
    INTEROP_STATELESS=1 run "$PY" with_server.py 18133 py-stateless --stateless -- "$PY" py_checks.py client-http '{URL}/mcp'
    INTEROP_STATELESS=1 run "$PY" with_server.py 18134 ts-stateless --stateless -- node ts_checks.mjs http '{URL}/mcp'
    run "$PY" with_server.py 18142 py-modern-json --app=examples/everything.py --json-response -- "$PY" py_modern_checks.py http '{URL}/mcp'
  fi
} | tee "$OUT"

pass=$(grep -c '^PASS' "$OUT"); fail=$(grep -c '^FAIL' "$OUT"); skip=$(grep -c '^SKIP' "$OUT")
echo "=== total: $pass PASS, $fail FAIL, $skip SKIP  (log: $OUT)"
[ "$fail" = 0 ]
