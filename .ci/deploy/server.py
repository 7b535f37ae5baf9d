"""What .ci/deploy/check.py serves behind nginx: examples/user_store.py, and tools that tell
which process ran them (the process id), so that the check sees where each request went."""
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

from user_store import server      # noqa: E402  (a checkout: examples/ is not a package)
from mcp_min import Context         # noqa: E402  (user_store put mcp_min.py on the path)


@server.tool()
def whoami() -> int:
    """The id of the process that ran this call."""
    return os.getpid()


@server.tool()
async def nap(seconds: float) -> int:
    """Sleep, then say which process slept."""
    await asyncio.sleep(seconds)
    return os.getpid()


@server.tool()
async def two_questions(ctx: Context) -> str:
    """Ask twice. In 2026-07-28 that is three requests, each of which may reach another
    process: the answer names the process of each (kept in requestState by ctx.once)."""
    first = await ctx.once("first", os.getpid)
    await ctx.elicit("First question?", {"ok": {"type": "boolean"}}, key="one")
    second = await ctx.once("second", os.getpid)
    await ctx.elicit("Second question?", {"ok": {"type": "boolean"}}, key="two")
    return f"{first} {second} {os.getpid()}"
