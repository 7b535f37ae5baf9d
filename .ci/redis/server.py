"""What .ci/redis/check.py serves on each node: a tool that may become a task, a tool that
updates a resource (the change other nodes must hear of), and the resource."""
import asyncio
import os

from mcp_min import Server

server = Server("redis-check")


@server.tool(task="optional")
async def wait(seconds: float) -> str:
    """Waits, as a task (after TASK_AFTER s), and says which process ran it."""
    await asyncio.sleep(seconds)
    return f"waited {seconds} s in {os.getpid()}"


@server.tool()
def touch(uri: str) -> str:
    """Says the resource at `uri` changed: every node's listens and subscribers hear of it."""
    server.resource_updated(uri)
    return f"touched {uri} in {os.getpid()}"


@server.resource("note://board")
def board() -> str:
    return "the board"


@server.resource("note://end")
def end() -> str:
    return "the end"


if __name__ == "__main__":
    server.run()
