"""stdio side by side: mcp_min (-m and script), the stdlib floor, the official SDK.

Rounds are interleaved; medians are printed with the ratios the issues ask about.
    python3 .ci/bench/stdio.py [ROUNDS] [N]     (the SDK from .peers/, see .ci/interop/README.md)
    PY=/path/to/python3 python3 .ci/bench/stdio.py ...   (run mcp_min and the floor with that interpreter)
Precompile first for `-m`: python -m py_compile mcp_min.py
"""
import json, os, subprocess, sys, statistics
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
B = os.environ.get("MCP_BENCH", os.path.join(ROOT, "..", "shared", "bench"))
PY = os.environ.get("PY", "python3")    # e.g. the interpreter itself, past a pyenv shim
targets = {
  "mcp_min script": f"{PY} mcp_min.py serve --stdio",
  "mcp_min -m": f"{PY} -m mcp_min serve --stdio",
  "floor": f"{PY} {B}/baseline_stdio.py",
  "sdk": f".peers/bin/python {B}/peers/sdk_server.py stdio",
}
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
n = sys.argv[2] if len(sys.argv) > 2 else "2000"
res = {k: [] for k in targets}
for r in range(rounds):
    for name, cmd in targets.items():
        out = subprocess.run([sys.executable, f"{B}/bench_mcp.py", "--stdio", cmd, "-n", n, "--cold-runs", "5",
                              "--window", "20", "-k", "100", "--tool", "getUser", "--args", '{"name":"John"}'],
                             capture_output=True, text=True, cwd=ROOT)
        d = json.loads(out.stdout.strip().splitlines()[-1])
        res[name].append((d["cold_start_ms"], d["seq"]["calls_per_s"], d["conc"]["calls_per_s"],
                          d["rss"]["after_conc"]["rss_kb"] / 1024, d["errors_total"]))
print(f"{'target':16} {'cold ms':>8} {'seq/s':>8} {'conc/s':>8} {'RSS MB':>7} errors")
med = {}
for name, rows in res.items():
    m = [statistics.median(c) for c in zip(*rows)]
    med[name] = m
    print(f"{name:16} {m[0]:8.1f} {m[1]:8.0f} {m[2]:8.0f} {m[3]:7.1f} {m[4]:.0f}")
for name in ("mcp_min script", "mcp_min -m"):
    m, s, f = med[name], med["sdk"], med["floor"]
    print(f"{name}: cold {m[0]/s[0]:.3f} of SDK (<=0.125), {m[0]/f[0]:.2f}x floor (<=4); seq {m[1]/s[1]:.1f}x SDK (>=6), "
          f"{m[1]/f[1]:.2f} of floor (>=0.5); conc {m[2]/s[2]:.1f}x SDK (>=10); RSS {m[3]/s[3]:.2f} of SDK (<=0.33)")
