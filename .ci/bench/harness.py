"""What the bench drivers share: one run of ../shared/bench/bench_mcp.py, and its failures said."""
import json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
B = os.path.abspath(os.environ.get("MCP_BENCH", os.path.join(ROOT, "..", "shared", "bench")))


def fail(prog, why):
    print(f"{prog}: {why}", file=sys.stderr)
    sys.exit(2)


def run(prog, name, cmd, args):
    """One harness run: its JSON line, or None after saying why there is none."""
    with tempfile.NamedTemporaryFile("r", suffix=".stderr") as err:
        out = subprocess.run([sys.executable, f"{B}/bench_mcp.py", *args, "--stderr-file", err.name],
                             capture_output=True, text=True, cwd=ROOT)
        server_err = err.read().strip()[-500:]
    try:
        d = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        d = {}
    if "seq" in d:
        return d
    why = "; ".join(x for x in (d.get("fatal"), out.stderr.strip()[-500:], server_err) if x) or "no output"
    print(f"{prog}: target {name!r} ({cmd}) gave no result (exit {out.returncode}): {why}", file=sys.stderr)
