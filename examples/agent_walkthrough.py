"""The task from our packet capture, played by a scripted agent (no model needed):

    "Check the user list for Carson; if he is missing, add Carson,
     carson@gmail.com; check again; then greet him."

    python examples/agent_walkthrough.py                    # stdio: spawns the demo server
    python examples/agent_walkthrough.py --transport http   # the demo on HTTP, via /mcp
    python examples/agent_walkthrough.py --transport sse    # the demo on HTTP, via legacy /sse
    python examples/agent_walkthrough.py --url http://127.0.0.1:8080/mcp   # a running server
    ... --trace                                             # every frame, as the capture showed
    ... --picture capture.html            # the frames drawn as a sequence diagram (examples/capture.py)
    ... --tour          # the seed capture replayed exactly (not this agent's task), each frame
                        # then the functions of mcp_min.py it ran: examples/tour.py
    ... --tour --startup                    # the server's start-up and stop listed too
    ... --transport sse --tour --readme     # and paste its excerpt into README.md again

The agent's thoughts go to stdout; the trace goes to stderr (with --picture, once the walk is over:
both come from the one trace the client writes).
"""
import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, ".."))     # a checkout: mcp_min.py is one folder up

import capture      # examples/capture.py, beside this file
from mcp_min import Client, _capture_text

SERVER = os.path.join(HERE, "..", "mcp_min.py")


def say(line):
    print(f"agent: {line}", flush=True)


def names(result):
    return [u["name"] for u in result["structuredContent"]["result"]]


async def walk(target, trace, transport="auto"):
    # A named transport is used as named (VS Code's "type": "sse" opens GET /sse at once); a bare
    # URL is probed: Streamable HTTP first, legacy SSE after a 4xx.
    async with Client(target, name="walkthrough-agent", trace=trace, transport=transport) as client:
        await agent(client)


async def agent(client):
    """The task, over a client that is connected."""
    say(f"connected to {client.server_info['name']} (protocol {client.protocol_version})")
    tools = [t["name"] for t in await client.list_tools()]
    say(f"I can use: {', '.join(tools)}")
    users = names(await client.call_tool("getUsers"))
    say(f"users now: {', '.join(users)}")
    if "Carson" not in users:
        say("Carson is missing, so I add him")
        result = await client.call_tool("addUser", {"name": "Carson", "email": "carson@gmail.com"})
        say(result["content"][0]["text"])
        users = names(await client.call_tool("getUsers"))
        say(f"users now: {', '.join(users)}")
    assert "Carson" in users, "Carson should be there now"
    prompt = await client.get_prompt("greet", {"name": "Carson"})
    say(f"(the server's greet prompt asks me: {prompt['messages'][0]['content']['text']!r})")
    say("Hello Carson, and welcome to the directory!")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--transport", choices=["stdio", "http", "sse"])
    p.add_argument("--url", help="use a server that is already running (probed, unless --transport "
                                 "names how to reach it)")
    p.add_argument("--trace", action="store_true", help="show every frame on stderr")
    p.add_argument("--picture", metavar="HTML", help="draw every frame into HTML, a sequence diagram")
    p.add_argument("--tour", action="store_true", help="replay the seed capture (not the agent's "
                   "task) against the demo served in this process and show, after each frame, "
                   "the functions of mcp_min.py that ran for it")
    p.add_argument("--startup", action="store_true", help="with --tour: list what the server runs "
                   "before the first frame and after the client left (optional reading)")
    p.add_argument("--readme", action="store_true", help="with --transport sse --tour: paste the "
                   "tour's excerpt into README.md again (after mcp_min.py's lines move)")
    args = p.parse_args()
    if args.readme and not (args.tour and args.transport == "sse"):
        p.error("--readme pastes the sse tour's excerpt: --transport sse --tour --readme")
    if args.startup and not args.tour:
        p.error("--startup lists the tour's start-up: --tour --startup")
    if args.tour:
        if args.url or args.picture:
            p.error("--tour serves the demo in this process: no --url, and no --picture")
        import tour     # examples/tour.py, beside this file
        transport = args.transport or "stdio"
        text = tour.render(asyncio.run(tour.play(transport)), transport, args.startup)
        print(text)
        if args.readme:
            tour.paste(text)
            print(f"(README.md: its excerpt of the tour pasted again, {tour.README})")
        return None
    if not args.picture:
        return run(args, "-" if args.trace else None)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.jsonl")     # the client's trace, as --trace=FILE writes it
        run(args, path)
        records = capture.read(path)
    if args.trace:      # the same frames as text, as --trace shows them
        for r in records:
            sys.stderr.write(_capture_text(r, r.get("headers"), r.get("data"), r.get("message")))
    with open(args.picture, "w", encoding="utf-8") as f:
        over = args.url or {"stdio": "stdio", "http": "Streamable HTTP", "sse": "legacy SSE"}[
            args.transport or "stdio"]
        f.write(capture.draw(records, f"MCP capture: the walkthrough over {over}"))
    print(f"the session, drawn: {args.picture} ({len(records)} frames)")


def run(args, trace):
    if args.url:
        return asyncio.run(walk(args.url, trace, args.transport if args.transport != "stdio" else "auto"))
    if args.transport in (None, "stdio"):
        return asyncio.run(walk([sys.executable, SERVER, "serve", "--stdio"], trace))
    port = free_port()
    server = subprocess.Popen([sys.executable, SERVER, "serve", "--port", str(port)],
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):    # wait until it listens
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        path = "/mcp" if args.transport == "http" else "/sse"
        asyncio.run(walk(f"http://127.0.0.1:{port}{path}", trace, args.transport))
    finally:
        server.terminate()
        server.wait(5)


if __name__ == "__main__":
    main()
