"""Official Python SDK (mcp 2.x MCPServer) server with tools, resources, prompts, logging and progress.
usage: sdk_full_server.py stdio | sse --port P | http --port P"""
import argparse
import asyncio
import warnings

from mcp.server.mcpserver import Context, MCPServer

warnings.filterwarnings("ignore")
p = argparse.ArgumentParser()
p.add_argument("transport", choices=["stdio", "sse", "http"])
p.add_argument("--port", type=int, default=18290)
a = p.parse_args()

mcp = MCPServer("sdk-full", log_level="WARNING")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@mcp.tool()
async def log_things(ctx: Context) -> str:
    """Send log messages at several levels."""
    await ctx.debug("debug-msg")
    await ctx.info("info-msg")
    await ctx.warning("warning-msg")
    await ctx.error("error-msg")
    return "logged"


@mcp.tool()
async def progress(steps: int, ctx: Context, delay: float = 0.05) -> str:
    """Report progress `steps` times."""
    for i in range(1, steps + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(i, steps, f"step {i}")
    return f"done {steps}"


@mcp.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@mcp.resource("res://greeting", mime_type="text/plain")
def greeting() -> str:
    """A static greeting."""
    return "hello from the sdk"


@mcp.resource("res://user/{name}")
def user(name: str) -> str:
    """A templated resource."""
    return f"user {name}"


@mcp.prompt()
def review(code: str) -> str:
    """Review some code."""
    return f"Please review:\n{code}"


if a.transport == "stdio":
    mcp.run("stdio")
elif a.transport == "sse":
    mcp.run("sse", host="127.0.0.1", port=a.port)
else:
    mcp.run("streamable-http", host="127.0.0.1", port=a.port)
