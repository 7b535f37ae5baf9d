"""Server memory held by answers a client does not read (issue 15, item 12).

N connections each POST a tools/call whose answer is SIZE bytes, then read nothing; after
10 s the growth of the server's RSS (from /proc) is printed.
    python3 .ci/bench/unread.py [PYTHON ...]      (N=100 SIZE=4 MiB; set N=, SIZE_MIB=)
"""
import asyncio, os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[0] = HERE      # the repository, not this folder: its http.py would hide the standard library's
from test_mcp_min import HttpClient, call  # noqa: E402

N, SIZE = int(os.environ.get("N", 100)), int(os.environ.get("SIZE_MIB", 4)) << 20
SERVER = "from mcp_min import Server\nserver = Server('blobs')\n" \
         "@server.tool()\ndef blob(n: int) -> str:\n    return 'x' * n\n"


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024


async def run(python, path):
    server = subprocess.Popen([python, os.path.join(HERE, "mcp_min.py"), "serve", path, "--port", "0"],
                              stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=HERE))
    try:
        port = None
        while port is None:
            match = re.search(rb"127\.0\.0\.1:(\d+)/mcp", server.stderr.readline())
            port = match and int(match.group(1))
        client = HttpClient(port)
        sid = await client.initialize()
        await client.post(call(1, "blob", {"n": SIZE}), sid)     # warm up
        before = rss_mib(server.pid)
        for i in range(N):
            _, writer = await client.connect()
            writer.write(client.build("POST", "/mcp", call(100 + i, "blob", {"n": SIZE}),
                                      {"Mcp-Session-Id": sid}))
            await writer.drain()
        await asyncio.sleep(10)
        grown = rss_mib(server.pid) - before
        print(f"{python}: {N} unread {SIZE >> 20} MiB answers: +{grown:.0f} MiB, {grown / N:.2f} MiB each")
        await client.close()
    finally:
        server.kill()
        server.wait()


with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "blobs.py"), "w") as f:
        f.write(SERVER)
    for python in sys.argv[1:] or [sys.executable]:
        asyncio.run(run(python, os.path.join(tmp, "blobs.py")))
