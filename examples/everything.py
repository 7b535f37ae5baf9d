"""Every server feature of MCP in one place: a tour of the mcp_min API.

It also carries the fixtures the official conformance suite looks for
(the test_* tools, test:// resources and test_* prompts), so CI runs the
suite against it:

    python examples/everything.py                # stdio
    python examples/everything.py --port 3001    # HTTP: /mcp and legacy /sse
"""
import asyncio
import os
import struct
import sys
import zlib
from typing import Annotated

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))     # a checkout: mcp_min.py is one folder up

from mcp_min import (Context, McpError, RequestError, Server, INTERNAL_ERROR, INVALID_PARAMS, audio,
                     embedded_resource, image, text)

server = Server("everything", instructions="A showcase of every MCP server feature.")


def tiny_png():
    """A 1x1 red PNG, built by hand (no imaging library needed)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def tiny_wav():
    """A tenth of a second of silence as 8 kHz 8-bit mono WAV."""
    samples = b"\x80" * 800
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    return (b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVEfmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", len(samples)) + samples)


# -- Tools: return values become content ---------------------------------------------

@server.tool()
def echo(text: Annotated[str, "Text to send back"]) -> str:
    """Echo the text back."""
    return text


@server.tool()
def test_simple_text() -> str:
    """Return a plain text message."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content():
    """Return an image."""
    return image(tiny_png(), "image/png")


@server.tool()
def test_audio_content():
    """Return an audio clip."""
    return audio(tiny_wav(), "audio/wav")


@server.tool()
def test_embedded_resource():
    """Return a resource embedded in the result."""
    return embedded_resource("test://embedded-resource", "This is an embedded resource content.",
                             "text/plain")


@server.tool()
def test_multiple_content_types():
    """Return text, an image and a resource together."""
    return [text("Multiple content types test:"), image(tiny_png(), "image/png"),
            embedded_resource("test://mixed-content-resource", '{"test": "data", "value": 123}',
                              "application/json")]


@server.tool()
def test_error_handling():
    """Always fail: the model sees the message as an isError result."""
    raise McpError(INVALID_PARAMS, "This tool intentionally returns an error for testing")


# -- Tools that talk back while they run: a Context parameter --------------------------

@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three log messages, then answer."""
    for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.log("info", step)
        await asyncio.sleep(0.05)
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress three times, then answer."""
    for done in (0, 50, 100):
        await ctx.progress(done, 100, f"{done}% done")
        await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """End this call's SSE stream before answering: the client resumes it (SEP-1699)."""
    ctx.close_sse_stream()
    await asyncio.sleep(0.2)    # the answer comes once the stream is gone
    return "Reconnection test completed successfully"


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Ask the client's language model to answer a prompt."""
    result = await ctx.sample(prompt, max_tokens=100)
    content = result.get("content", {})
    answer = content.get("text", "") if isinstance(content, dict) else str(content)
    return f"LLM response: {answer}"


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Ask the user for a username and email."""
    result = await ctx.elicit(message, {
        "username": {"type": "string", "description": "Your username"},
        "email": {"type": "string", "format": "email", "description": "Your email address"}})
    return f"User response: action={result.get('action')}, content={result.get('content')}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask for values that all come with defaults (2025-11-25)."""
    result = await ctx.elicit("Please review and update the form fields with defaults", {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status",
                   "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True}})
    return f"Elicitation completed: action={result.get('action')}, content={result.get('content')}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask with every enum form: plain, titled, legacy, and multi-select."""
    options = ["option1", "option2", "option3"]
    titled = [{"const": v, "title": f"Option {v[-1]}"} for v in options]
    result = await ctx.elicit("Please select options from the enum fields", {
        "untitledSingle": {"type": "string", "description": "Select one option", "enum": options},
        "titledSingle": {"type": "string", "description": "Select one option with titles",
                         "oneOf": titled},
        "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                       "enum": options, "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "description": "Select multiple options",
                          "items": {"type": "string", "enum": options}},
        "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                        "items": {"anyOf": titled}}})
    return f"Elicitation completed: action={result.get('action')}, content={result.get('content')}"


# -- 2026-07-28: a tool asks by answering (input_required), and runs again with the answers --

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Ask the user's name (the conformance suite names the ask "user_name")."""
    answer = await ctx.elicit("What is your name?", NAME, key="user_name")
    return f"Hello, {answer.get('content', {}).get('name')}!"


@server.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Ask the client's model a question."""
    answer = await ctx.sample("What is the capital of France?", 100, key="capital_question")
    return f"The model says: {answer['content'].get('text')}"


@server.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """List the client's roots."""
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(root.get("uri", "?") for root in roots)


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Ask for a confirmation; requestState is checked before the answer is taken."""
    answer = await ctx.elicit("Confirm?", {"ok": {"type": "boolean"}}, key="confirm")
    return f"state-ok: confirmed={answer.get('content', {}).get('ok')}"


server.add_tool(test_input_required_result_request_state, "test_input_required_result_tampered_state")


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Three asks in one round: made together (gather), they go out together."""
    name, greeting, roots = await asyncio.gather(
        ctx.elicit("What is your name?", NAME, key="user_name"),
        ctx.sample("Generate a greeting", 50, key="greeting"),
        ctx.list_roots(key="client_roots"))
    return f"{greeting['content'].get('text')} {name['content']['name']} ({len(roots)} roots)"


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Two rounds: the second question comes once the first is answered."""
    name = await ctx.elicit("Step 1: What is your name?", NAME, key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", {
        "type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        key="step2")
    return f"{name['content']['name']} likes {color['content']['color']}"


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only what the client said it can answer."""
    asks = []
    if "sampling" in ctx.client_capabilities:
        asks.append(ctx.sample("Say hello", 20, key="hello"))
    if "elicitation" in ctx.client_capabilities:
        asks.append(ctx.elicit("What is your name?", NAME, key="user_name"))
    return f"{len(await asyncio.gather(*asks))} answers"


@server.prompt()
async def test_input_required_result_prompt(ctx: Context):
    """A prompt that asks the user for context first."""
    answer = await ctx.elicit("What context should the prompt use?", {
        "context": {"type": "string"}}, key="prompt_context")
    return f"Use this context: {answer.get('content', {}).get('context')}"


@server.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs sampling: a client that does not declare it gets -32021."""
    return (await ctx.sample("Hello?", 10))["content"].get("text", "")


@server.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks the user: over 2026-07-28 as an input_required result, never a request."""
    return str(await ctx.elicit("Your name?", NAME))


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs (only to a request that asked, with a logLevel in its _meta)."""
    await ctx.log("info", "test_logging_tool ran")
    return "logged"


@server.tool()
def test_trigger_tool_change() -> str:
    """Add and remove a tool: listeners hear tools/list_changed."""
    server.remove_tool(server.add_tool(lambda: "", "test_temporary_tool").name)
    return "tools changed"


@server.tool()
def test_trigger_prompt_change() -> str:
    """Add and remove a prompt: listeners hear prompts/list_changed."""
    server.remove_prompt(server.add_prompt(lambda: "", "test_temporary_prompt").name)
    return "prompts changed"


@server.tool(input_schema={"type": "object", "required": ["region"], "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"}, "note": {"type": "string"}}})
def test_custom_header(region: str, note: str = "") -> str:
    """2026-07-28 HTTP: `region` travels in an Mcp-Param-Region header too, checked
    against the body before the tool runs."""
    return f"region {region}"


# A hand-written JSON Schema (2020-12: $defs, $anchor, composition and conditionals) instead
# of one from type hints; it reaches the client as written.
@server.tool(input_schema={
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]}, "else": {"required": ["email"]},
    "additionalProperties": False})
def json_schema_2020_12_tool(**arguments) -> str:
    """A tool whose input schema uses JSON Schema 2020-12 features."""
    return f"Received: {arguments}"


# -- Tasks (the SEP-2663 extension): a slow call answered with a task the client polls ------------

@server.tool()
def greet(name: str) -> str:
    """Say hello (never a task)."""
    return f"Hello, {name}!"


@server.tool(task="optional")
async def slow_compute(seconds: float, label: str = "") -> str:
    """Take `seconds` to answer: a task when that is past half a second."""
    await asyncio.sleep(seconds)
    return f"{label or 'computed'}: done after {seconds:g} s"


@server.tool(task="required")
async def failing_job() -> str:
    """Run only as a task, and end with a tool error after a second."""
    await asyncio.sleep(1)
    raise McpError(INTERNAL_ERROR, "failing_job failed, as it always does")


@server.tool(task="optional")
async def protocol_error_job(ctx: Context) -> str:
    """Become a task, then fail with a JSON-RPC error: the task ends failed."""
    await ctx.detach()
    raise RequestError(INTERNAL_ERROR, "protocol_error_job: internal failure")


@server.tool(task="optional")
async def confirm_delete(filename: str, ctx: Context) -> str:
    """Become a task, then ask the user to confirm (the task waits, input_required)."""
    await ctx.detach()
    answer = await ctx.elicit(f"Delete {filename}?", {"confirm": {"type": "boolean"}})
    return f"{filename}: " + ("deleted" if answer.get("content", {}).get("confirm") else "kept")


@server.tool(task="optional")
async def multi_input(ctx: Context) -> str:
    """Become a task, then ask two questions at once."""
    await ctx.detach()
    schema = {"name": {"type": "string"}, "confirm": {"type": "boolean"}}
    first, second = await asyncio.gather(ctx.elicit("First?", schema, key="first"),
                                         ctx.elicit("Second?", schema, key="second"))
    return f"{first.get('content')} {second.get('content')}"


@server.tool(task="required")
async def test_tool_with_task(ctx: Context) -> str:
    """Ask a name first (input_required, no task yet), then go on as a task."""
    answer = await ctx.elicit("Your name?", {"name": {"type": "string"}}, key="user_name")
    await ctx.detach()
    await asyncio.sleep(0.3)
    return f"Hello, {answer.get('content', {}).get('name')}!"


# -- Skills (the SEP-2640 extension): a folder of agent skills, served as resources ----------------

server.skills(os.path.join(os.path.dirname(os.path.abspath(__file__)), "skills"))


# -- Resources: fixed URIs and templates ---------------------------------------------------

@server.resource("test://static-text", mime_type="text/plain", name="Static text")
def static_text():
    """A fixed text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png", name="Static binary")
def static_binary():
    """A fixed binary resource (an image)."""
    return tiny_png()


@server.resource("test://template/{id}/data", mime_type="application/json", name="Template data")
def template_data(id: str):
    """Data for any id."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@server.resource("test://watched-resource", mime_type="text/plain", name="Watched resource")
def watched():
    """A resource clients may subscribe to."""
    return "Watched resource content"


# -- Prompts: arguments come from the signature ---------------------------------------------

@server.prompt()
def test_simple_prompt():
    """A prompt with no arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: Annotated[str, "First test argument"],
                               arg2: Annotated[str, "Second test argument"]):
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: Annotated[str, "URI of the resource to embed"]):
    """A prompt that carries a resource."""
    return [embedded_resource(resourceUri, "Embedded resource content for testing.", "text/plain"),
            "Please process the embedded resource above."]


@server.prompt()
def test_prompt_with_image():
    """A prompt that carries an image."""
    return [image(tiny_png(), "image/png"), "Please analyze the image above."]


# -- Completion: suggestions while the user types an argument ----------------------------------

@server.completion("test_prompt_with_arguments", "arg1")
def complete_arg1(value: str):
    return [v for v in ("paris", "park", "party", "test", "testing") if v.startswith(value)]


@server.completion("test://template/{id}/data", "id")
def complete_id(value: str):
    return [v for v in ("123", "124", "200") if v.startswith(value)]


if __name__ == "__main__":
    sys.exit(server.run())
