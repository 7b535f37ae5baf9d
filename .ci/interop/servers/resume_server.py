#!/usr/bin/env python3
"""A mcp_min Server for py_resume_checks.py: tools whose POST stream a relay cuts after a progress event.
usage: python3 resume_server.py [--port PORT] [--trace[=FILE]] ...   (the options of `mcp_min.py serve`)
Imports mcp_min.py from the repo root (three folders up)."""
import asyncio, os, sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")))
from mcp_min import Context, Server

server = Server("resume-checks")


@server.tool()
async def slow_progress(ctx: Context, steps: int = 1, gap: float = 0.05, wait: float = 0.5) -> str:
    """Send `steps` progress notifications `gap` s apart (progress 1..steps of steps), then wait
    `wait` s, then answer "done: N progress, waited W s"."""
    for i in range(1, steps + 1):
        await ctx.progress(i, steps, f"step {i}/{steps}")
        if i < steps:
            await asyncio.sleep(gap)
    await asyncio.sleep(wait)
    return f"done: {steps} progress, waited {wait} s"


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


if __name__ == "__main__":
    sys.exit(server.run())
