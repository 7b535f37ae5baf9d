#!/usr/bin/env bash
# OUR client (mcp_min.Client + `mcp_min.py client` CLI) against OFFICIAL servers:
#   server-everything (TS SDK 1.x) stdio / sse / streamableHttp, and an official Python SDK 2.x
#   MCPServer (sdk_full_server.py) stdio / sse / streamable-http.
# usage: bash .ci/interop/client/run_all.sh [everything] [sdk] [cli] [robust]   (default: all; any cwd works)
# Peers (venv + node/) come from $MCP_PEERS, default <repo>/.peers; loopback.cjs from $MCP_SHARED/conformance,
# default <repo>/../shared (see ../README.md).
# Prints PASS/FAIL per check (+ the tail of the client's wire trace for each FAIL); summary in
# <repo>/.peers/logs/interop-client/summary.txt; client traces <check>.jsonl (Client(trace=FILE)) and
# server output server-*.log in the same folder.
# Ports: 18201-18224 (checks.py PORTS). Every server is started and stopped (by pid) by the scripts.
set -u
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ inside .ci/
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
PEERS="${MCP_PEERS:-$ROOT/.peers}"
export MCP_PEERS="$PEERS"
export MCP_SHARED="${MCP_SHARED:-$ROOT/../shared}"
LOGS="$ROOT/.peers/logs/interop-client"
cd "$HERE"
rm -rf "$LOGS"; mkdir -p "$LOGS"
OUT="$LOGS/summary.txt"
{
  echo "### client_interop $(date -Is)  mcp_min=$(python3 "$ROOT/mcp_min.py" --version 2>&1)  python3=$(python3 -V 2>&1)"
  echo "### peers: server-everything $(node -p 'require(process.argv[1] + "/node/node_modules/@modelcontextprotocol/server-everything/package.json").version' "$PEERS"), mcp $("$PEERS/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
  timeout 600 python3 checks.py "$@" 2>&1 | grep -v '^Starting default (STDIO) server'
  exit ${PIPESTATUS[0]}
} | tee "$OUT"
rc=${PIPESTATUS[0]}
echo "=== log: $OUT"
exit $rc
