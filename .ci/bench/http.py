"""HTTP side by side: mcp_min (/mcp and /sse), the stdlib floor, the official SDK.

    python3 .ci/bench/http.py [ROUNDS] [comma-separated target names]
Needs the harness (../shared/bench, or MCP_BENCH=DIR) and, for the "sdk" targets, the SDK in
.peers/ (see .ci/interop/README.md).
"""
import os, sys, statistics
import harness
ROOT, B = harness.ROOT, harness.B
# (name, transport flag, url path, spawn command)
targets = [
  ("mcp_min http", "--http", "/mcp", "python3 -m mcp_min serve --port {p}"),
  ("mcp_min sse", "--sse", "/sse", "python3 -m mcp_min serve --port {p}"),
  ("floor http", "--http", "/mcp", f"python3 {B}/baseline_http.py --port {{p}}"),
  ("floor sse", "--sse", "/sse", f"python3 {B}/baseline_http.py --port {{p}}"),
  ("sdk http", "--http", "/mcp", f".peers/bin/python {B}/peers/sdk_server.py http --port {{p}}"),
  ("sdk sse", "--sse", "/sse", f".peers/bin/python {B}/peers/sdk_server.py sse --port {{p}}"),
]


def fail(why):
    harness.fail("http.py", why)


def bench(name, flag, url, cmd):
    return harness.run("http.py", name, cmd, [flag, url, "--spawn", cmd, "-n", "1000", "-c", "20", "-k", "100",
                                              "--tool", "getUser", "--args", '{"name":"John"}'])


names = [t[0] for t in targets]
only = sys.argv[2].split(",") if len(sys.argv) > 2 else names
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
if set(only) - set(names):
    fail(f"unknown target {sorted(set(only) - set(names))}; the targets are {', '.join(names)}")
targets = [t for t in targets if t[0] in only]
if not os.path.exists(os.path.join(B, "bench_mcp.py")):
    fail(f"the bench harness is missing ({B}/bench_mcp.py): put it in ../shared/bench or set MCP_BENCH=DIR")
if any(t[0].startswith("sdk") for t in targets) and not os.path.exists(os.path.join(ROOT, ".peers", "bin", "python")):
    fail("the official SDK is missing (.peers/bin/python): install it as .ci/interop/README.md shows, "
         "or name the others: python3 .ci/bench/http.py 1 '" + ",".join(n for n in names if not n.startswith("sdk")) + "'")
res = {t[0]: [] for t in targets}
port = 18400
for r in range(rounds):
    for name, flag, path, cmd in targets:
        port += 1
        d = bench(name, flag, f"http://127.0.0.1:{port}{path}", cmd.format(p=port))
        if d:
            res[name].append((d["seq"]["calls_per_s"], d["conc"]["calls_per_s"], d["conc"]["p50_us"],
                              d["conc"]["p99_us"], d["rss"]["after_conc"]["rss_kb"] / 1024, d["errors_total"]))
m = {name: [statistics.median(c) for c in zip(*rows)] for name, rows in res.items() if rows}
print(f"{'target':14} {'seq/s':>8} {'conc/s':>8} {'p50us':>8} {'p99us':>8} {'RSS MB':>7} err")
for name, x in m.items():
    print(f"{name:14} {x[0]:8.0f} {x[1]:8.0f} {x[2]:8.0f} {x[3]:8.0f} {x[4]:7.1f} {x[5]:.0f}")
if all(k in m for k in names):
    print(f"/mcp seq {m['mcp_min http'][0]/m['sdk http'][0]:.1f}x SDK (>=5), {m['mcp_min http'][0]/m['floor http'][0]:.2f} of floor (>=0.5); "
          f"20x100 {m['mcp_min http'][1]/m['sdk http'][1]:.1f}x SDK (>=5), p99/p50 {m['mcp_min http'][3]/m['mcp_min http'][2]:.1f} (<10); "
          f"RSS {m['mcp_min http'][4]/m['sdk http'][4]:.2f} of SDK (<=0.33)")
    print(f"/sse seq {m['mcp_min sse'][0]/m['sdk sse'][0]:.1f}x SDK (>=5); the floor's own /sse is {m['floor sse'][0]/m['sdk sse'][0]:.1f}x SDK")
sys.exit(0 if all(res.values()) else 1)
