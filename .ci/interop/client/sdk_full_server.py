"""Official Python SDK (mcp 2.x MCPServer) server with tools, resources, prompts, logging and progress,
and tools that ask the client (elicitation, sampling) and change the tool list.
Both eras on every transport (MCPServer 2.3 is dual-era): initialize sessions and 2026-07-28 requests.
usage: sdk_full_server.py stdio | sse --port P | http --port P"""
import argparse
import asyncio
import warnings
from typing import Annotated

from mcp_types import (CallToolResult, CreateMessageResult, ElicitRequest, ElicitRequestFormParams,
                       InputRequiredResult, SamplingMessage, TextContent)
from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve, Sample

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


# -- asking the client ------------------------------------------------------------------
# Resolve(...) is the SDK's era-independent way: on a 2026-07-28 request the asks become an
# input_required result (InputRequiredResult) and the client retries with inputResponses;
# in a handshake session they are elicitation/create / sampling/createMessage requests mid-call.
class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_color(who: Annotated[Name, Resolve(ask_name)]) -> Elicit[Color]:
    return Elicit(f"{who.name}, what is your favourite colour?", Color)


def ask_model() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Capital of France?"))],
                  max_tokens=50)


@mcp.tool()
async def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Elicit the user's name (Resolve + Elicit), then greet."""
    return f"Hello, {who.name}!"


@mcp.tool()
async def ask_llm(answer: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    """Sample the client's model (Resolve + Sample)."""
    return f"model said: {getattr(answer.content, 'text', answer.content)}"


@mcp.tool()
async def two_step(color: Annotated[Color, Resolve(ask_color)], who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Two dependent asks: the colour question needs the name (2026-07-28: two input_required rounds)."""
    return f"{who.name} likes {color.color}"


@mcp.tool()
async def ctx_elicit(ctx: Context) -> str:
    """ctx.elicit(): a server->client request (handshake era only; a 2026-07-28 request has no back-channel)."""
    r = await ctx.elicit("What is your name?", Name)
    return f"ctx: {r.action} {getattr(r, 'data', None) and r.data.name}"


@mcp.tool()
async def manual_ask(ctx: Context) -> CallToolResult | InputRequiredResult:
    """A hand-written InputRequiredResult (2026-07-28 only) with a requestState to echo."""
    answer = (ctx.input_responses or {}).get("q")
    if answer is None:
        return InputRequiredResult(input_requests={"q": ElicitRequest(params=ElicitRequestFormParams(
            message="Manual question?", requested_schema={"type": "object", "properties": {
                "name": {"type": "string"}}, "required": ["name"]}))}, request_state="state-42")
    content = getattr(answer, "content", None) or {}
    return CallToolResult(content=[TextContent(type="text", text=f"manual: {content.get('name')} state={ctx.request_state}")])


@mcp.tool()
async def change_tools(ctx: Context) -> str:
    """Add and remove a tool; tell listeners (2026-07-28: subscriptions/listen) and the session (handshake)."""
    mcp.add_tool(lambda: "tmp", name="temp_tool")
    mcp.remove_tool("temp_tool")
    await ctx.notify_tools_changed()                       # the subscriptions/listen bus (2026-07-28)
    if ctx.protocol_version and ctx.protocol_version < "2026":
        await ctx.session.send_tool_list_changed()         # handshake-era session notification
    return "tools changed"


CANCELLED = set()   # tags of slow_tracked calls the server saw cancelled


@mcp.tool()
async def slow_tracked(seconds: float, tag: str) -> str:
    """Sleep, then answer; a cancelled call (notifications/cancelled, or in 2026-07-28 HTTP a closed stream) is remembered."""
    try:
        await asyncio.sleep(seconds)
    except BaseException:
        CANCELLED.add(tag)
        raise
    return f"slept {seconds}"


@mcp.tool()
def was_cancelled(tag: str) -> bool:
    """Whether the server cancelled the slow_tracked call with this tag."""
    return tag in CANCELLED


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
