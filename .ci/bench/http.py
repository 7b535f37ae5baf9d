"""HTTP side by side: mcp_min (/mcp and /sse), the stdlib floor, the official SDK.

Rounds are interleaved; medians are printed, then ratios with the project's goals in parentheses
(harness.GOALS, printed above them, says what they mean). Each run: cold start (spawn -> initialize
result), 1000 sequential calls on one session, then 20 sessions with a call in flight on each, 100
calls each.
    python3 .ci/bench/http.py [ROUNDS] [comma-separated target names]
    PY=/path/to/python3 python3 .ci/bench/http.py ...   (run mcp_min and the floor with that interpreter)
The "sdk" targets run the official SDK from .peers/ (python3 -m venv .peers && .peers/bin/pip
install "mcp==2.3.0"); without it, they are skipped.
"""
import os, sys
import harness

PY = os.environ.get("PY", "python3")
TARGETS = {     # name: (transport, command; {port} is where it must listen)
  "mcp_min http": ("http", f"{PY} -m mcp_min serve --port {{port}}"),
  "mcp_min sse": ("sse", f"{PY} -m mcp_min serve --port {{port}}"),
  "floor http": ("http", f"{PY} .ci/bench/floor_http.py --port {{port}}"),
  "floor sse": ("sse", f"{PY} .ci/bench/floor_http.py --port {{port}}"),
  "sdk http": ("http", ".peers/bin/python .ci/bench/sdk_server.py http --port {port}"),
  "sdk sse": ("sse", ".peers/bin/python .ci/bench/sdk_server.py sse --port {port}"),
}

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
only = sys.argv[2].split(",") if len(sys.argv) > 2 else list(TARGETS)
if set(only) - set(TARGETS):
    sys.exit(f"http.py: unknown target {sorted(set(only) - set(TARGETS))}; the targets are {', '.join(TARGETS)}")
med, ok = harness.side_by_side("http.py", {
    name: lambda kind=kind, cmd=cmd: harness.bench_http(kind, cmd, n=1000, c=20, k=100)
    for name, (kind, cmd) in TARGETS.items() if name in only}, rounds)
if med:
    print(f"{'target':14} {'cold ms':>8} {'seq/s':>8} {'20x100/s':>9} {'p50 us':>7} {'p99 us':>7} {'RSS MB':>7}")
for name, m in med.items():
    print(f"{name:14} {m['cold_ms']:8.1f} {m['seq']:8.0f} {m['conc']:9.0f} {m['conc_p50_us']:7.0f} "
          f"{m['conc_p99_us']:7.0f} {m['rss_mb']:7.1f}")
if all(k in med for k in TARGETS):
    print(harness.GOALS)
    m, s, f = med["mcp_min http"], med["sdk http"], med["floor http"]
    print(f"/mcp seq {m['seq'] / s['seq']:.1f}x SDK (>=5), {m['seq'] / f['seq']:.2f} of floor (>=0.5); "
          f"20x100 {m['conc'] / s['conc']:.1f}x SDK (>=5), p99/p50 {m['conc_p99_us'] / m['conc_p50_us']:.1f} (<10); "
          f"RSS {m['rss_mb'] / s['rss_mb']:.2f} of SDK (<=0.33)")
    m, s, f = med["mcp_min sse"], med["sdk sse"], med["floor sse"]
    print(f"/sse seq {m['seq'] / s['seq']:.1f}x SDK (>=5), {m['seq'] / f['seq']:.2f} of floor; "
          f"the floor's own /sse is {f['seq'] / s['seq']:.1f}x SDK")
sys.exit(0 if ok else 1)
