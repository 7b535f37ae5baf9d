"""HTTP side by side: mcp_min (/mcp and /sse), the stdlib floor, the official SDK.

    python3 .ci/bench/http.py [ROUNDS] [comma-separated target names]
"""
import json, os, subprocess, sys, statistics
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
B = os.environ.get("MCP_BENCH", os.path.join(ROOT, "..", "shared", "bench"))
# (name, transport flag, url path, spawn command)
targets = [
  ("mcp_min http", "--http", "/mcp", "python3 -m mcp_min serve --port {p}"),
  ("mcp_min sse", "--sse", "/sse", "python3 -m mcp_min serve --port {p}"),
  ("floor http", "--http", "/mcp", f"python3 {B}/baseline_http.py --port {{p}}"),
  ("floor sse", "--sse", "/sse", f"python3 {B}/baseline_http.py --port {{p}}"),
  ("sdk http", "--http", "/mcp", f".peers/bin/python {B}/peers/sdk_server.py http --port {{p}}"),
  ("sdk sse", "--sse", "/sse", f".peers/bin/python {B}/peers/sdk_server.py sse --port {{p}}"),
]
only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
res = {}
port = 18400
for r in range(rounds):
    for name, flag, path, cmd in targets:
        if only and name not in only:
            continue
        port += 1
        out = subprocess.run([sys.executable, f"{B}/bench_mcp.py", flag, f"http://127.0.0.1:{port}{path}", "--spawn",
                              cmd.format(p=port), "-n", "1000", "-c", "20", "-k", "100", "--tool", "getUser",
                              "--args", '{"name":"John"}'], capture_output=True, text=True, cwd=ROOT)
        try:
            d = json.loads(out.stdout.strip().splitlines()[-1])
            res.setdefault(name, []).append((d["seq"]["calls_per_s"], d["conc"]["calls_per_s"], d["conc"]["p50_us"],
                                             d["conc"]["p99_us"], d["rss"]["after_conc"]["rss_kb"] / 1024, d["errors_total"]))
        except Exception as e:
            print(name, "failed", out.stdout[-500:], out.stderr[-500:])
print(f"{'target':14} {'seq/s':>8} {'conc/s':>8} {'p50us':>8} {'p99us':>8} {'RSS MB':>7} err")
for name, rows in res.items():
    m = [statistics.median(c) for c in zip(*rows)]
    print(f"{name:14} {m[0]:8.0f} {m[1]:8.0f} {m[2]:8.0f} {m[3]:8.0f} {m[4]:7.1f} {m[5]:.0f}")
m = {name: [statistics.median(c) for c in zip(*rows)] for name, rows in res.items()}
if all(k in m for k in ("mcp_min http", "mcp_min sse", "floor http", "floor sse", "sdk http", "sdk sse")):
    print(f"/mcp seq {m['mcp_min http'][0]/m['sdk http'][0]:.1f}x SDK (>=5), {m['mcp_min http'][0]/m['floor http'][0]:.2f} of floor (>=0.5); "
          f"20x100 {m['mcp_min http'][1]/m['sdk http'][1]:.1f}x SDK (>=5), p99/p50 {m['mcp_min http'][3]/m['mcp_min http'][2]:.1f} (<10); "
          f"RSS {m['mcp_min http'][4]/m['sdk http'][4]:.2f} of SDK (<=0.33)")
    print(f"/sse seq {m['mcp_min sse'][0]/m['sdk sse'][0]:.1f}x SDK (>=5); the floor's own /sse is {m['floor sse'][0]/m['sdk sse'][0]:.1f}x SDK")
