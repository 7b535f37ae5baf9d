"""stdio side by side: mcp_min (-m and script), the stdlib floor, the official SDK.

Rounds are interleaved; medians are printed with the ratios the issues ask about.
    python3 .ci/bench/stdio.py [ROUNDS] [N] [comma-separated target names]
    PY=/path/to/python3 python3 .ci/bench/stdio.py ...   (run mcp_min and the floor with that interpreter)
Needs the harness (../shared/bench, or MCP_BENCH=DIR) and, for the target "sdk", the SDK in
.peers/ (see .ci/interop/README.md). Precompile first for `-m`: python3 -m py_compile mcp_min.py
"""
import os, shutil, sys, statistics
import harness
ROOT, B = harness.ROOT, harness.B
PY = os.environ.get("PY", "python3")    # e.g. the interpreter itself, past a pyenv shim
targets = {
  "mcp_min script": f"{PY} mcp_min.py serve --stdio",
  "mcp_min -m": f"{PY} -m mcp_min serve --stdio",
  "floor": f"{PY} {B}/baseline_stdio.py",
  "sdk": f".peers/bin/python {B}/peers/sdk_server.py stdio",
}


def fail(why):
    harness.fail("stdio.py", why)


def bench(name, cmd):
    return harness.run("stdio.py", name, cmd, ["--stdio", cmd, "-n", n, "--cold-runs", "5", "--window", "20",
                                              "-k", "100", "--tool", "getUser", "--args", '{"name":"John"}'])


rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
n = sys.argv[2] if len(sys.argv) > 2 else "2000"
only = sys.argv[3].split(",") if len(sys.argv) > 3 else list(targets)
if set(only) - set(targets):
    fail(f"unknown target {sorted(set(only) - set(targets))}; the targets are {', '.join(targets)}")
targets = {k: v for k, v in targets.items() if k in only}
if not os.path.exists(os.path.join(B, "bench_mcp.py")):
    fail(f"the bench harness is missing ({B}/bench_mcp.py): put it in ../shared/bench or set MCP_BENCH=DIR")
if not (os.path.exists(os.path.join(ROOT, PY)) if os.sep in PY else shutil.which(PY)):
    fail(f"PY={PY} is not an interpreter here")
if "sdk" in targets and not os.path.exists(os.path.join(ROOT, ".peers", "bin", "python")):
    fail("the official SDK is missing (.peers/bin/python): install it as .ci/interop/README.md shows, "
         "or name the others: python3 .ci/bench/stdio.py 3 2000 'mcp_min script,mcp_min -m,floor'")
res = {k: [] for k in targets}
for r in range(rounds):
    for name, cmd in targets.items():
        d = bench(name, cmd)
        if d:
            res[name].append((d["cold_start_ms"], d["seq"]["calls_per_s"], d["conc"]["calls_per_s"],
                              d["rss"]["after_conc"]["rss_kb"] / 1024, d["errors_total"]))
print(f"{'target':16} {'cold ms':>8} {'seq/s':>8} {'conc/s':>8} {'RSS MB':>7} errors")
med = {}
for name, rows in res.items():
    if rows:
        med[name] = m = [statistics.median(c) for c in zip(*rows)]
        print(f"{name:16} {m[0]:8.1f} {m[1]:8.0f} {m[2]:8.0f} {m[3]:7.1f} {m[4]:.0f}")
for name in ("mcp_min script", "mcp_min -m"):
    if name in med and "sdk" in med and "floor" in med:
        m, s, f = med[name], med["sdk"], med["floor"]
        print(f"{name}: cold {m[0]/s[0]:.3f} of SDK (<=0.125), {m[0]/f[0]:.2f}x floor (<=4); seq {m[1]/s[1]:.1f}x SDK (>=6), "
              f"{m[1]/f[1]:.2f} of floor (>=0.5); conc {m[2]/s[2]:.1f}x SDK (>=10); RSS {m[3]/s[3]:.2f} of SDK (<=0.33)")
sys.exit(0 if all(res.values()) else 1)
