"""mcp_min: the Model Context Protocol in one file, standard library only.

MCP lets an AI application (the *client*: VS Code, Claude Desktop, an agent)
discover and call *tools*, read *resources* and fetch *prompts* from a
*server*, over JSON-RPC 2.0. A session starts with a handshake::

    client -> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{...}}
    server <- {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":...}}
    client -> {"jsonrpc":"2.0","method":"notifications/initialized"}

and then the client lists and calls what the server offers::

    client -> {"jsonrpc":"2.0","id":1,"method":"tools/list"}
    client -> {"jsonrpc":"2.0","id":2,"method":"tools/call",
               "params":{"name":"add","arguments":{"a":2,"b":3}}}

A server is a `Server` with decorated functions; type hints become the JSON
Schema the client sees, and the docstring becomes the description:

>>> server = Server("calculator")
>>> @server.tool()
... def add(a: int, b: int = 1) -> int:
...     '''Add two integers.'''
...     return a + b
>>> server.tools["add"].input_schema["required"]
['a']

The session is transport-free: every frame that arrives goes in at one door,
`Session.receive`, which says how many requests it took in, and everything
going out is handed to a callback. Here it is wired by hand (stdio and HTTP
do the same with the bytes they read):

>>> out = []
>>> session = Session(server, lambda message, related: out.append(message))
>>> session.receive(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":'
...     b'{"protocolVersion":"2025-11-25","capabilities":{},'
...     b'"clientInfo":{"name":"doc","version":"1"}}}')
1
>>> out[-1]["result"]["protocolVersion"]
'2025-11-25'
>>> async def call():
...     session.receive(b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
...                     b'"params":{"name":"add","arguments":{"a":2,"b":3}}}')
...     await session.drain()       # wait for what runs
>>> asyncio.run(call())
>>> out[-1]["result"]["content"]
[{'type': 'text', 'text': '5'}]

Bad input is answered, never raised:

>>> session.receive(b'{"jsonrpc":"2.0","id":2,"method":')
0
>>> out[-1]
{'jsonrpc': '2.0', 'id': None, 'error': {'code': -32700, 'message': 'Parse error'}}

A `Client` speaks to servers over stdio or HTTP, or to a `Server` in this very
process, which is how a server's own tests can call its tools:

>>> async def use():
...     async with Client(server) as client:
...         return await client.call_tool("add", {"a": 2, "b": 3})
>>> asyncio.run(use())["structuredContent"]
{'result': 5}

Run it: ``python mcp_min.py serve --stdio`` (the built-in user-store demo),
``python mcp_min.py serve --port 8080`` (HTTP: legacy SSE at /sse and
Streamable HTTP at /mcp), ``python mcp_min.py client URL tools/list``.

Reading guide. The file follows the capture this project began from, a client
over legacy HTTP+SSE: GET /sse -> the `endpoint` event -> initialize ->
initialized -> tools/list -> tools/call -> the stream closes. Read, in order:

1. Constants, errors and JSON-RPC framing: what travels, and what is refused.
2. Schemas from type hints, and the registry: how ``@server.tool()`` turns a
   function into a tool with an inputSchema (`Server`, `Tool`).
3. The session: each frame goes in at `Session.receive`; initialize, then each
   request runs its method handler (`_METHODS`: tools/list, tools/call ...).
4. stdio: lines in, lines out (`serve_stdio`).
5. HTTP: the front door (`HttpServer`: parsing, limits, Host and Origin), then the
   legacy SSE endpoint (`_SseEndpoint`: the capture itself), then Streamable
   HTTP (`_McpEndpoint`: a POST per message, the answer as JSON or a stream).
6. The client: the same conversation from the other end (`Client`).

Skip on a first reading (each is a banner marked "Extension"): the JSON Schema
validator; the 2026-07-28 multi round-trip requests and routing headers;
resumable streams; the tasks and skills extensions; OAuth on both sides;
tracing (--trace); and, last, the command line and the demo.
"""

# SPDX-License-Identifier: MIT  (c) the mcp_min authors; see LICENSE.

import asyncio
import base64
import contextlib
import contextvars
import enum
import functools
import itertools
import json
import logging
import math
import os
import re
import sys
import threading
import time
import typing
from collections import abc, deque
from urllib.parse import parse_qsl, quote_plus, unquote, urlencode, urljoin, urlsplit

__version__ = "0.1.0"
__all__ = [  # noqa: RUF022 — grouped by use, on purpose
    # building a server, and calling one
    "Server", "Context", "Tool", "Resource", "Prompt", "Content", "McpError", "RequestError",
    "UrlElicitationRequired", "TaskStore", "text", "image", "audio", "resource_link", "embedded_resource",
    "Client", "SyncClient", "TaskHandle", "OAuth",
    # serving it, and the transport-free session every transport feeds
    "serve_stdio", "serve_http", "start_http", "HttpServer", "Session", "main", "demo_server",
    # JSON-RPC framing and JSON Schema, for transports and tests of one's own
    "decode", "encode", "classify", "validate",
    # the protocol's numbers
    "PROTOCOL_VERSIONS", "LATEST_PROTOCOL_VERSION", "MODERN_VERSIONS", "BATCH_VERSIONS",
    "LOG_LEVELS", "PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS",
    "INTERNAL_ERROR", "RESOURCE_NOT_FOUND", "CONNECTION_CLOSED", "REQUEST_TIMEOUT",
    "HEADER_MISMATCH", "MISSING_CAPABILITY", "UNSUPPORTED_VERSION", "URL_ELICITATION_REQUIRED",
    "REPLAY_BYTES", "MAX_REPLAY_BYTES", "KEPT_STREAMS", "SSE_RETRY",
    # limits (module settings)
    "MAX_LINE_BYTES", "MAX_CONTAINERS", "MAX_IN_FLIGHT", "MAX_WAITING", "PAGE_SIZE", "MAX_URI",
    "MAX_SUBSCRIPTIONS", "TOOL_TIMEOUT", "SHUTDOWN_GRACE", "STATE_TTL", "MAX_LISTENS", "MAX_QUEUED_BYTES",
    "HANDSHAKE_IDLE", "REPLY_TIMEOUT", "READ_CHUNK", "MAX_BODY_BYTES", "MAX_REQUEST_LINE", "MAX_HEAD_BYTES",
    "MAX_HEADERS", "HEADER_TIMEOUT", "BODY_TIMEOUT", "IDLE_TIMEOUT", "WRITE_TIMEOUT", "WRITE_BUFFER",
    "KEEPALIVE_INTERVAL", "MAX_CONNECTIONS", "MAX_SESSIONS", "MAX_SESSION_ID", "SESSION_IDLE", "MAX_QUEUED",
    "MAX_MESSAGE_BYTES", "CONNECT_TIMEOUT", "KILL_STEP", "DISCOVER_TIMEOUT", "MAX_ROUNDS", "DRAIN_LINGER",
    "TASK_AFTER", "TASK_TTL", "TASK_POLL", "MAX_TASKS", "MAX_TASK_ANSWERS", "MAX_TASK_BYTES",
    "MAX_TASK_RESULT", "TASK_STORE_WAIT", "TASK_STALE", "MAX_SKILL_FILES",
    "MAX_SKILL_BYTES", "MAX_SKILL_DEPTH",
    "__version__",
]

_logger = logging.getLogger("mcp_min")
_Any = typing.Any
_F = typing.TypeVar("_F", bound=typing.Callable[..., _Any])    # a handler, given back unchanged
_T = typing.TypeVar("_T")
_Json = dict[str, _Any]     # a JSON object as it travels
_Answerer = typing.Callable[[_Json], _Any]  # answers what a server asks: a result, or an awaitable of one
_Callback = typing.Callable[[_Json], object]

##############################################################################
# Core: constants: versions, error codes, limits
##############################################################################


# Handshake-era revisions, oldest first. Compared by position, never as strings.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]
# Stateless-era revisions: no initialize; each request names its version and the client's
# capabilities in params._meta (`_MODERN`). Served beside the handshake era (2026-07-28 versioning).
MODERN_VERSIONS = ("2026-07-28",)
# 2025-03-26 basic/index: receivers MUST accept batches; later revisions removed them.
BATCH_VERSIONS = ("2025-03-26",)

# JSON-RPC 2.0 codes, and MCP's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002         # handshake era resources/read of an unknown URI
CONNECTION_CLOSED = -32000          # our own: the peer went away (never sent on the wire)
REQUEST_TIMEOUT = -32001            # our own: a request we sent was not answered in time
HEADER_MISMATCH = -32020            # 2026-07-28 HTTP: a Mcp-* header missing, or not the body's
MISSING_CAPABILITY = -32021         # 2026-07-28: the request needs a client capability not declared
UNSUPPORTED_VERSION = -32022        # 2026-07-28: data {supported, requested}
URL_ELICITATION_REQUIRED = -32042   # 2025-11-25: the user must visit URLs first (data.elicitations)

# Limits: module settings (set one before serving to change it). Each says what
# happens at the edge; the HTTP ones answer with the status named, then close.
MAX_LINE_BYTES = 16 * 1024 * 1024   # stdio: a longer line gets one error and is skipped to its "\n"
MAX_CONTAINERS = 1 << 16            # JSON objects and arrays in one request (outside its strings);
                                    # more -> -32600 / HTTP 400: [[],[],...] parses to ~20x its size
MAX_IN_FLIGHT = 256                 # requests running per session; more wait their turn (stdio: reading
                                    # pauses); while the client owes us an answer, more -> -32603
MAX_WAITING = 10_000                # requests waiting per session, however they came; more -> -32603
PAGE_SIZE = 100                     # items per tools/resources/prompts list page
MAX_URI = 8 * 1024                  # characters in a URI a client subscribes to; longer -> -32002
MAX_SUBSCRIPTIONS = 1000            # resource subscriptions per session; more -> -32602
TOOL_TIMEOUT = 300.0                # seconds a request may run: a tool then gets an isError result,
                                    # anything else -32603 (per server and per tool: `timeout=`)
SHUTDOWN_GRACE = 5.0                # seconds in-flight work may finish after stdin closes, SIGTERM
                                    # or Ctrl-C; what is left is then answered -32603
DRAIN_LINGER = 1.0                  # seconds of that grace (HTTP) kept-alive connections are still
                                    # served (a proxy may be sending on one) before idle ones close
STATE_TTL = 900.0                   # seconds a requestState (2026-07-28 multi round-trip) stays good
MAX_LISTENS = 256                   # subscriptions/listen streams open per server, and a sixteenth of it
                                    # per client (per stdio session; HTTP: per user, else address) -> -32603
REPLY_TIMEOUT = 60.0                # seconds to wait for the answer to a request we send -> -32001
READ_CHUNK = 1 << 16                # bytes asked of a pipe or socket per read
MAX_BODY_BYTES = 4 * 1024 * 1024    # HTTP: a POST body -> 413, checked before reading it
MAX_REQUEST_LINE = 8 * 1024         # -> 414
MAX_HEAD_BYTES = 64 * 1024          # request line + headers -> 431
MAX_HEADERS = 100                   # -> 431
HEADER_TIMEOUT = 10.0               # seconds to send a request head (from connecting) -> 408
BODY_TIMEOUT = 30.0                 # seconds to send the body -> 408
IDLE_TIMEOUT = 15.0                 # a kept-alive connection with no next request is closed
WRITE_TIMEOUT = 30.0                # a reader that stops reading is cut off after this
WRITE_BUFFER = 1 << 16              # bytes unsent to a reader before we wait for it to catch up
KEEPALIVE_INTERVAL = 15.0           # SSE comment lines on quiet streams
MAX_CONNECTIONS = 512               # -> 503
MAX_SESSIONS = 10_000               # -> 503
MAX_SESSION_ID = 128                # a longer Mcp-Session-Id or sessionId is not looked up: 404/400
SESSION_IDLE = 30 * 60.0            # seconds without activity before a session expires
MAX_QUEUED = 1000                   # messages waiting per stream (and from sync tools' threads per
                                    # session): beyond it log and progress notifications are dropped
MAX_QUEUED_BYTES = 16 * 1024 * 1024  # bytes waiting behind the first on an SSE stream: a response or
                                    # request past it or MAX_QUEUED ends the stream (legacy SSE: its session)
REPLAY_BYTES = 4 << 20              # bytes of events a session's SSE stream keeps for a client that
                                    # resumes it (GET + Last-Event-ID), sent or waiting; before -> 400
MAX_REPLAY_BYTES = 64 << 20         # all streams together: the least recently written loses its oldest first
KEPT_STREAMS = 64                   # POSTs' SSE streams a session keeps after their connection is
                                    # over, to be resumed; past it the oldest answered one goes,
                                    # else the oldest not in use (its resume -> 400)
SSE_RETRY = 1000                    # ms a client waits before resuming a stream (SSE retry: field)
HANDSHAKE_IDLE = 60.0               # seconds a session never past initialize lives idle; at
                                    # MAX_SESSIONS the one idle longest makes room if idle this long
MAX_MESSAGE_BYTES = 64 << 20        # client: one message from a server (a stdio line, an HTTP body, an
                                    # SSE event) past it is skipped, and the request it answers fails at
                                    # once, naming it (per Client: max_message_bytes=)
CONNECT_TIMEOUT = 10.0              # client: seconds to reach a server and see its endpoint
DISCOVER_TIMEOUT = 5.0              # client: seconds (at most its timeout) a stdio server gets to
                                    # answer server/discover; no answer: a handshake-era server
MAX_ROUNDS = 10                     # client: input_required rounds answered for one request -> -32603
KILL_STEP = 2.0                     # client: seconds a stdio server gets to exit after EOF, then
                                    # after SIGTERM, before SIGKILL
# The tasks and skills extensions (SEP-2663, SEP-2640):
TASK_AFTER = 0.5                    # seconds a tools/call of a tool with task= runs before it becomes
                                    # a task (if the request declared the extension)
TASK_TTL = 3600.0                   # seconds a task and its result are kept (ttlMs); then they are
                                    # freed, and its work, still running, cancelled
TASK_POLL = 0.5                     # seconds between a client's polls of a task, as the server asks
MAX_TASKS = 1000                    # unexpired tasks per client (its OAuth user, else its address or
                                    # session), 16 times as many in all: past it a call stays a plain one
MAX_TASK_BYTES = 64 << 20           # bytes of every task kept (a quarter of it per client): past it a
                                    # call stays a plain one, and a result that does not fit fails its task
MAX_TASK_RESULT = 4 << 20           # bytes of one task's result: more -> the task fails, naming it
TASK_STORE_WAIT = 10.0              # seconds a call waits for a store another process holds busy
MAX_TASK_ANSWERS = 256 << 10        # bytes of answers a task keeps (to what it asked): more -> -32602
TASK_STALE = 10.0                   # seconds without a sign of life from the process running a task
                                    # (a shared TaskStore) after which it reads failed
MAX_SKILL_FILES = 512               # files in one skill, and bytes: a bigger skill is not served
MAX_SKILL_BYTES = 16 << 20          # (a warning says so)
MAX_SKILL_DEPTH = 16                # folders below a skills folder: deeper ones are not served (warned)

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

##############################################################################
# Core: errors
##############################################################################


class McpError(Exception):
    """A JSON-RPC error: raised to answer a request with `code` and `message`. Raised
    inside a tool it becomes an ``isError`` result: how a tool tells the model what went wrong."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class _DuplicateKey(ValueError):
    pass

##############################################################################
# Core: JSON-RPC framing, pure functions from bytes to messages and back
##############################################################################


def _pairs(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):      # last-key-wins lets a message smuggle a second meaning
        raise _DuplicateKey
    return obj


def _no_constant(name):
    raise ValueError(name)          # NaN and Infinity are not JSON


def _finite(text):
    if (number := float(text)) in (math.inf, -math.inf):
        raise ValueError(text)      # 1e400: JSON, yet no number the wire can carry back
    return number


_decoder = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_no_constant, parse_float=_finite)


def decode(data):
    """Parse one JSON text (bytes or str) strictly, or raise McpError.

    >>> decode(b'{"a": 1}')
    {'a': 1}
    >>> decode('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    mcp_min.McpError: Invalid request: duplicate key
    """
    try:
        if not isinstance(data, str):
            data = bytes(data).decode("utf-8")
        return _decoder.decode(data)
    except _DuplicateKey:
        raise McpError(INVALID_REQUEST, "Invalid request: duplicate key") from None
    except (ValueError, RecursionError):  # includes bad UTF-8, NaN, 4300+ digit integers
        raise McpError(PARSE_ERROR, "Parse error") from None


# Made once: json.dumps() with options builds a new encoder on every call.
_wire_encoder = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_text_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def encode(message):
    """One message as compact JSON bytes, no newline; ASCII, so a lone surrogate cannot break the wire."""
    return _wire_encoder.encode(message).encode("ascii")


def _request_from(data):
    """A peer's frame parsed, refused first if parsing it would multiply it: past MAX_CONTAINERS
    objects and arrays, counted by their ends (a cheap count, made exact only when it is high:
    strings hold brackets too; an open "[[[[" is a parse error, soon found)."""
    if data.count(b"]") + data.count(b"}") > MAX_CONTAINERS:
        bare = _STRINGS.sub(b"", data)
        if bare.count(b"]") + bare.count(b"}") > MAX_CONTAINERS:
            raise McpError(INVALID_REQUEST, f"Invalid request: over {MAX_CONTAINERS} objects and arrays")
    return decode(data)


# A JSON string, or an unterminated one to the end of the frame: every byte is looked at once,
# however the quotes fall (a pattern that needed the closing quote went quadratic on '"\\"]...').
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)


def _encode_safely(message):
    """encode(); what JSON cannot carry becomes an error for its request, or None (a notification)."""
    try:
        return encode(message)
    except (TypeError, ValueError, RecursionError):
        _logger.error("a message is not JSON-serializable: %.200r", message)
        return None if "method" in message else \
            encode(_error(message.get("id"), INTERNAL_ERROR, "Internal error"))


def _encode_all(messages):
    """Messages as one JSON array: a batch's answers (JSON-RPC SHOULD send them together)."""
    return b"[" + b",".join(filter(None, map(_encode_safely, messages))) + b"]"


def _is_id(value):
    return type(value) is str or type(value) is int   # bool is an int; 1 and "1" differ


_REQUEST_KEYS = frozenset(("jsonrpc", "id", "method", "params"))
_RESPONSE_KEYS = (frozenset(("jsonrpc", "id", "result")), frozenset(("jsonrpc", "id", "error")))


def classify(message):
    """Say what a parsed message is: 'request', 'notification' or 'response' (else McpError).

    >>> classify({"jsonrpc": "2.0", "id": 0, "method": "ping"})
    'request'
    >>> classify({"jsonrpc": "2.0", "id": True, "method": "ping"})
    Traceback (most recent call last):
    mcp_min.McpError: Invalid request
    """
    if type(message) is not dict or message.get("jsonrpc") != "2.0":
        raise McpError(INVALID_REQUEST, "Invalid request")
    if "method" in message:
        # Exact member names only: "Method" or "method\\u0000" must not pass.
        if message.keys() <= _REQUEST_KEYS and type(message["method"]) is str:
            if "id" not in message:
                return "notification"
            if _is_id(message["id"]):
                return "request"
    elif message.keys() in _RESPONSE_KEYS and (_is_id(message["id"]) or message["id"] is None):
        return "response"
    raise McpError(INVALID_REQUEST, "Invalid request")


def _error(id_, code, message, data=None):
    error = {"code": code, "message": message, **({} if data is None else {"data": data})}
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def _result(id_, result):
    return {"jsonrpc": "2.0", "id": id_, "result": result}

##############################################################################
# Core: content, what tools return and prompts hold
##############################################################################


class _CallToolResult(typing.TypedDict):
    content: list[_Json]


class CallToolResult(_CallToolResult, total=False):
    """What `Client.call_tool` returns: a tool's failure is ``isError``, not an exception."""
    structuredContent: _Any
    isError: bool
    _meta: _Json


class _ToolInfo(typing.TypedDict):
    name: str
    inputSchema: _Json


class ToolInfo(_ToolInfo, total=False):
    """A tool as `Client.list_tools` lists it."""
    title: str
    description: str
    outputSchema: _Json
    annotations: _Json
    icons: list[_Json]
    _meta: _Json


class ReadResourceResult(typing.TypedDict):
    """What `Client.read_resource` returns."""
    contents: list[_Json]


class _GetPromptResult(typing.TypedDict):
    messages: list[_Json]


class GetPromptResult(_GetPromptResult, total=False):
    """What `Client.get_prompt` returns."""
    description: str


class Content(dict[str, _Any]):
    """A content block (a dict with a ``type``), marked so a tool's own dicts are never taken for one."""


def text(value, **extra):
    """A text content block."""
    return Content(type="text", text=value, **extra)


def image(data, mime_type="image/png", **extra):
    """An image block from raw bytes (or an already base64 string)."""
    return Content(type="image", data=_b64(data), mimeType=mime_type, **extra)


def audio(data, mime_type="audio/wav", **extra):
    """An audio block from raw bytes (or an already base64 string)."""
    return Content(type="audio", data=_b64(data), mimeType=mime_type, **extra)


def resource_link(uri, name, **extra):
    """A link to a resource the client may read (2025-06-18+)."""
    return Content(type="resource_link", uri=uri, name=name, **extra)


def embedded_resource(uri, value, mime_type=None, **extra):
    """A resource's contents inline: `value` is str (text) or bytes (blob)."""
    return Content(type="resource", resource=_contents(uri, value, mime_type), **extra)


def _b64(data):
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _contents(uri, value, mime_type=None):
    blob = isinstance(value, (bytes, bytearray, memoryview))
    return {"uri": uri, **({"mimeType": mime_type} if mime_type else {}),
            **({"blob": _b64(bytes(value))} if blob else {"text": str(value)})}

##############################################################################
# Core: schemas from type hints
##############################################################################


def _hint(tp, depth=0):
    """A type hint as data: its JSON Schema, and the loader that turns JSON the schema accepted into
    what the hint asks for (a date, a dataclass ...), or None where the JSON already is that. Built
    at registration: a hint with no JSON form (a custom class, Callable) is a TypeError then.

    >>> _hint(list[int])[0]
    {'type': 'array', 'items': {'type': 'integer'}}
    """
    if depth > 20:      # deeper (a recursive dataclass): no schema, and the loader built when used
        return {}, lambda value: _convert(value, tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in _ORIGINS:      # Annotated[T, ...], Literal[...], a union, NotRequired[T] ...
        return _ORIGINS[origin](args, depth + 1)
    if hasattr(tp, "__supertype__"):    # NewType("Id", int)
        return _hint(tp.__supertype__, depth + 1)
    if tp in _SIMPLE_TYPES:
        return {"type": _SIMPLE_TYPES[tp]}, _SIMPLE_LOADS.get(tp)
    if tp is typing.Any or tp is object or isinstance(tp, typing.TypeVar):
        return {}, None
    return (origin is None and isinstance(tp, type) and _class_hint(tp, depth)) \
        or _container_hint(tp, origin, args, depth)


def _literal(args, depth=0):
    schema: _Json = {"enum": list(args)}
    kinds = {_SIMPLE_TYPES.get(type(a)) for a in args}
    if len(kinds) == 1 and None not in kinds:   # one JSON type: say which
        schema["type"] = kinds.pop()
    return schema, None


def _annotated(args, depth):
    """Annotated[str, "what it is"], or Annotated[T, {more schema keywords}]."""
    schema, load = _hint(args[0], depth)
    for extra in args[1:]:
        schema = {**schema, **({"description": extra} if isinstance(extra, str) else
                               extra if isinstance(extra, dict) else {})}
    return schema, load


def _class_hint(tp, depth):
    """An Enum, a type that travels as a string, a record, a str or int subclass; or None."""
    if issubclass(tp, enum.Enum):
        return _literal([m.value for m in tp])[0], tp
    if (as_string := _string_type(tp)):
        return dict(as_string[0]), functools.partial(as_string[1], tp)
    if issubclass(tp, tuple) and hasattr(tp, "_fields"):      # a NamedTuple
        hints = typing.get_type_hints(tp)
        return _tuple_hint([hints.get(f, typing.Any) for f in typing.cast(_Any, tp)._fields], depth, tp)
    if _is_dataclass(tp) or issubclass(tp, dict) and hasattr(tp, "__required_keys__"):
        return _record(tp, depth)
    if (simple := next((_SIMPLE_TYPES[k] for k in tp.__mro__ if k in _SIMPLE_TYPES), None)):
        return {"type": simple}, tp
    return None


def _container_hint(tp, origin, args, depth):
    """An object for a mapping hint (dict[K, V] ...), an array for another collection (list[T], deque ...)."""
    cls = origin or tp
    if not isinstance(cls, type) or issubclass(cls, (str, bytes, bytearray, memoryview)) \
            or not (issubclass(cls, abc.Collection) or cls is abc.Iterable):
        raise TypeError(f"unsupported type hint {_hint_name(tp)}")
    if issubclass(cls, abc.Mapping):
        item, load = _hint(args[1] if len(args) == 2 else typing.Any, depth + 1)
        schema = {"type": "object", **({"additionalProperties": item} if item else {})}
        return schema, load and (lambda value: {k: _load(load, v) for k, v in value.items()}
                                 if type(value) is dict else value)
    if cls is tuple and args and args[-1] is not Ellipsis:    # tuple[int, str]
        return _tuple_hint(args, depth, lambda *items: items)
    item, load = _hint(args[0] if args else typing.Any, depth + 1)
    schema, make = {"type": "array", **({"items": item} if item else {})}, typing.cast(_Any, cls)
    if getattr(cls, "__abstractmethods__", None):     # Sequence, Set ...: a list, frozenset or set
        make = list if not issubclass(cls, abc.Set) else set if issubclass(cls, abc.MutableSet) else frozenset
    if make is list and load is None:
        return schema, None
    return schema, lambda value: make(_load(load, v) for v in value) if type(value) is list else value


def _tuple_hint(args, depth, make):
    items = [_hint(a, depth + 1) for a in args]
    return ({"type": "array", "prefixItems": [schema for schema, _ in items],
             "minItems": len(items), "maxItems": len(items)},
            lambda value: make(*(_load(load, v) for (_, load), v in zip(items, value)))
            if type(value) is list else value)


def _load(load, value):
    return value if load is None or value is None else load(value)


def _union(args, depth):
    """anyOf the options; the loader uses the first that validates and loads."""
    options = [_hint(a, depth) for a in args]
    any_of = {"anyOf": [schema for schema, _ in options]}
    if not any(load for _, load in options):
        return any_of, None
    checks = {}     # compiled when first needed: recursive hints register fast

    def first_that_loads(value):
        failed = None
        for i, (schema, load) in enumerate(options):
            if (checks.get(i) or checks.setdefault(i, _checker(schema)))(value, "") is None:
                try:
                    return _load(load, value)
                except _BAD_VALUE as e:     # "tomorrow" is no date | str's date, but its str
                    failed = e
        if failed:
            raise failed
        return value
    return any_of, first_that_loads


def _record(tp, depth):
    """A dataclass or TypedDict: an object of fields, arriving as the dataclass or a dict."""
    hints, required, make, takes = _fields(tp)
    fields = {k: _hint(v, depth + 1) for k, v in hints.items()}
    schema = {"type": "object", "properties": {k: schema for k, (schema, _) in fields.items()},
              **({"required": list(required)} if required else {})}
    doc = _first_paragraph(tp.__doc__)
    if doc and not doc.startswith(tp.__name__ + "("):    # skip dataclass's generated doc
        schema["description"] = doc
    loads = {k: load for k, (_, load) in fields.items() if load}

    def load(value):    # unchecked (a prompt's text): left to the function
        if type(value) is not dict:
            return value
        value = {k: _load(loads.get(k), v) for k, v in value.items()}
        return make(**{k: v for k, v in value.items() if takes is None or k in takes})
    return schema, load


@functools.lru_cache(maxsize=256)     # a recursive record past depth 20 is built again for each value
def _fields(tp):
    """A record's field hints, the fields it requires, what makes one from keywords, and which
    keywords that takes (None: any; others, as extra keys and init=False fields, are ignored)."""
    hints = typing.get_type_hints(tp, include_extras=True)
    if _is_dataclass(tp):
        import dataclasses
        import inspect
        fields, missing = dataclasses.fields(tp), dataclasses.MISSING
        required = [f.name for f in fields if f.init and f.default is missing
                    and f.default_factory is missing]
        params = inspect.signature(tp).parameters.values()
        takes = None if any(p.kind is p.VAR_KEYWORD for p in params) else frozenset(p.name for p in params)
        return {f.name: hints.get(f.name, typing.Any) for f in fields}, required, tp, takes
    # A TypedDict. String annotations (from __future__) hide Required/NotRequired from __required_keys__.
    marked = {k: typing.get_origin(h) for k, h in hints.items()}
    required = [k for k in hints if _REQUIRED and marked[k] is _REQUIRED
                or k in tp.__required_keys__ and not (_NOT_REQUIRED and marked[k] is _NOT_REQUIRED)]
    return hints, required, dict, None


def _convert(value, tp):
    """JSON that `tp`'s schema accepted, as what `tp` asks for (built afresh: handlers keep theirs)."""
    return _load(_hint(tp)[1], value)


_SIMPLE_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null",
                 None: "null"}      # list[None]'s argument is None, not NoneType
# JSON's 2.0 is a valid integer, and 2 a valid number: each arrives as the hint's type.
_SIMPLE_LOADS = {int: lambda v: int(v) if type(v) is float else v,
                 float: lambda v: float(v) if type(v) is int else v}
_REQUIRED, _NOT_REQUIRED = getattr(typing, "Required", None), getattr(typing, "NotRequired", None)
_MARKERS = tuple(filter(None, (_REQUIRED, _NOT_REQUIRED, getattr(typing, "ReadOnly", None))))
_UNIONS = (typing.Union, type(int | str))     # Optional[X], X | Y
_ORIGINS = {typing.Annotated: _annotated, typing.Literal: _literal, **dict.fromkeys(_UNIONS, _union),
            **dict.fromkeys(_MARKERS, lambda args, depth: _hint(args[0], depth))}


def _hint_name(tp):
    return tp.__qualname__ if isinstance(tp, type) else repr(tp).replace("typing.", "")


def _from_iso(tp, value):
    # 3.10's fromisoformat takes no "Z"; RFC 3339 date-times (JSON Schema's format) often end in one.
    return tp.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)


# Standard-library types that travel as JSON strings: (schema, from JSON given the hint's
# class, to JSON). Keyed by name, so that none of their modules is imported for the table.
_STRING_TYPES = {
    **{f"datetime.{name}": ({"type": "string", "format": form}, _from_iso, lambda v: v.isoformat())
       for name, form in (("datetime", "date-time"), ("date", "date"), ("time", "time"))},
    "uuid.UUID": ({"type": "string", "format": "uuid"}, lambda tp, v: tp(v), str),
    "pathlib.PurePath": ({"type": "string", "format": "path"}, lambda tp, v: tp(v), str),
    # A number or a string in (a float's shortest repr: 0.1 stays 0.1); a string out, exact.
    "decimal.Decimal": ({"type": ["number", "string"]}, lambda tp, v: _decimal(tp(str(v))), str),
    **dict.fromkeys(("builtins.bytes", "builtins.bytearray"), (
        {"type": "string", "contentEncoding": "base64"},
        lambda tp, v: tp(base64.b64decode(v, validate=True)), lambda v: _b64(v))),
}


def _decimal(number):
    # NaN, Infinity or 1e999999999 would reach the tool as a trap (Overflow, a 1 GB string).
    if not number.is_finite() or abs(number.adjusted()) > 1000:
        raise ValueError("a finite number below 1e1000 is expected")
    return number


def _string_type(cls):
    """The _STRING_TYPES entry for a class or its nearest base (datetime before date)."""
    names = (f"{klass.__module__.partition('.')[0]}.{klass.__qualname__}" for klass in cls.__mro__)
    return next((_STRING_TYPES[name] for name in names if name in _STRING_TYPES), None)


def _first_paragraph(doc):
    return " ".join((doc or "").strip().split("\n\n")[0].split()) or None


def _is_dataclass(obj):
    # What dataclasses.is_dataclass checks, without importing it for servers that use none.
    return hasattr(obj, "__dataclass_fields__")


def _to_json(value):
    """A tool's return value as plain JSON data (dataclasses, enums, tuples, dates ...)."""
    if type(value) in _SIMPLE_TYPES:
        return value
    if type(value) is dict:
        return {str(k): _to_json(v) for k, v in value.items()}
    if _is_dataclass(value) and not isinstance(value, type):
        import dataclasses
        return {f.name: _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _to_json(value.value)
    if type(value) is list:
        return [_to_json(v) for v in value]
    if (as_string := _string_type(type(value))):
        return as_string[2](value)
    if isinstance(value, abc.Mapping):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, abc.Iterable) and not isinstance(value, (str, bytes, bytearray, memoryview)):
        return [_to_json(v) for v in value]    # a range, a generator, a deque ...
    return value

##############################################################################
# Core: the server's registry of tools, resources and prompts
##############################################################################


class _Handler:
    """A registered function, with what its signature says about calling it."""

    def __init__(self, fn: typing.Callable[..., _Any], description: str | None = None) -> None:
        import inspect  # imported here: the cost is paid only when registering
        self.fn, self.is_async, self.empty = fn, inspect.iscoroutinefunction(fn), inspect.Parameter.empty
        try:
            self.hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:  # noqa: BLE001 — unresolvable forward references: no hints, no schema
            self.hints = {}
        self.context_param, self.var_keyword = None, False
        self.params = []        # (name, hint, default or self.empty)
        for p in inspect.signature(fn).parameters.values():
            if p.kind is p.POSITIONAL_ONLY:
                raise ValueError(f"{getattr(fn, '__name__', fn)!r}: parameter {p.name!r} is "
                                 "positional-only; arguments arrive by name")
            hint = self.hints.get(p.name, typing.Any)
            if _strip(hint) is Context:
                self.context_param = p.name
            elif p.kind is p.VAR_KEYWORD:
                self.var_keyword = True
            elif p.kind is not p.VAR_POSITIONAL:
                self.params.append((p.name, hint, p.default))
        self.description = description or _first_paragraph(fn.__doc__)
        built = {name: self.hint(name, hint) for name, hint, _ in self.params}
        self.schemas = {name: schema for name, (schema, _) in built.items()}
        self.loads = {name: load for name, (_, load) in built.items() if load}  # where JSON is not the value
        self.names = frozenset(self.schemas)

    def hint(self, name, hint):
        """Parameter `name`'s (or "return"'s) schema and loader: a bad hint is the author's TypeError."""
        try:
            return _hint(hint)
        except TypeError as e:
            what = "its return value" if name == "return" else f"parameter {name!r}"
            raise TypeError(f"{getattr(self.fn, '__qualname__', self.fn)}(): {what}: {e}; use a "
                            "JSON type (str, int, list[str], a TypedDict or dataclass ...), "
                            "date/time, UUID, Decimal, Path, bytes, or typing.Any") from None

    def _schema(self):
        props: dict[str, _Json] = {name: dict(self.schemas[name]) for name, _, _ in self.params}
        for name, _, default in self.params:
            if default is not self.empty:
                with contextlib.suppress(TypeError, ValueError):    # no JSON form: no default shown
                    json.dumps(default := _to_json(default), allow_nan=False)
                    props[name]["default"] = default
        required = [name for name, _, default in self.params if default is self.empty]
        schema = {"type": "object", "properties": props, **({"required": required} if required else {})}
        if not self.var_keyword:
            schema["additionalProperties"] = False
        return schema

    async def call(self, arguments, context):
        loads = self.loads
        kwargs = {name: self.convert(name, value) if name in loads else value
                  for name, value in arguments.items() if self.var_keyword or name in self.names}
        if self.context_param:
            kwargs[self.context_param] = context
        if self.is_async:
            return await self.fn(**kwargs)
        return await asyncio.to_thread(self.fn, **kwargs)     # off the loop: a slow tool stalls no other

    def convert(self, name, value):
        try:
            return _load(self.loads[name], value)
        except _BAD_VALUE as e:     # "2024-13-01" for a date
            why = f" ({str(e)[:200]})" if isinstance(e, ValueError) else ""
            raise McpError(INVALID_PARAMS, f"Invalid arguments: {name}: not a valid "
                                           f"{_hint_name(_strip(self.hints.get(name)))}{why}") from None


# What converting JSON a schema passed may still raise: the value, not the server, is wrong.
_BAD_VALUE = (ValueError, TypeError, ArithmeticError, RecursionError)


def _strip(hint):
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in _UNIONS:
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) == 1:
            return _strip(options[0])
    return hint


class Tool(_Handler):
    """A tool. Options: `name` (default: the function's), `description` (default: the docstring's
    first paragraph), `title`, `annotations` (readOnlyHint ...), `input_schema` / `output_schema`
    (default: from the type hints), `meta`, `icons`, `timeout` (seconds a call may run; default
    the server's, else TOOL_TIMEOUT), `scopes` (OAuth scopes a caller's token needs, over HTTP
    with a ResourceServer: without them, 403 and the client may ask for more), `task`: "optional"
    (a call may become a task, SEP-2663: see `Context.detach`) or "required" (only as a task)."""

    def __init__(self, fn, name=None, description=None, title=None, annotations=None, input_schema=None,
                 output_schema=None, meta=None, icons=None, timeout=None, scopes=(), task=None):
        super().__init__(fn, description)
        self.name, self.timeout, self.task = name or fn.__name__, timeout, task
        if task not in (None, "optional", "required"):
            raise ValueError(f"tool {self.name!r}: task must be None, 'optional' or 'required'")
        self.scopes = frozenset(scopes.split() if isinstance(scopes, str) else scopes)
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", self.name):    # 2025-11-25 server/tools
            raise ValueError(f"tool name {self.name!r}: use 1-128 of A-Z a-z 0-9 _ - .")
        # A schema of the author's is copied: what is advertised stays what is checked.
        self.input_schema = json.loads(json.dumps(input_schema)) if input_schema else self._schema()
        self.check_input = _checker(self.input_schema)
        # 2026-07-28 HTTP: the arguments marked x-mcp-header come in Mcp-Param-* headers too
        if (headers := _header_params(self.input_schema)) is None:
            _logger.warning("tool %r: its x-mcp-header marks are invalid: 2026-07-28 HTTP clients "
                         "will leave it out", self.name)
        self.param_headers = headers or ()
        self.wrap = False       # structured output must be an object: others go under "result"
        if output_schema:
            output_schema = json.loads(json.dumps(output_schema))
        elif "return" in self.hints and not _mentions_content(returns := self.hints["return"]) \
                and _strip(returns) not in (str, typing.Any, type(None), typing.NoReturn,
                                            getattr(typing, "Never", None)):
            output_schema = self.hint("return", returns)[0]
            if output_schema and output_schema.get("type") != "object":
                output_schema = {"type": "object", "properties": {"result": output_schema},
                                 "required": ["result"]}
                self.wrap = True
        self.output_schema = output_schema or None
        self.check_output = _checker(self.output_schema)
        self.definition = {"name": self.name, **{k: v for k, v in (
            ("title", title), ("description", self.description), ("inputSchema", self.input_schema),
            ("outputSchema", self.output_schema), ("annotations", annotations), ("icons", icons),
            ("_meta", meta)) if v}}

    def result(self, value):
        """A CallToolResult from whatever the function returned."""
        if isinstance(value, Content):
            return {"content": [value]}
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, Content) for v in value):
            return {"content": list(value)}
        if value is None and not self.output_schema:
            return {"content": []}
        if isinstance(value, str) and not self.wrap:
            return {"content": [text(value)]}
        data = _to_json(value)
        body = _text_encoder.encode(data)
        structured = {"result": data} if self.wrap or type(data) is not dict else data
        if (problem := self.check_output(structured, "")):
            _logger.error("tool %s returned a value that does not match its outputSchema: %s",
                       self.name, problem)
            return _tool_error(f"Tool '{self.name}' returned malformed output.")
        return {"content": [text(body)], "structuredContent": structured}


def _mentions_content(hint):
    return hint is Content or any(_mentions_content(a) for a in typing.get_args(hint))


def _tool_error(message):
    return {"content": [text(message)], "isError": True}


class Resource(_Handler):
    """A resource, or a template when `uri` has {variables} (passed to the function by name). The
    function returns str (text), bytes (blob), JSON-able data (as application/json text) or contents
    dicts. Options: `name`, `description`, `mime_type`, `title`, `annotations`, `meta`, `icons`, `size`."""

    def __init__(self, fn, uri, name=None, description=None, mime_type=None, title=None,
                 annotations=None, meta=None, icons=None, size=None):
        super().__init__(fn, description)
        self.uri, self.mime_type = uri, mime_type
        self.template = _UriTemplate(uri) if "{" in uri else None
        self.definition = {"uriTemplate" if self.template else "uri": uri, **{k: v for k, v in (
            ("name", name or fn.__name__), ("title", title), ("description", self.description),
            ("mimeType", mime_type), ("annotations", annotations), ("icons", icons), ("_meta", meta),
            ("size", size)) if v is not None}}

    def contents(self, uri, value):
        if isinstance(value, dict) and "uri" in value:
            return [value]
        if isinstance(value, list) and all(isinstance(v, dict) and "uri" in v for v in value):
            return value
        if isinstance(value, (str, bytes, bytearray, memoryview)):
            return [_contents(uri, value, self.mime_type)]
        value = json.dumps(_to_json(value), ensure_ascii=False)
        return [_contents(uri, value, self.mime_type or "application/json")]


class _UriTemplate:
    """RFC 6570 level 1 (``{name}``) matched in linear time: each variable takes the text up
    to the first occurrence of the literal after it (no backtracking: hostile URIs cost O(n)).
    A value is percent-decoded, and may not then hold '/', '\\', NUL, a drive ('C:'), or be
    '.' or '..', so a variable can never walk a path out of its segment.

    >>> _UriTemplate("users://{name}/profile").match("users://ada%20l/profile")
    {'name': 'ada l'}
    """

    def __init__(self, template):
        self.parts = re.split(r"\{([^{}]*)\}", template)     # literal, variable name, literal ...
        if any("{" in literal for literal in self.parts[::2]) \
                or not all(name.isidentifier() for name in self.parts[1::2]):
            raise ValueError(f"bad URI template {template!r}: use {{name}} variables")

    def match(self, uri):
        parts = self.parts
        if not uri.startswith(parts[0]):
            return None
        pos, found = len(parts[0]), {}
        for i in range(1, len(parts), 2):
            literal = parts[i + 1]
            if i + 2 == len(parts):        # the final variable runs to the final literal
                end = len(uri) - len(literal) if uri.endswith(literal) else -1
            else:       # "{a}{b}": adjacent variables cannot be told apart
                end = uri.find(literal, pos) if literal else -1
            value = unquote(uri[pos:end])
            if end <= pos or value in (".", "..") or any(c in value for c in "/\\\x00") or value[1:2] == ":":
                return None
            found[parts[i]] = value
            pos = end + len(literal)
        return found


class Prompt(_Handler):
    """A prompt: its arguments are the function's parameters (strings; a default makes one
    optional). The function returns a string (one user message), content blocks, {"role",
    "content"} dicts, or a list of them. Options: `name`, `description`, `title`, `meta`, `icons`."""

    def __init__(self, fn, name=None, description=None, title=None, meta=None, icons=None):
        super().__init__(fn, description)
        self.name = name or fn.__name__
        arguments = [{"name": pname, **({"description": self.schemas[pname]["description"]}
                                        if self.schemas[pname].get("description") else {}),
                      "required": default is self.empty} for pname, _, default in self.params]
        self.definition = {"name": self.name, **{k: v for k, v in (
            ("title", title), ("description", self.description),
            ("arguments", arguments), ("icons", icons), ("_meta", meta)) if v}}

    def messages(self, value):
        items = value if isinstance(value, (list, tuple)) else [value]
        return [item if isinstance(item, dict) and "role" in item else
                {"role": "user", "content": item if isinstance(item, Content) else text(str(item))}
                for item in items]


class Server:
    """An MCP server: register tools, resources and prompts, then `run()`. Its capabilities
    follow from what is registered; a change while clients are connected sends them list_changed."""

    def __init__(self, name: str, version: str = "0.1.0", instructions: str | None = None,
                 title: str | None = None, timeout: float | None = None, state_key: str | bytes | None = None,
                 tasks: "TaskStore | None" = None, **info: _Any) -> None:
        self.info = {"name": name, "version": version, **({"title": title} if title else {}), **info}
        # Tools with task= run as tasks kept in `task_store` (default: made at the first, in memory);
        # a TaskStore(path) that several processes share lets each answer for the others' tasks.
        self.task_store = tasks
        self.works: dict[str, asyncio.Future[_Any]] = {}    # task id -> the work this process runs
        self.runner = os.urandom(8).hex()           # this process, as its tasks' records name it
        self.skill_entries: dict[str, _Json] = {}   # SKILL.md URI -> skills/list entry (`skills`)
        self.skill_dirs: dict[str, list[_Json]] = {}    # skill folder URI -> what is in it
        self.instructions = instructions
        self.timeout = timeout  # seconds any request may run (default TOOL_TIMEOUT)
        self.abandoned = 0      # sync tools' threads cancelled while running (they run on)
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.prompts: dict[str, Prompt] = {}
        self.completions: dict[tuple[str, str, str], _Handler] = {}     # (ref kind, name or URI, argument)
        self.on_roots_changed: typing.Callable[[Session], object] | None = None     # the Session told
        # 2026-07-28: how clients may cache lists, reads and discovery (ttlMs 0: stale at once).
        self.cache = {"ttlMs": 0, "cacheScope": "private"}
        self.sessions: set[Session] = set()     # live sessions, for change notifications
        self.meta = {"io.modelcontextprotocol/serverInfo": self.info}  # on 2026-07-28 results
        # Seals requestState (2026-07-28 multi round-trip requests): the processes that
        # share it (MCP_MIN_STATE_KEY) each continue what another began.
        key = state_key or os.environ.get("MCP_MIN_STATE_KEY") or os.urandom(32)
        self.state_key = key.encode() if isinstance(key, str) else bytes(key)
        if len(self.state_key) < 16:
            raise ValueError("state_key (MCP_MIN_STATE_KEY) must be at least 16 bytes")

    auth: "ResourceServer | None" = None    # guards it over HTTP, unless given token= or auth=

    # Each decorator returns the function unchanged, so it can still be called (and tested).
    @typing.overload
    def tool(self, name: _F, /) -> _F: ...
    @typing.overload
    def tool(self, name: str | None = None, **options: _Any) -> typing.Callable[[_F], _F]: ...

    def tool(self, name: _Any = None, **options: _Any) -> _Any:
        """Decorator: register a function as a tool (see `Tool` options); ``@server.tool`` too."""
        return _decorator(name, lambda fn, name: self.add_tool(fn, name, **options))

    def add_tool(self, fn: typing.Callable[..., _Any], name: str | None = None, **options: _Any) -> "Tool":
        return self._add("tools", Tool(fn, name, **options))

    def remove_tool(self, name: str) -> None:
        self._remove("tools", name)

    def resource(self, uri: str, **options: _Any) -> typing.Callable[[_F], _F]:
        """Decorator: a resource at `uri`, or a template if it has {variables}."""
        if not isinstance(uri, str):
            raise TypeError('@server.resource needs the URI first: @server.resource("notes://today")')
        return _decorator(None, lambda fn, _: self.add_resource(fn, uri, **options))

    def add_resource(self, fn: typing.Callable[..., _Any], uri: str, **options: _Any) -> "Resource":
        return self._add("resources", Resource(fn, uri, **options), uri)

    def remove_resource(self, uri: str) -> None:
        self._remove("resources", uri)

    @typing.overload
    def prompt(self, name: _F, /) -> _F: ...
    @typing.overload
    def prompt(self, name: str | None = None, **options: _Any) -> typing.Callable[[_F], _F]: ...

    def prompt(self, name: _Any = None, **options: _Any) -> _Any:
        """Decorator: register a function returning messages as a prompt; ``@server.prompt`` too."""
        return _decorator(name, lambda fn, name: self.add_prompt(fn, name, **options))

    def add_prompt(self, fn: typing.Callable[..., _Any], name: str | None = None,
                   **options: _Any) -> "Prompt":
        return self._add("prompts", Prompt(fn, name, **options))

    def remove_prompt(self, name: str) -> None:
        self._remove("prompts", name)

    def _add(self, kind, item, key=None):
        getattr(self, kind)[item.name if key is None else key] = item
        self._changed(kind)
        return item

    def _remove(self, kind, key):
        if getattr(self, kind).pop(key, None):
            self._changed(kind)

    def completion(self, ref: str, argument: str) -> typing.Callable[[_F], _F]:
        """Decorator: suggest values for `argument` of a prompt (by name) or a resource template
        (by its URI template). The function takes the partial value (and optionally the
        arguments already chosen, as a dict) and returns a list of strings."""
        if not isinstance(ref, str) or not isinstance(argument, str):
            raise TypeError('@server.completion needs a prompt name or URI template and an '
                            'argument name: @server.completion("greet", "name")')

        def add(fn, _):
            self.completions["ref/resource" if "://" in ref else "ref/prompt", ref, argument] = _Handler(fn)
        return _decorator(None, add)

    def skills(self, path: str) -> None:
        """Serve the agent skills in folder `path` (SEP-2640): each folder under it holding a
        SKILL.md (YAML front matter with name and description; the folder's name is the skill's)
        is a skill, and every file in it a resource, ``skill://<folder>/<file>``. Call it again
        when they change on disk: the last call's set is what is served."""
        _add_skills(self, path)

    def offers(self, capability: str) -> bool:
        """Whether the server declares `capability` (without building the dict)."""
        return capability == "logging" or bool(getattr(self, capability))

    @property
    def task_tools(self) -> bool:
        """Whether a tool may run as a task: the tasks extension is offered."""
        return any(tool.task for tool in self.tools.values())

    def capabilities(self) -> _Json:
        caps: _Json = {"logging": {}, "tools": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True},
                "prompts": {"listChanged": True}, "completions": {}}
        caps = {k: v for k, v in caps.items() if self.offers(k)}
        extensions = {name: value for name, value, on in ((_TASKS, {}, self.task_tools),
                      (_SKILLS, {"directoryRead": True}, self.skill_entries)) if on}
        return {**caps, "extensions": extensions} if extensions else caps

    def _changed(self, kind):
        for session in list(self.sessions):
            session.notify(f"notifications/{kind}/list_changed")
            session.publish(f"notifications/{kind}/list_changed", {},
                            lambda wanted: wanted.get(kind + "ListChanged"))

    def resource_updated(self, uri: str) -> None:
        """Tell subscribed clients that the resource at `uri` changed."""
        for session in list(self.sessions):
            if uri in session.subscriptions:
                session.notify("notifications/resources/updated", {"uri": uri})
            session.publish("notifications/resources/updated", {"uri": uri},
                            lambda wanted: uri in wanted.get("resourceSubscriptions", ()))

    def run(self, argv: list[str] | None = None, exit: bool = True) -> int:
        """Serve over stdio, or HTTP with ``--port``: the same options as
        ``python mcp_min.py serve`` (call it from ``if __name__ == "__main__"``). Then end the
        process with the exit status, as ``unittest.main()`` does, so that a supervisor sees a
        failure (the port in use: 1); ``exit=False`` returns it instead."""
        about = f"Serve the MCP server {self.info['name']!r} over stdio (the default) or HTTP (--port)."
        args = _serve_parser(about).parse_args(_bare_trace(sys.argv[1:] if argv is None else argv))
        code = _serve(self, args)
        if exit:
            sys.exit(code)
        return code


def _decorator(name: _Any, add: typing.Callable[[_Any, _Any], object]) -> _Any:
    if not (name is None or isinstance(name, str) or callable(name)):
        raise TypeError(f"a name is a string, not {type(name).__name__}: @server.tool(\"name\")")

    def register(fn):
        add(fn, None if fn is name else name)
        return fn
    return register(name) if callable(name) else register   # bare @server.tool: the function is the name

##############################################################################
# Core: the session, one client's conversation whatever carries it
##############################################################################


class Context:
    """What a handler knows of the request it serves, and how it talks back. Declare a parameter
    annotated ``Context`` to receive one. `log` and `progress` may be awaited or not; `sample`,
    `elicit` and `list_roots` are coroutines (from a sync tool: ``ctx.run(ctx.sample(...))``).

    In a session (handshake era) those three send a request to the client and wait. A 2026-07-28
    request cannot: the server asks by answering, with an ``input_required`` result, and the
    client calls again with the answers. The handler then runs again from the start, and each ask
    returns its answer at once (asks are told apart by `key`, by default their order). So code
    before an ask runs once per round: wrap what must happen only once (a payment, an id) in `once`.

    A tool registered with ``task=`` may become a task (SEP-2663): the client gets a task id at once,
    and polls it. In a task, `sample`, `elicit` and `list_roots` wait for the client's tasks/update
    (the code runs once), while `log` and `progress` go nowhere: the client is not listening.
    """

    def __init__(self, session: "Session", request_id: str | int | None = None, meta: _Any = None) -> None:
        self.session, self.request_id = session, request_id
        # the caller's verified token (AuthInfo: subject, scopes, client_id, claims) over HTTP with
        # auth, else None: this request's, which a later request of the same user cannot change
        self.auth = getattr(session, "auth", None)
        self.meta = meta if type(meta) is dict else {}
        version = self.meta.get(_VERSION_KEY)
        self.version = version if type(version) is str else None  # a 2026-07-28 request's own
        token = self.meta.get("progressToken")     # a string or a number, never a bool
        self.progress_token = token if type(token) in (str, int, float) else None
        self._last_progress: float | None = None

    _rounds: "_Rounds | None" = None    # a 2026-07-28 request that may ask: its `_Rounds`
    task_id: str | None = None          # the task's id, once this call is one (`detach`)
    _asked = 0                          # what the task asked so far
    _detach: "typing.Callable[[], typing.Awaitable[bool]] | None" = None   # makes the call a task, if it may

    @property
    def client_capabilities(self) -> _Json:
        """The session's; a 2026-07-28 request declares its own."""
        return self.meta[_CAPABILITIES_KEY] if self.version else self.session.client_capabilities

    def log(self, level: str, data: _Any, logger: str | None = None) -> typing.Awaitable[None]:
        """Send a notifications/message to the client if `level` passes its filter
        (2026-07-28: only if the request asked, with a logLevel in its _meta)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {LOG_LEVELS}")
        least = self.meta.get(_MODERN + "logLevel") if self.version else self.session.log_level
        if least in LOG_LEVELS and not self.task_id and LOG_LEVELS.index(level) >= LOG_LEVELS.index(least):
            params = {"level": level, "data": data, **({"logger": logger} if logger else {})}
            self.session.notify("notifications/message", params, self.request_id)
        return _DONE

    def close_sse_stream(self) -> None:
        """Over HTTP, in a 2025-11-25 session: end the SSE response this request is answered
        on now. The client resumes it (GET with Last-Event-ID) after the `retry:` wait, and
        the rest comes there: a long call outlives proxies that cut long responses (SEP-1699)."""
        stream = getattr(self.session.replies.get(self.request_id), "__self__", None)
        if isinstance(stream, _Stream) and stream.primes:     # from a sync tool's thread too
            loop = self.session.loop
            if loop is None or _running_loop() is loop:
                stream.part()
            else:
                loop.call_soon_threadsafe(stream.part)

    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> typing.Awaitable[None]:
        """Report progress; sent only when the client asked (progressToken)."""
        if self.progress_token is None or (self._last_progress is not None
                                           and progress <= self._last_progress):
            return _DONE        # spec: progress MUST increase with each notification
        self._last_progress = progress
        params = {"progressToken": self.progress_token, "progress": progress,
                  **{k: v for k, v in (("total", total), ("message", message)) if v is not None}}
        self.session.notify("notifications/progress", params, self.request_id)
        return _DONE

    async def sample(self, messages: str | list[_Json], max_tokens: int = 1000, key: str | None = None,
                     **options: _Any) -> _Json:
        """Ask the client's model: sampling/createMessage. `messages` may be a string."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": text(messages)}]
        params = {"messages": messages, "maxTokens": max_tokens}
        params.update((_camel(k), v) for k, v in options.items())
        return await self._ask("sampling", "sampling/createMessage", params, key)

    async def elicit(self, message: str, schema: _Json, key: str | None = None) -> _Json:
        """Ask the user for input (form mode): returns {"action", "content"?}."""
        if not isinstance(schema, dict) or "properties" not in schema:
            schema = {"type": "object", "properties": schema or {}}
        return await self._ask("elicitation", "elicitation/create",
                               {"message": message, "requestedSchema": schema}, key)

    async def elicit_url(self, message: str, url: str, elicitation_id: str | None = None,
                         key: str | None = None) -> _Json:
        """Send the user to `url` (URL mode, 2025-11-25: for what must not pass through the
        client, such as a password or a payment). Returns {"action"}: accept only means
        the user agreed to go. Tell the client when the interaction there is over with
        `elicitation_complete(elicitation_id)`, or raise UrlElicitationRequired."""
        params = {"mode": "url", "message": message, "url": url}
        if not self.version:    # 2026-07-28 has no elicitation ids: requestState ties it
            import secrets
            params["elicitationId"] = elicitation_id or secrets.token_urlsafe(16)
        return await self._ask("elicitation", "elicitation/create", params, key)

    def elicitation_complete(self, elicitation_id: str) -> None:
        """notifications/elicitation/complete: the URL interaction `elicitation_id` is over."""
        self.session.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})

    async def list_roots(self, key: str | None = None) -> list[_Json]:
        """The client's roots (file:// URIs it lets the server look at)."""
        return (await self._ask("roots", "roots/list", {}, key)).get("roots", [])

    async def once(self, key: str, fn: typing.Callable[..., _Any], *args: _Any) -> _Any:
        """``fn(*args)`` (sync or async), run once per request however many rounds it
        takes (see above); later rounds get the value it returned. The value travels
        in requestState, which the client can read: JSON, and nothing secret."""
        kept = self._rounds.kept if self._rounds else {}
        if key not in kept:
            value = fn(*args)
            kept[key] = await value if asyncio.iscoroutine(value) else value
        return kept[key]

    async def detach(self) -> bool:
        """Make this call a task now (else it becomes one after TASK_AFTER s): the client gets
        its task id and polls. True once it is one; False if it cannot be (its tool has no
        ``task=``, or the request did not declare the extension): the call then goes on as it was."""
        return bool(self._detach and await self._detach())

    async def _ask(self, capability, method, params, key=None):
        declared, need, what = (self.client_capabilities or {}).get(capability), {capability: {}}, capability
        # 2025-11-25: tools, a URL, only to a client that said it takes them ({} is form alone)
        if (sub := "tools" if "tools" in params else "url" if params.get("mode") == "url" else
                capability == "elicitation" and type(declared) is dict and declared and "form"):
            need, what = {capability: {str(sub): {}}}, f"{capability}.{sub}"
            declared = declared.get(sub) if type(declared) is dict else None
        if declared is None:
            if self.version:
                raise RequestError(MISSING_CAPABILITY, f"This needs the client's {what} capability",
                               {"requiredCapabilities": need})
            raise McpError(METHOD_NOT_FOUND, f"The client does not support {what}.")
        if self.task_id:
            return await _task_input(self, capability, method, params, key)
        if not self.version:
            answer = await self.session.request(method, params, self.request_id)
            if (problem := _answer_problem(method, params, answer)):
                raise McpError(INVALID_PARAMS, f"The client's answer to {method} is malformed: {problem}")
            return answer
        if not self._rounds:    # only tools/call, prompts/get and resources/read may ask
            raise McpError(INTERNAL_ERROR, f"{method}: this request cannot ask for input")
        return await self._rounds.ask(capability, method, params, key)

    def run(self, coroutine: typing.Coroutine[_Any, _Any, _T]) -> _T:
        """From a sync tool's thread: run `coroutine` on the session's loop and wait."""
        assert self.session.loop, "a tool's thread runs beside a loop"
        return asyncio.run_coroutine_threadsafe(coroutine, self.session.loop).result()


class RequestError(McpError):
    """Raise from a tool to fail the request itself with this JSON-RPC error (code, message,
    data), never an isError result: the client sent what cannot be served. A task ends failed."""


class UrlElicitationRequired(RequestError):
    """Raise from a handler that cannot go on until the user has visited some URLs (2025-11-25,
    -32042): `elicitations` are URL-mode elicitation/create params, each with its
    elicitationId. The request gets this JSON-RPC error, never an isError result."""

    def __init__(self, elicitations, message="This request needs you to visit a URL first."):
        super().__init__(URL_ELICITATION_REQUIRED, message, {"elicitations": list(elicitations)})


def _answer_problem(method, params, answer):
    """What is wrong with the client's answer to what the server asked, or None: a
    handler gets only answers of the shape the spec gives (elicited content as asked)."""
    if type(answer) is not dict:
        return "expected an object"
    if method == "elicitation/create":
        if answer.get("action") not in ("accept", "decline", "cancel"):
            return "action must be accept, decline or cancel"
        content = answer.get("content", {})
        return "content must be an object" if type(content) is not dict else \
            validate(content, params["requestedSchema"]) if answer["action"] == "accept" \
            and "requestedSchema" in params else None
    if method == "sampling/createMessage":
        ok = type(answer.get("content")) in (dict, list) and type(answer.get("role")) is str
        return None if ok and type(answer.get("model")) is str else \
            "role and model must be strings, content an object or a list"
    roots = answer.get("roots")     # roots/list
    if type(roots) is not list or not all(type(r) is dict and type(r.get("uri")) is str for r in roots):
        return "roots must be a list of objects with a uri"
    return None


class _Done:
    """Lets ``ctx.log(...)`` be written with or without ``await``."""

    def __await__(self) -> typing.Generator[None, None, None]:
        yield from ()


_DONE = _Done()


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


class _Peer:
    """What `Session` and `Client` do alike as JSON-RPC peers: number the requests they send,
    wait for each answer (on timeout the other side is told to stop), and fail every waiter
    when the connection ends. A transport reports ``_fail(id, error)`` (a request it was to
    carry can get no answer) and ``_closed(reason)`` (the connection has ended)."""

    def __init__(self) -> None:
        self._pending: dict[_Any, asyncio.Future[_Any]] = {}    # id of a request we sent -> its answer
        self._ids = itertools.count(1)      # ids of the requests we send
        self._gone: str | None = None       # why the connection ended, once it has

    def _abandon(self, id_, method, reason, related):
        """Tell the other side a request of ours is abandoned (`reason`: timeout or cancelled)."""

    async def _exchange(self, id_, method, params, timeout, send, related=None):
        """Send request `id_` with ``await send(message)`` and wait for its result."""
        if self._gone:
            raise McpError(CONNECTION_CLOSED, self._gone)
        message = {"jsonrpc": "2.0", "id": id_, "method": method,
                   **({} if params is None else {"params": params})}
        try:
            encode(message)     # fail here, in the caller, rather than on the wire
        except (TypeError, ValueError) as e:
            raise McpError(INVALID_PARAMS, f"{method}: parameters are not JSON ({e})") from None
        future = self._pending[id_] = asyncio.get_running_loop().create_future()

        async def exchange():   # sending counts against the timeout too
            await send(message)
            return await future
        try:
            return await asyncio.wait_for(exchange(), timeout)
        except asyncio.TimeoutError:  # noqa: UP041 — 3.10's is not yet the builtin TimeoutError
            self._abandon(id_, method, "timeout", related)
            raise McpError(REQUEST_TIMEOUT, f"{method}: no answer within {timeout} s") from None
        except asyncio.CancelledError:      # our caller gave up: so may the other side
            self._abandon(id_, method, "cancelled", related)
            raise
        finally:
            self._pending.pop(id_, None)

    def _settle(self, message):
        """A response arrived: its waiter gets the result, or McpError."""
        future = self._pending.pop(message["id"], None)
        if future is None or future.done():
            return
        if "error" in message:
            error = message["error"] if type(message["error"]) is dict else {}
            future.set_exception(McpError(error.get("code", INTERNAL_ERROR),
                                          str(error.get("message", "error")), error.get("data")))
        else:
            future.set_result(message["result"])

    def _fail(self, id_, error):
        future = self._pending.pop(id_, None)
        if future is not None and not future.done():
            future.set_exception(error)

    def _closed(self, reason):
        """The connection is gone: every waiting request fails now, and later ones at once."""
        self._gone = reason
        for id_ in list(self._pending):
            self._fail(id_, McpError(CONNECTION_CLOSED, reason))


class Session(_Peer):
    """One client's conversation with a `Server`, whatever carries it: all per-client state. A
    transport makes one per client, feeds it every frame (`receive`), reads on while it is
    `accepting` (again at `on_ready`), and `close`s it when the client is gone. Out goes
    ``send(message, related)``: `related` is the id of the client request it belongs to (its
    response, or sent while serving it), or None; ``send(None, id)``: that request ends with no
    response (it was cancelled)."""

    def __init__(self, server, send, stateless_version=None):
        super().__init__()
        self.server, self._send = server, send
        self.protocol_version = stateless_version
        self.initialized = stateless_version is not None  # stateless HTTP needs no handshake
        self.client_capabilities, self.client_info = {}, {}
        self.log_level = "info"
        self.subscriptions = set()
        self.listens = {}       # subscriptions/listen id -> (what it wants, future that ends it)
        self.principal = ""     # who the client is (HTTP: its user, else Authorization), for requestState
        self.owner = ""         # whose listens it holds (HTTP: the OAuth subject, else the peer address)
        self.auth = None        # HTTP with auth: the AuthInfo of the client's latest request
        self.running = {}       # request id -> task serving it
        self.waiting = {}       # request id -> (message, done): taken in, waiting for a slot (FIFO)
        self.replies = {}       # request id -> the reply its frame came with (see `receive`)
        self.on_ready: typing.Callable[[], None] | None = None  # called when `accepting` may be true
        self._cancelled = set()
        self._started = {}      # request id -> [loop time, handler, params, done] while it runs
        self._crossing = 0      # messages from tools' threads not yet sent by the loop
        self.dropped = 0        # ... and log or progress notifications dropped past MAX_QUEUED
        self._lock = threading.Lock()
        self.closed = False
        self.loop: _Any = None      # the event loop, from the first frame on
        self.ready = self.initialized   # the client sent notifications/initialized
        server.sessions.add(self)

    task_tag = ""   # whose tasks are its own (the tasks extension, in a session that is not HTTP's)

    def receive(self, frame, done=None, reply=None):
        """The one door: a frame of JSON text (bytes or str) or parsed (a dict; a list is a batch).
        All is answered, bad input too: nothing raises. Past MAX_IN_FLIGHT running, requests wait
        their turn in order (see `accepting`). Answers go to ``reply(message)`` if given (HTTP: the
        POST's own response; a reply returning False cannot carry a notification, which goes to
        `send`), else to `send`; ``done()`` when the frame's work is over. Returns how many
        requests it took in; None if it refused the frame whole (a batch it does not accept)."""
        if self.closed:
            if done:
                done()
            return 0
        if self.loop is None:
            self.loop = _running_loop()
        try:
            message = _request_from(frame.encode() if isinstance(frame, str) else frame) \
                if isinstance(frame, (bytes, bytearray, str)) else frame
        except McpError as e:
            message = e
        if type(message) is not list:
            return self._take(message, done, reply, None)
        room = MAX_IN_FLIGHT - len(self.running) + MAX_WAITING - len(self.waiting)
        why = "empty batch" if not message else "batches are not accepted" if \
            self.protocol_version not in BATCH_VERSIONS else len(message) > room and \
            f"batch too large (room for {room} now)"    # taken whole, or not at all
        if why:
            self._over(_error(None, INVALID_REQUEST, "Invalid request: " + why), None, done, reply)
            return None
        left = [len(message)]

        def one_done():
            left[0] -= 1
            if not left[0] and done:
                done()
        seen = set()    # a batch's ids: one twice in it is refused, answered or not
        return sum([self._take(item, one_done, reply, seen) for item in message])

    @property
    def accepting(self):
        """Whether a transport should read on: false while as many requests wait as may run
        (`on_ready` then says when to go on), unless the client owes us an answer, which must
        get in (requests beyond are then refused)."""
        return len(self.waiting) < MAX_IN_FLIGHT or bool(self._pending)

    def _admit(self, message, batched):
        """What a message is (`classify`), or McpError: a request may not reuse a live id (nor
        one of its batch's: `batched`), and initialize and 2026-07-28 requests come alone."""
        if type(message) is McpError:
            raise message
        if (kind := classify(message)) == "request":
            id_ = message["id"]
            if batched is not None and (message["method"] == "initialize" or _modern(message.get("params"))):
                raise McpError(INVALID_REQUEST, "Invalid request: initialize and 2026-07-28 "
                                                "requests may not be batched")
            if id_ in self.running or id_ in self.waiting or batched and id_ in batched:
                raise McpError(INVALID_REQUEST, _ID_IN_USE)     # two answers would cross
            if batched is not None:
                batched.add(id_)
        return kind

    def _take(self, message, done, reply, batched):
        try:
            kind = self._admit(message, batched)
        except McpError as e:
            # Only a request's id is the client's own: never echo the id of a broken reply.
            id_ = message.get("id") if type(message) is dict and not self._broken_reply(message) else None
            self._over(_error(id_ if _is_id(id_) else None, e.code, e.message), None, done, reply)
            return 0
        if kind != "request":
            self._handle(message, kind, done)
            return 0
        id_ = message["id"]
        if reply is not None:
            self.replies[id_] = reply
        if len(self.running) < MAX_IN_FLIGHT and not self.waiting:
            self._handle(message, kind, done)
        elif len(self.waiting) < (MAX_IN_FLIGHT if self._pending else MAX_WAITING):
            self.waiting[id_] = message, done
        else:
            self._over(_error(id_, INTERNAL_ERROR, "Too many requests in flight"), id_, done)
        return 1

    def _handle(self, message, kind, done):
        """Act on one classified message; a bug in here is -32603 on every transport, not the end."""
        method, params, id_ = message.get("method"), message.get("params", {}), message.get("id")
        try:
            if kind == "response":
                self._settle(message)
            elif kind == "notification":
                handler = _NOTIFICATIONS.get(method)
                if handler and (type(params) is dict or params is None):   # some clients send null
                    handler(self, params or {})
            elif (problem := self._refusal(method, params, _modern(params)
                                           or self.protocol_version in MODERN_VERSIONS)):
                return self._over(_error(id_, *problem), id_, done)
            elif method == "initialize":    # the handshake is agreed before the next message is read
                _without_waiting(self._serve(id_, _initialize, params, done))
                return None
            else:   # a task of its own: the handler may wait, and needs a task to (asyncio.timeout)
                task = _start_task(self._serve(id_, _METHODS[method][0], params, done), self.loop)
                if not task.done():
                    self.running[id_] = task
                return None
        except Exception:
            _logger.exception("failed to handle a %s %r", kind, method)
            if kind == "request" and id_ not in self.running:
                self._over(_error(id_, INTERNAL_ERROR, "Internal error"), id_, done)
                return None
        if done:
            done()
        return None

    def _refusal(self, method, params, modern):
        """Why a request cannot run, as (code, message[, data]), or None. A modern
        request (2026-07-28) stands alone: its _meta says all, no initialize needed."""
        if type(params) is not dict:
            return INVALID_PARAMS, "Invalid params: expected an object"
        if modern:
            meta = meta if type(meta := params.get("_meta")) is dict else {}
            version = meta.get(_VERSION_KEY)
            if type(version) is not str or type(meta.get(_CAPABILITIES_KEY)) is not dict:
                return INVALID_PARAMS, ("Invalid params: _meta needs io.modelcontextprotocol/"
                                        "protocolVersion and io.modelcontextprotocol/clientCapabilities")
            if version not in MODERN_VERSIONS:
                return UNSUPPORTED_VERSION, "Unsupported protocol version", {
                    "supported": list(MODERN_VERSIONS), "requested": version}
            if method in _HANDSHAKE_ONLY:
                return METHOD_NOT_FOUND, f"Method not found: {method} is not in {version}"
        entry = _METHODS.get(method)
        if entry is None or entry[1] and not self.server.offers(entry[1]) \
                or method in _MODERN_ONLY and not modern:
            return METHOD_NOT_FOUND, "Method not found"
        if not (self.initialized or modern) and method not in ("ping", "initialize"):
            return INVALID_PARAMS, "Session not initialized: send initialize first"
        if self.loop is None and method != "initialize":  # a synchronous caller: nothing to run it on
            return INTERNAL_ERROR, "No event loop is running"
        return None

    async def _serve(self, id_, handler, params, done):
        response = None
        if id_ not in self._cancelled:     # else cancelled before it started: no answer
            context = Context(self, id_, params.get("_meta"))
            started = self._started[id_] = [self.loop and self.loop.time(), handler, params, done]
            if self not in _watched and self.loop:
                _watch(self)
            try:
                if context.version and handler in _ROUNDS:
                    context._rounds = _Rounds(self, params, handler.__name__)
                try:
                    result = await handler(self, params, context)
                    response = _result(id_, self._modern_result(result, handler) if context.version
                                       else result)
                except _InputRequired:      # the client is to answer, and call again
                    response = _result(id_, typing.cast(_Rounds, context._rounds).result())
            except McpError as e:
                response = _error(id_, e.code, e.message, e.data)
            except asyncio.CancelledError:
                if started[3] is _ENDED:    # answered already (see `_end`): nothing more
                    raise
                if id_ in self._cancelled or self.closed:
                    del self._started[id_]
                    self._finished(id_, None, done)
                    raise
                _logger.error("request %r (%s): an inner task was cancelled", id_, handler.__name__)
                response = _error(id_, INTERNAL_ERROR, "Internal error")
            except BaseException:   # SystemExit too (argparse in a handler): never the server's end
                _logger.exception("request %r (%s) failed", id_, handler.__name__)
                response = _error(id_, INTERNAL_ERROR, "Internal error")
            if started[3] is _ENDED:        # it ignored its cancel, and its answer is given
                return
            del self._started[id_]
        self._finished(id_, response, done)

    def _modern_result(self, result, handler):
        """A 2026-07-28 result: its `resultType`, the server's identity, and for what may
        be cached, how (`Server.cache`)."""
        meta = self.server.meta if "_meta" not in result else {**result["_meta"], **self.server.meta}
        result = {"resultType": "complete", **result, "_meta": meta}
        return {**self.server.cache, **result} if handler in _CACHEABLE else result

    def _sweep(self):
        """Each second while requests run (`_watch`): those past their time limit end, answered."""
        now = self.loop.time()
        for id_, (started, handler, params, _) in list(self._started.items()):
            name = params.get("name") if handler is _call_tool else None
            tool = self.server.tools.get(name) if type(name) is str else None
            limits = (tool and tool.timeout, self.server.timeout, TOOL_TIMEOUT)
            seconds = float("inf") if handler is _listen else next(t for t in limits if t is not None)
            if now - started < seconds or id_ in self._cancelled or id_ not in self.running:
                continue
            _logger.warning("request %r (%s) ran past %g s: cancelled", id_, handler.__name__, seconds)
            self._end(id_, _result(id_, _tool_error(
                f"Tool '{params.get('name')}' did not finish within {seconds:g} s."))
                if handler is _call_tool else _error(id_, INTERNAL_ERROR, "Request timed out"))
        if not self._started:
            _watched.discard(self)

    def _end(self, id_, response):
        """Answer a running request now, and cancel it: its id and slot are free again. What it
        does after goes unheard (a handler may ignore the cancel, a thread cannot be stopped)."""
        started = self._started.pop(id_)
        done, started[3] = started[3], _ENDED
        task = self.running.pop(id_)
        self._over(response, id_, done)
        task.cancel()
        if self.waiting:
            self.loop.call_soon(self._start_waiting)

    async def stop(self, grace=0.0, reason="Server shutting down"):
        """The server is going away: what was taken in may finish within `grace` seconds; every
        request then left is answered -32603 `reason`, and cancelled. Listen streams end at once."""
        self._end_listens()
        try:
            await self.drain(grace)
        finally:    # a cancel (a signal during the grace) ends the grace, not the answers
            for id_ in list(self.waiting):
                self._over(_error(id_, INTERNAL_ERROR, reason), id_, self.waiting.pop(id_)[1])
            for id_ in list(self._started):
                if id_ not in self._cancelled and id_ in self.running:
                    self._end(id_, _error(id_, INTERNAL_ERROR, reason))

    def _finished(self, id_, response, done):
        # Done here, not in a done callback: that would cost a turn of the loop per request.
        self.running.pop(id_, None)     # before the answer: the client may reuse the id at once
        if response is None or id_ in self._cancelled:
            self._cancelled.discard(id_)
            self._answer(None, id_)     # cancelled: no response, even if the handler finished
        elif not self.closed:
            self._answer(response, id_)
        if self.waiting:    # the next starts on the next turn: one answered at once would recurse
            self.loop.call_soon(self._start_waiting)
        if done:
            done()

    def _start_waiting(self):
        while self.waiting and len(self.running) < MAX_IN_FLIGHT and not self.closed:
            id_ = next(iter(self.waiting))
            message, done = self.waiting.pop(id_)
            self._handle(message, "request", done)
        if self.on_ready and self.accepting:
            self.on_ready()

    def cancel(self, id_):
        """Cancel a request that runs or waits: it ends without a response."""
        if id_ in self.waiting:
            self._over(None, id_, self.waiting.pop(id_)[1])
            if self.on_ready and self.accepting:
                self.on_ready()
            return
        self._cancelled.add(id_)
        if id_ in self._started:    # else its task has not begun (3.10, 3.11): it sees the cancel then
            self.running[id_].cancel()

    async def drain(self, timeout=None):
        """Wait until every request taken in has been answered (or `timeout` s passed)."""
        loop = asyncio.get_running_loop()
        end = None if timeout is None else loop.time() + timeout
        while not self.closed:
            # What was answered already (cancelled) is not waited for, unless it holds
            # the slots a waiting request needs.
            live = [task for id_, task in self.running.items() if id_ not in self._cancelled]
            left = None if end is None else end - loop.time()
            if not (live or self.waiting) or left is not None and left <= 0:
                return
            if live or len(self.running) >= MAX_IN_FLIGHT:
                await asyncio.wait(live or list(self.running.values()), timeout=left,
                                   return_when=asyncio.FIRST_COMPLETED)
            else:
                await asyncio.sleep(0)      # a waiting request starts on the next turn

    def _answer(self, message, related, reply=None):
        """Every outgoing message passes here: to the reply of its request's frame if any, else `send`."""
        if reply is None and related is not None:
            reply = self.replies.get(related)
        if reply is None:
            self._send(message, related)
        elif message is None or "method" not in message:    # the answer: that request is over
            self.replies.pop(related, None)
            reply(message)
        elif not reply(message):
            self._send(message, related)

    def _over(self, message, related, done, reply=None):
        """The last word on a message: answer it, and tell its transport its work is done."""
        self._answer(message, related, reply)
        if done:
            done()

    def notify(self, method, params=None, related=None):
        """Send a notification (thread-safe: sync tools run in threads)."""
        # lifecycle: before notifications/initialized, only what a request causes, and logs.
        if self.closed or not (self.ready or related is not None or method == "notifications/message"):
            return
        message = {"jsonrpc": "2.0", "method": method, **({} if params is None else {"params": params})}
        loop = self.loop
        if loop is None or _running_loop() is loop:
            return self._answer(message, related)      # `closed` was checked above
        # From a thread. While the loop is held up (stdout not read), what threads send
        # piles up: past MAX_QUEUED, logs and progress go; nothing else is dropped.
        with self._lock:
            if self._crossing >= MAX_QUEUED and method in _DROPPABLE:
                self.dropped += 1
                return
            self._crossing += 1
        loop.call_soon_threadsafe(self._crossed, message, related)

    def _crossed(self, message, related):
        with self._lock:
            self._crossing -= 1
            dropped, self.dropped = self.dropped, 0
        if dropped:
            _logger.warning("dropped %d log/progress notifications from tools: the client is "
                         "not reading", dropped)
        if not self.closed:
            self._answer(message, related)

    async def request(self, method, params=None, related=None, timeout=None):
        """Send a request to the client and wait for its result (or McpError), REPLY_TIMEOUT at most."""
        async def send(message):
            self._answer(message, related)
            if self.on_ready:   # we owe the client's answer a way in
                self.on_ready()
        return await self._exchange(next(self._ids), method, params, timeout or REPLY_TIMEOUT, send, related)

    def publish(self, method, params, wants):
        """Send to each of the client's subscriptions/listen streams that `wants` it."""
        for id_, (wanted, _) in list(self.listens.items()):
            if wants(wanted):
                self.notify(method, {**params, "_meta": {_MODERN + "subscriptionId": id_}}, id_)

    def _end_listens(self):
        for _, end in self.listens.values():
            if not end.done():
                end.set_result(None)

    def _abandon(self, id_, method, reason, related):
        self.notify("notifications/cancelled", {"requestId": id_, "reason": reason}, related)

    def _broken_reply(self, message):
        """Whether an invalid message has no "method", so may be a broken reply to a
        request of ours (its id is then ours, not the client's); its waiter fails now."""
        if type(message) is not dict or "method" in message:
            return False
        if _is_id(message.get("id")):
            self._fail(message["id"], McpError(CONNECTION_CLOSED, "Invalid response from the client"))
        return True

    def close(self, cancel=False):
        """End the session: fail our pending requests; cancel running ones if asked
        (a vanished connection is not a cancel: by default the work finishes)."""
        self.closed = True
        self._end_listens()
        self.server.sessions.discard(self)
        self._send, self.on_ready = lambda *_: None, None   # no cycle through the transport
        if not self._started:
            _watched.discard(self)
        self._closed("Connection closed")
        if cancel:
            for id_ in list(self.running) + list(self.waiting):
                self.cancel(id_)


def _without_waiting(coroutine):
    """Run a coroutine that never waits (initialize's) to its end, here and now: with no event
    loop too (a synchronous caller), and before the next message is read."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("a handler that must not wait waited")


if sys.version_info >= (3, 12):
    def _start_task(coroutine, loop):
        """A request's handler as a task of its own, its first step taken now (an eager task,
        3.12+): a request that never waits (ping, a list, most tool calls) is answered before the
        next message is read, with no turn of the event loop (about a tenth of a stdio call)."""
        return asyncio.Task(coroutine, loop=loop, eager_start=True)
else:
    def _start_task(coroutine, loop):
        """3.10 and 3.11 have no eager tasks: the handler's first step comes on the loop's next turn."""
        return loop.create_task(coroutine)


_ENDED = object()       # the `done` of a request answered early (see Session._end)
_watched: "set[Session]" = set()    # sessions with requests running, swept each second
_watchdog = None        # the thread that has them swept
_SWEEP_EVERY = 1.0      # seconds between the sweeps


def _watch(session):
    """Have `session._sweep` run each second while it has requests running. A thread
    does the counting: a timer in the event loop makes every turn of the loop dearer
    (3 % of a stdio call), a call_later per request 9 %."""
    global _watchdog
    _watched.add(session)
    if _watchdog is None:
        _watchdog = threading.Thread(target=_watchdog_run, name="mcp-watchdog", daemon=True)
        _watchdog.start()


def _watchdog_run():
    while True:
        time.sleep(_SWEEP_EVERY)
        for session in list(_watched):
            try:
                session.loop.call_soon_threadsafe(session._sweep)
            except RuntimeError:    # its loop is closed
                _watched.discard(session)


_ID_IN_USE = "Invalid request: id already in use"
_MODERN = "io.modelcontextprotocol/"     # the prefix of 2026-07-28's _meta keys
_VERSION_KEY, _CAPABILITIES_KEY = _MODERN + "protocolVersion", _MODERN + "clientCapabilities"


def _modern(params):
    """Whether a request claims the stateless era: its _meta names its protocol version."""
    meta = params.get("_meta") if type(params) is dict else None
    return type(meta) is dict and _VERSION_KEY in meta


_DROPPABLE = ("notifications/message", "notifications/progress")
_CLIENT_CAPABILITIES = ("roots", "sampling", "elicitation", "experimental", "tasks")
_CLIENT_INFO = ("name", "version", "title", "description", "websiteUrl")


def _small(value, limit=4096):
    """A client's JSON value to keep: itself if its text is at most `limit` bytes, else {}."""
    try:
        return value if len(encode(value)) <= limit else {}
    except (TypeError, ValueError, RecursionError):
        return {}


_running_loop = asyncio._get_running_loop   # the running loop, or None (no RuntimeError)
_now = time.monotonic

##############################################################################
# Core: method handlers, what each request does
##############################################################################


_LISTS_OF = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts",
             "resources/templates/list": "resourceTemplates"}    # -> its result's key (client, CLI too)


def _lister(method):
    """The handler of a */list `method`: a page of definitions (resources/list holds no
    templates, resources/templates/list only them)."""
    key, kind, templates = _LISTS_OF[method], method.partition("/")[0], method == "resources/templates/list"

    async def handler(session, params, ctx):
        items = getattr(session.server, kind).values()
        return _page([i.definition for i in items if bool(getattr(i, "template", None)) == templates],
                     params, key)
    handler.__name__ = "_list_" + ("templates" if templates else kind)
    return handler


def _page(items, params, key):
    cursor = params.get("cursor")
    start = 0
    if cursor is not None:
        if type(cursor) is not str or not (cursor.isascii() and cursor.isdigit() and len(cursor) < 10) \
                or int(cursor) > len(items):
            raise McpError(INVALID_PARAMS, "Invalid params: unknown cursor")
        start = int(cursor)
    result = {key: items[start:start + PAGE_SIZE]}
    if start + PAGE_SIZE < len(items):
        result["nextCursor"] = str(start + PAGE_SIZE)
    return result


def _arguments_of(params):
    arguments = params.get("arguments")
    if arguments is not None and type(arguments) is not dict:   # false, [] or "" is not "no arguments"
        raise McpError(INVALID_PARAMS, "Invalid params: arguments must be an object")
    return arguments or {}


def _name(params, key="name"):
    value = params.get(key)
    if type(value) is not str:
        raise McpError(INVALID_PARAMS, f"Invalid params: {key} must be a string")
    return value


async def _ping(session, params, ctx):
    return {}


async def _initialize(session, params, ctx):
    """The handshake (lifecycle): answered before anything else runs (it never waits), so
    that every later message sees what was agreed."""
    if session.initialized:
        raise McpError(INVALID_REQUEST, "Invalid request: already initialized")
    version, caps, info = (params.get(k) for k in ("protocolVersion", "capabilities", "clientInfo"))
    if type(version) is not str or type(caps) is not dict or type(info) is not dict:
        raise McpError(INVALID_PARAMS, "Invalid params: initialize needs protocolVersion, "
                                       "capabilities and clientInfo")
    # Echo a version we speak; otherwise offer our newest (lifecycle: never fail here).
    session.protocol_version = version if version in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
    # Kept for the session's life: only what is used, and small (4 MB of {} cost 96 MiB).
    session.client_capabilities = {k: _small(caps[k]) for k in _CLIENT_CAPABILITIES if k in caps}
    session.client_info = {k: v[:256] for k, v in info.items() if k in _CLIENT_INFO and type(v) is str}
    session.initialized = True
    return _introduce(session.server, protocolVersion=session.protocol_version,
                      serverInfo=session.server.info)


async def _discover(session, params, ctx):
    """2026-07-28 server/discover: what this server is, before anything else (who it is comes
    in every 2026-07-28 result's _meta)."""
    return _introduce(session.server, supportedVersions=[*MODERN_VERSIONS, *PROTOCOL_VERSIONS[::-1]])


def _introduce(server, **first):
    """What initialize and server/discover say of the server: `first`, then its capabilities and
    instructions."""
    result = {**first, "capabilities": server.capabilities()}
    if server.instructions:
        result["instructions"] = server.instructions
    return result


async def _call_tool(session, params, ctx, tasked=False):
    name = _name(params)
    tool = session.server.tools.get(name)
    if tool is None:    # -32602, not -32601: tools/call itself exists
        raise McpError(INVALID_PARAMS, f"Unknown tool {name[:100]!r}: call tools/list for the tools "
                                       "there are")
    if tool.task and not tasked:    # it may become a task (an extension, below)
        return await _tasked(session, tool, params, ctx)
    arguments = _arguments_of(params)
    # 2025-11-25: bad argument values are a tool error the model can read and fix.
    if (problem := tool.check_input(arguments, "")):
        return _tool_error(f"Invalid arguments for tool '{name}': {problem}")
    try:
        return tool.result(await tool.call(arguments, ctx))
    except (RequestError, _InputRequired):
        raise
    except McpError as e:
        return _tool_error(e.message)
    except asyncio.CancelledError:
        if not tool.is_async:   # a thread cannot be stopped: it runs on, unheard
            session.server.abandoned += 1
            _logger.debug("tool %r was cancelled; its thread runs on (%d so far)", name,
                       session.server.abandoned)
        raise
    except BaseException as e:  # SystemExit from a tool ends the call, not the server; a
        # RecursionError (a self-referential result) logs one line, not 100 KB of frames
        _logger.error("tool %r failed: %r", name, e, exc_info=None if type(e) is RecursionError else e)
        return _tool_error(f"Tool '{name}' failed with an internal error.")


def _find_resource(server, uri):
    resource = server.resources.get(uri)
    if resource and not resource.template:
        return resource, {}
    for resource in server.resources.values():
        if resource.template and (found := resource.template.match(uri)) is not None:
            return resource, found
    return None, None


async def _read_resource(session, params, ctx):
    uri = _name(params, "uri")
    resource, variables = _find_resource(session.server, uri)
    if resource is None:    # 2026-07-28 says -32602
        raise McpError(INVALID_PARAMS if ctx.version else RESOURCE_NOT_FOUND, "Resource not found",
                       {"uri": uri})
    value = await resource.call(variables, ctx)
    return {"contents": resource.contents(uri, value)}


async def _subscribe(session, params, ctx):
    uri = _name(params, "uri")
    if len(uri) > MAX_URI or _find_resource(session.server, uri)[0] is None:
        raise McpError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri[:MAX_URI]})
    if len(session.subscriptions) >= MAX_SUBSCRIPTIONS and uri not in session.subscriptions:
        raise McpError(INVALID_PARAMS, f"Too many subscriptions (at most {MAX_SUBSCRIPTIONS})")
    session.subscriptions.add(uri)
    return {}


async def _unsubscribe(session, params, ctx):
    session.subscriptions.discard(_name(params, "uri"))
    return {}


async def _get_prompt(session, params, ctx):
    name = _name(params)
    prompt = session.server.prompts.get(name)
    if prompt is None:
        raise McpError(INVALID_PARAMS, "Unknown prompt: call prompts/list for the prompts there are")
    arguments = _arguments_of(params)
    if not all(type(v) is str for v in arguments.values()):
        raise McpError(INVALID_PARAMS, "Invalid params: prompt arguments must be strings")
    for pname, _, default in prompt.params:
        if default is prompt.empty and pname not in arguments:
            raise McpError(INVALID_PARAMS, f"Missing required argument: {pname}")
    arguments = {k: v for k, v in arguments.items() if k in prompt.names}
    result = {"messages": prompt.messages(await prompt.call(arguments, ctx))}
    if "description" in prompt.definition:
        result["description"] = prompt.definition["description"]
    return result


async def _set_level(session, params, ctx):
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise McpError(INVALID_PARAMS, f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
    session.log_level = level
    return {}


async def _complete(session, params, ctx):
    ref, argument = params.get("ref"), params.get("argument")
    if type(ref) is not dict or type(argument) is not dict or type(argument.get("name")) is not str:
        raise McpError(INVALID_PARAMS, "Invalid params: completion needs ref and argument")
    kind = ref.get("type")
    key = ref.get("name") if kind == "ref/prompt" else ref.get("uri")
    registry: _Json = {"ref/prompt": session.server.prompts, "ref/resource": session.server.resources}
    if type(key) is not str or key not in registry.get(str(kind), ()):
        raise McpError(INVALID_PARAMS, "Invalid params: unknown prompt or resource template")
    handler = session.server.completions.get((kind, key, argument["name"]))
    values = []
    if handler is not None:
        context = params.get("context")
        context = context.get("arguments") if type(context) is dict else None
        args: _Json = {handler.params[0][0]: str(argument.get("value", ""))} if handler.params else {}
        if len(handler.params) > 1:
            args[handler.params[1][0]] = context if type(context) is dict else {}
        values = [str(v) for v in (await handler.call(args, ctx) or [])]
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


async def _listen(session, params, ctx):
    """2026-07-28 subscriptions/listen: the change notifications asked for, on this request's
    own stream, until the client cancels it or leaves, or the server stops (then it is answered)."""
    wanted = params.get("notifications")
    if type(wanted) is not dict:
        raise McpError(INVALID_PARAMS, "Invalid params: notifications must be an object")
    server, sessions = session.server, list(session.server.sessions)
    if sum(len(s.listens) for s in sessions if s.owner == session.owner) >= MAX_LISTENS // 16 or \
            sum(len(s.listens) for s in sessions) >= MAX_LISTENS:
        raise McpError(INTERNAL_ERROR, f"Too many subscriptions/listen streams open: {MAX_LISTENS // 16} "
                                       f"a client at most, {MAX_LISTENS} in all (MAX_LISTENS)")
    honoured: _Json = {key: True for key, kind in _LISTS if wanted.get(key) is True and server.offers(kind)}
    uris = wanted.get("resourceSubscriptions")
    if type(uris) is list and server.offers("resources"):
        honoured["resourceSubscriptions"] = [u for u in uris if type(u) is str][:MAX_SUBSCRIPTIONS]
    if (ids := wanted.get("taskIds")) is not None:     # the tasks extension: its tasks' status
        _tasks_on(ctx, "This request")
        ids = ids[:MAX_SUBSCRIPTIONS] if type(ids) is list else []
        honoured["taskIds"] = [i for i in ids if type(i) is str and await _task_record(session, i)]
    tag = {"_meta": {_MODERN + "subscriptionId": ctx.request_id}}
    params.clear()      # open for hours, it keeps its filter, not the request it came in
    ctx.meta = {}
    session.notify("notifications/subscriptions/acknowledged", {"notifications": honoured, **tag},
                   ctx.request_id)
    session.listens[ctx.request_id] = honoured, session.loop.create_future()
    try:
        await session.listens[ctx.request_id][1]
    finally:
        del session.listens[ctx.request_id]
    return tag


_LISTS = (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"),
          ("resourcesListChanged", "resources"))


def _on_cancelled(session, params):
    id_ = params.get("requestId")
    if _is_id(id_) and (id_ in session.running or id_ in session.waiting):  # initialize never runs as a task
        session.cancel(id_)


# method -> (handler, server capability it needs)
_METHODS = {
    "initialize": (_initialize, None),
    "ping": (_ping, None),
    "server/discover": (_discover, None),
    "tools/list": (_lister("tools/list"), "tools"),
    "tools/call": (_call_tool, "tools"),
    "resources/list": (_lister("resources/list"), "resources"),
    "resources/templates/list": (_lister("resources/templates/list"), "resources"),
    "resources/read": (_read_resource, "resources"),
    "resources/subscribe": (_subscribe, "resources"),
    "resources/unsubscribe": (_unsubscribe, "resources"),
    "prompts/list": (_lister("prompts/list"), "prompts"),
    "prompts/get": (_get_prompt, "prompts"),
    "logging/setLevel": (_set_level, "logging"),
    "completion/complete": (_complete, "completions"),
    "subscriptions/listen": (_listen, None),
}
_MODERN_ONLY = frozenset(("server/discover", "subscriptions/listen"))
_ROUNDS = frozenset((_call_tool, _get_prompt, _read_resource))    # may answer input_required
_HANDSHAKE_ONLY = frozenset(("initialize", "ping", "logging/setLevel", "resources/subscribe",
                            "resources/unsubscribe"))
_CACHEABLE = frozenset((_discover, _read_resource, *(_METHODS[m][0] for m in _LISTS_OF)))
# notification -> handler (roots/list_changed: a tool asks ctx.list_roots() again, nothing is cached)
_NOTIFICATIONS = {"notifications/cancelled": _on_cancelled,
                  "notifications/initialized": lambda session, params: setattr(session, "ready", True),
                  "notifications/roots/list_changed": lambda session, params:
                      session.server.on_roots_changed and session.server.on_roots_changed(session)}

##############################################################################
# Core: stdio, one JSON message per line on stdin and stdout
##############################################################################


class _Lines:
    """Cuts a byte stream into lines on b"\n" only (never U+2028, never a bare CR: JSON whitespace).
    A line over `limit` bytes is skipped to its end (its tail never runs), and told once, when it
    ends, to ``too_long(head, tail)``: its first and last bytes, where its id is."""

    def __init__(self, too_long, limit=MAX_LINE_BYTES):
        self.buffer, self.too_long, self.limit = bytearray(), too_long, limit
        self.head = None        # while skipping a line: its first bytes (and `buffer` its last)

    def feed(self, chunk):
        lines, start = [], 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if self.head is None and len(self.buffer) + len(piece) > self.limit:
                self.head = (bytes(self.buffer[:_EDGE]) + piece[:_EDGE])[:_EDGE]
            if self.head is not None:   # trimmed in place: a copy would double the peak
                del self.buffer[:-_EDGE]
                self.buffer += piece[-_EDGE:]
                del self.buffer[:-_EDGE]
                if end >= 0:
                    self.too_long(self.head, bytes(self.buffer))
                    self.head = None
                    self.buffer.clear()
            elif end < 0:
                self.buffer += piece
            elif self.buffer:
                lines.append(bytes(self.buffer + piece))
                self.buffer.clear()
            else:
                lines.append(piece)
            if end < 0:
                return lines
            start = end + 1

    def end(self):
        """At EOF: a last line without "\n" still counts."""
        return [bytes(self.buffer)] if self.buffer and self.head is None else []


_EDGE = 256     # bytes kept of each end of a message too long to read


def _private_stdout(fd=1):
    """A private copy of `fd` for the protocol; fd 1 then points at stderr, so a
    stray print() in a tool (or a child process) cannot corrupt the stream."""
    out = os.dup(fd)
    if fd == 1:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return out


async def serve_stdio(server, stdin_fd=0, stdout_fd=1, trace=None, grace=None):
    """Serve one session over stdin/stdout (a private copy: `_private_stdout`) until stdin closes
    or it is cancelled (SIGTERM, Ctrl-C); what runs then gets `grace` s (SHUTDOWN_GRACE). Framing
    only: lines in, lines out. Reading pauses while the session is not `accepting` (the pipe holds
    the client back), until `on_ready`."""
    loop = asyncio.get_running_loop()
    out = _private_stdout(stdout_fd)
    finished = asyncio.Event()
    paused = threaded = False
    go = threading.Event()              # the reader thread (if any) waits here to read on

    def send(message, related=None):   # a list: a batch's answers, one line (JSON-RPC SHOULD)
        data = _encode_all(message) if type(message) is list else message and _encode_safely(message)
        if data is None or session.closed:
            return
        if trace:
            trace.message("out", "stdout", message)
        try:
            view = memoryview(data + b"\n")
            while view:
                view = view[os.write(out, view):]
        except OSError:     # the client stopped reading: end quietly
            session.closed = True
            session._closed("The client stopped reading")
            finished.set()

    session = Session(server, send)
    session.loop = loop
    lines = _Lines(lambda head, tail: send(_error(None, INVALID_REQUEST,
                                                  f"Message too long (over {MAX_LINE_BYTES} bytes)"), None))

    def feed(chunk):                    # on the loop: every line of a chunk goes in
        nonlocal paused
        for line in lines.feed(chunk) if chunk else lines.end():
            line = line[:-1] if line.endswith(b"\r") else line
            if line.strip():
                if trace:
                    trace.line("in", "stdin", line)
                if line.lstrip()[:1] == b"[":
                    batch(line)
                else:
                    session.receive(line)
        if not chunk:
            finished.set()
        elif session.accepting:
            if threaded:
                go.set()
        elif not threaded:              # the client is far ahead: let the pipe hold it
            loop.remove_reader(stdin_fd)
            paused = True

    def batch(line):     # 2025-03-26: the answers to a batch go out together, as one array
        answers, over = [], []
        taken: _Any = over      # until receive() says: how many it took, or None (refused whole)

        def reply(message):         # False: a notification, which goes out on its own
            if message is not None and "method" not in message:
                answers.append(message)
            return message is None or "method" not in message

        def done():
            over.append(True)
            if taken is not over:   # else receive() has not returned: sent below, in order
                flush()

        def flush():
            if answers:     # a batch refused whole gets its one error alone
                send(answers if taken is not None else answers[0])
        taken = session.receive(line, done, reply)
        if over:
            flush()

    def read_on():
        nonlocal paused
        go.set()
        if paused and not finished.is_set():
            paused = False
            loop.add_reader(stdin_fd, readable)
    session.on_ready = read_on

    def readable():                     # the loop's own reader (POSIX pipes, sockets, ttys)
        try:
            chunk = os.read(stdin_fd, READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            loop.remove_reader(stdin_fd)
        feed(chunk)

    def reader():                       # a thread: Windows, or stdin redirected from a file
        while True:
            try:
                chunk = os.read(stdin_fd, READ_CHUNK)
            except OSError:
                chunk = b""
            go.clear()
            loop.call_soon_threadsafe(feed, chunk)
            if not chunk:
                return
            go.wait()

    try:
        loop.add_reader(stdin_fd, readable)
    except (NotImplementedError, OSError, ValueError):  # proactor loop, or a regular file
        threaded = True
        threading.Thread(target=reader, name="mcp-stdin", daemon=True).start()
    cancelled = False
    try:
        await finished.wait()
    except asyncio.CancelledError:      # SIGTERM or Ctrl-C: an end like stdin's, then re-raised
        cancelled = True
    finally:
        finished.set()                  # read no more, even from a thread
        session.on_ready = None
        with contextlib.suppress(NotImplementedError, OSError, ValueError):
            loop.remove_reader(stdin_fd)
    try:    # what was read still runs, waiting requests too, within the grace period
        await session.stop(SHUTDOWN_GRACE if grace is None else grace)
    finally:
        session.close(cancel=True)
        os.close(out)
    if cancelled:
        raise asyncio.CancelledError
    return 0

##############################################################################
# Core: HTTP, legacy HTTP+SSE at /sse and Streamable HTTP at /mcp on one asyncio server
##############################################################################


_REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request",
            401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 411: "Length Required",
            413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type",
            431: "Request Header Fields Too Large", 501: "Not Implemented",
            503: "Service Unavailable", 505: "HTTP Version Not Supported"}
_LOOPBACK = ("localhost", "127.0.0.1", "[::1]", "::1")
_SINGLE_HEADERS = frozenset(("host", "content-length", "content-type", "authorization", "origin",
                             "mcp-session-id", "mcp-protocol-version", "transfer-encoding"))
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Every header line at once: "token:value CRLF", no control byte but tab in the value.
_HEADER_LINES = re.compile(r"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\x00-\x08\x0a-\x1f\x7f]*\r\n)*")
_BAD_TARGET = re.compile(r"[\x00-\x20\x7f-\xff]")


class _HttpError(Exception):
    def __init__(self, status, message="", code=None, headers=()):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers


class _Request:
    __slots__ = ("body", "client", "headers", "method", "path", "query", "scheme", "traced", "version")

    def header(self, name, default=""):
        return self.headers.get(name, default)


def _parse_head(head):
    """A request head (ending in CRLF CRLF) parsed strictly, or _HttpError: lenient parsers
    disagree with proxies (request smuggling), so bare LF, folded lines, control bytes and
    repeated framing headers are 400."""
    line, _, fields = head[:-2].decode("latin-1").partition("\r\n")
    if len(line) > MAX_REQUEST_LINE:
        raise _HttpError(414, "Request line too long")
    parts, authority = line.split(" "), None
    if len(parts) == 3 and _BAD_TARGET.search(parts[1]):     # the authority too (absolute-form)
        raise _HttpError(400, "Bad request line")
    if len(parts) == 3 and parts[1][:1] != "/" and parts[1][:8].lower().startswith(("http://", "https://")):
        rest = parts[1].partition("//")[2]      # absolute-form: the path (or query) after the authority
        authority = re.split(r"[/?]", rest, maxsplit=1)[0]
        parts[1] = "/" + rest[len(authority):].lstrip("/")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not parts[1].startswith("/") \
            or _BAD_TARGET.search(parts[1]):
        raise _HttpError(400, "Bad request line")
    if parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise _HttpError(505 if parts[2].startswith("HTTP/") else 400, "Unsupported HTTP version")
    if fields.count("\r\n") > MAX_HEADERS:
        raise _HttpError(431, "Too many headers")
    if not _HEADER_LINES.fullmatch(fields):
        raise _HttpError(400, "Bad header line")    # includes folds, bare LF, "Name :"
    headers = {}
    for line in fields.split("\r\n")[:-1]:
        name, _, value = line.partition(":")
        name, value = name.lower(), value.strip(" \t")
        if name not in headers:
            headers[name] = value
        elif name in _SINGLE_HEADERS:
            raise _HttpError(400, "Repeated header")
        else:
            headers[name] += ", " + value
    if authority is not None:   # the target's authority is the host (RFC 9112 3.2.2)
        headers["host"] = authority
    request = _Request()
    request.method, request.version, request.headers = parts[0], parts[2], headers
    request.path, _, request.query = parts[1].partition("?")
    request.body, request.traced, request.client, request.scheme = b"", False, None, "http"   # _forwarded
    return request


@functools.lru_cache(maxsize=64)
def _media_types(value):
    return frozenset(item.split(";")[0].strip().lower() for item in value.split(","))


def _host_name(value):
    """'localhost:8080' -> 'localhost', '[::1]:80' -> '[::1]'; None if malformed."""
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        name += bracket
    else:
        name, _, rest = value.partition(":")
        rest = ":" + rest if _ else ""
    if rest and not (rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit()):
        return None
    return name.lower() or None


class _Stream:
    """Messages waiting to go out on one SSE stream, bounded (R24): past MAX_QUEUED messages or
    MAX_QUEUED_BYTES, a new notification is dropped, and a response or request drops the
    notifications queued to make room, or else closes the stream (`overflowed`): never silently."""

    def __init__(self, json_only=False):
        self.items, self.sizes = [], []     # sizes: bytes of each item behind the first
        self.size = 0
        self.wake = asyncio.Event()
        self.closed = self.poked = self.overflowed = False
        self.dropped = 0
        self.json_only = json_only  # a JSON answer to a POST: it carries responses alone
        self.direct = None      # writes a message at once if it can (else it is queued)
        self.abort = None       # drops the connection (on overflow)
        self.ended = self.parting = self.attached = False

    # A resumable stream (a session's, 2025-03-26+) numbers its events "number-seq" and keeps
    # those it sent (`log`, REPLAY_BYTES) for a client that comes back with Last-Event-ID.
    number = seq = logged = 0
    log: "deque[tuple[int, bytes]] | None" = None
    replay: "_Replay | None" = None
    unread: "_Replay | None" = None     # while no connection reads it: where its events go,
    unread_from = 0                     # after which event
    primes = False      # 2025-11-25: it opens with a priming event (an id, retry, no data)
    opened = False      # a POST's stream: its SSE response began (the client has an id)

    def put(self, message):
        """Queue `message`; False if this stream cannot carry it (a JSON-only answer
        carries no notification or request). Once closed, everything is dropped."""
        if message is None:     # the request ended without a response: nothing to carry
            return True
        if self.json_only and "method" in message:
            return False
        if self.closed:
            return True
        if self.unread is not None and not self.attached and message is not _FINISHED:
            if (event := _sse_event(message, self)):     # nobody reads it now (`unattended`)
                self.unread.add(self, event)
            return True
        if not self.items and self.direct and self.direct(message):
            return True         # no waking the stream's task for each message
        size = 0
        if self.items and not self.json_only and message is not _FINISHED:   # a backlog
            if self._full():
                if "id" not in message:
                    self.dropped += 1
                    return True
                if not self._make_room():
                    return True     # the stream is closed
            size = len(_encode_safely(message) or b"")
            self.size += size
        self.items.append(message)
        self.sizes.append(size)
        self.wake.set()
        return True

    def _full(self):
        return len(self.items) >= MAX_QUEUED or self.size >= MAX_QUEUED_BYTES

    def _make_room(self):
        """Drop the notifications queued; if that is not room enough, close: False."""
        kept = [(m, n) for m, n in zip(self.items, self.sizes) if m is _FINISHED or "id" in m]
        self.dropped += len(self.items) - len(kept)
        self.items, self.sizes = [m for m, _ in kept], [n for _, n in kept]
        self.size = sum(self.sizes)
        if not self._full():
            return True
        _logger.warning("a client fell %d messages (%d bytes) behind on its stream: closed",
                     len(self.items), self.size)
        self.overflowed = True
        self.items.clear()      # the memory goes now, not when the client does
        self.sizes.clear()
        self.close()
        if self.abort:
            self.abort()
        return False

    def unattended(self, replay):
        """Its connection is gone; the stream waits for a client that resumes it. What comes for
        it meanwhile goes to its replay log, as if sent: it counts against REPLAY_BYTES and
        MAX_REPLAY_BYTES, oldest first, as everything kept for a client that may resume does."""
        self.unread, self.unread_from = replay, self.seq
        waiting, self.items, self.sizes, self.size = self.items, [], [], 0
        for message in waiting:
            self.put(message)

    def close(self):
        self.closed = True
        self.wake.set()
        if self.replay:
            self.replay.forget(self)

    def part(self):
        """Leave the connection, keep the stream (a client resumes it): `get` returns _PART."""
        self.parting = True
        self.wake.set()

    def since(self, seq):
        """The events sent after `seq`, or None if some of them are no longer kept."""
        events = [event for n, event in self.log or () if n > seq]
        return events if self.seq - seq == len(events) else None

    def poke(self):
        """The stream was quiet too long: have `get` return a keepalive."""
        self.poked = True
        self.wake.set()

    async def get(self):
        """Next message; None when closed; _KEEPALIVE when poked; _PART when parting."""
        if not self.items and not self.closed and not self.poked and not self.parting:
            self.wake.clear()
            await self.wake.wait()
        if self.parting and not self.closed:
            self.parting = False
            return _PART
        if self.items:
            self.size -= self.sizes.pop(0)
            self.ended = self.items[0] is _FINISHED
            return self.items.pop(0)
        if self.closed:
            return None
        self.poked = False
        return _KEEPALIVE


def _sse_event(message, stream=None):
    """A message as an SSE event (b"" if it is no JSON); on a resumable stream, its next id."""
    if (data := _encode_safely(message)) is None:
        return b""
    event = b"event: message\ndata: " + data + b"\n\n"
    if stream is not None and stream.number:
        stream.seq += 1
        event = b"id: %d-%d\n%s" % (stream.number, stream.seq, event)
    return event


_KEEPALIVE, _PART = object(), object()
_FINISHED = {"finished": True}   # put on a POST's stream when its frame's work is over


class _HttpSession:
    """A Session plus the HTTP streams its messages travel on. One without an id serves a
    single POST (2026-07-28, --stateless) and ends with it, as does a failed initialize's."""

    def __init__(self, server, sid, legacy=False, version=None):
        self.sid, self.legacy = sid, legacy
        self.posts = set()      # the _Streams answering POSTs that are still open
        self.standalone: _Stream | None = None  # the GET stream: legacy /sse, or GET /mcp
        self.kept = {}          # number -> a POST's SSE stream its client may resume
        self.streams = 0        # resumable streams numbered so far
        self.last_active = _now()
        self.session = Session(server, self.send, version)

    def number(self, stream):
        """Make `stream` resumable: its events get ids, and a priming event from 2025-11-25."""
        self.streams += 1
        stream.number = self.streams
        stream.primes = PROTOCOL_VERSIONS.index(self.session.protocol_version or "2025-03-26") >= 3
        return stream

    def keep(self, stream):
        """A POST's stream, once its connection is over: kept to be resumed."""
        self.kept[stream.number] = stream
        if len(self.kept) > KEPT_STREAMS:   # the oldest answered one goes first; never one in use
            kept = [s for s in self.kept.values() if not s.attached]
            self.kept.pop(next((s for s in kept if s.ended), kept[0]).number).close()

    def send(self, message, related):
        """What no POST's answer carries goes on the GET stream (legacy: everything)."""
        if message is None or not self.legacy and related is not None and related not in self.session.replies:
            return      # nothing, or its request is over (answered or cancelled): nothing belongs to it
        if self.standalone is not None and not self.standalone.closed:
            self.standalone.put(message)
        elif "method" in message and "id" in message:
            self.session._fail(message["id"], McpError(CONNECTION_CLOSED,
                                                       "No open stream can carry a request to the client"))

    def quiet(self):
        """A Streamable HTTP session with nothing open or running: it may expire."""
        return not self.legacy and not self.session.running and not self.posts and not any(
            s.attached for s in [self.standalone, *self.kept.values()] if s)

    def close(self, cancel):
        self.session.close(cancel=cancel)
        for stream in [*self.posts, *self.kept.values(), self.standalone]:
            if stream:
                stream.close()
        self.posts.clear()
        self.kept.clear()



class _Deadline:
    """A connection's one timer: `set` calls `action` in `seconds` unless set again or cleared
    first. Moving it is an attribute write; the timer is re-armed only when it would fire too
    late. (A call_later per read cost a fifth of a request's work: cancelled handles pile up.)"""

    def __init__(self):
        self.loop = asyncio.get_running_loop()
        self.when: float | None = None
        self.action: _Any = None
        self.timer: asyncio.TimerHandle | None = None

    def set(self, seconds, action):
        self.when, self.action = (when := self.loop.time() + seconds), action
        if self.timer is None or self.timer.when() > when:
            if self.timer is not None:
                self.timer.cancel()
            self.timer = self.loop.call_at(when, self._fire)

    def clear(self):
        self.when = None

    def cancel(self):
        """The connection is over: drop the timer too."""
        self.when = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _fire(self):
        self.timer = None
        if self.when is None:
            return
        if self.loop.time() < self.when:    # moved later meanwhile
            self.timer = self.loop.call_at(self.when, self._fire)
            return
        self.when = None
        self.action()


def _is_loopback(host):
    return host in _LOOPBACK or host.startswith("127.")


class _Exchange:
    """One connection and the request it is serving: what the endpoints read
    (`request`, `reader`) and write (through `write`, `send` and `hold`)."""

    def __init__(self, http, reader, writer):
        self.http, self.reader, self.writer = http, reader, writer
        self.deadline = _Deadline()
        self.request: _Any = None   # the _Request being served
        self.cors: list[tuple[str, str]] = []
        self.auth: AuthInfo | None = None      # the AuthInfo of `request`
        self.peer = (writer.get_extra_info("peername") or ("?",))[0]   # the client, or its proxy
        self.proxy = http.proxies and http._trusts(self.peer)   # its X-Forwarded-* are believed
        self.recheck = math.inf     # when `auth` is to be checked again (`authorized`)
        self.watcher: _Any = None   # reads on while an answer is pending: done when the client left
        self.host = None        # the Host header last found good
        self.frame = bytes      # an SSE answer's framing: `_chunk`, or none (it ends at close)
        self.trace = http.trace and http.trace.on()     # its frames say which connection

    def left(self):
        """Whether the client is gone while its answer is pending: reset, closed, or sending
        more (read and not kept: the connection then ends with this answer)."""
        if self.watcher is None:
            self.watcher = asyncio.ensure_future(self.reader.read(1))
        return self.watcher.done() or self.reader.at_eof() or self.writer.transport.is_closing()

    async def authorized(self):
        """A long answer's token, checked again at its expiry and each INTROSPECTION_TTL: False
        once it is no good (the client comes back, and the 401 it gets starts a refresh)."""
        if self.auth is None or _now() < self.recheck:
            return True
        try:
            self.auth = await self.http.auth.check(self.request)
        except _HttpError:
            return False
        self.recheck = _recheck(self.auth)
        return True

    def write(self, status, headers=(), body: bytes | None = b"", close=False):
        """A response head, and `body` unless it is None (a stream follows)."""
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers]
        if body is not None and status != 204:
            lines.append(f"Content-Length: {len(body)}")
        if close or self.http.closing:     # draining: a proxy must not reuse this connection
            lines.append("Connection: close")
        if self.trace:
            self.trace.http("out", f"{status} {_REASONS.get(status, '')}", dict(headers), body)
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))

    def error(self, e, close=False):
        body = b""
        if e.message and e.status not in (408, 413, 414, 431):     # these need no explaining
            code = INTERNAL_ERROR if e.status == 503 else (e.code or INVALID_REQUEST)
            body = encode(_error(None, code, e.message))
        self.write(e.status, list(e.headers) + ([("Content-Type", "application/json")] if body else []),
                   body, close)

    def timeout(self):
        """A request came too slowly: 408, and close (a pending read then ends at EOF)."""
        if not self.writer.is_closing():
            self.error(_HttpError(408, "Request timeout"), close=True)
        self.writer.close()

    async def send(self, data):
        writer = self.writer
        if writer.is_closing():
            raise ConnectionError("connection closed")
        writer.write(data)
        if writer.transport.get_write_buffer_size() > WRITE_BUFFER:
            # The reader is slow: wait, but a reader that stopped is cut off (state freed).
            timer = asyncio.get_running_loop().call_later(WRITE_TIMEOUT, writer.transport.abort)
            try:
                await writer.drain()
            finally:
                timer.cancel()

    def event(self, message, stream=None):
        """A message as an SSE event; on a resumable stream with its id, kept to be replayed."""
        event = _sse_event(message, stream)
        if event and stream is not None and stream.number:
            self.http.replay.add(stream, event)
        if event and self.trace:
            numbered = {"id": f"{stream.number}-{stream.seq}"} if stream and stream.number else {}
            self.trace.event("out", {**numbered, "event": "message", "data": message})
        return event

    def fields(self, fields):
        """An SSE event of our own (not a message), as the trace shows it too."""
        if self.trace:
            self.trace.event("out", fields)
        return "".join(f"{k}: {v}\n" for k, v in fields.items()).encode() + b"\n"

    def prime(self, stream):
        """2025-11-25: an id before anything else, so that a client that loses the stream
        can resume it, and how long to wait first (a priming event: no data)."""
        return self.fields({"id": f"{stream.number}-{stream.seq}", "retry": SSE_RETRY, "data": ""}) \
            if stream.primes else b""

    def start_sse(self, headers, chunked=False):
        """The head of an SSE response: a POST's answer on HTTP/1.1 goes in chunks; a GET's
        stream (and any on HTTP/1.0) ends when the connection does."""
        self.frame = _chunk if chunked else bytes
        headers = headers + [("Content-Type", "text/event-stream"), ("X-Accel-Buffering", "no"),
                             ("Cache-Control", "no-cache, no-transform")]
        headers += [("Transfer-Encoding", "chunked")] * chunked
        self.write(200, headers, None, close=not chunked)

    async def hold(self, stream, first, note=None):
        """Write `first`, then what `stream` carries, until its answer is sent (_FINISHED), it
        parts (_PART: resumed elsewhere) or the client leaves (None): which is returned. A
        resumable stream stays, to be resumed, unless its answer was sent. `note` ends the trace."""
        writer, frame, message = self.writer, self.frame, None
        self.left()     # nothing more is read here: whatever comes means the client left
        self.watcher.add_done_callback(
            lambda w: w.cancelled() or (stream.part() if stream.number else stream.close()))
        stream.attached, stream.parting = True, False
        try:
            if first:
                await self.send(frame(first))

            def direct(message):
                if message is _FINISHED or writer.is_closing() or self.auth and self.recheck <= _now() \
                        or writer.transport.get_write_buffer_size() > WRITE_BUFFER:
                    return False    # a slow reader, a token to check again: the task below
                writer.write(frame(self.event(message, stream)))    # (a keepalive may still be due:
                return True                                     # moving the timer costs more)
            stream.direct, stream.abort = direct, writer.transport.abort
            while (message := await self._next(stream)) not in (None, _FINISHED, _PART):
                await self.send(frame(b": keepalive\n\n" if message is _KEEPALIVE
                                      else self.event(message, stream)))
        except ConnectionError:
            writer.transport.abort()
        finally:
            stream.direct = stream.abort = None
            stream.attached = False
            if not stream.number or stream.ended:
                stream.close()
                stream.items.clear()
                stream.sizes.clear()
            else:
                stream.unattended(self.http.replay)
            if note and self.trace:
                self.trace.note("out", note)
        return None if self.watcher.done() else message

    async def _next(self, stream):
        """What `stream` gives next, once its token is known to be good; None if it is not
        (what it took waits, for a client that resumes)."""
        self.deadline.set(min(KEEPALIVE_INTERVAL, self.recheck - _now()), stream.poke)
        message = await stream.get()
        if message is None or message is _FINISHED or message is _PART or await self.authorized():
            return message
        if message is not _KEEPALIVE:   # what it took waits, for a client that resumes
            stream.items.insert(0, message)
            stream.sizes.insert(0, 0)
        return None


_SESSION_IDS = re.compile(r"(?:^|&)(?:sessionId|session_id)=([^&]*)")


class _Endpoints:
    """What the two endpoints share: the sessions, each its user's own, within MAX_SESSIONS."""
    server: Server
    sessions: "dict[str, _HttpSession]"     # session id -> _HttpSession (legacy and streamable)
    stateless_entries: "set[_HttpSession]"  # the sessions of one POST each, being answered
    stateless: bool
    json_response: bool
    trace: "_Trace | None"
    auth: "ResourceServer | None"
    node: str       # "NAME." (--node) or "": what every session id it makes starts with

    def _own(self, entry, x):
        """The user binds requestState and the session (see _lookup); ctx.auth is what they sent;
        their listens count together (the OAuth subject; with a fixed token, the client's address:
        behind a proxy named in --forwarded-allow-ips, the one it forwards)."""
        session = entry.session
        session.principal, session.auth = _principal(x), x.auth
        session.owner = x.auth.subject if x.auth and not getattr(self.auth, "fixed", True) \
            else x.request.client or x.peer
        return entry

    def _make_room(self):
        """At MAX_SESSIONS, one client must not lock out the rest: the quiet session
        idle longest ends, first those never past initialize, else one idle for
        HANDSHAKE_IDLE (its client gets 404 and initializes again). Else 503."""
        if len(self.sessions) < MAX_SESSIONS:
            return
        quiet = (entry for entry in self.sessions.values() if entry.quiet())
        entry = min(quiet, key=lambda e: (e.session.ready, e.last_active), default=None)
        if entry is None or entry.session.ready and entry.last_active > _now() - HANDSHAKE_IDLE:
            raise _HttpError(503, "Too many sessions")
        del self.sessions[entry.sid]
        entry.close(cancel=True)

    def _find(self, x, sid, legacy):
        """The session `sid` names, of this kind and this user: another user's is as unknown
        as none (SECURITY.md R7: its existence is not told)."""
        entry = self.sessions.get(sid) if len(sid) <= MAX_SESSION_ID else None
        if entry is None or entry.legacy != legacy or x.auth and entry.session.principal != _principal(x):
            other = "." in sid and not sid.startswith(self.node or ".")    # made by another --node
            raise _HttpError(404, "Session not found" + ": another process made it, and may have "
                                                        "stopped; start a new session" * other)
        entry.session.auth = x.auth
        return entry


class _SseEndpoint(_Endpoints):
    """The legacy HTTP+SSE endpoint (2024-11-05), as the capture shows it: GET /sse opens
    the session's stream, whose first event names where to POST (/messages?sessionId=...);
    every answer comes on the stream, each POST is answered 202 at once."""

    async def _sse_get(self, x):
        self._make_room()
        import secrets
        sid = self.node + secrets.token_hex(16)
        entry = self.sessions[sid] = self._own(_HttpSession(self.server, sid, legacy=True), x)
        entry.standalone = _Stream()
        x.start_sse(x.cors)
        # The endpoint is a fixed relative path, never built from the Host header.
        endpoint = x.fields({"id": sid, "event": "endpoint", "data": f"/messages?sessionId={sid}"})
        try:
            await x.hold(entry.standalone, endpoint, "(the GET /sse stream closed: the session ends with it)")
        finally:    # the stream was the session: it ends with it
            self.sessions.pop(sid, None)
            entry.close(cancel=False)
        return False

    def _sse_post(self, x):
        ids = _SESSION_IDS.findall(x.request.query)
        # Our ids are [node.]hex: anything else (escapes, CR/LF, a second id) is refused as is.
        if len(ids) != 1 or not (len(ids[0]) <= MAX_SESSION_ID and ids[0].isascii()
                                 and ids[0].replace(".", "", 1).isalnum()):
            raise _HttpError(400, "Missing or malformed sessionId")
        entry = self._find(x, ids[0], legacy=True)
        message = _parsed_body(x)
        x.write(202, x.cors, b"")     # first: the answer goes to the stream
        entry.session.receive(message)
        return True


class _McpEndpoint(_Endpoints):
    """The Streamable HTTP endpoint (2025-03-26 and later): POST, GET and DELETE /mcp."""

    async def _mcp_post(self, x):
        body = _parsed_body(x)
        message, batch = body if type(body) is dict else {}, type(body) is list
        # 2026-07-28 (its header, or its _meta claim) stands alone: a session of one request.
        modern = x.request.header("mcp-protocol-version") in MODERN_VERSIONS or _modern(message.get("params"))
        listen = modern and message.get("method") == "subscriptions/listen"
        if not self._accepts(x, not self.json_response or listen):
            raise _HttpError(406, "Accept must list application/json and text/event-stream")
        initialize = not modern and message.get("method") == "initialize" and "id" in message
        if (entry := self._entry_for(x, body, modern, initialize)) is None:
            return True
        stream = _Stream(json_only=self.json_response and not listen or batch)
        if entry.sid in self.sessions and not stream.json_only:
            entry.number(stream)
        stream.abort, stream.attached = x.writer.transport.abort, True
        entry.posts.add(stream)
        try:
            entry.last_active = _now()
            taken = entry.session.receive(body, lambda: stream.put(_FINISHED), stream.put)
            if not taken:   # None: a batch refused whole, answered with one error
                return self._no_request(x, stream, taken is not None and batch)
            headers = list(x.cors)
            if initialize and entry.sid and entry.sid not in self.sessions and "result" in stream.items[0]:
                self.sessions[entry.sid] = entry    # a session exists once initialize succeeded
                headers.append(("Mcp-Session-Id", entry.sid))
            return await self._answer(x, stream, headers, batch, modern)
        finally:
            self._after_post(entry, stream, modern)

    def _after_post(self, entry, stream, modern):
        """A POST is over: a one-request session, or a failed initialize's, goes with it."""
        entry.posts.discard(stream)
        stream.attached = False
        if stream.opened and not stream.closed:
            # Its client has an id, and may come back for the rest, or for the end it
            # lost with a connection we took to be alive: TCP cannot tell us.
            stream.abort = None
            entry.keep(stream)
        else:
            stream.close()      # a client that left: what its requests still say is dropped
        entry.last_active = _now()
        if entry.sid not in self.sessions:
            entry.close(cancel=modern)  # 2026-07-28: a client that leaves cancels
            self.stateless_entries.discard(entry)

    def _entry_for(self, x, body, modern, initialize):
        """The session a POST speaks to: its own for a 2026-07-28 request (None if its
        headers do not match it: answered 400) and for every POST --stateless, a new one
        for initialize, else the one its Mcp-Session-Id names (a second initialize too)."""
        version = x.request.header("mcp-protocol-version", "2025-03-26")   # absent: 2025-03-26
        if modern and (mismatch := _mismatch(x.request, body, self.server)):
            id_ = body.get("id") if type(body) is dict else None
            x.write(400, x.cors + [("Content-Type", "application/json")],
                    encode(_error(id_ if _is_id(id_) else None, *mismatch)))
            return None
        if not modern and version not in PROTOCOL_VERSIONS:
            raise _HttpError(400, "Unsupported MCP-Protocol-Version")
        if modern or self.stateless:
            entry = _HttpSession(self.server, None, version=MODERN_VERSIONS[0] if modern else
                                 None if initialize else version)
            self.stateless_entries.add(entry)
        elif initialize and not x.request.header("mcp-session-id"):
            import secrets
            self._make_room()
            entry = _HttpSession(self.server, self.node + secrets.token_urlsafe(24))
        else:
            return self._lookup(x)
        return self._own(entry, x)

    def _no_request(self, x, stream, batch):
        """A POST that carried no request: 202, or 400 (409 for an id in use) with the errors."""
        errors = [m for m in stream.items if m is not _FINISHED]
        if not errors:
            x.write(202, x.cors, b"")
            return True
        status = 409 if not batch and errors[0]["error"]["message"] == _ID_IN_USE else 400
        x.write(status, x.cors + [("Content-Type", "application/json")],
                _encode_all(errors) if batch else encode(errors[0]))
        return True

    async def _answer(self, x, stream, headers, batch, modern):
        """Write the responses to a POST: one JSON body if nothing came before the result,
        else an SSE stream of everything related, result last (`_sse`)."""
        responses, quiet = [], 0.0
        # 2026-07-28: a closed stream is a cancel, so it is looked for each second. A
        # resumable stream turns SSE after a second, primed, so that a client can resume it.
        step = min(KEEPALIVE_INTERVAL, 1.0) if modern or stream.primes else KEEPALIVE_INTERVAL
        while True:
            x.deadline.set(step, stream.poke)
            message = await stream.get()
            if message is None or message is _FINISHED:   # None: the session ended (DELETE, expiry)
                break
            if message is _KEEPALIVE:
                if x.left() or not await x.authorized():    # its slot is freed (the work goes
                    return False        # on; a 2026-07-28 listen ends with its session)
                quiet += step
                if not stream.json_only and (stream.primes or quiet >= KEEPALIVE_INTERVAL):
                    due = quiet >= KEEPALIVE_INTERVAL
                    return await self._sse(x, stream, headers, b": keepalive\n\n" * due)
            elif message is _PART or "method" in message:      # something before the result
                return await self._sse(x, stream, headers, message)
            else:
                responses.append(message)
        x.deadline.clear()
        if not responses and not stream.json_only:
            # Every request was cancelled: no response (cancellation), yet a POST that
            # carried requests is answered with a stream (transports): an empty one.
            return await self._sse(x, stream, headers, None)
        if not responses:
            x.write(202, headers, b"")
            return True
        # 2026-07-28 says an error's HTTP status too: 400, or 404 for an unknown method.
        code = modern and responses[0].get("error", {}).get("code")
        x.write(_MODERN_STATUS.get(code, 200), headers + [("Content-Type", "application/json")],
                _encode_all(responses) if batch else _encode_safely(responses[0]))
        return True

    async def _sse(self, x, stream, headers, first):
        """The answer as an SSE stream: a priming event (2025-11-25), `first` (what came before
        the result, or a keepalive), then the rest (`hold`); `first` _PART ends it at once
        (ctx.close_sse_stream(): the client resumes it), None leaves it empty (all cancelled)."""
        x.start_sse(headers, chunked=x.request.version == "HTTP/1.1")
        stream.opened = bool(stream.number) and first is not None
        prime = x.prime(stream) if stream.opened else b""
        if first is None or first is _PART:
            await x.send(x.frame(prime) if prime else b"")
        else:
            first = await x.hold(stream, prime + (first if type(first) is bytes else x.event(first, stream)))
            if first is None:
                return False    # the client left (or its token ended): its connection ends
        await x.send(x.frame(b""))     # chunked: the last chunk
        if x.trace:
            x.trace.note("out", "(the server ends the SSE stream: the client resumes it with GET)"
                         if first is _PART else "(the SSE stream ends: every answer was sent)")
        return True

    async def _mcp_get(self, x):
        if not self._accepts(x, None):
            raise _HttpError(406, "Accept must list text/event-stream")
        entry, events = self._lookup(x), []
        if (last := x.request.header("last-event-id")):
            stream, events = await _resume(entry, last)
        elif (stream := entry.standalone) is not None and stream.attached:
            raise _HttpError(409, "A stream is already open for this session")
        elif stream is None or stream.closed:   # the session's own (one that lost its connection goes on)
            stream = entry.standalone = entry.number(_Stream())
        else:   # it goes on: first what came for it while no connection read it
            events = [event for n, event in stream.log or () if n > stream.unread_from]
        x.start_sse(x.cors)
        if last and x.trace:
            x.trace.note("out", f"(the stream resumes after {last}; events sent again: {len(events)})")
        try:
            await x.hold(stream, (b"" if last else x.prime(stream)) + b"".join(events),
                         "(the GET /mcp stream closed)")
        finally:
            if stream.closed:
                entry.kept.pop(stream.number, None)
                if entry.standalone is stream:
                    entry.standalone = None
            entry.last_active = _now()
        return False

    def _mcp_delete(self, x):
        entry = self._lookup(x)
        del self.sessions[entry.sid]
        entry.close(cancel=True)
        x.write(200, x.cors, b"")
        return True

    @staticmethod
    def _accepts(x, sse_needed):
        accept = _media_types(x.request.header("accept"))
        if "*/*" in accept:
            return True
        json_ok = "application/json" in accept or "application/*" in accept
        sse_ok = "text/event-stream" in accept or "text/*" in accept
        return sse_ok if sse_needed is None else json_ok and (sse_ok or not sse_needed)

    def _lookup(self, x):
        if not (sid := x.request.header("mcp-session-id")):
            raise _HttpError(400, "Missing Mcp-Session-Id header")
        return self._find(x, sid, legacy=False)


def _parsed_body(x):
    """A POST's body parsed, as a frame for Session.receive; 400 if it is not JSON."""
    try:
        body = _request_from(x.request.body)
    except McpError as e:
        raise _HttpError(400, e.message, e.code) from None
    x.request.body = b""    # traced already; a stream may stay open for hours: it keeps none of it
    if x.auth:
        x.http.auth.step_up(x.auth, body, x.http.server)
    # A JSON string is no message; handed on parsed, it must not be decoded a second time.
    return McpError(INVALID_REQUEST, "Invalid request") if type(body) is str else body


# (method, path) -> its endpoint's handler; a path -> what a 405 there says it takes
_ROUTES = {("POST", "/mcp"): "_mcp_post", ("GET", "/mcp"): "_mcp_get", ("DELETE", "/mcp"): "_mcp_delete",
           ("GET", "/sse"): "_sse_get", ("POST", "/messages"): "_sse_post"}
_ALLOWED = {"/mcp": ("GET, POST, DELETE", "/mcp takes POST, GET and DELETE"),
            "/sse": ("GET", ("/sse takes GET, the legacy SSE stream (which names where to POST); "
                             "Streamable HTTP takes POSTs at /mcp")),
            "/messages": ("POST", "/messages takes the POSTs of a legacy SSE session")}


class HttpServer(_SseEndpoint, _McpEndpoint):
    """The HTTP front door: connections, parsing, limits, Host/Origin/token checks and routing
    to the two endpoints (mixins, kept apart so each protocol reads on its own); the protocol
    is the Session's. Created by `serve_http` / `start_http`; `port` is the bound port."""

    def __init__(self, server: Server, host: str = "127.0.0.1", port: int = 8080, token: str | None = None,
                 allow_origins: typing.Iterable[str] = (), allow_hosts: typing.Iterable[str] = (),
                 stateless: bool = False, json_response: bool = False, insecure: bool = False,
                 trace: "_Trace | None" = None, session_idle: float | None = None,
                 auth: "ResourceServer | None" = None, node: str | None = None,
                 forwarded_allow_ips: str | typing.Iterable[str] = ()) -> None:
        if token is not None and not token.strip(" \t"):
            raise ValueError("an empty token would turn authentication off")
        if token and auth:
            raise ValueError("pass token= or auth= (a ResourceServer), not both")
        auth = auth or (None if token else server.auth)
        if (not _is_loopback(host) or forwarded_allow_ips) and auth and not auth.resource:
            raise ValueError("name the URL clients use, resource= (--resource)")
        if not _is_loopback(host) and not token and not auth and not insecure:
            raise ValueError(f"refusing to serve on {host} without a token: pass --token or --auth-server "
                             "(or --insecure if something else protects this port)")
        self.server, self.host, self.port = server, host, port
        self.auth = ResourceServer(_fixed_token(token)) if token else auth     # see "Authorization"
        self.allow_origins = set(allow_origins)
        self.allow_hosts = {h.lower() for h in allow_hosts}
        self.stateless, self.json_response = stateless, json_response
        self.node = _node(node)     # session ids start with it: a balancer routes on it
        self.proxies = _networks(forwarded_allow_ips)
        self.trace, self.session_idle = trace, session_idle or SESSION_IDLE
        self.sessions = {}
        self.stateless_entries = set()
        self.connections = 0
        self.writers: dict[asyncio.StreamWriter, _Exchange] = {}    # open connections, closed with it
        self.replay = _Replay()         # what resumable streams sent, to be sent again
        self._listener: _Any = None
        self._reaper: _Any = None
        self.closing = self.stopping = False    # /healthz says 503; then every request does

    async def start(self):
        self._listener = await asyncio.start_server(self._connection, self.host, self.port,
                                                    limit=MAX_HEAD_BYTES)
        self.port = self._listener.sockets[0].getsockname()[1]
        if self.auth and not self.auth.resource:
            self.auth.resource = f"http://{'[::1]' if self.host == '::1' else self.host}:{self.port}/mcp"
        self._reaper = asyncio.get_running_loop().create_task(self._expire())
        return self

    async def close(self, grace: float = 0.0) -> None:
        """Stop serving: no new connection, and /healthz says 503; for DRAIN_LINGER s (of `grace`) what
        comes on a connection still open is served (with Connection: close); then every request gets
        503, what runs gets the rest of `grace`, then -32603; the answers go out, every stream closes."""
        loop = asyncio.get_running_loop()
        end, self.closing = loop.time() + grace, True
        self._reaper.cancel()
        self._listener.close()
        linger = loop.time() + min(grace, DRAIN_LINGER)
        while loop.time() < linger and any(x.request is None for x in self.writers.values()):
            await asyncio.sleep(0.01)   # under load a proxy reuses (so ends) its idle ones at once
        self.stopping = True
        for x in self.writers.values():
            if x.request is None:       # between requests: nothing to finish
                x.writer.close()
        entries = list(self.sessions.values()) + list(self.stateless_entries)
        await asyncio.gather(*(entry.session.stop(max(0.0, end - loop.time())) for entry in entries))
        for entry in entries:
            entry.close(cancel=True)
        self.sessions.clear()
        for tick in range(200):     # the answers are written, then each connection ends
            if not self.connections:
                break
            if tick == 100:         # a second on: cut off (from 3.12 wait_closed() waits for all)
                for writer in list(self.writers):
                    writer.transport.abort()
            await asyncio.sleep(0.01)
        await self._listener.wait_closed()

    async def _expire(self):
        interval = min(60.0, max(0.05, min(self.session_idle, HANDSHAKE_IDLE) / 4))
        while True:
            await asyncio.sleep(interval)
            now = _now()
            for sid, entry in list(self.sessions.items()):
                idle = self.session_idle if entry.session.ready else min(self.session_idle, HANDSHAKE_IDLE)
                if entry.last_active < now - idle and entry.quiet():
                    del self.sessions[sid]
                    entry.close(cancel=True)

    async def _connection(self, reader, writer):
        self.connections += 1
        x = self.writers[writer] = _Exchange(self, reader, writer)
        try:
            if self.connections > MAX_CONNECTIONS:
                raise _HttpError(503, "Too many connections")
            kept_alive = False
            while await self._next_request(x, kept_alive) and await self._respond(x):
                kept_alive = True
        except _HttpError as e:
            if x.request is not None:
                self._trace(x)
            if not writer.is_closing():
                e.headers = list(e.headers) + x.cors
                x.error(e, close=True)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass    # the client left, or the loop is shutting down: this connection just ends
        except Exception:   # never let one connection take the server down
            _logger.exception("HTTP connection from %s failed", x.request and x.request.client or x.peer)
        finally:
            self.connections -= 1
            self.writers.pop(writer).deadline.cancel()
            if x.watcher is not None:
                x.watcher.cancel()
            try:
                if not writer.is_closing():
                    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)   # a big answer too
                writer.close()
            except Exception:  # noqa: BLE001 — a writer that cannot close is cut off
                writer.transport.abort()

    async def _respond(self, x):
        """Serve the request read: True if the connection may carry the next."""
        if x.trace and x.request.method != "POST":      # a POST is traced with its body
            self._trace(x)
        x.cors = self._cors(x.request) if self.allow_origins else []
        if not await self._route(x) or x.request.headers.get("connection", "").lower() == "close" \
                or x.request.version == "HTTP/1.0" or self.closing:
            return False
        if x.watcher is not None:   # it read past the request: what it read is not kept
            watched, x.watcher = x.watcher, None
            watched.cancel()
            await asyncio.wait([watched])   # its read ends before the next request's begins
            if not watched.cancelled():
                return False
        if x.writer.is_closing() or x.writer.transport.get_write_buffer_size() > WRITE_BUFFER:
            await x.send(b"")   # a client that reads no answers is cut off
        return True

    async def _next_request(self, x, kept_alive):
        """Read the next request's head into `x.request`; False at EOF."""
        x.cors, x.request = [], None
        # A new connection owes its head from the start: a silent one is cut off too.
        if kept_alive:
            x.deadline.set(IDLE_TIMEOUT, x.writer.close)   # a pending read then ends at EOF
        else:
            x.deadline.set(HEADER_TIMEOUT, x.timeout)
        line = b""
        try:
            line = await x.reader.readuntil(b"\n")
            if line in (b"\r\n", b"\n"):     # RFC 9112 2.2: an empty line before a request is ignored
                line = await x.reader.readuntil(b"\n")
            if kept_alive:
                x.deadline.set(HEADER_TIMEOUT, x.timeout)
            if line[-2:] != b"\r\n":     # else it would wait for a CRLF CRLF that never comes
                raise _HttpError(400, "Lines must end with CRLF")
            end = await x.reader.readexactly(2)
            head = line + (end if end == b"\r\n" else end + await x.reader.readuntil(b"\r\n\r\n"))
        except (asyncio.IncompleteReadError, ConnectionError):
            return False
        except asyncio.LimitOverrunError:
            raise _HttpError(431 if line else 414, "Request head too large") from None
        x.deadline.clear()
        x.request = _parse_head(head)
        if self.proxies:    # behind a proxy: who the client is, in the trace and the log
            self._forwarded(x.request, x)
        return True

    def _trusts(self, address):
        """Whether `address` is one of --forwarded-allow-ips."""
        import ipaddress
        with contextlib.suppress(ValueError):
            address = ipaddress.ip_address(address)
            return any((getattr(address, "ipv4_mapped", None) or address) in net for net in self.proxies)
        return False

    def _forwarded(self, request, x):
        """What a trusted proxy says: the client's address (the last X-Forwarded-For entry not a
        proxy's own: anybody can write those before it), the Host it asked for, its scheme."""
        request.client = x.peer
        if not x.proxy:
            return
        for address in reversed(request.header("x-forwarded-for").replace(" ", "").split(",")):
            request.client = address[:64] or request.client
            if not self._trusts(address):
                break
        host, proto = (request.header(h).rpartition(",")[2].strip() for h in ("x-forwarded-host",
                                                                             "x-forwarded-proto"))
        if host:
            request.headers["host"] = host      # the name the client used: _check_peer checks it
        if proto.lower() in ("http", "https"):
            request.scheme = proto.lower()      # a page of the public origin may call: see _check_peer

    @staticmethod
    def _trace(x):
        if x.trace and not (request := x.request).traced:
            request.traced = True
            x.trace.http("in", f"{request.method} {request.path}{'?' if request.query else ''}{request.query}"
                               + (f"  (from {request.client})" if request.client else ""),
                         request.headers, request.body)

    async def _route(self, x):
        """Serve one request (`_ROUTES`). Returns False when the connection must close."""
        request, path = x.request, x.request.path
        if self.stopping or self.closing and path == "/healthz":
            raise _HttpError(503, "Server shutting down")
        if path == "/healthz" and request.method == "GET":  # a balancer's probe: no Host, no token
            self._no_body(request)
            x.write(200, [("Content-Type", "text/plain")], b"ok\n")
            return True
        x.host = self._check_peer(request, x.host)    # a kept-alive connection's Host: checked once
        if request.method == "OPTIONS" and x.cors and path in _ALLOWED:
            return self._preflight(x)
        if self.auth and path.startswith(_WELL_KNOWN):   # public: no token needed (RFC 9728 3)
            self._no_body(request)
            return self.auth.publish(x, self.server)
        if path not in _ALLOWED:    # no token needed to hear that (no authorization server lives here)
            raise _HttpError(404, "Not found")
        x.auth = self.auth and await self.auth.check(request)     # before any body is read
        x.recheck = _recheck(x.auth) if x.auth else math.inf
        handler = self._handler(request)
        if request.method == "POST":
            await self._read_body(x)
        else:
            self._no_body(request)
        answer = getattr(self, handler)(x)
        return answer if type(answer) is bool else await answer

    def _handler(self, request):
        """The endpoint's handler for a request's method and path (`_ROUTES`), or 405 or 400."""
        path, version = request.path, request.header("mcp-protocol-version")
        post_only = path == "/mcp" and (self.stateless or version in MODERN_VERSIONS)
        if (handler := _ROUTES.get((request.method, path))) is None or post_only and request.method != "POST":
            allow, what = ("POST", ("/mcp takes POST only: 2026-07-28 requests and --stateless have no "
                                    "session to stream or end")) if post_only else _ALLOWED[path]
            raise _HttpError(405, what, headers=[("Allow", allow)])
        if path == "/mcp" and request.method != "POST" and (version or "2025-03-26") not in PROTOCOL_VERSIONS:
            raise _HttpError(400, "Unsupported MCP-Protocol-Version")   # 2025-06-18 transports
        return handler

    def _preflight(self, x):
        """A browser asks (CORS) whether it may: which methods, and which headers."""
        self._no_body(x.request)                # else its body would be read as a request
        asked = (h.strip() for h in x.request.header("access-control-request-headers").split(","))
        params = "".join(f", {h}" for h in asked if h[:10].lower() == "mcp-param-" and _TOKEN.fullmatch(h))
        x.write(204, x.cors + [                 # browsers send no Authorization here
            ("Access-Control-Allow-Methods", "GET, POST, DELETE"),
            ("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, Mcp-Session-Id, "
                                             "MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"
                                             + params),    # 2026-07-28: and a tool's Mcp-Param-*
            ("Access-Control-Max-Age", "600")], b"")
        return True

    def _check_peer(self, request, known=None):
        """The request's Host (if it is not `known`, found good before) and Origin checked; its Host."""
        # Host first: under DNS rebinding the Origin looks fine; only Host betrays it.
        host = request.headers.get("host")
        if not host and request.version == "HTTP/1.1":
            raise _HttpError(400, "Missing Host header")
        if host and host != known:  # on every bind: an empty allowlist means localhost only (fail closed)
            name = _host_name(host)
            if name is None or name not in _LOOPBACK and name not in self.allow_hosts \
                    and host.lower() not in self.allow_hosts:
                raise _HttpError(403, "Host not allowed")
        origin = request.headers.get("origin")     # ours (behind a proxy, the public one) is allowed
        if origin and origin not in self.allow_origins \
                and origin.lower() != f"{request.scheme}://{host}".lower():
            scheme, sep, rest = origin.partition("://")
            if scheme not in ("http", "https") or not sep or "/" in rest or _host_name(rest) not in _LOOPBACK:
                raise _HttpError(403, "Origin not allowed")
        return host

    def _cors(self, request):
        origin = request.header("origin")
        if origin and origin in self.allow_origins:
            return [("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
                    ("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version")]
        return []

    @staticmethod
    def _no_body(request):
        if request.header("content-length", "0") != "0" or request.header("transfer-encoding"):
            raise _HttpError(400, "Unexpected request body")

    async def _read_body(self, x):
        request, headers = x.request, x.request.headers
        if "transfer-encoding" in headers:
            # Chunked bodies are not needed by MCP clients; CL+TE is a smuggling attempt.
            raise _HttpError(400 if headers.get("content-length") or request.version == "HTTP/1.0"
                             else 411, "Send the body with Content-Length")
        if not (length := headers.get("content-length")):
            raise _HttpError(411, "Content-Length required")
        if not (length.isascii() and length.isdigit()) or len(length) > 12:
            raise _HttpError(400, "Bad Content-Length")
        if int(length) > MAX_BODY_BYTES:
            raise _HttpError(413)
        if _media_types(headers.get("content-type", "")) != {"application/json"}:
            raise _HttpError(415, "Content-Type must be application/json")
        if headers.get("expect", "").lower() == "100-continue" and request.version == "HTTP/1.1":
            x.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")     # curl waits a second without it
        x.deadline.set(BODY_TIMEOUT, lambda: self._trace(x) or x.timeout())
        request.body = await x.reader.readexactly(int(length))
        x.deadline.clear()
        if x.trace:
            self._trace(x)


def _chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def _node(name):
    """--node NAME as the start of the session ids this process makes: "NAME." (or "")."""
    if name is not None and not re.fullmatch(r"[A-Za-z0-9]{1,32}", name):
        raise ValueError("a node name is 1 to 32 ASCII letters and digits")
    return f"{name}." if name else ""


def _networks(spec):
    """--forwarded-allow-ips: addresses or networks ("a, b", or an iterable); "*" is any."""
    import ipaddress
    return [ipaddress.ip_network(net, strict=False)
            for a in map(str.strip, spec.split(",") if isinstance(spec, str) else spec)
            for net in (("0.0.0.0/0", "::/0") if a == "*" else (a,) if a else ())]


async def start_http(server, host="127.0.0.1", port=8080, **options):
    """Start serving `server` over HTTP; returns the running HttpServer."""
    return await HttpServer(server, host, port, **options).start()


async def serve_http(server, host="127.0.0.1", port=8080, grace=None, **options):
    """Serve `server` over HTTP until cancelled (SIGTERM, Ctrl-C); what runs then
    gets `grace` seconds (SHUTDOWN_GRACE) to finish."""
    http = await start_http(server, host, port, **options)
    _logger.info("serving MCP on http://%s:%d/mcp (Streamable HTTP) and /sse (legacy SSE)", host, http.port)
    if not _is_loopback(host) and not options.get("allow_hosts"):
        _logger.warning("only Host: localhost is accepted; name the hosts clients use with --allow-host")
    try:
        await asyncio.Event().wait()
    finally:
        await http.close(SHUTDOWN_GRACE if grace is None else grace)

##############################################################################
# Core: the client, over stdio, Streamable HTTP and legacy HTTP+SSE
##############################################################################


class Client(_Peer):
    """An MCP client, async at heart (`SyncClient` for scripts).

    `target`: an ``http(s)://`` URL (Streamable HTTP; a 4xx to that probe falls back to legacy
    HTTP+SSE, as VS Code does), a command that starts a stdio server (a list, or a string split
    as a shell would, never run by one), or a `Server` in this process (no pipe or socket: for tests).

    `era` "auto" tries 2026-07-28 (server/discover), then the handshake (initialize,
    `protocol_version`); "2026-07-28" or "handshake" allow only one. The methods are the same
    in both, but for `subscribe` (a session's) and `listen` (2026-07-28's).

    Handlers answer the server's requests (in 2026-07-28, its input_required results):
    ``sampling(params)`` (with `sampling_tools`, its params may hold tools), ``elicitation(params)``
    (form mode), ``elicit_url(params) -> {"action"}`` (URL mode: show the URL, ask, open it), and
    `roots` (Root dicts, or a function returning them). Callbacks see notifications:
    ``on_log(params)``, ``on_notification(method, params)``. Over HTTP, `token` is a fixed bearer
    token; `auth` an `OAuth`, which signs in on a 401.
    """

    def __init__(self, target: "str | list[str] | Server", *, token: str | None = None,
                 auth: "OAuth | None" = None, timeout: float | None = None, name: str = "mcp_min",
                 era: str = "auto", protocol_version: str = LATEST_PROTOCOL_VERSION,
                 sampling: "_Answerer | None" = None, elicitation: "_Answerer | None" = None,
                 roots: list[_Json] | typing.Callable[[], list[_Json]] | None = None,
                 on_log: typing.Callable[[_Json], object] | None = None,
                 on_notification: typing.Callable[[str, _Json], object] | None = None,
                 trace: "str | _Trace | None" = None, transport: str = "auto",
                 env: dict[str, str] | None = None, inherit_env: bool = True,
                 elicit_url: "_Answerer | None" = None, sampling_tools: bool = False,
                 max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        super().__init__()
        if era not in ("auto", "handshake", *MODERN_VERSIONS):
            raise ValueError(f"era must be 'auto', 'handshake' or one of {MODERN_VERSIONS}")
        self.target, self.token, self.auth, self.timeout = target, token, auth, timeout or REPLY_TIMEOUT
        self.max_message = max_message_bytes
        self.client_info = {"name": name, "version": __version__}
        self.era, self.requested_version = era, protocol_version
        self.log_level: str | None = None
        self.sampling, self.elicitation, self.roots = sampling, elicitation, roots
        self.elicit_url, self.sampling_tools = elicit_url, sampling_tools
        self.on_log, self.on_notification = on_log, on_notification
        self.trace = _Trace(trace, side="client") if isinstance(trace, str) else trace
        # A stdio server's environment: ours plus `env` (only `env`, if not `inherit_env`)
        self.transport_kind, self.env, self.inherit_env = transport, env, inherit_env
        self.server_info = self.server_capabilities = self.protocol_version = self.instructions = None
        self._transport: _Transport | None = None
        self._progress: dict[_Any, _Callback] = {}     # progress token -> its request's callback
        self._listens: dict[_Any, dict[str, _Any]] = {}    # listen id -> method -> callback
        self._tasks: set[asyncio.Task[_Any]] = set()
        self._param_headers: dict[str, _Any] = {}   # 2026-07-28 HTTP: tool -> [(argument path, header)]
        self._asked: dict[_Any, asyncio.Task[_Any]] = {}   # a request of the server's -> its answering

    async def __aenter__(self) -> "Client":  # noqa: PYI034 — typing.Self is 3.11's
        return self if self._transport else await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def capabilities(self) -> _Json:
        modes: _Json = {mode: {} for mode, on in (("form", self.elicitation), ("url", self.elicit_url))
                        if on}
        offered: tuple[tuple[str, _Json, object], ...] = (
            ("sampling", {"tools": {}} if self.sampling_tools else {}, self.sampling),
            ("elicitation", modes, modes),
            ("roots", {}, self.roots is not None))  # roots: no listChanged, we announce none
        caps = {k: v for k, v, on in offered if on}
        return {**caps, "extensions": {_TASKS: {}}} if self.modern else caps    # we poll tasks (call_tool)

    async def connect(self) -> "Client":
        self._gone = None
        target = self.target
        kinds: list[type[_Transport]]
        try:
            if isinstance(target, Server):
                kinds = [_InMemory]
            elif isinstance(target, str) and target[:8].lower().startswith(("http://", "https://")):
                kinds = [_StreamableHttp, _LegacySse] if self.transport_kind == "auto" else \
                    [_StreamableHttp] if self.transport_kind == "http" else [_LegacySse]
            else:
                import shlex
                kinds = [_StdioClient]
                target = shlex.split(target) if isinstance(target, str) else list(target)
            for kind in kinds:
                self._transport = transport = kind(target, self)
                with contextlib.suppress(_Fallback):    # a 4xx to the probe: try legacy SSE (transports)
                    await transport.start()
                    era = _ERAS.get(repr(target)) if self.era == "auto" else self.era
                    if era == "handshake" or kind is _LegacySse or not await self._discover():
                        await self._initialize()
                    if self.era == "auto":
                        _ERAS[repr(target)] = "2026-07-28" if self.modern else "handshake"
                    return self
                await transport.close()
            raise McpError(CONNECTION_CLOSED, f"{target}: not an MCP endpoint")
        except BaseException:   # a failed connect leaves no child process or task behind
            await self.close()
            raise

    @property
    def modern(self) -> bool:
        """Whether we speak 2026-07-28 with this server: no session, each request whole."""
        return self.protocol_version in MODERN_VERSIONS

    async def _discover(self):
        """2026-07-28 first: server/discover. True if the server speaks it; False if
        it is of the handshake era (any error but a version we share, or silence)."""
        versions = [self.era] if self.era in MODERN_VERSIONS else list(MODERN_VERSIONS)
        for again in (True, False):     # -32022 names what it speaks: once more with that
            self.protocol_version = versions[0]
            try:
                result = await self.request("server/discover", timeout=min(DISCOVER_TIMEOUT, self.timeout)
                                            if isinstance(self._transport, _StdioClient) else None)
                # Not a DiscoverResult naming the version (a server that answers anything with {}):
                if type(result) is not dict or type(result.get("supportedVersions")) is not list or \
                        self.protocol_version not in result["supportedVersions"]:
                    raise McpError(UNSUPPORTED_VERSION, f"the server does not speak {versions[0]}")
            except McpError as e:
                self.protocol_version = None
                supported = e.data.get("supported") if type(e.data) is dict else None
                if e.code == UNSUPPORTED_VERSION and type(supported) is list and again and \
                        (versions := [v for v in versions if v in supported]):
                    continue
                if self.era != "auto" or e.code == CONNECTION_CLOSED and self._gone:
                    raise
                _logger.debug("server/discover: %s; the handshake then", e.message)
                return False
            meta = meta if type(meta := result.get("_meta")) is dict else {}
            self.server_info = meta.get(_MODERN + "serverInfo") or result.get("serverInfo", {})
            self.server_capabilities = result.get("capabilities", {})
            self.instructions = result.get("instructions")
            return True

    async def _initialize(self):
        result = await self.request("initialize", {
            "protocolVersion": self.requested_version, "capabilities": self.capabilities(),
            "clientInfo": self.client_info})
        version = result.get("protocolVersion")
        if version not in PROTOCOL_VERSIONS:    # lifecycle: disconnect if we cannot speak it
            await self.close()
            raise McpError(INVALID_REQUEST, f"server speaks protocol {version!r}, which we do not")
        self.protocol_version = version
        self.server_info = result.get("serverInfo", {})
        self.server_capabilities = result.get("capabilities", {})
        self.instructions = result.get("instructions")
        await self.notify("notifications/initialized")
        if self._transport:
            await self._transport.initialized()

    async def close(self) -> None:
        if self._transport:
            transport, self._transport = self._transport, None
            await transport.close()
        self._closed("Client closed")

    async def request(self, method: str, params: _Json | None = None, timeout: float | None = None,
                      on_progress: typing.Callable[[_Json], object] | None = None) -> _Any:
        """Send a request; return its result or raise McpError. On timeout the
        server is sent notifications/cancelled. In 2026-07-28 each request carries
        who we are in its _meta, and an input_required result is answered (by the
        same handlers as the server's requests) and the request sent again."""
        if self._transport is None and not self._gone:
            raise McpError(CONNECTION_CLOSED, "Not connected")
        params, first = self._whole(params), None
        for round_ in range(1, MAX_ROUNDS + 1):
            id_ = next(self._ids)
            first = first or id_
            if on_progress:
                params["_meta"] = {**params.get("_meta", {}), "progressToken": id_}
                self._progress[id_] = on_progress
            why = _TRACE_WHY.set(f"round {round_} of {method} #{first}") if round_ > 1 else None
            try:
                result = await self._exchange(id_, method, params or None, timeout or self.timeout,
                                              self._send)
            finally:
                self._progress.pop(id_, None)
                if why:
                    _TRACE_WHY.reset(why)
            if type(result) is dict and result.get("resultType") == "task" and method != "tools/call":
                raise McpError(INTERNAL_ERROR, f"{method}: the server answered with a task, which only "
                                               "tools/call may")
            if not self.modern or type(result) is not dict or result.get("resultType") != "input_required":
                return result
            params = {**params, "inputResponses": await self._answers(result.get("inputRequests"))}
            params.pop("requestState", None)    # echoed byte for byte, and only if given
            if "requestState" in result:
                params["requestState"] = result["requestState"]
        raise McpError(INTERNAL_ERROR, f"{method}: still asking for input after {MAX_ROUNDS} rounds")

    def _whole(self, params):
        """The params of a request; in 2026-07-28 with who we are in _meta."""
        params = dict(params or {})
        if self.modern:
            params["_meta"] = {_VERSION_KEY: self.protocol_version, _CAPABILITIES_KEY: self.capabilities(),
                               _MODERN + "clientInfo": self.client_info, **params.get("_meta", {})}
            if self.log_level or self.on_log:   # log messages: only to a request that asks
                params["_meta"][_MODERN + "logLevel"] = self.log_level or "info"
        return params

    async def listen(self, on_tools: "_Callback | None" = None, on_prompts: "_Callback | None" = None,
                     on_resources: "_Callback | None" = None, on_updated: "_Callback | None" = None,
                     uris: typing.Iterable[str] = ()) -> _Json:
        """2026-07-28: hear of changes, until the server ends the stream (this then returns) or
        this is cancelled. Each callback given is called with the params of its notification:
        the tool, prompt or resource list changed, or a resource of `uris` was updated."""
        if not self.modern:
            raise McpError(METHOD_NOT_FOUND, "listen is 2026-07-28's: in a session the server's "
                                             "notifications come to on_notification")
        lists = zip(_LISTS, (on_tools, on_prompts, on_resources))
        callbacks = {f"notifications/{kind}/list_changed": fn for (_, kind), fn in lists}
        callbacks["notifications/resources/updated"] = on_updated
        wanted: _Json = {key: True for (key, kind), fn in zip(_LISTS, callbacks.values()) if fn}
        if on_updated:
            wanted["resourceSubscriptions"] = list(uris)
        id_ = next(self._ids)
        self._listens[id_] = callbacks
        try:
            return await self._exchange(id_, "subscriptions/listen", self._whole(
                {"notifications": wanted}), None, self._send)
        finally:
            del self._listens[id_]

    async def notify(self, method: str, params: _Json | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method, **({} if params is None else {"params": params})}
        await asyncio.wait_for(self._send(message), self.timeout)

    async def _send(self, message: _Json) -> None:
        if self._transport is None:
            raise McpError(CONNECTION_CLOSED, self._gone or "Not connected")
        await self._transport.send(message)

    def _abandon(self, id_, method, reason, related=None):
        """Tell the server a request is abandoned, in the background: never wait on it."""
        # initialize is never cancelled; 2026-07-28 HTTP cancels by closing the request's stream
        if method == "initialize" or self._transport is None or self.modern and self._transport.drop(id_):
            return

        async def tell():
            try:
                await self.notify("notifications/cancelled", {"requestId": id_, "reason": reason})
            except Exception as e:  # noqa: BLE001 — the connection is going: nothing will run it anyway
                _logger.debug("could not cancel request %r: %s", id_, e)
        _background(self._tasks, tell())

    def _received(self, message):
        """Every message from the server comes through here (parsed, or JSON text); a
        response's id is returned (what its transport waits for)."""
        try:
            message = decode(message) if isinstance(message, (bytes, str)) else message
            kind = classify(message)
        except McpError:    # one bad message is skipped, never the whole stream
            _logger.warning("ignoring a malformed message from the server")
            return None
        if kind == "response":
            self._settle(message)
            return message["id"]
        if kind == "request":     # kept by its id: the server may cancel it
            _background(self._tasks, self._answer(message), self._asked, message["id"])
        else:
            self._notified(message["method"], message.get("params") or {})
        return None

    def _notified(self, method, params):
        """A notification from the server, to whoever waits for it; bad params never raise."""
        fields = params if type(params) is dict else {}
        meta = fields["_meta"] if type(fields.get("_meta")) is dict else {}
        asked, token = fields.get("requestId"), fields.get("progressToken")
        listen = meta.get(_MODERN + "subscriptionId")
        if method == "notifications/cancelled" and _is_id(asked) and asked in self._asked:
            self._asked.pop(asked).cancel()     # its handler stops: no answer
        elif _is_id(listen) and self._listens.get(listen, {}).get(method):
            self._call(self._listens[listen][method], params)
        elif method == "notifications/progress" and _is_id(token) and token in self._progress:
            self._call(self._progress[token], params)
        elif method == "notifications/message" and self.on_log:
            self._call(self.on_log, params)
        elif self.on_notification:
            self._call(self.on_notification, method, params)

    def _too_big(self, id_=None, head=b"", tail=b""):
        """A message from the server past `max_message_bytes` was skipped: the request it
        answers (`id_`, else the id read off its ends) fails now, naming the limit."""
        found = _EDGE_ID[0].match(head) or _EDGE_ID[1].search(tail)
        if id_ is None and found:
            with contextlib.suppress(ValueError):   # "00", a control byte, \xff: no id, not an error
                id_ = json.loads(found.group(1))
        _logger.error("a message from the server over %d bytes was skipped", self.max_message)
        self._fail(id_, McpError(INTERNAL_ERROR, f"The server's answer is over {self.max_message} bytes, "
                                 "this client's limit: raise it with Client(max_message_bytes=...)"))

    def _call(self, fn, *args):
        try:
            result = fn(*args)
            if asyncio.iscoroutine(result):
                _background(self._tasks, result)
        except Exception:
            _logger.exception("client callback failed")

    async def _handle(self, method, params):
        """What we answer to the server's request (or input request): our handler's (`_ANSWERS`)."""
        if method == "ping":
            return {}
        url = method == "elicitation/create" and params.get("mode") == "url"
        what, option = _ANSWERS.get((method, url), (method, None))
        handler = getattr(self, option) if option else None
        if handler is None:     # ours to refuse, not the server's: say so, and how to answer it
            other_mode = method == "elicitation/create" and self.capabilities().get("elicitation")
            raise McpError(INVALID_PARAMS if other_mode else METHOD_NOT_FOUND, f"This client declined the "
                           f"server's {what}: it has no handler for it"
                           + f" (Client({option}=...))" * bool(option))
        if method == "roots/list":
            return {"roots": list(typing.cast(_Any, handler() if callable(handler) else handler))}
        result = handler(params)
        return await result if asyncio.iscoroutine(result) else result

    async def _answers(self, asks, skip=()):
        """Our answers to the server's inputRequests (but those in `skip`): `_handle`'s."""
        asks = asks if type(asks) is dict else {}
        return {key: await self._handle(ask.get("method"), ask.get("params") or {}) if type(ask) is dict
                else {} for key, ask in asks.items() if key not in skip}

    async def _answer(self, message):
        method, params = message["method"], message.get("params") or {}
        try:
            reply = _result(message["id"], await self._handle(method, params))
        except McpError as e:
            reply = _error(message["id"], e.code, e.message, e.data)
        except Exception:
            _logger.exception("handler for %s failed", method)
            reply = _error(message["id"], INTERNAL_ERROR, "Internal error")
        if self._transport:
            try:
                await self._transport.send(reply)
            except Exception:  # noqa: BLE001 — the answer is lost, not the client
                _logger.warning("could not answer the server's %s", method)

    async def _all(self, method):
        items, cursor, seen = [], None, set()
        while True:
            page = await self.request(method, {"cursor": cursor} if cursor else None)
            items += page.get(_LISTS_OF[method]) or []
            cursor = page.get("nextCursor")
            if not cursor:
                return self._usable(items) if method == "tools/list" else items
            if cursor in seen or type(cursor) is not str:     # a server going round in circles
                raise McpError(INVALID_REQUEST, f"{method}: the server repeated a cursor")
            seen.add(cursor)

    def _usable(self, tools):
        """2026-07-28 HTTP: the tools whose x-mcp-header marks are valid (the others MUST
        be left out), and which arguments each mirrors in Mcp-Param-* headers."""
        if not (self.modern and isinstance(self._transport, _StreamableHttp)):
            return tools
        usable = []
        for tool in tools:
            named = type(tool) is dict and type(tool.get("name")) is str
            if (marks := _header_params(tool.get("inputSchema")) if named else None) is None:
                _logger.warning("a tool left out: no name, or invalid x-mcp-header marks: %.100r", tool)
            else:
                usable.append(tool)
                self._param_headers[tool["name"]] = marks
        return usable

    async def ping(self) -> _Json:
        """{} if the server answers (2026-07-28 has no ping: server/discover stands in)."""
        return await self.request("ping") if not self.modern else await self.request("server/discover") and {}

    async def list_tools(self) -> list[ToolInfo]:
        return await self._all("tools/list")

    @typing.overload
    async def call_tool(self, name: str, arguments: _Json | None = None, on_progress: _Callback | None = None,
                        timeout: float | None = None, task: typing.Literal[False] = False,
                        on_status: _Callback | None = None) -> CallToolResult: ...
    @typing.overload
    async def call_tool(self, name: str, arguments: _Json | None = None, on_progress: _Callback | None = None,
                        timeout: float | None = None, *, task: typing.Literal[True],
                        on_status: _Callback | None = None) -> "TaskHandle": ...

    async def call_tool(self, name: str, arguments: _Json | None = None, on_progress: _Callback | None = None,
                        timeout: float | None = None, task: bool = False,
                        on_status: _Callback | None = None) -> _Any:
        """The CallToolResult; a tool's failure is ``result["isError"]``, not an exception. If the
        server answers with a task (2026-07-28's tasks extension), it is polled until it ends,
        within `timeout` (else its ttlMs), and cancelled if this is; ``on_status(task)`` sees its
        status change. With `task`, a `TaskHandle` instead, to poll or cancel yourself."""
        if self.modern and isinstance(self._transport, _StreamableHttp) and not self._param_headers:
            await self.list_tools()     # which arguments go in Mcp-Param-* headers too
        began, params = asyncio.get_running_loop().time(), {"name": name, "arguments": arguments or {}}
        answer = await self.request("tools/call", params, timeout=timeout, on_progress=on_progress)
        left = None if timeout is None else timeout - (asyncio.get_running_loop().time() - began)
        handle = TaskHandle(self, answer, on_status)
        return handle if task else await handle.result(left)

    async def list_skills(self) -> list[_Json]:
        """The skills the server offers (SEP-2640): skills/list entries {uri, frontmatter,
        resources}, every page; [] if it offers none. Nothing is read ahead of need."""
        extensions = typing.cast(_Json, self.server_capabilities or {}).get("extensions")
        return await self._all("skills/list") if type(extensions) is dict and _SKILLS in extensions else []

    async def load_skill(self, skill: "_Json | str") -> str:
        """A skill's SKILL.md, checked against its entry (from `list_skills`, or skills/get of
        this SKILL.md URI): its size, digest and front matter. McpError if one differs."""
        if isinstance(skill, str):
            skill = (await self.request("skills/get", {"uri": skill})).get("skill")
        if type(skill) is not dict or type(skill.get("uri")) is not str \
                or type(skill.get("frontmatter")) is not dict:
            raise McpError(INTERNAL_ERROR, "Not a skill: a skill is {uri, frontmatter, resources}")
        text = _text_or_bytes(await self.read_skill_file(skill, skill["uri"]))
        if type(text) is not str or not _same(_front_matter(text), skill["frontmatter"]):
            raise McpError(INTERNAL_ERROR, f"Skill {skill['uri']} refused: its front matter is not what "
                                           "the server listed")
        return text

    async def read_skill_file(self, skill: _Json, uri: str) -> bytes:
        """A file of `skill` (its URI, or its path in the skill's folder: "references/FORMS.md"),
        checked: only a file its entry lists, of the size and sha256 listed (a "dynamic" skill
        lists none: any file in its folder, unchecked). McpError if not."""
        folder = str(skill.get("uri")).rpartition("/")[0]
        uri = uri if "://" in uri else f"{folder}/{uri}"
        files = skill.get("resources")
        listed = next((f for f in files if type(f) is dict and f.get("uri") == uri), None) \
            if type(files) is list else None
        inside = uri.startswith(folder + "/") and not {".", ".."} & set(uri.split("/")[3:])
        if not inside or listed is None and files != "dynamic":   # an entry naming files elsewhere is void
            raise McpError(INTERNAL_ERROR, f"Skill file {uri} refused: the skill does not list it")
        contents = (await self.read_resource(uri)).get("contents")
        first = contents[0] if type(contents) is list and contents and type(contents[0]) is dict else {}
        try:
            data = first["text"].encode() if type(first.get("text")) is str else \
                base64.b64decode(first["blob"])
        except (KeyError, TypeError, ValueError):
            data = None
        if data is None or listed and _fingerprint(data) != {k: listed.get(k) for k in ("digest", "size")}:
            raise McpError(INTERNAL_ERROR, f"Skill file {uri} refused: its size or sha256 is not what "
                                           "the server listed")
        return data

    async def list_resources(self) -> list[_Json]:
        return await self._all("resources/list")

    async def list_resource_templates(self) -> list[_Json]:
        return await self._all("resources/templates/list")

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self.request("resources/read", {"uri": uri})

    async def subscribe(self, uri: str) -> _Json:
        return await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> _Json:
        return await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self) -> list[_Json]:
        return await self._all("prompts/list")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> GetPromptResult:
        return await self.request("prompts/get", {"name": name, "arguments": arguments or {}})

    async def complete(self, ref: _Json, argument: str, value: str,
                       context: dict[str, str] | None = None) -> _Json:
        """Completions for `argument`; `ref` is {"type": "ref/prompt", "name": ...}
        or {"type": "ref/resource", "uri": ...}."""
        params = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        return (await self.request("completion/complete", params))["completion"]

    async def set_log_level(self, level: str) -> _Json:
        if self.modern:     # 2026-07-28: each request asks for the log messages it wants
            self.log_level = level
            return {}
        return await self.request("logging/setLevel", {"level": level})


# Where the id of a message too big to read is: near its start, or (the TypeScript SDK's order) at its end.
_EDGE_ID = (re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,99}")'),
            re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,99}")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'))
# The server's requests a handler answers: (method, URL mode) -> what a refusal calls it, the Client option.
_ANSWERS = {("sampling/createMessage", False): ("sampling request", "sampling"),
            ("elicitation/create", False): ("form elicitation", "elicitation"),
            ("elicitation/create", True): ("URL elicitation", "elicit_url"),
            ("roots/list", False): ("roots/list request", "roots")}
_ERAS: dict[str, str] = {}  # server (URL, command) -> the era it spoke (a handshake-era one: not asked again)


def _background(tasks, coroutine, index=None, key=None):
    """Run `coroutine` as a task held in `tasks` until it ends (the loop holds tasks weakly),
    and in ``index[key]`` if given, until it ends or another task takes that place."""
    task = asyncio.ensure_future(coroutine)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    if index is not None:
        index[key] = task
        task.add_done_callback(lambda _: index.get(key) is task and index.pop(key))
    return task


class SyncClient:
    """`Client` for scripts and the REPL: the same methods, without ``await``.

    >>> with SyncClient(demo_server()) as c:     # or a URL, or "python3 mcp_min.py serve"
    ...     c.call_tool("getUser", {"name": "John"})["structuredContent"]
    {'name': 'John', 'email': 'john@example.com'}
    """

    def __init__(self, target, **options):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._thread.start()
        self.client = Client(target, **options)
        try:
            self._run(self.client.connect())
        except BaseException:
            self._stop()
            raise

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def __getattr__(self, name):
        return getattr(_Synced(self.client, self._run), name)

    def close(self):
        if self._loop.is_running():
            self._run(self.client.close())
            self._stop()

    def _stop(self):
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Synced:
    """`target`, its coroutine methods made plain ones that wait (`run`): a TaskHandle's too."""

    def __init__(self, target, run):
        self.target, self.run = target, run

    def __getattr__(self, name):
        method = getattr(self.target, name)
        if not asyncio.iscoroutinefunction(method):
            return method

        def wait(*args, **kwargs):
            result = self.run(method(*args, **kwargs))
            return _Synced(result, self.run) if isinstance(result, TaskHandle) else result
        return wait


class _Transport:
    """A client transport: coroutines `start`, `send` (McpError(CONNECTION_CLOSED) if it
    cannot), `initialized` (after the handshake) and `close`. What arrives goes to
    ``client._received``; loss is told as to any `_Peer` (`_fail`, `_closed`). Over HTTP,
    every exchange goes through `_request`."""
    url = ""

    def __init__(self, target: _Any, client: "Client") -> None:  # each kind has its own: this says how
        self.client = client                                        # Client.connect makes one

    async def start(self) -> None:
        pass

    async def initialized(self) -> None:
        pass

    async def send(self, message: _Json) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        pass

    def drop(self, id_):
        """Abandon request `id_` in the transport's own way: True if it did."""
        return False

    def _trace(self, kind, *args):
        if self.client.trace:
            getattr(self.client.trace, kind)(*args)

    async def _request(self, method, url, headers, body=b"", sign_in=True):
        """HTTP: one exchange with `url` (McpError if it cannot be reached), our token in its header,
        never in the URL. After a 401, or a 403 insufficient_scope, an `OAuth` signs in and it goes
        again (_AUTH_TRIES times at most); else the answer stays as it came."""
        auth, tries = self.client.auth, 0
        while True:
            token = auth.token(self.url) if auth else self.client.token
            bearer = f"Bearer {token}" if token else None
            try:
                sent = {**headers, "Authorization": bearer} if bearer else headers
                response = await _http(url, method, sent, body, self.client.trace)
            except OSError as e:
                raise McpError(CONNECTION_CLOSED, f"cannot reach {url}: {e}") from None
            challenge, status = response.headers.get("www-authenticate", ""), response.status
            if not (auth and sign_in) or tries == _AUTH_TRIES or status != 401 and not (
                    status == 403 and "insufficient_scope" in challenge):
                return response
            response.close()
            signing_in = _SIGN_IN_TRACE.set(self.client.trace)
            try:
                if not await auth.challenged(self.url, status, challenge, bearer):
                    return response
            finally:
                _SIGN_IN_TRACE.reset(signing_in)
            tries += 1


class _InMemory(_Transport):
    """A `Server` in this very process as the client's transport: the same JSON text as
    on a wire, handed over without a pipe or a socket."""

    def __init__(self, server, client):
        self.client = client
        self.session = Session(server, self._deliver)

    def _deliver(self, message, related):
        if message is not None and (data := _encode_safely(message)) is not None:
            self._trace("message", "in", "memory", message)
            self.client._received(data)     # as from a pipe: a duplicate key ... is skipped

    async def send(self, message):
        self._trace("message", "out", "memory", message)
        self.session.receive(encode(message))

    async def close(self):
        self.session.close(cancel=True)


class _Fallback(Exception):
    """The URL did not take a Streamable HTTP initialize: try legacy SSE."""


class _StdioClient(_Transport):
    """Spawns the server (argv list, no shell) and speaks lines on its pipes."""

    def __init__(self, argv, client):
        self.argv, self.client = argv, client
        self.process: _Any = None
        self._reader: asyncio.Future[None] | None = None

    async def start(self):
        if not self.argv:
            raise ValueError("the command that starts the server is empty")
        # In a process group of its own, so that close() ends what it started too (npx, uvx
        # and shell wrappers run the server as a grandchild), and Ctrl-C here is ours alone.
        group: _Json = {"start_new_session": True} if os.name == "posix" else {"creationflags": 0x200}
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, **group,
                env=self.client.env if self.client.env is None or not self.client.inherit_env
                else {**os.environ, **self.client.env})
        except OSError as e:
            url = " (a URL needs http:// or https://)" if len(self.argv) == 1 and ":" in self.argv[0] else ""
            raise McpError(CONNECTION_CLOSED, f"cannot start the server {self.argv[0]!r}: "
                           f"{e.strerror}{url}") from None
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self):
        lines = _Lines(lambda head, tail: self.client._too_big(None, head, tail), self.client.max_message)
        try:
            while True:
                chunk = await self.process.stdout.read(READ_CHUNK)
                for line in lines.feed(chunk) if chunk else lines.end():    # at EOF: a last line without \n
                    if line.strip():
                        self._trace("line", "in", "stdout", line)
                        self.client._received(line)
                if not chunk:
                    return
        finally:
            self.client._closed("The server closed its output")

    async def send(self, message):
        self._trace("message", "out", "stdin", message)
        try:
            self.process.stdin.write(encode(message) + b"\n")
            await self.process.stdin.drain()
        except (ConnectionError, AttributeError):
            raise McpError(CONNECTION_CLOSED, "The server is gone") from None

    async def close(self):
        """stdio shutdown: close stdin, wait; then SIGTERM; then SIGKILL: each step KILL_STEP
        seconds, each signal to the server's whole process group (on Windows: the server)."""
        import signal
        process = self.process
        if process is None:
            return
        try:
            process.stdin.close()
        except Exception as e:  # noqa: BLE001 — already broken: the steps below still end the process
            _logger.debug("closing the server's stdin: %s", e)
        for signum in (None, signal.SIGTERM, getattr(signal, "SIGKILL", None)):
            try:
                if signum and os.name == "posix":
                    os.killpg(process.pid, signum)
                elif signum:
                    process.terminate() if signum == signal.SIGTERM else process.kill()
            except (ProcessLookupError, PermissionError):
                break
            if await self._ended(process):
                break
        if self._reader:
            self._reader.cancel()

    @staticmethod
    async def _ended(process):
        """Whether the server, and on POSIX every process of its group, ends within KILL_STEP."""
        end = asyncio.get_running_loop().time() + KILL_STEP
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), KILL_STEP)
            while os.name == "posix" and asyncio.get_running_loop().time() < end:
                try:
                    os.killpg(process.pid, 0)   # anyone left? (a dead one not yet reaped counts)
                except (ProcessLookupError, PermissionError):
                    return True
                await asyncio.sleep(0.02)
        return process.returncode is not None and os.name != "posix"


class _HttpResponse:
    def __init__(self, status, headers, reader, writer, trace=None, head=""):
        self.status, self.headers, self.reader, self.writer = status, headers, reader, writer
        self.untraced = (trace, head) if trace else None    # traced with its body, if read
        self.trace = trace      # this connection's view of the client's trace

    def _trace(self, body=None):
        if self.untraced:
            (trace, head), self.untraced = self.untraced, None
            trace.http("in", head, self.headers, body)

    async def chunks(self, trace=True):
        """The body, piece by piece, as framed by the headers: chunked, sized, or to the connection's end."""
        if trace:
            self._trace()   # a stream's head before its events
        reader = self.reader
        if self.status in (204, 304):
            return
        if "chunked" in self.headers.get("transfer-encoding", ""):
            while (size := _size((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)):
                async for piece in self._pieces(size):
                    yield piece
                await reader.readexactly(2)     # the chunk's CRLF
            await reader.readuntil(b"\r\n")     # the last chunk's (empty) trailer
        elif "content-length" in self.headers:
            async for piece in self._pieces(_size(self.headers["content-length"], 10)):
                yield piece
        else:
            while (data := await reader.read(READ_CHUNK)):
                yield data

    async def _pieces(self, left):
        """`left` bytes, in pieces: the server picks the size, not our memory."""
        while left:
            piece = await self.reader.read(min(left, READ_CHUNK))
            if not piece:
                raise ConnectionError("body cut short")
            left -= len(piece)
            yield piece

    async def body(self, limit):
        """The whole body; McpError past `limit` bytes."""
        pieces, size = [], 0
        try:
            async for chunk in self.chunks(trace=False):
                pieces.append(chunk)
                if (size := size + len(chunk)) > limit:
                    raise McpError(INTERNAL_ERROR, f"HTTP response over {limit} bytes")
        except BaseException:   # timed out, cancelled, cut short: the connection goes too
            self.close()
            raise
        finally:
            self._trace(b"".join(pieces))   # the head with its body: one record
        return b"".join(pieces)

    async def events(self, client, closed):
        """The SSE events of this response, each traced; one past the client's max_message_bytes
        fails the request it answers. A stream that breaks (reset, bad framing) just ends."""
        parser = _SseParser(client.max_message)
        try:
            async for chunk in self.chunks():
                for event in parser.feed(chunk):
                    if "too_big" in event:
                        client._too_big(None, *event["too_big"])
                        continue
                    if self.trace:
                        self.trace.event("in", event)
                    yield event
        except Exception as e:  # noqa: BLE001 — reset, bad framing, a stream cut short: it ends
            _logger.debug("an SSE stream ended: %r", e)
        finally:
            self.close()
            if self.trace:
                self.trace.note("in", closed)

    def close(self):
        self._trace()
        self.writer.close()


_DIGITS = {10: frozenset("0123456789"), 16: frozenset("0123456789abcdefABCDEF")}


def _size(text, base):
    """A body or chunk size as sent: digits only (no sign, no spaces), or ValueError."""
    digits = text.decode("latin-1") if isinstance(text, bytes) else text
    if not digits or len(digits) > 12 or not set(digits) <= _DIGITS[base]:
        raise ValueError(f"bad HTTP body size {digits[:20]!r}")
    return int(digits, base)


async def _http(url, method, headers, body=b"", trace=None, hops=5):
    """One HTTP/1.1 request on a new connection; a 307 or 308 is followed, `hops` times
    at most, with the same method and body (RFC 9110 15.4.8)."""
    parts = urlsplit(url)
    tls = parts.scheme == "https"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if (trace := trace and trace.on()):     # before connecting: a refused one shows what was tried
        trace.http("out", f"{method} {target}", headers, body)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(   # ssl=True: the default context
        parts.hostname, parts.port or (443 if tls else 80), ssl=tls, limit=MAX_HEAD_BYTES), CONNECT_TIMEOUT)
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    try:
        status, reason, response_headers = await _response_head(reader)
    except BaseException:   # cancelled too: the connection goes with the request
        writer.close()
        raise
    if status in (307, 308) and hops and (location := response_headers.get("location")):
        target = urlsplit(urljoin(url, location))
        if target.scheme == "https" or target.scheme == parts.scheme:     # never down to plain http
            writer.close()
            if target[:2] != parts[:2]:     # another origin: our credentials stay with theirs
                headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            return await _http(target.geturl(), method, headers, body, trace, hops - 1)
    return _HttpResponse(status, response_headers, reader, writer, trace, reason)


async def _response_head(reader):
    """The status, its line's rest and the headers of a response (1xx ones skipped: 100
    Continue and 103 Early Hints come before the real one)."""
    while True:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REPLY_TIMEOUT)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        version, _, rest = status_line.partition(" ")
        if not (version.startswith("HTTP/1.") and _ASCII_DIGITS.fullmatch(rest[:3])):
            raise ConnectionError(f"not an HTTP response: {status_line[:40]!r}")
        if int(rest[:3]) >= 200:
            return int(rest[:3]), rest, {k.strip().lower(): v.strip()
                                         for k, colon, v in (line.partition(":") for line in lines) if colon}


def _http_error(status, body, url):
    """An HTTP error answer as the McpError it means: the JSON-RPC error it carries, if any."""
    if status == 401:
        return McpError(CONNECTION_CLOSED, "HTTP 401: the server wants a valid --token (or --auth)")
    with contextlib.suppress(Exception):
        detail = json.loads(body)["error"]
        return McpError(detail["code"], detail["message"], detail.get("data"))
    return McpError(CONNECTION_CLOSED, f"HTTP {status} from {url}")


class _SseParser:
    """WHATWG server-sent events from bytes: yields dicts (event, data, id, retry).

    Lines end in CRLF, LF or CR; a leading BOM is dropped; an event with no data is not
    dispatched as one (its id and retry still come through). Each piece is scanned once:
    linear however long an event. An event past `limit` bytes of data, or with a line longer
    than that, is skipped to its end and comes as {"too_big": (head, tail)}, the first and
    last bytes of its data. What comes out does not depend on where the pieces were cut.
    """

    def __init__(self, limit=MAX_MESSAGE_BYTES):
        self.limit, self.started, self.after_cr = limit, False, False
        self.line = bytearray()     # the line being read: whole while it may matter, else its end
        self.long: bytes | None = None  # ... and then its first bytes (field and value's start)
        self.length = 0             # ... and how long it is
        self.event, self.data, self.size = {}, [], 0
        self.big: list[bytes] | None = None     # the event is too big: [head, tail] of its data alone

    def feed(self, data):
        if not data:
            return []
        if self.after_cr and data.startswith(b"\n"):
            data = data[1:]         # the LF of a CRLF split between two pieces
        self.after_cr = data.endswith(b"\r")
        *lines, rest = _SSE_LINE_ENDS.split(data)
        events = []
        for raw in lines:
            self._add(raw)
            self._line(events)
        self._add(rest)
        return events

    def _add(self, piece):
        """Read on in the line: once it makes its event too big, only its ends are kept."""
        self.length += len(piece)
        if self.long is None:
            self.line += piece
            if len(self.line) > _EDGE + 6 and self._hopeless():
                self.long = bytes(self.line[:_EDGE + 6])    # "data: " and the value's first bytes
                del self.line[:-_EDGE]
        else:
            self.line += piece[-_EDGE:]
            del self.line[:-_EDGE]

    def _hopeless(self):
        """Whether the line being read makes its event too big, whatever comes after it."""
        if len(self.line) > self.limit:
            return True
        if not self.line.startswith(b"data:"):
            return False
        value = len(self.line) - 5 - self.line.startswith(b"data: ")
        return self.big is not None or self.size + value + 1 > self.limit

    def _too_big(self, head):
        """Keep the data's first bytes (from the first data line, or this one) and go on without it."""
        if self.big is None:
            first = self.data[0] if self.data else head
            self.big = [bytes(first[:_EDGE]), b""]
        self.data, self.size = [], 0

    def _line(self, events):
        line, long, length = bytes(self.line), self.long, self.length
        self.line, self.long, self.length = bytearray(), None, 0
        if not self.started:    # the first line may start with a byte order mark
            self.started = True
            if (long or line).startswith(_BOM):
                length -= len(_BOM)
                long, line = (long[3:], line) if long else (None, line[3:])
        if long is None and not line:
            return self._dispatch(events)
        whole = long is None
        field, colon, value = (line if whole else long).partition(b":")
        if field[:1] == b"" and colon:      # a comment
            return None
        space = value.startswith(b" ")
        value = value[1:] if space else value
        size = len(value) if whole else length - len(field) - bool(colon) - space
        tail = value if whole else line
        if field == b"data":
            if self.big is None:
                self.size += size + 1
                if self.size > self.limit or length > self.limit:
                    self._too_big(value)
                else:
                    self.data.append(value)
            if self.big is not None:    # of an event too big, only the last bytes are kept
                self.big[1] = tail[-_EDGE:]
        elif length > self.limit:
            self._too_big(b"")
        elif field in (b"event", b"id", b"retry"):
            self.event[field.decode()] = value.decode("utf-8", "replace")
        return None

    def _dispatch(self, events):
        if self.big:
            events.append({"event": self.event.get("event") or "message", "too_big": tuple(self.big)})
        elif self.data:
            self.event["event"] = self.event.get("event") or "message"
            self.event["data"] = b"\n".join(self.data).decode("utf-8", "replace")
            events.append(self.event)
        elif (kept := {k: v for k, v in self.event.items() if k in ("id", "retry")}):
            events.append(kept)     # no data, so no event: only its id and retry count
        self.event, self.data, self.size, self.big = {}, [], 0, None


_SSE_LINE_ENDS = re.compile(rb"\r\n|\r|\n")
_ASCII_DIGITS = re.compile(r"[0-9]{1,12}")     # str.isdigit() takes "²", which int() refuses
_BOM = b"\xef\xbb\xbf"


_REINITIALIZING = contextvars.ContextVar("mcp_min_reinitializing", default=False)


class _StreamableHttp(_Transport):
    """Streamable HTTP (2025-03-26+): a POST per message, JSON or SSE replies."""

    def __init__(self, url, client):
        self.url, self.client = url, client
        self.session_id = self._get_stream = None
        self._tasks, self._closing = set(), False
        self._streams = {}      # request id -> the task carrying its answer (its POST, then its stream)
        self._reinitializing = asyncio.Lock()

    def _headers(self, accept="application/json, text/event-stream"):
        headers = {"Accept": accept, "Mcp-Session-Id": self.session_id,
                   "MCP-Protocol-Version": self.client.protocol_version}
        return {k: v for k, v in headers.items() if v}

    async def send(self, message):
        if "method" not in message or "id" not in message or message["method"] == "initialize":
            return await self._post(message)
        # A request's POST may stream for as long as the tool runs: the caller is not held (it
        # waits on its own future, with its own timeout), and `drop` can end it.
        _background(self._tasks, self._post_request(message), self._streams, message["id"])

    async def _post_request(self, message):
        try:
            await self._post(message)
        except Exception as e:  # noqa: BLE001 — any failure fails its request, never the task
            self.client._fail(message["id"], e if isinstance(e, McpError)
                              else McpError(CONNECTION_CLOSED, f"{type(e).__name__}: {e}"))

    def drop(self, id_):
        """2026-07-28: a request is abandoned by closing its connection."""
        task = self._streams.pop(id_, None)
        return task is not None and task.cancel()

    def _routing(self, message):
        """2026-07-28: a request's routing headers (`_routing`), with the arguments its tool marks."""
        tool = message["params"].get("name") if message["method"] == "tools/call" else None
        marks = self.client._param_headers.get(tool, ()) if type(tool) is str else ()
        return {k: _header_value(_text(v)) for k, v in _routing(message, marks).items()}

    async def _post(self, message, again=True):
        id_ = message["id"] if "method" in message and "id" in message else None
        headers = {**self._headers(), "Content-Type": "application/json"}
        if self.client.modern and id_ is not None:  # 2026-07-28: what it is, so that it is routed unread
            headers.update(self._routing(message))
        sent_with = self.session_id
        response = await self._request("POST", self.url, headers, encode(message))
        if message.get("method") == "initialize":
            # 2025-11-25 transports (the version we ask for): 400, 404 or 405 means "try
            # legacy SSE"; anything else (auth, size, rate limits) is a real answer.
            if response.status in (400, 404, 405):
                response.close()
                raise _Fallback
            self.session_id = response.headers.get("mcp-session-id")
        if response.status == 404 and sent_with and again and not _REINITIALIZING.get():
            # transports: a 404 for our session means it is gone: start over, then resend,
            # once. Several requests may hear it at once; one of them initializes again
            # (a 404 while doing so is an error: waiting on ourselves would never end).
            response.close()
            async with self._reinitializing:
                if self.session_id == sent_with:
                    await self._reinitialize()
            return await self._post(message, again=False)
        if response.status >= 300:     # a redirect not followed too: nothing will answer
            body = await response.body(READ_CHUNK)
            response.close()
            raise _http_error(response.status, body, self.url)
        if response.headers.get("content-type", "").split(";")[0].strip().lower() == "text/event-stream":
            return _background(self._tasks, self._events(response, id_), self._streams, id_)
        try:
            body = await response.body(self.client.max_message)
        except McpError:    # too big: what it answers fails now
            return self.client._too_big(id_)
        response.close()
        data = decode(body) if body.strip() else []
        for item in data if type(data) is list else [data]:
            self.client._received(item)

    async def _reinitialize(self):
        self.session_id = None
        version, self.client.protocol_version = self.client.protocol_version, None
        _logger.info("session expired: initializing again")
        inside = _REINITIALIZING.set(True)      # seen by the tasks it starts, too
        try:
            await self.client._initialize()
        except Exception:
            self.client.protocol_version = version
            raise
        finally:
            _REINITIALIZING.reset(inside)

    async def _events(self, response, request_id, forever=False):
        """Read an SSE response; if it ends before our answer came, resume it with GET and
        Last-Event-ID after the server's `retry` delay, while the request is still awaited.
        `forever` (no `response`): the GET stream, opened here and again whenever the server
        ends it, from the last event seen (2025-11-25 transports: polling)."""
        last, retry, pause = None, 1.0, 0.0
        while response or (response := await self._resume(last, forever)):
            seen = last
            answered, last, retry = await self._read(response, request_id, last, retry)
            response = None
            if answered and not forever or self._closing or \
                    not forever and request_id not in self.client._pending:
                return      # answered, or timed out or cancelled: nobody waits for the rest
            if not forever and (last is None or self.client.modern):
                break       # 2026-07-28 has no resumption: the request is lost
            # a GET stream that ends with nothing new: waited for longer each time
            pause = retry if last != seen else min(max(pause, retry) * 2, 60.0)
            await asyncio.sleep(pause)
        if not forever:     # gone, and cannot be resumed: the caller hears it now, not at its timeout
            self.client._fail(request_id, McpError(CONNECTION_CLOSED, "The response stream ended"))

    async def _read(self, response, request_id, last, retry):
        """One SSE response read to its end: (whether it carried our answer, the last event id,
        the retry delay, within reason: no busy loop)."""
        answered = request_id is None
        async for event in response.events(self.client, "(the SSE stream closed)"):
            last = event.get("id", last)
            if _ASCII_DIGITS.fullmatch(event.get("retry", "")):   # SSE: ASCII digits only ("²" is no retry)
                retry = min(max(int(event["retry"]) / 1000, 0.1), 60.0)
            if event.get("data") and event["event"] == "message":     # not a priming event
                answered |= self.client._received(event["data"]) == request_id
        return answered, last, retry

    async def _resume(self, last, forever):
        """A GET for a stream: from after `last` if given; None if refused. The GET stream starts
        afresh when the server kept not what it missed."""
        headers = {**self._headers("text/event-stream"), **({} if last is None else {"Last-Event-ID": last})}
        with contextlib.suppress(McpError):
            response = await self._request("GET", self.url, headers)
            if forever and last is not None and response.status in (400, 409):
                response.close()
                return await self._resume(None, forever)
            if response.status == 200:
                return response
            response.close()
        return None

    async def initialized(self):
        """Open the GET stream for messages the server starts (405 = none)."""
        if self._get_stream is None or self._get_stream.done():
            self._get_stream = asyncio.ensure_future(self._events(None, None, forever=True))

    async def close(self):
        self._closing = True
        for task in list(self._tasks) + ([self._get_stream] if self._get_stream else []):
            task.cancel()
        if self.session_id:     # tell the server we are done with the session
            try:
                response = await asyncio.wait_for(self._request("DELETE", self.url, self._headers(),
                                                                sign_in=False), 5)
                response.close()
            except Exception as e:  # noqa: BLE001 — the server may be gone: the session is over anyway
                _logger.debug("DELETE of the session failed: %r", e)
            self.session_id = None


class _LegacySse(_Transport):
    """HTTP+SSE (2024-11-05): a GET stream for everything the server says,
    POSTs to the endpoint it names for everything we say."""

    def __init__(self, url, client):
        self.url, self.client = url, client
        self.endpoint = self._reader = self._response = None

    async def start(self):
        response = self._response = await self._request("GET", self.url, {"Accept": "text/event-stream"})
        if response.status != 200:
            response.close()
            raise McpError(CONNECTION_CLOSED, f"HTTP {response.status} from {self.url}")
        found = asyncio.get_running_loop().create_future()
        self._reader = asyncio.ensure_future(self._read(response, found))
        try:
            self.endpoint = await asyncio.wait_for(found, CONNECT_TIMEOUT)
        except asyncio.TimeoutError:  # noqa: UP041 — 3.10's is not yet the builtin TimeoutError
            raise McpError(CONNECTION_CLOSED, f"{self.url} sent no endpoint event") from None

    async def _read(self, response, found):
        closed = "(the SSE stream closed: the session ends with it)"
        try:
            async with contextlib.aclosing(response.events(self.client, closed)) as events:
                async for event in events:
                    if "data" in event and event["event"] == "endpoint" and not found.done():
                        endpoint = urljoin(self.url, event["data"])
                        if urlsplit(endpoint)[:2] != urlsplit(self.url)[:2]:
                            return found.set_exception(McpError(
                                CONNECTION_CLOSED, "the server named an endpoint on another origin"))
                        found.set_result(endpoint)
                    elif "data" in event and event["event"] == "message":
                        self.client._received(event["data"])
        finally:
            if not found.done():
                found.set_exception(McpError(CONNECTION_CLOSED, "the SSE stream ended"))
            self.client._closed("The SSE stream ended")

    async def send(self, message):
        response = await self._request("POST", self.endpoint, {"Content-Type": "application/json"},
                                       encode(message))
        await response.body(READ_CHUNK)
        response.close()
        if response.status >= 300:
            raise McpError(CONNECTION_CLOSED, f"HTTP {response.status} from {self.endpoint}")

    async def close(self):
        if self._reader:
            self._reader.cancel()
        if self._response:
            self._response.close()

##############################################################################
# Extension: a small JSON Schema validator (skip on a first reading)
##############################################################################


_JSON_NAMES: dict[_Any, str] = {**_SIMPLE_TYPES, list: "array", dict: "object"}


def validate(value, schema):
    """First reason `value` does not match `schema`, or None. A subset of JSON Schema 2020-12:
    type, enum, const, properties, required, additionalProperties, items, prefixItems,
    anyOf/oneOf/allOf, $ref to local $defs, min/max (length, items, value), and the schemas
    true and false. Unknown keywords are ignored. A tool keeps its schemas compiled
    (`_checker`); this compiles one for a single use.

    >>> validate({"a": "x"}, {"type": "object", "properties": {"a": {"type": "integer"}}})
    'a: expected integer, got string'
    """
    return _checker(schema)(value, "")


def _checker(schema, root=None, depth=0):
    """`schema` compiled once into a function (value, path) -> the first problem, or None:
    one small check from each maker its keywords name in `_KEYWORDS`, in the schema's order.
    `root` holds the $ref targets compiled so far, by (ref, depth), and under None the schema."""
    if schema is False:
        return _nothing
    if depth > 64 or type(schema) is not dict:
        return _fine
    top = root is None
    if top:
        root = {None: schema}
    makers = dict.fromkeys(_KEYWORDS[key] for key in schema if key in _KEYWORDS)
    check = _all([check for make in makers if (check := make(schema, root, depth))])
    if top and "refs" in root:  # it has $refs: each is checked once per value and place (`_ref`)
        return functools.partial(_with_ref_memo, check)
    return check


def _all(checks):
    """Several checks as one: the first problem any of them finds."""
    if len(checks) < 2:
        return checks[0] if checks else _fine

    def check(value, path):
        for one in checks:
            if (problem := one(value, path)):
                return problem
        return None
    return check


def _fine(value, path):
    return None


def _nothing(value, path):
    return f"{path or 'arguments'}: no value is allowed here"


def _ref(schema, root, depth):
    ref = schema["$ref"]
    if not (type(ref) is str and ref.startswith("#/")):
        return None
    target = root[None]
    for part in ref[2:].split("/"):
        target = target.get(part, {}) if type(target) is dict else {}
    key = ref, depth + 1
    root["refs"] = True

    def check(value, path):
        # What a $ref found for this value at this place is kept for the rest of the check: a
        # schema whose anyOf names one $ref twice, level after level, doubles the work per level.
        memo, seen = _REF_MEMO.get(), (ref, id(value), path)
        if seen in memo:
            found = memo[seen]
            return f"{path or 'arguments'}: $ref {ref} refers to itself without end" \
                if found is _CHECKING else found
        memo[seen] = _CHECKING      # compiled when first met (a schema may refer to itself), once
        compiled = root.get(key) or root.setdefault(key, _checker(target, root, depth + 1))
        memo[seen] = found = compiled(value, path)
        return found
    return check


_REF_MEMO: "contextvars.ContextVar[dict[_Any, _Any]]" = contextvars.ContextVar("mcp_min_refs")
_CHECKING = object()


def _with_ref_memo(check, value, path):
    """A check of a schema with $refs, with a memo of its own (`_ref`)."""
    token = _REF_MEMO.set({})
    try:
        return check(value, path)
    finally:
        _REF_MEMO.reset(token)


def _type(schema, root, depth):
    kinds = schema["type"]
    kinds = [kinds] if type(kinds) is str else [str(k) for k in kinds] if type(kinds) is list else []
    exact = {t for t, kind in _JSON_NAMES.items() if kind in kinds or kind == "integer" and "number" in kinds}
    whole, said = "integer" in kinds, " or ".join(kinds)     # 2.0 is an integer too

    def check(value, path):
        if type(value) in exact or whole and type(value) is float and value.is_integer():
            return None
        return f"{path or 'arguments'}: expected {said}, got {_JSON_NAMES.get(type(value), 'null')}"
    return check if kinds else None


def _enum(schema, root, depth):
    if type(options := schema["enum"]) is list:
        return lambda value, path: None if any(_same(value, e) for e in options) \
            else f"{path or 'arguments'}: must be one of {json.dumps(options)}"
    return None


def _const(schema, root, depth):
    const = schema["const"]
    return lambda value, path: None if _same(value, const) \
        else f"{path or 'arguments'}: must be {json.dumps(const)}"


def _same(a, b):
    """JSON equality: 1 is 1.0 but true is not 1, in objects and arrays too."""
    if type(a) in (dict, list) and type(a) is type(b):
        return len(a) == len(b) and (all(k in b and _same(v, b[k]) for k, v in a.items())
                                     if type(a) is dict else all(map(_same, a, b)))
    return type(a) is type(b) and a == b or type(a) in _NUMBERS and type(b) in _NUMBERS and a == b


def _bounds(schema, root, depth):
    """minLength ... exclusiveMaximum (`_BOUNDS`), each a number, checked in the schema's order."""
    bounds = [(key, bound, *_BOUNDS[key]) for key, bound in schema.items()
              if key in _BOUNDS and type(bound) in _NUMBERS]

    def check(value, path):
        for key, bound, kinds, past in bounds:
            if type(value) in kinds and past(value if kinds is _NUMBERS else len(value), bound):
                return f"{path or 'arguments'}: {key} is {bound}"
        return None
    return check if bounds else None


_NUMBERS = (int, float)
_BOUNDS = {     # keyword: (the JSON types it measures: a string's length, an array's, a number; when past it)
    "minLength": ((str,), lambda n, b: n < b), "maxLength": ((str,), lambda n, b: n > b),
    "minItems": ((list,), lambda n, b: n < b), "maxItems": ((list,), lambda n, b: n > b),
    "minimum": (_NUMBERS, lambda n, b: n < b), "maximum": (_NUMBERS, lambda n, b: n > b),
    "exclusiveMinimum": (_NUMBERS, lambda n, b: n <= b), "exclusiveMaximum": (_NUMBERS, lambda n, b: n >= b),
}


def _members(schema, root, depth):
    """properties, required, additionalProperties (an object's members), or prefixItems and items
    (an array's): each member checked by its own schema, else the rest's (False: none may be there)."""
    def compiled(sub):
        return sub if sub is True or sub is False else _checker(sub, root, depth + 1)
    props, prefix, names = schema.get("properties"), schema.get("prefixItems"), schema.get("required")
    props = {name: compiled(sub) for name, sub in props.items()} if type(props) is dict else {}
    prefix = [compiled(sub) for sub in prefix] if type(prefix) is list else []
    names = [name for name in names if type(name) is str] if type(names) is list else []
    extra, rest = compiled(schema.get("additionalProperties", True)), compiled(schema.get("items", True))

    def check(value, path):
        if type(value) is dict:
            for name in names:
                if name not in value:
                    return f"{path + '.' if path else ''}{name}: required property is missing"
            for name, item in value.items() if props or extra is not True else ():
                sub = props.get(name, extra)
                if sub is False:
                    return f"{path + '.' if path else ''}{name}: unexpected property"
                if sub is not True and (problem := sub(item, f"{path}.{name}" if path else name)):
                    return problem
        elif type(value) is list:
            for i, item in enumerate(value):
                sub = prefix[i] if i < len(prefix) else rest
                if sub is False:
                    return f"{path}[{i}]: unexpected item"
                if sub is not True and (problem := sub(item, f"{path}[{i}]")):
                    return problem
        return None
    return check


def _some_of(key, most):
    """anyOf (`most` inf) or oneOf (1): how many subschemas the value may match; allOf (None): all."""
    def make(schema, root, depth):
        if type(subs := schema[key]) is not list:      # a malformed keyword is ignored, as everywhere
            return None
        checks = [_checker(sub, root, depth + 1) for sub in subs]
        if most is None:        # allOf: the first problem
            return _all(checks)

        def check(value, path):
            passed = sum(one(value, path) is None for one in checks)
            if not passed:
                return f"{path or 'arguments'}: does not match any allowed form"
            if passed > most:
                return f"{path or 'arguments'}: matches more than one allowed form"
            return None
        return check
    return make


# JSON Schema keywords, each with the maker of its check; keywords checked together share one.
_KEYWORDS = {
    "$ref": _ref, "type": _type, "enum": _enum, "const": _const, **dict.fromkeys(_BOUNDS, _bounds),
    **dict.fromkeys(("properties", "required", "additionalProperties", "prefixItems", "items"), _members),
    "allOf": _some_of("allOf", None), "anyOf": _some_of("anyOf", float("inf")), "oneOf": _some_of("oneOf", 1),
}

##############################################################################
# Extension: 2026-07-28 multi round-trip requests (skip on a first reading)
##############################################################################


class _Rounds:
    """A 2026-07-28 request that may ask for input (tools/call, prompts/get, resources/read):
    it asks by answering, input_required, and the client calls again with the answers. Its
    handler runs again each round; what earlier rounds answered and what `once` kept come back
    sealed in requestState (`seal`), the new answers in inputResponses (answers sent with no
    requestState are taken as new ones)."""

    def __init__(self, session, params, method):
        self.session, self.params, self.method = session, params, method
        self.answers, self.kept, self.asks, self.count = {}, {}, {}, 0
        state, self.fresh = params.get("requestState"), params.get("inputResponses", {})
        if type(self.fresh) is not dict or not isinstance(state, (str, type(None))):
            raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object, "
                                           "requestState a string")
        if state is not None:
            self.answers, self.kept = self.unseal(state)

    async def ask(self, capability, method, params, key):
        """The answer to this ask if the client gave it; else it joins this round's asks, which
        end the round (`_InputRequired`). Asks are told apart by `key`, by default their order."""
        self.count += 1
        key = str(key or f"{capability}-{self.count}")
        if key not in self.answers and key in self.fresh:
            if (problem := _answer_problem(method, params, self.fresh[key])):
                raise RequestError(INVALID_PARAMS, f"Invalid params: inputResponses[{key[:100]!r}] "
                                               f"({method}): {problem}")
            self.answers[key] = self.fresh[key]
        if key in self.answers:
            return self.answers[key]
        self.asks[key] = {"method": method, "params": params}
        await asyncio.sleep(0)  # asks made beside this one (asyncio.gather) join the round
        raise _InputRequired

    def result(self):
        """The round's end: what the client is to answer, and what it sends back with them."""
        return {"resultType": "input_required", "inputRequests": self.asks, "requestState": self.seal()}

    def binding(self, data):
        """The seal on a requestState's `data`, binding it to this request (its method, and its
        params less the rounds' own) and this user: made with the server's key, no client can alter it."""
        import hashlib
        import hmac
        request = {k: v for k, v in self.params.items()
                   if k not in ("_meta", "inputResponses", "requestState")}
        try:
            text = json.dumps([self.method, request, self.session.principal], sort_keys=True).encode()
        except RecursionError:      # params that parsed, nested too deep to write out again
            raise McpError(INVALID_PARAMS, "Invalid params: nested too deeply to be bound to a "
                                           "requestState") from None
        key = self.session.server.state_key
        return base64.urlsafe_b64encode(hmac.new(key, text + data, hashlib.sha256).digest())

    def seal(self):
        """A round's requestState: the answers so far and what `once` kept, until STATE_TTL."""
        data = base64.urlsafe_b64encode(encode([int(time.time() + STATE_TTL), self.answers, self.kept]))
        return (data + b"." + self.binding(data)).decode()

    def unseal(self, state):
        import hmac
        data, _, sent = state.encode(errors="replace").partition(b".")
        if not hmac.compare_digest(sent, self.binding(data)):
            raise McpError(INVALID_PARAMS, "Invalid params: requestState is not this server's for "
                                           "this request (altered, or from another server or user)")
        try:    # sealed with our key, yet perhaps not of the shape we seal (another version's)
            expires, answers, kept = decode(base64.urlsafe_b64decode(data))
            if type(expires) not in (int, float) or type(answers) is not dict or type(kept) is not dict:
                raise ValueError
        except (ValueError, TypeError, McpError):
            raise McpError(INVALID_PARAMS, "Invalid params: requestState is malformed") from None
        if time.time() > expires:
            raise McpError(INVALID_PARAMS, "Invalid params: requestState has expired: call again "
                                           "without it to start over")
        return answers, kept


class _InputRequired(BaseException):
    """A 2026-07-28 round ends: the handler asked what the client must answer. A
    BaseException, so that a handler's ``except Exception`` lets it through."""

##############################################################################
# Extension: resumable streams, 2025-03-26 on (skip on a first reading)
##############################################################################


class _Replay:
    """What the resumable streams of a server keep, MAX_REPLAY_BYTES together: past it, the stream
    written least recently loses its oldest events first (a resume from before them gets 400)."""

    def __init__(self):
        self.streams, self.size = {}, 0     # in the order they were last written

    def add(self, stream, event):
        if stream.closed:   # what a closed stream still writes out is never replayed
            return
        if stream.log is None:
            stream.log, stream.replay = deque(), self
        stream.log.append((stream.seq, event))
        stream.logged += len(event)
        self.size += len(event)
        self.streams.pop(stream, None)
        self.streams[stream] = stream
        while stream.logged > REPLAY_BYTES:
            self._drop(stream)
        while self.size > MAX_REPLAY_BYTES:
            self._drop(next(iter(self.streams)))

    def _drop(self, stream):
        size = len(stream.log.popleft()[1])
        stream.logged -= size
        self.size -= size
        if not stream.log:
            del self.streams[stream]

    def forget(self, stream):
        self.size -= stream.logged
        self.streams.pop(stream, None)
        stream.log, stream.logged = None, 0


async def _resume(entry, last):
    """The stream a Last-Event-ID names (2025-03-26 transports: resumability), and what it
    sent after that id; 400 when it is over, or lost some of it, and nothing changes then. A
    stream still open is one its client lost before we noticed: it leaves that connection."""
    number, _, seq = last.partition("-")
    if not (len(last) < 40 and last.isascii() and number.isdigit() and seq.isdigit()):
        raise _HttpError(400, "Malformed Last-Event-ID")
    streams = [entry.standalone, *entry.kept.values(), *entry.posts]
    stream = next((s for s in streams if s and s.number == int(number) > 0 and not s.closed), None)
    if stream is None:
        raise _HttpError(400, f"Last-Event-ID {last}: that stream is over, or was not kept")
    if int(seq) > stream.seq:
        raise _HttpError(400, f"Last-Event-ID {last}: no such event was sent")
    if stream.since(int(seq)) is None:
        raise _HttpError(400, f"Last-Event-ID {last}: later events were not kept (REPLAY_BYTES)")
    stream.part()
    for tick in range(200):
        if not stream.attached:
            break
        if tick == 100 and stream.abort:    # stuck writing to a client that is gone
            stream.abort()
        await asyncio.sleep(0.01)
    else:
        raise _HttpError(409, "That stream is open, and does not let go")
    if (events := stream.since(int(seq))) is None:  # lost while it let go: kept, to be tried again
        raise _HttpError(400, f"Last-Event-ID {last}: later events were not kept (REPLAY_BYTES)")
    return stream, events

##############################################################################
# Extension: the 2026-07-28 routing headers over HTTP (skip on a first reading)
##############################################################################


_MODERN_STATUS = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
                  MISSING_CAPABILITY: 400, UNSUPPORTED_VERSION: 400, METHOD_NOT_FOUND: 404}


def _mismatch(request, body, server):
    """2026-07-28: the routing headers must say what the body says; why not as (code, message)."""
    if type(body) is not dict:
        return INVALID_REQUEST, ("Invalid request: batches are not accepted" if type(body) is list
                                 else "Invalid request")
    params = params if type(params := body.get("params")) is dict else {}
    meta = meta if type(meta := params.get("_meta")) is dict else {}
    if not (version := request.header("mcp-protocol-version")):
        return HEADER_MISMATCH, "Missing MCP-Protocol-Version header"
    if type(meta.get(_VERSION_KEY)) is str and version != meta[_VERSION_KEY]:
        return HEADER_MISMATCH, "MCP-Protocol-Version header does not match _meta"
    name = params.get("name") if body.get("method") == "tools/call" else None
    tool = server.tools.get(name) if type(name) is str else None
    for header, value in _routing(body, tool.param_headers if tool else ()).items():
        sent = request.header(header.lower(), None)
        got = None if sent is None else _header_text(sent)
        if got != _text(value) and not (type(value) is int and got and _INTEGER.fullmatch(got)
                                        and int(got) == value):    # integers compare as numbers
            return HEADER_MISMATCH, f"{header} header does not match the body"
    return None


_INTEGER = re.compile(r"[+-]?[0-9]{1,4000}")    # what int() takes, in ASCII digits only
# 2026-07-28 HTTP: the Mcp-Name header repeats this param of these methods
_NAME_KEY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _header_text(value):
    """A Mcp-* header's value: text, or =?base64?...?= for what a header cannot carry
    (None if neither: raw bytes beyond ASCII, or broken base64)."""
    if not value.isascii():
        return None
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode()
        except ValueError:
            return None
    return value


def _header_value(text):
    """A value as an Mcp-* header carries it: itself if plain printable ASCII with no
    space at either end, else ``=?base64?...?=`` (its UTF-8)."""
    if text.isascii() and text.isprintable() and text == text.strip() and not text.startswith("=?"):
        return text
    try:
        return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="
    except UnicodeEncodeError:  # a lone surrogate: JSON can carry it, UTF-8 and so a header cannot
        raise McpError(INVALID_PARAMS, f"{text[:100]!r} is not Unicode text (a lone surrogate): it "
                                       "cannot go in a 2026-07-28 Mcp-* header") from None


def _header_params(schema, path=()):
    """The (argument path, header name) pairs a tool's inputSchema marks with
    x-mcp-header; None if a mark is invalid: not a token, on what is not a string,
    integer or boolean, or a name used twice (in any case)."""
    found = []
    properties = schema.get("properties") if type(schema) is dict else None
    for key, prop in properties.items() if type(properties) is dict else ():
        if type(prop) is dict and "x-mcp-header" in prop:
            name = prop["x-mcp-header"]
            if type(name) is not str or not _TOKEN.fullmatch(name) or \
                    prop.get("type") not in ("string", "integer", "boolean"):
                return None
            found.append(((*path, key), name))
        if (inner := _header_params(prop, (*path, key))) is None:
            return None
        found += inner
    return found if len({name.lower() for _, name in found}) == len(found) else None


def _routing(message, marks):
    """2026-07-28 HTTP: what a request's routing headers say of it, so that it is routed unread
    (the client sends them, the server checks them): Mcp-Method, Mcp-Name, and an Mcp-Param-*
    for each argument present that its tool marks (`_header_params`), as header -> value."""
    method, params = message.get("method"), message.get("params")
    params = params if type(params) is dict else {}
    found = {"Mcp-Method": method} if "id" in message and type(method) is str else {}
    if type(method) is str and type(name := params.get(_NAME_KEY.get(method))) is str:
        found["Mcp-Name"] = name
    for path, header in marks:
        value = params.get("arguments")
        for key in path:
            value = value.get(key) if type(value) is dict else None
        if value is not None:
            found["Mcp-Param-" + header] = value
    return found


def _text(value):
    """An argument as its Mcp-Param-* header's text says it (before base64)."""
    return value if type(value) is str else json.dumps(value)

##############################################################################
# Extension: tasks (SEP-2663) and skills (SEP-2640), which no SDK has yet (skip on a first reading)
##############################################################################
# Tasks. A tool registered with task= may answer a tools/call with a task instead of its result,
# if the request declared the extension in its clientCapabilities (2026-07-28: each request its
# own): {"resultType": "task", "taskId", "status": "working", ...}. The client polls tasks/get
# until the task is completed (the result inlined), failed (a JSON-RPC error inlined) or
# cancelled (tasks/cancel); it answers what the task asks (input_required) with tasks/update.

_TASKS, _SKILLS = _MODERN + "tasks", _MODERN + "skills"
_TERMINAL = ("completed", "failed", "cancelled")
_TASK_FIELDS = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs",
                "pollIntervalMs", "result", "error", "inputRequests")     # what a client sees of a task


class TaskStore:
    """Where tasks live: in this process (the default: SQLite in memory), or in the SQLite file
    `path`, which every process that opens it shares: behind a balancer any of them answers for
    any task. A record is a dict: the task as clients see it (`_TASK_FIELDS`), plus `owner` (who
    may see it), `client` (whose share of the store it counts against), `runner` (the process
    running it), `expires` (a time.time()) and `answers` (to what it asked). To keep tasks in
    another database, subclass this and give its six methods; each is atomic. They are called
    in a thread of the store's own, never on the event loop: another process may hold a shared
    file's write lock for seconds (SQLite then waits up to TASK_STORE_WAIT, and the call is
    tried again)."""

    shared = True   # another process may change its tasks: `_keep` then looks at them each second

    def __init__(self, path: str = ":memory:") -> None:
        import sqlite3
        self.lock = threading.RLock()   # reentrant: `change` reads with `get`
        self.path, self.shared = path, path != ":memory:"
        self.alive_fd: int | None = None    # this process's liveness lock (`beat`, `alive`)
        self.alive_path = ""
        if self.shared:     # results and answers are in it: the user's alone
            _own_file(path)
        self.db = sqlite3.connect(path, timeout=TASK_STORE_WAIT, isolation_level=None,
                                  check_same_thread=False)
        # Processes that start together set it up together: SQLite may refuse one at once
        # ("database is locked", no busy wait for a change of journal mode), so it tries again.
        for attempt in itertools.count(1):
            try:
                self._set_up()
                break
            except sqlite3.OperationalError:
                if attempt * 0.1 > TASK_STORE_WAIT:
                    raise
                time.sleep(0.1)     # once, at start, before serving: the loop waits for nothing

    def _set_up(self):
        if self.shared:
            self.db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
        # owner: the record's `client`, whose share it counts against; record: its JSON, as a BLOB
        # (SQLite knows a blob's length without reading it: `usage` sums them often)
        self.db.execute("CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, owner TEXT, expires REAL, "
                        "record TEXT)")
        self.db.execute("CREATE INDEX IF NOT EXISTS tasks_owner ON tasks (owner, expires)")
        self.db.execute("CREATE INDEX IF NOT EXISTS tasks_expires ON tasks (expires)")
        self.db.execute("CREATE TABLE IF NOT EXISTS runners (id TEXT PRIMARY KEY, seen REAL)")

    def _rows(self, sql: str, *args: _Any) -> list[_Any]:
        with self.lock:
            return self.db.execute(sql, args).fetchall()

    def add(self, record: _Json) -> None:
        """A new task: every `get`, in every process, finds it once this returns. The expired go."""
        self._rows("DELETE FROM tasks WHERE expires < ?", time.time())
        self._rows("INSERT INTO tasks VALUES (?, ?, ?, ?)", record["taskId"], record["client"],
                   record["expires"], json.dumps(record).encode())

    def get(self, task_id: str) -> _Json | None:
        """The task's record (a copy), or None: no such task, or expired."""
        rows = self._rows("SELECT record FROM tasks WHERE id = ? AND expires >= ?", task_id, time.time())
        return json.loads(rows[0][0]) if rows else None

    def change(self, task_id: str, change: typing.Callable[[_Json], _Json | None]) -> _Json | None:
        """Atomically, the record becomes ``change(record)``, unless that is None: the record as
        it is now (None: no such task)."""
        with self.lock, self.db:
            self.db.execute("BEGIN IMMEDIATE")  # no other process writes in between
            if (record := self.get(task_id)) is None or (new := change(record)) is None:
                return record
            self._rows("UPDATE tasks SET record = ? WHERE id = ?", json.dumps(new).encode(), task_id)
            return new

    def usage(self, client: str | None = None) -> tuple[int, int]:
        """How many unexpired tasks `client` has, or all have (MAX_TASKS), and their bytes
        (MAX_TASK_BYTES), as the store holds them."""
        rows = self._rows("SELECT COUNT(*), TOTAL(LENGTH(record)) FROM tasks WHERE (? IS NULL OR owner = ?) "
                          "AND expires >= ?", client, client, time.time())
        return rows[0][0], int(rows[0][1])

    def beat(self, runner: str) -> None:
        """Process `runner` is alive: it says so each second while it runs tasks, and holds a lock
        on a file of its own from its first task on (`alive`)."""
        if self.shared and self.alive_fd is None:
            self.alive_path = f"{self.path}.{runner}.alive"
            self.alive_fd = _hold_lock(self.alive_path)
        self._rows("INSERT OR REPLACE INTO runners VALUES (?, ?)", runner, time.time())

    def alive(self, runner: str) -> bool:
        """Whether process `runner` is alive: it holds its lock (POSIX: the system lets go of it
        when the process ends, however it ends, and a store held busy by another process changes
        nothing); without one to ask, it said so within TASK_STALE."""
        held = _lock_held(f"{self.path}.{runner}.alive") if self.shared else None
        if held is not None:
            return held
        rows = self._rows("SELECT seen FROM runners WHERE id = ?", runner)
        return bool(rows) and rows[0][0] >= time.time() - TASK_STALE


def _close_store(store):
    """The store is done with (the server stops): its database closes, and this process's lock
    file goes (a process that ends without this leaves it, for `alive` to find unlocked)."""
    if store.__dict__.get("executor") is not None:
        store.executor.shutdown(wait=True)
    with store.lock:
        store.db.close()
    if store.alive_fd is not None:
        with contextlib.suppress(OSError):
            os.unlink(store.alive_path)
        os.close(store.alive_fd)
        store.alive_fd = None


def _own_file(path):
    """Make `path` (0600), or take an existing one only if it is its user's alone: another user's
    is refused; one (or its -wal or -shm) that others may read or write is made 0600, and said."""
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    for name in (path, path + "-wal", path + "-shm") if os.name == "posix" else ():
        try:
            found = os.stat(name)
        except FileNotFoundError:
            continue
        if found.st_uid != os.getuid():
            raise ValueError(f"{name} belongs to another user: a task store holds every task's result")
        if found.st_mode & 0o077:
            os.chmod(name, 0o600)
            _logger.warning("%s was open to other users: made 0600 (it holds every task's result)", name)


def _hold_lock(path):
    """A lock on `path`, held for this process's life (the descriptor stays open); None without flock."""
    try:
        import fcntl
    except ImportError:     # Windows: the heartbeat alone tells
        return None
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _lock_held(path):
    """Whether a live process holds the lock on `path`; None if there is no lock to ask."""
    try:
        import fcntl
        fd = os.open(path, os.O_RDONLY)
    except (ImportError, FileNotFoundError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):  # its process is gone: so is the file
        os.unlink(path)
    return False


async def _stored(store, method, *args):
    """``store.method(*args)`` in the store's own thread: the event loop never waits on SQLite. A
    store another process holds busy past TASK_STORE_WAIT is tried twice more, then -32603."""
    import sqlite3
    if store.__dict__.get("executor") is None:
        from concurrent.futures import ThreadPoolExecutor
        store.executor = ThreadPoolExecutor(1, "mcp-task-store")
    call = functools.partial(getattr(store, method), *args)
    for attempt in range(3):
        try:
            return await asyncio.get_running_loop().run_in_executor(store.executor, call)
        except sqlite3.OperationalError as e:
            _logger.warning("the task store is busy (%s): trying again", e)
    raise McpError(INTERNAL_ERROR, "The task store is busy: try again later")


def _iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _tasks_on(ctx, needed_by=None):
    """Whether this request declared the tasks extension; if not, and `needed_by` (a text) needs
    it, a RequestError (before any lookup: a client that did not declare it learns nothing)."""
    extensions = ctx.client_capabilities.get("extensions") if ctx.version else None
    if type(extensions) is dict and _TASKS in extensions:
        return True
    if needed_by:
        raise RequestError(MISSING_CAPABILITY, f"{needed_by} needs the client's {_TASKS} extension",
                           {"requiredCapabilities": {"extensions": {_TASKS: {}}}})
    return False


def _task_owner(session):
    """Who may see a task: over HTTP its user (each 2026-07-28 POST is a session of its own;
    with no auth, whoever holds its id); elsewhere the session alone."""
    import hashlib
    if session.protocol_version not in MODERN_VERSIONS:
        session.task_tag = session.task_tag or os.urandom(16).hex()
    # hashed: without auth the principal is the Authorization header, which the store must not keep
    return hashlib.sha256(f"{session.principal}|{session.task_tag}".encode()).hexdigest()


def _task_client(session):
    """Whose share of the store (MAX_TASKS, MAX_TASK_BYTES) a task counts against: its OAuth user,
    else the address it came from, else its session. Never a header nobody checked, which a
    client could vary to be as many owners as it likes."""
    import hashlib
    _task_owner(session)    # its session's tag, if it has no address
    return hashlib.sha256(f"client|{session.owner or session.task_tag}".encode()).hexdigest()


async def _room_for_task(store, client):
    """Whether `client`, and the store, may take one more task (else a call stays a plain one)."""
    tasks, size = await _stored(store, "usage", client)
    all_tasks, all_size = await _stored(store, "usage")
    return tasks < MAX_TASKS and size < MAX_TASK_BYTES // 4 and all_tasks < 16 * MAX_TASKS \
        and all_size < MAX_TASK_BYTES


async def _tasked(session, tool, params, ctx):
    """tools/call of a tool with task=: if it has not ended within TASK_AFTER s, or it calls
    `ctx.detach()`, the client gets a task at once, and the work goes on without the request."""
    if not _tasks_on(ctx, f"Tool '{tool.name}'" if tool.task == "required" else None):
        return await _call_tool(session, params, ctx, True)
    server, owner, client = session.server, _task_owner(session), _task_client(session)
    store = server.task_store = server.task_store or TaskStore()
    made = session.loop.create_future()     # the answer, once the call is a task
    detaching = asyncio.Lock()

    async def detach():     # by the work (ctx.detach) or after TASK_AFTER s: either way `work` is set then
        async with detaching:
            if not made.done() and await _room_for_task(store, client):
                made.set_result(await _new_task(server, owner, client, ctx, work))
        return made.done()
    ctx._detach = detach
    work = asyncio.ensure_future(_call_tool(session, params, ctx, True))
    # ctx and detach refer to each other: once the work is over, that cycle must not keep its result
    work.add_done_callback(lambda _: setattr(ctx, "_detach", None))
    try:
        await asyncio.wait((work, made), timeout=TASK_AFTER, return_when=asyncio.FIRST_COMPLETED)
        if made.done() or not work.done() and await detach():
            return made.result()
        return await work   # a quick call stays a plain one (an input_required round too), all past MAX_TASKS
    except asyncio.CancelledError:
        work.cancel()
        raise


async def _new_task(server, owner, client, ctx, work):
    """The call becomes a task: its record, from now on followed by `_finish` and `_keep`."""
    now = time.time()
    record = {"taskId": os.urandom(16).hex(), "status": "working", "createdAt": _iso(now),
              "lastUpdatedAt": _iso(now), "ttlMs": int(TASK_TTL * 1000),
              "pollIntervalMs": int(TASK_POLL * 1000), "owner": owner, "client": client,
              "runner": server.runner, "expires": now + TASK_TTL, "answers": {}}
    await _stored(server.task_store, "beat", server.runner)    # alive before any task of its is seen
    await _stored(server.task_store, "add", record)
    ctx.task_id = task_id = record["taskId"]
    ctx.progress_token = None   # nobody hears a task's call: its progress goes nowhere (and logs)
    server.works[task_id] = work
    work.add_done_callback(lambda work: _background(_WRITES, _finish(server, task_id, work)))
    # When its record expires, so does its work (the timer holds no reference to it).
    ctx.session.loop.call_later(TASK_TTL, lambda: task_id in server.works and server.works[task_id].cancel())
    if (keeper := _KEEPING.get(server)) is None or keeper.get_loop() is not ctx.session.loop:
        _background(_KEEPERS, _keep(server), _KEEPING, server)  # a keeper of a loop that ended is no more
    return {"resultType": "task", **_task_view(record)}


_KEEPERS: "set[asyncio.Future[_Any]]" = set()
_KEEPING: "dict[Server, asyncio.Future[_Any]]" = {}    # server -> its `_keep`, while it runs
_WRITES: "set[asyncio.Future[_Any]]" = set()    # tasks' last words (`_finish`), awaited at shutdown
_WAKE: "dict[str, asyncio.Future[None]]" = {}    # task id -> what its asks wait on (a change)


async def _keep(server):
    """While this process runs tasks, each second: it tells the store it is alive (to another
    process its tasks are then not orphans), and, if the store is shared, stops the work of a
    task that another process cancelled. A busy store is tried again the next second."""
    while server.works:
        try:
            await _stored(server.task_store, "beat", server.runner)
            for task_id, work in list(server.works.items()) if server.task_store.shared else ():
                record = await _stored(server.task_store, "get", task_id)
                if record is None or record["status"] in _TERMINAL:
                    work.cancel()
        except Exception as e:  # noqa: BLE001 — the store is busy or broken: the next second tries again
            _logger.warning("the task store: %s", e)
        await asyncio.sleep(_SWEEP_EVERY)


def _task_view(record):
    return {k: record[k] for k in _TASK_FIELDS if k in record}


def _failed(error):
    """How a task ends with McpError `error`: its JSON-RPC error inlined."""
    return {"status": "failed", "statusMessage": error.message,
            "error": _error(None, error.code, error.message, error.data)["error"]}


async def _finish(server, task_id, work):
    """A task's work is over: so is the task (one that ended first, cancelled, stays so). Its
    result is kept if it fits: MAX_TASK_RESULT bytes, and the client's and the store's share of
    MAX_TASK_BYTES; else the task fails, naming the bound."""
    server.works.pop(task_id, None)
    store = server.task_store
    # Cancelled, and not by tasks/cancel (which ends the task first): the server is stopping.
    error = McpError(INTERNAL_ERROR, "The server stopped before the task ended") if work.cancelled() \
        else work.exception()   # a RequestError (a tool's error is a result), or a bug
    if error is not None:
        outcome = _failed(error if isinstance(error, McpError) else McpError(INTERNAL_ERROR, "Internal error"))
        size = 0
    else:
        outcome = {"status": "completed", "result": work.result()}
        size = len(_encode_safely(outcome) or b"")

    def settled(record):    # in the store's thread, within the change: results that end at once
        if error is not None:   # are each weighed against what the others left
            return outcome
        _, mine = store.usage(record["client"])
        _, everyone = store.usage()
        bound = "MAX_TASK_RESULT" if size > MAX_TASK_RESULT else "MAX_TASK_BYTES" if \
            mine + size > MAX_TASK_BYTES // 4 or everyone + size > MAX_TASK_BYTES else None
        if bound is None:
            return outcome
        return _failed(McpError(INTERNAL_ERROR, f"The task's result ({size} bytes) is more than the "
                                                f"server keeps ({bound})"))
    await _change_task(server, task_id, settled)


async def _change_task(server, task_id, change):
    """Every change this process makes to a task passes here: ``change(record)`` gives the
    fields that change (none: no change; a task that has ended never changes). The asks of the
    task look again, and the subscriptions/listen streams following it hear of it (another
    process's changes are seen by polling only)."""
    changed = []

    def stamped(record):
        if record["status"] in _TERMINAL or not (fields := change(record)):
            return None
        new = {**record, **fields, "lastUpdatedAt": _iso(time.time())}
        if new["status"] in _TERMINAL or not new.get("inputRequests"):  # only while some are open
            new.pop("inputRequests", None)
        changed.append(new)
        return new
    record = await _stored(server.task_store, "change", task_id, stamped)
    if (wake := _WAKE.pop(task_id, None)) and not wake.done():
        wake.set_result(None)
    for session in list(server.sessions) if changed else ():
        session.publish("notifications/tasks", _task_view(changed[0]),
                        lambda wanted: task_id in wanted.get("taskIds", ()))
    return record


async def _task_input(ctx, capability, method, params, key):
    """What a task asks (`Context._ask`) joins its inputRequests, and waits for the client's
    tasks/update, which may reach another process sharing the store: that one is heard within
    a second. An ask answered once has its answer: it is never asked twice."""
    server, task_id = ctx.session.server, ctx.task_id
    ctx._asked += 1
    key = str(key or f"{capability}-{ctx._asked}")
    await _change_task(server, task_id, lambda r: None if key in r["answers"] else {
        "status": "input_required",
        "inputRequests": {**r.get("inputRequests", {}), key: {"method": method, "params": params}}})
    while (record := await _stored(server.task_store, "get", task_id)) and record["status"] not in _TERMINAL:
        if key in record["answers"]:
            return record["answers"][key]
        wake = _WAKE.get(task_id) or _WAKE.setdefault(task_id, ctx.session.loop.create_future())
        await asyncio.wait((wake,), timeout=_SWEEP_EVERY)
    raise asyncio.CancelledError    # it ended (cancelled, expired): its work stops


async def _task_record(session, task_id):
    """The caller's task, or None (another's is as unknown as none). A task whose process is
    gone (`TaskStore.alive`) has died with it: it reads failed."""
    server, store = session.server, session.server.task_store
    record = await _stored(store, "get", task_id) if store and len(task_id) <= 64 else None
    if record is None or record["owner"] != _task_owner(session):
        return None
    if record["status"] not in _TERMINAL and record["runner"] != server.runner and \
            not await _stored(store, "alive", record["runner"]):
        stopped = _failed(McpError(INTERNAL_ERROR, "The server process running this task stopped"))
        record = await _change_task(server, task_id, lambda record: stopped)
    return record


async def _task(session, params, ctx):
    _tasks_on(ctx, "This request")
    if (record := await _task_record(session, _name(params, "taskId"))) is None:
        raise McpError(INVALID_PARAMS, "Invalid params: no such task (unknown, expired, or another's)")
    return record


async def _tasks_get(session, params, ctx):
    return _task_view(await _task(session, params, ctx))


async def _tasks_update(session, params, ctx):
    """Answers to what a task asked: each answer is checked first (none is taken if one is
    malformed); keys it does not wait for are ignored."""
    record, answers = await _task(session, params, ctx), params.get("inputResponses")
    if type(answers) is not dict:
        raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
    for key, ask in record.get("inputRequests", {}).items():
        if key in answers and (problem := _answer_problem(ask["method"], ask["params"], answers[key])):
            raise McpError(INVALID_PARAMS, f"Invalid params: inputResponses[{key[:100]!r}] "
                                           f"({ask['method']}): {problem}")

    def take(r):
        got = {k: answers[k] for k in r.get("inputRequests", {}) if k in answers}
        left = {k: v for k, v in r.get("inputRequests", {}).items() if k not in got}
        if len(encode(kept := {**r["answers"], **got})) > MAX_TASK_ANSWERS:
            raise McpError(INVALID_PARAMS, "Invalid params: the answers are too big (MAX_TASK_ANSWERS)")
        return got and {"answers": kept, "inputRequests": left,
                        "status": "input_required" if left else "working"}
    await _change_task(session.server, record["taskId"], take)
    return {}


async def _tasks_cancel(session, params, ctx):
    """The task ends cancelled (one that has ended stays as it is), and its work here is
    stopped (elsewhere, by its process's `_keep`, within a second)."""
    task_id = (await _task(session, params, ctx))["taskId"]
    await _change_task(session.server, task_id, lambda record: {"status": "cancelled"})
    if (work := session.server.works.get(task_id)):
        work.cancel()
    return {}

# Skills. A skill is a folder whose SKILL.md opens with YAML front matter (name, description),
# served as resources skill://<folder>/<file>; skills/list gives each with its front matter and
# the size and sha256 of every file, so that a client can check what it reads.

_SKILL_NAME = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")


def _add_skills(server, root):
    """`Server.skills`: each folder under `root` with a SKILL.md we can read is a skill, and the
    files of the skills are resources."""
    if not os.path.isdir(root):
        raise ValueError(f"{root}: not a folder of skills")
    files, folders = _skill_files(os.path.realpath(root))
    entries = {uri: entry for uri in files if uri.endswith("/SKILL.md") and uri.count("/") > 2
               and (entry := _skill_entry(uri, files))}
    for entry in server.skill_entries.values():     # the last call's skills are what is served
        for listed in entry["resources"]:
            server.resources.pop(listed["uri"], None)
    served = tuple(uri[:-len("SKILL.md")] for uri in entries)
    for uri, (real, mime, size, listed) in files.items():
        if uri.startswith(served):
            front = entries[uri]["frontmatter"] if uri in entries else {"name": uri.rpartition("/")[2]}
            server.resources[uri] = Resource(lambda real=real, listed=listed: _text_or_bytes(
                _file_bytes(real, listed)), uri, front["name"], front.get("description"), mime, size=size)
    server.skill_entries = entries
    server.skill_dirs = {uri: inside for uri, inside in folders.items() if (uri + "/").startswith(served)}
    server._changed("resources")


def _skill_files(root):
    """The regular files under `root` (none hidden, none a link takes out of it, MAX_SKILL_DEPTH
    folders deep at most), as URI -> (real path, mimeType, size, (device, inode)), and its
    folders, as URI -> what is in each."""
    import mimetypes
    import stat
    files, folders = {}, {}
    for here, subdirs, names in os.walk(root):
        at = os.path.relpath(here, root).replace(os.sep, "/")
        prefix = "skill://" + ("" if at == "." else at + "/")
        subdirs[:] = sorted(d for d in subdirs if _plain(d) and not os.path.islink(os.path.join(here, d)))
        if subdirs and prefix.count("/") - 2 >= MAX_SKILL_DEPTH:    # os.walk recurses: no deeper
            _logger.warning("skills: %s is %d folders deep: what is below it is not served "
                            "(MAX_SKILL_DEPTH)", here, MAX_SKILL_DEPTH)
            subdirs[:] = []
        inside = folders[prefix[:-1]] = [{"uri": prefix + d, "name": d, "mimeType": "inode/directory"}
                                         for d in subdirs]
        for name in sorted(filter(_plain, names)):
            real = os.path.realpath(os.path.join(here, name))   # a link, to a plain file of the folder
            parts = os.path.relpath(real, root).split(os.sep)
            found = os.stat(real) if real.startswith(root + os.sep) and all(map(_plain, parts)) else None
            if found and stat.S_ISREG(found.st_mode):
                mime = "text/markdown" if name.endswith(".md") else mimetypes.guess_type(name)[0]
                files[prefix + name] = (real, mime or "application/octet-stream", found.st_size,
                                        (found.st_dev, found.st_ino))
                inside.append({"uri": prefix + name, "name": name, "mimeType": files[prefix + name][1]})
    return files, folders


def _skill_entry(uri, files):
    """The skills/list entry of the skill whose SKILL.md is at `uri`; None (with a warning) if
    it cannot be served."""
    folder = uri[:-len("/SKILL.md")]
    mine, name = [u for u in files if u.startswith(folder + "/")], folder.rpartition("/")[2]
    big = len(mine) > MAX_SKILL_FILES or sum(files[u][2] for u in mine) > MAX_SKILL_BYTES
    # not UTF-8: no client could load it
    text = None if big else _text_or_bytes(_file_bytes(files[uri][0], files[uri][3]))
    front = _front_matter(text) if isinstance(text, str) else None
    problem = "too big (MAX_SKILL_FILES, MAX_SKILL_BYTES)" if big else \
        "it is not UTF-8 text opening with key: value YAML" if front is None else \
        f"its front matter's name is not {name!r}, or not a valid name" if front.get("name") != name \
        or not _SKILL_NAME.fullmatch(name) else "no description" if type(front.get("description")) \
        is not str else None
    if problem:
        _logger.warning("skill %s is not served: %s", folder, problem)
        return None
    return {"uri": uri, "frontmatter": front,
            "resources": [{"uri": u, **_fingerprint(_file_bytes(files[u][0], files[u][3]))} for u in mine]}


def _plain(name):
    """A file or folder name a skill may have: not hidden (.env), nothing a URI could not carry."""
    return name[:1] != "." and name.isprintable()


def _file_bytes(path, listed):
    """A skill file as it is now, if it is still the one listed (its device and inode: not
    through a folder or file put in its place since, a link or a hard link), a regular file (a
    FIFO would hang the read), and within MAX_SKILL_BYTES."""
    import stat
    with open(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)),
              "rb") as f:
        found = os.fstat(f.fileno())
        if not stat.S_ISREG(found.st_mode) or (found.st_dev, found.st_ino) != listed:
            raise McpError(INTERNAL_ERROR, "A skill file was replaced since it was listed")
        data = f.read(MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise McpError(INTERNAL_ERROR, "A skill file grew past MAX_SKILL_BYTES since it was listed")
    return data


def _text_or_bytes(data):
    """A skill file's content: text if it is UTF-8, else bytes (a blob)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _fingerprint(data):
    """A skill file's size and sha256, as skills/list gives them and the client checks them."""
    import hashlib
    return {"digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


async def _skills_list(session, params, ctx):
    return _page(list(session.server.skill_entries.values()), params, "skills")


async def _skills_get(session, params, ctx):
    if (entry := session.server.skill_entries.get(_name(params, "uri"))) is None:
        raise McpError(INVALID_PARAMS, "Invalid params: no skill has that SKILL.md URI (see skills/list)")
    return {"skill": entry}


async def _read_directory(session, params, ctx):
    if (inside := session.server.skill_dirs.get(_name(params, "uri"))) is None:
        raise McpError(INVALID_PARAMS, "Invalid params: not a folder of the skills served")
    return _page(inside, params, "resources")


_FRONT = re.compile(r"\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*\r?$", re.DOTALL | re.MULTILINE)
_YAML_LINE = re.compile(r"( *)([A-Za-z0-9_][\w./-]*):((?: .*)?)")     # indent, key, value
_YAML_QUOTED = re.compile(r"""('(?:[^']|'')*'|"(?:[^"\\]|\\.)*")(?:[ \t]+#.*)?[ \t]*""")
_YAML_WORDS = {"": None, "~": None, "null": None, "Null": None, "NULL": None, "true": True, "True": True,
               "TRUE": True, "false": False, "False": False, "FALSE": False}


def _front_matter(text):
    """A SKILL.md's front matter as JSON, as YAML 1.2 (core schema) reads it, for what skills
    use: ``key: value`` lines, and under a key one level of them (metadata). None for other YAML
    (lists, block scalars, anchors ...): rather than guess, we do not read it."""
    if not (found := _FRONT.match(text)) or _CONTROL.search(found.group(1)):
        return None
    result: _Json = {}
    parent: str | None = None   # the key the indented lines are under
    indent = None               # and their indent
    for line in found.group(1).split("\n"):
        line = line.removesuffix("\r")     # CRLF; a bare CR is no YAML we read
        if "\r" in line:
            return None
        # YAML's white space is space and tab alone: Python's strip() would take more (NBSP ...)
        if not (line := line.rstrip(" \t")) or line.lstrip(" ")[0] == "#":
            continue
        if not (match := _YAML_LINE.fullmatch(line)) or type(_yaml_scalar(match[2])) is not str:
            return None     # a key YAML would read as a number, a bool or null
        depth, key, value = len(match[1]), match[2], match[3].strip(" \t")
        if depth and (parent is None or indent not in (None, depth) or not value):
            return None
        if depth:
            indent = depth
            target = result[str(parent)] = result[str(parent)] or {}
        else:
            target, parent, indent = result, None if value else key, None
        if key in target or (scalar := _yaml_scalar(value)) is _NOT_YAML:
            return None
        target[key] = scalar
    return result


_NOT_YAML = object()
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")     # not in YAML text (tab and line ends are)


def _yaml_scalar(text):
    """A plain or quoted scalar as YAML 1.2's core schema types it; _NOT_YAML for the rest."""
    if (quoted := _YAML_QUOTED.fullmatch(text)):
        text = quoted.group(1)
        try:
            return text[1:-1].replace("''", "'") if text[0] == "'" else json.loads(text)
        except ValueError:      # an escape YAML has and JSON not
            return _NOT_YAML
    text = re.sub(r"(?:^|[ \t])#.*", "", text).strip(" \t")   # a comment
    if text[:1] and text[0] in "[]{}&*!|>%@`'\",?" or text[:2] in ("- ", "-") or ": " in text \
            or text.endswith(":"):
        return _NOT_YAML
    if text in _YAML_WORDS:
        return _YAML_WORDS[text]
    if re.fullmatch(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", text):     # past 15 digits: not exact in JSON
        return _NOT_YAML if len(text) > 15 else int(text[2:], 8 if text[1] == "o" else 16) \
            if text[:2] in ("0o", "0x") else int(text)
    if re.fullmatch(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?", text):
        return number if math.isfinite(number := float(text)) else _NOT_YAML
    return _NOT_YAML if re.fullmatch(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", text) else text


_METHODS.update({"tasks/get": (_tasks_get, "task_tools"), "tasks/update": (_tasks_update, "task_tools"),
                 "tasks/cancel": (_tasks_cancel, "task_tools"), "skills/get": (_skills_get, "skill_entries"),
                 "skills/list": (_skills_list, "skill_entries"),
                 "resources/directory/read": (_read_directory, "skill_entries")})
_MODERN_ONLY |= {"tasks/get", "tasks/update", "tasks/cancel"}
_CACHEABLE |= {_skills_list, _skills_get}
_NAME_KEY.update(dict.fromkeys(("tasks/get", "tasks/update", "tasks/cancel"), "taskId"))
_LISTS_OF["skills/list"] = "skills"


class TaskHandle:
    """A tools/call the server may run as a task (`Client.call_tool` with ``task=True``): `id`
    (None if it answered at once: `last` is then its result), `last` (the task as last seen),
    and coroutines `status()` (tasks/get), `result(timeout)` (polls until it ends: the
    CallToolResult; McpError if it failed or was cancelled) and `cancel()` (tasks/cancel)."""

    def __init__(self, client: "Client", answer: _Json,
                 on_status: typing.Callable[[_Json], object] | None = None) -> None:
        self.client, self.last, self.on_status = client, answer, on_status
        if type(answer) is not dict:
            raise McpError(INTERNAL_ERROR, "The server's answer to tools/call is not an object")
        self.id: str | None = answer.get("taskId") if answer.get("resultType") == "task" else None
        if answer.get("resultType") == "task" and type(self.id) is not str:
            raise McpError(INTERNAL_ERROR, "The server's task has no taskId")
        if self.id and on_status:
            on_status(answer)

    async def status(self) -> _Json:
        if self.id:
            last = await self.client.request("tasks/get", {"taskId": self.id})
            if type(last) is not dict or last.get("taskId") != self.id:
                raise McpError(INTERNAL_ERROR, f"The server's tasks/get is not of task {self.id}")
            if self.on_status and last.get("status") != self.last.get("status"):
                self.on_status(last)
            self.last = last
        return self.last

    async def cancel(self) -> None:
        if self.id and self.last.get("status") not in _TERMINAL:
            await self.client.request("tasks/cancel", {"taskId": self.id})

    async def result(self, timeout: float | None = None) -> CallToolResult:
        """Polls (as often as the server asks, less often while nothing changes) until the task
        ends, within `timeout` s (else its ttlMs); what it asks is answered by the client's
        handlers. If this fails or is cancelled, so is the task."""
        loop, ttl = asyncio.get_running_loop(), _millis(self.last.get("ttlMs"), math.inf)
        end = loop.time() + (timeout if timeout is not None else ttl)
        wait, answered = 0.0, set[str]()
        try:
            while self.id and (status := self.last.get("status")) not in _TERMINAL:
                if status != "input_required" or not await self._answer(answered):
                    wait = max(_millis(self.last.get("pollIntervalMs"), 0.05), min(wait * 1.5, 5.0))
                    await asyncio.sleep(max(0.0, min(wait, end - loop.time())))
                if (now := (await self.status()).get("status")) != status:
                    wait = 0.0
                if now not in _TERMINAL and loop.time() >= end:
                    raise McpError(REQUEST_TIMEOUT, f"Task {self.id} had not ended within the call's time")
        except BaseException:
            _background(self.client._tasks, self._cancel_quietly())     # if it has not ended
            raise
        if not self.id:
            return typing.cast(CallToolResult, self.last)
        if self.last["status"] == "completed" and type(self.last.get("result")) is dict:
            return self.last["result"]
        error = error if type(error := self.last.get("error")) is dict else {}
        code = error.get("code") if type(error.get("code")) is int else INTERNAL_ERROR
        raise McpError(code, str(error.get("message") or f"Task {self.id} ended {self.last['status']}"),
                       error.get("data"))

    async def _answer(self, answered):
        """One tasks/update with the answers to what the task asks that was not answered yet."""
        asks = asks if type(asks := self.last.get("inputRequests")) is dict else {}
        if len(answered | set(asks)) > MAX_ROUNDS * 10:     # a server asking on and on
            raise McpError(INTERNAL_ERROR, f"Task {self.id} asked over {MAX_ROUNDS * 10} questions")
        if not (new := await self.client._answers(asks, answered)):
            return False
        await self.client.request("tasks/update", {"taskId": self.id, "inputResponses": new})
        answered.update(new)
        return True

    async def _cancel_quietly(self):
        with contextlib.suppress(McpError):     # the connection may be gone: the task then expires
            await self.cancel()

def _millis(value, otherwise):
    """A server's ms (pollIntervalMs, ttlMs) as seconds, within 50 ms and a day; else `otherwise`."""
    return min(max(value, 50), 86_400_000) / 1000 if type(value) is int else otherwise


##############################################################################
# Extension: authorization, the resource server (OAuth 2.1; PROTOCOL.md 8; skip on a first reading)
##############################################################################


INTROSPECTION_TTL = 60.0    # seconds an introspection answer is reused: a revoked token works that long
INTROSPECTION_CACHE = 1000  # answers kept at most, and refusals: past it the expired go, else the oldest
_WELL_KNOWN = "/.well-known/oauth-protected-resource"
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


class AuthInfo(typing.NamedTuple):
    """What a verified access token says, as a handler sees it: ``ctx.auth`` (None without auth)."""
    subject: str
    scopes: frozenset
    client_id: str | None
    claims: dict


def _refused(text):
    return McpError(CONNECTION_CLOSED, f"authorization: {text}")


def _secure(url, what, error=_refused):
    """`url` if https, or plain http to this machine only (OAuth 2.1 1.5): codes and tokens cross it."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if not (parts and parts.hostname and (parts.scheme == "https" or parts.scheme == "http"
                                          and _is_loopback(parts.hostname))):
        raise error(f"refusing the {what} {str(url)[:200]!r}: https only (plain http on loopback)")
    return url


async def _fetch_json(url, form=None, headers=(), as_json=False):
    """GET, or POST a form (or JSON), to an OAuth endpoint, within REPLY_TIMEOUT: (status, JSON
    object or {}). A client signing in traces it (`_SIGN_IN_TRACE`), tokens, codes and secrets
    masked: a learner sees the discovery between the 401 and the request sent again."""
    headers = {"Accept": "application/json", **dict(headers)}
    method = "GET" if form is None else "POST"
    if form is not None:
        headers["Content-Type"] = "application/json" if as_json else "application/x-www-form-urlencoded"
    body = b"" if form is None else encode(form) if as_json else urlencode(form).encode()
    trace = _SIGN_IN_TRACE.get()
    if trace:
        trace = trace.on()
        trace.http("out", f"{method} {url}", headers, encode(_masked(form)) if form else b"")
    try:    # secrets never follow a redirect
        response = await asyncio.wait_for(_http(url, method, headers, body, hops=0), REPLY_TIMEOUT)
        data = await asyncio.wait_for(response.body(READ_CHUNK * 4), REPLY_TIMEOUT)
        response.close()
    except (OSError, asyncio.TimeoutError) as e:  # noqa: UP041 — 3.10's is not yet the builtin TimeoutError
        raise _refused(f"cannot reach {url}: {e!r}") from None
    parsed = None
    with contextlib.suppress(ValueError, RecursionError):
        parsed = json.loads(data)
    if trace:
        trace.http("in", str(response.status), response.headers,
                   encode(_masked(parsed)) if type(parsed) is dict else data)
    return response.status, parsed if type(parsed) is dict else {}


# What an OAuth exchange's trace never shows (RFC 6749, 7591, 7662: tokens, codes, secrets)
_SECRET_FIELDS = frozenset(("access_token", "refresh_token", "id_token", "code", "code_verifier",
                            "client_secret", "token", "registration_access_token", "assertion"))
_SIGN_IN_TRACE: "contextvars.ContextVar[_Trace | None]" = contextvars.ContextVar("mcp_min_sign_in",
                                                                                 default=None)


def _masked(fields):
    return {k: "***" if k in _SECRET_FIELDS and v else v for k, v in fields.items()}


def _basic(client_id, secret):
    """RFC 6749 2.3.1: HTTP Basic, each half form-encoded first."""
    pair = f"{quote_plus(client_id)}:{quote_plus(secret or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


async def _server_metadata(issuer):
    """RFC 8414 §3.1, then OpenID Connect discovery, in the spec's order (2025-11-25
    "Authorization Server Metadata Discovery"); the issuer must be the one asked for."""
    parts = urlsplit(_secure(issuer, "authorization server"))
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    for where in [f"{origin}/.well-known/oauth-authorization-server{path}",
                  f"{origin}/.well-known/openid-configuration{path}"] \
            + [f"{origin}{path}/.well-known/openid-configuration"] * bool(path):
        status, metadata = await _fetch_json(where)
        if status == 200 and metadata:
            break
    else:
        raise _refused(f"no authorization server metadata for {issuer}")
    if metadata.get("issuer") != issuer:    # RFC 8414 §3.3: else its endpoints could be anyone's
        raise _refused(f"the metadata at {where} names issuer {str(metadata.get('issuer'))[:200]!r}, "
                       f"not {issuer}")
    for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        if key in metadata or key == "token_endpoint":
            _secure(metadata.get(key), key.replace("_", " "))
    return metadata


class Introspection:
    """A verifier asking the authorization server `issuer` whether a token is active (RFC 7662)
    at the introspection_endpoint of its metadata; as `client_id` (HTTP Basic) if it wants. The
    answers are kept a while (INTROSPECTION_TTL), refusals apart from the rest so that a flood of
    bad tokens cannot push a user's good one out; requests that ask of one token share one look-up."""

    def __init__(self, issuer, client_id=None, client_secret=None):
        self.issuer = _secure(issuer, "authorization server", ValueError)
        self.endpoint, self.good, self.bad, self.asking = None, {}, {}, {}
        self.basic = {"Authorization": _basic(client_id, client_secret)} if client_id else {}

    async def __call__(self, token):
        import hashlib
        key, now = hashlib.sha256(token.encode()).digest(), _now()    # the caches hold no token
        if (hit := self.good.get(key) or self.bad.get(key)) and hit[0] > now:
            return hit[1]
        if key not in self.asking:
            self.asking[key] = asyncio.ensure_future(self._ask(token, key))
            self.asking[key].add_done_callback(lambda _: self.asking.pop(key, None))
        return await asyncio.shield(self.asking[key])

    async def _ask(self, token, key):
        if not self.endpoint:
            endpoint = (await _server_metadata(self.issuer)).get("introspection_endpoint")
            self.endpoint = _secure(endpoint, "introspection endpoint")
        status, claims = await _fetch_json(self.endpoint, {"token": token, "token_type_hint": "access_token"},
                                           self.basic)
        if status in (400, 401) and (status == 401 or claims.get("error") == "invalid_client"):
            # RFC 7662 2.1: the server may want its caller authenticated
            raise _refused(f"the authorization server refused our client authentication at its "
                           f"introspection endpoint (HTTP {status} {str(claims.get('error', ''))[:40]}): "
                           "give a client id and secret with --auth-client-file or $MCP_AUTH_CLIENT")
        if status != 200:
            raise _refused(f"the introspection endpoint answered {status}")
        claims = claims if claims.get("active") is True else None     # RFC 7662 2.2
        exp, now = claims and claims.get("exp"), _now()     # never kept past the token's own end
        ttl = _ttl(exp)
        cache = self.good if claims else self.bad
        if len(cache) >= INTROSPECTION_CACHE:
            expired = [k for k, (until, _) in cache.items() if until <= now]
            for old in expired or [next(iter(cache))]:
                del cache[old]
        cache[key] = (now + ttl, claims)
        return claims


def _fixed_token(token):
    """Today's --token: one secret, compared in constant time (SECURITY.md R6)."""
    import hmac
    expected = token.strip(" \t").encode()

    async def verify(given):
        return {"sub": "token"} if hmac.compare_digest(given.encode(), expected) else None
    verify.fixed = True     # type: ignore[attr-defined]  # no metadata, a bare "Bearer" challenge,
    return verify           # no audience: as before OAuth


class ResourceServer:
    """Guards an HttpServer as an OAuth 2.1 resource server. `verify`: a function, sync (run in
    a thread) or async, from an access token to its claims as RFC 7662 names them (sub, scope,
    client_id, aud, exp) or None; default: `Introspection` at the first `authorization_servers`.
    `scopes`: what every request needs; `resource`: this server's canonical URI, which a token's
    `aud` must name (RFC 8707; default http://HOST:PORT/mcp, set when the HttpServer starts)."""

    def __init__(self, verify=None, authorization_servers=(), scopes=(), resource=None,
                 client_id=None, client_secret=None):
        import inspect
        self.authorization_servers = [_secure(s, "authorization server", ValueError)
                                      for s in authorization_servers]
        if not (verify or self.authorization_servers):
            raise ValueError("a ResourceServer needs an authorization server, or a verify function")
        self.verify = verify or Introspection(self.authorization_servers[0], client_id, client_secret)
        self.is_async = inspect.iscoroutinefunction(self.verify) or \
            inspect.iscoroutinefunction(type(self.verify).__call__)     # an object's async __call__
        self.fixed, self.scopes = getattr(verify, "fixed", False), frozenset(scopes)
        self.resource: str = resource or ""     # "": the HttpServer names it when it starts

    def publish(self, x, server):
        """RFC 9728 2 metadata: who issues tokens for us, and the scopes our tools ask; at the root
        well-known URI and the one suffixed with /mcp (3.1; MCP clients try both)."""
        if self.fixed or x.request.path not in (_WELL_KNOWN, _WELL_KNOWN + "/mcp"):
            raise _HttpError(404, "Not found")
        if x.request.method != "GET":
            raise _HttpError(405, headers=[("Allow", "GET")])
        asked = set(self.scopes).union(*(t.scopes for t in server.tools.values()))
        x.write(200, x.cors + [("Content-Type", "application/json")], encode({
            "resource": self.resource, "authorization_servers": self.authorization_servers,
            "scopes_supported": sorted(asked), "bearer_methods_supported": ["header"]}))
        return True

    def _refuse(self, status, error=None, scopes=None):
        """RFC 6750 3 and RFC 9728 5.1: where the metadata is, which scopes would do, what failed."""
        if self.fixed:
            return _HttpError(status, "Unauthorized", headers=[("WWW-Authenticate", "Bearer")])
        where = urlsplit(self.resource)
        fields = [f'error="{error}"'] * bool(error) + [
            f'resource_metadata="{where.scheme}://{where.netloc}{_WELL_KNOWN}{where.path.rstrip("/")}"']
        # only RFC 6749 3.3 scope characters reach the header (an introspected scope may hold any)
        if scopes := sorted(s for s in (self.scopes if scopes is None else scopes) if _SCOPE.fullmatch(s)):
            fields.append(f'scope="{" ".join(scopes)}"')
        return _HttpError(status, "Insufficient scope" if status == 403 else "Unauthorized",
                          headers=[("WWW-Authenticate", "Bearer " + ", ".join(fields))])

    async def check(self, request):
        """The AuthInfo of the request's bearer token, or _HttpError 401/403 (503: no verdict)."""
        scheme, _, token = request.header("authorization").partition(" ")
        token = token.strip(" \t")      # only HTTP's own whitespace: a Unicode strip() takes NBSP too
        if scheme.lower() != "bearer" or not token:
            raise self._refuse(401)     # RFC 6750 3.1: no error code when no token came
        try:
            claims = await (self.verify(token) if self.is_async else asyncio.to_thread(self.verify, token))
        except Exception as e:  # noqa: BLE001 — the AS is down or confused: not the client's fault, no 401
            # a verifier's own message might quote the token: only ours are logged whole
            _logger.warning("cannot verify an access token: %s",
                         e if isinstance(e, (OSError, McpError)) else type(e).__name__)
            raise _HttpError(503, "Cannot verify the access token now") from None
        if (auth := self._auth_info(claims)) is None:     # inactive, expired, or not for us
            raise self._refuse(401, "invalid_token")
        if not self.scopes <= auth.scopes:
            raise self._refuse(403, "insufficient_scope", self.scopes | auth.scopes)
        return auth

    def _auth_info(self, claims):
        if type(claims) is not dict or claims.get("active") is False:
            return None
        aud, iss, scope, client = (claims.get(k) for k in ("aud", "iss", "scope", "client_id"))
        auds = [a.rstrip("/") for a in _strings(aud if type(aud) is list else [aud])]
        if not self.fixed and self.resource.rstrip("/") not in auds:
            return None     # MCP: never a token issued for another resource (RFC 8707, no passthrough)
        if not _timely(claims):
            return None
        if iss is not None and self.authorization_servers and iss not in self.authorization_servers:
            return None     # issued by a server we do not take tokens from
        scopes = frozenset(scope.split() if type(scope) is str else _strings(scope))
        client, subject = client if type(client) is str else None, claims.get("sub")
        if not (subject or client):
            return None     # nobody to bind a session to: no user shares another's session
        return AuthInfo(str(subject or client), scopes, client, claims)

    def step_up(self, auth, body, server):
        """403 insufficient_scope for a tools/call whose tool needs scopes the token lacks: the
        client asks the user for more and calls again (step-up). Granted scopes stay asked."""
        for message in body if type(body) is list else [body]:
            params = type(message) is dict and message.get("method") == "tools/call" and message.get("params")
            name = params.get("name") if type(params) is dict else None
            if type(name) is str and (tool := server.tools.get(name)) and not tool.scopes <= auth.scopes:
                raise self._refuse(403, "insufficient_scope", self.scopes | auth.scopes | tool.scopes)


def _strings(value):
    """The strings in `value` if it is a list (a list of anything else names nothing)."""
    return [v for v in value if type(v) is str] if type(value) is list else []


def _timely(claims):
    """RFC 7662 2.2: now is before exp and not before nbf (numbers, if given: a malformed one
    is no good either)."""
    times = {k: claims[k] for k in ("exp", "nbf") if claims.get(k) is not None}
    return all(type(t) in (int, float) for t in times.values()) \
        and times.get("nbf", 0) <= time.time() < times.get("exp", math.inf)


def _recheck(auth):
    """When a verified token is to be checked again: at its exp, INTROSPECTION_TTL at the latest."""
    return _now() + _ttl(auth.claims.get("exp"))


def _ttl(exp):
    """How long a token's verdict holds: until its exp, INTROSPECTION_TTL at most."""
    return min(INTROSPECTION_TTL, exp - time.time()) if type(exp) in (int, float) else INTROSPECTION_TTL


def _principal(x):
    """Who sends this request: its verified user and client, whose sessions are theirs alone (MCP
    security best practices, "Session Hijacking"); without auth, its Authorization as it came."""
    return encode([x.auth.subject, x.auth.client_id]).decode() if x.auth \
        else x.request.header("authorization")

##############################################################################
# Extension: authorization, the client's side (OAuth 2.1; skip on a first reading)
##############################################################################
# The spec's sequence, on a 401 from an MCP server: read the challenge (WWW-Authenticate);
# fetch the protected resource's metadata (RFC 9728), which names the authorization server;
# fetch that server's metadata (RFC 8414 or OpenID discovery); get a client id there
# (pre-registered, a Client ID Metadata Document, or RFC 7591 registration); have the user
# approve in a browser (authorization code + PKCE, a loopback redirect); trade the code for
# tokens; resend. A 403 insufficient_scope asks again with more scope (step-up).


_AUTH_TRIES = 2         # sign-ins for one request (a 401, then a 403 step-up); more could loop forever
_CHALLENGE_PARAM = re.compile(r'([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


class OAuth:
    """How `Client(url, auth=OAuth())` signs in when an HTTP server answers 401. Who we are, in
    the spec's order: `client_id` (`client_secret`) registered beforehand (at `issuer`, if given:
    refused at any other); else the https URL of our Client ID Metadata Document,
    `client_metadata_url`, if the server takes those; else RFC 7591 registration. `grant`
    "authorization_code": a person approves in the browser, opened by `browser(url)` (default
    `webbrowser.open`; may be async), or `headless`: the URL printed, the address the browser
    ends on pasted back; "client_credentials": a program with a secret.
    Tokens are kept in `store`, a file only its owner may read (None: in memory only). A sign-in
    happens inside the request that met the 401: give a person time (the Client's `timeout`)."""

    def __init__(self, *, client_id=None, client_secret=None, issuer=None, client_metadata_url=None,
                 grant="authorization_code", headless=False, browser=None, store="default",
                 client_name="mcp_min"):
        if grant not in ("authorization_code", "client_credentials"):
            raise ValueError("grant is 'authorization_code' or 'client_credentials'")
        if grant == "client_credentials" and not (client_id and client_secret):
            raise ValueError("client_credentials needs client_id and client_secret")
        if client_secret and not issuer:    # else it goes to whichever server an MCP server names
            raise ValueError("a client_secret needs issuer=: the authorization server it may be sent to")
        if client_metadata_url and not re.match(r"https://[^/?#]+/[^?#]", client_metadata_url):
            raise ValueError("client_metadata_url must be an https URL with a path (a CIMD client id)")
        self.client_id, self.client_secret, self.issuer, self.grant = client_id, client_secret, issuer, grant
        self.client_metadata_url = client_metadata_url
        self.headless, self.browser, self.client_name = headless, browser, client_name
        config = os.environ.get("XDG_CONFIG_HOME") or os.environ.get("APPDATA") or os.path.expanduser(
            "~/.config")
        self.store = os.path.join(config, "mcp_min", "tokens.json") if store == "default" else store
        self._entries, self._lock = None, asyncio.Lock()

    def token(self, url: str) -> str | None:
        """The access token for the server at `url` (and for no other URL), or None."""
        return self._all().get(url, {}).get("access_token")

    def _all(self):
        """What `store` keeps: a server's URL -> its sign-in (read once)."""
        if self._entries is None:
            self._entries = {}
            with contextlib.suppress(OSError, ValueError, TypeError), open(self.store or "", "rb") as f:
                self._entries = dict(json.load(f))
        return self._entries

    def _save(self):
        if self.store:
            os.makedirs(os.path.dirname(self.store), 0o700, exist_ok=True)
            new = self.store + ".new"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(new)
            # 0600 from its creation on: never readable by others, not even for a moment
            with os.fdopen(os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                json.dump(self._entries, f)
            os.replace(new, self.store)

    async def challenged(self, url, status, challenge, sent):
        """Sign in for `url` after a 401 (or a 403 insufficient_scope) with this challenge."""
        async with self._lock:     # requests that hear it together share one sign-in
            if ((token := self.token(url)) and f"Bearer {token}") != sent:
                return True         # another request signed in while this one waited
            entry = self._all().get(url, {})
            params = {k.lower(): a or b for k, a, b in _CHALLENGE_PARAM.findall(challenge)}
            if status == 403 and set(params.get("scope", "").split()) <= set(entry.get("scope", "").split()):
                return False        # asked for and given already: signing in again would loop
            resource, metadata, server = await self._protected_resource(url, params.get("resource_metadata"))
            if (entry.get("issuer"), entry.get("resource")) != (server["issuer"], resource):
                # first sign-in, or the server moved: a client id and tokens of one
                # authorization server are never shown to another (SEP-2352)
                entry = {"issuer": server["issuer"], "resource": resource}
            entry["token_endpoint"] = server["token_endpoint"]
            if status == 401 and entry.get("refresh_token"):
                with contextlib.suppress(McpError):     # refused or expired: sign in afresh
                    return await self._tokens(url, entry, {"grant_type": "refresh_token",
                                                           "refresh_token": entry["refresh_token"]})
            # Scope (spec "Scope Selection Strategy"): the challenge's, else all the resource
            # lists, else none; a step-up keeps what was asked before (SEP-2350); offline_access
            # for a refresh token if the server offers it (SEP-2207).
            words = entry.get("scope", "").split() * (status == 403) + (
                params.get("scope") or " ".join(metadata.get("scopes_supported") or ())).split()
            offered = server.get("scopes_supported") or ()
            words += ["offline_access"] * (self.grant == "authorization_code" and "offline_access" in offered)
            scope = " ".join(dict.fromkeys(words))
            if self.grant == "client_credentials":
                self._credentials(entry, server, self.client_id, self.client_secret)
                form = {"grant_type": "client_credentials", "scope": scope}
            else:
                form = await self._authorization_code(server, entry, resource, scope)
            entry["scope"] = scope
            return await self._tokens(url, entry, form)

    async def _protected_resource(self, url, hinted):
        """RFC 9728: the resource's metadata from the challenge's URL, else the well-known URIs,
        path-suffixed first (spec "Protected Resource Metadata Discovery Requirements"); then
        its authorization server's: (the resource as published, unnormalized (RFC 8707), its
        metadata, the authorization server's)."""
        def host(u):    # 127.0.0.1, ::1 and localhost are one machine
            return "loopback" if _is_loopback(u.hostname or "") else u.hostname, u.port
        parts = urlsplit(_secure(url, "MCP server"))
        origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
        well_known = f"{origin}/.well-known/oauth-protected-resource"
        where = hinted or well_known
        for where in dict.fromkeys(filter(None, (hinted, path and well_known + path, well_known))):
            status, metadata = await _fetch_json(_secure(where, "resource metadata URL"))
            if status == 200 and metadata:
                break
        else:   # 2025-03-26 servers publish none: the MCP server is its own authorization server
            metadata = {"resource": url, "authorization_servers": [origin]}
        resource = metadata.get("resource")
        named = urlsplit(resource) if type(resource) is str else None
        # RFC 9728 §3.3, spec "Canonical Server URI": the metadata is about this server (its
        # URL or a parent path), else its tokens would be minted for someone else
        if not named or (named.scheme, host(named)) != (parts.scheme, host(parts)) \
                or not (path + "/").startswith(named.path.rstrip("/") + "/"):
            raise _refused(f"the resource metadata at {where} is about {str(resource)[:200]!r}, not {url}")
        if type(servers := metadata.get("authorization_servers")) is not list or not servers:
            raise _refused(f"the protected resource metadata of {url} names no authorization server")
        if self.client_id and self.issuer not in (None, servers[0]):    # pre-registered: that server's
            # only (2026-07-28 "Authorization Server Binding")
            raise _refused(f"{url} now signs in at {servers[0]}, but the client id is {self.issuer}'s")
        return resource, metadata, await _server_metadata(servers[0])

    async def _authorization_code(self, server, entry, resource, scope):
        """The browser's part: PKCE S256 (RFC 7636), `state`, a loopback redirect (RFC 8252
        §7.3), `iss` checked (RFC 9207). The form for the token request."""
        import hashlib
        import hmac
        import secrets
        if "S256" not in (server.get("code_challenge_methods_supported") or ()):
            raise _refused(f"{server['issuer']} does not offer PKCE (S256): the spec says not to go on")
        _secure(server.get("authorization_endpoint"), "authorization endpoint")
        # Unguessable, and single-use: they live for this one sign-in only
        verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(32)
        listener, redirect_uri, answered = await _loopback_redirect(state)
        try:
            await self._register(server, entry, redirect_uri)
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
            query = {"response_type": "code", "client_id": entry["client_id"], "redirect_uri": redirect_uri,
                     "state": state, "code_challenge": challenge.decode(), "code_challenge_method": "S256",
                     "resource": resource, "scope": scope}
            if "offline_access" in scope.split():   # else an OpenID provider MUST ignore it (OIDC Core 11)
                query["prompt"] = "consent"
            endpoint = server["authorization_endpoint"]
            url = endpoint + "&?"["?" not in endpoint] + urlencode({k: v for k, v in query.items() if v})
            if self.headless:
                print(f"Open this address, sign in, then paste the address the browser ends on:\n{url}",
                      file=sys.stderr)
                answer = _query(await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline))
            else:
                # Off the loop: a $BROWSER that waits for its user holds up no listener (an async
                # `browser` only makes its coroutine there, which runs here)
                opened: object = await asyncio.to_thread(self.browser or _open_browser, url)
                if asyncio.iscoroutine(opened):
                    await opened
                answer = await asyncio.wait_for(answered, 300)    # 5 minutes for a person
        except asyncio.TimeoutError:  # noqa: UP041 — 3.10's is not yet the builtin TimeoutError
            raise _refused("nobody signed in within 5 minutes") from None
        finally:
            listener.close()
        if not hmac.compare_digest(answer.get("state", ""), state):     # RFC 6749 §10.12: CSRF
            raise _refused("the redirect carries another sign-in's state: refused")
        iss, supported = answer.get("iss"), server.get("authorization_response_iss_parameter_supported")
        if iss != server["issuer"] and (iss is not None or supported):
            # RFC 9207 §2.4: compared as strings; a server that says it sends iss must send it
            raise _refused(f"the redirect's iss {iss!r} is not {server['issuer']}: refused (mix-up attack?)")
        if "error" in answer or not answer.get("code"):
            raise _refused(f"the authorization server said {answer.get('error', 'nothing')}: "
                           f"{answer.get('error_description', '')[:300]}")
        return {"grant_type": "authorization_code", "code": answer["code"], "redirect_uri": redirect_uri,
                "code_verifier": verifier}

    async def _register(self, server, entry, redirect_uri):
        """A client id at this authorization server, in the spec's order (2025-11-25 "Client
        Registration Approaches"); one registered before with it is kept with its issuer."""
        if self.client_id:
            return self._credentials(entry, server, self.client_id, self.client_secret)
        if entry.get("client_id"):
            return
        if self.client_metadata_url and server.get("client_id_metadata_document_supported"):
            return self._credentials(entry, server, self.client_metadata_url, None)
        if not server.get("registration_endpoint"):
            raise _refused(f"{server['issuer']} takes no registrations: pass a client id (--client-id)")
        status, answer = await _fetch_json(server["registration_endpoint"], {
            "client_name": self.client_name, "redirect_uris": [redirect_uri], "application_type": "native",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none"}, as_json=True)
        if status not in (200, 201) or type(answer.get("client_id")) is not str:
            raise _refused(f"registration at {server['registration_endpoint']} failed (HTTP {status})")
        self._credentials(entry, server, answer["client_id"], answer.get("client_secret"),
                          answer.get("token_endpoint_auth_method"))

    @staticmethod
    def _credentials(entry, server, client_id, secret, method=None):
        """Who we are there, and how the token endpoint is told: as registered, else Basic if
        offered (RFC 8414's default when none are listed), else in the form, else no secret."""
        offered = server.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if method not in ("client_secret_basic", "client_secret_post", "none"):
            method = secret and next((m for m in ("client_secret_basic", "client_secret_post")
                                      if m in offered), "none") or "none"
        entry.update(client_id=client_id, client_secret=secret, auth_method=method)

    async def _tokens(self, url, entry, form):
        """The token request: `resource` on every one (RFC 8707 §2), the client authenticated
        as registered (RFC 6749 §2.3.1: Basic with each part form-encoded)."""
        form, headers = {**form, "resource": entry["resource"]}, {}
        client_id, secret, method = entry["client_id"], entry.get("client_secret"), entry["auth_method"]
        if method == "client_secret_basic":
            headers["Authorization"] = _basic(client_id, secret)
        else:
            form.update(client_id=client_id, client_secret=secret if method == "client_secret_post" else None)
        form = {k: v for k, v in form.items() if v}
        status, answer = await _fetch_json(entry["token_endpoint"], form, headers)
        if status != 200 or type(answer.get("access_token")) is not str:
            raise _refused(f"the token endpoint said {str(answer.get('error', f'HTTP {status}'))[:100]}: "
                           f"{str(answer.get('error_description', ''))[:300]}")
        if str(answer.get("token_type", "")).lower() != "bearer":
            raise _refused(f"a token of type {str(answer.get('token_type'))[:40]!r}: only Bearer is spoken")
        # RFC 6749 §6: a refresh that brings no new refresh token leaves the old one good
        entry.update(access_token=answer["access_token"],
                     refresh_token=answer.get("refresh_token") or form.get("refresh_token"))
        self._all()[url] = entry
        self._save()
        _logger.info("signed in to %s at %s", url, entry["issuer"])
        return True


async def _loopback_redirect(state):
    """The redirect listener (RFC 8252 §7.3): 127.0.0.1, never a name that could resolve
    elsewhere, on a port the system picks; the first /callback with our `state` is the answer
    (what another local program sends first cannot end the sign-in), then it closes."""
    import hmac
    answered = asyncio.get_running_loop().create_future()

    async def serve(reader, writer):
        try:
            line = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CONNECT_TIMEOUT)).split(b" ")
            query = _query(line[1].decode("latin-1")) if line[0] == b"GET" and line[1].startswith(
                b"/callback?") else {}
            if ours := hmac.compare_digest(query.get("state", ""), state) and not answered.done():
                answered.set_result(query)
            text = b"Signed in: you may close this window." if ours else b"Not found"
            writer.write(b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close"
                         b"\r\n\r\n%s" % (b"200 OK" if ours else b"404 Not Found", len(text), text))
            await writer.drain()
        except Exception as e:  # noqa: BLE001 — a stray or broken connection: not our answer
            _logger.debug("the redirect listener dropped a connection: %r", e)
        finally:
            writer.close()
    listener = await asyncio.start_server(serve, "127.0.0.1", 0)
    return listener, f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/callback", answered


def _open_browser(url):
    import webbrowser
    print(f"Opening the browser to sign in; if it does not open, visit:\n{url}", file=sys.stderr)
    webbrowser.open(url)


def _query(url):
    return dict(parse_qsl(urlsplit(url.strip()).query))

##############################################################################
# Extension: seeing the wire, --trace (skip on a first reading)
##############################################################################


class _Trace:
    """Every frame that enters or leaves, read like a packet capture. One header line a frame:
    seconds since start, direction (C→S or S→C), what carries it (stdin/stdout, an HTTP request
    or status line, an SSE event's fields), and what the message is: ``request #2 tools/call
    getUsers``, ``response #2 (tools/call) ok``; then the headers worth seeing and the JSON,
    indented. To a file (``--trace=FILE``): the same as JSON Lines."""

    SHOWN_HEADERS = ("host", "origin", "accept", "content-type", "mcp-session-id", "mcp-protocol-version",
                     "last-event-id", "authorization", "location", "www-authenticate", "allow",
                     "mcp-method", "mcp-name")     # and every Mcp-Param-*
    ASKED = 1024        # request ids remembered so that a response can name its method

    def __init__(self, target, side="server"):
        self.start, self.side, self.jsonl = time.monotonic(), side, target != "-"
        self.file = open(  # noqa: SIM115 — open for the trace's life
            target, "a", encoding="utf-8", errors="backslashreplace") if self.jsonl else sys.stderr
        self.lock = threading.Lock()
        self.asked = {}     # (arrow of the request, id) -> method
        self.lane, self.connections = {}, itertools.count(1)

    def on(self):
        """This trace for one more HTTP connection: its JSON Lines say "conn": its number, from 1
        in the order this side opened or accepted them (examples/capture.py draws a lane each)."""
        view = _Trace.__new__(_Trace)
        view.__dict__ = {**self.__dict__, "lane": {"conn": next(self.connections)}}
        return view

    def _emit(self, direction, channel, head, headers=None, message=None, data=None):
        arrow = "C→S" if (direction == "in") == (self.side == "server") else "S→C"
        if headers:
            headers = {k: (v.partition(" ")[0] + " ***" if k.lower() == "authorization" else v)
                       for k, v in headers.items()
                       if k.lower() in self.SHOWN_HEADERS or k[:10].lower() == "mcp-param-"}
        with self.lock:
            record = {"t": round(time.monotonic() - self.start, 6), "dir": arrow, **self.lane,
                      "channel": channel, "head": head}
            if message is not None:
                record.update(self._about(arrow, message))
            if (why := _TRACE_WHY.get()) and record.get("kind") == "request":
                record["why"] = why
            if self.jsonl:
                for key, value in ("headers", headers), ("data", data), ("message", _shorten(message, None)):
                    if value:
                        record[key] = value
                text = json.dumps(record, ensure_ascii=False, default=str) + "\n"
            else:
                text = _capture_text(record, headers, data, message)
            try:
                self.file.write(text)
                self.file.flush()
            except (OSError, ValueError):   # stderr closed, a full disk: the trace ends, not the server
                self.file = open(os.devnull, "w")  # noqa: SIM115 — for the trace's life

    def _about(self, arrow, message):
        """What a message is, as record fields (kind, id, method, name, answers, outcome)."""
        if type(message) is list:
            items = [self._about(arrow, m if type(m) is dict else None) for m in message]
            return {"kind": "batch", "count": len(items), "items": items[:50]}
        if type(message) is not dict:
            return {"kind": "not JSON-RPC"}
        if message.get("jsonrpc") != "2.0":     # JSON of another kind (OAuth's): plain HTTP
            return {}
        method, id_ = message.get("method"), message.get("id")
        if type(id_) is not int and id_ is not None:
            id_ = str(id_)[:40]     # a peer picks its size
        if type(method) is str:
            method = method[:80]
            about: _Json = {"kind": "notification" if "id" not in message else "request", "method": method}
            params = params if type(params := message.get("params")) is dict else {}
            if (why := _what_for(message, params)):
                about["why"] = why
            if "id" in message:
                about["id"] = id_
                if len(self.asked) >= self.ASKED:
                    del self.asked[next(iter(self.asked))]
                key = arrow, repr(id_)
                # Sessions share a trace and may reuse an id: a reply then names no method, not a wrong one.
                self.asked[key] = None if self.asked.get(key, method) != method else method
                if method in _NAMED and type(name := params.get(_NAMED[method])) is str:
                    about["name"] = name[:80]
            return about
        about = {"kind": "response", "id": id_}
        answers = self.asked.pop(("S→C" if arrow == "C→S" else "C→S", repr(id_)), None)
        if answers:
            about["answers"] = answers
        about["outcome"] = _outcome(message.get("error"), message.get("result"))
        return about

    def message(self, direction, channel, message):
        self._emit(direction, channel, channel, message=message)

    def line(self, direction, channel, data):
        message, shown = _parsed(data, repr(bytes(data[:200])))
        self._emit(direction, channel, f"{channel} (not JSON)" if shown else channel, None, message, shown)

    def http(self, direction, head, headers, body=None):
        head = _SECRET_QUERY.sub(r"\1***", head)     # a token sent in a URL is shown no more than in a header
        if any(k.lower() == "content-type" and v.startswith("text/event-stream")
               for k, v in (headers or {}).items()):
            head += "  (an SSE stream opens)"
        parsed = _parsed(body, f"({len(body)} bytes, not JSON)") if body else ()
        self._emit(direction, "http", head, headers, *parsed)

    def event(self, direction, fields):
        """An SSE event as it is on the wire: its id, event and retry fields, then its data (the
        server's own events carry their message, not yet encoded)."""
        head = " ".join(f"{k}: {fields[k]}" for k in ("id", "event", "retry") if k in fields)
        data = fields.get("data")
        message, data = _parsed(data, data) if isinstance(data, str) else (data, None)
        self._emit(direction, "sse", head or "(no fields)", message=message, data=data)

    def note(self, direction, text):
        self._emit(direction, "sse", text)


_SECRET_QUERY = re.compile(r"(?i)([?&][^=&#\s]*(?:token|secret|key|password|code)[^=&#\s]*=)[^&#\s]*")
_NAMED = {**_NAME_KEY, "resources/subscribe": "uri", "resources/unsubscribe": "uri"}  # method -> its name
# Set around a request the CLI makes for itself, so that the trace says why it was sent.
_TRACE_WHY: "contextvars.ContextVar[str | None]" = contextvars.ContextVar("mcp_min_why", default=None)


def _parsed(text, otherwise):
    """(the JSON in `text`, None), or (None, `otherwise`) if it holds none."""
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):
        return None, otherwise


def _capture_text(record, headers, data, message):
    """A record as the capture shows it: the header line, then the rest indented."""
    lines = [f"{record['t']:8.3f}s {record['dir']} {record['head']}"
             + (f"  {_summary(record)}" if "kind" in record else "")]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines += [f"data: {line}" for line in data.split("\n")] if data is not None else []
    if message is not None:
        lines += json.dumps(_shorten(message), indent=2, ensure_ascii=False, default=str).splitlines()
    # A peer's words (a method, an id, a header) may hold ESC or a newline: shown, never obeyed
    lines = [_CONTROLS.sub(lambda c: f"\\x{ord(c.group()):02x}", line) for line in lines]
    return "\n".join(lines[:1] + [" " * 14 + line for line in lines[1:]]) + "\n"


_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")     # C0 and C1: a terminal acts on them


def _what_for(message, params):
    """What a message is about, for the trace: the request it cancels, the listen stream it
    belongs to, or the answers a next round carries (2026-07-28)."""
    meta = params.get("_meta") if type(params.get("_meta")) is dict else {}
    if "id" not in message and _is_id(sub := meta.get(_MODERN + "subscriptionId")):
        return f"listen #{str(sub)[:40]}"
    if message.get("method") == "notifications/cancelled" and _is_id(params.get("requestId")):
        return f"#{str(params['requestId'])[:40]}"
    if "id" in message and type(params.get("inputResponses")) is dict:
        return "answering " + ", ".join(map(str, params["inputResponses"]))[:200]
    return None


def _outcome(error, result):
    """How a response ended, in a few words: ok, an error's code, or what it asks for."""
    if type(error) is dict:
        return f"error {error.get('code')}"
    if type(result) is dict and type(result.get("inputRequests")) is dict:     # 2026-07-28
        return "input required: " + ", ".join(f"{k} ({v.get('method') if type(v) is dict else '?'})"
                                              for k, v in result["inputRequests"].items())[:200]
    if type(result) is dict and type(result.get("taskId")) is str and type(result.get("status")) is str:
        inner = result.get("result")    # the tasks extension: a task's step
        return ("task created, " if result.get("resultType") == "task" else "task ") + result["status"][:40] \
            + ", isError" * (type(inner) is dict and inner.get("isError") is True)
    return "ok, isError" if type(result) is dict and result.get("isError") is True else "ok"


# A summary's words after the record's kind, in order: (field, how it is shown).
_WORDS = (("id", "#{}"), ("answers", "({})"), ("method", "{}"), ("name", "{}"), ("outcome", "{}"))


def _summary(about: _Json) -> str:
    """A record's JSON-RPC fields as words: ``request #2 tools/call getUsers``."""
    if about["kind"] == "batch":
        return f"batch of {about['count']}: " + "; ".join(_summary(a) for a in about["items"])
    if about["kind"] == "response" and about.get("id") is None:     # JSON-RPC: it answers no request
        return "error with no id: " + str(about.get("outcome", "")).removeprefix("error ")
    words = [about["kind"], *(shown.format(about[key]) for key, shown in _WORDS if key in about)]
    return " ".join(words) + (f"  [{about['why']}]" if "why" in about else "")


def _shorten(value, limit: int | None = 300, depth=0):
    """For showing: strings over `limit` and lists over 50 cut (None: kept whole),
    and nesting past 32 levels, which a hostile peer may send."""
    if depth > 32:
        return "..."
    if isinstance(value, str) and limit and len(value) > limit:
        return value[:limit] + f"... ({len(value) - limit} more characters)"
    if isinstance(value, dict):
        return {k: _shorten(v, limit, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        shown = [_shorten(v, limit, depth + 1) for v in (value[:50] if limit else value)]
        if len(shown) < len(value):
            shown.append("...")
        return shown
    return value

##############################################################################
# Extension: the command line, and the built-in demo (skip on a first reading)
##############################################################################


def _argument_parser(**options):
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):       # one line saying what is wrong, not the usage block
            self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    # Help 80 columns wide: asking the terminal its width imports shutil, 3 ms of every start.
    return Parser(formatter_class=functools.partial(argparse.RawDescriptionHelpFormatter, width=80),
                  **options)


def _bare_trace(argv):
    """--trace alone means stderr; --trace=FILE, or --trace FILE.jsonl, that file. It takes
    no next word but a .jsonl one: `serve --trace server.py` must not append to the server."""
    words = list(argv)
    for i, word in enumerate(words):
        if word == "--trace":
            following = words[i + 1] if i + 1 < len(words) else ""
            if following.endswith(".jsonl"):
                words[i], words[i + 1] = "--trace=" + following, None
            else:
                words[i] = "--trace=-"
    return [word for word in words if word is not None]


def _port(text):
    if not (text.isdigit() and int(text) <= 65535):
        import argparse
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0-65535; 0 picks a free one)")
    return int(text)


def _seconds(text):
    with contextlib.suppress(ValueError):
        if 0 < (value := float(text)) < 1e9:
            return value
    import argparse
    raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _common_options(p, level):
    p.add_argument("--trace", nargs="?", const="-", metavar="FILE.jsonl", help="show every message on "
                   "stderr as a packet capture would; --trace FILE.jsonl (or --trace=FILE) appends them "
                   "to the file as JSON Lines")
    p.add_argument("--log-level", default=level, type=str.upper, choices=_LOG_LEVELS, metavar="LEVEL",
                   help=f"what mcp_min logs on stderr: {', '.join(_LOG_LEVELS)} (default {level})")


_SERVE_HELP = """\
Serve MCP: the built-in user-store demo, or the Server found in TARGET.

With --stdio (the default) a client starts this command and speaks JSON-RPC, one
message a line, on its stdin and stdout. With --port it serves HTTP on
127.0.0.1: Streamable HTTP at /mcp and the legacy HTTP+SSE transport at /sse.

examples:
  python3 mcp_min.py serve --stdio
  python3 mcp_min.py serve --port 8080 --trace
  python3 mcp_min.py serve path/to/server.py:app --port 0    (0: a free port)
"""


def _serve_parser(description=_SERVE_HELP):
    p = _argument_parser(description=description)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    where.add_argument("--port", type=_port,
                       help="serve HTTP on this TCP port (0-65535; 0 picks a free one): /mcp and /sse")
    p.add_argument("--host", default="127.0.0.1", metavar="ADDRESS",
                   help="the address to bind (default 127.0.0.1; another needs --token)")
    secret = p.add_mutually_exclusive_group()
    secret.add_argument("--auth-server", metavar="URL", help="accept OAuth access tokens this "
                        "authorization server issued for this server (checked by introspection, RFC 7662)")
    secret.add_argument("--token-file", metavar="FILE", help="require 'Authorization: Bearer TOKEN' on "
                        "HTTP, the token read from FILE (default: $MCP_TOKEN)")
    secret.add_argument("--token", help="the token itself (every local user can read it in the "
                        "process list: prefer --token-file or $MCP_TOKEN)")
    p.add_argument("--scope", action="append", default=[], help="with --auth-server: a scope every "
                   "request needs (repeatable)")
    p.add_argument("--resource", metavar="URL", help="with --auth-server: this server's URL as clients "
                   "see it, which tokens must name (default http://HOST:PORT/mcp)")
    p.add_argument("--auth-client-file", metavar="FILE", help="with --auth-server: 'client_id:secret' "
                   "to introspect with, if the server wants it (default: $MCP_AUTH_CLIENT)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a browser origin allowed to call, with CORS (repeatable)")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                   help="a Host header to accept besides localhost (repeatable)")
    p.add_argument("--stateless", action="store_true",
                   help="Streamable HTTP without sessions: every POST stands alone")
    p.add_argument("--json-response", action="store_true",
                   help="Streamable HTTP: answer requests with JSON, never SSE")
    p.add_argument("--node", metavar="NAME", help="behind a balancer: a name (letters, digits) to start "
                   "the session ids this process makes, for the balancer to route on")
    p.add_argument("--forwarded-allow-ips", default="", metavar="IPS", help="behind a proxy: addresses or "
                   "networks (a,b; *: any) whose X-Forwarded-For/-Host/-Proto are believed (default: none)")
    p.add_argument("--insecure", action="store_true", help="allow a non-loopback --host without --token")
    p.add_argument("--task-store", metavar="FILE", help="keep tasks in this SQLite file, which other "
                   "processes serving the same tools may share (default: in memory)")
    p.add_argument("--skills", metavar="DIR", help="serve the agent skills in this folder (SKILL.md files)")
    p.add_argument("--shutdown-grace", type=_seconds, default=SHUTDOWN_GRACE, metavar="SECONDS",
                   help="after SIGTERM, Ctrl-C or the end of stdin, how long work in flight may "
                   f"finish before it is answered with an error (default {SHUTDOWN_GRACE:g})")
    _common_options(p, "INFO")
    return p


def _serve(server, args, stdout=1):
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        trace = _Trace(args.trace) if args.trace else None
    except OSError as e:
        print(f"mcp_min: cannot write the trace to {args.trace}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        auth = _auth_options(args) if args.port is not None else {}
        server.task_store = TaskStore(args.task_store) if args.task_store else server.task_store
        if args.skills:
            server.skills(args.skills)
    except Exception as e:  # noqa: BLE001 — a bad option (an unreadable store too): said in one line
        print(f"mcp_min: {e}", file=sys.stderr)
        return 2
    if args.port is None and os.isatty(0):
        print("mcp_min: serving MCP on stdin/stdout; type one JSON-RPC message a line, starting "
              "with initialize (see the README); Ctrl-D ends", file=sys.stderr)

    import signal
    # Signals left as they came (ignored, or an application's own) are left alone.
    signals = [s for s in (signal.SIGINT, signal.SIGTERM)
               if signal.getsignal(s) in (signal.default_int_handler, signal.SIG_DFL)]

    async def main():
        from concurrent.futures import ThreadPoolExecutor
        loop, task = asyncio.get_running_loop(), typing.cast(asyncio.Task[_Any], asyncio.current_task())
        stopping = []

        def stop(signum):       # the first SIGTERM or Ctrl-C ends serving gracefully, a second at once
            if stopping:
                sys.stderr.flush()
                os._exit(128 + signum)
            stopping.append(signum)
            if args.port is not None and any(s.running or s.waiting for s in server.sessions):
                _logger.info("stopping: work in flight has %g s to finish (a second signal: at "
                          "once)", args.shutdown_grace)
            task.cancel()
        for signum in signals:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, stop, signum)   # Windows; not the main thread
        # Sync tools share this pool: room for many slow ones at once.
        pool = ThreadPoolExecutor(64, "mcp-tool")
        loop.set_default_executor(pool)
        try:
            if args.port is None:
                code = await serve_stdio(server, stdout_fd=stdout, trace=trace, grace=args.shutdown_grace)
            else:
                code = await serve_http(server, args.host, args.port, args.shutdown_grace, **auth,
                                        allow_origins=args.allow_origin, allow_hosts=args.allow_host,
                                        stateless=args.stateless, json_response=args.json_response,
                                        insecure=args.insecure, trace=trace, node=args.node,
                                        forwarded_allow_ips=args.forwarded_allow_ips)
        except asyncio.CancelledError:      # a signal: it was a graceful end
            code = 0 if stopping else 130
        if stdout != 1:
            os.close(stdout)    # main's own copy: the client sees EOF now, not at exit
        works = list(server.works.values())
        for work in works:      # a task cannot outlive its process: it ends failed
            work.cancel()
        if works:   # once they are over, their last words (`_finish`) are written, and waited for
            await asyncio.wait(works, timeout=SHUTDOWN_GRACE)
        if _WRITES:
            await asyncio.wait(list(_WRITES), timeout=3 * TASK_STORE_WAIT)
        if isinstance(server.task_store, TaskStore):
            _close_store(server.task_store)
        pool.shutdown(wait=False, cancel_futures=True)
        await asyncio.sleep(0.05)
        if any(t.name.startswith("mcp-tool") for t in threading.enumerate()) or asyncio.all_tasks() - {task}:
            # A tool runs on past the grace (a sync tool's thread, a handler ignoring its
            # cancel): it cannot be stopped, and its caller has its answer, so leave without it.
            if not stopping:
                _logger.warning("exiting with a tool still running")
            sys.stderr.flush()
            os._exit(code or 0)
        return code or 0
    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 130
    except (OSError, ValueError) as e:
        print(f"mcp_min: {e}", file=sys.stderr)
        return 1


def _auth_options(args):
    """serve's HttpServer options: auth= for --auth-server (introspection credentials, 'id:secret',
    from --auth-client-file or $MCP_AUTH_CLIENT: never the command line), else token= (from
    --token-file, $MCP_TOKEN, or --token with a warning; never empty, which would turn it off)."""
    path = args.auth_client_file if args.auth_server else args.token_file
    if path:
        with open(path, encoding="utf-8") as f:
            secret = f.read().strip()
    else:
        secret = os.environ.get("MCP_AUTH_CLIENT" if args.auth_server else "MCP_TOKEN") \
            if args.token is None else args.token
    if args.auth_server:
        client_id, _, client_secret = (secret or "").partition(":")
        return {"auth": ResourceServer(None, [args.auth_server], args.scope, args.resource,
                                       client_id or None, client_secret or None)}
    if secret is not None and not secret.strip(" \t"):
        raise ValueError("the token is empty, which would turn authentication off")
    if args.token is not None:
        _logger.warning("--token is visible to every local user (ps, /proc/PID/cmdline); "
                     "pass it in $MCP_TOKEN or --token-file")
    return {"token": secret}


def _load_server(target):
    """A Server from ``path/to/file.py[:name]`` or ``package.module[:name]``."""
    import importlib.util  # binds importlib too
    spec, _, name = target.rpartition(":")
    if not spec or not name.isidentifier():    # no ":name" (or a Windows drive letter)
        spec, name = target, None
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = os.path.abspath(spec)
        module_spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        if module_spec is None or module_spec.loader is None or not os.path.exists(path):
            raise ValueError(f"no such file: {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, os.path.dirname(path))
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(spec)
    if name:
        server = getattr(module, name, None)
        if server is None:
            raise ValueError(f"{spec} has no {name!r}")
        if not isinstance(server, Server):
            raise ValueError(f"{target} is of type {type(server).__name__}, not a Server")
        return server
    found = [v for v in vars(module).values() if isinstance(v, Server)]
    server = found[0] if len(found) == 1 else getattr(module, "server", None)
    if not isinstance(server, Server):  # ValueError, not TypeError: a bad TARGET, said in one line
        raise ValueError(f"{target}: {'several Servers' if found else 'no Server'} found "  # noqa: TRY004
                         f"(name one with {spec}:NAME)")
    return server


def _load_error(e):
    """Why a TARGET did not load, in one line: the error at the user's file and line."""
    if isinstance(e, SyntaxError) and e.filename:
        return f"{type(e).__name__} at {os.path.basename(e.filename)}:{e.lineno}: {e.msg}"
    import traceback
    stdlib = os.path.dirname(os.__file__)
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != __file__
              and not f.filename.startswith(("<frozen", stdlib))]
    if not frames:      # our own word (no such file, no such name), or importlib's
        return str(e) if type(e) is ValueError else f"{type(e).__name__}: {e}"
    return f"{type(e).__name__} at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}: {e}"


# What the CLI's methods need after METHOD, for a usage error before anything is sent.
_CLI_NEEDS = {"tools/call": "NAME [k=v ...]", "prompts/get": "NAME [k=v ...]", "resources/read": "URI",
              "resources/subscribe": "URI", "resources/unsubscribe": "URI", "logging/setLevel": "LEVEL"}


def _client_usage(args):
    """The request the CLI will send, checked first: (name, arguments, raw "k=v" texts)."""
    target, method, words = args.target, args.method, args.args
    if not target.strip():
        raise ValueError("TARGET is empty: give a URL or the command that starts a server")
    if re.fullmatch(r"[\w.\-\[\]:]+:\d+(/\S*)?", target):        # 127.0.0.1:8080/mcp
        raise ValueError(f"{target} is not a URL: write http://{target}")
    if re.fullmatch(r"[A-Za-z][\w+.-]*://\S*", target) \
            and target.partition(":")[0].lower() not in ("http", "https"):
        raise ValueError(f"{target}: only http:// and https:// URLs, or a command that starts a server")
    if method in _CLI_NEEDS and not words:
        raise ValueError(f"{method} needs {_CLI_NEEDS[method]}: client TARGET {method} {_CLI_NEEDS[method]}")
    if method in ("tools/call", "prompts/get"):
        return (words[0], *_cli_arguments(words[1:]))
    if method in _CLI_NEEDS or method in _LISTS_OF:
        return (words[0] if words else None), None, None
    return None, _cli_arguments(words)[0] if words else None, None


def _cli_arguments(words):
    """``k=v`` pairs (values parsed as JSON when they are JSON) or one JSON object: (arguments, raw)."""
    if len(words) == 1 and words[0].lstrip().startswith("{"):
        try:
            return json.loads(words[0]), {}
        except (ValueError, RecursionError) as e:
            raise ValueError(f"the JSON object is not valid JSON: {e}") from None
    arguments, raw = {}, {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise ValueError(f"expected key=value, got {word!r}")
        raw[key] = value
        try:
            arguments[key] = json.loads(value)
            json.dumps(arguments[key], allow_nan=False)     # NaN, 1e999: not JSON to send
        except (ValueError, RecursionError):
            arguments[key] = value
    return arguments, raw


def _client_main(args, name, arguments, raw):
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        result = asyncio.run(_client_run(args, name, arguments, raw))
    except McpError as e:
        print(f"error {e.code}: {e.message}", file=sys.stderr)
        if "client declined" in e.message and not sys.stdin.isatty():
            print("mcp_min: on a terminal, the CLI asks you for the form's fields", file=sys.stderr)
        asked = e.data.get("elicitations") if type(e.data) is dict else None
        for params in asked if e.code == URL_ELICITATION_REQUIRED and type(asked) is list else ():
            if type(params) is dict:
                _show_url(params, ask=False)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:      # whatever a broken server makes of us: one line, not a traceback
        _logger.debug("client failed", exc_info=True)
        what = (f"{e.strerror}: {e.filename}" if e.filename else e.strerror) \
            if isinstance(e, OSError) and e.strerror else f"{type(e).__name__}: {e}"
        print(f"mcp_min: {what}", file=sys.stderr)
        return 1
    try:
        print(json.dumps(result, indent=2, ensure_ascii=False), flush=True)
    except BrokenPipeError:     # piped into `head`, which read enough: no traceback (Python's docs,
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # "Note on SIGPIPE")
        return 1
    if isinstance(result, dict) and result.get("isError"):
        print("the tool reported an error", file=sys.stderr)
        return 1
    return 0


async def _client_run(args, name, arguments, raw):
    version, show = args.protocol, functools.partial(asyncio.to_thread, _show_url)
    client = Client(args.target, token=args.token, auth=_cli_auth(args), trace=args.trace,
                    era=version if version in MODERN_VERSIONS else "handshake" if version else "auto",
                    protocol_version=version if version in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION,
                    on_log=lambda p: print(f"[{p.get('level')}] {p.get('data')}", file=sys.stderr),
                    elicit_url=show, elicitation=show if sys.stdin.isatty() else None, timeout=args.timeout)
    method = args.method
    async with client:
        if method in _LISTS_OF:
            return {_LISTS_OF[method]: await client._all(method)}
        if method == "prompts/get":     # prompt arguments are strings, as typed
            return await client.get_prompt(name, {k: raw.get(k, v if type(v) is str else json.dumps(v))
                                                  for k, v in arguments.items()})
        if method == "tools/call":
            def shown(task):    # a task's status, as it changes
                print(f"task {task.get('taskId')}: {task.get('status')}", file=sys.stderr)
            return await client.call_tool(name, await _typed(client, name, arguments, raw), on_status=shown)
        if method == "logging/setLevel":
            return await client.set_log_level(name)
        if method == "ping":
            return await client.ping()
        return await client.request(method, {"uri": name} if name else arguments)


async def _typed(client, name, arguments, raw):
    """A tool's k=v arguments, each as typed where the tool's schema wants a string (zip=10001,
    or a Decimal's digits, exactly). The CLI's own tools/list, so marked in the trace."""
    if not arguments:
        return arguments
    why = _TRACE_WHY.set("the CLI's own: it reads the tool's schema to type k=v")
    try:
        tools = await client._all("tools/list")
    finally:
        _TRACE_WHY.reset(why)
    tool = next((t for t in tools if t["name"] == name), None)
    if tool is None:
        raise McpError(INVALID_PARAMS, f"The server has no tool named {name!r}")
    props = tool.get("inputSchema", {}).get("properties", {})
    for key, text in raw.items():
        prop = props.get(key)
        if type(prop) is dict and not validate(text, prop) and (
                validate(arguments[key], prop) or "string" in (prop.get("type") or ())):
            arguments[key] = text
    return arguments


def _show_url(params, ask=True):
    """Elicitation at the CLI. URL mode: the whole URL (never fetched here; no control character
    can hide part of it), and the user's consent; form mode: each field typed in (JSON where it
    parses, a string field as typed; none typed: declined). A terminal asks, anything else declines."""
    url, (message, where) = "url" in params, (
        "".join(c if c.isprintable() else "?" for c in str(params.get(k))) for k in ("message", "url"))
    print(f"the server asks you to visit a URL: {message}\n  {where}" if url else
          f"the server asks: {message}", file=sys.stderr)
    if not (ask and sys.stdin.isatty()):
        return {"action": "decline"}
    if url:
        return {"action": "accept" if input("Will you open it? [y/N] ").strip().lower() == "y" else "decline"}
    fields = (params.get("requestedSchema") or {}).get("properties") or {}
    typed = {k: input(f"  {k}: ").strip() for k in fields}
    content = {k: v if (fields[k] or {}).get("type") == "string" else _cli_arguments([f"v={v}"])[0]["v"]
               for k, v in typed.items() if v}
    return {"action": "accept", "content": content} if content else {"action": "decline"}


def _cli_auth(args):
    """--auth [browser|paste|machine], --client-id, --client-secret: an OAuth, or None. A person
    signs in within the request that met the 401: it gets 5 minutes, whatever --timeout says."""
    if not (args.auth or args.client_id):
        return None
    if args.client_id and args.client_secret and not args.issuer:
        raise ValueError("--client-secret needs --issuer: the authorization server it may be sent to")
    args.timeout = args.timeout if args.auth == "machine" else max(args.timeout, 300)
    return OAuth(client_id=args.client_id, client_secret=args.client_secret, issuer=args.issuer,
                 headless=args.auth == "paste",
                 grant="client_credentials" if args.auth == "machine" else "authorization_code")


def demo_server():
    """The user store from the packet capture we started from, in memory."""
    server = Server("user-store", version=__version__,
                    instructions="Tools manage a small in-memory user directory.")
    users = {"John": "john@example.com", "Jane": "jane@example.com"}

    # These touch only a dict, so they are async: no thread hop per call.
    @server.tool(annotations={"readOnlyHint": True})
    async def getUsers() -> list:
        """List every user with their email address."""
        return [{"name": n, "email": e} for n, e in users.items()]

    @server.tool()
    async def addUser(name: typing.Annotated[str, "The user's name"],
                      email: typing.Annotated[str, "An email address, like ada@example.com"]) -> str:
        """Add a user to the directory."""
        name, email = name.strip(), email.strip()
        if not name:
            raise McpError(INVALID_PARAMS, "The name must not be empty.")
        if name in users:
            raise McpError(INVALID_PARAMS, f"A user named {name!r} already exists.")
        if not _looks_like_email(email):
            raise McpError(INVALID_PARAMS, f"{email!r} is not an email address (like ada@example.com).")
        users[name] = email
        server.resource_updated("users://all")
        return f"Added {name} <{email}>."

    @server.tool(annotations={"readOnlyHint": True})
    async def getUser(name: str) -> dict:
        """Look up one user by name."""
        if name not in users:
            raise McpError(INVALID_PARAMS, f"No user named {name!r}. Call getUsers to see who exists.")
        return {"name": name, "email": users[name]}

    @server.tool(annotations={"destructiveHint": True, "idempotentHint": True})
    async def deleteUser(name: str, ctx: Context) -> str:
        """Remove a user from the directory (asking the user first, if the client can)."""
        if name not in users:
            raise McpError(INVALID_PARAMS, f"No user named {name!r}.")
        if "elicitation" in (ctx.client_capabilities or {}):
            answer = await ctx.elicit(f"Delete user {name}?", {"ok": {"type": "boolean"}})
            if answer.get("action") != "accept" or answer.get("content", {}).get("ok") is not True:
                return f"Kept {name}."
        users.pop(name, None)
        server.resource_updated("users://all")
        return f"Deleted {name}."

    @server.resource("users://all", mime_type="application/json")
    async def all_users():
        """Every user, as JSON."""
        return [{"name": n, "email": e} for n, e in users.items()]

    @server.resource("users://{name}", mime_type="application/json")
    async def one_user(name: str):
        """One user, as JSON."""
        if name not in users:
            raise McpError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": f"users://{name}"})
        return {"name": name, "email": users[name]}

    @server.prompt()
    async def greet(name: typing.Annotated[str, "Who to welcome"]) -> str:
        """Ask the model to welcome a user."""
        return f"Write a short, friendly welcome message for {name}, a new member of our directory."

    @server.completion("greet", "name")
    @server.completion("users://{name}", "name")
    async def user_names(prefix: str):
        return [n for n in users if n.lower().startswith(prefix.lower())]

    return server


def _looks_like_email(value):
    local, at, domain = value.partition("@")
    return bool(local and at and "." in domain.strip(".") and not domain.startswith(".")
                and not any(c.isspace() or c == "@" for c in value.replace("@", "", 1)))


_MAIN_HELP = """\
MCP in one file: serve a Server over stdio or HTTP, or call one as a client.

examples:
  python3 mcp_min.py serve --stdio          the demo user store, for a client to start
  python3 mcp_min.py serve --port 8080      the demo on http://127.0.0.1:8080/mcp and /sse
  python3 mcp_min.py client http://127.0.0.1:8080/mcp tools/list
"""

_CLIENT_HELP = """\
Call an MCP server once: connect, initialize, send METHOD, print the answer as
JSON, disconnect. TARGET is an http:// or https:// URL (Streamable HTTP, falling
back to legacy SSE), or a quoted command that starts a stdio server.

ARGS: tools/call NAME k=v ... -- a value is JSON when it parses as JSON (n=3,
ok=true, tags='["a","b"]'), else text (name=Ada), and text as typed where the
tool's schema says string (zip=02134); or one JSON object. prompts/get NAME k=v
sends text. resources/read URI. logging/setLevel LEVEL.

examples:
  python3 mcp_min.py client http://127.0.0.1:8080/mcp tools/list
  python3 mcp_min.py client "python3 mcp_min.py serve" tools/call getUser name=John
  python3 mcp_min.py client http://127.0.0.1:8080/sse resources/read users://John --trace
"""


def main(argv=None):
    p = _argument_parser(prog="mcp_min", description=_MAIN_HELP)
    p.add_argument("--version", action="version", version=f"mcp_min {__version__}")
    commands = p.add_subparsers(dest="command", required=True, metavar="{serve,client}")
    serve = commands.add_parser("serve", parents=[_serve_parser()], add_help=False,
                                formatter_class=p.formatter_class, description=_SERVE_HELP,
                                help="serve a Server (default: the user-store demo)")
    serve.add_argument("target", nargs="?", metavar="TARGET",
                       help="path/to/file.py[:name] or package.module[:name]")
    client = commands.add_parser("client", formatter_class=p.formatter_class, description=_CLIENT_HELP,
                                 help="call a server: TARGET METHOD [ARGS...]")
    client.add_argument("target", help="an http(s):// URL, or a quoted command that starts a stdio server")
    client.add_argument("method", metavar="METHOD",
                        help="tools/list, tools/call, resources/read, prompts/get, ping ...")
    client.add_argument("args", nargs="*", default=[], metavar="ARGS",
                        help="NAME, URI, k=v pairs or one JSON object")
    client.add_argument("--token", default=os.environ.get("MCP_TOKEN"),
                        help="bearer token for HTTP (default: $MCP_TOKEN)")
    client.add_argument("--auth", nargs="?", const="browser", choices=("browser", "paste", "machine"),
                        help="sign in with OAuth on a 401: in the browser (default), by pasting the "
                        "address back (paste), or as a program with --client-secret (machine)")
    client.add_argument("--client-id", help="a client id registered with the authorization server")
    client.add_argument("--issuer", metavar="URL", help="that authorization server: with a secret, "
                        "required (the secret goes there only, whichever server the MCP server names)")
    client.add_argument("--client-secret", default=os.environ.get("MCP_CLIENT_SECRET"),
                        help="its secret (default: $MCP_CLIENT_SECRET; prefer it: every local user "
                        "can read the command line)")
    client.add_argument("--protocol", choices=PROTOCOL_VERSIONS + MODERN_VERSIONS, metavar="VERSION",
                        help="speak this protocol version only (default: 2026-07-28 if the server "
                        "does, else the handshake); one of " + ", ".join(PROTOCOL_VERSIONS + MODERN_VERSIONS))
    client.add_argument("--timeout", type=_seconds, default=REPLY_TIMEOUT, metavar="SECONDS",
                        help=f"how long to wait for each answer (default {REPLY_TIMEOUT:g})")
    _common_options(client, "WARNING")
    args = p.parse_args(_bare_trace(sys.argv[1:] if argv is None else argv))
    if args.command == "serve":
        # stdio: stdout is the protocol's from here on, before TARGET's imports can print.
        stdout = _private_stdout() if args.port is None else 1
        try:
            server = _load_server(args.target) if args.target else demo_server()
        except Exception as e:  # noqa: BLE001 — the user's file may raise anything: shown in one line
            print(f"mcp_min: cannot load {args.target}: {_load_error(e)}", file=sys.stderr)
            return 2
        return _serve(server, args, stdout)
    try:
        request = _client_usage(args)
        args.trace = args.trace and _Trace(args.trace, side="client")
    except ValueError as e:
        client.error(str(e))
    except OSError as e:
        client.error(f"cannot write the trace to {args.trace}: {e.strerror}")
    return _client_main(args, *request)


if __name__ == "__main__":
    # Make `import mcp_min` (in a TARGET file) find this very module, not a second copy.
    sys.modules.setdefault("mcp_min", sys.modules[__name__])
    sys.exit(main())
