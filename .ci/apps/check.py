"""examples/user_table_app.py in a real host, in a real browser (issue 43): a host page built from
the official packages (.ci/apps/host.js: @modelcontextprotocol/sdk's Client over Streamable HTTP,
@modelcontextprotocol/ext-apps' AppBridge) runs in headless Chromium against our server. It lists
the tools, finds getUsers' page, renders it in a sandboxed iframe under the page's CSP, hands it
the tool's result; the page adds Ada through the host and lists her. Then what must fail does,
clearly, and breaks nothing: a page whose resource is missing, a result too big for the page,
a tool the host does not let the page call.

    python3 .ci/apps/check.py [--screenshot FILE.png]

Installs nothing: without the npm packages in .peers/apps (.ci/run puts them there) or Chromium
(Debian's chromium-headless-shell or chromium), it says so in one line and passes. The host
page's load event waits for the verdict (an image the server holds till then), so Chromium's
--dump-dom or --screenshot returns when the host is done. Standard library only.
"""
import argparse
import asyncio
import http.server
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(ROOT, ".peers", "apps", "node_modules")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT = 60   # seconds the host may take, at most
HOST = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>MCP Apps host</title>
<style>body { font: 13px system-ui, sans-serif; margin: 12px; width: 760px; }
iframe { width: 100%; height: 160px; } h2 { font-size: 14px; margin: 14px 0 4px; }
.error, .fail { color: #cf222e; } .ok { color: #1a7f37; } #verdict { font: 12px monospace; }</style>
</head><body><h1>mcp_min: examples/user_table_app.py in an MCP Apps host</h1>
<div id="verdict"></div><div id="apps"></div>
<img src="/hold" alt="" width="1" height="1">
<script type="module" src="/host.js"></script></body></html>
"""


def absent():
    """Why the check cannot run here, or None."""
    browser = shutil.which("chromium-headless-shell") or shutil.which("chromium")
    if not browser:
        return None, "no Chromium (chromium-headless-shell or chromium)"
    for package in ("@modelcontextprotocol/ext-apps", "@modelcontextprotocol/sdk", "esbuild"):
        if not os.path.isdir(os.path.join(PEERS, package)):
            return None, f"no {package} in .peers/apps (npm install, as .ci/run does)"
    if not shutil.which("node"):
        return None, "no node (esbuild needs it)"
    return browser, None


def bundle(out):
    """host.js and the packages it imports, as one script (esbuild)."""
    esbuild, host = os.path.join(PEERS, ".bin", "esbuild"), os.path.join(ROOT, ".ci", "apps", "host.js")
    done = subprocess.run([esbuild, host, "--bundle", "--format=esm", "--log-level=warning",
                           f"--outfile={out}"], env={**os.environ, "NODE_PATH": PEERS},
                          capture_output=True, text=True, timeout=120)
    if done.returncode:
        sys.exit(f"!! esbuild failed: {done.stderr[-2000:]}")


def example_server(db):
    """examples/user_table_app.py's server on users in `db`, and the check's own tools: an
    app-only one, one whose page will be gone, one whose result is too big for a page."""
    sys.path[:0] = [ROOT, os.path.join(ROOT, "examples")]
    user_store = importlib.import_module("user_store")
    user_store.DEFAULT_DB = db
    example = importlib.import_module("user_table_app")
    server = example.server

    @server.tool(visibility=["app"])
    def appOnly() -> str:
        return "only for pages"

    server.app("ui://check/gone", "<!DOCTYPE html><html><head></head><body></body></html>")

    @server.tool(ui="ui://check/gone")
    def showGone() -> str:
        return "its page is removed once serving has started"

    @server.tool(ui=example.TABLE)
    def bigTable() -> list[dict]:
        return [{"name": f"user {i}", "email": f"user{i}@example.com"} for i in range(5000)]
    return server


class Pages(http.server.ThreadingHTTPServer):
    """The host's own origin: the page, its script, /hold (answered once the verdict is in)."""

    def __init__(self, script):
        self.script, self.verdict, self.done = script, None, threading.Event()
        super().__init__(("127.0.0.1", 0), Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.partition("?")[0]
        if path == "/hold":
            self.server.done.wait(WAIT)
            self.answer(200, "image/gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")
        elif path == "/host.html":
            self.answer(200, "text/html; charset=utf-8", HOST.encode())
        elif path == "/host.js":
            with open(self.server.script, "rb") as f:
                self.answer(200, "text/javascript", f.read())
        else:
            self.answer(404, "text/plain", b"not here")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/verdict":
            self.server.verdict = json.loads(body)
            self.server.done.set()
        self.answer(204, "text/plain", b"")

    def answer(self, status, kind, body):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("--screenshot", metavar="FILE.png", help="a picture of the host when done")
    args = parser.parse_args()
    browser, why = absent()
    if why:
        print(f"== MCP Apps in a browser: SKIPPED: {why}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        bundle(os.path.join(tmp, "host.js"))
        pages = Pages(os.path.join(tmp, "host.js"))
        threading.Thread(target=pages.serve_forever, daemon=True).start()
        origin = f"http://127.0.0.1:{pages.server_address[1]}"
        server = example_server(os.path.join(tmp, "users.db"))
        from mcp_min import start_http
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        http = asyncio.run_coroutine_threadsafe(
            start_http(server, "127.0.0.1", 0, allow_origins=[origin]), loop).result(30)
        server.remove_resource("ui://check/gone")   # a page gone after the host listed its tool
        url = f"{origin}/host.html?mcp=http://127.0.0.1:{http.port}/mcp"
        shot = ["--window-size=800,1100", f"--screenshot={os.path.abspath(args.screenshot)}"] \
            if args.screenshot else ["--dump-dom"]
        with tempfile.TemporaryDirectory() as profile:
            done = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *shot, url],
                                  capture_output=True, text=True, timeout=WAIT + 60)
        asyncio.run_coroutine_threadsafe(http.close(), loop).result(30)
        pages.shutdown()
    if done.returncode or pages.verdict is None:
        sys.exit(f"!! no verdict from the host page ({browser} exited {done.returncode}): "
                 f"{done.stderr[-3000:]}")
    failed = 0
    for ok, text in pages.verdict:
        print(f"   {'ok  ' if ok else 'FAIL'} {text}")
        failed += not ok
    if failed or not pages.verdict:
        sys.exit(f"!! MCP Apps in a browser: {failed} of {len(pages.verdict)} checks failed")
    print(f"== MCP Apps in a browser: {len(pages.verdict)} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
