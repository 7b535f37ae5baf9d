"""stdio side by side: mcp_min (-m and script), the stdlib floor, the official SDK.

Rounds are interleaved (A B C D, A B C D, ...); medians are printed with the ratios the issues
ask about, each with the project's goal for it in parentheses (harness.GOALS, printed above them,
says what they mean). Each run: cold start (median of 5 spawns), N sequential calls, 20 in flight
x 100.
    python3 .ci/bench/stdio.py [ROUNDS] [N] [comma-separated target names]
    PY=/path/to/python3 python3 .ci/bench/stdio.py ...   (run mcp_min and the floor with that interpreter)
Precompile first for `-m`: python3 -m py_compile mcp_min.py. The target "sdk" runs the official
SDK from .peers/ (python3 -m venv .peers && .peers/bin/pip install "mcp==2.3.0"); without it, skipped.
"""
import os, shutil, sys
import harness

PY = os.environ.get("PY", "python3")    # e.g. the interpreter itself, past a pyenv shim
TARGETS = {
  "mcp_min script": f"{PY} mcp_min.py serve --stdio",
  "mcp_min -m": f"{PY} -m mcp_min serve --stdio",
  "floor": f"{PY} .ci/bench/floor_stdio.py",
  "sdk": ".peers/bin/python .ci/bench/sdk_server.py stdio",
}


def fail(why):
    sys.exit(f"stdio.py: {why}")


rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
only = sys.argv[3].split(",") if len(sys.argv) > 3 else list(TARGETS)
if set(only) - set(TARGETS):
    fail(f"unknown target {sorted(set(only) - set(TARGETS))}; the targets are {', '.join(TARGETS)}")
if not (os.path.exists(os.path.join(harness.ROOT, PY)) if os.sep in PY else shutil.which(PY)):
    fail(f"PY={PY} is not an interpreter here")
med, ok = harness.side_by_side("stdio.py", {
    name: lambda cmd=cmd: harness.bench_stdio(cmd, n) for name, cmd in TARGETS.items() if name in only}, rounds)
if med:
    print(f"{'target':16} {'cold ms':>8} {'seq/s':>8} {'p50 us':>7} {'p99 us':>7} {'20 in flight/s':>15} {'RSS MB':>7}")
for name, m in med.items():
    print(f"{name:16} {m['cold_ms']:8.1f} {m['seq']:8.0f} {m['seq_p50_us']:7.0f} {m['seq_p99_us']:7.0f} "
          f"{m['conc']:15.0f} {m['rss_mb']:7.1f}")
if "sdk" in med and "floor" in med and ("mcp_min script" in med or "mcp_min -m" in med):
    print(harness.GOALS)
for name in ("mcp_min script", "mcp_min -m"):
    if name in med and "sdk" in med and "floor" in med:
        m, s, f = med[name], med["sdk"], med["floor"]
        print(f"{name}: cold {m['cold_ms'] / s['cold_ms']:.3f} of SDK (<=0.125), "
              f"{m['cold_ms'] / f['cold_ms']:.2f}x floor (<=4); "
              f"seq {m['seq'] / s['seq']:.1f}x SDK (>=6), {m['seq'] / f['seq']:.2f} of floor (>=0.5); "
              f"in flight {m['conc'] / s['conc']:.1f}x SDK (>=10); RSS {m['rss_mb'] / s['rss_mb']:.2f} of SDK (<=0.33)")
sys.exit(0 if ok else 1)
