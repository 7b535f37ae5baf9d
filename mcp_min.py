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

Reading guide. The core comes first and stands alone; it follows the capture
this project began from, VS Code talking to a server over legacy HTTP+SSE:
GET /sse -> the `endpoint` event -> initialize -> initialized -> tools/list ->
tools/call -> the stream closes. Its sections, in the file's order:

1. The protocol's numbers, its errors, and JSON-RPC framing: what travels.
2. HTTP, the legacy HTTP+SSE transport: the capture itself (`_sse_get`,
   `_sse_post`): a stream, and POSTs whose answers come on it.
3. The session: every frame goes in at `Session.receive`; its lifecycle is one
   table (`_LIFECYCLE`); each request runs in a task of its own.
4. Method handlers: initialize, tools/list, tools/call ... (`_METHODS`).
5. Content blocks: what tools return.
6. The registry: how ``@server.tool()`` makes a `Tool` of a function.
7. Schemas from type hints, and the arguments checked against them.
8. HTTP, the front door (`HttpServer`): request heads, limits, Host and
   Origin, routing (`_ROUTES`); then Streamable HTTP at /mcp.
9. stdio: lines in, lines out (`serve_stdio`).
10. The client: the same conversation from the other end (`Client`).
11. Running a server: `Server.run()`, over stdio or HTTP (--port).

Within a section and a class, what the capture runs comes first; a comment
that begins "Below:" opens the rest (batches, time limits, CORS ...), to skip
on a first reading.

The capture's path through the code, as the tour finds it (``python3
examples/agent_walkthrough.py --transport sse --tour`` prints each frame with
the functions that ran for it). Each request comes in at the front door
(section 8), which reads its head and picks its endpoint from `_ROUTES`:

    GET /sse: HttpServer._connection -> HttpServer._respond -> HttpServer._route
        -> _sse_get

`_sse_get` makes the session, writes the `endpoint` event, and stays in
`_Connection.hold`, writing what the stream is given until the client leaves.
Every POST comes in the same way, is answered 202, and goes in at the
session's one door:

    POST /messages initialize: HttpServer._connection -> HttpServer._respond
        -> HttpServer._route -> _sse_post -> Session.receive -> Session._take
        -> Session._handle -> Session._start -> _without_waiting
        -> Session._serve -> _initialize

`Session._refusal` asks whether the lifecycle allows the method (`_LIFECYCLE`)
and the server offers it (`_METHODS`); initialize then runs at once, any other
request in a task of its own (`_start_task`); `Session._serve` calls the
method's handler. The answer crosses to the GET stream's connection:

    its answer: Session._serve -> Session._finished -> Session._answer
        -> _HttpSession.send -> _Stream.put -> _Connection.direct

Below the core, each extension is a banner marked "Extension", to skip on a
first reading; each ends by plugging itself into the core's tables (methods,
routes, tool options, eras ...): the JSON Schema keywords type hints do not
make; the 2026-07-28 era (requests that stand alone); resumable streams;
tasks, and their store in Redis; skills; MCP Apps; OAuth, the resource server
and the client; the trace (--trace); and, last, the command line, the demo and
the options of a deployment. The file cut at the first banner is a complete
server and client of the handshake era.

On the capture's path the extensions run no code. The core reads what decides
it as data: a request is the 2026-07-28 era's only if its _meta names that
era's `key` (`Session._era`); a stream is the resumable streams' only if it is
numbered (legacy /sse's are not); tasks and skills come into play when a
server uses them (a tool with task=, `Server.skills`), and a tool's call is
the core's `_call_tool` unless its options give it to an extension
(`Tool.serve`). The capture's tools are defined like any others:
examples/user_store.py (or `demo_server`, in the command line's section, the
last) holds getUsers and addUser.

Where the line falls: the client's side of resumable streams (a GET with
Last-Event-ID after a stream broke) is core, since a 2025-11-25 server may end
any stream it opened and its client must come back; the server's side (event
ids, the replay log) is an extension. The core checker knows the keywords that
type hints make; hand-written schemas' others ($ref, oneOf ...) are an extension.
"""

# SPDX-License-Identifier: MIT  (c) the mcp_min authors; see LICENSE.

# mypy: disable-error-code="annotation-unchecked"
import asyncio
import atexit
import base64
import collections.abc
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
import select
import stat
import sys
import threading
import time
import typing
import urllib.parse
import weakref

__version__ = "0.1.0"
# What users import; the limits are module settings beside the code they bound
# (`mcp_min.MAX_BODY_BYTES = 1 << 20`), listed in the README.
__all__ = [  # noqa: RUF022 — grouped by use, on purpose
    # building a server, and calling one
    "Server", "Context", "Tool", "Resource", "Prompt", "Content", "McpError", "RequestError",
    "UrlElicitationRequired", "text", "image", "audio", "resource_link", "embedded_resource",
    "Client", "SyncClient",
    # serving it, and the transport-free session every transport feeds
    "serve_stdio", "serve_http", "start_http", "HttpServer", "Session",
    # JSON-RPC framing and JSON Schema, for transports and tests of one's own
    "decode", "encode", "classify", "validate",
    # the protocol's numbers
    "PROTOCOL_VERSIONS", "LATEST_PROTOCOL_VERSION", "BATCH_VERSIONS", "LOG_LEVELS",
    "PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "INTERNAL_ERROR",
    "RESOURCE_NOT_FOUND", "CONNECTION_CLOSED", "REQUEST_TIMEOUT", "URL_ELICITATION_REQUIRED",
    "__version__",
]

_logger = logging.getLogger("mcp_min")
_Any = typing.Any
_F = typing.TypeVar("_F", bound=typing.Callable[..., _Any])    # a handler, given back unchanged
_T = typing.TypeVar("_T")
_Json = dict[str, _Any]     # a JSON object as it travels
# answers what a server asks: a result, or an awaitable of one
_Answerer = typing.Callable[[_Json], _Any]
_Callback = typing.Callable[[_Json], object]


##############################################################################
# Core: the protocol's numbers, its errors, and JSON-RPC framing
##############################################################################
# What travels is JSON-RPC 2.0 (jsonrpc.org/specification): a request {"jsonrpc": "2.0", "id",
# "method", "params"} gets one response with the same id, {"result"} or {"error": {"code",
# "message", "data"}}; a notification has no id and gets none. The capture's first frame on
# the stream, `event: endpoint`, is not JSON-RPC: it is the legacy transport's own (see HTTP).


# Handshake-era revisions, oldest first: compared by their place here, never as strings.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]
# 2025-03-26 basic/index: receivers MUST accept batches (JSON arrays of messages); 2025-06-18
# removed them.
BATCH_VERSIONS = ("2025-03-26",)

# JSON-RPC 2.0's error codes, and MCP's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002         # resources/read of a URI the server does not have
CONNECTION_CLOSED = -32000          # ours: the other side went away (never sent on the wire)
REQUEST_TIMEOUT = -32001            # ours: a request we sent was not answered in time
URL_ELICITATION_REQUIRED = -32042   # 2025-11-25: the user must visit URLs first (data.elicitations)

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class McpError(Exception):
    """A JSON-RPC error: raised to answer a request with `code` and `message`. Raised inside a
    tool it becomes an ``isError`` result: how a tool tells the model what went wrong."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class RequestError(McpError):
    """Raise from a tool to fail the request itself with this JSON-RPC error (code, message,
    data), never an isError result: the client sent what cannot be served."""


class UrlElicitationRequired(RequestError):
    """Raise from a handler that cannot go on until the user has visited some URLs (2025-11-25,
    -32042): `elicitations` are URL-mode elicitation/create params, each with its
    elicitationId. The request gets this JSON-RPC error, never an isError result."""

    def __init__(self, elicitations, message="This request needs you to visit a URL first."):
        super().__init__(URL_ELICITATION_REQUIRED, message, {"elicitations": list(elicitations)})


class _DuplicateKey(ValueError):
    pass


def _pairs(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):      # last-key-wins would let a message smuggle a second meaning
        raise _DuplicateKey
    return obj


def _no_constant(name):
    raise ValueError(name)          # NaN and Infinity are not JSON


def _finite(text):
    number = float(text)
    if number in (math.inf, -math.inf):
        raise ValueError(text)      # 1e400: JSON, yet no number the wire can carry back
    return number


_decoder = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_no_constant,
                            parse_float=_finite)
# (text, index) -> (value, its end), or StopIteration: what JSONDecoder.decode calls, less the two
# patterns it skips whitespace with (a twentieth of parsing a request)
_scan = vars(_decoder)["scan_once"]     # set on each decoder: typeshed does not know it


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
        data = data.strip(" \t\n\r")     # JSON's whitespace, around the one value
        value, end = _scan(data, 0)
        if end == len(data):
            return value
    except _DuplicateKey:
        raise McpError(INVALID_REQUEST, "Invalid request: duplicate key") from None
    # bad UTF-8, no value, NaN, 4300+ digit integers, nesting too deep
    except (ValueError, StopIteration, RecursionError):
        pass
    raise McpError(PARSE_ERROR, "Parse error")      # or more after the value


# Made once: json.dumps() with options builds a new encoder on every call.
_wire_encoder = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_text_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _chunks(encoder):
    """(value, 0) -> the pieces of its JSON text as `encoder` writes it, by json's C encoder made
    once: JSONEncoder.encode makes one at every call (a tenth of a stdio call's work, for its two
    encodings). Without the C module, or should its interface (json.encoder.c_make_encoder, the
    same from 3.10 to 3.13) ever change, the plain encoder. Its one difference: a value that
    holds itself is a RecursionError, not a ValueError."""
    make, made = getattr(json.encoder, "c_make_encoder", None), None
    if make is not None:
        try:
            made = make(None, encoder.default, json.encoder.encode_basestring_ascii if
                        encoder.ensure_ascii else json.encoder.encode_basestring, None,
                        encoder.key_separator, encoder.item_separator, False, False, False)
            works = "".join(made({"a": [1, "\u00e9"]}, 0)) == encoder.encode({"a": [1, "\u00e9"]})
        except Exception:   # noqa: BLE001 — another interface
            works = False
        if works and made is not None:
            return made

    def plain(value, _):
        return (encoder.encode(value),)
    return plain


_wire_chunks, _text_chunks = _chunks(_wire_encoder), _chunks(_text_encoder)


def encode(message):
    """One message as compact JSON bytes, no newline; ASCII, so a lone surrogate cannot break the
    wire."""
    return "".join(_wire_chunks(message, 0)).encode("ascii")


# JSON objects and arrays in one frame, outside its strings: more -> -32600 (HTTP 400), before
# parsing, as [[],[],...] parses to ~20 times its size
MAX_CONTAINERS = 1 << 16


def _request_from(data):
    """A peer's frame parsed, refused first if parsing it would multiply it: past MAX_CONTAINERS
    objects and arrays, counted by their ends. The count is cheap, and made exact only when it
    is high (strings hold brackets too); an open "[[[[" is a parse error, soon found."""
    if data.count(b"]") + data.count(b"}") > MAX_CONTAINERS:
        bare = _STRINGS.sub(b"", data)
        if bare.count(b"]") + bare.count(b"}") > MAX_CONTAINERS:
            raise McpError(INVALID_REQUEST,
                           f"Invalid request: over {MAX_CONTAINERS} objects and arrays")
    return decode(data)


# A JSON string, or an unterminated one to the end of the frame: every byte is looked at once,
# however the quotes fall (a pattern that needed the closing quote went quadratic on '"\\"]...').
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)


def _encode_safely(message):
    """encode(); what JSON cannot carry becomes an error for its request, or None (a notification).
    """
    try:
        return encode(message)
    except (TypeError, ValueError, RecursionError):
        _logger.error("a message is not JSON-serializable: %.200r", message)
        if "method" in message:
            return None
        return encode(_error(message.get("id"), INTERNAL_ERROR, "Internal error"))


def _encode_all(messages):
    """Messages as one JSON array: a batch's answers (JSON-RPC SHOULD send them together)."""
    encoded = [_encode_safely(message) for message in messages]
    return b"[" + b",".join(data for data in encoded if data is not None) + b"]"


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
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def _result(id_, result):
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _notification(method, params=None):
    if params is None:
        return {"jsonrpc": "2.0", "method": method}
    return {"jsonrpc": "2.0", "method": method, "params": params}


def _object(value) -> _Json:
    """`value` if it is a JSON object, else an empty one: a member a peer may have sent as
    anything, read without a check at every use."""
    if type(value) is dict:
        return value
    return {}


##############################################################################
# Core: HTTP, the legacy HTTP+SSE transport, as the capture shows it
##############################################################################
# The capture this project began from is VS Code talking to a server over HTTP+SSE (2024-11-05
# basic/transports):
#
#   C->S  GET /sse                                  the session's stream opens, and stays open
#   S->C  200 OK, text/event-stream
#   S->C  event: endpoint                           its first event names where to POST
#         data: /messages?sessionId=62ef...
#   C->S  POST /messages?sessionId=62ef...          initialize
#   S->C  202 Accepted                              each POST is answered at once, empty ...
#   S->C  event: message                            ... and its answer comes on the stream
#         data: {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-11-05",...}}
#   C->S  POST ...  notifications/initialized, then tools/list, tools/call getUsers ...
#   S->C  (the stream closes: the session ends with it)
#
# The two handlers below are that exchange; the session behind them is the next section, and
# the front door that reads requests and writes answers (`HttpServer`, `_Connection`) follows
# the registry. Streamable HTTP (2025-03-26 on, /mcp) serves the same session differently.


class _HttpSession:
    """A Session plus the HTTP streams its messages travel on (`sid` names it to the client).
    One without an id serves a single POST (--stateless, a 2026-07-28 request) and ends with
    it, as does a failed initialize's."""

    def __init__(self, server, sid, legacy=False, version=None):
        self.sid, self.legacy = sid, legacy
        self.posts = set()      # the _Streams answering POSTs that are still open
        self.standalone: _Stream | None = None  # the GET stream: legacy /sse, or GET /mcp
        self.kept = {}          # number -> a stream kept beyond its connection (resumable streams)
        self.last_active = _now()
        self.session = Session(server, self.send, version)

    def send(self, message, related):
        """What no POST's answer carries goes on the GET stream (legacy: everything)."""
        if message is None:     # a request ended unanswered: nothing to carry
            return
        if not self.legacy and related is not None and related not in self.session.replies:
            return      # its request is over (answered or cancelled): nothing belongs to it
        if self.standalone is not None and not self.standalone.closed:
            self.standalone.put(message)
        elif "method" in message and "id" in message:
            self.session._fail(message["id"], McpError(CONNECTION_CLOSED,
                                                       "No open stream can carry a request to the "
                                                       "client"))

    def quiet(self):
        """A Streamable HTTP session with nothing open or running: it may expire."""
        if self.legacy or self.session.running or self.posts:
            return False
        streams = [self.standalone, *self.kept.values()]
        return not any(stream.attached for stream in streams if stream)

    def close(self, cancel):
        self.session.close(cancel=cancel)
        for stream in [*self.posts, *self.kept.values(), self.standalone]:
            if stream:
                stream.close()
        self.posts.clear()
        self.kept.clear()


async def _sse_get(http, conn):
    """GET /sse: a new session, whose stream this response is. Its first event, `endpoint`, names
    where to POST: a fixed relative path, never built from the Host header. The session ends
    when the stream does. (`http` and `conn` are the front door's, below: `http.make_room` keeps
    to MAX_SESSIONS, `conn.start_sse` writes the response's head, `conn.fields` an event of our
    own, and `conn.hold` writes what the stream carries until it ends.)"""
    http.make_room()
    import secrets
    sid = http.node + secrets.token_hex(16)
    entry = http.sessions[sid] = http.own(_HttpSession(http.server, sid, legacy=True), conn)
    entry.standalone = _Stream(entry.session.account)
    conn.start_sse(conn.cors)
    endpoint = conn.fields({"event": "endpoint", "data": f"/messages?sessionId={sid}"})
    try:
        await conn.hold(entry.standalone, endpoint,
                        "(the GET /sse stream closed: the session ends with it)")
    finally:    # the stream was the session: it ends with it
        http.sessions.pop(sid, None)
        entry.close(cancel=False)
    return False    # (a route says whether its connection may carry another request: `_Route`)


async def _sse_post(http, conn):
    """POST /messages?sessionId=...: 202 at once, empty; the answer goes to the session's stream."""
    name, _, sid = conn.request.query.partition("=")
    ids = [sid]     # the one parameter, as clients send it; else each one named so
    if "&" in sid or name not in ("sessionId", "session_id"):
        ids = _SESSION_IDS.findall(conn.request.query)
    # Our ids are [node.]hex: anything else (escapes, CR/LF, a second id) is refused as it is.
    if len(ids) != 1 or not (len(ids[0]) <= MAX_SESSION_ID and ids[0].isascii()
                             and ids[0].replace(".", "", 1).isalnum()):
        raise _HttpError(400, "Missing or malformed sessionId")
    entry = http.find(conn, ids[0], legacy=True)
    message, size = _parsed_body(conn)
    # The 202 first: the answer goes to the stream, on another connection, and may be written
    # before `receive` returns (initialize is answered at once, and so is a quick call).
    conn.write(202, conn.cors, b"")
    entry.session.receive(message, size=size)
    return True


_SESSION_IDS = re.compile(r"(?:^|&)(?:sessionId|session_id)=([^&]*)")


def _parsed_body(conn):
    """A POST's body parsed, as a frame for Session.receive, and its size; 400 if it is not
    JSON."""
    size = len(conn.request.body)
    try:
        body = _request_from(conn.request.body)
    except McpError as e:
        raise _HttpError(400, e.message, e.code) from None
    finally:    # traced already; a stream may stay open for hours: it keeps none of it
        conn.request.body = b""
        if conn.body is not None:   # charged (`_read_body`)
            conn.release()
    if conn.auth is not None:   # a tool may need more of the token than the endpoint did
        conn.http.auth.step_up(conn.auth, body, conn.http.server)
    if type(body) is str:       # a JSON string is no message; handed on parsed, never decoded again
        return McpError(INVALID_REQUEST, "Invalid request"), size
    return body, size


##############################################################################
# Core: the session, one client's conversation whatever carries it
##############################################################################
# In the capture, everything after `event: endpoint` is one session: initialize, its answer,
# notifications/initialized, then tools/list and tools/call, until the stream drops. A Session
# is that conversation with no transport in it: frames go in at one door (`receive`), and every
# message out is handed to `send`. The lifecycle (2025-11-25 basic/lifecycle) is one table:
#
#   state        what the client may ask                   the server may notify unasked
#   new          initialize, ping                          no
#   initialized  anything the server offers                no: only a request's own messages, logs
#   operating    anything the server offers                yes
#   closed       nothing (the transport is gone)           no
#
# initialize answered moves it from new to initialized; notifications/initialized from
# initialized to operating; the transport's end, from any state to closed. A second
# initialize is refused (-32600): the session already has its version and capabilities.

_LIFECYCLE = {      # state -> (the methods the client may call, None: any; may the server notify)
    "new": (frozenset(("initialize", "ping")), False),
    "initialized": (None, False),
    "operating": (None, True),
    "closed": (frozenset(), False),
}
_TRANSITIONS = {    # (state, what happened) -> the next state
    ("new", "initialize"): "initialized",
    ("initialized", "notifications/initialized"): "operating",
}

TOOL_TIMEOUT = 300.0    # seconds a request may run: a tool then gets an isError result, anything
                        # else -32603, and it is cancelled (per server and per tool: `timeout=`)
# requests running in a session; more wait their turn, as many as the client's account holds
MAX_IN_FLIGHT = 256
MAX_QUEUED = 1000       # log and progress notifications from sync tools' threads not yet sent (the
                        # loop is held up: the client does not read); more are dropped
REPLY_TIMEOUT = 60.0    # seconds to wait for the answer to a request we send -> -32001


class _Peer:
    """What `Session` and `Client` do alike as JSON-RPC peers: number the requests they send,
    wait for each answer (on timeout the other side is told to stop), and fail every waiter
    when the connection ends. A transport reports ``_fail(id, error)`` (a request it was to
    carry can get no answer) and ``_closed(reason)`` (the connection has ended)."""

    def __init__(self) -> None:
        # id of a request we sent -> its answer
        self._pending: dict[_Any, asyncio.Future[_Any]] = {}
        self._ids = itertools.count(1)      # ids of the requests we send
        self._gone: str | None = None       # why the connection ended, once it has

    def _closed(self, reason):
        """The connection is gone: every waiting request fails now, and later ones at once."""
        self._gone = reason
        for id_ in list(self._pending):
            self._fail(id_, McpError(CONNECTION_CLOSED, reason))

    # Below: asking the other side (the client's requests, a server's own): not in the capture.
    def _abandon(self, id_, method, reason, related):
        """Tell the other side a request of ours is abandoned (`reason`: timeout or cancelled)."""

    async def _exchange(self, id_, method, params, timeout, send, related=None):
        """Send request `id_` with ``await send(message)`` and wait for its result."""
        if self._gone:
            raise McpError(CONNECTION_CLOSED, self._gone)
        message = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        try:
            encode(message)     # fail here, in the caller, rather than on the wire
        except (TypeError, ValueError, RecursionError) as e:    # the last: a value holds itself
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
            if future.done() and not future.cancelled():
                future.exception()  # the connection ended as the send failed: one error is told

    def _settle(self, message):
        """A response arrived: its waiter gets the result, or McpError."""
        future = self._pending.pop(message["id"], None)
        if future is None or future.done():
            return
        if "result" in message:
            future.set_result(message["result"])
            return
        error = _object(message["error"])
        future.set_exception(McpError(error.get("code", INTERNAL_ERROR),
                                      str(error.get("message", "error")),
                                      error.get("data")))

    def _fail(self, id_, error):
        future = self._pending.pop(id_, None)
        if future is not None and not future.done():
            future.set_exception(error)


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
    _current_tasks = vars(asyncio.tasks)["_current_tasks"]     # loop -> the task it runs now

    def _start_task(coroutine, loop):
        """3.10 and 3.11 have no eager tasks, so one is made as 3.12 makes it: the task's first
        step, which creating it put last in the loop's queue, is taken out and run now, with the
        task the caller runs in (an HTTP connection's) set aside meanwhile. These versions change
        no more, so their private names are safe here; another loop (no `_ready`, a task factory)
        gets a plain task, its first step on the loop's next turn."""
        task = loop.create_task(coroutine)
        queue = getattr(loop, "_ready", None)
        if not queue or getattr(queue[-1]._callback, "__self__", None) is not task \
                or _running_loop() is not loop:     # as 3.12: eager only on the running loop
            return task
        step = queue.pop()
        caller = _current_tasks.get(loop)
        if caller is not None:
            asyncio.tasks._leave_task(loop, caller)
        try:
            step._context.run(step._callback)   # the task's step, which handles what it raises
        finally:
            if caller is not None:
                asyncio.tasks._enter_task(loop, caller)
        return task


class _Handshake:
    """The handshake era's requests (2024-11-05 ... 2025-11-25): served in the session initialize
    opened, as its lifecycle allows (`_LIFECYCLE`), each by its method's handler. Another era may
    claim a request first (`_ERAS`): 2026-07-28's stand alone, each naming its version in its
    _meta (an extension, below); such an era gives the `key` and `versions` that claim a
    request (`Session._era`), `refusal(session, method, params)` (its own
    rules) and `run(session, method, handler, params, ctx)` (how it serves a request), and how
    its requests travel over HTTP (`claims_http`, `http_entry`, `streams_only`, `http_status`),
    where the handshake's ways are the core's own, and these two answers."""
    name = None     # its methods are `_Method`s with no era
    cancels_when_left = False   # over HTTP, a client that leaves does not cancel: the work finishes
    watches = False             # ... so a quiet answer is not looked at each second


_HANDSHAKE = _Handshake()
# the eras beside the handshake that may claim a request (`Session._era`)
_ERAS: list[_Any] = []
_ID_IN_USE = "Invalid request: id already in use"
_DROPPABLE = ("notifications/message", "notifications/progress")
_running_loop = asyncio._get_running_loop   # the running loop, or None (no RuntimeError)
_now = time.monotonic


class Session(_Peer):
    """One client's conversation with a `Server`, whatever carries it: all per-client state. A
    transport makes one per client, feeds it every frame (`receive`), reads on while it is
    `accepting` (again at `on_ready`), and `close`s it when the client is gone. Out goes
    ``send(message, related)``: `related` is the id of the client request it belongs to (its
    response, or sent while serving it), or None; ``send(None, id)``: that request ends with no
    response (it was cancelled). A stateless one (HTTP --stateless, `stateless_version`) needs no
    handshake.
    """

    def __init__(self, server, send, stateless_version=None):
        super().__init__()
        if not server.serving:      # hints that waited for names defined later: read now
            server.resolve()
        self.server, self._send = server, send
        self.protocol_version = stateless_version
        self.state = "operating" if stateless_version is not None else "new"
        self.client_capabilities, self.client_info = {}, {}
        self.log_level = "info"
        self.subscriptions = set()
        # Who the client is, as its transport can tell: `principal` sends its requests (HTTP: the
        # Authorization it came with, or the user its token names), `owner` is whose share of the
        # server's limits it uses (HTTP: its address, or that user), `auth` what was verified of it.
        self.principal, self.owner, self.auth = "", "", None
        # what the server holds for the client, in bytes: the session's own until a transport
        # names the client (HTTP: `HttpServer.own`), whose account its sessions share
        self.account = _Account(CLIENT_BYTES, server.memory)
        self.running = {}       # request id -> the task serving it
        self.waiting = {}       # request id -> (message, done): taken in, waiting for a slot (FIFO)
        self.replies = {}       # request id -> the reply its frame came with (see `receive`)
        # called when `accepting` may be true
        self.on_ready: typing.Callable[[], None] | None = None
        self.on_close: list[typing.Callable[[], object]] = []   # what ends with the session
        # each extension's own state for this session, by name
        self.extensions: dict[str, _Any] = {}
        self._cancelled = set()
        # request id -> (when it started, its method, its `_Method`, its params, its `done`): what
        # `_sweep` needs to know of it (a plain tuple: made for every request, it is cheap)
        self._running: dict[_Any, tuple[float, str, _Any, _Json, _Any]] = {}
        self._timer: _Timer | None = None   # ends the requests that run past their time limit
        self._crossing = 0      # messages from tools' threads not yet sent by the loop
        self.dropped = 0        # ... and log or progress notifications dropped past MAX_QUEUED
        self._lock = threading.Lock()
        self.loop: _Any = None  # the event loop, from the first frame on
        server.sessions.add(self)

    def advance(self, event):
        """The lifecycle moves on (`_TRANSITIONS`), or stays where it is."""
        self.state = _TRANSITIONS.get((self.state, event), self.state)

    def receive(self, frame, done=None, reply=None, size=0):
        """The one door: a frame of JSON text (bytes or str) or parsed (a dict; a list is a batch;
        `size`: its bytes). All is answered, bad input too: nothing raises. Past MAX_IN_FLIGHT
        running, requests wait their turn in order (see `accepting`). A frame with a request in it
        is charged to the client's account (its bytes, and MESSAGE_COST a message) until its work
        is over; one that does not fit is refused whole. Answers go to ``reply(message)`` if given
        (HTTP: the POST's own response; a reply returning False cannot carry a notification, which
        goes to `send`), else to `send`; ``done()`` when the frame's work is over. Returns how
        many requests it took in; None if it refused the frame whole (a batch it does not accept).
        """
        if self.state == "closed":
            if done:
                done()
            return 0
        if self.loop is None:
            self.loop = _running_loop()
        if isinstance(frame, str):
            frame = frame.encode()
        message = frame
        if isinstance(frame, (bytes, bytearray)):
            size = len(frame)
            try:
                message = _request_from(frame)
            except McpError as e:
                message = e
        # A request is held until answered, within half the account: the other half is for what
        # requests make (answers), and for what the client must still get through (a cancel, an
        # answer to our request, a connection to send them on). A notification or a response is
        # done with at once.
        if type(message) is list:
            return self._batch(message, size, done, reply)
        if type(message) is dict and "id" in message and "method" in message:
            charge = size + MESSAGE_COST
            if not self.account.take(charge, 2):
                refusal = self.account.refusal(charge, 2)
                id_ = message["id"] if _is_id(message["id"]) else None
                self._over(_error(id_, INTERNAL_ERROR, refusal), None, done, reply)
                return 0
            done = functools.partial(self._given, self.account, charge, done)
        return self._take(message, done, reply, None)

    def _given(self, account, charge, done):
        """A frame's work is over: its charge goes back to the account it was taken from (HTTP's
        initialize changes it: `own`), reading may go on, then `done`. (Bound with
        functools.partial: a closure would cost a call more per request.)"""
        account.give(charge)
        if self.on_ready is not None and not self.waiting and self.accepting:
            self.on_ready()
        if done:
            done()

    def _admit(self, message, batched):
        """What a message is (`classify`), or McpError: a request may not reuse a live id (nor
        one of its batch's: `batched`), and initialize and another era's requests come alone."""
        if type(message) is McpError:
            raise message
        kind = classify(message)
        if kind != "request":
            return kind
        id_ = message["id"]
        if batched is not None:
            another_era = self._era(message.get("params")) is not _HANDSHAKE
            if message["method"] == "initialize" or another_era:
                raise McpError(INVALID_REQUEST, "Invalid request: initialize and 2026-07-28 "
                                                "requests may not be batched")
            if id_ in batched:
                raise McpError(INVALID_REQUEST, _ID_IN_USE)
            batched.add(id_)
        if id_ in self.running or id_ in self.waiting:
            raise McpError(INVALID_REQUEST, _ID_IN_USE)     # two answers would cross
        return kind

    def _take(self, message, done, reply, batched):
        try:
            kind = self._admit(message, batched)
        except McpError as e:
            # Only a request's id is the client's own: never echo the id of a broken reply.
            id_ = None
            if type(message) is dict and not self._broken_reply(message) \
                    and _is_id(message.get("id")):
                id_ = message["id"]
            self._over(_error(id_, e.code, e.message), None, done, reply)
            return 0
        if kind != "request":
            self._handle(message, kind, done)
            return 0
        id_ = message["id"]
        if reply is not None:
            self.replies[id_] = reply
        if len(self.running) < MAX_IN_FLIGHT and not self.waiting:
            self._handle(message, kind, done)
        else:   # as many may wait as the client's account holds (`receive` charged it)
            self.waiting[id_] = message, done
        return 1

    def _handle(self, message, kind, done):
        """Act on one classified message; a bug in here is -32603 on every transport, not the end.
        """
        method, params, id_ = message.get("method"), message.get("params", {}), message.get("id")
        try:
            if kind == "response":
                self._settle(message)
            elif kind == "notification":
                self._notified(method, params)
            else:
                self._start(id_, method, params, done)
                return
        except Exception:
            _logger.exception("failed to handle a %s %r", kind, method)
            if kind == "request" and id_ not in self.running:
                self._over(_error(id_, INTERNAL_ERROR, "Internal error"), id_, done)
                return
        if done:
            done()

    def _notified(self, method, params):
        handler = _NOTIFICATIONS.get(method)
        if handler and (type(params) is dict or params is None):   # some clients send null
            handler(self, params or {})
        self.advance(method)

    def _start(self, id_, method, params, done):
        """A request is refused now, or starts: initialize here and now (the handshake is agreed
        before the next message is read), anything else in a task of its own."""
        era = self._era(params)
        problem = self._refusal(method, params, era)
        if problem:
            self._over(_error(id_, *problem), id_, done)
        elif method == "initialize":
            _without_waiting(self._serve(id_, method, params, done, era))
        else:   # a task: the handler may wait, and needs a task to (asyncio.timeout, an ask)
            task = _start_task(self._serve(id_, method, params, done, era), self.loop)
            if not task.done():     # it waits (or, on a loop of another kind, has yet to begin)
                self.running[id_] = task
                # The timer that ends what runs past its time limit (`_sweep`), due by this
                # request's end at the latest. Only a request that waits needs one: one answered
                # in its first step costs no timer, and a timer in the event loop makes
                # each of its turns dearer.
                if not _METHODS[method].endless:
                    if self._timer is None:
                        self._timer = _Timer(self.loop)
                    self._timer.by(self.loop.time() + self._limit(method, params), self._sweep)

    def _era(self, params) -> _Any:
        """The era a request belongs to: another's that claims it (2026-07-28's requests stand
        alone: each names its version in its _meta, under the era's `key`; or its session is of
        one of the era's `versions`, over HTTP a POST of 2026-07-28), else the handshake's,
        served in this session. Read here, as data: no era's code runs for a request not its."""
        if not _ERAS:
            return _HANDSHAKE
        meta = params.get("_meta") if type(params) is dict else None
        for era in _ERAS:
            if self.protocol_version in era.versions or (type(meta) is dict and era.key in meta):
                return era
        return _HANDSHAKE

    def _refusal(self, method, params, era):
        """Why a request cannot run, as (code, message[, data]), or None."""
        if type(params) is not dict:
            return INVALID_PARAMS, "Invalid params: expected an object"
        if era is not _HANDSHAKE:   # another era's own rules (2026-07-28: its _meta's)
            problem = era.refusal(self, method, params)
            if problem:
                return problem
        entry = _METHODS.get(method)
        if entry is None or not self.server.offers(entry.capability) \
                or entry.era not in (None, era.name):
            return METHOD_NOT_FOUND, f"Method not found: {method[:100]!r}"
        if era is _HANDSHAKE:
            allowed = _LIFECYCLE[self.state][0]     # what the lifecycle allows now
            if allowed is not None and method not in allowed:
                return INVALID_PARAMS, "Session not initialized: send initialize first"
        # a synchronous caller: nothing to run it on
        if self.loop is None and method != "initialize":
            return INTERNAL_ERROR, "No event loop is running"
        return None

    async def _serve(self, id_, method, params, done, era):
        if id_ in self._cancelled:      # cancelled before it started: no answer
            self._finished(id_, None, done)
            return
        if self.account.over or self.server.memory.over:    # its answer would be dropped too:
            flooded = self.account.flooded() or self.server.memory      # not run at all
            self._finished(id_, _error(id_, INTERNAL_ERROR, flooded.why()), done)
            return
        entry = _METHODS[method]
        ctx = Context(self, id_, params.get("_meta"))
        start = 0.0
        if self.loop is not None:
            start = self.loop.time()
        running = self._running[id_] = (start, method, entry, params, done)
        try:
            if era is _HANDSHAKE:   # served as its method says (another era wraps the handler)
                result = await entry.handler(self, params, ctx)
            else:
                result = await era.run(self, method, entry.handler, params, ctx)
            response = _result(id_, result)
        except McpError as e:
            response = _error(id_, e.code, e.message, e.data)
        except asyncio.CancelledError:
            # answered already (see `_end`): nothing more
            if self._running.get(id_) is not running:
                raise
            if id_ in self._cancelled or self.state == "closed":
                del self._running[id_]
                self._finished(id_, None, done)
                raise
            _logger.error("request %r (%s): an inner task was cancelled", id_, method)
            response = _error(id_, INTERNAL_ERROR, "Internal error")
        except BaseException:   # SystemExit too (argparse in a handler): never the server's end
            _logger.exception("request %r (%s) failed", id_, method)
            response = _error(id_, INTERNAL_ERROR, "Internal error")
        if self._running.get(id_) is not running:   # it ignored its cancel, and its answer is given
            return
        del self._running[id_]
        self._finished(id_, response, done)

    def _limit(self, method, params):
        """Seconds a request may run: its tool's `timeout`, else the server's, else TOOL_TIMEOUT."""
        if method == "tools/call":
            name = params.get("name")
            tool = self.server.tools.get(name) if type(name) is str else None
            if tool is not None and tool.timeout is not None:
                return tool.timeout
        if self.server.timeout is not None:
            return self.server.timeout
        return TOOL_TIMEOUT

    def _finished(self, id_, response, done):
        # Done here, not in a done callback: that would cost a turn of the loop per request.
        self.running.pop(id_, None)     # before the answer: the client may reuse the id at once
        if response is None or id_ in self._cancelled:
            self._cancelled.discard(id_)
            self._answer(None, id_)     # cancelled: no response, even if the handler finished
        elif self.state != "closed":
            self._answer(response, id_)
        if self.waiting:    # the next starts on the next turn: one answered at once would recurse
            self.loop.call_soon(self._start_waiting)
        if done:
            done()

    def _answer(self, message, related, reply=None):
        """Every outgoing message passes here: to the reply of its request's frame if any, else
        `send`."""
        if reply is None and related is not None:
            reply = self.replies.get(related)
        if reply is None:
            self._send(message, related)
        elif message is None or "method" not in message:    # the answer: that request is over
            self.replies.pop(related, None)
            reply(message)
        elif not reply(message):
            self._send(message, related)

    def _closing(self):
        for end in list(self.on_close):
            end()

    def close(self, cancel=False):
        """End the session: fail our pending requests; cancel running ones if asked
        (a vanished connection is not a cancel: by default the work finishes)."""
        self.state = "closed"
        self._closing()
        self.server.sessions.discard(self)
        self._send, self.on_ready = _nowhere, None     # no cycle through the transport
        if self._timer is not None and not self._running:
            self._timer.cancel()
        self._closed("Connection closed")
        if cancel:
            for id_ in list(self.running) + list(self.waiting):
                self.cancel(id_)

    # Below: the rest of a session, which the capture never needs: batches, back-pressure
    # (`accepting`), time limits, stopping, the waiting queue, cancellation, the server's own
    # messages.
    def _batch(self, batch, size, done, reply):
        """A batch (2025-03-26 alone): each message taken in as if alone, the frame's work over
        when all of theirs is; or one error for all, if the batch cannot be taken."""
        why = self._batch_refused(batch)
        charge = size + MESSAGE_COST * len(batch)
        if not why and not self.account.take(charge, 2):
            why = self.account.refusal(charge, 2)
        if why:     # JSON-RPC: a batch that cannot be taken gets one error, not an array
            self._over(_error(None, INVALID_REQUEST, "Invalid request: " + why), None, done, reply)
            return None
        done = functools.partial(self._given, self.account, charge, done)
        left = [len(batch)]

        def one_done():
            left[0] -= 1
            if not left[0] and done:
                done()
        seen = set()    # a batch's ids: one twice in it is refused, answered or not
        return sum([self._take(item, one_done, reply, seen) for item in batch])

    def _batch_refused(self, batch):
        """Why a batch is not taken, or None: it is taken whole, or not at all."""
        if not batch:
            return "empty batch"
        if self.protocol_version not in BATCH_VERSIONS:
            return "batches are not accepted"
        return None

    @property
    def accepting(self):
        """Whether a transport should read on: while half the client's account is free (the rest
        is for what the requests taken make: their answers), and while the client owes us an
        answer, which must get in (requests beyond are then refused if they do not fit);
        `on_ready` says when to go on."""
        return self.account.used * 2 <= self.account.limit or bool(self._pending)

    def _sweep(self):
        """The time limit of a running request is up: those past theirs end, answered; the timer
        is set for the next one's."""
        now, next_due = self.loop.time(), None
        for id_, (started, method, entry, params, _) in list(self._running.items()):
            if entry.endless or id_ in self._cancelled or id_ not in self.running:
                continue
            limit = self._limit(method, params)
            if now - started < limit:
                due = started + limit - now
                next_due = due if next_due is None else min(next_due, due)
                continue
            _logger.warning("request %r (%s) ran past %g s: cancelled", id_, method, limit)
            if method == "tools/call":
                name = params.get("name")
                answer = _result(id_,
                                 _tool_error(f"Tool '{name}' did not finish within {limit:g} s."))
            else:
                answer = _error(id_, INTERNAL_ERROR, "Request timed out")
            self._end(id_, answer)
        if next_due is not None and self._timer is not None:
            self._timer.by(now + next_due, self._sweep)

    def _end(self, id_, response):
        """Answer a running request now, and cancel it: its id and slot are free again. What it
        does after goes unheard (a handler may ignore the cancel, a thread cannot be stopped)."""
        done = self._running.pop(id_)[-1]
        task = self.running.pop(id_)
        self._over(response, id_, done)
        task.cancel()
        if self.waiting:
            self.loop.call_soon(self._start_waiting)

    async def stop(self, grace=0.0, reason="Server shutting down"):
        """The server is going away: what was taken in may finish within `grace` seconds; every
        request then left is answered -32603 `reason`, and cancelled. What lives as long as the
        session (`on_close`) ends at once."""
        self._closing()
        try:
            await self.drain(grace)
        finally:    # a cancel (a signal during the grace) ends the grace, not the answers
            for id_ in list(self.waiting):
                self._over(_error(id_, INTERNAL_ERROR, reason), id_, self.waiting.pop(id_)[1])
            for id_ in list(self._running):
                if id_ not in self._cancelled and id_ in self.running:
                    self._end(id_, _error(id_, INTERNAL_ERROR, reason))

    def _start_waiting(self):
        while self.waiting and len(self.running) < MAX_IN_FLIGHT and self.state != "closed":
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
        # else its task has not begun (3.10, 3.11): it sees the cancel then
        if id_ in self._running:
            self.running[id_].cancel()

    async def drain(self, timeout=None):
        """Wait until every request taken in has been answered (or `timeout` s passed)."""
        loop = asyncio.get_running_loop()
        end = math.inf
        if timeout is not None:
            end = loop.time() + timeout
        while self.state != "closed":
            # What was answered already (cancelled) is not waited for, unless it holds
            # the slots a waiting request needs.
            live = [task for id_, task in self.running.items() if id_ not in self._cancelled]
            left = end - loop.time()
            if not (live or self.waiting) or left <= 0:
                return
            if left == math.inf:
                left = None
            if live or len(self.running) >= MAX_IN_FLIGHT:
                await asyncio.wait(live or list(self.running.values()), timeout=left,
                                   return_when=asyncio.FIRST_COMPLETED)
            else:
                await asyncio.sleep(0)      # a waiting request starts on the next turn

    def _over(self, message, related, done, reply=None):
        """The last word on a message: answer it, and tell its transport its work is done."""
        self._answer(message, related, reply)
        if done:
            done()

    def notify(self, method, params=None, related=None):
        """Send a notification (thread-safe: sync tools run in threads). The lifecycle: before
        notifications/initialized, only what a request causes (`related`), and log messages."""
        if self.state == "closed":
            return
        if not _LIFECYCLE[self.state][1] and related is None and method != "notifications/message":
            return
        message = _notification(method, params)
        loop = self.loop
        if loop is None or _running_loop() is loop:
            self._answer(message, related)
            return
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
            _logger.warning("dropped %d log/progress notifications from tools: the client is not "
                            "reading", dropped)
        if self.state != "closed":
            self._answer(message, related)

    async def request(self, method, params=None, related=None, timeout=None):
        """Send a request to the client and wait for its result (or McpError), REPLY_TIMEOUT at
        most."""
        async def send(message):
            self._answer(message, related)
            if self.on_ready:   # we owe the client's answer a way in
                self.on_ready()
        return await self._exchange(next(self._ids), method, params, timeout or REPLY_TIMEOUT, send,
                                    related)

    def _abandon(self, id_, method, reason, related):
        self.notify("notifications/cancelled", {"requestId": id_, "reason": reason}, related)

    def _broken_reply(self, message):
        """Whether an invalid message has no "method", so may be a broken reply to a
        request of ours (its id is then ours, not the client's); its waiter fails now."""
        if type(message) is not dict or "method" in message:
            return False
        if _is_id(message.get("id")):
            self._fail(message["id"],
                       McpError(CONNECTION_CLOSED, "Invalid response from the client"))
        return True


# Memory runs out by bytes, not by messages: one small frame can ask for answers a thousand times
# its size. So what the server holds on a client's behalf (a frame taken in until its work is
# over, answers not yet written, a stream's backlog and replay, a connection's buffers) is
# charged to that client's account, and all of it to the server's. A charge past either is
# refused, and the client is told which bound it met; every other client is served as before.
# "A client" is `Session.owner`: the OAuth user, else the address; on stdio, the session.
CLIENT_BYTES = 64 << 20     # bytes held for one client
SERVER_BYTES = 512 << 20    # ... and for all of them together
MESSAGE_COST = 1024         # bytes charged per message besides its own: what parsing it makes


class _Account:
    """Bytes held for one client within `limit`, and within its `parent`'s (the server's): `take`
    charges if both have room, `give` returns. The client's `Client` keeps one too, of what its
    server makes it hold."""

    def __init__(self, limit, parent=None, name="this client"):
        self.used, self.limit, self.parent, self.name = 0, limit, parent, name
        self.drops = 0      # messages dropped for want of room (`dropped`)
        self.over = False   # one was, and half of the limit is not free again since (`flooded`)

    def take(self, size, part=1):
        """Charge `size` bytes: False, and nothing charged, if they do not fit (in the first
        1/`part` of each limit: see `Session.receive`)."""
        account = self     # a loop, not a call per account: this is paid on every request
        while account is not None:
            if account.used + size > account.limit // part:
                return False
            account = account.parent
        account = self
        while account is not None:
            account.used += size
            account = account.parent
        return True

    def give(self, size):
        account = self
        while account is not None:
            account.used -= size
            if account.over and account.used * 2 <= account.limit:
                account.over = False
            account = account.parent

    def hold(self, size):
        """Charge `size` bytes that cannot be refused (the rest of a line begun on the wire): the
        account may pass its limit by that much."""
        account = self
        while account is not None:
            account.used += size
            account = account.parent

    def refusal(self, size, part=1):
        """Why `size` bytes were refused, in one line naming the bound."""
        return self._refusing(size, part).why(part)

    def _refusing(self, size, part=1):
        """The account that has no room for `size` more bytes: this one, else the server's."""
        if self.parent is not None and self.used + size <= self.limit // part:
            return self.parent
        return self

    def why(self, part=1):
        bound = f"{self.limit} bytes"
        if part > 1:
            bound = f"{self.limit // part} bytes of its {self.limit} for requests"
        return (f"Over the memory {self.name} may hold ({bound}, {self.used} held now); try "
                "again once earlier answers are read")

    def flooded(self):
        """The account (this one, or the server's) that dropped a message for want of room, and
        has not had half of it free since, else None. What runs meanwhile would be dropped too:
        a request is then refused before it runs."""
        if self.over:
            return self
        if self.parent is not None and self.parent.over:
            return self.parent
        return None

    def dropped(self, size):
        """Count a message of `size` bytes dropped for want of room: the refusal, logged at the
        1st, 2nd, 4th, 8th... drop (a client that floods us does not flood the log too)."""
        account = self._refusing(size)
        account.over = True
        refusal = account.why()
        self.drops += 1
        if self.drops & (self.drops - 1) == 0:
            _logger.warning("%d messages dropped in all for %s, the last of %d bytes: %s",
                            self.drops, self.name, size, refusal)
        return refusal


def _dropped(account, response, size):
    """The error that goes out in place of `response` (`size` bytes), dropped whole for want of
    room in the client's `account`."""
    refusal = account.dropped(size)
    return _error(response["id"], INTERNAL_ERROR, "The answer was dropped: " + refusal)


class _Timer:
    """A timer of the event loop's, moved cheaply: ``set(seconds, action)`` calls `action` then,
    unless set again or cleared first; ``by(when, action)``: at `when` (the loop's time) at the
    latest, so it only ever brings it nearer.
    Moving it later is an attribute write: the loop's own timer is armed again only when it
    would fire too late (a call_later per read or per request cost a fifth of a request's work:
    cancelled handles pile up in the loop's heap). One mechanism for every timeout here."""

    def __init__(self, loop):
        self.loop = loop
        # the loop's clock: asyncio's own loops read time.monotonic (called here, a call less)
        self.clock = loop.time
        if getattr(loop.time, "__func__", None) is asyncio.BaseEventLoop.time:
            self.clock = time.monotonic
        self.when: float | None = None
        self.action: _Any = None
        self.handle: asyncio.TimerHandle | None = None
        self.armed = math.inf   # when the loop's timer fires (no call of handle.when() to ask)

    def set(self, seconds, action):
        when = self.clock() + seconds
        self.when, self.action = when, action
        if self.armed > when:
            self._arm()

    def by(self, when, action):
        if self.when is None or when < self.when:
            self.when, self.action = when, action
            if self.armed > when:
                self._arm()

    def clear(self):
        self.when = None

    def cancel(self):
        """Its owner is over: the loop's timer goes too, and the action (no reference cycle
        through it keeps its owner alive)."""
        self.when = self.action = None
        if self.handle is not None:
            self.handle.cancel()
            self.handle, self.armed = None, math.inf

    def _arm(self):
        if self.handle is not None:
            self.handle.cancel()
        self.handle, self.armed = self.loop.call_at(self.when, self._fire), self.when

    def _fire(self):
        self.handle, self.armed = None, math.inf
        if self.when is None:
            return
        if self.clock() < self.when:    # moved later meanwhile
            self._arm()
            return
        self.when = None
        self.action()


def _nowhere(*args):
    """Where a closed session's messages go."""


class Context:
    """What a handler knows of the request it serves, and how it talks back. Declare a parameter
    annotated ``Context`` to receive one. `log` and `progress` may be awaited or not; `sample`,
    `elicit` and `list_roots` are coroutines (from a sync tool: ``ctx.run(ctx.sample(...))``):
    in a session they send a request to the client and wait for its answer.

    The extensions change how an ask travels, never how a handler is written. A 2026-07-28
    request has no session to ask in: the server asks by answering (input_required), the client
    calls again with the answers, and the handler runs again from the start, each ask then
    returning its answer at once (asks are told apart by `key`, by default their order); so wrap
    what must happen only once per request (a payment, an id) in `once`. A call that became a
    task (`detach`) asks in the task, and the client answers with tasks/update."""

    def __init__(self, session: Session, request_id: str | int | None = None,
                 meta: _Any = None) -> None:
        self.session, self.request_id = session, request_id
        self.meta = {}
        if type(meta) is dict:
            self.meta = meta
        token = self.meta.get("progressToken")     # a string or a number, never a bool
        self.progress_token = token if type(token) in (str, int, float) else None
        self._last_progress: float | None = None
        # The caller's verified token (over HTTP with auth: subject, scopes, client_id, claims),
        # else None: this request's, which a later request of the same user cannot change.
        self.auth = session.auth
        self.version: str | None = None         # a request of another era: its own protocol version
        self.client_capabilities: _Json = session.client_capabilities   # what the client can do
        # the least level it wants logged (None: the session's)
        self.log_level: str | None = None
        self.kept: _Json = {}                   # what `once` kept
        self.asks = _ask_in_session             # how an ask travels (the extensions change it)
        self.extensions: dict[str, _Any] = {}   # each extension's own state for this request

    @property
    def task_id(self) -> str | None:
        """The id of the task this call became (the tasks extension's `detach`), else None."""
        return self.extensions.get("task")

    def log(self, level: str, data: _Any, logger: str | None = None) -> typing.Awaitable[None]:
        """Send a notifications/message to the client if `level` passes its filter
        (logging/setLevel; 2026-07-28: only if the request asked, with a logLevel in its _meta)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {LOG_LEVELS}")
        least = self.log_level or self.session.log_level
        if least in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index(least):
            params = {"level": level, "data": data}
            if logger:
                params["logger"] = logger
            self.session.notify("notifications/message", params, self.request_id)
        return _DONE

    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> typing.Awaitable[None]:
        """Report progress; sent only when the client asked (progressToken)."""
        if self.progress_token is None:
            return _DONE
        if self._last_progress is not None and progress <= self._last_progress:
            return _DONE        # basic/utilities/progress: it MUST increase with each notification
        self._last_progress = progress
        params = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.session.notify("notifications/progress", params, self.request_id)
        return _DONE

    def close_sse_stream(self) -> None:
        """Over HTTP, in a 2025-11-25 session: end the SSE response this request is answered on
        now (resumable streams: the client resumes it with GET and Last-Event-ID, and the rest
        comes there, so that a long call outlives proxies that cut long responses, SEP-1699)."""
        if "Context.close_sse_stream" in _PROVIDED:
            _PROVIDED["Context.close_sse_stream"](self)

    async def sample(self, messages: str | list[_Json], max_tokens: int = 1000,
                     key: str | None = None,
                     **options: _Any) -> _Json:
        """Ask the client's model: sampling/createMessage. `messages` may be a string."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": text(messages)}]
        params = {"messages": messages, "maxTokens": max_tokens}
        params.update((_camel(name), value) for name, value in options.items())
        return await self.asks(self, "sampling", "sampling/createMessage", params, key)

    async def elicit(self, message: str, schema: _Json, key: str | None = None) -> _Json:
        """Ask the user for input (form mode): returns {"action", "content"?}."""
        if not isinstance(schema, dict) or "properties" not in schema:
            schema = {"type": "object", "properties": schema or {}}
        return await self.asks(self, "elicitation", "elicitation/create",
                               {"message": message, "requestedSchema": schema}, key)

    async def elicit_url(self, message: str, url: str, elicitation_id: str | None = None,
                         key: str | None = None) -> _Json:
        """Send the user to `url` (URL mode, 2025-11-25: for what must not pass through the
        client, such as a password or a payment). Returns {"action"}: accept only means
        the user agreed to go. Tell the client when the interaction there is over with
        `elicitation_complete(elicitation_id)`, or raise UrlElicitationRequired."""
        import secrets
        params = {"mode": "url", "message": message, "url": url,
                  "elicitationId": elicitation_id or secrets.token_urlsafe(16)}
        return await self.asks(self, "elicitation", "elicitation/create", params, key)

    def elicitation_complete(self, elicitation_id: str) -> None:
        """notifications/elicitation/complete: the URL interaction `elicitation_id` is over."""
        self.session.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})

    async def list_roots(self, key: str | None = None) -> list[_Json]:
        """The client's roots (file:// URIs it lets the server look at)."""
        answer = await self.asks(self, "roots", "roots/list", {}, key)
        return answer.get("roots", [])

    async def once(self, key: str, fn: typing.Callable[..., _Any], *args: _Any) -> _Any:
        """``fn(*args)`` (sync or async), run once per request however many rounds it takes
        (see above); later rounds get the value it returned. In 2026-07-28 the value travels
        in requestState, which the client can read: JSON, and nothing secret."""
        if key not in self.kept:
            value = fn(*args)
            if asyncio.iscoroutine(value):
                value = await value
            self.kept[key] = value
        return self.kept[key]

    async def detach(self) -> bool:
        """Make this call a task now (the tasks extension; else it becomes one after TASK_AFTER s):
        the client gets its task id and polls. True once it is one; False if it cannot be (its
        tool has no ``task=``, or the request did not declare the extension): the call then goes
        on as it was."""
        detach = self.extensions.get("detach")
        if detach is None:
            return False
        return bool(await detach())

    def run(self, coroutine: typing.Coroutine[_Any, _Any, _T]) -> _T:
        """From a sync tool's thread: run `coroutine` on the session's loop and wait."""
        assert self.session.loop, "a tool's thread runs beside a loop"
        return asyncio.run_coroutine_threadsafe(coroutine, self.session.loop).result()


def _lacks(declared, capability, params):
    """What of `capability` the client must have declared for this ask and did not, as (what,
    the capabilities it needs), or None. 2025-11-25: tools in a sampling request and URL-mode
    elicitation only to a client that said it takes them ({} for elicitation is form alone)."""
    sub = None
    if "tools" in params:
        sub = "tools"
    elif params.get("mode") == "url":
        sub = "url"
    elif capability == "elicitation" and type(declared) is dict and declared:
        sub = "form"
    if sub is None:
        if declared is None:
            return capability, {capability: {}}
        return None
    if type(declared) is not dict or declared.get(sub) is None:
        return f"{capability}.{sub}", {capability: {sub: {}}}
    return None


async def _ask_in_session(ctx, capability, method, params, key=None):
    """An ask of the handshake era: a request to the client in the session, whose answer must be
    of the shape the spec gives."""
    lacking = _lacks((ctx.client_capabilities or {}).get(capability), capability, params)
    if lacking:
        raise McpError(METHOD_NOT_FOUND, f"The client does not support {lacking[0]}.")
    answer = await ctx.session.request(method, params, ctx.request_id)
    problem = _answer_problem(method, params, answer)
    if problem:
        raise McpError(INVALID_PARAMS, f"The client's answer to {method} is malformed: {problem}")
    return answer


def _answer_problem(method, params, answer):
    """What is wrong with the client's answer to what the server asked, or None: a
    handler gets only answers of the shape the spec gives (elicited content as asked)."""
    if type(answer) is not dict:
        return "expected an object"
    if method == "elicitation/create":
        if answer.get("action") not in ("accept", "decline", "cancel"):
            return "action must be accept, decline or cancel"
        content = answer.get("content", {})
        if type(content) is not dict:
            return "content must be an object"
        if answer["action"] == "accept" and "requestedSchema" in params:
            return validate(content, params["requestedSchema"])
        return None
    if method == "sampling/createMessage":
        if type(answer.get("content")) not in (dict, list) or type(answer.get("role")) is not str \
                or type(answer.get("model")) is not str:
            return "role and model must be strings, content an object or a list"
        return None
    roots = answer.get("roots")     # roots/list
    if type(roots) is list and all(type(root) is dict and type(root.get("uri")) is str
                                   for root in roots):
        return None
    return "roots must be a list of objects with a uri"


class _Done:
    """Lets ``ctx.log(...)`` be written with or without ``await``."""

    def __await__(self) -> typing.Generator[None, None, None]:
        yield from ()


_DONE = _Done()


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


##############################################################################
# Core: method handlers, what each request does
##############################################################################
# Each handler takes (session, params, ctx) and returns the result, or raises McpError for a
# JSON-RPC error. `_METHODS` says which serves which method, and what the server must offer
# for it (2025-11-25 server/*: a server without tools answers tools/list -32601).

PAGE_SIZE = 100         # items per tools/resources/prompts list page (a cursor names the next)
MAX_URI = 8 * 1024      # characters in a URI a client subscribes to; longer -> -32002
MAX_SUBSCRIPTIONS = 1000    # resource subscriptions per session; more -> -32602

# What initialize keeps of the client: the capabilities the server acts on (it asks for roots,
# sampling or elicitation only if they were declared), and clientInfo's Implementation fields.
_CLIENT_CAPABILITIES = ("roots", "sampling", "elicitation", "experimental", "tasks")
_CLIENT_INFO = ("name", "version", "title", "description", "websiteUrl")
# a list method -> the key of the items in its result (the client and the command line read it too)
_LISTS_OF = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts",
             "resources/templates/list": "resourceTemplates"}


async def _initialize(session, params, ctx):
    """The handshake (basic/lifecycle): answered before anything else runs (it never waits), so
    that every later message sees what was agreed. The capture's first POST, answered on the
    stream: the version both speak, what each side can do, and who the server is."""
    if session.state != "new":      # one handshake per session (SECURITY.md R13)
        raise McpError(INVALID_REQUEST, "Invalid request: already initialized")
    version, caps = params.get("protocolVersion"), params.get("capabilities")
    info = params.get("clientInfo")
    # A malformed initialize is -32602, never a crash (PY CVE-2025-53366: 500s until restart).
    if type(version) is not str or type(caps) is not dict or type(info) is not dict:
        raise McpError(INVALID_PARAMS, "Invalid params: initialize needs protocolVersion, "
                                       "capabilities and clientInfo")
    # Echo a version we speak; otherwise offer our newest (basic/lifecycle, version negotiation:
    # MUST echo a supported one, else SHOULD offer the latest; the client decides, never an error).
    if version in PROTOCOL_VERSIONS:
        session.protocol_version = version
    else:
        session.protocol_version = LATEST_PROTOCOL_VERSION
    # Kept for the session's life: only what is used, and small (4 MB of {} cost 96 MiB).
    session.client_capabilities = {key: _small(caps[key]) for key in _CLIENT_CAPABILITIES
                                   if key in caps}
    session.client_info = {key: value[:256] for key, value in info.items()
                           if key in _CLIENT_INFO and type(value) is str}
    session.advance("initialize")   # requests may come now; notifying waits for initialized
    return _introduce(session.server, protocolVersion=session.protocol_version,
                      serverInfo=session.server.info)


def _introduce(server, **first):
    """What initialize (and 2026-07-28's server/discover) says of the server: `first`, then its
    capabilities and instructions."""
    result = {**first, "capabilities": server.capabilities()}
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def _small(value, limit=4096):
    """A client's JSON value to keep: itself if its text is at most `limit` bytes, else {}."""
    try:
        if len(encode(value)) <= limit:
            return value
    except (TypeError, ValueError, RecursionError):
        pass
    return {}


async def _ping(session, params, ctx):
    """ping: an empty result, at any time, before initialize too (basic/utilities/ping: the
    receiver MUST answer promptly)."""
    return {}


def _lister(method):
    """The handler of a */list `method`: a page of definitions (resources/list holds no
    templates, resources/templates/list only them)."""
    key, kind = _LISTS_OF[method], method.partition("/")[0]
    templates = method == "resources/templates/list"

    async def handler(session, params, ctx):
        items = getattr(session.server, kind).values()
        shown = [item.definition for item in items
                 if bool(getattr(item, "template", None)) == templates]
        return _page(shown, params, key)
    handler.__name__ = "_list_templates" if templates else "_list_" + kind   # named in logs
    return handler


def _page(items, params, key):
    """A page of `items` from the cursor the params name (our cursors are offsets, as text).
    A cursor is opaque to the client (server/utilities/pagination); an invalid one is -32602."""
    cursor = params.get("cursor")
    start = 0
    if cursor is not None:
        # ASCII digits ("²" is a digit to isdigit(), not to int()), at most 9: no list is longer
        digits = type(cursor) is str and cursor.isascii() and cursor.isdigit() and len(cursor) < 10
        if not digits or int(cursor) > len(items):
            raise McpError(INVALID_PARAMS, "Invalid params: unknown cursor")
        start = int(cursor)
    result = {key: items[start:start + PAGE_SIZE]}
    if start + PAGE_SIZE < len(items):
        result["nextCursor"] = str(start + PAGE_SIZE)
    return result


def _arguments_of(params):
    """tools/call's or prompts/get's arguments: absent is {}, not an object is -32602 (a malformed
    call is a JSON-RPC error; bad values inside it are the tool's isError result)."""
    arguments = params.get("arguments")
    # false, [] or "" is not "no arguments"
    if arguments is not None and type(arguments) is not dict:
        raise McpError(INVALID_PARAMS, "Invalid params: arguments must be an object")
    return arguments or {}


def _name(params, key="name"):
    """A required string in params (a name, a URI), else -32602: params that do not fit the
    method's schema."""
    value = params.get(key)
    if type(value) is not str:
        raise McpError(INVALID_PARAMS, f"Invalid params: {key} must be a string")
    return value


class _Unwind(BaseException):
    """Raised through a handler by an extension, to end the request its own way (2026-07-28: the
    handler asked, and the round ends with input_required): no error, and no tool's failure.
    A BaseException, so that a handler's ``except Exception`` lets it through."""


async def _call_tool(session, params, ctx, tool=None):
    """tools/call: the capture's getUsers and addUser. The arguments are checked against the
    tool's inputSchema first; what goes wrong inside the tool is an isError result the model
    reads (2025-11-25 server/tools), never a JSON-RPC error. A tool an extension serves its own
    way (`Tool.serve`: task=) is handed to it, which calls back here with the `tool` for a plain
    call."""
    name = _name(params)
    if tool is None:
        tool = session.server.tools.get(name)
        if tool is None:    # -32602, not -32601: tools/call itself exists
            raise McpError(INVALID_PARAMS,
                           f"Unknown tool {name[:100]!r}: call tools/list for the tools there are")
        if tool.serve is not None:
            return await tool.serve(session, tool, params, ctx)
    arguments = _arguments_of(params)
    # 2025-11-25: bad argument values are a tool error the model can read and fix.
    problem = tool.check_input(arguments, "")
    if problem:
        return _tool_error(f"Invalid arguments for tool '{name}': {problem}")
    try:
        return tool.result(await tool.call(arguments, ctx))
    except (RequestError, _Unwind):     # the author chose a JSON-RPC error; an extension's end
        raise
    except McpError as e:   # the tool's own, or an argument its hint refused: the model reads it
        return _tool_error(e.message)
    except asyncio.CancelledError:  # cancelled, out of time, or shut down: the session decides
        if not tool.is_async:   # a thread cannot be stopped: it runs on, unheard
            session.server.abandoned += 1
            _logger.debug("tool %r was cancelled; its thread runs on (%d so far)", name,
                          session.server.abandoned)
        raise
    except BaseException as e:  # SystemExit from a tool ends the call, not the server
        if type(e) is RecursionError:   # a self-referential result: one line, not 100 KB of frames
            _logger.error("tool %r failed: %r", name, e)
        else:
            _logger.error("tool %r failed: %r", name, e, exc_info=e)
        # The exception's text stays in the log: it may name paths or secrets (SECURITY.md R22).
        return _tool_error(f"Tool '{name}' failed with an internal error.")


def _find_resource(server, uri):
    """The resource for `uri`, and its template's variables: the exact URI first, then each
    template in the order registered."""
    resource = server.resources.get(uri)
    if resource and not resource.template:
        return resource, {}
    for resource in server.resources.values():
        if resource.template:
            found = resource.template.match(uri)
            if found is not None:
                return resource, found
    return None, None


async def _read_resource(session, params, ctx):
    """resources/read. An unknown URI is -32002 with data.uri (2025-11-25 server/resources)."""
    uri = _name(params, "uri")
    resource, variables = _find_resource(session.server, uri)
    if resource is None:    # 2026-07-28 (a request of that era: ctx.version) says -32602
        code = INVALID_PARAMS if ctx.version else RESOURCE_NOT_FOUND
        # the URI as asked, cut as subscribe cuts it: an error never echoes megabytes (R22)
        raise McpError(code, "Resource not found", {"uri": uri[:MAX_URI]})
    try:
        value = await resource.call(variables, ctx)
    except McpError as e:   # a template's handler that finds nothing says so in the era's code
        if e.code == RESOURCE_NOT_FOUND and ctx.version:
            raise McpError(INVALID_PARAMS, e.message, e.data) from None
        raise
    return {"contents": resource.contents(uri, value)}


async def _subscribe(session, params, ctx):
    """resources/subscribe: notifications/resources/updated for this URI from now on
    (`Server.resource_updated`); a URI the server has, in a bounded set per session."""
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
    """prompts/get: the messages the function makes of its arguments, all strings (2025-11-25
    server/prompts); an unknown prompt or a missing required argument is -32602."""
    name = _name(params)
    prompt = session.server.prompts.get(name)
    if prompt is None:
        raise McpError(INVALID_PARAMS, f"Unknown prompt {name[:100]!r}: call prompts/list for "
                       "the prompts there are")
    arguments = _arguments_of(params)
    if not all(type(value) is str for value in arguments.values()):
        raise McpError(INVALID_PARAMS, "Invalid params: prompt arguments must be strings")
    for pname, _, default in prompt.params:
        if default is prompt.empty and pname not in arguments:
            raise McpError(INVALID_PARAMS, f"Missing required argument: {pname}")
    arguments = {key: value for key, value in arguments.items() if key in prompt.names}
    result = {"messages": prompt.messages(await prompt.call(arguments, ctx))}
    if "description" in prompt.definition:
        result["description"] = prompt.definition["description"]
    return result


async def _set_level(session, params, ctx):
    """logging/setLevel: from now on, notifications/message at `level` and above (RFC 5424's
    order, `LOG_LEVELS`); another level is -32602 (server/utilities/logging)."""
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise McpError(INVALID_PARAMS,
                       f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
    session.log_level = level
    return {}


async def _complete(session, params, ctx):
    """completion/complete: the values a completion handler suggests for a prompt's argument or
    a resource template's variable, at most 100 of them (2025-11-25 server/utilities/completion).
    An unknown prompt or resource is -32602; an argument with no completion handler, no values."""
    ref, argument = params.get("ref"), params.get("argument")
    if type(ref) is not dict or type(argument) is not dict or type(argument.get("name")) is not str:
        raise McpError(INVALID_PARAMS, "Invalid params: completion needs ref and argument")
    kind = ref.get("type")
    key = ref.get("name") if kind == "ref/prompt" else ref.get("uri")
    registry: _Json = {"ref/prompt": session.server.prompts,
                       "ref/resource": session.server.resources}
    if type(key) is not str or key not in registry.get(str(kind), ()):
        raise McpError(INVALID_PARAMS, "Invalid params: unknown prompt or resource template")
    handler = session.server.completions.get((kind, key, argument["name"]))
    values = []
    if handler is not None:
        args: _Json = {}
        if handler.params:      # the value typed so far
            args[handler.params[0][0]] = str(argument.get("value", ""))
        if len(handler.params) > 1:     # and the arguments already chosen
            context = params.get("context")
            chosen = context.get("arguments") if type(context) is dict else None
            args[handler.params[1][0]] = _object(chosen)
        suggested = await handler.call(args, ctx) or []
        if isinstance(suggested, str):      # one suggestion, not one a character
            suggested = [suggested]
        values = [str(value) for value in suggested]
    return {"completion": {"values": values[:100], "total": len(values),
                           "hasMore": len(values) > 100}}


def _on_cancelled(session, params):
    """notifications/cancelled: the request stops, and gets no answer
    (basic/utilities/cancellation)."""
    id_ = params.get("requestId")
    # Malformed, unknown or finished ids are ignored (basic/utilities/cancellation): a cancel
    # and its request's answer may cross. initialize never runs as a task: it is answered before
    # the next frame is read (and clients MUST NOT cancel it).
    if _is_id(id_) and (id_ in session.running or id_ in session.waiting):
        session.cancel(id_)


def _on_roots_changed(session, params):
    """notifications/roots/list_changed: a tool asks ctx.list_roots() again, nothing is cached."""
    if session.server.on_roots_changed:
        session.server.on_roots_changed(session)


class _Method(typing.NamedTuple):
    """How a method is served: its handler, the capability the server must offer for it (a name,
    or an extension's test of the server), the one era that serves it (None: the handshake's,
    which other eras may serve too), and whether it runs until cancelled (no time limit)."""
    handler: typing.Callable[..., typing.Awaitable[_Any]]
    capability: _Any = None
    era: str | None = None
    endless: bool = False


# Every method the server answers; the extensions add theirs (tasks/get ...). A tool with task=
# is served by the tasks extension (`Tool.serve`), which may make a call a task.
_METHODS = {
    "initialize": _Method(_initialize),
    "ping": _Method(_ping),
    "tools/list": _Method(_lister("tools/list"), "tools"),
    "tools/call": _Method(_call_tool, "tools"),
    "resources/list": _Method(_lister("resources/list"), "resources"),
    "resources/templates/list": _Method(_lister("resources/templates/list"), "resources"),
    "resources/read": _Method(_read_resource, "resources"),
    "resources/subscribe": _Method(_subscribe, "resources"),
    "resources/unsubscribe": _Method(_unsubscribe, "resources"),
    "prompts/list": _Method(_lister("prompts/list"), "prompts"),
    "prompts/get": _Method(_get_prompt, "prompts"),
    "logging/setLevel": _Method(_set_level, "logging"),
    "completion/complete": _Method(_complete, "completions"),
}
# notification -> handler (notifications/initialized moves the lifecycle on: `Session.advance`);
# any other is ignored: a notification never gets an answer, not even an error (JSON-RPC 2.0 4.1)
_NOTIFICATIONS = {"notifications/cancelled": _on_cancelled,
                  "notifications/roots/list_changed": _on_roots_changed}


##############################################################################
# Core: content, what tools return and prompts hold
##############################################################################


# Two classes each: the base's keys are required (as in the schema), the subclass's optional.
class _CallToolResult(typing.TypedDict):
    content: list[_Json]


class CallToolResult(_CallToolResult, total=False):
    """What `Client.call_tool` returns: a tool's failure is ``isError``, not an exception."""
    structuredContent: _Any     # 2025-06-18+: matches the tool's outputSchema, if it has one
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
    """A content block (a dict with a ``type``), marked so a tool's own dicts are never taken for
    one."""


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
    """JSON has no bytes: image, audio and blob data travel as base64 text."""
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _contents(uri, value, mime_type=None):
    """A resource's contents: text, or bytes as a base64 blob."""
    contents = {"uri": uri}
    if mime_type:
        contents["mimeType"] = mime_type
    if isinstance(value, (bytes, bytearray, memoryview)):
        contents["blob"] = _b64(bytes(value))
    else:
        contents["text"] = str(value)
    return contents



##############################################################################
# Core: the server's registry of tools, resources and prompts
##############################################################################
# What tools/list, resources/list and prompts/list answer, and what tools/call, resources/read
# and prompts/get run: functions registered with the decorators, each wrapped in a Tool,
# Resource or Prompt that knows its definition (as the lists show it) and how to call it.


class _Handler:
    """A registered function, with what its signature says about calling it. What its type
    hints make (`params`, `schemas`, a tool's `definition` ...) is made by `_resolve`: at once
    if the hints name only what is already defined, else before it is first needed."""

    def __init__(self, fn: typing.Callable[..., _Any], description: str | None = None) -> None:
        import inspect  # imported here: the cost is paid only when registering
        self.fn, self.is_async = fn, inspect.iscoroutinefunction(fn)
        self.empty = inspect.Parameter.empty    # "no default": inspect is imported only here
        # What the hints make, once `_resolve` has read them: set here first all the same, so
        # that every handler's attributes come in one order (CPython then shares their layout
        # and reads them faster on each call).
        self.resolved = False
        self.hints: dict[str, _Any] = {}
        self.context_param, self.var_keyword = None, False
        self.params: list[tuple[str, _Any, _Any]] = []      # (name, hint, default or empty)
        self.description = description or _first_paragraph(fn.__doc__)
        self.schemas: dict[str, _Json] = {}
        self.loads: dict[str, _Any] = {}        # a parameter's loader, where JSON is not the value
        self.names: frozenset[str] = frozenset()
        self.signature = inspect.signature(fn).parameters
        for p in self.signature.values():
            if p.kind is p.POSITIONAL_ONLY:
                raise ValueError(f"{self._named()}: parameter {p.name!r} is positional-only; "
                                 "arguments arrive by name")
            if p.kind is p.VAR_POSITIONAL:  # nothing in a JSON object fills it
                raise TypeError(f"{self._named()}: *{p.name} can never be given: arguments "
                                f"arrive by name; take a list ({p.name}: list[...]) instead")

    async def call(self, arguments, context):
        """Call the function with the arguments it takes, each made what its hint asks for."""
        kwargs = {}
        for name, value in arguments.items():
            if name in self.loads:
                kwargs[name] = self.convert(name, value)
            elif self.var_keyword or name in self.names:
                kwargs[name] = value
            # else dropped (a hand-written schema let it in): passed on, it would be a TypeError
        if self.context_param:
            kwargs[self.context_param] = context
        if self.is_async:
            return await self.fn(**kwargs)
        # off the loop: a slow tool stalls no other (SECURITY.md R32: sync tools off the loop)
        return await asyncio.to_thread(self.fn, **kwargs)

    def convert(self, name, value):
        """An argument the schema passed, loaded (a date from "2024-01-31"); a value the loader
        refuses is -32602, which tools/call turns into an isError result the model can read.
        Only a ValueError's text is shown, capped: it says what is wrong with the value (the
        client's input, or the author's words); others' is Python's (SECURITY.md R22)."""
        try:
            return _load(self.loads[name], value)
        except _BAD_VALUE as e:     # "2024-13-01" for a date
            why = f" ({str(e)[:200]})" if isinstance(e, ValueError) else ""
            wanted = _hint_name(_strip(self.hints.get(name)))
            message = f"Invalid arguments: {name}: not a valid {wanted}{why}"
            raise McpError(INVALID_PARAMS, message) from None

    # What registration runs, once per tool (the server's start-up): its hints read, its schema made
    def _named(self):
        return f"{getattr(self.fn, '__qualname__', self.fn)}()"

    def _resolve(self, later=False):
        """Read the type hints and make what they make (`_made`). A hint may name what is not
        defined yet: a model below its tool under `from __future__ import annotations`. Then,
        if `later`, it waits (`Server.waiting`) until serving starts or a session begins
        (`Server.resolve`), when the module is whole; a name undefined even then is the
        author's TypeError, naming it. Never an untyped tool."""
        try:
            self.hints = typing.get_type_hints(self.fn, include_extras=True)
        except NameError as e:
            if later:
                return
            why = (f"{self._named()}: a type hint names {e.name!r}, which is not defined at the "
                   "top level of the function's module (not only under TYPE_CHECKING, nor in a "
                   "function)")
            if not self._schema_given():
                raise TypeError(why) from None
            # the author's schema says what the arguments are: they arrive as JSON, unconverted
            _logger.warning("%s: its arguments arrive as JSON, as its input_schema says", why)
        except Exception as e:  # noqa: BLE001 — any other: a hint Python cannot read
            raise TypeError(f"{self._named()}: its type hints cannot be read: {e}") from None
        self.context_param, self.var_keyword, self.params = None, False, []
        for p in self.signature.values():
            hint = self.hints.get(p.name, typing.Any)
            # A Context parameter is the server's to fill, never an argument: not in the schema.
            if _strip(hint) is Context:
                self.context_param = p.name
            elif p.kind is p.VAR_KEYWORD:   # **kwargs: the schema lets other arguments in
                self.var_keyword = True
            else:
                self.params.append((p.name, hint, p.default))
        built = {name: self.hint(name, hint) for name, hint, _ in self.params}
        self.schemas = {name: schema for name, (schema, _) in built.items()}
        self.loads = {name: load for name, (_, load) in built.items() if load}
        self.names = frozenset(self.schemas)
        self._made()
        self.resolved = True

    def _made(self):
        """What a kind of handler makes of its hints, once they are read (a tool's schemas)."""

    def _schema_given(self) -> bool:
        """Whether the author wrote the input schema (a tool's input_schema=)."""
        return False

    def hint(self, name, hint):
        """Parameter `name`'s (or "return"'s) schema and loader: a bad hint is the author's
        TypeError."""
        try:
            return _hint(hint)
        except TypeError as e:
            what = "its return value" if name == "return" else f"parameter {name!r}"
            raise TypeError(f"{getattr(self.fn, '__qualname__', self.fn)}(): {what}: {e}; use a "
                            "JSON type (str, int, list[str], a TypedDict or dataclass ...), "
                            "date/time, UUID, Decimal, Path, bytes, or typing.Any") from None

    def _schema(self):
        """The inputSchema the parameters make: each one's, with its default if JSON can show it.
        An object schema, as tools/list requires (2025-11-25 server/tools: inputSchema's type is
        "object"); closed (additionalProperties false) unless the function takes **kwargs."""
        props: dict[str, _Json] = {name: dict(self.schemas[name]) for name, _, _ in self.params}
        required = []
        for name, _, default in self.params:
            if default is self.empty:
                required.append(name)
                continue
            try:    # a default with no JSON form is not shown
                shown = _to_json(default)
                json.dumps(shown, allow_nan=False)
            except (TypeError, ValueError):
                continue
            props[name]["default"] = shown
        schema: _Json = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        if not self.var_keyword:
            schema["additionalProperties"] = False
        return schema


# What converting JSON a schema passed may still raise: the value, not the server, is wrong.
_BAD_VALUE = (ValueError, TypeError, ArithmeticError, RecursionError)


def _strip(hint):
    """The type a hint is about, without Annotated and Optional around it: Optional[Context]
    is still the context, and an error says `date`, not `Annotated[date | None, ...]`."""
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in _UNIONS:
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(options) == 1:
            return _strip(options[0])
    return hint


def _defined(**fields):
    """A definition as the lists show it: the fields that have a value, in this order."""
    return {key: value for key, value in fields.items() if value}


class Tool(_Handler):
    """A tool. Options: `name` (default: the function's), `description` (default: the docstring's
    first paragraph), `title`, `annotations` (readOnlyHint ...), `input_schema` / `output_schema`
    (default: from the type hints), `meta`, `icons`, `timeout` (seconds a call may run; default
    the server's, else TOOL_TIMEOUT). The extensions add theirs (`_TOOL_OPTIONS`): `task`
    (SEP-2663: a call may become a task), `scopes` (the OAuth scopes a caller's token needs), and
    `ui` / `visibility` (MCP Apps: the ui:// page that shows its results; "model", "app")."""

    def __init__(self, fn, name=None, description=None, title=None, annotations=None,
                 input_schema=None,
                 output_schema=None, meta=None, icons=None, timeout=None, **options):
        super().__init__(fn, description)
        self.name, self.timeout = name or fn.__name__, timeout
        # The spec's SHOULD, made a rule: a name no client should get fails at registration.
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", self.name):    # 2025-11-25 server/tools
            raise ValueError(f"tool name {self.name!r}: use 1-128 of A-Z a-z 0-9 _ - .")
        self.shown = title, annotations, icons, meta    # an option may add to its meta
        self.options = {}       # what the extensions' options said (`_TOOL_OPTIONS`)
        self.extensions: dict[str, _Any] = {}   # each extension's own state for this tool
        # how an extension serves its calls, if an option asks it to (task=), else None: the
        # core's `_call_tool`
        self.serve: typing.Callable[..., typing.Awaitable[_Any]] | None = None
        for option, value in options.items():
            if option not in _TOOL_OPTIONS:
                raise TypeError(f"tool {self.name!r}: unknown option {option!r}")
            self.options[option] = _TOOL_OPTIONS[option](self, value)
        # A schema of the author's is copied: what is advertised stays what is checked. One
        # that is not JSON fails here, at registration, rather than in every tools/list.
        what = f"tool {self.name!r}: input_schema"
        self.given = (input_schema and _json_copy(input_schema, what),
                      output_schema and self._authors_output_schema(output_schema))
        self._resolve(later=True)

    def result(self, value):
        """A CallToolResult from whatever the function returned. Data goes out twice: as
        structuredContent, and as its JSON in a text block for clients that read only content
        (2025-06-18 server/tools: such a result SHOULD carry both)."""
        if isinstance(value, Content):
            return {"content": [value]}
        blocks = isinstance(value, (list, tuple)) and value
        if blocks and all(isinstance(item, Content) for item in value):
            return {"content": list(value)}
        if value is None and not self.output_schema:
            return {"content": []}      # content is required, and may be empty
        if isinstance(value, str) and not self.output_schema:
            return {"content": [text(value)]}
        data = _to_json(value)
        body = "".join(_text_chunks(data, 0))
        structured = {"result": data} if self.wrap or type(data) is not dict else data
        problem = self.check_output(structured, "structuredContent")
        if problem:     # the author's bug: the detail to the log, a constant text to the client
            _logger.error("tool %s returned a value that does not match its outputSchema: %s",
                          self.name, problem)
            return _tool_error(f"Tool '{self.name}' returned malformed output.")
        return {"content": [text(body)], "structuredContent": structured}

    # What registration runs, once per tool: its schemas, and how its result is shaped (wrap)
    def _made(self):
        """The schemas, from the hints unless the author gave them, and the definition."""
        input_schema, output_schema = self.given
        self.input_schema = input_schema or self._schema()
        self.check_input = _checker(self.input_schema)
        # structuredContent must be an object (2025-06-18 server/tools): others go under "result"
        self.wrap = False
        self.output_schema = self._output_schema(output_schema)
        self.check_output = _checker(self.output_schema)
        title, annotations, icons, meta = self.shown
        self.definition = _defined(name=self.name, title=title, description=self.description,
                                   inputSchema=self.input_schema, outputSchema=self.output_schema,
                                   annotations=annotations, icons=icons, _meta=meta)
        if _TOOL_CHECKS:    # an extension's keyword the schema uses: checked by its extension
            shown = _wire_encoder.encode(self.input_schema)
            for keyword, check in _TOOL_CHECKS.items():
                if f'"{keyword}"' in shown:
                    check(self)

    def _output_schema(self, given):
        """The author's outputSchema, else the return hint's (2025-06-18: structuredContent);
        a result that is not an object goes under "result", as {"result": ...}."""
        if given:
            return given
        returns = self.hints.get("return", typing.Any)
        # Content blocks are their own answer, and a str is text: no structured output.
        if _mentions_content(returns) or _strip(returns) in _UNSTRUCTURED:
            return None
        schema: _Json = _opened(self.hint("return", returns)[0])
        if not schema:      # {} (object, a TypeVar): any JSON, no promise
            return None
        if schema.get("type") != "object":
            self.wrap = True
            return {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        return schema

    def _schema_given(self) -> bool:
        return bool(self.given[0])

    def _authors_output_schema(self, given):
        """The author's outputSchema, as given (its $ref and $defs keep their places). One that
        names a type without "object" is refused now: structuredContent is an object (2025-06-18
        schema.ts; 2026-07-28 allows any, but a tool serves both eras): no call could meet it."""
        if type(given) is not dict:
            raise TypeError(f"tool {self.name!r}: output_schema must be a dict (a JSON Schema)")
        kinds = given.get("type", "object")
        if kinds != "object" and not (type(kinds) is list and "object" in kinds):
            raise ValueError(f"tool {self.name!r}: output_schema must describe an object, as "
                             f'structuredContent is one: {{"type": "object", "properties": '
                             f'{{"result": ...}}}} holds any value')
        return _json_copy(given, f"tool {self.name!r}: output_schema")


# Return hints that make no structured output: text, or nothing known
_UNSTRUCTURED = (str, typing.Any, type(None), typing.NoReturn, getattr(typing, "Never", None))
# A tool option of an extension's -> what it keeps of the value (its check: a bad one raises)
_TOOL_OPTIONS: dict[str, typing.Callable[[Tool, _Any], _Any]] = {}
# ... -> what the extension does on a server when a tool with that option is added to it (its
# state made, its handlers put in place: what a server that uses none of it never runs)
_ON_TOOL_OPTION: dict[str, typing.Callable[[_Any, _Any], None]] = {}
# A schema keyword of an extension's -> what it checks of a tool whose input schema uses it (a
# warning, say), once the tool is made
_TOOL_CHECKS: dict[str, typing.Callable[[Tool], None]] = {}


def _opened(schema):
    """A hint's schema as an output's: its records open (what an instance of a subclass or a
    TypedDict holds beyond its fields is still the promised value), its keys' names not
    promised (an Enum key goes out as its text)."""
    if type(schema) is list:
        return [_opened(item) for item in schema]
    if type(schema) is not dict:
        return schema
    opened = {}
    for key, value in schema.items():
        if key == "properties" and type(value) is dict:     # names, each with its schema
            opened[key] = {name: _opened(sub) for name, sub in value.items()}
        elif key != "propertyNames" and not (key == "additionalProperties" and value is False):
            opened[key] = _opened(value)
    return opened


def _json_copy(value, what):
    """`value` made anew from its JSON: what JSON cannot hold (NaN, a set, an object) fails now,
    naming `what`, rather than in every list that would send it."""
    try:
        return json.loads(_wire_encoder.encode(value))
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} is not JSON: {e}") from None


def _mentions_content(hint):
    """Whether a return hint names Content anywhere (Content, list[Content], Content | str)."""
    return hint is Content or any(_mentions_content(arg) for arg in typing.get_args(hint))


def _tool_error(message):
    """A failed call as the model sees it: an isError result, not a JSON-RPC error, so that the
    model reads what went wrong and can try again (2025-11-25 server/tools)."""
    return {"content": [text(message)], "isError": True}


class Resource(_Handler):
    """A resource, or a template when `uri` has {variables} (passed to the function by name). The
    function returns str (text), bytes (blob), JSON-able data (as application/json text) or
    contents dicts. Options: `name`, `description`, `mime_type`, `title`, `annotations`, `meta`,
    `icons`, `size`. To say a URI names nothing, raise ``McpError(RESOURCE_NOT_FOUND, "No note
    'x'")``: only an McpError's text reaches the client; any other exception (a KeyError) is
    logged here, and the client gets -32603 "Internal error"."""

    def __init__(self, fn, uri, name=None, description=None, mime_type=None, title=None,
                 annotations=None, meta=None, icons=None, size=None):
        super().__init__(fn, description)
        self.uri, self.mime_type = uri, mime_type
        self.template = None
        where = "uri"
        if "{" in uri:      # resources/templates/list shows it (RFC 6570 level 1)
            self.template, where = _UriTemplate(uri), "uriTemplate"
            # a variable no parameter takes would make every read fail: refused now
            takes = set(self.signature)
            lacking = [name for name in self.template.parts[1::2] if name not in takes]
            if lacking and not any(p.kind is p.VAR_KEYWORD for p in self.signature.values()):
                raise TypeError(f"resource {uri!r}: {self._named()} takes no parameter "
                                f"{lacking[0]!r} for the URI's {{{lacking[0]}}}; its parameters: "
                                f"{', '.join(takes) or 'none'}")
        fields = {where: uri, "name": name or fn.__name__, "title": title,
                  "description": self.description, "mimeType": mime_type,
                  "annotations": annotations, "icons": icons, "_meta": meta, "size": size}
        # `is not None`, unlike `_defined`: a size of 0 (raw bytes, before base64) is worth saying
        self.definition = {key: value for key, value in fields.items() if value is not None}
        self._resolve(later=True)

    def contents(self, uri, value):
        """resources/read's contents: the function's own contents dicts, or one item with the
        URI and exactly one of text and blob (2025-11-25 server/resources)."""
        if isinstance(value, dict) and "uri" in value:
            return [value]
        if isinstance(value, list) and all(isinstance(item, dict) and "uri" in item
                                           for item in value):
            return value
        if isinstance(value, (str, bytes, bytearray, memoryview)):
            return [_contents(uri, value, self.mime_type)]
        value = json.dumps(_to_json(value), ensure_ascii=False)
        return [_contents(uri, value, self.mime_type or "application/json")]


class _UriTemplate:
    """RFC 6570 level 1 (``{name}``) matched in linear time: each variable takes the text up
    to the first occurrence of the literal after it (no backtracking: hostile URIs cost O(n)).
    A value is percent-decoded, and may not then hold '/', '\\', NUL, a drive ('C:'), or be
    '.' or '..', so a variable can never walk a path out of its segment. Servers MUST validate
    resource URIs (2025-11-25 server/resources; SECURITY.md R31); a backtracking regex here was
    the TypeScript SDK's ReDoS (CVE-2026-0621, R32).

    >>> _UriTemplate("users://{name}/profile").match("users://ada%20l/profile")
    {'name': 'ada l'}
    """

    def __init__(self, template):
        self.parts = re.split(r"\{([^{}]*)\}", template)     # literal, variable name, literal ...
        literals, names = self.parts[::2], self.parts[1::2]
        nested = any("{" in literal for literal in literals)
        if nested or not all(name.isidentifier() for name in names):
            raise ValueError(f"bad URI template {template!r}: use {{name}} variables")
        if "" in literals[1:-1]:    # "{a}{b}": where one ends and the next begins, no URI says
            raise ValueError(f"bad URI template {template!r}: put a literal between variables")

    def match(self, uri):
        parts = self.parts
        if not uri.startswith(parts[0]):
            return None
        pos, found = len(parts[0]), {}
        for i in range(1, len(parts), 2):
            literal = parts[i + 1]
            if i + 2 == len(parts):        # the final variable runs to the final literal
                end = len(uri) - len(literal) if uri.endswith(literal) else -1
            else:       # a literal (never empty: see __init__) ends the variable
                end = uri.find(literal, pos)
            value = urllib.parse.unquote(uri[pos:end])   # checked decoded: "%2F" is a "/" too
            if end <= pos or not _segment(value):   # not found, or empty: no match
                return None
            found[parts[i]] = value
            pos = end + len(literal)
        return found


def _segment(value):
    """Whether a variable's value stays within its path segment (SECURITY.md R31: no
    separators, no NUL, no drive, no '..')."""
    if value in (".", "..") or value[1:2] == ":":   # "C:..." names a drive on Windows
        return False
    return not any(c in value for c in "/\\\x00")


class Prompt(_Handler):
    """A prompt: its arguments are the function's parameters (strings; a default makes one
    optional). The function returns a string (one user message), content blocks, {"role",
    "content"} dicts, or a list of them. Options: `name`, `description`, `title`, `meta`, `icons`.
    """

    def __init__(self, fn, name=None, description=None, title=None, meta=None, icons=None):
        super().__init__(fn, description)
        self.name = name or fn.__name__
        self.shown = title, icons, meta
        self._resolve(later=True)

    def _made(self):
        arguments = []
        for pname, _, default in self.params:
            argument: _Json = {"name": pname}
            if self.schemas[pname].get("description"):
                argument["description"] = self.schemas[pname]["description"]
            argument["required"] = default is self.empty     # else prompts/get is -32602
            arguments.append(argument)
        title, icons, meta = self.shown
        self.definition = _defined(name=self.name, title=title, description=self.description,
                                   arguments=arguments, icons=icons, _meta=meta)

    def messages(self, value):
        """prompts/get's messages from what the function returned: each a {role, content}
        with one content block (2025-11-25 server/prompts); anything else is the user's text."""
        items = value if isinstance(value, (list, tuple)) else [value]
        messages = []
        for item in items:
            if isinstance(item, dict) and "role" in item:
                messages.append(item)
            elif isinstance(item, Content):
                messages.append({"role": "user", "content": item})
            else:
                messages.append({"role": "user", "content": text(str(item))})
        return messages


class Server:
    """An MCP server: register tools, resources and prompts, then `run()`. Its capabilities
    follow from what is registered; a change while clients are connected sends them list_changed.
    `state_key` and `task_store` are the options of two extensions: 2026-07-28's multi round-trip
    requests (the key that seals a requestState: by default MCP_MIN_STATE_KEY, which the
    processes that share it need alike, else a random key, this process's alone) and tasks (the
    TaskStore they are kept in)."""

    def __init__(self, name: str, version: str = "0.1.0", instructions: str | None = None,
                 title: str | None = None, timeout: float | None = None,
                 state_key: str | bytes | None = None,
                 task_store: _Any = None, **info: _Any) -> None:
        self.info = {"name": name, "version": version}
        if title:
            self.info["title"] = title
        self.info.update(info)
        self.instructions = instructions
        self.timeout = timeout  # seconds any request may run (default TOOL_TIMEOUT)
        self.abandoned = 0      # sync tools' threads cancelled while running (they run on)
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.prompts: dict[str, Prompt] = {}
        # (ref kind, name or URI, argument)
        self.completions: dict[tuple[str, str, str], _Handler] = {}
        # the Session told
        self.on_roots_changed: typing.Callable[[Session], object] | None = None
        self.sessions: set[Session] = set()     # live sessions, for change notifications
        # who else hears of a change (`_tell`): an extension's, once it is used (2026-07-28's
        # listens)
        self.hearing: list[typing.Callable[[Server, str, _Json], None]] = []
        self.waiting: list[_Handler] = []       # handlers whose hints wait (`resolve`)
        self.serving = False    # whether `resolve` has run: the module is whole
        # the bytes held for its clients (each client's account, kept while something holds it)
        self.memory = _Account(SERVER_BYTES, name="the server")
        self.accounts: weakref.WeakValueDictionary[str, _Account] = weakref.WeakValueDictionary()
        # The extensions' options (see above), made here: a bad key fails now, not at a request.
        key = state_key or os.environ.get("MCP_MIN_STATE_KEY") or os.urandom(32)
        self.state_key = key.encode() if isinstance(key, str) else bytes(key)
        if len(self.state_key) < 16:    # 128 bits at least: a short key can be guessed, then forged
            raise ValueError("state_key (MCP_MIN_STATE_KEY) must be at least 16 bytes")
        self.task_store = task_store
        # how 2026-07-28's lists and reads may be cached (PROTOCOL.md 4.6): stale at once (ttlMs 0),
        # and private, as results may differ by user; a server may say otherwise
        self.cache: _Json = {"ttlMs": 0, "cacheScope": "private"}
        # each extension's own state for this server, by name, made when first needed (`_state`)
        self.extensions: dict[str, _Any] = {}
        atexit.unregister(_core_alone)      # a program with a server of its own: not the CLI

    def account(self, client: str) -> _Account:
        """The byte account of `client` (see CLIENT_BYTES): one per client, however many
        sessions and connections it holds."""
        account = self.accounts.get(client)
        if account is None:
            account = self.accounts[client] = _Account(CLIENT_BYTES, self.memory)
        return account

    # Guards it over HTTP (the authorization extension's ResourceServer), unless serve_http is given
    # its own token= or auth=.
    auth: _Any = None

    # Each decorator returns the function unchanged, so it can still be called (and tested).
    @typing.overload
    def tool(self, name: _F, /) -> _F: ...

    @typing.overload
    def tool(self, name: str | None = None, **options: _Any) -> typing.Callable[[_F], _F]: ...

    def tool(self, name: _Any = None, **options: _Any) -> _Any:
        """Decorator: register a function as a tool (see `Tool` options); ``@server.tool`` too."""
        def add(fn, name):
            self.add_tool(fn, name, **options)
        return _decorator(name, add)

    def add_tool(self, fn: typing.Callable[..., _Any], name: str | None = None,
                 **options: _Any) -> Tool:
        """Register `fn` as a tool now: `@server.tool` without the decorator."""
        return self._add("tools", Tool(fn, name, **options))

    def remove_tool(self, name: str) -> None:
        self._remove("tools", name)

    def resource(self, uri: str, **options: _Any) -> typing.Callable[[_F], _F]:
        """Decorator: a resource at `uri`, or a template if it has {variables}."""
        if not isinstance(uri, str):
            raise TypeError('@server.resource needs the URI first: '
                            '@server.resource("notes://today")')

        def add(fn, _):
            self.add_resource(fn, uri, **options)
        return _decorator(None, add)

    def add_resource(self, fn: typing.Callable[..., _Any], uri: str, **options: _Any) -> Resource:
        return self._add("resources", Resource(fn, uri, **options), uri)

    def remove_resource(self, uri: str) -> None:
        self._remove("resources", uri)

    @typing.overload
    def prompt(self, name: _F, /) -> _F: ...

    @typing.overload
    def prompt(self, name: str | None = None, **options: _Any) -> typing.Callable[[_F], _F]: ...

    def prompt(self, name: _Any = None, **options: _Any) -> _Any:
        """Decorator: register a function returning messages as a prompt; ``@server.prompt`` too."""
        def add(fn, name):
            self.add_prompt(fn, name, **options)
        return _decorator(name, add)

    def add_prompt(self, fn: typing.Callable[..., _Any], name: str | None = None,
                   **options: _Any) -> Prompt:
        return self._add("prompts", Prompt(fn, name, **options))

    def remove_prompt(self, name: str) -> None:
        self._remove("prompts", name)

    def _add(self, kind, item, key=None):
        """Register (or replace) an item; connected clients hear that the list changed."""
        if key is None:     # resources go by URI, the others by name
            key = item.name
        items = getattr(self, kind)
        # Replaced, as a server that updates a tool does, but said: most often it is a copied
        # function whose name was left as it was, and the first would vanish unseen.
        self._wait(item)
        if kind == "tools":
            # An extension comes into play when a tool uses it; it may refuse the tool, before
            # the tool replaces one of the same name
            for option in item.options:
                used = _ON_TOOL_OPTION.get(option)
                if used:
                    used(self, item)
        if key in items:
            _logger.warning("%s %r registered again: this one replaces the first (remove_%s() "
                            "first says it is meant)", kind[:-1], key, kind[:-1])
            self._unwait(items[key])
        items[key] = item
        self._changed(kind)
        return item

    def _wait(self, handler):
        """A handler whose hints wait for names defined later is resolved before it is used:
        now if serving has begun (the module is whole), else by `resolve`."""
        if not handler.resolved:
            if self.serving:
                handler._resolve()
            else:
                self.waiting.append(handler)

    def resolve(self) -> None:
        """Read the type hints that waited for names defined later (see `_Handler._resolve`),
        now that the module is whole: serving starts by it, and each session (`Session`), so
        that a name still undefined is a TypeError here, not a failed tools/list."""
        while self.waiting:
            self.waiting[0]._resolve()
            del self.waiting[0]
        self.serving = True

    def offers(self, capability: _Any) -> bool:
        """Whether the server declares `capability` (a name, or an extension's test of the server;
        None: what every server does)."""
        if capability is None:
            return True
        if callable(capability):
            return bool(capability(self))
        return capability == "logging" or bool(getattr(self, capability))

    def capabilities(self) -> _Json:
        """What initialize says the server can do: what is registered (2025-11-25 lifecycle).
        A server MUST declare what it offers, and a method of a capability it did not declare
        is -32601 (`_METHODS`); listChanged is true, as the registry may change while serving."""
        caps: _Json = {"logging": {}}   # any handler may log (Context.log): always offered
        if self.tools:
            caps["tools"] = {"listChanged": True}
        if self.resources:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts:
            caps["prompts"] = {"listChanged": True}
        if self.completions:
            caps["completions"] = {}    # the flag is 2025-03-26's (the method is older)
        extensions = {}
        for name, offered in _EXTENSION_CAPABILITIES.items():
            if name in self.extensions:     # in use on this server (its state is there)
                extensions.update(offered(self))
        if extensions:
            caps["extensions"] = extensions
        return caps

    def _changed(self, kind):
        """notifications/<kind>/list_changed: the client lists again (`Session.notify` sends it
        only once the client has said notifications/initialized)."""
        self._tell(f"notifications/{kind}/list_changed", {})

    def _tell(self, method, params):
        """A change, to the sessions that want it (resources/updated: those subscribed to it),
        and to what the extensions keep listening (2026-07-28: subscriptions/listen)."""
        for session in list(self.sessions):
            subscribed = params.get("uri") in session.subscriptions
            if method != "notifications/resources/updated" or subscribed:
                session.notify(method, params or None)
        for hear in self.hearing:
            hear(self, method, params)

    def _unwait(self, handler):
        if handler in self.waiting:     # removed or replaced: its hints are no longer needed
            self.waiting.remove(handler)

    def _remove(self, kind, key):
        item = getattr(self, kind).pop(key, None)
        if item:
            self._unwait(item)
            self._changed(kind)

    def completion(self, ref: str, argument: str) -> typing.Callable[[_F], _F]:
        """Decorator: suggest values for `argument` of a prompt (by name) or a resource template
        (by its URI template). The function takes the partial value (and optionally the
        arguments already chosen, as a dict) and returns a list of strings."""
        if not isinstance(ref, str) or not isinstance(argument, str):
            raise TypeError('@server.completion needs a prompt name or URI template and an '
                            'argument name: @server.completion("greet", "name")')
        kind = "ref/resource" if "://" in ref else "ref/prompt"

        def add(fn, _):
            handler = self.completions[kind, ref, argument] = _Handler(fn)
            handler._resolve(later=True)
            self._wait(handler)
        return _decorator(None, add)

    def skills(self, path: str) -> None:
        """Serve the agent skills in folder `path` (SEP-2640, the skills extension): each folder
        under it holding a SKILL.md (YAML front matter with name and description; the folder's
        name is the skill's) is a skill, and every file in it a resource,
        ``skill://<folder>/<file>``. Call it again when they change on disk: the last call's set
        is what is served."""
        _provided("Server.skills")(self, path)

    def app(self, uri: str, html: str | None = None, **options: _Any) -> _Any:
        """An MCP App's page (SEP-1865, the MCP Apps extension): `html` at `uri` (ui://...), shown
        by the tools that name it (``@server.tool(ui=uri)``); without `html`, a decorator of a
        function that returns it. Options: name, description, title, csp, permissions, domain,
        prefers_border."""
        return _provided("Server.app")(self, uri, html, **options)

    def resource_updated(self, uri: str) -> None:
        """Tell subscribed clients that the resource at `uri` changed."""
        self._tell("notifications/resources/updated", {"uri": uri})

    def run(self, argv: list[str] | None = None, exit: bool = True) -> int:
        """Serve over stdio, or HTTP with ``--port``: the same options as
        ``python mcp_min.py serve`` (call it from ``if __name__ == "__main__"``). Then end the
        process with the exit status, as ``unittest.main()`` does, so that a supervisor sees a
        failure (the port in use: 1); ``exit=False`` returns it instead."""
        about = (f"Serve the MCP server {self.info['name']!r} over stdio (the default) or HTTP "
                 "(--port).")
        if argv is None:
            argv = sys.argv[1:]
        args = _serve_parser(about).parse_args(_serve_argv(argv))
        code = _serve(self, args)
        if exit:
            sys.exit(code)
        return code


# What the extensions add to a server's capabilities' "extensions" (by the name of its state,
# there while in use).
_EXTENSION_CAPABILITIES: dict[str, typing.Callable[[Server], _Json]] = {}
# Public methods whose work an extension does ("Server.skills" ...): name -> the function
_PROVIDED: dict[str, typing.Callable[..., _Any]] = {}


def _state(server, name, make):
    """An extension's state on `server` (`server.extensions[name]`), made when first needed: an
    extension a server does not use keeps nothing there, and runs no code for it."""
    state = server.extensions.get(name)
    if state is None:
        state = server.extensions[name] = make()
    return state


def _provided(name):
    """What an extension provides for a public method; without it, a clear error (a copy of
    mcp_min cut at its first extension has the core alone)."""
    if name not in _PROVIDED:
        raise RuntimeError(f"{name} needs an extension this copy of mcp_min does not have")
    return _PROVIDED[name]


def _decorator(name: _Any, add: typing.Callable[[_Any, _Any], object]) -> _Any:
    """`@server.tool` with or without parentheses: the function is the name when there are none."""
    if not (name is None or isinstance(name, str) or callable(name)):
        raise TypeError(f"a name is a string, not {type(name).__name__}: @server.tool(\"name\")")

    def register(fn):
        if fn is name:      # @server.tool, no parentheses: the default name
            add(fn, None)
        else:
            add(fn, name)
        return fn
    if callable(name):
        return register(name)
    return register


##############################################################################
# Core: schemas from type hints, and arguments checked against them
##############################################################################
# tools/list shows each tool's inputSchema (JSON Schema), and tools/call's arguments must match
# it (2025-11-25 server/tools: a mismatch is an isError result the model can read and fix).
# Here the schema comes from the function's type hints, and so does the way back: JSON that
# the schema accepted turned into what the hint asks for (a date, a dataclass, a set ...).
# The dialect is JSON Schema 2020-12, which a schema with no "$schema" is in since 2025-11-25
# (earlier revisions named none): hence prefixItems, 2020-12's keyword for a tuple's items.


# The JSON types of the simplest hints (JSON Schema 2020-12 validation 6.1.1)
_SIMPLE_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
                 type(None): "null",
                 None: "null"}      # list[None]'s argument is None, not NoneType


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
        return {}, None     # {}: the schema every JSON value matches
    if origin is None and isinstance(tp, type):
        found = _class_hint(tp, depth)
        if found is not None:
            return found
    return _container_hint(tp, origin, args, depth)


def _annotated(args, depth):
    """Annotated[str, "what it is"], or Annotated[T, {more schema keywords}]. The string is the
    parameter's description, which the model reads to fill the argument in."""
    schema, load = _hint(args[0], depth)
    for extra in args[1:]:
        if isinstance(extra, str):
            schema = {**schema, "description": extra}
        elif isinstance(extra, dict):   # {"minimum": 1}: the schema extension checks it
            schema = {**schema, **extra}
    return schema, load


def _class_hint(tp, depth):
    """An Enum, a type that travels as a string, a record, a str or int subclass; or None."""
    # The Enum first: class Color(str, Enum) is a str too, and would lose its enum below.
    if issubclass(tp, enum.Enum):
        return _literal([member.value for member in tp])[0], tp
    as_string = _string_type(tp)
    if as_string:
        return dict(as_string[0]), functools.partial(as_string[1], tp)
    if issubclass(tp, tuple) and hasattr(tp, "_fields"):      # a NamedTuple: a fixed array
        hints = typing.get_type_hints(tp)
        fields = typing.cast(_Any, tp)._fields
        return _tuple_hint([hints.get(field, typing.Any) for field in fields], depth, tp)
    if _is_dataclass(tp) or (issubclass(tp, dict) and hasattr(tp, "__required_keys__")):
        return _record(tp, depth)
    for klass in tp.__mro__:    # a subclass of str, int ...: the JSON of its base, made into it
        if klass in _SIMPLE_TYPES:
            return {"type": _SIMPLE_TYPES[klass]}, tp
    return None


def _container_hint(tp, origin, args, depth):
    """An object for a mapping hint (dict[K, V] ...), an array for another collection (list[T],
    deque ...)."""
    cls = origin or tp
    collection = isinstance(cls, type) and (issubclass(cls, collections.abc.Collection)
                                            or cls is collections.abc.Iterable)
    # str and bytes are collections too, but never arrays: a str subclass or bytes was taken
    # above, and what is left (memoryview ...) has no JSON form.
    if not collection or issubclass(cls, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"unsupported type hint {_hint_name(tp)}")
    if issubclass(cls, collections.abc.Mapping):
        return _mapping_hint(args, depth)
    if cls is tuple and args and args[-1] is not Ellipsis:    # tuple[int, str]
        return _tuple_hint(args, depth, lambda *items: items)
    item, load = _hint(args[0] if args else typing.Any, depth + 1)   # a bare list: any items
    schema: _Json = {"type": "array"}
    if item:
        schema["items"] = item
    make: _Any = cls
    if getattr(cls, "__abstractmethods__", None):     # Sequence, Set ...: a list, set or frozenset
        if not issubclass(cls, collections.abc.Set):
            make = list
        elif issubclass(cls, collections.abc.MutableSet):
            make = set
        else:
            make = frozenset
    if make is list and load is None:
        return schema, None     # a JSON array arrives as a list: nothing to convert

    def load_all(value):
        if type(value) is not list:     # input no schema checked (a prompt's string): as it came
            return value
        return make(_load(load, item) for item in value)
    return schema, load_all


def _mapping_hint(args, depth):
    """dict[K, T]: an object whose members are all T. JSON's keys are strings: K is str, or int
    (each key made an int), or a type that travels as a string (an Enum, a date, a UUID ...),
    each key made one; a key that is not one is refused (-32602). Other keys: a TypeError."""
    key, value = args if len(args) == 2 else (str, typing.Any)
    item, load = _hint(value, depth + 1)
    schema: _Json = {"type": "object"}
    if item:
        schema["additionalProperties"] = item
    load_key, names = _key_hint(key, depth)
    if names:
        schema["propertyNames"] = names     # for the client: the core checks keys by loading
    if load is None and load_key is None:
        return schema, None

    def load_members(value):
        if type(value) is not dict:
            return value
        loaded = {_load(load_key, key): _load(load, member) for key, member in value.items()}
        if len(loaded) < len(value):    # "1" and "01": one int key, and a value lost
            raise ValueError("two keys name the same one")
        return loaded
    return schema, load_members


def _key_hint(key, depth):
    """A mapping's key type: (its loader or None, its propertyNames schema or None)."""
    if key is str or key is typing.Any or key is object:
        return None, None
    schema, load = _hint(key, depth + 1)
    options = schema.get("enum")
    if schema.get("type") == "integer":     # int, an IntEnum, Literal[1, 2]: "1" made 1 first
        number, schema = True, {"pattern": "^-?[0-9]+$"}
    elif schema.get("type") == "string":
        number = False
    else:
        raise TypeError(f"dict keys are strings in JSON: {_hint_name(key)} keys cannot be "
                        "sent; use str, int, or a type that travels as a string")

    def load_key(name):
        key: _Any = name
        if number:
            if not re.fullmatch(r"-?[0-9]+", name):
                raise ValueError(f"key {name[:50]!r} is not an integer")
            key = int(name)
        if options is not None and key not in options:
            raise ValueError(f"key {name[:50]!r} is not one of {options}")
        return _load(load, key)
    return load_key, schema


def _record(tp, depth):
    """A dataclass or TypedDict: an object of fields, arriving as the dataclass or a dict."""
    hints, required, make, takes = _record_fields(tp)
    fields = {name: _hint(hint, depth + 1) for name, hint in hints.items()}
    schema: _Json = {"type": "object",
                     "properties": {name: schema for name, (schema, _) in fields.items()}}
    if required:
        schema["required"] = list(required)
    # Closed, as the arguments are: a key no field takes is refused, not dropped (open again as
    # an output schema: a subclass's instance is one too, `_opened`). Unless __init__ takes what
    # no field shows (**kwargs, an InitVar): then as it came, what the class cannot take dropped.
    if not _is_dataclass(tp) or (takes is not None and takes <= hints.keys()):
        schema["additionalProperties"] = False
    doc = _first_paragraph(tp.__doc__)
    if doc and not doc.startswith(tp.__name__ + "("):    # skip dataclass's generated doc
        schema["description"] = doc
    loads = {name: load for name, (_, load) in fields.items() if load}

    def load(value):    # unchecked (a prompt's text): left to the function
        if type(value) is not dict:
            return value
        value = {name: _load(loads.get(name), field) for name, field in value.items()}
        # What the class cannot take (a member it has no field for) is dropped, not a TypeError.
        fields = {name: field for name, field in value.items() if takes is None or name in takes}
        return make(**fields)
    return schema, load


# a recursive record past depth 20 is built again for each value
@functools.lru_cache(maxsize=256)
def _record_fields(tp):
    """A record's field hints, the fields it requires, what makes one from keywords, and which
    keywords that takes (None: any; others, as extra keys and init=False fields, are ignored)."""
    hints = typing.get_type_hints(tp, include_extras=True)
    if _is_dataclass(tp):
        import dataclasses  # imported here: only a server with dataclass hints pays for them
        import inspect
        fields, missing = dataclasses.fields(tp), dataclasses.MISSING
        required = [f.name for f in fields if f.init and f.default is missing
                    and f.default_factory is missing]
        params = inspect.signature(tp).parameters.values()
        takes = None
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            takes = frozenset(p.name for p in params)
        return {f.name: hints.get(f.name, typing.Any) for f in fields}, required, tp, takes
    # A TypedDict. String annotations (from __future__) hide Required/NotRequired from
    # __required_keys__, so they are read off the hints: Required[T] in a total=False class,
    # NotRequired[T] in a total one.
    required = []
    for name, hint in hints.items():
        marked = typing.get_origin(hint)
        explicit = _REQUIRED is not None and marked is _REQUIRED
        opted_out = _NOT_REQUIRED is not None and marked is _NOT_REQUIRED
        if explicit or (name in tp.__required_keys__ and not opted_out):
            required.append(name)
    return hints, required, dict, None


def _first_paragraph(doc):
    """A docstring's first paragraph on one line: the description a tool, prompt, resource or
    record shows the model (what follows is for the code's reader)."""
    return " ".join((doc or "").strip().split("\n\n")[0].split()) or None


def _is_dataclass(obj):
    # What dataclasses.is_dataclass checks, without importing it for servers that use none.
    return hasattr(obj, "__dataclass_fields__")


def _to_json(value):
    """A tool's return value as plain JSON data (dataclasses, enums, tuples, dates ...)."""
    # type() is exact: an IntEnum member is not an int here, and goes to the enum branch.
    if type(value) in _SIMPLE_TYPES:
        return value
    if type(value) is dict:     # JSON's keys are strings: 1 becomes "1"
        return {str(key): _to_json(member) for key, member in value.items()}
    if _is_dataclass(value) and not isinstance(value, type):
        import dataclasses
        fields = dataclasses.fields(value)
        return {field.name: _to_json(getattr(value, field.name)) for field in fields}
    if isinstance(value, enum.Enum):
        return _to_json(value.value)
    if type(value) is list:
        return [_to_json(item) for item in value]
    as_string = _string_type(type(value))
    if as_string:
        return as_string[2](value)
    if isinstance(value, collections.abc.Mapping):
        return {str(key): _to_json(member) for key, member in value.items()}
    if isinstance(value, collections.abc.Iterable) and not isinstance(value,
                                                          (str, bytes, bytearray, memoryview)):
        return [_to_json(item) for item in value]    # a range, a generator, a deque ...
    return value    # no JSON form: encoding it fails, and the call is answered an error


@functools.cache      # a class's answer never changes; _to_json asks per value
def _string_type(cls):
    """The _STRING_TYPES entry for a class or its nearest base (datetime before date)."""
    for klass in cls.__mro__:
        # The top module only: 3.13's pathlib classes live in pathlib._local.
        name = f"{klass.__module__.partition('.')[0]}.{klass.__qualname__}"
        if name in _STRING_TYPES:
            return _STRING_TYPES[name]
    return None


# Checking JSON against a schema. A tool's arguments are checked against its inputSchema before
# the function runs, and its result against its outputSchema: the core checks what type hints
# produce (type, enum, properties, required, additionalProperties, items, prefixItems, minItems,
# maxItems, anyOf; true and false); the extension below the core adds the rest of what servers
# write by hand ($ref, const, allOf, oneOf, the bounds of strings and numbers).
# Checking inputs is the server's duty (2025-11-25 server/tools: servers MUST validate all tool
# inputs; SECURITY.md R32), and a result must match its outputSchema (2025-06-18 server/tools).
# A check says the first problem only, as a sentence naming its place ("a.b: expected integer,
# got string"): it becomes the text of the isError result, which the model reads to correct its
# call; and a hostile value is walked no further than its first fault.

def validate(value, schema):
    """The first reason `value` does not match `schema`, or None. Unknown keywords are ignored.
    A tool keeps its schemas compiled (`_checker`); this compiles one for a single use.

    >>> validate({"a": "x"}, {"type": "object", "properties": {"a": {"type": "integer"}}})
    'a: expected integer, got string'
    """
    return _checker(schema)(value, "")


def _checker(schema, root=None, depth=0):
    """`schema` compiled once into a function (value, path) -> the first problem, or None: one
    small check from each maker its keywords name in `_KEYWORDS`, in the schema's order. `root`
    holds the whole schema (under None) and what is compiled of it by name (a $ref's target)."""
    if schema is False:     # 2020-12 core 4.3.2: false refuses every value, true takes any
        return _nothing
    # deeper: not checked (a schema may nest for ever)
    if depth > 64 or type(schema) is not dict:
        return _fine
    if root is None:
        root = {None: schema}
    makers = dict.fromkeys(_KEYWORDS[key] for key in schema if key in _KEYWORDS)
    checks = []
    for make in makers:
        check = make(schema, root, depth)
        # a malformed keyword is ignored, as JSON Schema ignores unknown ones
        if check is not None:
            checks.append(check)
    return _all(checks)


def _all(checks):
    """Several checks as one: the first problem any of them finds."""
    if not checks:
        return _fine
    if len(checks) == 1:
        return checks[0]    # no wrapper: a call less for every value checked

    def check(value, path):
        for one in checks:
            problem = one(value, path)
            if problem:
                return problem
        return None
    return check


def _fine(value, path):
    """The check of the schema true, or of one with nothing to check: every value passes."""


def _nothing(value, path):
    """The check of the schema false (anyOf's option false, say): no value passes."""
    return f"{_where(path)}: no value is allowed here"


def _where(path):
    """How a problem names the place: the path in the arguments, or the arguments themselves."""
    return path or "arguments"


# A parsed value's Python type -> its JSON type's name, as problems say it
_JSON_NAMES: dict[_Any, str] = {**_SIMPLE_TYPES, list: "array", dict: "object"}
_NUMBERS = (int, float)     # bool is not one of them: every check here compares type() exactly


def _type(schema, root, depth):
    """type (2020-12 validation 6.1.1): a JSON type's name, or a list of them."""
    kinds = schema["type"]
    if type(kinds) is str:
        kinds = [kinds]
    elif type(kinds) is list:
        kinds = [str(kind) for kind in kinds]   # a malformed entry names no type a value has
    else:
        return None     # malformed: ignored, as an unknown keyword is
    exact = {t for t, kind in _JSON_NAMES.items() if kind in kinds}
    if "number" in kinds:
        exact.add(int)          # an integer is a number
    whole = "integer" in kinds  # and 2.0 is an integer
    said = " or ".join(kinds)

    def check(value, path):
        if type(value) in exact:
            return None
        if whole and type(value) is float and value.is_integer():
            return None
        return f"{_where(path)}: expected {said}, got {_JSON_NAMES.get(type(value), 'null')}"
    return check


def _members(schema, root, depth):
    """properties, required, additionalProperties (an object's members), or prefixItems and items
    (an array's): each member checked by its own schema, else the rest's (false: none may be).
    2020-12 core 10.3.1 (prefixItems, items) and 10.3.2 (properties, additionalProperties);
    required is validation 6.5.3."""
    def compiled(sub):
        if sub is True or sub is False:     # kept as they are: the loops skip or refuse at once
            return sub
        return _checker(sub, root, depth + 1)
    props, prefix = schema.get("properties"), schema.get("prefixItems")
    names = schema.get("required")
    # Malformed members (properties not an object ...) are ignored, as unknown keywords are.
    props = {name: compiled(sub) for name, sub in _object(props).items()}
    if type(prefix) is not list:
        prefix = []
    prefix = [compiled(sub) for sub in prefix]
    if type(names) is not list:
        names = []
    names = [name for name in names if type(name) is str]
    # Absent, both are true: JSON Schema's objects are open unless a schema closes them (as
    # `_Handler._schema` does: an argument the function cannot take is refused before the call).
    extra = compiled(schema.get("additionalProperties", True))
    rest = compiled(schema.get("items", True))

    def check_object(value, path):
        if type(value) is not dict:
            return None
        inside = path + "." if path else ""
        for name in names:
            if name not in value:
                return f"{inside}{name}: required property is missing"
        if not props and extra is True:     # `required` was all there was to check
            return None
        for name, item in value.items():
            sub = props.get(name, extra)    # a member properties does not name: the rest's schema
            if sub is False:
                return f"{inside}{name}: unexpected property"
            if sub is not True:
                problem = sub(item, inside + name)
                if problem:
                    return problem
        return None

    def check_array(value, path):
        if type(value) is not list:
            return None
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else rest     # items: what prefixItems leaves
            if sub is False:
                return f"{path}[{i}]: unexpected item"
            if sub is not True:
                problem = sub(item, f"{path}[{i}]")
                if problem:
                    return problem
        return None
    # Only the checks its keywords ask for: a tool's inputSchema has an object's alone.
    checks = []
    if names or props or extra is not True:
        checks.append(check_object)
    if prefix or rest is not True:
        checks.append(check_array)
    return _all(checks)


# Below: the rest of the section, which the capture's tools do not use: hints (Literal, tuples,
# unions, typed dicts' fields), the standard-library types that travel as JSON strings, and the
# keywords that only those hints make.


def _literal(args, depth=0):
    """Literal["a", "b"]: an enum, and its "type" when one JSON type holds every option
    (redundant for a validator; a client building a form from the schema reads "type")."""
    # Literal[Color.RED]: the member travels as its value, and arrives as the member again
    values = [arg.value if isinstance(arg, enum.Enum) else arg for arg in args]
    schema: _Json = {"enum": values}
    kinds = {_SIMPLE_TYPES.get(type(value)) for value in values}
    if len(kinds) == 1 and None not in kinds:   # one JSON type: say which
        schema["type"] = kinds.pop()
    members = [arg for arg in args if isinstance(arg, enum.Enum)]
    if not members:
        return schema, None

    def load(value):
        for member in members:
            if _same(member.value, value):
                return member
        return value
    return schema, load


def _tuple_hint(args, depth, make):
    """tuple[int, str] or a NamedTuple: an array with one schema per place (prefixItems), its
    length pinned by minItems and maxItems; `make` builds the tuple from the loaded items."""
    items = [_hint(arg, depth + 1) for arg in args]
    schema = {"type": "array", "prefixItems": [schema for schema, _ in items],
              "minItems": len(items), "maxItems": len(items)}

    def load(value):
        if type(value) is not list:
            return value
        return make(*(_load(item_load, item) for (_, item_load), item in zip(items, value)))
    return schema, load


def _load(load, value):
    """`value` through a loader, if there is one: None stays None (an Optional's null)."""
    if load is None or value is None:
        return value
    return load(value)


def _union(args, depth):
    """anyOf the options; the loader uses the first that validates and loads."""
    options = [_hint(arg, depth) for arg in args]
    any_of = {"anyOf": [schema for schema, _ in options]}
    if not any(load for _, load in options):   # plain JSON whichever matches: nothing to load
        return any_of, None
    checks = {}     # compiled when first needed: recursive hints register fast

    def first_that_loads(value):
        failed = None
        for i, (schema, load) in enumerate(options):
            if i not in checks:
                checks[i] = _checker(schema)
            if checks[i](value, "") is not None:
                continue
            try:
                return _load(load, value)
            except _BAD_VALUE as e:     # "tomorrow" is no date | str's date, but its str
                failed = e
        if failed:      # a schema matched, no loader took it: the first failure says why
            raise failed
        return value    # no option matched (input no schema checked): left as it came
    return any_of, first_that_loads


def _convert(value, tp):
    """JSON that `tp`'s schema accepted, as what `tp` asks for (built afresh: handlers keep theirs).
    """
    return _load(_hint(tp)[1], value)


def _to_int(value):
    return int(value) if type(value) is float else value


def _to_float(value):
    return float(value) if type(value) is int else value


# JSON's 2.0 is a valid integer, and 2 a valid number: each arrives as the hint's type
# (JSON Schema 2020-12 validation 6.1.1: an integer is any number with a zero fractional part).
_SIMPLE_LOADS = {int: _to_int, float: _to_float}
# typing's markers this Python has: Required and NotRequired are 3.11+, ReadOnly 3.13+
_REQUIRED, _NOT_REQUIRED = getattr(typing, "Required", None), getattr(typing, "NotRequired", None)
_MARKERS = tuple(filter(None, (_REQUIRED, _NOT_REQUIRED, getattr(typing, "ReadOnly", None))))
_UNIONS = (typing.Union, type(int | str))     # Optional[X], X | Y


def _marked(args, depth):
    """Required[T], NotRequired[T], ReadOnly[T]: T (a record tells which fields it requires)."""
    return _hint(args[0], depth)


_ORIGINS = {typing.Annotated: _annotated, typing.Literal: _literal,
            **dict.fromkeys(_UNIONS, _union),
            **dict.fromkeys(_MARKERS, _marked)}


def _hint_name(tp):
    """A hint as an error message names it to the author or the client: `date`, `list[int]`."""
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _from_iso(tp, value):
    # 3.10's fromisoformat takes no "Z"; RFC 3339 date-times (JSON Schema's format) often end in
    # one.
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    return tp.fromisoformat(value)


def _isoformat(value):
    return value.isoformat()


def _made_from(tp, value):
    return tp(value)


def _from_base64(tp, value):
    # validate=True: a character outside the alphabet is an error, not silently skipped.
    return tp(base64.b64decode(value, validate=True))


def _decimal_from(tp, value):
    # A number or a string in (a float's shortest repr: 0.1 stays 0.1); a string out, exact.
    return _decimal(tp(str(value)))


# Standard-library types that travel as JSON strings: (schema, from JSON given the hint's
# class, to JSON). Keyed by name, so that none of their modules is imported for the table.
# The formats are JSON Schema's (RFC 3339 dates and times, RFC 4122 UUIDs), "path" is ours;
# 2020-12 checks no format by default: a bad date is caught by its loader (`_Handler.convert`).
# A Decimal may come as a string too: a string keeps the digits a float would round.
_STRING_TYPES = {
    "datetime.datetime": ({"type": "string", "format": "date-time"}, _from_iso, _isoformat),
    "datetime.date": ({"type": "string", "format": "date"}, _from_iso, _isoformat),
    "datetime.time": ({"type": "string", "format": "time"}, _from_iso, _isoformat),
    "uuid.UUID": ({"type": "string", "format": "uuid"}, _made_from, str),
    "pathlib.PurePath": ({"type": "string", "format": "path"}, _made_from, str),
    "decimal.Decimal": ({"type": ["number", "string"]}, _decimal_from, str),
    "builtins.bytes": ({"type": "string", "contentEncoding": "base64"}, _from_base64, _b64),
    "builtins.bytearray": ({"type": "string", "contentEncoding": "base64"}, _from_base64, _b64),
}


def _decimal(number):
    # NaN, Infinity or 1e999999999 would reach the tool as a trap (Overflow, a 1 GB string).
    if not number.is_finite() or abs(number.adjusted()) > 1000:
        raise ValueError("a finite number below 1e1000 is expected")
    return number


# The keywords of those hints: enum (Literal, Enum), minItems and maxItems (tuples), anyOf.
def _enum(schema, root, depth):
    """enum (2020-12 validation 6.1.2): one of the values, as JSON compares them (`_same`):
    Python's == has True == 1, so enum [1] would take true."""
    options = schema["enum"]
    if type(options) is not list:
        return None

    def check(value, path):
        if any(_same(value, option) for option in options):
            return None
        return f"{_where(path)}: must be one of {json.dumps(options)}"
    return check


def _same(a, b):
    """JSON equality (2020-12 core 4.2.2): 1 is 1.0 but true is not 1, in objects and arrays too."""
    if type(a) is dict and type(b) is dict:
        if len(a) != len(b):    # the same names in any order: JSON objects are unordered
            return False
        return all(key in b and _same(value, b[key]) for key, value in a.items())
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(map(_same, a, b))
    if type(a) in _NUMBERS and type(b) in _NUMBERS:     # bool is not among them: type() is exact
        return a == b
    return type(a) is type(b) and a == b


def _bounds(schema, root, depth):
    """The bounds `_BOUNDS` knows, each a number, checked in the schema's order. A bound says
    nothing of a value of another type: minItems passes a string (2020-12 core 7.6.1)."""
    bounds = [(key, bound, *_BOUNDS[key]) for key, bound in schema.items()
              if key in _BOUNDS and type(bound) in _NUMBERS]    # another bound is ignored
    if not bounds:
        return None

    def check(value, path):
        for key, bound, kinds, past in bounds:
            if type(value) not in kinds:
                continue
            measured = value if kinds is _NUMBERS else len(value)
            if past(measured, bound):
                return f"{_where(path)}: {key} is {bound}"
        return None
    return check


# keyword: (the JSON types it measures, whether a measure is past it); a tuple hint gives the
# item bounds, and the extension adds those of strings and numbers
_BOUNDS: dict[str, tuple[tuple[type, ...], typing.Callable[[_Any, _Any], bool]]] = {
    "minItems": ((list,), lambda n, bound: n < bound), "maxItems": ((list,),
                                                                    lambda n, bound: n > bound)}


def _any_of(schema, root, depth):
    """anyOf (2020-12 core 10.2.1.2): at least one of the subschemas (Optional[X] and unions are
    written so)."""
    subs = schema["anyOf"]
    if type(subs) is not list:
        return None
    checks = [_checker(sub, root, depth + 1) for sub in subs]

    def check(value, path):
        for one in checks:
            if one(value, path) is None:
                return None
        return f"{_where(path)}: does not match any allowed form"   # which came nearest: unknown
    return check


# JSON Schema keywords, each with the maker of its check (keywords checked together share one);
# the extension of the schema keywords adds its own here.
_KEYWORDS = {
    "type": _type, "enum": _enum, "anyOf": _any_of, **dict.fromkeys(_BOUNDS, _bounds),
    **dict.fromkeys(("properties", "required", "additionalProperties", "prefixItems", "items"),
                    _members),
}


##############################################################################
# Core: HTTP, the front door: connections, request heads, limits, Host and Origin
##############################################################################
# One asyncio server on one port carries both HTTP transports: the legacy SSE endpoint (GET
# /sse, POST /messages: the capture) and Streamable HTTP (/mcp, the next section). Here, what
# every request goes through before an endpoint sees it: its head read strictly, within limits
# that cost an attacker more than us; its Host and Origin checked (DNS rebinding); its body read
# only then. Each limit answers with the status named, then closes the connection.

# The figures, and what others chose for each: SECURITY.md 1.5.
# a POST body -> 413, checked on Content-Length before reading it
MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_REQUEST_LINE = 8 * 1024         # -> 414 (RFC 9112 3: take at least 8000 octets)
MAX_HEAD_BYTES = 64 * 1024          # request line and headers -> 431
MAX_HEADERS = 100                   # -> 431
HEADER_TIMEOUT = 10.0               # seconds to send a request head (from connecting) -> 408
                                    # never restarted by a byte: a trickle (slowloris) is cut off
BODY_TIMEOUT = 30.0                 # seconds to send the body -> 408
IDLE_TIMEOUT = 15.0                 # a kept-alive connection with no next request is closed
WRITE_TIMEOUT = 30.0                # a reader that stops reading is cut off then (SECURITY.md R25)
WRITE_BUFFER = 1 << 16              # bytes unsent to a reader before we wait for it to catch up
KEEPALIVE_INTERVAL = 15.0           # a ": keepalive" comment on a quiet SSE stream: proxies
                                    # keep it open, and a dead peer shows (SECURITY.md R26)
MAX_CONNECTIONS = 512               # -> 503 (file descriptors; a client's share is its account's)
# bytes a connection is charged to its client's account while open: what its buffers may hold
# (asyncio reads ahead up to twice the head's limit), its requests' own charges aside -> 503
CONNECTION_COST = 2 * MAX_HEAD_BYTES + 2 * WRITE_BUFFER
MAX_SESSIONS = 10_000               # -> 503, once a quiet session cannot make room
MAX_SESSION_ID = 128                # a longer Mcp-Session-Id or sessionId is not looked up: 404/400
SESSION_IDLE = 30 * 60.0            # seconds without activity before a session expires:
                                    # clients seldom send DELETE (SECURITY.md R14)
HANDSHAKE_IDLE = 60.0               # seconds a session never past initialize lives idle; at
                                    # MAX_SESSIONS the one idle longest makes room if idle this long
DRAIN_LINGER = 1.0                  # seconds of the shutdown grace that kept-alive connections are
                                    # still served (a proxy may be sending on one)
                                    # before idle ones close

_REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request",
            401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 411: "Length Required",
            413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type",
            431: "Request Header Fields Too Large", 501: "Not Implemented",
            503: "Service Unavailable", 505: "HTTP Version Not Supported"}
# This machine's names: as a Host header writes them ("[::1]") and as a bind address ("::1").
_LOOPBACK = ("localhost", "127.0.0.1", "[::1]", "::1")
# Headers that may come once: a second Host or Content-Length is how a request is smuggled past a
# proxy that reads the other one (RFC 9112 3.2, 6.3); for the others two values are ambiguous.
_SINGLE_HEADERS = frozenset(("host", "content-length", "content-type", "authorization", "origin",
                             "mcp-session-id", "mcp-protocol-version", "transfer-encoding"))
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")     # a method, a header name (RFC 9110 5.6.2)
# Every header line at once: "token:value CRLF", no control byte but tab in the value (RFC 9110
# 5.5: CR, LF or NUL in a value is dangerous), no space before the colon (RFC 9112 5.1: 400).
_HEADER_LINES = re.compile(r"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\x00-\x08\x0a-\x1f\x7f]*\r\n)*")


class _HttpError(Exception):
    """An HTTP answer instead of the endpoint's: its status, what its body says (a JSON-RPC error
    with `code`), and headers to send."""

    def __init__(self, status, message="", code=None, headers=()):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers


class _Request:
    """A request as `_parse_head` read it; `body` is read after the Host, Origin and token."""
    __slots__ = ("body", "client", "headers", "method", "path", "query", "scheme", "traced",
                 "version")

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
    # No URI holds a control byte or one past ASCII (RFC 3986), nor a space (split at them): the
    # authority too (absolute-form). str's own tests, not a pattern: a twentieth of a request.
    if len(parts) == 3 and not (parts[1].isascii() and parts[1].isprintable()):
        raise _HttpError(400, "Bad request line")
    if len(parts) == 3 and parts[1][:1] != "/" and parts[1][:8].lower().startswith(("http://",
                                                                                    "https://")):
        # absolute-form: the path (or query) after the authority
        rest = parts[1].partition("//")[2]
        authority = re.split(r"[/?]", rest, maxsplit=1)[0]
        parts[1] = "/" + rest[len(authority):].lstrip("/")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not parts[1].startswith("/"):
        raise _HttpError(400, "Bad request line")
    if parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        if parts[2].startswith("HTTP/"):   # another version of HTTP: 505; no version: 400
            raise _HttpError(505, "Unsupported HTTP version")
        raise _HttpError(400, "Unsupported HTTP version")
    if fields.count("\r\n") > MAX_HEADERS:
        raise _HttpError(431, "Too many headers")
    if not _HEADER_LINES.fullmatch(fields):
        raise _HttpError(400, "Bad header line")    # includes folds, bare LF, "Name :"
    headers = {}
    for field in fields.split("\r\n")[:-1]:
        name, _, value = field.partition(":")
        name, value = name.lower(), value.strip(" \t")
        if name not in headers:
            headers[name] = value
        elif name in _SINGLE_HEADERS:
            raise _HttpError(400, "Repeated header")
        else:
            headers[name] += ", " + value      # one field, as if sent on one line (RFC 9110 5.3)
    if authority is not None:   # the target's authority is the host (RFC 9112 3.2.2)
        headers["host"] = authority
    request = _Request()
    request.method, request.version, request.headers = parts[0], parts[2], headers
    request.path, _, request.query = parts[1].partition("?")
    request.body, request.traced, request.client, request.scheme = b"", False, None, "http"
    return request


@functools.lru_cache(maxsize=64)
def _media_types(value):
    """The media types an Accept or Content-Type names, lower case (RFC 9110 8.3.1)."""
    return frozenset(item.split(";")[0].strip().lower() for item in value.split(","))


def _host_name(value):
    """'localhost:8080' -> 'localhost', '[::1]:80' -> '[::1]'; None if malformed: a port of
    anything but digits ('localhost:evil.example') is no loopback name."""
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        name += bracket
    else:
        name, colon, rest = value.partition(":")
        if colon:
            rest = ":" + rest
    if rest and not (rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit()):
        return None
    return name.lower() or None


def _is_loopback(host):
    return host in _LOOPBACK or host.startswith("127.")


class _Stream:
    """Messages waiting to go out on one SSE stream, bounded (SECURITY.md R24): what waits behind
    the first is charged to the client's `account` (as are all of a JSON answer's, a batch's,
    until it is written). Past it a new notification is dropped, and a response or request drops
    the notifications queued to make room; then a response is replaced by an error naming the
    bound (dropped whole), and a request closes the stream (`overflowed`): never silently. A
    stream of a POST's answer ends with _FINISHED, when the POST's work is over."""

    def __init__(self, account, json_only=False):
        self.account = account
        self.items, self.sizes = [], []     # sizes: bytes charged for each item
        self.size = 0           # bytes charged now (a JSON answer's: until it is written)
        self.answers = 0        # messages a JSON answer took: all but the first are charged
        self.wake = asyncio.Event()
        self.closed = self.poked = self.overflowed = False
        self.dropped = 0
        self.json_only = json_only  # a JSON answer to a POST: it carries responses alone
        self.direct = None      # writes (self, message) at once if it can (else it is queued)
        self.abort = None       # drops the connection (on overflow)
        self.ended = self.parting = self.attached = False

    # Resumable streams (an extension) number their streams and events, open with a priming
    # event (2025-11-25), and outlive their connection; in the core a stream does none of it.
    number = 0          # its number among its session's streams (0: not resumable)
    primes = False      # it opens with a priming event, and turns SSE soon (`_answer`)
    opened = False      # a POST's stream whose SSE response began (the client has an event id)

    def put(self, message):
        """Queue `message`; False if this stream cannot carry it (a JSON-only answer
        carries no notification or request). Once closed, everything is dropped."""
        if message is None:     # the request ended without a response: nothing to carry
            return True
        if self.json_only and "method" in message:
            return False
        if self.closed:
            return True
        if not self.items and self.direct and self.direct(self, message):
            return True         # no waking the stream's task for each message
        size = 0
        # What waits behind the first is held for the client, so charged, as are a JSON answer's
        # (a batch's) answers but its first, until it is written.
        if message is not _FINISHED and (self.items or self.answers):
            size = MESSAGE_COST + len(_encode_safely(message) or b"")
            if not self.account.take(size):
                message, size = self._over(message, size)
                if message is None:
                    return True     # dropped, or the stream closed
            self.size += size
        if self.json_only:
            self.answers += 1
        self.items.append(message)
        self.sizes.append(size)
        self.wake.set()
        return True

    def clear(self):
        """What is queued goes now (the memory too, and its charge), not when the client does."""
        if self.size:
            self.account.give(self.size)
        self.items, self.sizes, self.size = [], [], 0

    def close(self):
        self.closed = True
        if self.json_only:  # what its answer held was written, or never will be
            self.clear()
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
            size = self.sizes.pop(0)
            if size and not self.json_only:     # written now (a JSON answer's: at `close`)
                self.size -= size
                self.account.give(size)
            self.ended = self.items[0] is _FINISHED
            return self.items.pop(0)
        if self.closed:
            return None
        self.poked = False
        return _KEEPALIVE

    # Below: what a full queue does (the capture never fills one), parting, keepalives.
    def _over(self, message, size):
        """`message` does not fit the client's account: what takes its place, and its charge (None:
        nothing). The notifications queued go first; then a notification is dropped, a response
        becomes an error naming the bound, and a request, or an error with no room either, closes
        the stream."""
        if "id" not in message:
            self.dropped += 1
            return None, 0
        kept = [(item, size) for item, size in zip(self.items, self.sizes)
                if item is _FINISHED or "id" in item]
        self.dropped += len(self.items) - len(kept)
        freed = sum(self.sizes) - sum(size for _, size in kept)
        self.account.give(freed)
        self.size -= freed
        self.items, self.sizes = [item for item, _ in kept], [size for _, size in kept]
        if self.account.take(size):
            return message, size
        if "method" not in message:     # a response: dropped whole, and the client told
            # The error is held past the bound: no bigger than its request's charge, freed as it
            # goes (a JSON answer, a batch's, is never cut off for want of room).
            error = _dropped(self.account, message, size)
            size = MESSAGE_COST + len(encode(error))
            self.account.hold(size)
            return error, size
        _logger.warning("a client fell %d messages (%d bytes) behind on its stream: closed",
                        len(self.items), self.size)
        self.overflowed = True
        self.clear()
        self.close()
        if self.abort:
            self.abort()
        return None, 0

    def part(self):
        """Leave the connection, keep the stream (a client resumes it): `get` returns _PART."""
        self.parting = True
        self.wake.set()

    def poke(self):
        """The stream was quiet too long: have `get` return a keepalive."""
        self.poked = True
        self.wake.set()


_KEEPALIVE, _PART = object(), object()
_FINISHED = {"finished": True}   # put on a POST's stream when its frame's work is over


def _sse_event(message):
    """A message as an SSE event (b"" if it is no JSON). `encode` writes no raw newline, so one
    data line carries it; "message" is the default event name, sent anyway as the SDKs do."""
    data = _encode_safely(message)
    if data is None:
        return b""
    return b"event: message\ndata: " + data + b"\n\n"


class _Streams:
    """What becomes of a Streamable HTTP session's streams. In the core a stream lives and dies
    with its connection. The resumable streams extension puts its own in place (`_STREAMS`):
    streams that number their events, keep what they sent, and outlive the connection for a
    client that comes back with Last-Event-ID."""

    def open(self, entry):
        """A new stream of the session's (the answer to a POST, or the GET stream)."""
        return _Stream(entry.session.account)

    def prime(self, conn, stream):
        """What the stream opens with, before its first message."""
        return b""

    def event(self, conn, stream, message):
        """A message as the event the stream writes (and keeps, if it keeps any)."""
        return _sse_event(message)

    def left(self, conn, stream):
        """The stream's connection is over: the stream ends with it."""
        stream.close()
        stream.clear()

    def after_post(self, entry, stream):
        """A POST is over, and its stream with it."""
        stream.close()

    async def resume(self, http, entry, last) -> tuple[_Any, list[bytes]]:
        """GET with Last-Event-ID: the stream it names, and the events to send again."""
        raise _HttpError(400, "This server does not resume streams (Last-Event-ID)")

    def unread(self, stream):
        """What came for the GET stream while no connection read it."""
        return []


# What becomes of a session's numbered streams (`_Stream.number`): the resumable streams
# extension's; every other stream (legacy /sse's, a JSON answer's) is the core's
_CORE_STREAMS = _STREAMS = _Streams()


class _Connection:
    """One connection and the request it is serving: what the endpoints read (`request`,
    `reader`) and write (through `write`, `send` and `hold`)."""

    def __init__(self, http, reader, writer):
        self.http, self.reader, self.writer = http, reader, writer
        self.timer = _Timer(asyncio.get_running_loop())   # its timeouts, one at a time
        self.request: _Any = None   # the _Request being served
        self.cors: list[tuple[str, str]] = []
        self.auth: _Any = None      # what the authorization extension verified of `request`
        self.peer = (writer.get_extra_info("peername") or ("?",))[0]   # the client, or its proxy
        self.watcher: _Any = None   # reads on while an answer is pending: done when the client left
        self.host = None        # the Host header last found good
        self.frame = bytes      # an SSE answer's framing: `_chunk`, or none (it ends at close)
        self.trace = http.trace.on() if http.trace else None    # its frames say which connection
        self.extensions: dict[str, _Any] = {}   # each extension's own state for this connection
        self.body: tuple[_Account, int] | None = None   # a body's charge, until it is parsed

    def release(self):
        """The request's body is parsed, or never will be: its charge goes back."""
        if self.body is not None:
            account, size = self.body
            self.body = None
            account.give(size)

    def left(self):
        """Whether the client is gone while its answer is pending: reset, closed, or sending
        more (read and not kept: the connection then ends with this answer)."""
        if self.watcher is None:
            self.watcher = asyncio.ensure_future(self.reader.read(1))
        return self.watcher.done() or self.reader.at_eof() or self.writer.transport.is_closing()

    def write(self, status, headers=(), body: bytes | list[bytes] | None = b"", close=False):
        """A response head, and `body` unless it is None (a stream follows) or a list: parts the
        caller sends after the head (`send`), one at a time."""
        reason = _REASONS.get(status, "Status")
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines += [f"{name}: {value}" for name, value in headers]
        parts: list[bytes] = []
        if isinstance(body, list):
            parts, body = body, None
            lines.append(f"Content-Length: {sum(map(len, parts))}")
        elif body is not None and status != 204:    # a 204 carries none (RFC 9110 8.6)
            lines.append(f"Content-Length: {len(body)}")
        if close or self.http.closing:     # draining: a proxy must not reuse this connection
            lines.append("Connection: close")
        if self.trace:      # it shows a body whole
            self.trace.http("out", f"{status} {_REASONS.get(status, '')}", dict(headers),
                            b"".join(parts) if parts else body)
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if not body:
            self.writer.write(head)
        elif len(body) > WRITE_BUFFER:      # not copied once more to put the head before it
            self.writer.write(head)
            self.writer.write(body)
        else:
            self.writer.write(head + body)

    async def send(self, data):
        writer = self.writer
        if writer.is_closing():
            raise ConnectionError("connection closed")
        writer.write(data)
        if writer.transport.get_write_buffer_size() > WRITE_BUFFER:
            # The reader is slow: wait, but a reader that stopped is cut off (state freed).
            self.timer.set(WRITE_TIMEOUT, writer.transport.abort)
            try:
                await writer.drain()
            finally:
                self.timer.clear()

    def event(self, message, stream):
        """A message as an SSE event of `stream`'s, as the trace shows it too."""
        if stream.number:   # the resumable streams' (`_STREAMS`): numbered, and kept
            event = _STREAMS.event(self, stream, message)
        else:
            event = _sse_event(message)
        if event and self.trace:
            if stream.number:
                self.trace.event("out", {"id": f"{stream.number}-{stream.seq}", "event": "message",
                                         "data": message})
            else:
                self.trace.event("out", {"event": "message", "data": message})
        return event

    def fields(self, fields):
        """An SSE event of our own (not a message), as the trace shows it too."""
        if self.trace:
            self.trace.event("out", fields)
        return "".join(f"{key}: {value}\n" for key, value in fields.items()).encode() + b"\n"

    def start_sse(self, headers, chunked=False):
        """The head of an SSE response: a POST's answer on HTTP/1.1 goes in chunks; a GET's
        stream (and any on HTTP/1.0) ends when the connection does."""
        self.frame = _chunk if chunked else bytes
        # no-transform: no proxy compresses (so holds back) events; X-Accel-Buffering: nginx's
        # switch for the same (2026-07-28 transports: SHOULD)
        headers = headers + [("Content-Type", "text/event-stream"), ("X-Accel-Buffering", "no"),
                             ("Cache-Control", "no-cache, no-transform")]
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        self.write(200, headers, None, close=not chunked)

    async def hold(self, stream, first, note=None):
        """Write `first`, then what `stream` carries, until its answer is sent (_FINISHED), it
        parts (_PART: resumed elsewhere) or it ends otherwise (None: the client left, the stream
        was closed, or its token went bad): which is returned. `note` ends the trace. What
        becomes of the stream then is `_STREAMS`'s to say."""
        writer, frame = self.writer, self.frame
        self.left()     # nothing more is read here: whatever comes means the client left

        def client_left(watcher):
            if watcher.cancelled():
                return
            if stream.number:   # a resumable stream waits for its client to come back
                stream.part()
            else:
                stream.close()
        self.watcher.add_done_callback(client_left)
        stream.attached, stream.parting = True, False
        message = None
        try:
            if first:
                await self.send(frame(first))
            stream.direct = self.direct     # what a POST's task puts on it is written at once
            stream.abort = writer.transport.abort
            # What the stream did not take at once: written here, in this connection's task
            while True:
                message = await self._next(stream)
                if message is None or message is _FINISHED or message is _PART:
                    break
                if message is _KEEPALIVE:
                    await self.send(frame(b": keepalive\n\n"))   # a comment: clients skip it
                else:
                    await self.send(frame(self.event(message, stream)))
        except ConnectionError:
            # Handshake era: a disconnect is no cancel (2025-11-25 basic/transports); work goes on.
            writer.transport.abort()
        finally:
            stream.direct = stream.abort = None
            stream.attached = False
            (_STREAMS if stream.number else _CORE_STREAMS).left(self, stream)
            if note and self.trace:
                self.trace.note("out", note)
        if self.watcher.done():
            return None
        return message

    def direct(self, stream, message):
        """Write `stream`'s `message` on this connection at once, if it can take it: called by
        `_Stream.put` in the task that serves a POST, so a POST's answer is written on the GET
        stream's connection (the hop). False: `hold` writes it (a slow reader, a token to check
        again, the stream's end)."""
        transport = self.writer.transport   # written to as the writer would, a call less
        if message is _FINISHED or transport.is_closing() or self.auth_due() \
                or transport.get_write_buffer_size() > WRITE_BUFFER:
            return False
        transport.write(self.frame(self.event(message, stream)))
        return True

    def auth_due(self):
        """Whether the token of a long answer is due to be checked again (see `authorized`)."""
        return self.auth is not None and self.http.auth.due(self)

    async def _next(self, stream):
        """What `stream` gives next, once its token is known to be good; None if it is not
        (what it took waits, for a client that resumes)."""
        wait = KEEPALIVE_INTERVAL
        if self.auth is not None:
            wait = min(wait, self.http.auth.left(self))
        self.timer.set(wait, stream.poke)
        message = await stream.get()
        if message is None or message is _FINISHED or message is _PART or await self.authorized():
            return message
        if message is not _KEEPALIVE:   # what it took waits, for a client that resumes
            stream.items.insert(0, message)
            stream.sizes.insert(0, 0)
        return None

    async def authorized(self):
        """Whether a long answer's token is still good (the authorization extension checks it again
        at its expiry): False, and the client comes back for a new one."""
        if self.auth is None:
            return True
        return await self.http.auth.still_good(self)

    def error(self, e, close=False):
        """`e` as the answer: its status, and as body a JSON-RPC error with id null: it refuses the
        HTTP request, not one message (2025-11-25 basic/transports allows that body)."""
        body, headers = b"", list(e.headers)
        if e.message and e.status not in (408, 413, 414, 431):     # these need no explaining
            code = e.code or INVALID_REQUEST
            if e.status == 503:     # the server's state, not the request's fault
                code = INTERNAL_ERROR
            body = encode(_error(None, code, e.message))
            headers.append(("Content-Type", "application/json"))
        self.write(e.status, headers, body, close)

    def timeout(self):
        """A request came too slowly: 408, and close (a pending read then ends at EOF)."""
        if not self.writer.is_closing():
            self.error(_HttpError(408, "Request timeout"), close=True)
        self.writer.close()


class _Route(typing.NamedTuple):
    """What serves a method and path: an async function (HttpServer, _Connection) -> whether the
    connection may carry the next request. `public`: served before any token is asked for."""
    handler: typing.Callable[..., typing.Awaitable[bool]]
    public: bool = False


class HttpServer:
    """The HTTP front door: connections, parsing, limits, Host/Origin checks, and routing to the
    endpoints (`_ROUTES`); the protocol is the Session's. Made by `serve_http` / `start_http`;
    `port` is the bound port. `token`, `auth` (a ResourceServer), `trace`, and `forwarded_allow_ips`
    are the options of extensions (authorization, tracing, deployment behind a proxy)."""

    def __init__(self, server: Server, host: str = "127.0.0.1", port: int = 8080,
                 token: str | None = None,
                 allow_origins: typing.Iterable[str] = (), allow_hosts: typing.Iterable[str] = (),
                 stateless: bool = False, json_response: bool = False, insecure: bool = False,
                 trace: _Any = None, session_idle: float | None = None, auth: _Any = None,
                 node: str | None = None,
                 forwarded_allow_ips: str | typing.Iterable[str] = ()) -> None:
        # a node name begins each session id: visible ASCII (SECURITY.md R9), and no "."
        if node is not None and not re.fullmatch(r"[A-Za-z0-9]{1,32}", node):
            raise ValueError("a node name is 1 to 32 ASCII letters and digits")
        self.server, self.host, self.port = server, host, port
        # the authorization extension's guard (a `ResourceServer`), or None
        self.auth: _Any = _guard(server, host, token, auth, insecure, bool(forwarded_allow_ips))
        self.allow_origins = set(allow_origins)
        self.allow_hosts = {name.lower() for name in allow_hosts}
        self.stateless, self.json_response = stateless, json_response
        self.node = f"{node}." if node else ""     # behind a balancer: session ids start with it
        # what a trusted proxy says of the client is believed (an extension's)
        self.forwarded = None
        if forwarded_allow_ips:
            self.forwarded = _provided("HttpServer forwarded_allow_ips")(forwarded_allow_ips)
        self.trace, self.session_idle = trace, session_idle or SESSION_IDLE
        self.sessions: dict[str, _HttpSession] = {}     # Mcp-Session-Id or sessionId -> its session
        self.stateless_entries: set[_HttpSession] = set()   # sessions of one POST, while it lasts
        self.connections = 0
        # open connections, closed with it
        self.writers: dict[asyncio.StreamWriter, _Connection] = {}
        self.extensions: dict[str, _Any] = {}   # each extension's own state for this server
        self._listener: _Any = None
        self._reaper: _Timer | None = None      # ends the sessions idle too long
        self.closing = self.stopping = False    # /healthz says 503; then every request does

    async def _connection(self, reader, writer):
        """One connection's requests, one at a time. An _HttpError is answered, then the
        connection closes: the bytes after a refused request cannot be trusted to begin the
        next one. Nothing that fails here reaches another connection (SECURITY.md R19)."""
        self.connections += 1
        conn = self.writers[writer] = _Connection(self, reader, writer)
        # A proxy we trust speaks for many clients: its connections count for the server alone.
        account = self.server.memory
        if self.forwarded is None or not self.forwarded.trusts(conn.peer):
            account = self.server.account(conn.peer)
        charged = 0
        try:
            if self.connections > MAX_CONNECTIONS:
                raise _HttpError(503, "Too many connections")
            if not account.take(CONNECTION_COST):
                raise _HttpError(503, account.refusal(CONNECTION_COST))
            charged = CONNECTION_COST
            kept_alive = False
            while await self._next_request(conn, kept_alive) and await self._respond(conn):
                kept_alive = True
        except _HttpError as e:
            if conn.request is not None:
                self._trace(conn)
            if not writer.is_closing():
                e.headers = list(e.headers) + conn.cors
                conn.error(e, close=True)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass    # the client left, or the loop is shutting down: this connection just ends
        except Exception:   # never let one connection take the server down
            client = conn.peer
            if conn.request and conn.request.client:    # behind a proxy: the client it names
                client = conn.request.client
            _logger.exception("HTTP connection from %s failed", client)
        finally:
            account.give(charged)
            conn.release()
            self.connections -= 1
            self.writers.pop(writer).timer.cancel()
            if conn.watcher is not None:
                conn.watcher.cancel()
            try:
                if not writer.is_closing():
                    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)   # a big answer too
                writer.close()
            except Exception:  # noqa: BLE001 — a writer that cannot close is cut off
                writer.transport.abort()

    async def _respond(self, conn):
        """Serve the request read: True if the connection may carry the next."""
        request = conn.request
        if conn.trace and request.method != "POST":      # a POST is traced with its body
            self._trace(conn)
        if self.allow_origins:
            conn.cors = self._cors(request)
        if not await self._route(conn):
            return False
        # RFC 9112 9.3: "close" ends the connection; HTTP/1.0 ones are not kept (no keep-alive)
        if request.version == "HTTP/1.0" or self.closing or _closes(request):
            return False
        # A byte the watcher read during a long answer began a pipelined request: lost, so the
        # next head would be read from its second byte.
        if conn.watcher is not None:   # it read past the request: what it read is not kept
            watched, conn.watcher = conn.watcher, None
            watched.cancel()
            await asyncio.wait([watched])   # its read ends before the next request's begins
            if not watched.cancelled():
                return False
        if conn.writer.is_closing() or conn.writer.transport.get_write_buffer_size() > WRITE_BUFFER:
            await conn.send(b"")   # a client that reads no answers is cut off
        return True

    async def _next_request(self, conn, kept_alive):
        """Read the next request's head into `conn.request`; False at EOF."""
        conn.cors, conn.request = [], None
        # A new connection owes its head from the start: a silent one is cut off too.
        if kept_alive:
            conn.timer.set(IDLE_TIMEOUT, conn.writer.close)   # a pending read then ends at EOF
        else:
            conn.timer.set(HEADER_TIMEOUT, conn.timeout)
        line = b""
        try:
            line = await conn.reader.readuntil(b"\n")
            # RFC 9112 2.2: an empty line before a request is ignored
            if line in (b"\r\n", b"\n"):
                line = await conn.reader.readuntil(b"\n")
            if kept_alive:
                conn.timer.set(HEADER_TIMEOUT, conn.timeout)
            # RFC 9112 2.2 lets a server take a bare LF; a proxy that does not would read another
            # request in the same bytes (SECURITY.md R18).
            if line[-2:] != b"\r\n":     # else it would wait for a CRLF CRLF that never comes
                raise _HttpError(400, "Lines must end with CRLF")
            end = await conn.reader.readexactly(2)
            if end != b"\r\n":
                end += await conn.reader.readuntil(b"\r\n\r\n")
            head = line + end
        except (asyncio.IncompleteReadError, ConnectionError):
            return False
        except asyncio.LimitOverrunError:
            if not line:    # the request line itself
                raise _HttpError(414, "Request head too large") from None
            raise _HttpError(431, "Request head too large") from None
        conn.timer.clear()
        conn.request = _parse_head(head)
        # behind a proxy: who the client is, in the trace and the log
        if self.forwarded is not None:
            self.forwarded.apply(conn.request, conn)
        return True

    async def _route(self, conn):
        """Serve one request (`_ROUTES`). Returns False when the connection must close."""
        request, path = conn.request, conn.request.path
        # The order is the guard: Host and Origin, the token, method and path, the body last
        # (SECURITY.md R6: no body is read for a caller not yet let in).
        if self.stopping:
            raise _HttpError(503, "Server shutting down")
        route = _ROUTES.get((request.method, path))
        if route is not None and route.public:  # a balancer's probe (no Host, no token), metadata
            self._no_body(request)
            return await route.handler(self, conn)
        # a kept-alive connection's Host: checked once
        conn.host = self._check_peer(request, conn.host)
        if request.method == "OPTIONS" and conn.cors and path in _ALLOWED:
            return self._preflight(conn)
        # public: no token needed (RFC 9728 3)
        if self.auth is not None and self.auth.publishes(path):
            self._no_body(request)
            return self.auth.publish(conn, self.server)
        # no token needed to hear that (no authorization server lives here)
        if path not in _ALLOWED:
            raise _HttpError(404, "Not found")
        if self.auth is not None:
            conn.auth = await self.auth.check(request, conn)     # before any body is read
        route = self._endpoint(request)
        if request.method == "POST":
            await self._read_body(conn)
        else:
            self._no_body(request)
        return await route.handler(self, conn)

    def _endpoint(self, request):
        """The endpoint's route for a request's method and path (`_ROUTES`), or 405 or 400."""
        path, method = request.path, request.method
        # GET /mcp streams a session, DELETE ends it: neither is for a request that stands alone
        session_only = path == "/mcp" and method != "POST"
        if session_only and (self.stateless or _http_era(request, None) is not _HANDSHAKE):
            raise _HttpError(405, "/mcp takes POST only: 2026-07-28 requests and --stateless have "
                                  "no session to stream or end", headers=[("Allow", "POST")])
        route = _ROUTES.get((method, path))
        if route is None:
            allow, what = _ALLOWED[path]
            raise _HttpError(405, what, headers=[("Allow", allow)])    # RFC 9110 15.5.6
        # GET and DELETE carry MCP-Protocol-Version too: none means 2025-03-26 (SHOULD)
        version = request.header("mcp-protocol-version") or "2025-03-26"
        if session_only and version not in PROTOCOL_VERSIONS:   # 2025-06-18 basic/transports
            raise _HttpError(400, "Unsupported MCP-Protocol-Version")
        return route

    def _check_peer(self, request, known=None):
        """The request's Host (if it is not `known`, found good before) and Origin checked; its
        Host."""
        # Host first: under DNS rebinding the Origin looks fine; only Host betrays it.
        host = request.headers.get("host")
        if not host and request.version == "HTTP/1.1":    # RFC 9112 3.2: 400
            raise _HttpError(400, "Missing Host header")
        # on every bind: an empty allowlist means localhost only (fail closed)
        if host and host != known:
            name = _host_name(host)
            allowed = name in _LOOPBACK or name in self.allow_hosts \
                or host.lower() in self.allow_hosts
            if name is None or not allowed:
                raise _HttpError(403, "Host not allowed")
        # 2025-11-25 basic/transports: an Origin present and not allowed MUST get 403. None at
        # all is allowed (SECURITY.md R4): mostly clients that are no browsers, and Host guards
        # the rest. Ours (behind a proxy, the public one) is allowed: its Host passed above.
        origin = request.headers.get("origin")
        if origin and origin not in self.allow_origins \
                and origin.lower() != f"{request.scheme}://{host}".lower():
            # an origin is scheme://host[:port], no path: "null" or a lookalike is refused
            scheme, sep, rest = origin.partition("://")
            local = scheme in ("http", "https") and sep and "/" not in rest
            if not local or _host_name(rest) not in _LOOPBACK:
                raise _HttpError(403, "Origin not allowed")
        return host

    async def _read_body(self, conn):
        """A POST's body into `request.body`, refused before a byte of it is read: no length
        (411), too long (413), or not application/json (415: a text/plain POST needs no CORS
        preflight, so any web page could send one; SECURITY.md R5). Past the client's account
        (503) it is read, but not kept."""
        request, headers = conn.request, conn.request.headers
        if "transfer-encoding" in headers:
            # Chunked bodies are not needed by MCP clients (411: send a length); CL+TE is a
            # smuggling attempt, and HTTP/1.0 has no chunks (400).
            if headers.get("content-length") or request.version == "HTTP/1.0":
                raise _HttpError(400, "Send the body with Content-Length")
            raise _HttpError(411, "Send the body with Content-Length")
        length = headers.get("content-length")
        if not length:
            raise _HttpError(411, "Content-Length required")
        # 1*DIGIT (RFC 9110 8.6): "+5", "0x10", "5,6" or a digit of another script is a framing
        # error, 400 and close (RFC 9112 6.3)
        if not (length.isascii() and length.isdigit()) or len(length) > 12:
            raise _HttpError(400, "Bad Content-Length")
        if int(length) > MAX_BODY_BYTES:
            raise _HttpError(413)
        if _media_types(headers.get("content-type", "")) != {"application/json"}:
            raise _HttpError(415, "Content-Type must be application/json")
        # held until parsed (`_parsed_body`), charged to the client who sends it; one that the
        # reader's share of CONNECTION_COST holds (a head's worth) is charged already
        size, refused = int(length), None
        if size > MAX_HEAD_BYTES:
            account = self.server.account(self._client(conn))
            if account.take(size):
                conn.body = (account, size)
            else:
                refused = account.refusal(size)
        # RFC 9110 10.1.1: a 100-continue from an HTTP/1.0 client MUST be ignored
        if headers.get("expect", "").lower() == "100-continue" and request.version == "HTTP/1.1":
            conn.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")     # curl waits a second without it

        def too_slow():
            self._trace(conn)
            conn.timeout()
        conn.timer.set(BODY_TIMEOUT, too_slow)
        if refused:
            # Read and dropped as it comes: closed with a body unread, the connection would be
            # reset, and the client might never see the 503 that says why.
            while size:
                size -= len(await conn.reader.readexactly(min(size, WRITE_BUFFER)))
            raise _HttpError(503, refused)
        request.body = await conn.reader.readexactly(size)
        conn.timer.clear()
        if conn.trace:
            self._trace(conn)

    def _client(self, conn):
        """Who sends `conn`'s request, as the accounts and the task quarters know clients: its
        OAuth user, else its address (behind a proxy: the one the proxy names)."""
        if self.auth is not None:
            return self.auth.who(conn)[1]
        return conn.request.client or conn.peer

    # The sessions, each its user's own, within MAX_SESSIONS (both endpoints keep theirs here).

    def own(self, entry, conn):
        """The client binds the session: requestState (2026-07-28), its listens' count, and with
        authorization the session itself, which another user cannot take (see `find`)."""
        session = entry.session
        session.owner = self._client(conn)
        if self.auth is not None:
            session.principal = self.auth.who(conn)[0]
        else:
            session.principal = conn.request.header("authorization")
        session.auth = conn.auth
        session.account = self.server.account(session.owner)
        return entry

    def make_room(self):
        """At MAX_SESSIONS, one client must not lock out the rest: the quiet session
        idle longest ends, first those never past initialize, else one idle for
        HANDSHAKE_IDLE (its client gets 404 and initializes again). Else 503. One with work
        running is never taken: a cap with no way out is an outage (SECURITY.md R15)."""
        if len(self.sessions) < MAX_SESSIONS:
            return
        quiet = (entry for entry in self.sessions.values() if entry.quiet())
        entry = min(quiet, key=lambda e: (e.session.state == "operating", e.last_active),
                    default=None)
        busy = entry is not None and entry.session.state == "operating" \
            and entry.last_active > _now() - HANDSHAKE_IDLE
        if entry is None or busy:
            raise _HttpError(503, "Too many sessions")
        del self.sessions[entry.sid]
        entry.close(cancel=True)

    def find(self, conn, sid, legacy):
        """The session `sid` names, of this kind and this user: another user's is as unknown
        as none (SECURITY.md R7: its existence is not told)."""
        entry = self.sessions.get(sid) if len(sid) <= MAX_SESSION_ID else None
        if entry is None or entry.legacy != legacy or self._not_theirs(entry, conn):
            if "." in sid and not sid.startswith(self.node or "."):   # made by another --node
                raise _HttpError(404, "Session not found: another process made it, and may have "
                                      "stopped; start a new session")
            raise _HttpError(404, "Session not found")
        entry.session.auth = conn.auth
        return entry

    def _not_theirs(self, entry, conn):
        return conn.auth is not None and entry.session.principal != self.auth.who(conn)[0]

    @staticmethod
    def _no_body(request):
        """400 for a body where none is read: left unread, its bytes would be taken for the next
        request on the connection (one smuggled past what checked this one)."""
        if request.header("content-length", "0") != "0" or request.header("transfer-encoding"):
            raise _HttpError(400, "Unexpected request body")

    # The server's own start and stop, before the capture's first frame and after its last
    async def start(self):
        """Listen (port 0: any free one). A head line past MAX_HEAD_BYTES stops readuntil: 414
        or 431. An OAuth guard with no `resource` gets this URL: its tokens' audience (RFC 8707)."""
        self._listener = await asyncio.start_server(self._connection, self.host, self.port,
                                                    limit=MAX_HEAD_BYTES)
        self.port = self._listener.sockets[0].getsockname()[1]
        if self.auth and not self.auth.resource:
            host = "[::1]" if self.host == "::1" else self.host
            self.auth.resource = f"http://{host}:{self.port}/mcp"
        self._reaper = _Timer(asyncio.get_running_loop())
        self._reaper.set(self._reaping(), self._expire)
        return self

    async def close(self, grace: float = 0.0) -> None:
        """Stop serving: no new connection, and /healthz says 503; for DRAIN_LINGER s (of
        `grace`) what comes on a connection still open is served (with Connection: close); then
        every request gets 503, what runs gets the rest of `grace`, then -32603; the answers go
        out, every stream closes."""
        loop = asyncio.get_running_loop()
        end, self.closing = loop.time() + grace, True
        if self._reaper is not None:
            self._reaper.cancel()
        self._listener.close()
        linger = loop.time() + min(grace, DRAIN_LINGER)
        while loop.time() < linger and any(conn.request is None for conn in self.writers.values()):
            await asyncio.sleep(0.01)   # under load a proxy reuses (so ends) its idle ones at once
        self.stopping = True
        for conn in self.writers.values():
            if conn.request is None:       # between requests: nothing to finish
                conn.writer.close()
        entries = list(self.sessions.values()) + list(self.stateless_entries)
        left = max(0.0, end - loop.time())
        await asyncio.gather(*(entry.session.stop(left) for entry in entries))
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

    def _reaping(self):
        """Seconds between looks for sessions idle too long."""
        return min(60.0, max(0.05, min(self.session_idle, HANDSHAKE_IDLE) / 4))

    # Below: what the capture's requests never meet: idle sessions expiring, the trace, CORS.
    def _expire(self):
        """End each quiet session idle too long; one with work running never (SECURITY.md R14)."""
        now = _now()
        for sid, entry in list(self.sessions.items()):
            idle = self.session_idle
            if entry.session.state != "operating":     # never past notifications/initialized
                idle = min(idle, HANDSHAKE_IDLE)
            if entry.last_active < now - idle and entry.quiet():
                del self.sessions[sid]
                entry.close(cancel=True)
        if self._reaper is not None:
            self._reaper.set(self._reaping(), self._expire)

    @staticmethod
    def _trace(conn):
        request = conn.request
        if not conn.trace or request.traced:
            return
        request.traced = True
        head = f"{request.method} {request.path}"
        if request.query:
            head += f"?{request.query}"
        if request.client:
            head += f"  (from {request.client})"
        conn.trace.http("in", head, request.headers, request.body)

    def _preflight(self, conn):
        """A browser asks (CORS) whether it may: which methods, and which headers."""
        self._no_body(conn.request)                # else its body would be read as a request
        asked = conn.request.header("access-control-request-headers").split(",")
        allowed = ("Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, "
                   "Last-Event-ID")
        for header in _CORS_HEADERS:   # and the extensions' (2026-07-28: Mcp-Method, Mcp-Name)
            allowed += ", " + header
        for name in asked:      # and those of the extensions' families (2026-07-28: Mcp-Param-*)
            name = name.strip()
            if name.lower().startswith(tuple(_CORS_PREFIXES)) and _TOKEN.fullmatch(name):
                allowed += ", " + name
        conn.write(204, conn.cors + [                 # browsers send no Authorization here
            ("Access-Control-Allow-Methods", "GET, POST, DELETE"),
            ("Access-Control-Allow-Headers", allowed), ("Access-Control-Max-Age", "600")], b"")
        return True

    def _cors(self, request):
        """CORS headers for an Origin listed with --allow-origin: echoed, never "*" (SECURITY.md
        R2); exposed, the session id a page's script must read and send back."""
        origin = request.header("origin")
        if origin and origin in self.allow_origins:
            return [("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
                    ("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version")]
        return []


def _guard(server, host, token, auth, insecure, proxied):
    """What guards an HttpServer: a fixed `token` (the authorization extension makes it a
    guard), else `auth`, else the server's own. Refused: an empty token (it would turn the guard
    off), both, and an address other than loopback with no guard at all (SECURITY.md R1, R6)."""
    if token is not None and not token.strip(" \t"):
        raise ValueError("an empty token would turn authentication off")
    if token and auth:
        raise ValueError("pass token= or auth= (a ResourceServer), not both")
    if auth is None and not token:
        auth = server.auth
    # OAuth tokens name the server they are for: behind a proxy, or on an address of the
    # network, this server cannot guess the URL its clients use (a fixed token names none)
    if (not _is_loopback(host) or proxied) and auth and not auth.resource:
        raise ValueError("name the URL clients use, resource= (--resource)")
    if token:
        auth = _provided("HttpServer token")(token)
    if not _is_loopback(host) and not auth and not insecure:
        raise ValueError(f"refusing to serve on {host} without a token: pass --token or "
                         "--auth-server (or --insecure if something else protects this port)")
    return auth


def _closes(request):
    """Whether the request's Connection header holds "close" (a list: RFC 9110 7.6.1)."""
    options = request.headers.get("connection")
    if not options or "close" not in options.lower():     # the common case, at once
        return False
    return "close" in (option.strip() for option in options.lower().split(","))


def _chunk(data):
    """`data` as one chunk (RFC 9112 7.1): its size in hex, CRLF, data, CRLF; b"" gives
    "0 CRLF CRLF", the last chunk, which ends the response."""
    return b"%x\r\n%s\r\n" % (len(data), data)


# (method, path) -> what serves it; a path -> what a 405 there says it takes. The endpoints above
# and below put theirs in; the extensions add theirs (a balancer's /healthz).
_ROUTES: dict[tuple[str, str], _Route] = {("GET", "/sse"): _Route(_sse_get),
                                          ("POST", "/messages"): _Route(_sse_post)}
_ALLOWED = {"/sse": ("GET", ("/sse takes GET, the legacy SSE stream (which names where to POST); "
                             "Streamable HTTP takes POSTs at /mcp")),
            "/messages": ("POST", "/messages takes the POSTs of a legacy SSE session")}
_CORS_HEADERS: list[str] = []   # request headers a browser may send besides the core's (extensions)
_CORS_PREFIXES: list[str] = []  # ... and the families of them, lower case


async def start_http(server, host="127.0.0.1", port=8080, **options):
    """Start serving `server` over HTTP; returns the running HttpServer."""
    server.resolve()
    return await HttpServer(server, host, port, **options).start()


async def serve_http(server, host="127.0.0.1", port=8080, grace=None, **options):
    """Serve `server` over HTTP until cancelled (SIGTERM, Ctrl-C); what runs then
    gets `grace` seconds (SHUTDOWN_GRACE) to finish."""
    http = await start_http(server, host, port, **options)
    _logger.info("serving MCP on http://%s:%d/mcp (Streamable HTTP) and /sse (legacy SSE)", host,
                 http.port)
    if not _is_loopback(host) and not options.get("allow_hosts"):
        _logger.warning("only Host: localhost is accepted; name the hosts clients use with "
                        "--allow-host")
    try:
        await asyncio.Event().wait()
    finally:
        await http.close(SHUTDOWN_GRACE if grace is None else grace)


##############################################################################
# Core: HTTP, Streamable HTTP at /mcp (2025-03-26 on)
##############################################################################
# The transport today's clients use (2025-11-25 basic/transports): each message is a POST to
# /mcp, and a request's answer comes back on the POST itself, as one JSON body, or as an SSE
# stream of what the server says while serving it (progress, a log line, a request to the
# client), the answer last. initialize's answer names the session (Mcp-Session-Id), which every
# later request carries; GET /mcp opens a stream for what the server says unasked; DELETE ends
# the session:
#
#   C->S  POST /mcp  initialize                  S->C  200 application/json, Mcp-Session-Id: ...
#   C->S  POST /mcp  notifications/initialized   S->C  202 Accepted
#   C->S  POST /mcp  tools/call getUsers         S->C  200 application/json  {"result": ...}


def _http_era(request, message) -> _Any:
    """The era of a POST (`message`), or of a GET or DELETE by its header alone: another's that
    claims it (2026-07-28: its MCP-Protocol-Version header, or its _meta), else the handshake's."""
    for era in _ERAS:
        if era.claims_http(request, message):
            return era
    return _HANDSHAKE


async def _mcp_post(http, conn):
    """A POST of one message (or, in 2025-03-26, a batch): its answers on this response."""
    body, size = _parsed_body(conn)
    message = _object(body)
    batch = type(body) is list
    era = _http_era(conn.request, message)
    streams_only = era is not _HANDSHAKE and era.streams_only(message)  # 2026-07-28's listen
    # the client MUST list both types (2025-11-25 basic/transports); 406 is the SDKs' answer
    if not _accepts(conn, not http.json_response or streams_only):
        raise _HttpError(406, "Accept must list application/json and text/event-stream")
    initialize = era is _HANDSHAKE and message.get("method") == "initialize" and "id" in message
    if era is _HANDSHAKE:
        entry = _entry_for(http, conn, initialize)
    else:
        entry = era.http_entry(http, conn, body)
    if entry is None:   # answered already (a request its headers do not match: 400)
        return True
    json_only = batch or (http.json_response and not streams_only)     # a batch: one JSON array
    # a session's streams may be resumable (`_STREAMS`, an extension's); a JSON answer's or a
    # one-POST session's are not
    if entry.sid in http.sessions and not json_only:
        stream = _STREAMS.open(entry)
    else:
        stream = _Stream(entry.session.account, json_only)
    stream.abort, stream.attached = conn.writer.transport.abort, True
    entry.posts.add(stream)
    try:
        entry.last_active = _now()

        def finished():
            stream.put(_FINISHED)
        taken = entry.session.receive(body, finished, stream.put, size)
        if not taken:   # None: a batch refused whole, answered with one error
            return _no_request(conn, stream, taken is not None and batch)
        headers = list(conn.cors)
        # The id is kept and sent only with a successful InitializeResult: a refused initialize
        # leaves nothing behind (SECURITY.md R10).
        opened = initialize and entry.sid and entry.sid not in http.sessions
        if opened and "result" in stream.items[0]:
            http.sessions[entry.sid] = entry    # a session exists once initialize succeeded
            headers.append(("Mcp-Session-Id", entry.sid))
        return await _answer(conn, stream, headers, batch, era)
    finally:
        _after_post(http, entry, stream, era)


def _after_post(http, entry, stream, era):
    """A POST is over: a one-request session, or a failed initialize's, goes with it."""
    entry.posts.discard(stream)
    stream.attached = False
    _STREAMS.after_post(entry, stream)
    entry.last_active = _now()
    if entry.sid not in http.sessions:
        entry.close(cancel=era.cancels_when_left)  # 2026-07-28: a client that leaves cancels
        http.stateless_entries.discard(entry)


def _entry_for(http, conn, initialize):
    """The session a handshake-era POST speaks to: its own for every POST --stateless, a new one
    for initialize, else the one its Mcp-Session-Id names (a second initialize too)."""
    # 2025-06-18 basic/transports: one it does not support MUST get 400; none means 2025-03-26
    version = conn.request.header("mcp-protocol-version", "2025-03-26")   # absent: 2025-03-26
    if version not in PROTOCOL_VERSIONS:
        raise _HttpError(400, "Unsupported MCP-Protocol-Version")
    if http.stateless:      # a session of one POST, past the handshake unless it is initialize
        if initialize:
            version = None
        entry = _HttpSession(http.server, None, version=version)
        http.stateless_entries.add(entry)
    elif initialize and not conn.request.header("mcp-session-id"):
        import secrets
        http.make_room()
        # 24 random bytes: unguessable, 32 visible ASCII characters (SECURITY.md R8, R9)
        entry = _HttpSession(http.server, http.node + secrets.token_urlsafe(24))
    else:
        return _lookup(http, conn)
    return http.own(entry, conn)


def _no_request(conn, stream, batch):
    """A POST that carried no request: 202, or 400 (409 for an id in use) with the errors.
    2025-11-25 basic/transports: a notification or response taken gets 202 and no body; one
    refused, an HTTP error whose body may be a JSON-RPC error."""
    errors = [message for message in stream.items if message is not _FINISHED]
    if not errors:
        conn.write(202, conn.cors, b"")
        return True
    status = 400
    # an id still in flight in this session: two answers would cross (SECURITY.md 1.6)
    if not batch and errors[0]["error"]["message"] == _ID_IN_USE:
        status = 409
    body = _encode_all(errors) if batch else encode(errors[0])
    conn.write(status, conn.cors + [("Content-Type", "application/json")], body)
    return True


async def _answer(conn, stream, headers, batch, era):
    """Write the responses to a POST: one JSON body if nothing came before the result,
    else an SSE stream of everything related, result last (`_sse`). Either is the server's
    choice; the client MUST take both (2025-11-25 basic/transports)."""
    responses, quiet = [], 0.0
    # A stream that turns SSE early (resumable: primed, so that its client can resume it) or
    # whose closing means a cancel (2026-07-28) is looked at each second.
    step = KEEPALIVE_INTERVAL
    if era.watches or stream.primes:
        step = min(KEEPALIVE_INTERVAL, 1.0)
    while True:
        conn.timer.set(step, stream.poke)
        message = await stream.get()
        if message is None or message is _FINISHED:   # None: the session ended (DELETE, expiry)
            break
        if message is _PART or (message is not _KEEPALIVE and "method" in message):
            return await _sse(conn, stream, headers, message)   # something before the result
        if message is not _KEEPALIVE:
            responses.append(message)
            continue
        if conn.left() or not await conn.authorized():    # its slot is freed (the work goes
            return False        # on; a 2026-07-28 listen ends with its session)
        quiet += step
        # A long wait turns the answer SSE, so that a keepalive holds its connection open.
        if not stream.json_only and (stream.primes or quiet >= KEEPALIVE_INTERVAL):
            keepalive = b": keepalive\n\n" if quiet >= KEEPALIVE_INTERVAL else b""
            return await _sse(conn, stream, headers, keepalive)
    conn.timer.clear()
    return await _json_answer(conn, stream, headers, batch, era, responses)


async def _json_answer(conn, stream, headers, batch, era, responses):
    """The responses, nothing having come before them, as one JSON body (a batch's: an array)."""
    if not responses and not stream.json_only:
        # Every request was cancelled: no response (cancellation), yet a POST that
        # carried requests is answered with a stream (transports): an empty one.
        return await _sse(conn, stream, headers, None)
    if not responses:
        conn.write(202, headers, b"")
        return True
    # 200 for a JSON-RPC error too: the transport names no status for one, HTTP statuses are
    # its own refusals; another era may say otherwise (2026-07-28: 404 for -32601)
    status = 200
    if era is not _HANDSHAKE:
        status = era.http_status(responses[0])
    headers = headers + [("Content-Type", "application/json")]
    if not batch:
        conn.write(status, headers, _encode_safely(responses[0]))
        return True
    # A batch's answers go out one at a time, each encoded in its dict's place, and let go once
    # written: the array is never built whole, nor copied (what its client's account was
    # charged for is what it costs).
    for i, message in enumerate(responses):
        responses[i] = (b"," if i else b"[") + (_encode_safely(message) or b"")
    responses.append(b"]")
    conn.write(status, headers, responses)
    for i, part in enumerate(responses):
        responses[i] = b""
        await conn.send(part)
    return True


async def _sse(conn, stream, headers, first):
    """The answer as an SSE stream: what it opens with (`_STREAMS.prime`), `first` (what came
    before the result, or a keepalive), then the rest (`hold`); `first` _PART ends it at once
    (ctx.close_sse_stream(): the client resumes it), None leaves it empty (all cancelled)."""
    # chunked, so that the connection outlives the stream; never to HTTP/1.0 (RFC 9112 6.1)
    conn.start_sse(headers, chunked=conn.request.version == "HTTP/1.1")
    stream.opened = bool(stream.number) and first is not None
    prime = b""
    if stream.opened:
        prime = _STREAMS.prime(conn, stream)
    if first is None or first is _PART:
        if prime:   # (an empty chunk would end the response: it is the last chunk's mark)
            await conn.send(conn.frame(prime))
        else:
            await conn.send(b"")
    else:
        if type(first) is not bytes:
            first = conn.event(first, stream)
        first = await conn.hold(stream, prime + first)
        if first is None:
            return False    # the client left (or its token ended): its connection ends
    # the answer sent, the stream ends (2025-11-25 basic/transports: SHOULD)
    await conn.send(conn.frame(b""))     # chunked: the last chunk
    if conn.trace:
        if first is _PART:
            conn.trace.note("out",
                            "(the server ends the SSE stream: the client resumes it with GET)")
        else:
            conn.trace.note("out", "(the SSE stream ends: every answer was sent)")
    return True


async def _mcp_get(http, conn):
    """GET /mcp: the session's stream for what the server says unasked (or, with Last-Event-ID,
    a stream resumed: the resumable streams extension). 2025-11-25 basic/transports: it
    carries requests and notifications, never a response (but in a replay); one per session
    (a second: 409, as the SDKs answer)."""
    if not _accepts(conn, None):
        raise _HttpError(406, "Accept must list text/event-stream")
    entry, events = _lookup(http, conn), []
    last = conn.request.header("last-event-id")
    stream = entry.standalone
    if last:
        stream, events = await _STREAMS.resume(http, entry, last)
    elif stream is not None and stream.attached:
        raise _HttpError(409, "A stream is already open for this session")
    elif stream is None or stream.closed:
        stream = entry.standalone = _STREAMS.open(entry)
    else:   # the session's own, which lost its connection: what came for it meanwhile first
        events = _STREAMS.unread(stream)
    conn.start_sse(conn.cors)
    if last and conn.trace:
        conn.trace.note("out",
                        f"(the stream resumes after {last}; events sent again: {len(events)})")
    first = b"" if last else _STREAMS.prime(conn, stream)
    try:
        await conn.hold(stream, first + b"".join(events), "(the GET /mcp stream closed)")
    finally:
        if stream.closed:
            entry.kept.pop(stream.number, None)
            if entry.standalone is stream:
                entry.standalone = None
        entry.last_active = _now()
    return False    # the stream had no length: its end is the connection's


async def _mcp_delete(http, conn):
    """DELETE /mcp: the client is done with the session (2025-11-25 basic/transports: SHOULD
    say so). What runs is cancelled and its id gets 404 from now on (SECURITY.md R12); 200, as
    the TypeScript SDK answers: the spec names no status."""
    entry = _lookup(http, conn)
    del http.sessions[entry.sid]
    entry.close(cancel=True)
    conn.write(200, conn.cors, b"")
    return True


def _accepts(conn, sse_needed):
    """Whether the Accept header lists what the answer may be (None: only SSE is asked about).
    Wildcards count, as the Python SDK takes them."""
    accept = _media_types(conn.request.header("accept"))
    if "*/*" in accept:
        return True
    json_ok = "application/json" in accept or "application/*" in accept
    sse_ok = "text/event-stream" in accept or "text/*" in accept
    if sse_needed is None:
        return sse_ok
    return json_ok and (sse_ok or not sse_needed)


def _lookup(http, conn):
    """The session the Mcp-Session-Id header names (2025-11-25 basic/transports): 400 without
    one (SHOULD, where sessions are required), 404 if unknown or ended (MUST)."""
    sid = conn.request.header("mcp-session-id")
    if not sid:
        raise _HttpError(400, "Missing Mcp-Session-Id header")
    return http.find(conn, sid, legacy=False)


_ROUTES.update({("POST", "/mcp"): _Route(_mcp_post), ("GET", "/mcp"): _Route(_mcp_get),
                ("DELETE", "/mcp"): _Route(_mcp_delete)})
_ALLOWED["/mcp"] = ("GET, POST, DELETE", "/mcp takes POST, GET and DELETE")


##############################################################################
# Core: stdio, one JSON message per line on stdin and stdout
##############################################################################
# How VS Code and Claude Desktop run a server they start themselves (2025-11-25 basic/transports):
# the client writes each message as one line of JSON to the server's stdin, and reads the server's
# answers, one a line, from its stdout; stderr is the server's own, for logs.

# SECURITY.md 1.5 and R29: a line is bounded, and one too long is dropped to its "\n", where
# asyncio's readline() would hand on its tail as the next line (and run it).
MAX_LINE_BYTES = 16 * 1024 * 1024   # a longer line gets one -32600 error and is skipped to its "\n"
READ_CHUNK = 1 << 16                # bytes asked of a pipe or socket per read
# seconds in-flight work may finish after stdin closes, SIGTERM or Ctrl-C; what is left is then
# answered -32603 (basic/lifecycle: a client ends stdio by closing stdin, then SIGTERM, SIGKILL)
SHUTDOWN_GRACE = 5.0


class _Lines:
    """Cuts a byte stream into lines on b"\n" only (never U+2028, never a bare CR: JSON whitespace).
    A line over `limit` bytes is skipped to its end (its tail never runs), and told once, when it
    ends, to ``too_long(head, tail)``: its first and last bytes, where its id is."""

    def __init__(self, too_long, limit=MAX_LINE_BYTES):
        self.buffer, self.too_long, self.limit = bytearray(), too_long, limit
        self.head = None        # while skipping a line: its first bytes (and `buffer` its last)

    def feed(self, chunk):
        """The lines `chunk` ends, without their "\n"; what follows the last waits in `buffer`."""
        lines, start = [], 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            # Past the limit: from here on only the line's head and its last _EDGE bytes are kept.
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
            elif end < 0:       # a line not ended yet: kept for the next chunk
                self.buffer += piece
            elif self.buffer:   # the end of a line begun in an earlier chunk
                lines.append(bytes(self.buffer + piece))
                self.buffer.clear()
            else:               # a whole line inside this chunk: no copy through the buffer
                lines.append(piece)
            if end < 0:
                return lines
            start = end + 1

    def end(self):
        """At EOF: a last line without "\n" still counts."""
        if self.buffer and self.head is None:
            return [bytes(self.buffer)]
        return []


_EDGE = 256     # bytes kept of each end of a message too long to read


def _unsent(session, message, size):
    """What goes out in place of a message with no room in the client's account: for a response,
    an error naming the bound (the answer dropped whole); for a request of ours, its waiter
    fails now; a notification is dropped. None: nothing."""
    if "method" not in message:
        return _dropped(session.account, message, size)
    if "id" in message:
        session._fail(message["id"], McpError(INTERNAL_ERROR, session.account.dropped(size)))
    return None



def _private_stdout(fd=1):
    """A private copy of `fd` for the protocol; fd 1 then points at stderr, so a
    stray print() in a tool (or a child process) cannot corrupt the stream: the server MUST
    NOT write to stdout anything but MCP messages (2025-11-25 basic/transports; SECURITY.md R30)."""
    out = os.dup(fd)
    if fd == 1:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return out


def _private_stdin(fd=0):
    """A private copy of `fd` for the protocol; fd 0 then reads the null device, so a child
    process a tool runs (git, anything that reads stdin when it is not a terminal) cannot take
    the client's next message, and input() in a tool sees an end rather than hanging."""
    own = os.dup(fd)
    if fd == 0:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    return own


class _Output:
    """Lines out on stdout. A pipe or a socket is written without blocking: what the client has
    not read yet waits here, charged to its account, while the loop goes on (the client's input,
    a cancel, a signal: a second one ends the process at once). A terminal or a file takes each
    line whole, at once."""

    def __init__(self, fd, loop, account, drained):
        self.fd, self.loop, self.account = fd, loop, account
        self.drained = drained      # called when what waited is all written
        self.unsent: collections.deque[memoryview] = collections.deque()
        self.dropped = 0        # log and progress notifications dropped meanwhile (`send`)
        self.empty = asyncio.Event()    # set while nothing waits
        self.empty.set()
        mode = os.fstat(fd).st_mode
        self.blocking = not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode))
        if not self.blocking:
            os.set_blocking(fd, False)

    def write(self, data, refusable=True):
        """Write `data` now, or what stdout does not take after what waits; False, and nothing
        written, if it does not fit the client's account (and is `refusable`). OSError: the
        client closed its end."""
        if self.blocking:
            view = memoryview(data)
            while view:     # a pipe may take part of it: the rest follows
                view = view[os.write(self.fd, view):]
            return True
        written = 0
        if not self.unsent:
            try:
                written = os.write(self.fd, data)
            except BlockingIOError:
                pass
        if written == len(data):
            return True
        rest = memoryview(data)[written:]
        if written or not refusable:    # a line begun must end, or the stream is broken
            self.account.hold(len(rest))
        elif not self.account.take(len(rest)):
            return False
        if not self.unsent:
            self.loop.add_writer(self.fd, self._flush)
            self.empty.clear()
        self.unsent.append(rest)
        return True

    def _flush(self):
        """stdout takes more: what waits goes, as much as it takes."""
        try:
            while self.unsent:
                first = self.unsent[0]
                written = os.write(self.fd, first)
                self.account.give(written)
                if written < len(first):
                    self.unsent[0] = first[written:]
                    return
                self.unsent.popleft()
        except BlockingIOError:
            return
        except OSError:     # the client closed its end: what waits is lost with it
            self.account.give(sum(len(view) for view in self.unsent))
            self.unsent.clear()
        self.loop.remove_writer(self.fd)
        self.empty.set()
        self.drained()

    async def flush(self, timeout):
        """Wait until what waits is written, `timeout` seconds at most."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.empty.wait(), timeout)

    def close(self):
        if self.unsent:
            self.loop.remove_writer(self.fd)
            self.account.give(sum(len(view) for view in self.unsent))
            self.unsent.clear()
        if not self.blocking:
            os.set_blocking(self.fd, True)     # it may be shared: as it came
        os.close(self.fd)


async def serve_stdio(server, stdin_fd=0, stdout_fd=1, trace=None, grace=None):
    """Serve one session over stdin/stdout (a private copy: `_private_stdout`) until stdin closes
    or it is cancelled (SIGTERM, Ctrl-C); what runs then gets `grace` s (SHUTDOWN_GRACE). Framing
    only: lines in, lines out. Reading pauses while the session is not `accepting` (the pipe holds
    the client back), until `on_ready`; what the client does not read waits in `_Output`, within
    its account. `trace`: the trace extension's, shown every line."""
    server.resolve()
    given, stdin_fd = stdin_fd, _private_stdin(stdin_fd)
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    paused = threaded = False
    go = threading.Event()              # the reader thread (if any) waits here to read on

    def send(message, related=None):   # a list: a batch's answers, one line (JSON-RPC SHOULD)
        # None: a request ended unanswered (cancelled)
        if message is None or session.state == "closed":
            return
        # Past half the account behind, logs and progress give way: the rest is for answers.
        behind = out.unsent and session.account.used * 2 > session.account.limit
        if behind and type(message) is dict and message.get("method") in _DROPPABLE:
            out.dropped += 1
            return
        try:
            if type(message) is list:   # a batch's answers, encoded and charged as they came
                if trace:               # (`batch`): a part at a time, let go once passed on
                    trace.message("out", "stdout", [json.loads(data) for data in message])
                for i, data in enumerate(message):
                    message[i] = b""
                    out.write((b"," if i else b"[") + data, refusable=False)
                out.write(b"]\n", refusable=False)
                return
            data = _encode_safely(message)
            if data is None:
                return
            if not out.write(data + b"\n"):
                message = _unsent(session, message, len(data))
                if message is None:
                    return
                out.write(encode(message) + b"\n", refusable=False)
        except OSError:     # the client closed its end (EPIPE): end quietly (SECURITY.md R30)
            session.state = "closed"
            session._closed("The client stopped reading")
            finished.set()
            return
        if trace:
            trace.message("out", "stdout", message)

    session = Session(server, send)
    session.loop = loop

    def drained():
        if out.dropped:
            _logger.warning("dropped %d log/progress notifications: the client is not reading",
                            out.dropped)
            out.dropped = 0
        if session.on_ready is not None and session.accepting:
            session.on_ready()
    out = _Output(_private_stdout(stdout_fd), loop, session.account, drained)

    def too_long(head, tail):
        # id null: the line was never parsed (JSON-RPC 2.0 5: an id that cannot be read is null)
        send(_error(None, INVALID_REQUEST, f"Message too long (over {MAX_LINE_BYTES} bytes)"))
    lines = _Lines(too_long)

    def feed(chunk):                    # on the loop: every line of a chunk goes in
        nonlocal paused
        if threaded and finished.is_set():  # serving ended (the reader thread read on): not served
            return
        if chunk:
            got = lines.feed(chunk)
        else:           # EOF: a last line without "\n" still counts
            got = lines.end()
        for line in got:
            line = line.removesuffix(b"\r")    # "\r\n" ends a line too (SECURITY.md R29)
            if line.strip():
                if trace:
                    trace.line("in", "stdin", line)
                if line.lstrip()[:1] == b"[":   # a batch (2025-03-26; other versions refuse it)
                    batch(line)
                else:
                    session.receive(line)
        if not chunk:                   # stdin's EOF: how a client ends the session
            finished.set()
        elif session.accepting:
            if threaded:
                go.set()
        else:       # the client is far ahead: let the pipe hold it, until `read_on`
            session.on_ready = read_on
            if not threaded:
                loop.remove_reader(stdin_fd)
                paused = True
                watch_hangup()

    def batch(line):     # 2025-03-26: the answers to a batch go out together, as one array
        answers, over = [], []
        taken: _Any = over      # until receive() says: how many it took, or None (refused whole)
        held = [0]      # bytes of the answers kept, charged to the client's account until sent

        def reply(message):         # False: a notification, which goes out on its own
            if message is None or "method" in message:
                return message is None
            # kept as its bytes, charged: the dict goes now, what is held is what was charged
            data = _encode_safely(message) or b""
            size = MESSAGE_COST + len(data)
            if session.account.take(size):
                held[0] += size
            else:
                data = encode(_unsent(session, message, size))
            answers.append(data)
            return True

        def done():
            over.append(True)
            if taken is not over:   # else receive() has not returned: sent below, in order
                flush()

        def flush():
            if taken is None:   # a batch refused whole gets its one error alone (not a list)
                send(json.loads(answers[0]))
            elif answers:
                send(answers)
            session.account.give(held[0])
        taken = session.receive(line, done, reply)
        if over:
            flush()

    def read_on():      # the session's on_ready while reading is paused (none else: it is
        nonlocal paused     # not called for every request's end)
        if finished.is_set():
            return
        session.on_ready = None
        if threaded:
            go.set()
        if paused:
            paused = False
            unwatch_hangup()
            loop.add_reader(stdin_fd, readable)

    # While paused, a client that closes its end (and may read no more of ours) is still heard:
    # what it wrote before can no longer grow (the pipe holds the rest), so it is read to its
    # EOF, which ends the session. Linux: an epoll of stdin asking no events reports the hang-up.
    hangup: _Any = None

    def watch_hangup():
        nonlocal hangup
        if hangup is None and hasattr(select, "epoll"):    # elsewhere a signal ends it
            hangup = select.epoll()
            hangup.register(stdin_fd, select.EPOLLRDHUP)    # a socket's half-close too
            loop.add_reader(hangup.fileno(), read_on)

    def unwatch_hangup():
        nonlocal hangup
        if hangup is not None:
            loop.remove_reader(hangup.fileno())
            hangup.close()
            hangup = None

    def readable():                     # the loop's own reader (POSIX pipes, sockets, ttys)
        try:
            chunk = os.read(stdin_fd, READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            loop.remove_reader(stdin_fd)
        feed(chunk)

    def reader():                       # a thread: Windows, or stdin redirected from a file
        try:
            while True:
                try:
                    chunk = os.read(stdin_fd, READ_CHUNK)
                except OSError:
                    chunk = b""
                go.clear()
                if finished.is_set():       # serving ended: nothing more is read
                    return
                try:
                    loop.call_soon_threadsafe(feed, chunk)
                except RuntimeError:        # the loop has closed
                    return
                if not chunk:
                    return
                go.wait()
        finally:
            os.close(stdin_fd)      # our copy

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
        finished.set()                  # `read_on` re-arms no reader (a thread reads on)
        session.on_ready = None
        unwatch_hangup()
        with contextlib.suppress(NotImplementedError, OSError, ValueError):
            loop.remove_reader(stdin_fd)
        if threaded:        # the thread reads on, sees the end, and closes our copy
            go.set()
    if grace is None:
        grace = SHUTDOWN_GRACE
    end = loop.time() + grace
    try:    # what was read still runs, waiting requests too, and is written, within the grace
        await session.stop(grace)
        await out.flush(end - loop.time())
    finally:
        session.close(cancel=True)
        out.close()     # the client reads EOF: the server is gone
        if not threaded:
            if given == 0:  # fd 0 as it came, for what runs next in this process
                os.dup2(stdin_fd, 0)
            os.close(stdin_fd)
    if cancelled:
        raise asyncio.CancelledError
    return 0



##############################################################################
# Core: the client, over stdio, Streamable HTTP and legacy HTTP+SSE
##############################################################################
# The same conversation from the other end: the capture's VS Code. The client opens the
# transport, sends initialize and notifications/initialized, then lists and calls; it answers
# what the server asks (sampling, elicitation, roots) with the handlers it was given. A
# transport (`_Transport`) moves messages; the Client is the JSON-RPC peer.

# one message from a server (a stdio line, an HTTP body, an SSE event): past it, it is skipped, and
# the request it answers fails at once, naming it (per Client: max_message_bytes=): a server must
# not be able to fill our memory with one event that never ends (SECURITY.md R33)
MAX_MESSAGE_BYTES = 64 << 20
# What a server can make this client hold unasked (issue 39): the requests of its that we serve,
# and our answers until they are written (each MESSAGE_COST besides its bytes). Past MAX_ASKED_BYTES
# less REFUSING_BYTES served, a request is not run: it gets -32603 naming the bound. An answer or
# refusal past MAX_ASKED_BYTES is dropped (logged): a server that floods us and never reads what we
# write costs us this much, no more.
MAX_ASKED_BYTES = 16 << 20
REFUSING_BYTES = 1 << 20
# our answers being sent at once: over HTTP each is a POST, a connection (a file descriptor) that a
# server may hold open; the rest wait their turn, charged, and our own requests still connect
MAX_ANSWERING = 4
MAX_RESPONSE_HEAD = 64 * 1024   # HTTP: a response's status line and headers; more -> McpError
STDERR_KEPT = 2048              # stdio: the end of the server's stderr, said if it exits at once
CONNECT_TIMEOUT = 10.0          # seconds to reach a server and see its endpoint
KILL_STEP = 2.0                 # seconds a stdio server gets to exit after EOF, then after SIGTERM,
                                # before SIGKILL (2025-11-25 basic/lifecycle, Shutdown)


class Client(_Peer):
    """An MCP client, async at heart (`SyncClient` for scripts).

    `target`: an ``http(s)://`` URL (Streamable HTTP; a 400, 404 or 405 to that probe falls back
    to legacy HTTP+SSE, as VS Code does), a command that starts a stdio server (a list, or a
    string split as a shell would, never run by one), or a `Server` in this process (no pipe or
    socket: for tests). `transport` "http" or "sse" uses that one at once (VS Code's "type": "sse").

    `era` "auto" tries 2026-07-28 (server/discover, the extension of that era), then the handshake
    (initialize, `protocol_version`); "2026-07-28" or "handshake" allow only one. The methods are
    the same in both, but for `subscribe` (a session's) and `listen` (2026-07-28's).

    Handlers answer the server's requests (in 2026-07-28, its input_required results):
    ``sampling(params)`` (with `sampling_tools`, its params may hold tools), ``elicitation(params)``
    (form mode), ``elicit_url(params) -> {"action"}`` (URL mode: show the URL, ask, open it), and
    `roots` (Root dicts, or a function returning them). Callbacks see notifications:
    ``on_log(params)``, ``on_notification(method, params)``. Over HTTP, `token` is a fixed bearer
    token; `auth` an `OAuth` (the authorization extension), which signs in on a 401. `trace`: a
    file for JSON Lines, "-" for stderr (the trace extension).

    Its life (basic/lifecycle): `connect` (or ``async with``) opens the transport and does the
    handshake; `close` ends it: stdio closes the server's input, then signals; HTTP sends DELETE.
    """

    def __init__(self, target: "str | list[str] | Server", *, token: str | None = None,
                 auth: _Any = None, timeout: float | None = None, name: str = "mcp_min",
                 era: str = "auto", protocol_version: str = LATEST_PROTOCOL_VERSION,
                 sampling: "_Answerer | None" = None, elicitation: "_Answerer | None" = None,
                 roots: list[_Json] | typing.Callable[[], list[_Json]] | None = None,
                 on_log: typing.Callable[[_Json], object] | None = None,
                 on_notification: typing.Callable[[str, _Json], object] | None = None,
                 trace: _Any = None, transport: str = "auto",
                 env: dict[str, str] | None = None, inherit_env: bool = True,
                 elicit_url: "_Answerer | None" = None, sampling_tools: bool = False,
                 max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        super().__init__()
        eras = ("auto", "handshake", *_CLIENT_ERAS)
        if era not in eras:
            raise ValueError(f"era must be one of {eras}")
        self.target, self.token, self.auth = target, token, auth
        self.timeout = timeout or REPLY_TIMEOUT     # every request times out (basic/lifecycle)
        self.max_message = max_message_bytes
        self.client_info = {"name": name, "version": __version__}
        self.era, self.requested_version = era, protocol_version
        self.log_level: str | None = None
        self.sampling, self.elicitation, self.roots = sampling, elicitation, roots
        self.elicit_url, self.sampling_tools = elicit_url, sampling_tools
        self.on_log, self.on_notification = on_log, on_notification
        if isinstance(trace, str):
            trace = _provided("Client trace")(trace, "client")
        self.trace = trace
        # A stdio server's environment: ours plus `env` (only `env`, if not `inherit_env`)
        self.transport_kind, self.env, self.inherit_env = transport, env, inherit_env
        self.server_info = self.server_capabilities = None     # what initialize answered
        self.protocol_version = self.instructions = None
        self.stateless: _Any = None     # the era spoken, if not the handshake's (`_CLIENT_ERAS`)
        self.extensions: dict[str, _Any] = {}   # each extension's own state for this client
        self._transport: _Transport | None = None
        self._progress: dict[_Any, _Callback] = {}     # progress token -> its request's callback
        self._tasks: set[asyncio.Task[_Any]] = set()   # what runs for the server, held
        # a request of the server's -> its answering
        self._asked: dict[_Any, asyncio.Task[_Any]] = {}
        # what the server makes us hold (MAX_ASKED_BYTES), and within it, the requests we serve
        self._memory = _Account(MAX_ASKED_BYTES, name="this client")
        self._serving = _Account(MAX_ASKED_BYTES - REFUSING_BYTES, self._memory, "this client")
        self._answering = asyncio.Semaphore(MAX_ANSWERING)

    async def __aenter__(self) -> "Client":  # noqa: PYI034 — typing.Self is 3.11's
        if self._transport:
            return self
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def capabilities(self) -> _Json:
        """What initialize says this client can do: what it was given handlers for."""
        caps: _Json = {}     # a server may ask only for what is declared here (basic/lifecycle)
        if self.sampling:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}    # 2025-11-25: tools
        # 2025-11-25: each mode named; an empty elicitation object would mean form mode alone
        modes: _Json = {}
        if self.elicitation:
            modes["form"] = {}
        if self.elicit_url:
            modes["url"] = {}
        if modes:
            caps["elicitation"] = modes
        if self.roots is not None:
            caps["roots"] = {}      # no listChanged: we announce none
        if self.stateless:
            caps = self.stateless.capabilities(self, caps)
        return caps

    @property
    def modern(self) -> bool:
        """Whether this client speaks 2026-07-28 with its server (no session, each request whole:
        the era an extension speaks, `stateless`), rather than the handshake's."""
        return self.stateless is not None

    async def connect(self) -> "Client":
        """Open a transport and begin the conversation: each of `_transports` in turn, the next
        only when the server refused the first's probe."""
        self._gone = None
        target = self.target
        try:
            kinds, target = self._transports(target)
            for kind in kinds:
                self._transport = transport = kind(target, self)
                try:
                    await transport.start()
                    await self._open(kind, target)
                    return self
                # 400, 404 or 405 to the probe: try legacy SSE (2025-11-25 basic/transports)
                except _Fallback:
                    await transport.close()
            raise McpError(CONNECTION_CLOSED, f"{target}: not an MCP endpoint")
        except BaseException:   # a failed connect leaves no child process or task behind
            await self.close()
            raise

    def _transports(self, target):
        """The transports to try for `target`, in order, and the target as they take it."""
        if isinstance(target, Server):
            return [_InMemory], target
        if isinstance(target, str) and target[:8].lower().startswith(("http://", "https://")):
            if self.transport_kind == "http":
                return [_StreamableHttp], target
            if self.transport_kind == "sse":
                return [_LegacySse], target
            return [_StreamableHttp, _LegacySse], target
        # split as a shell would, never run by one: a "; rm" stays an argument (SECURITY.md R33)
        import shlex
        if isinstance(target, str):
            return [_StdioClient], shlex.split(target)
        return [_StdioClient], list(target)

    async def _open(self, kind, target):
        """The conversation begins: an era of the extensions' that the server speaks (a stateless
        one needs no handshake), else initialize. The 2026-07-28 way to ask (basic/versioning):
        server/discover first; silence, or any error but one naming a version both speak, means
        the handshake."""
        era = self.era
        if era == "auto":
            era = _ERA_SPOKEN.get(repr(target))
        if era != "handshake" and kind is not _LegacySse:
            for name, speaks in _CLIENT_ERAS.items():
                if era in (None, "auto", name) and await speaks.discover(self):
                    self.stateless = speaks
                    break
        if self.stateless is None:
            await self._initialize()
        # remembered: a handshake-era server is not asked server/discover on every connect
        if self.era == "auto":
            _ERA_SPOKEN[repr(target)] = self.protocol_version if self.stateless else "handshake"

    async def _initialize(self):
        """The handshake (basic/lifecycle): the version we ask for, what we can do, who we are;
        then notifications/initialized. The server answers with our version if it speaks it, else
        with one of its own (Version Negotiation), which we take only if we know it."""
        result = await self.request("initialize", {
            "protocolVersion": self.requested_version, "capabilities": self.capabilities(),
            "clientInfo": self.client_info})
        version = result.get("protocolVersion")
        if version not in PROTOCOL_VERSIONS:    # lifecycle: disconnect if we cannot speak it
            await self.close()
            raise McpError(INVALID_REQUEST, f"server speaks protocol {version!r}, which we do not")
        # known before notifications/initialized: Streamable HTTP sends it as the
        # MCP-Protocol-Version header from that POST on (2025-06-18 basic/transports)
        self.protocol_version = version
        self.server_info = result.get("serverInfo", {})
        self.server_capabilities = result.get("capabilities", {})
        self.instructions = result.get("instructions")
        await self.notify("notifications/initialized")
        if self._transport:     # Streamable HTTP opens its GET stream, now that it has a session
            await self._transport.initialized()

    async def close(self) -> None:
        """End the transport's way (stdio: the server's shutdown; HTTP: DELETE); every request
        still waiting fails now with CONNECTION_CLOSED."""
        if self._transport:
            transport, self._transport = self._transport, None
            await transport.close()
        self._closed("Client closed")

    async def request(self, method: str, params: _Json | None = None, timeout: float | None = None,
                      on_progress: typing.Callable[[_Json], object] | None = None) -> _Any:
        """Send a request; return its result or raise McpError. On timeout the server is sent
        notifications/cancelled (basic/lifecycle, Timeouts: SHOULD). In another era (2026-07-28)
        the era sends it its own way."""
        if self._transport is None and not self._gone:
            raise McpError(CONNECTION_CLOSED, "Not connected")
        if self.stateless:
            return await self.stateless.request(self, method, params, timeout, on_progress)
        return await self._request_once(method, dict(params or {}), timeout, on_progress)

    async def _request_once(self, method, params, timeout=None, on_progress=None, id_=None):
        """One request and its answer (`id_`: the next, unless given)."""
        if id_ is None:
            id_ = next(self._ids)
        if on_progress:     # the request's id as its token: unique among those in flight (MUST)
            params["_meta"] = {**params.get("_meta", {}), "progressToken": id_}
            self._progress[id_] = on_progress
        try:
            return await self._exchange(id_, method, params or None, timeout or self.timeout,
                                        self._send)
        finally:
            self._progress.pop(id_, None)

    async def notify(self, method: str, params: _Json | None = None) -> None:
        """Send a notification: no answer ever comes, so only the sending is awaited."""
        await asyncio.wait_for(self._send(_notification(method, params)), self.timeout)

    async def _send(self, message: _Json) -> None:
        if self._transport is None:
            raise McpError(CONNECTION_CLOSED, self._gone or "Not connected")
        await self._transport.send(message)

    def _abandon(self, id_, method, reason, related=None):
        """Tell the server a request is abandoned, in the background: never wait on it. It stops
        and sends no answer; one already on its way is dropped (basic/utilities/cancellation)."""
        # the client MUST NOT cancel initialize (basic/utilities/cancellation)
        if method == "initialize" or self._transport is None:
            return
        # 2026-07-28 HTTP: by closing its stream
        if self.stateless and self.stateless.drop(self, id_):
            return

        async def tell():
            try:
                await self.notify("notifications/cancelled", {"requestId": id_, "reason": reason})
            # the connection is going: nothing will run it anyway
            except Exception as e:  # noqa: BLE001
                _logger.debug("could not cancel request %r: %s", id_, e)
        _background(self._tasks, tell())

    def _received(self, message, size=0):
        """Every message from the server comes through here (JSON text, or parsed from `size`
        bytes); a response's id is returned (what its transport waits for: a POST's stream that
        carried its answer needs no resuming)."""
        if isinstance(message, (bytes, str)):
            size = len(message)
            message = self._parsed(message)
            if message is None:
                return None
        try:
            kind = classify(message)
        except McpError:    # one bad message is skipped, never the whole stream
            _logger.warning("ignoring a malformed message from the server")
            return None
        if kind == "response":
            self._settle(message)
            return message["id"]
        if kind == "request":     # kept by its id: the server may cancel it
            cost = MESSAGE_COST + size
            if self._serving.take(cost):
                _background(self._tasks, self._answer(message, cost), self._asked, message["id"])
            else:   # not run: refused, naming the bound
                refusal = _error(message["id"], INTERNAL_ERROR, self._serving.refusal(cost))
                _background(self._tasks, self._reply(refusal, message["method"]))
        else:
            self._notified(message["method"], message.get("params") or {})
        return None

    def _notified(self, method, params):
        """A notification from the server, to whoever waits for it; bad params never raise."""
        fields = _object(params)
        asked, token = fields.get("requestId"), fields.get("progressToken")
        if self.stateless and self.stateless.notified(self, method, params):  # a listen's, say
            return
        # the server withdraws a request it sent us; progress counts only for a request waiting
        if method == "notifications/cancelled" and _is_id(asked) and asked in self._asked:
            self._asked.pop(asked).cancel()     # its handler stops: no answer
        elif method == "notifications/progress" and _is_id(token) and token in self._progress:
            self._call(self._progress[token], params)
        elif method == "notifications/message" and self.on_log:
            self._call(self.on_log, params)
        elif self.on_notification:
            self._call(self.on_notification, method, params)

    def _parsed(self, data, id_=None):
        """A message from the server parsed, or None: refused before parsing if parsing would
        multiply it (`_request_from`: past MAX_CONTAINERS, as the server refuses a client's), or
        not JSON. What it answers (`id_`, else the id read off its ends) then fails now."""
        if isinstance(data, str):
            data = data.encode()
        try:
            return _request_from(data)
        except McpError as e:
            _logger.warning("ignoring a malformed message from the server: %s", e.message)
            self._unread(id_, data[:_EDGE], data[-_EDGE:],
                         f"The server's message could not be read ({e.message})")
            return None

    def _too_big(self, id_=None, head=b"", tail=b""):
        """A message from the server past `max_message_bytes` was skipped: the request it
        answers fails now, naming the limit."""
        _logger.error("a message from the server over %d bytes was skipped", self.max_message)
        self._unread(id_, head, tail, f"The server's answer is over {self.max_message} bytes, "
                                      "this client's limit: raise it with "
                                      "Client(max_message_bytes=...)")

    def _unread(self, id_, head, tail, why):
        """A message from the server was not read: the request it answers (`id_`, else the id
        read off `head` or `tail`, its ends) fails now with `why`."""
        found = _EDGE_ID[0].match(head) or _EDGE_ID[1].search(tail)
        if id_ is None and found:
            # "00", a control byte, \xff: no id, not an error
            with contextlib.suppress(ValueError):
                id_ = json.loads(found.group(1))
        self._fail(id_, McpError(INTERNAL_ERROR, why))

    def _call(self, fn, *args):
        """A callback of the user's: a coroutine it returns runs on its own, and what it raises is
        logged; a callback never stops the reading of the server's messages."""
        try:
            result = fn(*args)
            if asyncio.iscoroutine(result):
                _background(self._tasks, result)
        except Exception:
            _logger.exception("client callback failed")

    async def _handle(self, method, params):
        """What we answer to the server's request (or input request): our handler's (`_ANSWERS`)."""
        if method == "ping":    # basic/utilities/ping: any peer MUST answer, promptly
            return {}
        url = method == "elicitation/create" and params.get("mode") == "url"
        what, option = _ANSWERS.get((method, url), (method, None))
        handler = None
        if option:
            handler = getattr(self, option)
        if handler is None:     # ours to refuse, not the server's: say so, and how to answer it
            message = f"This client declined the server's {what}: it has no handler for it"
            if option:
                message += f" (Client({option}=...))"
            # what we never declared is -32601 (client/roots says so of roots/list); a mode of
            # elicitation we did not declare, -32602 (2025-11-25 client/elicitation)
            if method == "elicitation/create" and self.capabilities().get("elicitation"):
                raise McpError(INVALID_PARAMS, message)     # it elicits, in the other mode only
            raise McpError(METHOD_NOT_FOUND, message)
        if method == "roots/list":
            roots = handler() if callable(handler) else handler
            return {"roots": list(typing.cast(_Any, roots))}
        result = handler(params)
        if asyncio.iscoroutine(result):
            result = await result
        return result

    async def _answers(self, asks, skip=()):
        """Our answers to the server's inputRequests (but those in `skip`): `_handle`'s. The
        retry carries them under the same keys (2026-07-28 basic/patterns/mrtr)."""
        answers = {}
        for key, ask in _object(asks).items():
            if key in skip:
                continue
            if type(ask) is dict:
                answers[key] = await self._handle(ask.get("method"), ask.get("params") or {})
            else:
                answers[key] = {}
        return answers

    async def _answer(self, message, cost):
        """Answer one request of the server's, `cost` charged while it is served. A handler's
        exception is -32603 with a constant message: its details go to our log, never to the
        server."""
        method, params = message["method"], message.get("params") or {}
        try:
            reply = _result(message["id"], await self._handle(method, params))
        except McpError as e:
            reply = _error(message["id"], e.code, e.message, e.data)
        except Exception:
            _logger.exception("handler for %s failed", method)
            reply = _error(message["id"], INTERNAL_ERROR, "Internal error")
        finally:
            self._serving.give(cost)
        await self._reply(reply, method)

    async def _reply(self, reply, method):
        """Send our answer to the server's `method` request, MAX_ANSWERING at once, charged (its
        bytes, and MESSAGE_COST) until written. One that does not fit is dropped: the server
        floods us, or does not read what we write (logged as `_Account.dropped` says).
        """
        try:
            size = MESSAGE_COST + len(encode(reply))
        except (TypeError, ValueError, RecursionError):     # a handler's answer is not JSON
            _logger.error("our answer to the server's %s is not JSON: %.200r", method, reply)
            reply = _error(reply["id"], INTERNAL_ERROR, "Internal error")
            size = MESSAGE_COST + len(encode(reply))
        if not self._memory.take(size):
            self._memory.dropped(size)
            return
        try:
            async with self._answering:
                if self._transport:     # closed meanwhile: no one to answer
                    await self._transport.send(reply)
        except Exception:  # noqa: BLE001 — the answer is lost, not the client
            _logger.warning("could not answer the server's %s", method)
        finally:
            self._memory.give(size)

    async def _all(self, method):
        """Every page of a list. A cursor is opaque: sent back as it came, never read
        (basic/utilities/pagination); one seen before would loop forever."""
        items, cursor, seen = [], None, set()
        while True:
            params = None
            if cursor:
                params = {"cursor": cursor}
            page = await self.request(method, params)
            items += page.get(_LISTS_OF.get(method, method.partition("/")[0])) or []
            cursor = page.get("nextCursor")
            if not cursor:
                if method == "tools/list" and self.stateless:
                    return self.stateless.tools(self, items)
                return items
            if type(cursor) is not str:
                raise McpError(INVALID_REQUEST, f"{method}: the server's cursor is not a string")
            if cursor in seen:      # a server going round in circles
                raise McpError(INVALID_REQUEST, f"{method}: the server repeated a cursor")
            seen.add(cursor)

    async def ping(self) -> _Json:
        """{} if the server answers (2026-07-28 has no ping: server/discover stands in)."""
        if self.stateless:
            await self.request("server/discover")
            return {}
        return await self.request("ping")

    async def list_tools(self) -> list[ToolInfo]:
        """Every tool, every page. Over 2026-07-28 HTTP, a tool with invalid x-mcp-header marks
        is left out (MUST): its calls could not carry the headers the server checks."""
        return await self._all("tools/list")

    @typing.overload
    async def call_tool(self, name: str, arguments: _Json | None = None,
                        on_progress: _Callback | None = None,
                        timeout: float | None = None, task: typing.Literal[False] = False,
                        on_status: _Callback | None = None) -> CallToolResult: ...
    # With task true, a TaskHandle: the tasks extension's, which the core's annotations cannot
    # name (the core alone must pass a type checker too); `task=flag`, a bool, ends here too
    @typing.overload
    async def call_tool(self, name: str, arguments: _Json | None = None,
                        on_progress: _Callback | None = None,
                        timeout: float | None = None, *, task: bool,
                        on_status: _Callback | None = None) -> _Any: ...

    async def call_tool(self, name: str, arguments: _Json | None = None,
                        on_progress: _Callback | None = None,
                        timeout: float | None = None, task: bool = False,
                        on_status: _Callback | None = None) -> _Any:
        """The CallToolResult; a tool's failure is ``result["isError"]``, not an exception. If the
        server answers with a task (2026-07-28's tasks extension), it is polled until it ends,
        within `timeout` (else its ttlMs), and cancelled if this is; ``on_status(task)`` sees its
        status change. With `task`, a `TaskHandle` instead, to poll or cancel yourself.
        An unknown tool is McpError (-32602); a tool's failure an isError result, so that the
        model reads what went wrong and can try again (2025-11-25 server/tools)."""
        began = asyncio.get_running_loop().time()
        answer = await self.request("tools/call", {"name": name, "arguments": arguments or {}},
                                    timeout=timeout, on_progress=on_progress)
        if type(answer) is not dict:
            raise McpError(INTERNAL_ERROR, "The server's answer to tools/call is not an object")
        if task or answer.get("resultType") == "task":
            left = None
            if timeout is not None:
                left = timeout - (asyncio.get_running_loop().time() - began)
            return await _provided("Client.call_tool task")(self, answer, task, left, on_status)
        return answer

    async def list_resources(self) -> list[_Json]:
        return await self._all("resources/list")

    async def list_resource_templates(self) -> list[_Json]:
        return await self._all("resources/templates/list")

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """The resource's contents; an unknown URI is McpError -32002 (2026-07-28: -32602)."""
        return await self.request("resources/read", {"uri": uri})

    async def subscribe(self, uri: str) -> _Json:
        """Hear notifications/resources/updated for `uri` (on_notification) until unsubscribed."""
        return await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> _Json:
        return await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self) -> list[_Json]:
        return await self._all("prompts/list")

    async def get_prompt(self, name: str,
                         arguments: dict[str, str] | None = None) -> GetPromptResult:
        """The prompt's messages, `arguments` filled in: each value a string (server/prompts)."""
        return await self.request("prompts/get", {"name": name, "arguments": arguments or {}})

    async def complete(self, ref: _Json, argument: str, value: str,
                       context: dict[str, str] | None = None) -> _Json:
        """Completions for `argument`; `ref` is {"type": "ref/prompt", "name": ...}
        or {"type": "ref/resource", "uri": ...}. At most 100 values come back, best first;
        `context` holds the arguments already chosen (2025-06-18 server/utilities/completion)."""
        params = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        return (await self.request("completion/complete", params))["completion"]

    async def set_log_level(self, level: str) -> _Json:
        """The server's notifications/message at `level` and above from now on (to `on_log`)."""
        if self.stateless:  # 2026-07-28: each request asks for the log messages it wants
            self.log_level = level
            return {}
        return await self.request("logging/setLevel", {"level": level})

    async def listen(self, on_tools: "_Callback | None" = None,
                     on_prompts: "_Callback | None" = None,
                     on_resources: "_Callback | None" = None, on_updated: "_Callback | None" = None,
                     uris: typing.Iterable[str] = ()) -> _Json:
        """2026-07-28: hear of changes, until the server ends the stream (this then returns) or
        this is cancelled. Each callback given is called with the params of its notification:
        the tool, prompt or resource list changed, or a resource of `uris` was updated."""
        return await _provided("Client.listen")(self, on_tools, on_prompts, on_resources,
                                                on_updated, uris)

    async def list_skills(self) -> list[_Json]:
        """The skills the server offers (SEP-2640, the skills extension): skills/list entries
        {uri, frontmatter, resources}, every page; [] if it offers none. Nothing is read ahead."""
        return await _provided("Client.list_skills")(self)

    async def load_skill(self, skill: "_Json | str") -> str:
        """A skill's SKILL.md, checked against its entry (from `list_skills`, or skills/get of
        this SKILL.md URI): its size, digest and front matter. McpError if one differs."""
        return await _provided("Client.load_skill")(self, skill)

    async def read_skill_file(self, skill: _Json, uri: str) -> bytes:
        """A file of `skill` (its URI, or its path in the skill's folder: "references/FORMS.md"),
        checked: only a file its entry lists, of the size and sha256 listed (a "dynamic" skill
        lists none: any file in its folder, unchecked). McpError if not."""
        return await _provided("Client.read_skill_file")(self, skill, uri)


# Where the id of a message too big to read is: near its start, or (the TypeScript SDK's order)
# at its end.
_EDGE_ID = (
    re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
               rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,99}")'),
    re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,99}")'
               rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'),
)
# The server's requests a handler answers: (method, URL mode) -> what a refusal calls it, the
# Client option.
_ANSWERS = {("sampling/createMessage", False): ("sampling request", "sampling"),
            ("elicitation/create", False): ("form elicitation", "elicitation"),
            ("elicitation/create", True): ("URL elicitation", "elicit_url"),
            ("roots/list", False): ("roots/list request", "roots")}
# server (URL, command) -> the era it spoke (a handshake-era one: not asked again)
_ERA_SPOKEN: dict[str, str | None] = {}
# the eras beside the handshake a client may speak (2026-07-28's)
_CLIENT_ERAS: dict[str, _Any] = {}
# what else the client's methods return whose coroutines SyncClient waits for
_SYNCED: list[type] = []
# Set around a request a client sends of its own accord (the CLI's tools/list, a 2026-07-28
# round sent again with its answers), so that a trace (the trace extension) says why it was sent.
_TRACE_WHY: "contextvars.ContextVar[str | None]" = contextvars.ContextVar("mcp_min_why",
                                                                          default=None)


def _background(tasks, coroutine, index=None, key=None):
    """Run `coroutine` as a task held in `tasks` until it ends (the loop holds tasks weakly),
    and in ``index[key]`` if given, until it ends or another task takes that place."""
    task = asyncio.ensure_future(coroutine)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    if index is not None:
        index[key] = task

        def forget(_):
            if index.get(key) is task:
                index.pop(key)
        task.add_done_callback(forget)
    return task


class SyncClient:
    """`Client` for scripts and the REPL: the same methods, without ``await``.

    >>> server = Server("greeter")
    >>> @server.tool()
    ... def greet(name: str) -> str:
    ...     return f"Hello, {name}!"
    >>> with SyncClient(server) as c:     # or a URL, or "python3 mcp_min.py serve"
    ...     c.call_tool("greet", {"name": "Ada"})["content"][0]["text"]
    'Hello, Ada!'
    """

    def __init__(self, target, **options):
        # A loop of its own, on a thread: the caller may have no loop, or be inside one (a
        # notebook) where run_until_complete cannot run.
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client",
                                        daemon=True)
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
        if not self._thread.is_alive():     # else left (a daemon): a running loop cannot close
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
            if isinstance(result, tuple(_SYNCED)):  # a TaskHandle (the tasks extension)
                return _Synced(result, self.run)
            return result
        return wait


# The client's transports: how a message reaches the server, and how the server's come back.
#   stdio            a line on the server's stdin; its lines on stdout (2025-11-25 basic/transports)
#   Streamable HTTP  a POST per message, answered on that POST (JSON or SSE); what the server says
#                    unasked comes on a GET stream (2025-03-26 on)
#   legacy HTTP+SSE  one GET stream for all the server says; a POST per message, answered 202
#                    (2024-11-05)
#   in memory        a Session of this process, handed the same JSON text (tests)
# HTTP is spoken by hand (`_http`): one request per connection, so no answer is ever read as
# another's, and every limit is ours.


class _Transport:
    """A client transport: coroutines `start`, `send` (McpError(CONNECTION_CLOSED) if it
    cannot), `initialized` (after the handshake) and `close`. What arrives goes to
    ``client._received``; loss is told as to any `_Peer` (`_fail`, `_closed`). Over HTTP,
    every exchange goes through `_request`."""
    url = ""    # HTTP: the endpoint, which an OAuth token is for

    # each kind has its own: this says how
    def __init__(self, target: _Any, client: "Client") -> None:
        self.client = client                                        # Client.connect makes one

    async def start(self) -> None:
        pass

    async def initialized(self) -> None:
        """The handshake is over: Streamable HTTP opens its GET stream (it needs the session)."""

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
        """HTTP: one exchange with `url` (McpError if it cannot be reached), our token in its
        header, never in the URL. After a 401, or a 403 insufficient_scope, an `OAuth` (the
        authorization extension) signs in and it goes again (`auth.tries` times at most); else
        the answer stays as it came. 2025-11-25 basic/authorization: a token in every request,
        never in the query string; a 403 insufficient_scope asks for more scopes (step-up)."""
        auth, tries = self.client.auth, 0
        while True:
            token = self.client.token
            if auth:
                token = auth.token(self.url)
            sent, bearer = headers, None
            if token:
                bearer = f"Bearer {token}"
                sent = {**headers, "Authorization": bearer}
            try:
                response = await _http(url, method, sent, body, self.client.trace)
            except OSError as e:
                raise McpError(CONNECTION_CLOSED, f"cannot reach {url}: {e}") from None
            challenge, status = response.headers.get("www-authenticate", ""), response.status
            # 401: no token, or a bad one; 403 insufficient_scope: a good one lacks a scope
            # (RFC 6750 3.1)
            refused = status == 401 or (status == 403 and "insufficient_scope" in challenge)
            if not (auth and sign_in and refused) or tries == auth.tries:
                return response
            response.close()
            # no better token came of it: the refusal stands
            if not await auth.challenged(self.url, status, challenge, bearer, self.client.trace):
                return response
            tries += 1


class _InMemory(_Transport):
    """A `Server` in this very process as the client's transport: the same JSON text as
    on a wire, handed over without a pipe or a socket."""

    def __init__(self, server, client):
        self.client = client
        self.session = Session(server, self._deliver)

    def _deliver(self, message, related):
        """What the session sends, as the text a wire carries: the client checks it as it would."""
        if message is None:
            return
        data = _encode_safely(message)
        if data is not None:
            self._trace("message", "in", "memory", message)
            self.client._received(data)     # as from a pipe: a duplicate key ... is skipped

    async def send(self, message):
        self._trace("message", "out", "memory", message)
        self.session.receive(encode(message))   # as text: the server parses it as from a peer

    async def close(self):
        self.session.close(cancel=True)     # no one is left to answer: what runs is cancelled


class _Fallback(Exception):
    """The URL did not take a Streamable HTTP initialize: try legacy SSE."""


class _StdioClient(_Transport):
    """Spawns the server (argv list, no shell: SECURITY.md R33) and speaks lines on its pipes:
    one JSON-RPC message per line each way (2025-11-25 basic/transports). The server's stderr
    is its log, left on ours: a client MAY show or ignore it, and SHOULD NOT take it for errors."""

    def __init__(self, argv, client):
        self.argv, self.client = argv, client
        self.process: _Any = None
        self._reader: asyncio.Future[None] | None = None
        self._errors: int | None = None     # POSIX: our end of the server's stderr
        self.said = b""     # the last STDERR_KEPT bytes of the server's stderr
        self.all_said = asyncio.Event()     # ... and its end

    async def start(self):
        if not self.argv:
            raise ValueError("the command that starts the server is empty")
        # In a process group of its own, so that close() ends what it started too (npx, uvx
        # and shell wrappers run the server as a grandchild), and Ctrl-C here is ours alone.
        group: _Json = {"creationflags": 0x200}     # CREATE_NEW_PROCESS_GROUP
        if os.name == "posix":
            group = {"start_new_session": True}
        env = self.client.env      # None: ours as it is
        if env is not None and self.client.inherit_env:
            env = {**os.environ, **env}
        pipe = asyncio.subprocess.PIPE
        # POSIX: its stderr on a pipe of our own, passed on as it comes (`_heard`); asyncio's
        # would hold up process.wait() while a process the server started keeps it open.
        # Elsewhere the server's stderr is ours.
        errors = os.pipe() if os.name == "posix" else None
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdin=pipe, stdout=pipe, stderr=errors and errors[1], **group,
                env=env)
        except OSError as e:
            if errors:
                os.close(errors[0])
            url = ""
            # "localhost:8080" without http:// was taken for a command: say so
            if len(self.argv) == 1 and ":" in self.argv[0]:
                url = " (a URL needs http:// or https://)"
            raise McpError(CONNECTION_CLOSED, f"cannot start the server {self.argv[0]!r}: "
                           f"{e.strerror}{url}") from None
        finally:
            if errors:
                os.close(errors[1])     # the server's end
        if errors:
            import codecs
            self._errors = errors[0]
            self._text = codecs.getincrementaldecoder("utf-8")("replace")   # a character cut
            os.set_blocking(self._errors, False)                            # between reads
            asyncio.get_running_loop().add_reader(self._errors, self._heard)
        self._reader = asyncio.ensure_future(self._read())

    def _heard(self):
        """The server's stderr passed on to ours as it comes (a pipe nobody read would fill,
        and the server would stall on a log); its last STDERR_KEPT bytes kept, to say why it
        ended."""
        if self._errors is None:
            return
        try:
            chunk = os.read(self._errors, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._deaf()
            return
        self.said = (self.said + chunk)[-STDERR_KEPT:]
        with contextlib.suppress(Exception):    # ours closed or gone: the server goes on
            sys.stderr.write(self._text.decode(chunk))
            sys.stderr.flush()

    def _deaf(self):
        """The server's stderr is at its end, or no longer ours to read."""
        if self._errors is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._errors)
            os.close(self._errors)
            self._errors = None
        self.all_said.set()

    async def _why(self, why):
        """`why` the server is lost to us, with its exit status and its stderr's last lines
        when it exits at once (a bad argument, an import error ...)."""
        with contextlib.suppress(asyncio.TimeoutError):
            status = await asyncio.wait_for(self.process.wait(), 1.0)
            if self._errors is not None:    # to its end: the last lines are there
                await asyncio.wait_for(self.all_said.wait(), 1.0)
            why += f": it exited with status {status}"
            lines = self.said.decode(errors="replace").strip().splitlines()[-3:]
            if lines:
                why += "; its stderr ended: " + " | ".join(line.strip() for line in lines)
        return why

    async def _read(self):
        """The server's stdout cut into lines, each to the client; one past max_message_bytes is
        skipped, and what it answered fails. At EOF the server is gone: every request still
        waiting fails now, not at its timeout."""
        def too_big(head, tail):
            self.client._too_big(None, head, tail)
        lines = _Lines(too_big, self.client.max_message)
        why = "The server closed its output"
        try:
            while True:
                chunk = await self.process.stdout.read(READ_CHUNK)
                if chunk:
                    got = lines.feed(chunk)
                else:       # EOF: a last line without "\n" still counts
                    got = lines.end()
                for line in got:
                    if line.strip():    # a blank line carries nothing
                        self._trace("line", "in", "stdout", line)
                        self.client._received(line)
                if not chunk:
                    why = await self._why(why)
                    return
        finally:
            self.client._closed(why)

    async def send(self, message):
        """One line on the server's stdin: `encode` writes no raw newline, so the line is the
        message."""
        self._trace("message", "out", "stdin", message)
        try:
            self.process.stdin.write(encode(message) + b"\n")
            await self.process.stdin.drain()     # a server that reads slowly holds us here
        except AttributeError:      # it never started
            raise McpError(CONNECTION_CLOSED, "The server is gone") from None
        except ConnectionError:     # it exited
            # its stdin's end holds the same error, which 3.10 logs unless someone waits on it
            with contextlib.suppress(ConnectionError):
                await self.process.stdin.wait_closed()
            raise McpError(CONNECTION_CLOSED, await self._why("The server is gone")) from None

    async def close(self):
        """stdio shutdown (2025-11-25 basic/lifecycle, Shutdown): close stdin, wait; then
        SIGTERM; then SIGKILL: each step KILL_STEP seconds, each signal to the server's whole
        process group (on Windows: the server)."""
        import signal
        process = self.process
        if process is None:
            return
        try:
            process.stdin.close()
        # already broken: the steps below still end the process
        except Exception as e:  # noqa: BLE001
            _logger.debug("closing the server's stdin: %s", e)
        # (Windows has no SIGKILL: its server gets terminate(), then one more wait)
        for signum in (None, signal.SIGTERM, getattr(signal, "SIGKILL", None)):
            try:
                if signum and os.name == "posix":
                    os.killpg(process.pid, signum)
                elif signum == signal.SIGTERM:
                    process.terminate()
            except (ProcessLookupError, PermissionError):     # none left to signal
                break
            if await self._ended(process):
                break
        if self._reader:
            self._reader.cancel()
        self._deaf()    # a process the server started may hold its stderr: not ours to wait for

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
        # here on POSIX: one of the group outlived the deadline; elsewhere: whether the server ended
        return process.returncode is not None and os.name != "posix"


class _HttpResponse:
    """A response as `_http` read it: its status, its headers (names lower case), and its body
    still on the connection, read once: by `body`, `chunks` or `events`. The connection served
    this request alone, and closes with it."""

    def __init__(self, status, headers, reader, writer, trace=None, head=""):
        self.status, self.headers, self.reader, self.writer = status, headers, reader, writer
        self.untraced = (trace, head) if trace else None    # traced with its body, if read
        self.trace = trace      # this connection's view of the client's trace (the trace extension)

    def _trace(self, body=None):
        if self.untraced:
            (trace, head), self.untraced = self.untraced, None
            trace.http("in", head, self.headers, body)

    async def chunks(self, trace=True):
        """The body, piece by piece, as framed by the headers: chunked, sized, or to the
        connection's end (RFC 9112 6.3: a 204 or 304 has none; chunked wins over a length)."""
        if trace:
            self._trace()   # a stream's head before its events
        reader = self.reader
        if self.status in (204, 304):
            return
        if "chunked" in self.headers.get("transfer-encoding", ""):
            while True:     # size [; extensions] CRLF: extensions ignored (RFC 9112 7.1.1)
                size = _size((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
                if not size:
                    break
                async for piece in self._pieces(size):
                    yield piece
                await reader.readexactly(2)     # the chunk's CRLF
            await reader.readuntil(b"\r\n")     # the last chunk's (empty) trailer
        elif "content-length" in self.headers:
            async for piece in self._pieces(_size(self.headers["content-length"], 10)):
                yield piece
        else:
            while True:
                data = await reader.read(READ_CHUNK)
                if not data:
                    break
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
                size += len(chunk)
                if size > limit:
                    raise McpError(INTERNAL_ERROR, f"HTTP response over {limit} bytes")
        except BaseException:   # timed out, cancelled, cut short: the connection goes too
            self.close()
            raise
        finally:
            data = b"".join(pieces)
            self._trace(data)   # the head with its body: one record
        return data

    async def events(self, client, closed):
        """The SSE events of this response, each traced; one past the client's max_message_bytes
        fails the request it answers. A stream that breaks (reset, bad framing) just ends. A
        server that never ends an event costs us that limit, no more (SECURITY.md R33)."""
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
    """A body or chunk size as sent: digits only (no sign, no spaces), or ValueError. int()
    would take "+5", " 5" or "٥": two readers of the same bytes would then disagree on where a
    body ends."""
    digits = text.decode("latin-1") if isinstance(text, bytes) else text
    if not digits or len(digits) > 12 or not set(digits) <= _DIGITS[base]:
        raise ValueError(f"bad HTTP body size {digits[:20]!r}")
    return int(digits, base)


async def _http(url, method, headers, body=b"", trace=None, hops=5):
    """One HTTP/1.1 request on a new connection; a 307 or 308 is followed, `hops` times
    at most, with the same method and body (RFC 9110 15.4.8, 15.4.9); a 301 or 302 is not: a
    client may turn its POST into a GET (15.4.2, 15.4.3)."""
    parts = urllib.parse.urlsplit(url)
    tls = parts.scheme == "https"
    # origin-form: path and query; an empty path MUST be sent as "/" (RFC 9112 3.2.1)
    target = parts.path or "/"
    if parts.query:
        target += f"?{parts.query}"
    if trace:   # before connecting: a refused one shows what was tried
        trace = trace.on()
        trace.http("out", f"{method} {target}", headers, body)
    port = parts.port or (443 if tls else 80)
    # ssl=True: the default context (certificate and host name checked); a response head past
    # MAX_RESPONSE_HEAD stops readuntil: a server cannot make us buffer without end
    reader, writer = await asyncio.wait_for(asyncio.open_connection(
        parts.hostname, port, ssl=tls, limit=MAX_RESPONSE_HEAD), CONNECT_TIMEOUT)
    # Host: the URL's host and port, never its user:password@ (RFC 9110 7.2)
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body or method == "POST":    # a POST says its length, 0 too (RFC 9110 8.6)
        lines.append(f"Content-Length: {len(body)}")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    try:
        status, reason, response_headers = await _response_head(reader)
    except asyncio.LimitOverrunError:
        writer.close()
        raise McpError(CONNECTION_CLOSED, f"{url}: response head too large (over "
                                          f"{MAX_RESPONSE_HEAD} bytes)") from None
    except BaseException:   # cancelled too: the connection goes with the request
        writer.close()
        raise
    location = response_headers.get("location")
    if status in (307, 308) and hops and location:
        target = urllib.parse.urlsplit(urllib.parse.urljoin(url, location))
        if target.scheme == "https" or target.scheme == parts.scheme:     # never down to plain http
            writer.close()
            if target[:2] != parts[:2]:     # another origin: our token does not go there
                headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            return await _http(target.geturl(), method, headers, body, trace, hops - 1)
    return _HttpResponse(status, response_headers, reader, writer, trace, reason)


async def _response_head(reader):
    """The status, its line's rest and the headers of a response (1xx ones skipped: 100
    Continue and 103 Early Hints come before the real one; RFC 9110 15.2: a client MUST
    take them)."""
    while True:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REPLY_TIMEOUT)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        version, _, rest = status_line.partition(" ")
        # not HTTP/1.x: a TLS port spoken to in plain text, say; nothing here can be read
        if not (version.startswith("HTTP/1.") and _ASCII_DIGITS.fullmatch(rest[:3])):
            raise ConnectionError(f"not an HTTP response: {status_line[:40]!r}")
        if int(rest[:3]) >= 200:
            headers = {}
            for line in lines:
                name, colon, value = line.partition(":")
                if not colon:
                    continue
                name, value = name.strip().lower(), value.strip()
                # two lengths that differ: where the body ends is unknowable, and the response
                # MUST be discarded (RFC 9112 6.3)
                if name == "content-length" and headers.get(name, value) != value:
                    raise ConnectionError("the response gives two Content-Lengths")
                headers[name] = value
            return int(rest[:3]), rest, headers


def _http_error(status, body, url):
    """An HTTP error answer as the McpError it means: the JSON-RPC error it carries, if any."""
    if status == 401:
        return McpError(CONNECTION_CLOSED, "HTTP 401: the server wants a valid --token (or --auth)")
    # a refusal's body MAY be a JSON-RPC error (2025-11-25 basic/transports): it says more
    with contextlib.suppress(Exception):
        detail = json.loads(body)["error"]
        return McpError(detail["code"], detail["message"], detail.get("data"))
    return McpError(CONNECTION_CLOSED, _http_status(status, url))


def _http_status(status, url):
    """An HTTP status from `url` in words: a 404 at a path that names no MCP endpoint says
    where servers usually answer."""
    where = ""
    if status == 404 and not urllib.parse.urlsplit(url).path.rstrip("/").endswith(("/mcp", "/sse")):
        where = ": MCP servers usually answer at /mcp (or /sse, the legacy transport)"
    return f"HTTP {status} from {url}{where}"


class _SseParser:
    """WHATWG server-sent events from bytes ("Parsing an event stream", HTML Living Standard):
    yields dicts (event, data, id, retry).

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
        # the event is too big: [head, tail] of its data alone
        self.big: list[bytes] | None = None

    def feed(self, data):
        """The events that `data` completes (bytes as they came, cut anywhere)."""
        if not data:
            return []
        if self.after_cr and data.startswith(b"\n"):
            data = data[1:]         # the LF of a CRLF split between two pieces
        self.after_cr = data.endswith(b"\r")
        *lines, rest = _SSE_LINE_ENDS.split(data)   # `rest`: a line whose end has not come
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
        """Keep the data's first bytes (from the first data line, or this one) and go on without it.
        """
        if self.big is None:
            first = self.data[0] if self.data else head
            self.big = [bytes(first[:_EDGE]), b""]
        self.data, self.size = [], 0

    def _line(self, events):
        """A line ended ("Interpreting an event stream"): a blank one dispatches the event, one
        starting with ":" is a comment (a keepalive), else "field: value"; unknown fields are
        ignored."""
        line, long, length = bytes(self.line), self.long, self.length
        self.line, self.long, self.length = bytearray(), None, 0
        if not self.started:    # the first line may start with a byte order mark
            self.started = True
            if (long or line).startswith(_BOM):
                length -= len(_BOM)
                if long:
                    long = long[3:]
                else:
                    line = line[3:]
        if long is None and not line:
            return self._dispatch(events)
        # A line read whole is `line`; of one too long, `long` is its head and `line` its tail.
        whole = long is None
        field, colon, value = (long or line).partition(b":")
        if field[:1] == b"" and colon:      # a comment
            return None
        space = value.startswith(b" ")     # "data: x" and "data:x" say the same
        if space:
            value = value[1:]
        size, tail = len(value), value
        if not whole:   # its size from its length as read, its last bytes from its tail
            size = length - len(field) - len(colon)
            if space:
                size -= 1
            tail = line
        if field == b"data":
            self._data(value, size, length, tail)
        elif length > self.limit:
            self._too_big(b"")
        elif field == b"id" and b"\0" in value:
            pass        # WHATWG: an id with NUL is ignored (no Last-Event-ID could carry it)
        elif field in (b"event", b"id", b"retry"):
            self.event[field.decode()] = value.decode("utf-8", "replace")
        return None

    def _data(self, value, size, length, tail):
        """A data line: its value joins the event's, unless that makes the event too big (of
        which only the first and last bytes are kept: where its id is)."""
        if self.big is None:
            self.size += size + 1
            if self.size > self.limit or length > self.limit:
                self._too_big(value)
            else:
                self.data.append(value)
        if self.big is not None:
            self.big[1] = tail[-_EDGE:]

    def _dispatch(self, events):
        """A blank line: the event read is dispatched if it has data ("message" when it names no
        type). One without data is not (WHATWG), yet its id and retry are passed on: a priming
        event (2025-11-25 basic/transports) gives the client an id to resume from."""
        if self.big:
            events.append({"event": self.event.get("event") or "message",
                           "too_big": tuple(self.big)})
        elif self.data:
            self.event["event"] = self.event.get("event") or "message"
            self.event["data"] = b"\n".join(self.data).decode("utf-8", "replace")
            events.append(self.event)
        else:   # no data, so no event: only its id and retry count
            kept = {key: value for key, value in self.event.items() if key in ("id", "retry")}
            if kept:
                events.append(kept)
        self.event, self.data, self.size, self.big = {}, [], 0, None


_SSE_LINE_ENDS = re.compile(rb"\r\n|\r|\n")     # WHATWG: CRLF, LF, or a CR alone
_ASCII_DIGITS = re.compile(r"[0-9]{1,12}")     # str.isdigit() takes "²", which int() refuses
_BOM = b"\xef\xbb\xbf"     # U+FEFF in UTF-8: one, first in the stream, is dropped (WHATWG)


# Whether this task initializes again after a 404 (and the tasks it starts): a 404 then fails,
# rather than wait for a re-initialize that is itself.
_REINITIALIZING = contextvars.ContextVar("mcp_min_reinitializing", default=False)


class _StreamableHttp(_Transport):
    """Streamable HTTP (2025-03-26+): a POST per message, JSON or SSE replies. From
    initialize's answer on, every request carries its Mcp-Session-Id and (2025-06-18 on) the
    negotiated MCP-Protocol-Version; a GET stream hears what the server says unasked; DELETE
    ends the session (2025-11-25 basic/transports)."""

    def __init__(self, url, client):
        self.url, self.client = url, client
        self.session_id = self._get_stream = None   # the id: once initialize's answer names one
        self._tasks, self._closing = set(), False
        # request id -> the task carrying its answer (its POST, then its stream)
        self._streams = {}
        self._reinitializing = asyncio.Lock()   # the requests that hear 404 share one initialize

    def _headers(self, accept="application/json, text/event-stream"):
        """Accept (a POST MUST list both types), then the session id and version once known."""
        headers = {"Accept": accept, "Mcp-Session-Id": self.session_id,
                   "MCP-Protocol-Version": self.client.protocol_version}
        return {k: v for k, v in headers.items() if v}

    async def send(self, message):
        # A notification's or response's POST gets 202 at once; initialize's answer names the
        # session, which every later message needs: these are awaited.
        if "method" not in message or "id" not in message or message["method"] == "initialize":
            return await self._post(message)
        # A request's POST may stream for as long as the tool runs: the caller is not held (it
        # waits on its own future, with its own timeout), and `drop` can end it.
        _background(self._tasks, self._post_request(message), self._streams, message["id"])

    async def _post_request(self, message):
        """A request's POST, in the background: what breaks it fails its request now."""
        try:
            await self._post(message)
        except Exception as e:  # noqa: BLE001 — any failure fails its request, never the task
            if not isinstance(e, McpError):
                e = McpError(CONNECTION_CLOSED, f"{type(e).__name__}: {e}")
            self.client._fail(message["id"], e)

    def drop(self, id_):
        """Abandon a request by closing its connection (2026-07-28's way): True if it was open."""
        task = self._streams.pop(id_, None)
        return task is not None and task.cancel()

    async def _post(self, message, again=True):
        id_ = None      # a request's (what a too big answer fails)
        if "method" in message and "id" in message:
            id_ = message["id"]
        headers = {**self._headers(), "Content-Type": "application/json"}
        # 2026-07-28: what it is, so that it is routed unread
        if self.client.stateless and "method" in message:
            headers.update(self.client.stateless.headers(self.client, message))
        sent_with = self.session_id     # a 404 means that session is over, not a later one
        response = await self._request("POST", self.url, headers, encode(message))
        if message.get("method") == "initialize":
            # 2025-11-25 transports (the version we ask for): 400, 404 or 405 means "try
            # legacy SSE"; anything else (auth, size, rate limits) is a real answer.
            if response.status in (400, 404, 405):
                response.close()
                raise _Fallback
            # none: a server that keeps no sessions (they are the server's choice)
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
        # JSON or SSE is the server's choice; the client MUST take both (basic/transports)
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if media == "text/event-stream":
            return _background(self._tasks, self._events(response, id_), self._streams, id_)
        try:
            body = await response.body(self.client.max_message)
        except McpError:    # too big: what it answers fails now
            return self.client._too_big(id_)
        response.close()
        if not body.strip():    # 202: taken, nothing to say
            return None
        data = self.client._parsed(body, id_)
        if data is None:    # refused unread: what it answered has failed
            return None
        if type(data) is not list:      # a batch's answers come as one array
            data = [data]
        for item in data:
            self.client._received(item, len(body))
        return None

    async def _reinitialize(self):
        """Initialize again, with no session id (2025-11-25 basic/transports: MUST, after a 404
        for the session); the old version stays if that fails."""
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
        ends it, from the last event seen (2025-11-25 transports: polling). Before each GET the
        client MUST wait the `retry` the server set."""
        last, retry, pause = None, 1.0, 0.0
        while True:
            if response is None:
                response = await self._resume(last, forever)
                if response is None:
                    break
            seen = last
            answered, last, retry = await self._read(response, request_id, last, retry)
            response = None
            over = answered or request_id not in self.client._pending
            if self._closing or (not forever and over):
                return      # answered, or timed out or cancelled: nobody waits for the rest
            if not forever and (last is None or self.client.stateless):
                # nothing to resume from (2026-07-28 has no resumption): the request is lost
                break
            # a GET stream that ends with nothing new: waited for longer each time
            if last != seen:
                pause = retry
            else:
                pause = min(max(pause, retry) * 2, 60.0)
            await asyncio.sleep(pause)
        # gone, and cannot be resumed: the caller hears it now, not at its timeout
        if not forever:
            self.client._fail(request_id, McpError(CONNECTION_CLOSED, "The response stream ended"))

    async def _read(self, response, request_id, last, retry):
        """One SSE response read to its end: (whether it carried our answer, the last event id,
        the retry delay, within reason: no busy loop)."""
        answered = request_id is None
        async for event in response.events(self.client, "(the SSE stream closed)"):
            last = event.get("id", last)
            # SSE: ASCII digits only ("²" is no retry)
            if _ASCII_DIGITS.fullmatch(event.get("retry", "")):
                # milliseconds on the wire; kept within 0.1 to 60 s: no busy loop, no day-long wait
                retry = min(max(int(event["retry"]) / 1000, 0.1), 60.0)
            if event.get("data") and event["event"] == "message":     # not a priming event
                answered |= self.client._received(event["data"]) == request_id
        return answered, last, retry

    async def _resume(self, last, forever):
        """A GET for a stream: from after `last` if given; None if refused. The GET stream starts
        afresh when the server kept not what it missed. Resuming is always a GET, for a POST's
        stream too (2025-11-25 basic/transports)."""
        headers = self._headers("text/event-stream")
        if last is not None:
            headers["Last-Event-ID"] = last
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
        """Open the GET stream for messages the server starts (405 = none: 2025-11-25
        basic/transports gives the server those two answers)."""
        if self._get_stream is None or self._get_stream.done():
            self._get_stream = asyncio.ensure_future(self._events(None, None, forever=True))

    async def close(self):
        """End the streams, then DELETE the session (2025-11-25 basic/transports: a client
        SHOULD, when done): 5 s at most, no sign-in for it."""
        self._closing = True
        tasks = list(self._tasks)
        if self._get_stream:
            tasks.append(self._get_stream)
        for task in tasks:
            task.cancel()
        if self.session_id:     # tell the server we are done with the session
            try:
                response = await asyncio.wait_for(self._request("DELETE", self.url, self._headers(),
                                                                sign_in=False), 5)
                response.close()
            # the server may be gone: the session is over anyway
            except Exception as e:  # noqa: BLE001
                _logger.debug("DELETE of the session failed: %r", e)
            self.session_id = None


class _LegacySse(_Transport):
    """HTTP+SSE (2024-11-05 basic/transports): a GET stream for everything the server says,
    POSTs to the endpoint it names for everything we say (VS Code's "type": "sse")."""

    def __init__(self, url, client):
        self.url, self.client = url, client
        self.endpoint = self._reader = self._response = None   # endpoint: absolute, where to POST

    async def start(self):
        """GET the SSE URL and wait, CONNECT_TIMEOUT at most, for the event the server MUST
        send first: `endpoint`, where to POST (2024-11-05 basic/transports)."""
        response = self._response = await self._request("GET", self.url,
                                                        {"Accept": "text/event-stream"})
        if response.status != 200:
            response.close()
            raise McpError(CONNECTION_CLOSED, _http_status(response.status, self.url))
        found = asyncio.get_running_loop().create_future()
        self._reader = asyncio.ensure_future(self._read(response, found))
        try:
            self.endpoint = await asyncio.wait_for(found, CONNECT_TIMEOUT)
        except asyncio.TimeoutError:  # noqa: UP041 — 3.10's is not yet the builtin TimeoutError
            raise McpError(CONNECTION_CLOSED, f"{self.url} sent no endpoint event") from None

    async def _read(self, response, found):
        """Every event of the stream: `endpoint`, resolved against our URL (the SDKs send a
        relative one) and refused on another origin, where our token would follow our POSTs
        (SECURITY.md R33); then `message`s. The stream's end is the session's."""
        closed = "(the SSE stream closed: the session ends with it)"
        try:
            # aclosing: the events' own finally (close, trace) runs now, even when cancelled
            async with contextlib.aclosing(response.events(self.client, closed)) as events:
                async for event in events:
                    if "data" in event and event["event"] == "endpoint" and not found.done():
                        endpoint = urllib.parse.urljoin(self.url, event["data"])
                        here = urllib.parse.urlsplit(self.url)[:2]
                        if urllib.parse.urlsplit(endpoint)[:2] != here:
                            found.set_exception(McpError(CONNECTION_CLOSED,
                                                         "the server named an endpoint on another "
                                                         "origin"))
                            return
                        found.set_result(endpoint)
                    elif "data" in event and event["event"] == "message":
                        self.client._received(event["data"])
        finally:
            if not found.done():
                found.set_exception(McpError(CONNECTION_CLOSED, "the SSE stream ended"))
            self.client._closed("The SSE stream ended")

    async def send(self, message):
        """POST a message to the endpoint: 202 and no answer in the body; the answer comes on
        the stream."""
        response = await self._request("POST", self.endpoint, {"Content-Type": "application/json"},
                                       encode(message))
        await response.body(READ_CHUNK)     # read and dropped: no answer is in it
        response.close()
        if response.status >= 300:
            raise McpError(CONNECTION_CLOSED, f"HTTP {response.status} from {self.endpoint}")

    async def close(self):
        if self._reader:
            self._reader.cancel()
        if self._response:
            self._response.close()



##############################################################################
# Core: running a server: Server.run(), over stdio or HTTP (--port)
##############################################################################
# `server.run()` as a script's last line: stdio by default (a client starts the script), HTTP
# with --port. The extensions add their options here (`_SERVE_OPTIONS`: --trace, --token,
# --task-store ...), and `python mcp_min.py serve` (the command line) uses the same parser.


def _argument_parser(**options):
    """An ArgumentParser whose errors are one line; argparse is imported only when a command
    line is read (STYLE.md 8: importing mcp_min stays fast)."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):       # one line saying what is wrong, not the usage block
            self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    # Help 80 columns wide: asking the terminal its width imports shutil, 3 ms of every start.
    formatter = functools.partial(argparse.RawDescriptionHelpFormatter, width=80)
    return Parser(formatter_class=formatter, **options)


def _port(text):
    """argparse type: a TCP port, digits alone (no sign, no space); 0 asks the OS for a free one."""
    if not (text.isdigit() and int(text) <= 65535):
        import argparse
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0-65535; 0 picks a free "
                                         "one)")
    return int(text)


def _seconds(text):
    """argparse type: a number of seconds above 0 and below 1e9 ("nan" fails every comparison)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if 0 < value < 1e9:
        return value
    import argparse
    raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")


# The logging module's names, for the server's own log on stderr; not MCP's LOG_LEVELS (RFC
# 5424's), which say what a client wants sent to it as notifications/message.
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

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
    """The options of `serve` and `Server.run`: the core's, then each extension's."""
    parser = _argument_parser(description=description)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    where.add_argument("--port", type=_port,
                       help="serve HTTP on this TCP port (0-65535; 0 picks a free one): /mcp and "
                            "/sse")
    # SECURITY.md R1: loopback unless told; another address needs a token (--token, --auth-server)
    # or --insecure: a server open to the network would run its tools for anyone who asks.
    parser.add_argument("--host", default="127.0.0.1", metavar="ADDRESS",
                        help="the address to bind (default 127.0.0.1; another needs --token)")
    # R3, R4: Host and Origin are checked on every request (DNS rebinding, cross-site calls);
    # these widen the allowlists (by default: localhost's names alone).
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="a browser origin allowed to call, with CORS (repeatable)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                        help="a Host header to accept besides localhost (repeatable)")
    # Both are the server's to choose (2025-11-25 basic/transports: a server MAY issue a
    # session id, and answers a POST's request with JSON or with an SSE stream).
    parser.add_argument("--stateless", action="store_true",
                        help="Streamable HTTP without sessions: every POST stands alone")
    parser.add_argument("--json-response", action="store_true",
                        help="Streamable HTTP: answer requests with JSON, never SSE")
    parser.add_argument("--insecure", action="store_true",
                        help="allow a non-loopback --host without --token")
    parser.add_argument("--shutdown-grace", type=_seconds, default=SHUTDOWN_GRACE,
                        metavar="SECONDS",
                        help="after SIGTERM, Ctrl-C or the end of stdin, how long work in flight "
                             "may "
                        f"finish before it is answered with an error (default {SHUTDOWN_GRACE:g})")
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=_LOG_LEVELS,
                        metavar="LEVEL",
                        help=f"what mcp_min logs on stderr: {', '.join(_LOG_LEVELS)} "
                        "(default INFO)")
    for options in _SERVE_OPTIONS:
        options.add(parser)     # --trace, --token, --task-store ...
    return parser


def _serve_argv(argv):
    """The command line as the parser takes it, once the extensions have read it (`--trace`
    alone takes no next word)."""
    for options in _SERVE_OPTIONS:
        argv = options.argv(argv)
    return argv


class _ServeOptions:
    """An extension's options of `serve` and `Server.run`: it adds them to the parser, may read the
    command line first (`argv`), then sets the server up, and what serving is given (`options`:
    serve_stdio's and serve_http's keywords). A bad option raises ValueError: one line, exit 2."""

    def add(self, parser):
        pass

    def argv(self, argv):
        return argv

    def configure(self, server, args, options):
        pass


_SERVE_OPTIONS: list[_ServeOptions] = []
# what the extensions end when serving ends
_ON_STOP: list[typing.Callable[[Server], typing.Awaitable[None]]] = []


def _serve(server, args, stdout=1):
    """Serve until stdin ends, SIGTERM or Ctrl-C (a second: at once): the exit status."""
    # The log goes to stderr: over stdio, stdout carries MCP messages only (basic/transports).
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options: _Json = {}     # serve_stdio's or serve_http's keywords, as the extensions set them
    try:
        for extension in _SERVE_OPTIONS:
            extension.configure(server, args, options)
    # a bad option (an unreadable store too): said in one line
    except Exception as e:  # noqa: BLE001
        print(f"mcp_min: {e}", file=sys.stderr)
        return 2    # argparse's status for a bad option
    if args.port is None and os.isatty(0):      # a person at a terminal, not a client
        print("mcp_min: serving MCP on stdin/stdout; type one JSON-RPC message a line, starting "
              "with initialize (see the README); Ctrl-D ends", file=sys.stderr)
    import signal
    # Signals left as they came (ignored, or an application's own) are left alone; asked here,
    # before asyncio.run(), which puts a handler of its own on SIGINT (3.11+).
    signals = [signum for signum in (signal.SIGINT, signal.SIGTERM)
               if signal.getsignal(signum) in (signal.default_int_handler, signal.SIG_DFL)]
    try:
        return asyncio.run(_serving(server, args, options, stdout, signals))
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 130      # 128 + SIGINT: what a shell reports for Ctrl-C
    except (OSError, ValueError) as e:
        print(f"mcp_min: {e}", file=sys.stderr)
        return 1        # the port in use, no token off loopback (`_guard`) ...


async def _serving(server, args, options, stdout, signals):
    """Serve on this loop until the transport ends or a signal comes; then the extensions
    stop, and the process leaves even while a tool's thread runs on."""
    from concurrent.futures import ThreadPoolExecutor
    loop, task = asyncio.get_running_loop(), typing.cast(asyncio.Task[_Any], asyncio.current_task())
    stopping = []

    def stop(signum):       # the first SIGTERM or Ctrl-C ends serving gracefully, a second at once
        if stopping:
            sys.stderr.flush()
            os._exit(128 + signum)  # the shell's status for an end by that signal
        stopping.append(signum)
        if args.port is not None and any(s.running or s.waiting for s in server.sessions):
            _logger.info("stopping: work in flight has %g s to finish (a second signal: at once)",
                         args.shutdown_grace)
        task.cancel()
    for signum in signals:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop, signum)   # Windows; not the main thread
    # Sync tools share this pool: room for many slow ones at once (asyncio.to_thread uses the
    # loop's default executor, which by itself has min(32, CPUs + 4) threads).
    pool = ThreadPoolExecutor(64, "mcp-tool")
    loop.set_default_executor(pool)
    try:
        if args.port is None:
            code = await serve_stdio(server, stdout_fd=stdout, trace=options.get("trace"),
                                     grace=args.shutdown_grace)
        else:
            code = await serve_http(server, args.host, args.port, args.shutdown_grace,
                                    allow_origins=args.allow_origin, allow_hosts=args.allow_host,
                                    stateless=args.stateless, json_response=args.json_response,
                                    insecure=args.insecure, **options)
    except asyncio.CancelledError:      # a signal: it was a graceful end
        code = 0 if stopping else 130
    if stdout != 1:
        os.close(stdout)    # main's own copy: the client sees EOF now, not at exit
    for end in _ON_STOP:
        await end(server)
    pool.shutdown(wait=False, cancel_futures=True)  # queued calls never start
    await asyncio.sleep(0.05)   # idle threads a moment to end: only busy ones are found below
    threads = any(thread.name.startswith("mcp-tool") for thread in threading.enumerate())
    if threads or asyncio.all_tasks() - {task}:
        # A tool runs on past the grace (a sync tool's thread, a handler ignoring its
        # cancel): it cannot be stopped, and its caller has its answer, so leave without it.
        # Not sys.exit: at exit, Python waits for the pool's threads to end.
        if not stopping:
            _logger.warning("exiting with a tool still running")
        sys.stderr.flush()
        os._exit(code or 0)
    return code or 0


def _core_alone():
    """At exit, in a copy of the core alone run as a script: it has no command line to run."""
    print("mcp_min: this copy of mcp_min.py is its core alone, without the command line (serve, "
          "client, the demo: the whole file's last section); serve your own server with "
          "Server.run(), as the README shows", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(2)     # an exit status, which a handler here can give no other way


# Run as a script, the whole file runs its command line at its end, once every extension has
# registered, and takes this back, as does a Server made (a program of its own: the core with a
# server below it); a copy of the core alone says so as it exits, rather than end having done
# nothing.
if __name__ == "__main__":
    atexit.register(_core_alone)


##############################################################################
# Extension: JSON Schema keywords beyond what type hints make (skip on a first reading)
##############################################################################
# Schemas written by hand (`input_schema=`, a server's inputSchema the client checks arguments
# against, an elicitation's requestedSchema) use more of JSON Schema 2020-12 than type hints
# make: $ref to local $defs, const, allOf, oneOf, and the bounds of strings and numbers.
# 2020-12 is MCP's dialect when a schema names none (PROTOCOL.md 6.1); 2026-07-28 adds: never
# fetch a $ref from the network, and bound what checking composed schemas costs (the memo).


def _ref(schema, root, depth):
    """$ref to a place in the same schema ("#/$defs/node"): that place's check, compiled when first
    met at each depth (a schema may refer to itself). What it finds for a value at a place is
    kept for the rest of the check (`_REF_MEMO`): else a schema whose anyOf names one $ref twice,
    level after level, doubles the work at each level; and a $ref that comes back to the same
    value at the same place, without consuming any of it, is a loop, said rather than followed
    for ever."""
    ref = schema["$ref"]
    if not (type(ref) is str and ref.startswith("#/")):     # a URL (never fetched), "#": unchecked
        return None
    target = root[None]
    # a JSON Pointer (RFC 6901), walked part by part; a place that is not there is {}: any value
    for part in ref[2:].split("/"):
        target = target.get(part, {}) if type(target) is dict else {}
    key = ref, depth + 1    # one compile per depth: `_checker`'s depth bound ends a self-reference

    def check(value, path):
        memo = _REF_MEMO.get(None)
        if memo is None:    # the outermost $ref of this check keeps the memo for what it holds
            token = _REF_MEMO.set({})
            try:
                return check(value, path)
            finally:
                _REF_MEMO.reset(token)
        seen = ref, id(value), path
        if seen in memo:
            if memo[seen] is _CHECKING:
                return f"{_where(path)}: $ref {ref} refers to itself without end"
            return memo[seen]
        memo[seen] = _CHECKING
        if key not in root:
            root[key] = _checker(target, root, depth + 1)
        memo[seen] = root[key](value, path)
        return memo[seen]
    return check


# The memo of the check under way: a ContextVar, so that checks in other threads keep their own
_REF_MEMO: "contextvars.ContextVar[dict[_Any, _Any]]" = contextvars.ContextVar("mcp_min_refs")
_CHECKING = object()    # a $ref's check under way, in the memo


def _const(schema, root, depth):
    """const (2020-12 validation 6.1.3): that one value, as JSON compares (`_same`)."""
    const = schema["const"]

    def check(value, path):
        if _same(value, const):
            return None
        return f"{_where(path)}: must be {json.dumps(const)}"
    return check


def _all_of(schema, root, depth):
    """allOf (2020-12 core 10.2.1.1): every subschema holds; the first problem is said."""
    subs = schema["allOf"]
    if type(subs) is not list:
        return None
    return _all([_checker(sub, root, depth + 1) for sub in subs])


def _one_of(schema, root, depth):
    """oneOf (2020-12 core 10.2.1.3): exactly one subschema holds; two that do are refused."""
    subs = schema["oneOf"]
    if type(subs) is not list:
        return None
    checks = [_checker(sub, root, depth + 1) for sub in subs]

    def check(value, path):
        passed = sum(one(value, path) is None for one in checks)
        if passed == 0:
            return f"{_where(path)}: does not match any allowed form"
        if passed > 1:
            return f"{_where(path)}: matches more than one allowed form"
        return None
    return check


# keyword: (the JSON types it measures, when past it). 2020-12 validation 6.2, 6.3: a length
# counts code points (as len() does); draft 4's boolean exclusive bounds are ignored.
_SCALAR_BOUNDS = {
    "minLength": ((str,), lambda n, bound: n < bound),
    "maxLength": ((str,), lambda n, bound: n > bound),
    "minimum": (_NUMBERS, lambda n, bound: n < bound),
    "maximum": (_NUMBERS, lambda n, bound: n > bound),
    "exclusiveMinimum": (_NUMBERS, lambda n, bound: n <= bound),
    "exclusiveMaximum": (_NUMBERS, lambda n, bound: n >= bound),
}

# The extension plugs in: its keywords join the core's.
_BOUNDS.update(_SCALAR_BOUNDS)
_KEYWORDS.update({"$ref": _ref, "const": _const, "allOf": _all_of, "oneOf": _one_of,
                  **dict.fromkeys(_SCALAR_BOUNDS, _bounds)})


##############################################################################
# Extension: the 2026-07-28 era: requests that stand alone (skip on a first reading)
##############################################################################
# 2026-07-28 drops the handshake (PROTOCOL.md 4). No initialize, no session: each request names
# its protocol version and the client's capabilities in its _meta, and stands alone, so that any
# process behind a balancer can serve it:
#
#   C->S  {"id":1,"method":"tools/call","params":{"name":"deleteUser","arguments":{...},
#          "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
#                   "io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}
#   S->C  {"id":1,"result":{"resultType":"input_required","inputRequests":{...},
#          "requestState":"..."}}
#   C->S  the same call again, with "inputResponses" and the "requestState" it was given
#   S->C  {"id":2,"result":{"resultType":"complete","content":[...]}}
#
# A server asks by answering (input_required, `_Rounds`); server/discover says what it is;
# subscriptions/listen carries list changes; lists and reads carry caching hints; over HTTP the
# routing headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*) must say what the
# body says. The same server answers both eras: this era claims the requests that name it.

MODERN_VERSIONS = ("2026-07-28",)    # the versions with no initialize: each request says its own
# 2026-07-28's own error codes (PROTOCOL.md 2.4), each an HTTP 400 too
HEADER_MISMATCH = -32020            # HTTP: an Mcp-* header missing, or not the body's
MISSING_CAPABILITY = -32021         # the request needs a client capability it did not declare
UNSUPPORTED_VERSION = -32022        # data {supported, requested}
STATE_TTL = 900.0                   # seconds a requestState stays good (short: PROTOCOL.md 4.5)
# subscriptions/listen streams open per server, and a sixteenth of it per client (per stdio session;
# HTTP: per user, else address) -> -32603
MAX_LISTENS = 256
# client: input_required rounds answered for one request -> -32603
MAX_ROUNDS = 10
# client: seconds (at most its timeout) a stdio server gets to answer server/discover; no answer: a
# handshake-era server
DISCOVER_TIMEOUT = 5.0

_MODERN = "io.modelcontextprotocol/"     # the prefix of 2026-07-28's _meta keys
_VERSION_KEY, _CAPABILITIES_KEY = _MODERN + "protocolVersion", _MODERN + "clientCapabilities"
_LOG_LEVEL_KEY = _MODERN + "logLevel"
_SILENT = "none"    # a request's log level when it asked for no log messages: none is sent


def _modern(params):
    """Whether a request claims this era: its _meta names its protocol version."""
    meta = params.get("_meta") if type(params) is dict else None
    return type(meta) is dict and _VERSION_KEY in meta


class _Stateless:
    """How a 2026-07-28 request is served (`_ERAS`): it stands alone, its _meta says all. The
    session claims a request for it by its `key` and `versions`, asks what it refuses
    (`refusal`), and has it `run` the request; the HTTP endpoint asks the same of a POST
    (`claims_http` ...)."""
    name = "2026-07-28"
    key = _VERSION_KEY          # a request whose _meta has it is this era's ...
    versions = MODERN_VERSIONS  # ... as is one in a session of these (over HTTP, a POST's)
    cancels_when_left = True    # over HTTP, a client that closes the stream cancels the request
    watches = True              # ... so it is looked for each second

    @staticmethod
    def refusal(session, method, params):
        """Why this era will not serve a request, as an error's (code, message[, data]), or None
        (PROTOCOL.md 4.2): _meta without its two required keys, -32602; a version not served,
        -32022, naming only those _meta may claim (a handshake version needs initialize); a
        method 2026-07-28 removed, -32601."""
        meta = params.get("_meta")
        if type(meta) is not dict:
            meta = {}
        version = meta.get(_VERSION_KEY)
        if type(version) is not str or type(meta.get(_CAPABILITIES_KEY)) is not dict:
            return INVALID_PARAMS, ("Invalid params: _meta needs "
                                    "io.modelcontextprotocol/protocolVersion and "
                                    "io.modelcontextprotocol/clientCapabilities")
        if version not in MODERN_VERSIONS:
            return UNSUPPORTED_VERSION, "Unsupported protocol version", {
                "supported": list(MODERN_VERSIONS), "requested": version}
        if method in _HANDSHAKE_ONLY:
            return METHOD_NOT_FOUND, f"Method not found: {method} is not in {version}"
        return None

    @staticmethod
    async def run(session, method, handler, params, ctx):
        """The request served as its _meta says (its own version, capabilities and log level),
        asking by answering if it may ask, its result marked complete and with caching hints."""
        # What its _meta says (no local keeps the _meta: a listen lives for hours): its version,
        # its client's capabilities, and the least level of log messages it wants (none, unless
        # it names one). Never inferred from an earlier request (PROTOCOL.md 4.2).
        ctx.version = ctx.meta[_VERSION_KEY]
        ctx.client_capabilities = ctx.meta[_CAPABILITIES_KEY]
        level = ctx.meta.get(_LOG_LEVEL_KEY)
        ctx.log_level = _SILENT
        if type(level) is str and level:
            ctx.log_level = level
        if method in _ROUNDS:  # only these may answer input_required (PROTOCOL.md 4.5)
            rounds = _Rounds(session, params, method)
            ctx.kept, ctx.asks = rounds.kept, rounds.ask
            try:
                result = await handler(session, params, ctx)
            except _InputRequired:      # the client is to answer, and call again
                return rounds.result()
        else:
            ctx.asks = _cannot_ask      # no server-to-client request exists in this era
            result = await handler(session, params, ctx)
        return _complete_result(session.server, method, result)  # + resultType (PROTOCOL.md 4.4)

    # Over HTTP: each request is a session of one POST, whose headers must match it.

    @staticmethod
    def claims_http(request, message):
        """Whether a POST is this era's: its MCP-Protocol-Version header or its body's _meta
        names 2026-07-28 (PROTOCOL.md 4.8, as the TypeScript SDK tells the eras apart)."""
        if request.header("mcp-protocol-version") in MODERN_VERSIONS:
            return True
        return message is not None and _modern(message.get("params"))

    @staticmethod
    def streams_only(message):
        """subscriptions/listen is answered over SSE alone, even with --json-response: its
        notifications come for hours (PROTOCOL.md 4.7; an Accept without SSE is refused)."""
        return message.get("method") == "subscriptions/listen"

    @staticmethod
    def http_entry(http, conn, body):
        """A session of this one POST; None if its headers do not match it (answered 400)."""
        mismatch = _mismatch(conn.request, body, http.server)
        if mismatch:
            id_ = body.get("id") if type(body) is dict else None
            conn.write(400, conn.cors + [("Content-Type", "application/json")],
                       encode(_error(id_ if _is_id(id_) else None, *mismatch)))
            return None
        entry = _HttpSession(http.server, None, version=MODERN_VERSIONS[0])
        http.stateless_entries.add(entry)   # while it lasts: a stopping server waits for it too
        return http.own(entry, conn)

    @staticmethod
    def http_status(response):
        """2026-07-28 says an error's HTTP status too: 400, or 404 for an unknown method, whose
        body tells it from a legacy server's 404 (PROTOCOL.md 7.4)."""
        error = response.get("error")
        code = error.get("code") if type(error) is dict else None
        return _MODERN_STATUS.get(code, 200)


# The handshake's methods 2026-07-28 has not; the requests that may ask (input_required); what
# may be cached, and how (`server.cache`)
_HANDSHAKE_ONLY = frozenset(("initialize", "ping", "logging/setLevel", "resources/subscribe",
                             "resources/unsubscribe"))
_ROUNDS = frozenset(("tools/call", "prompts/get", "resources/read"))
_CACHEABLE = {"server/discover", "resources/read", *_LISTS_OF}
# PROTOCOL.md 7.4's statuses, and the Python SDK's 400 for -32700, -32600 and -32602, where the
# spec says none; any other error is a 200 whose body says it
_MODERN_STATUS: dict[_Any, int] = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400,
                                   HEADER_MISMATCH: 400,
                  MISSING_CAPABILITY: 400, UNSUPPORTED_VERSION: 400, METHOD_NOT_FOUND: 404}


def _complete_result(server, method, result):
    """A 2026-07-28 result: its `resultType`, the server's identity, and for what may be cached,
    how (`Server.cache`)."""
    meta = {_MODERN + "serverInfo": server.info}    # on every result (PROTOCOL.md 4.2, SHOULD)
    if "_meta" in result:
        meta = {**result["_meta"], **meta}
    # every result has a resultType (PROTOCOL.md 4.4); a handler's own (a task's "task") wins
    result = {"resultType": "complete", **result, "_meta": meta}
    if method in _CACHEABLE:
        return {**server.cache, **result}   # ttlMs, cacheScope (PROTOCOL.md 4.6)
    return result


async def _discover(session, params, ctx):
    """server/discover: what this server is, before anything else (who it is comes in every
    2026-07-28 result's _meta)."""
    # every version served, the handshake's too (PROTOCOL.md 4.2: -32022 lists the modern only)
    return _introduce(session.server,
                      supportedVersions=[*MODERN_VERSIONS, *PROTOCOL_VERSIONS[::-1]])


async def _cannot_ask(ctx, capability, method, params, key=None):
    """How a request outside `_ROUNDS` asks: it cannot (a handler's bug: -32603)."""
    raise McpError(INTERNAL_ERROR, f"{method}: this request cannot ask for input")


def _require_capability(ctx, capability, params):
    """A 2026-07-28 request asks only what its client declared it can answer: else -32021,
    naming the capability it needs (PROTOCOL.md 4.2, 4.5)."""
    lacking = _lacks((ctx.client_capabilities or {}).get(capability), capability, params)
    if lacking:
        raise RequestError(MISSING_CAPABILITY, f"This needs the client's {lacking[0]} capability",
                           {"requiredCapabilities": lacking[1]})


class _InputRequired(_Unwind):
    """A round ends: the handler asked what the client must answer."""


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
        if state is not None:   # earlier rounds' answers: believed only if the seal holds
            self.answers, self.kept = self.unseal(state)

    async def ask(self, ctx, capability, method, params, key=None):
        """The answer to this ask if the client gave it; else it joins this round's asks, which
        end the round (`_InputRequired`). Asks are told apart by `key`, by default their order."""
        _require_capability(ctx, capability, params)   # only what it declared (PROTOCOL.md 4.5)
        params.pop("elicitationId", None)   # no elicitation ids here: requestState ties it
        self.count += 1
        key = str(key or f"{capability}-{self.count}")
        if key not in self.answers and key in self.fresh:   # a new answer: checked first
            problem = _answer_problem(method, params, self.fresh[key])
            if problem:
                raise RequestError(INVALID_PARAMS, "Invalid params: "
                                                   f"inputResponses[{key[:100]!r}] ({method}): "
                                                   f"{problem}")
            self.answers[key] = self.fresh[key]
        if key in self.answers:
            return self.answers[key]
        self.asks[key] = {"method": method, "params": params}
        await asyncio.sleep(0)  # asks made beside this one (asyncio.gather) join the round
        raise _InputRequired

    def result(self):
        """The round's end: what the client is to answer, and what it sends back with them."""
        return {"resultType": "input_required", "inputRequests": self.asks,
                "requestState": self.seal()}

    def binding(self, data):
        """The seal on a requestState's `data`, binding it to this request (its method, and its
        params less the rounds' own) and this user: made with the server's key, no client can
        alter it."""
        import hashlib
        import hmac
        request = {key: value for key, value in self.params.items()
                   if key not in ("_meta", "inputResponses", "requestState")}
        try:
            bound = [self.method, request, self.session.principal]
            text = json.dumps(bound, sort_keys=True).encode()
        except RecursionError:      # params that parsed, nested too deep to write out again
            raise McpError(INVALID_PARAMS, "Invalid params: nested too deeply to be bound to a "
                                           "requestState") from None
        key = self.session.server.state_key
        return base64.urlsafe_b64encode(hmac.new(key, text + data, hashlib.sha256).digest())

    def seal(self):
        """A round's requestState: the answers so far and what `once` kept, until STATE_TTL."""
        data = base64.urlsafe_b64encode(encode([int(time.time() + STATE_TTL), self.answers,
                                                self.kept]))
        return (data + b"." + self.binding(data)).decode()

    def unseal(self, state):
        """A requestState sent back: attacker-controlled (PROTOCOL.md 4.5) until its seal is
        checked, in constant time. Altered, malformed or expired: -32602."""
        import hmac
        data, _, sent = state.encode(errors="replace").partition(b".")
        if not hmac.compare_digest(sent, self.binding(data)):
            raise McpError(INVALID_PARAMS, "Invalid params: requestState is not this server's for "
                                           "this request (altered, or from another server or user)")
        try:    # sealed with our key, yet perhaps not of the shape we seal (another version's)
            expires, answers, kept = decode(base64.urlsafe_b64decode(data))
            if type(expires) not in (int, float) or type(answers) is not dict \
                    or type(kept) is not dict:
                raise ValueError
        except (ValueError, TypeError, McpError):
            raise McpError(INVALID_PARAMS, "Invalid params: requestState is malformed") from None
        if time.time() > expires:
            raise McpError(INVALID_PARAMS, "Invalid params: requestState has expired: call again "
                                           "without it to start over")
        return answers, kept


# subscriptions/listen: one long request, on whose stream the server says what changed.

# A listen's filter fields, and the capability each needs (PROTOCOL.md 4.7)
_LISTS = (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"),
          ("resourcesListChanged", "resources"))
# What a listen may also ask to hear of (the tasks extension: its tasks' status): async
# functions (session, ctx, wanted, honoured) that fill `honoured` from `wanted`
_LISTEN_FILTERS: list[typing.Callable[..., typing.Awaitable[None]]] = []


def _listens(session):
    """A session's open listens: request id -> (what it wants, the future that ends it)."""
    return session.extensions.setdefault("listens", {})


async def _listen(session, params, ctx):
    """subscriptions/listen: the change notifications asked for, on this request's own stream,
    until the client cancels it or leaves, or the server stops (then it is answered)."""
    wanted = params.get("notifications")
    if type(wanted) is not dict:    # missing or no object: -32602 (PROTOCOL.md 4.7)
        raise McpError(INVALID_PARAMS, "Invalid params: notifications must be an object")
    server, sessions = session.server, list(session.server.sessions)
    # bounded: each listen holds a stream, and a little of this process, for hours
    mine = sum(len(_listens(s)) for s in sessions if s.owner == session.owner)
    if mine >= MAX_LISTENS // 16 or sum(len(_listens(s)) for s in sessions) >= MAX_LISTENS:
        raise McpError(INTERNAL_ERROR, f"Too many subscriptions/listen streams open: "
                                       f"{MAX_LISTENS // 16} a client at most, {MAX_LISTENS} in "
                                       "all (MAX_LISTENS)")
    # what is not offered is left out of the acknowledgment, never an error (PROTOCOL.md 4.7)
    honoured: _Json = {}
    for key, kind in _LISTS:
        if wanted.get(key) is True and server.offers(kind):
            honoured[key] = True
    uris = wanted.get("resourceSubscriptions")
    if type(uris) is list and server.offers("resources"):
        named = [uri for uri in uris if type(uri) is str]
        honoured["resourceSubscriptions"] = named[:MAX_SUBSCRIPTIONS]
    for add in _LISTEN_FILTERS:
        await add(session, ctx, wanted, honoured)
    tag = {"_meta": {_MODERN + "subscriptionId": ctx.request_id}}
    params.clear()      # open for hours, it keeps its filter, not the request it came in
    ctx.meta = {}
    # first on the stream: what will be sent, tagged with the listen's own id (PROTOCOL.md 4.7)
    session.notify("notifications/subscriptions/acknowledged", {"notifications": honoured, **tag},
                   ctx.request_id)
    ended = session.loop.create_future()

    def end():
        if not ended.done():
            ended.set_result(None)
    _listens(session)[ctx.request_id] = honoured, ended
    if _publish not in session.server.hearing:     # its changes reach the listens from now on
        session.server.hearing.append(_publish)
    session.on_close.append(end)
    try:
        await ended
    finally:
        del _listens(session)[ctx.request_id]
        session.on_close.remove(end)
    return tag      # a graceful end: a result names the subscription (PROTOCOL.md 4.7)


def _publish(server, method, params):
    """A change (`Server._tell`), to each listen that wants it."""
    for session in list(server.sessions):
        for id_, (wanted, _) in list(_listens(session).items()):
            if _wants(wanted, method, params):
                session.notify(method, {**params, "_meta": {_MODERN + "subscriptionId": id_}}, id_)


def _wants(wanted, method, params):
    if method == "notifications/resources/updated":
        return params.get("uri") in wanted.get("resourceSubscriptions", ())
    if method == "notifications/tasks":
        return params.get("taskId") in wanted.get("taskIds", ())
    kind = method.split("/")[1]     # notifications/<kind>/list_changed
    return bool(wanted.get(kind + "ListChanged"))


# Over HTTP: the routing headers must say what the body says.

def _mismatch(request, body, server):
    """The routing headers must say what the body says; why not as (code, message)."""
    if type(body) is not dict:
        if type(body) is list:      # one message a POST in 2026-07-28 (PROTOCOL.md 2.6)
            return INVALID_REQUEST, "Invalid request: batches are not accepted"
        return INVALID_REQUEST, "Invalid request"
    params = _object(body.get("params"))
    meta = _object(params.get("_meta"))
    version = request.header("mcp-protocol-version")
    if not version:
        return HEADER_MISMATCH, "Missing MCP-Protocol-Version header"
    if type(meta.get(_VERSION_KEY)) is str and version != meta[_VERSION_KEY]:
        return HEADER_MISMATCH, "MCP-Protocol-Version header does not match _meta"
    name = params.get("name") if body.get("method") == "tools/call" else None
    tool = server.tools.get(name) if type(name) is str else None
    marks = tool.extensions.get("headers", ()) if tool else ()
    # each header the body implies is there, and says the same (PROTOCOL.md 7.4)
    for header, value in _routing(body, marks).items():
        sent = request.header(header.lower(), None)
        got = None if sent is None else _header_text(sent)    # base64 decoded first
        if got == _text(value):
            continue
        if type(value) is int and got and _INTEGER.fullmatch(got) and int(got) == value:
            continue        # integers compare as numbers
        return HEADER_MISMATCH, f"{header} header does not match the body"
    return None


_INTEGER = re.compile(r"[+-]?[0-9]{1,4000}")    # what int() takes, in ASCII digits only
# The Mcp-Name header repeats this param of these methods
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
        raise McpError(INVALID_PARAMS, f"{text[:100]!r} is not Unicode text (a lone surrogate): "
                                       "it cannot go in a 2026-07-28 Mcp-* header") from None


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
        inner = _header_params(prop, (*path, key))
        if inner is None:
            return None
        found += inner
    if len({name.lower() for _, name in found}) != len(found):     # header names ignore case
        return None
    return found


def _routing(message, marks):
    """What a request's routing headers say of it, so that it is routed unread (the client sends
    them, the server checks them): Mcp-Method, Mcp-Name, and an Mcp-Param-* for each argument
    present that its tool marks (`_header_params`), as header -> value."""
    method, params = message.get("method"), _object(message.get("params"))
    found = {}
    # Mcp-Method for a request; for a notification the spec defines none (PROTOCOL.md 10)
    if "id" in message and type(method) is str:
        found["Mcp-Method"] = method
    if type(method) is str and method in _NAME_KEY:
        name = params.get(_NAME_KEY[method])
        if type(name) is str:
            found["Mcp-Name"] = name
    for path, header in marks:
        value = params.get("arguments")
        for key in path:
            value = value.get(key) if type(value) is dict else None
        if value is not None:   # absent or null: no header (PROTOCOL.md 7.4)
            found["Mcp-Param-" + header] = value
    return found


def _text(value):
    """An argument as its Mcp-Param-* header's text says it (before base64)."""
    return value if type(value) is str else json.dumps(value)


def _check_header_marks(tool):
    """The arguments a tool marks x-mcp-header come in Mcp-Param-* headers too."""
    marks = _header_params(tool.input_schema)
    if marks is None:
        _logger.warning("tool %r: its x-mcp-header marks are invalid: 2026-07-28 HTTP clients "
                        "will leave it out", tool.name)
    tool.extensions["headers"] = marks or ()


# The client's side: server/discover first, each request whole, input_required answered.

class _StatelessClient:
    """How a Client speaks 2026-07-28 (`_CLIENT_ERAS`), once server/discover said the server does.
    """

    async def discover(self, client):
        """server/discover. True if the server speaks this era; False if it is of the handshake
        era (any error but a version we share, or silence)."""
        versions = [client.era] if client.era in MODERN_VERSIONS else list(MODERN_VERSIONS)
        timeout = None
        # stdio: a handshake-era server may not answer a method it does not know (PROTOCOL.md 4.8)
        if isinstance(client._transport, _StdioClient):
            timeout = min(DISCOVER_TIMEOUT, client.timeout)
        client.stateless = self     # its request, headers and capabilities are this era's
        for again in (True, False):     # -32022 names what it speaks: once more with that
            client.protocol_version = versions[0]
            try:
                result = await client.request("server/discover", timeout=timeout)
                # Not a DiscoverResult naming the version (a server that answers anything with {}):
                supported = result.get("supportedVersions") if type(result) is dict else None
                if type(supported) is not list or client.protocol_version not in supported:
                    raise McpError(UNSUPPORTED_VERSION, f"the server does not speak {versions[0]}")
            except McpError as e:
                client.protocol_version = client.stateless = None
                supported = e.data.get("supported") if type(e.data) is dict else None
                if e.code == UNSUPPORTED_VERSION and type(supported) is list and again:
                    versions = [version for version in versions if version in supported]
                    if versions:
                        client.stateless = self
                        continue
                # an era asked for, or a server gone: no falling back to the handshake
                if client.era != "auto" or (e.code == CONNECTION_CLOSED and client._gone):
                    raise
                _logger.debug("server/discover: %s; the handshake then", e.message)
                return False
            meta = _object(result.get("_meta"))
            client.server_info = meta.get(_MODERN + "serverInfo") or result.get("serverInfo", {})
            client.server_capabilities = result.get("capabilities", {})
            client.instructions = result.get("instructions")
            return True
        return False

    async def request(self, client, method, params, timeout, on_progress):
        """Each request carries who we are in its _meta, and an input_required result is answered
        (by the same handlers as a session's requests) and the request sent again."""
        params, first = self.whole(client, params), None
        if method == "tools/call" and isinstance(client._transport, _StreamableHttp) \
                and "headers" not in client.extensions:
            await client.list_tools()     # which arguments go in Mcp-Param-* headers too
        for round_ in range(1, MAX_ROUNDS + 1):
            id_ = next(client._ids)
            first = first or id_
            why = None
            if round_ > 1:  # the trace says why it is sent again
                why = _TRACE_WHY.set(f"round {round_} of {method} #{first}")
            try:
                result = await client._request_once(method, params, timeout, on_progress, id_)
            finally:
                if why:
                    _TRACE_WHY.reset(why)
            # SEP-2663: a task answers tools/call alone; to another request it is invalid
            a_task = type(result) is dict and result.get("resultType") == "task"
            if a_task and method != "tools/call":
                raise McpError(INTERNAL_ERROR, f"{method}: the server answered with a task, "
                                               "which only tools/call may")
            if type(result) is not dict or result.get("resultType") != "input_required":
                return result
            params = {**params,
                      "inputResponses": await client._answers(result.get("inputRequests"))}
            params.pop("requestState", None)    # echoed byte for byte, and only if given
            if "requestState" in result:
                params["requestState"] = result["requestState"]
        raise McpError(INTERNAL_ERROR,
                       f"{method}: still asking for input after {MAX_ROUNDS} rounds")

    @staticmethod
    def whole(client, params):
        """The params of a request, with who we are in _meta."""
        params = dict(params or {})
        # what every request of this era carries (PROTOCOL.md 4.2); the caller's own _meta wins
        meta = {_VERSION_KEY: client.protocol_version, _CAPABILITIES_KEY: client.capabilities(),
                _MODERN + "clientInfo": client.client_info, **params.get("_meta", {})}
        if client.log_level or client.on_log:   # log messages: only to a request that asks
            meta[_LOG_LEVEL_KEY] = client.log_level or "info"
        params["_meta"] = meta
        return params

    @staticmethod
    def capabilities(client, caps):
        """The client's capabilities, with what the extensions add (`_STATELESS_CAPABILITIES`)."""
        for add in _STATELESS_CAPABILITIES:
            caps = add(client, caps)
        return caps

    @staticmethod
    def headers(client, message):
        """A request's routing headers, with the arguments its tool marks; a notification's
        Mcp-Method, which the spec leaves undefined and no server may require (PROTOCOL.md 10)."""
        tool = message["params"].get("name") if message["method"] == "tools/call" else None
        marks = ()
        if type(tool) is str:
            marks = client.extensions.get("headers", {}).get(tool, ())
        routed = _routing(message, marks)
        if "id" not in message:
            routed["Mcp-Method"] = message["method"]
        return {key: _header_value(_text(value)) for key, value in routed.items()}

    @staticmethod
    def tools(client, tools):
        """Over HTTP: the tools whose x-mcp-header marks are valid (the others MUST be left out),
        and which arguments each mirrors in Mcp-Param-* headers."""
        if not isinstance(client._transport, _StreamableHttp):
            return tools
        usable, marked = [], client.extensions.setdefault("headers", {})
        for tool in tools:
            marks = None
            if type(tool) is dict and type(tool.get("name")) is str:
                marks = _header_params(tool.get("inputSchema"))
            if marks is None:
                _logger.warning("a tool left out: no name, or invalid x-mcp-header marks: %.100r",
                                tool)
                continue
            usable.append(tool)
            marked[tool["name"]] = marks
        return usable

    @staticmethod
    def drop(client, id_):
        """Over HTTP a request is abandoned by closing its stream."""
        return bool(client._transport and client._transport.drop(id_))

    @staticmethod
    def notified(client, method, params):
        """A notification of a listen's: to its callback. True if it was one."""
        fields = _object(params)
        meta = _object(fields.get("_meta"))
        listen = meta.get(_MODERN + "subscriptionId")
        callbacks = client.extensions.get("listens", {}).get(listen, {}) if _is_id(listen) else {}
        if not callbacks.get(method):
            return False
        client._call(callbacks[method], params)
        return True


# What the extensions add to a 2026-07-28 client's capabilities (the tasks extension: it polls)
_STATELESS_CAPABILITIES: list[typing.Callable[[Client, _Json], _Json]] = []


async def _client_listen(client, on_tools, on_prompts, on_resources, on_updated, uris):
    """Client.listen: subscriptions/listen, until the server ends it or this is cancelled."""
    if not client.stateless:
        raise McpError(METHOD_NOT_FOUND, "listen is 2026-07-28's: in a session the server's "
                                         "notifications come to on_notification")
    callbacks = {"notifications/tools/list_changed": on_tools,
                 "notifications/prompts/list_changed": on_prompts,
                 "notifications/resources/list_changed": on_resources,
                 "notifications/resources/updated": on_updated}
    wanted: _Json = {}
    for (key, _), callback in zip(_LISTS, (on_tools, on_prompts, on_resources)):
        if callback:
            wanted[key] = True
    if on_updated:
        wanted["resourceSubscriptions"] = list(uris)
    id_ = next(client._ids)
    listens = client.extensions.setdefault("listens", {})
    listens[id_] = callbacks
    try:
        params = _StatelessClient.whole(client, {"notifications": wanted})
        return await client._exchange(id_, "subscriptions/listen", params, None, client._send)
    finally:
        del listens[id_]


# The extension plugs in: its era on both sides, its methods, its listens, its headers.
_ERAS.append(_Stateless())
_CLIENT_ERAS["2026-07-28"] = _StatelessClient()
_METHODS["server/discover"] = _Method(_discover, era="2026-07-28")
_METHODS["subscriptions/listen"] = _Method(_listen, era="2026-07-28", endless=True)
_TOOL_CHECKS["x-mcp-header"] = _check_header_marks
_PROVIDED["Client.listen"] = _client_listen
_CORS_HEADERS.extend(("Mcp-Method", "Mcp-Name"))
_CORS_PREFIXES.append("mcp-param-")


##############################################################################
# Extension: resumable streams, 2025-03-26 on (skip on a first reading)
##############################################################################
# A Streamable HTTP stream may break while its request still runs (a proxy that cuts long
# responses, a laptop lid). 2025-03-26 basic/transports ("Resumability and Redelivery"): the
# server MAY give each SSE event an id; a client that lost the stream GETs /mcp with
# Last-Event-ID, and what came after that event is sent again, then the rest. Here each stream
# of a session is numbered, and its events are "number-seq":
#
#   S->C  id: 3-0  retry: 1000  data:          2025-11-25: a priming event (an id, no data)
#   S->C  id: 3-1  event: message  data: {"method":"notifications/progress",...}
#         (the connection breaks)
#   C->S  GET /mcp  Last-Event-ID: 3-1
#   S->C  id: 3-2  event: message  data: {"jsonrpc":"2.0","id":7,"result":{...}}
#
# What a stream sent is kept (REPLAY_BYTES a stream, within a quarter of its client's account),
# as is a POST's stream whose connection broke before its answer (KEPT_STREAMS a session).

REPLAY_BYTES = 4 << 20          # bytes of events a session's SSE stream keeps for a client that
                                # resumes it (GET + Last-Event-ID), sent or waiting; before -> 400
KEPT_STREAMS = 64               # POSTs' SSE streams a session keeps after their connection is over,
                                # to be resumed; past it the oldest answered one goes, else the
                                # oldest not in use (its resume -> 400)
SSE_RETRY = 1000                # ms a client waits before resuming a stream (SSE retry: field)


class _ResumableStream(_Stream):
    """A stream of a session's that numbers its events "number-seq" and keeps those it sent
    (`log`) for a client that comes back with Last-Event-ID. While no connection reads it,
    what comes for it goes to the log too (`unattended`), as if sent."""

    def __init__(self, account, number, primes):
        super().__init__(account)
        self.number, self.primes = number, primes
        self.seq = 0            # the last event's
        # (seq, event) sent, oldest first
        self.log: collections.deque[tuple[int, bytes]] | None = None
        self.logged = 0         # bytes in `log`
        self.replay: _Replay | None = None      # the server's, once it logged anything
        self.share: _Account | None = None      # ... its client's part of it
        self.peers: dict = {}   # ... and its client's streams with a log (`_Replay`)
        self.unread: _Replay | None = None      # while no connection reads it: where its events go
        self.unread_from = 0    # ... after which event

    def put(self, message):
        replay = self.unread
        if replay is None or self.attached or self.closed:     # a connection reads it
            return super().put(message)
        if message is None or message is _FINISHED:
            return super().put(message)
        event = self.numbered(message)      # nobody reads it now: it is kept, as if sent
        if event:
            replay.add(self, event)
        return True

    def numbered(self, message):
        """The message as this stream's next event, with its id (b"" if it is no JSON)."""
        event = _sse_event(message)
        if event:
            self.seq += 1
            event = b"id: %d-%d\n%s" % (self.number, self.seq, event)
        return event

    def unattended(self, replay):
        """Its connection is gone; the stream waits for a client that resumes it. What comes for
        it meanwhile goes to its replay log, as if sent: it counts against REPLAY_BYTES and the
        client's account, oldest first, as everything kept for a client that may resume does."""
        self.unread, self.unread_from = replay, self.seq
        waiting = self.items
        self.clear()
        for message in waiting:
            self.put(message)

    def close(self):
        super().close()
        if self.replay:
            self.replay.forget(self)

    def since(self, seq):
        """The events sent after `seq`, or None if some of them are no longer kept."""
        events = [event for number, event in self.log or () if number > seq]
        if self.seq - seq != len(events):
            return None
        return events


class _Replay:
    """What the resumable streams of a server keep, charged to their clients' accounts: a
    client's logs together hold a quarter of its account at most (the rest is for its requests
    and answers). Past it, its stream written least recently loses its oldest events first, as
    a stream past REPLAY_BYTES does its own (a resume from before them gets 400)."""

    def __init__(self):
        # a client's account -> the part of it its logs may hold, and its streams with a log,
        # least recently written first
        self.parts: weakref.WeakKeyDictionary[_Account, tuple[_Account, dict]] = \
            weakref.WeakKeyDictionary()

    def add(self, stream, event):
        if stream.closed:   # what a closed stream still writes out is never replayed
            return
        if stream.log is None:
            if stream.account not in self.parts:
                share = _Account(stream.account.limit // 4, stream.account)
                self.parts[stream.account] = (share, {})
            stream.log, stream.replay = collections.deque(), self
            stream.share, stream.peers = self.parts[stream.account]
        size = len(event)
        if size > REPLAY_BYTES:     # never kept, nor what came before it
            while stream.log:
                self._drop(stream)
            return
        while stream.logged + size > REPLAY_BYTES:
            self._drop(stream)
        stream.peers.pop(stream, None)  # written now: the others lose theirs first
        while not stream.share.take(size):
            if not stream.peers and not stream.log:
                return      # no room even with nothing else kept: not kept
            self._drop(next(iter(stream.peers), stream))
        stream.log.append((stream.seq, event))
        stream.logged += size
        stream.peers[stream] = stream

    @staticmethod
    def _drop(stream):
        size = len(stream.log.popleft()[1])
        stream.logged -= size
        stream.share.give(size)
        if not stream.log:
            stream.peers.pop(stream, None)

    @staticmethod
    def forget(stream):
        if stream.share is not None:
            stream.share.give(stream.logged)
            stream.peers.pop(stream, None)
        stream.log, stream.logged = None, 0


def _replay(http):
    """The server's `_Replay`, made when first needed."""
    if "replay" not in http.extensions:
        http.extensions["replay"] = _Replay()
    return http.extensions["replay"]


class _Resumable(_Streams):
    """A Streamable HTTP session's streams, resumable (`_STREAMS`, in place of the core's)."""

    def open(self, entry):
        count = entry.session.extensions.get("streams", 0) + 1
        entry.session.extensions["streams"] = count
        # 2025-11-25 transports: the server SHOULD open with a priming event (an id, no data)
        version = entry.session.protocol_version or "2025-03-26"
        primes = PROTOCOL_VERSIONS.index(version) >= PROTOCOL_VERSIONS.index("2025-11-25")
        return _ResumableStream(entry.session.account, count, primes)

    def prime(self, conn, stream):
        """2025-11-25: an id before anything else, so that a client that loses the stream
        can resume it, and how long to wait first (a priming event: no data)."""
        if not stream.primes:
            return b""
        return conn.fields({"id": f"{stream.number}-{stream.seq}", "retry": SSE_RETRY, "data": ""})

    def event(self, conn, stream, message):
        event = stream.numbered(message)    # a numbered stream's (others are the core's)
        if event:
            _replay(conn.http).add(stream, event)
        return event

    def left(self, conn, stream):
        """A stream whose answer was not all sent waits for its client (`unattended`)."""
        if stream.ended:
            super().left(conn, stream)
        else:
            stream.unattended(_replay(conn.http))

    def after_post(self, entry, stream):
        """A POST's stream whose client has an event id is kept: it may come back for the
        rest, or for the end it lost with a connection we took to be alive (TCP cannot tell)."""
        if not (stream.opened and not stream.closed):
            stream.close()      # a client that left: what its requests still say is dropped
            return
        stream.abort = None
        _keep_stream(entry, stream)

    async def resume(self, http, entry, last):
        """The stream a Last-Event-ID names (2025-03-26 transports: resumability), and what it
        sent after that id; 400 when it is over, or lost some of it, and nothing changes then. A
        stream still open is one its client lost before we noticed: it leaves that connection."""
        number, _, seq = last.partition("-")
        if not (len(last) < 40 and last.isascii() and number.isdigit() and seq.isdigit()):
            raise _HttpError(400, "Malformed Last-Event-ID")
        stream = None
        for candidate in [entry.standalone, *entry.kept.values(), *entry.posts]:
            if candidate and 0 < candidate.number == int(number) and not candidate.closed:
                stream = candidate
                break
        if stream is None:
            raise _HttpError(400, f"Last-Event-ID {last}: that stream is over, or was not kept")
        if int(seq) > stream.seq:
            raise _HttpError(400, f"Last-Event-ID {last}: no such event was sent")
        if stream.since(int(seq)) is None:
            raise _HttpError(400,
                             f"Last-Event-ID {last}: later events were not kept (REPLAY_BYTES)")
        await _let_go(stream)
        events = stream.since(int(seq))
        if events is None:  # lost while it let go: kept, to be tried again
            raise _HttpError(400,
                             f"Last-Event-ID {last}: later events were not kept (REPLAY_BYTES)")
        return stream, events

    def unread(self, stream):
        return [event for number, event in stream.log or () if number > stream.unread_from]


def _keep_stream(entry, stream):
    """A POST's stream, once its connection is over: kept to be resumed, KEPT_STREAMS a session;
    past it the oldest answered one goes first, else the oldest not in use."""
    entry.kept[stream.number] = stream
    if len(entry.kept) > KEPT_STREAMS:
        idle = [kept for kept in entry.kept.values() if not kept.attached]
        ended = [kept for kept in idle if kept.ended]
        oldest = (ended or idle)[0]
        entry.kept.pop(oldest.number).close()


async def _let_go(stream):
    """A stream still written to a connection leaves it (its client is resuming it elsewhere);
    one stuck writing to a client that is gone is cut off after a second; 409 after two."""
    stream.part()
    for tick in range(200):
        if not stream.attached:
            return
        if tick == 100 and stream.abort:
            stream.abort()
        await asyncio.sleep(0.01)
    raise _HttpError(409, "That stream is open, and does not let go")


def _close_sse_stream(ctx):
    """`Context.close_sse_stream`: the request's stream parts from its connection (from a sync
    tool's thread too); the client resumes it."""
    stream = getattr(ctx.session.replies.get(ctx.request_id), "__self__", None)
    if not (isinstance(stream, _ResumableStream) and stream.primes):
        return
    loop = ctx.session.loop
    if loop is None or _running_loop() is loop:
        stream.part()
    else:
        loop.call_soon_threadsafe(stream.part)


# The extension plugs in: a session's streams are resumable ones.
_STREAMS = _Resumable()
_PROVIDED["Context.close_sse_stream"] = _close_sse_stream


##############################################################################
# Extension: tasks (SEP-2663), for 2026-07-28 requests (skip on a first reading)
##############################################################################
# A tool registered with task= may answer a tools/call with a task instead of its result, if the
# request declared the extension in its clientCapabilities. The client then polls:
#
#   C->S  tools/call slow_report, _meta: clientCapabilities
#                                         {"extensions": {"io.modelcontextprotocol/tasks": {}}}
#   S->C  {"resultType": "task", "taskId": "9f...", "status": "working", "pollIntervalMs": 500, ...}
#   C->S  tasks/get {"taskId": "9f..."}       S->C  {"status": "working", ...}
#   C->S  tasks/get {"taskId": "9f..."}       S->C  {"status": "completed",
#                                                  "result": {"content": [...]}}
#
# A task ends completed (its result inlined), failed (a JSON-RPC error inlined) or cancelled
# (tasks/cancel); what it asks (input_required) the client answers with tasks/update. Tasks live
# in a TaskStore, which processes behind a balancer may share: any of them answers for any task.
# SEP-2663's rules: the server decides, call by call, but never answers with a task a request
# that did not declare the extension; it answers only once tasks/get would find the task; and
# a task fails only with a JSON-RPC error (a tool's isError result completes it).

# seconds a tools/call of a tool with task= runs before it becomes a task (if the request declared
# the extension)
TASK_AFTER = 0.5
TASK_TTL = 3600.0           # seconds a task and its result are kept (ttlMs); then they are freed,
                            # and its work, still running, cancelled
TASK_POLL = 0.5             # seconds between a client's polls of a task, as the server asks
# unexpired tasks per client (its OAuth user, else its address or session), 16 times as many in all:
# past it a call stays a plain one
MAX_TASKS = 1000
MAX_TASK_BYTES = 64 << 20   # bytes of every task kept (a quarter of it per client): past it a call
                            # stays a plain one, and a result that does not fit fails its task
MAX_TASK_RESULT = 4 << 20   # bytes of one task's result: more -> the task fails, naming it
TASK_STORE_WAIT = 10.0      # seconds a call waits for a store another process holds busy
MAX_TASK_ANSWERS = 256 << 10    # bytes of answers a task keeps (to what it asked): more -> -32602
TASK_STALE = 10.0           # seconds without a sign of life from the process running a task (a
                            # shared TaskStore) after which it reads failed

_TASKS = _MODERN + "tasks"      # the extension's name, in capabilities
_TERMINAL = ("completed", "failed", "cancelled")     # ended: a task never changes again
# what a client sees of a task
_TASK_FIELDS = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs",
                "pollIntervalMs", "result", "error", "inputRequests")
_SWEEP_EVERY = 1.0      # seconds between a runner's signs of life, and its looks at a shared store


def _room(client_usage, store_usage):
    """Whether a client, and the store, may take one more task, from their `usage` (else a call
    stays a plain one): `TaskStore.add` asks, within the transaction that adds it."""
    tasks, size = client_usage
    all_tasks, all_size = store_usage
    if tasks >= MAX_TASKS or size >= MAX_TASK_BYTES // 4:
        return False
    return all_tasks < 16 * MAX_TASKS and all_size < MAX_TASK_BYTES


class TaskStore:
    """Where tasks live: in this process (the default: SQLite in memory), or in the SQLite file
    `path`, which every process that opens it shares: behind a balancer any of them answers for
    any task. A record is a dict: the task as clients see it (`_TASK_FIELDS`), plus `owner` (who
    may see it), `client` (whose share of the store it counts against), `runner` (the process
    running it), `expires` (a time.time()) and `answers` (to what it asked). To keep tasks in
    another database, subclass this and give its six methods; each is atomic (`add` counts and
    adds at once). They are called
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
        self.executor: _Any = None      # the store's own thread (`_stored`)
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
        self.db.execute("CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, owner TEXT, "
                        "expires REAL, record TEXT)")
        self.db.execute("CREATE INDEX IF NOT EXISTS tasks_owner ON tasks (owner, expires)")
        self.db.execute("CREATE INDEX IF NOT EXISTS tasks_expires ON tasks (expires)")
        # each process's last sign of life (`beat`), for a store with no lock files to ask
        self.db.execute("CREATE TABLE IF NOT EXISTS runners (id TEXT PRIMARY KEY, seen REAL)")

    def _rows(self, sql: str, *args: _Any) -> list[_Any]:
        with self.lock:     # one connection, one statement at a time
            return self.db.execute(sql, args).fetchall()

    def add(self, record: _Json) -> bool:
        """A new task, if its client and the store have room for one more (`_room`): counted and
        added in one transaction, so that calls that come together, in any process sharing the
        store, never pass the bounds. True: every `get`, in every process, finds it from now on;
        False: there was no room, and it is not added. The expired go."""
        with self.lock, self.db:
            self.db.execute("BEGIN IMMEDIATE")  # no other process adds between count and add
            self._rows("DELETE FROM tasks WHERE expires < ?", time.time())
            if not _room(self.usage(record["client"]), self.usage()):
                return False
            self._rows("INSERT INTO tasks VALUES (?, ?, ?, ?)", record["taskId"], record["client"],
                       record["expires"], json.dumps(record).encode())
            return True

    def get(self, task_id: str) -> _Json | None:
        """The task's record (a copy), or None: no such task, or expired."""
        rows = self._rows("SELECT record FROM tasks WHERE id = ? AND expires >= ?", task_id,
                          time.time())
        if not rows:
            return None
        return json.loads(rows[0][0])

    def change(self, task_id: str, change: typing.Callable[[_Json], _Json | None]) -> _Json | None:
        """Atomically, the record becomes ``change(record)``, unless that is None: the record as
        it is now (None: no such task)."""
        with self.lock, self.db:
            self.db.execute("BEGIN IMMEDIATE")  # no other process writes in between
            record = self.get(task_id)
            if record is None:
                return None
            new = change(record)
            if new is None:
                return record
            self._rows("UPDATE tasks SET record = ? WHERE id = ?", json.dumps(new).encode(),
                       task_id)
            return new

    def usage(self, client: str | None = None) -> tuple[int, int]:
        """How many unexpired tasks `client` has, or all have (MAX_TASKS), and their bytes
        (MAX_TASK_BYTES), as the store holds them."""
        rows = self._rows("SELECT COUNT(*), TOTAL(LENGTH(record)) FROM tasks WHERE (? IS NULL OR "
                          "owner = ?) AND expires >= ?", client, client, time.time())
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
        if self.shared:
            held = _lock_held(f"{self.path}.{runner}.alive")
            if held is not None:
                return held
        rows = self._rows("SELECT seen FROM runners WHERE id = ?", runner)
        return bool(rows) and rows[0][0] >= time.time() - TASK_STALE


def _close_store(store):
    """The store is done with (the server stops): its database closes, and this process's lock
    file goes (a process that ends without this leaves it, for `alive` to find unlocked)."""
    if getattr(store, "executor", None) is not None:
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
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))     # a new one is 0600 from the first
    if os.name != "posix":
        return
    for name in (path, path + "-wal", path + "-shm"):
        try:
            found = os.stat(name)
        except FileNotFoundError:
            continue
        if found.st_uid != os.getuid():
            raise ValueError(f"{name} belongs to another user: a task store holds every task's "
                             "result")
        if found.st_mode & 0o077:
            os.chmod(name, 0o600)
            _logger.warning("%s was open to other users: made 0600 (it holds every task's result)",
                            name)


def _hold_lock(path):
    """A lock on `path`, held for this process's life (the descriptor stays open); None without
    flock."""
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
    if getattr(store, "executor", None) is None:
        from concurrent.futures import ThreadPoolExecutor
        store.executor = ThreadPoolExecutor(1, "mcp-task-store")
    call = functools.partial(getattr(store, method), *args)
    for _ in range(3):
        try:
            return await asyncio.get_running_loop().run_in_executor(store.executor, call)
        except sqlite3.OperationalError as e:
            _logger.warning("the task store is busy (%s): trying again", e)
    raise McpError(INTERNAL_ERROR, "The task store is busy: try again later")


def _iso(t):
    """`t` as createdAt and lastUpdatedAt say it: ISO 8601, UTC, to the millisecond."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


class _Tasks:
    """A server's tasks in this process (`server.extensions["tasks"]`)."""

    def __init__(self):
        self.works: dict[str, asyncio.Future[_Any]] = {}    # task id -> the work this process runs
        self.runner = os.urandom(8).hex()   # this process, as its tasks' records name it


def _tasks(server):
    """The server's tasks in this process, made when it first needs them (a tool with task=)."""
    return _state(server, "tasks", _Tasks)


def _works(server):
    return _tasks(server).works


def _use_tasks(server, tool):
    """A tool with task= is added: the extension comes into play on this server (its calls are
    the extension's: `_task_option`)."""
    _tasks(server)


def _task_option(tool, value):
    """A tool's `task=`: "optional" (a call may become a task: see `Context.detach`) or
    "required" (only as a task)."""
    if value not in (None, "optional", "required"):
        raise ValueError(f"tool {tool.name!r}: task must be None, 'optional' or 'required'")
    if value:
        tool.serve = _tasked
    return value


def _offers_tasks(server):
    """Whether tasks/* are served: some tool may become a task."""
    return any(tool.options.get("task") for tool in server.tools.values())


def _tasks_capability(server):
    """The extension in the server's capabilities.extensions: {} says it is supported."""
    if _offers_tasks(server):
        return {_TASKS: {}}
    return {}


def _tasks_on(ctx, needed_by=None):
    """Whether this request declared the tasks extension; if not, and `needed_by` (a text) needs
    it, a RequestError (before any lookup: a client that did not declare it learns nothing)."""
    extensions = None
    if ctx.version:     # a 2026-07-28 request's own capabilities
        extensions = ctx.client_capabilities.get("extensions")
    if type(extensions) is dict and _TASKS in extensions:  # this request's: no earlier one counts
        return True
    if needed_by:
        raise RequestError(MISSING_CAPABILITY, f"{needed_by} needs the client's {_TASKS} extension",
                           {"requiredCapabilities": {"extensions": {_TASKS: {}}}})
    return False


def _task_tag(session):
    """A session's own tag (a stdio session: its tasks are its own); "" for a 2026-07-28
    request, whose session is of one POST."""
    if session.protocol_version in MODERN_VERSIONS:
        return ""
    if "task tag" not in session.extensions:
        session.extensions["task tag"] = os.urandom(16).hex()
    return session.extensions["task tag"]


def _task_owner(session):
    """Who may see a task: over HTTP its user (each 2026-07-28 POST is a session of its own;
    with no auth, whoever holds its id); elsewhere the session alone."""
    import hashlib
    # hashed: without auth the principal is the Authorization header, which the store must not keep
    return hashlib.sha256(f"{session.principal}|{_task_tag(session)}".encode()).hexdigest()


def _task_client(session):
    """Whose share of the store (MAX_TASKS, MAX_TASK_BYTES) a task counts against: its OAuth user,
    else the address it came from, else its session. Never a header nobody checked, which a
    client could vary to be as many owners as it likes."""
    import hashlib
    who = session.owner or _task_tag(session)
    return hashlib.sha256(f"client|{who}".encode()).hexdigest()


async def _tasked(session, tool, params, ctx):
    """tools/call of a tool with task=: if it has not ended within TASK_AFTER s, or it calls
    `ctx.detach()`, the client gets a task at once, and the work goes on without the request."""
    needed_by = None
    if tool.options["task"] == "required":     # only a task: -32021 if the request cannot take one
        needed_by = f"Tool '{tool.name}'"
    if not _tasks_on(ctx, needed_by):  # undeclared: never a task (SEP-2663), a plain call
        return await _call_tool(session, params, ctx, tool)
    server, owner, client = session.server, _task_owner(session), _task_client(session)
    if server.task_store is None:
        server.task_store = TaskStore()
    made = session.loop.create_future()     # the answer, once the call is a task
    detaching = asyncio.Lock()     # ctx.detach and the timer may come together: one task made

    # by the work (ctx.detach) or after TASK_AFTER s: either way `work` is set then
    async def detach():
        async with detaching:
            if not made.done():
                answer = await _new_task(server, owner, client, ctx, work)
                if answer is not None:     # None: no room for it, the call stays a plain one
                    made.set_result(answer)
        return made.done()
    ctx.extensions["detach"] = detach
    work = asyncio.ensure_future(_call_tool(session, params, ctx, tool))   # may outlive the request

    # ctx and detach refer to each other: that cycle must not keep the result
    def forget_detach(_):
        ctx.extensions.pop("detach", None)
    work.add_done_callback(forget_detach)
    try:
        await asyncio.wait((work, made), timeout=TASK_AFTER, return_when=asyncio.FIRST_COMPLETED)
        if made.done():
            return made.result()
        if not work.done() and await detach():
            return made.result()
        # a quick call stays a plain one (an input_required round too), all past MAX_TASKS
        return await work
    except BaseException:   # cancelled, or the store failed as the call became a task
        work.cancel()
        raise


async def _new_task(server, owner, client, ctx, work):
    """The call becomes a task: its record, from now on followed by `_finish` and `_keep`. Nobody
    hears the call any more: its log messages and progress go nowhere; its asks go to the task.
    None if the store has no room for it (MAX_TASKS, MAX_TASK_BYTES): nothing changed then."""
    tasks, now = _tasks(server), time.time()
    # 128 random bits: an unguessable id (PROTOCOL.md 5.13), the one guard when no user is known
    record = {"taskId": os.urandom(16).hex(), "status": "working", "createdAt": _iso(now),
              "lastUpdatedAt": _iso(now), "ttlMs": int(TASK_TTL * 1000),
              "pollIntervalMs": int(TASK_POLL * 1000), "owner": owner, "client": client,
              "runner": tasks.runner, "expires": now + TASK_TTL, "answers": {}}
    await _stored(server.task_store, "beat", tasks.runner)    # alive before any task of its is seen
    # durable before the answer (SEP-2663); counted as it is added: calls that come together, the
    # count of each taken before any was added, once made them all tasks past MAX_TASKS
    if not await _stored(server.task_store, "add", record):
        return None
    task_id = record["taskId"]
    ctx.extensions["task"], ctx.extensions["asked"] = task_id, 0
    ctx.asks, ctx.log_level, ctx.progress_token = _task_input, _SILENT, None
    tasks.works[task_id] = work

    def finished(work):
        _background(_WRITES, _finish(server, task_id, work))
    work.add_done_callback(finished)

    def expired():      # its record expires: so does its work (the timer holds no reference to it)
        if task_id in tasks.works:
            tasks.works[task_id].cancel()
    _Timer(ctx.session.loop).set(TASK_TTL, expired)
    # one `_keep` a server while it has work; a keeper of a loop that ended is no more
    keeper = _KEEPING.get(server)
    if keeper is None or keeper.get_loop() is not ctx.session.loop:
        _background(_KEEPERS, _keep(server), _KEEPING, server)       # held in _KEEPING meanwhile
    return {"resultType": "task", **_task_view(record)}


_KEEPERS: "set[asyncio.Future[_Any]]" = set()     # strong references: asyncio keeps weak ones
_KEEPING: "dict[Server, asyncio.Future[_Any]]" = {}    # server -> its `_keep`, while it runs
_WRITES: "set[asyncio.Future[_Any]]" = set()    # tasks' last words (`_finish`), awaited at shutdown
_WAKE: "dict[str, asyncio.Future[None]]" = {}    # task id -> what its asks wait on (a change)


async def _keep(server):
    """While this process runs tasks, each second: it tells the store it is alive (to another
    process its tasks are then not orphans), and, if the store is shared, stops the work of a
    task that another process cancelled. A busy store is tried again the next second."""
    tasks, store = _tasks(server), server.task_store
    while tasks.works:
        try:
            await _stored(store, "beat", tasks.runner)
            if store.shared:
                for task_id, work in list(tasks.works.items()):
                    record = await _stored(store, "get", task_id)
                    if record is None or record["status"] in _TERMINAL:
                        work.cancel()
        # the store is busy or broken: the next second tries again
        except Exception as e:  # noqa: BLE001
            _logger.warning("the task store: %s", e)
        await asyncio.sleep(_SWEEP_EVERY)


def _task_view(record):
    """What a client sees of a record (`_TASK_FIELDS`): never its owner, client or answers."""
    return {key: record[key] for key in _TASK_FIELDS if key in record}


def _failed(error):
    """How a task ends with McpError `error`: its JSON-RPC error inlined."""
    return {"status": "failed", "statusMessage": error.message,
            "error": _error(None, error.code, error.message, error.data)["error"]}


def _outcome_of(work):
    """How a task's work ended: (the fields the task ends with, the size of its result)."""
    # and not by tasks/cancel (which ends the task first): the server is stopping
    if work.cancelled():
        return _failed(McpError(INTERNAL_ERROR, "The server stopped before the task ended")), 0
    error = work.exception()    # a RequestError (a tool's error is a result), or a bug
    if isinstance(error, McpError):
        return _failed(error), 0
    if error is not None:
        return _failed(McpError(INTERNAL_ERROR, "Internal error")), 0
    # an isError result completes the task: the tool ran (SEP-2663 "Task Status")
    outcome = {"status": "completed", "result": work.result()}
    return outcome, len(_encode_safely(outcome) or b"")


async def _finish(server, task_id, work):
    """A task's work is over: so is the task (one that ended first, cancelled, stays so). Its
    result is kept if it fits: MAX_TASK_RESULT bytes, and the client's and the store's share of
    MAX_TASK_BYTES; else the task fails, naming the bound."""
    _works(server).pop(task_id, None)
    store = server.task_store
    outcome, size = _outcome_of(work)

    def settled(record):    # in the store's thread, within the change: results that end at once
        if outcome["status"] != "completed":    # are each weighed against what the others left
            return outcome
        _, mine = store.usage(record["client"])
        _, everyone = store.usage()
        bound = None
        if size > MAX_TASK_RESULT:
            bound = "MAX_TASK_RESULT"
        elif mine + size > MAX_TASK_BYTES // 4 or everyone + size > MAX_TASK_BYTES:
            bound = "MAX_TASK_BYTES"
        if bound is None:
            return outcome
        return _failed(McpError(INTERNAL_ERROR, f"The task's result ({size} bytes) is more than "
                                                f"the server keeps ({bound})"))
    # a store out of reach (Redis down) takes it once it is back: an acknowledged task is not lost
    give_up = time.monotonic() + TASK_TTL
    while True:
        try:
            await _stored(store, "beat", _tasks(server).runner)     # still alive, to the others
            await _change_task(server, task_id, settled)
            return
        except McpError as e:
            if time.monotonic() > give_up:
                raise
            _logger.warning("task %s: its end is not written yet (%s): trying again", task_id,
                            e.message)
        await asyncio.sleep(_SWEEP_EVERY)


async def _change_task(server, task_id, change):
    """Every change this process makes to a task passes here: ``change(record)`` gives the
    fields that change (none: no change; a task that has ended never changes). The asks of the
    task look again, and the subscriptions/listen streams following it hear of it (another
    process's changes are seen by polling only)."""
    changed = []

    def stamped(record):
        if record["status"] in _TERMINAL:
            return None
        fields = change(record)
        if not fields:
            return None
        new = {**record, **fields, "lastUpdatedAt": _iso(time.time())}
        if new["status"] in _TERMINAL or not new.get("inputRequests"):  # only while some are open
            new.pop("inputRequests", None)
        changed.append(new)
        return new
    record = await _stored(server.task_store, "change", task_id, stamped)
    wake = _WAKE.pop(task_id, None)
    if wake is not None and not wake.done():
        wake.set_result(None)
    if changed:     # the last try is what was written (a shared store may try again)
        _publish(server, "notifications/tasks", _task_view(changed[-1]))
        relay = getattr(server.task_store, "relay", None)   # other processes' listens (Redis)
        if relay is not None:
            relay.hear(server, "notifications/tasks", _task_view(changed[-1]))
    return record


async def _task_input(ctx, capability, method, params, key=None):
    """How a task asks (`Context.asks`): the ask joins its inputRequests, and waits for the
    client's tasks/update, which may reach another process sharing the store: that one is heard
    within a second. An ask answered once has its answer: it is never asked twice."""
    _require_capability(ctx, capability, params)
    server, task_id = ctx.session.server, ctx.extensions["task"]
    ctx.extensions["asked"] += 1
    key = str(key or f"{capability}-{ctx.extensions['asked']}")

    def ask(record):
        if key in record["answers"]:
            return None
        asks = {**record.get("inputRequests", {}), key: {"method": method, "params": params}}
        return {"status": "input_required", "inputRequests": asks}
    await _change_task(server, task_id, ask)
    while True:
        record = await _stored(server.task_store, "get", task_id)
        if record is None or record["status"] in _TERMINAL:
            raise asyncio.CancelledError    # it ended (cancelled, expired): its work stops
        if key in record["answers"]:
            return record["answers"][key]
        if task_id not in _WAKE:
            _WAKE[task_id] = ctx.session.loop.create_future()
        await asyncio.wait((_WAKE[task_id],), timeout=_SWEEP_EVERY)


async def _task_record(session, task_id):
    """The caller's task, or None (another's is as unknown as none). A task whose process is
    gone (`TaskStore.alive`) has died with it: it reads failed."""
    server, store = session.server, session.server.task_store
    if store is None or len(task_id) > 64:     # ours are 32 hex digits: a longer one is nobody's
        return None
    record = await _stored(store, "get", task_id)
    if record is None or record["owner"] != _task_owner(session):
        return None
    runner = record["runner"]
    if record["status"] in _TERMINAL or runner == _tasks(server).runner:
        return record
    if not await _stored(store, "alive", runner):
        stopped = _failed(McpError(INTERNAL_ERROR, "The server process running this task stopped"))

        def died(record):
            return stopped
        record = await _change_task(server, task_id, died)
    return record


async def _task(session, params, ctx):
    """The task a tasks/* request names, if the caller may see it; else -32602, which says
    nothing of whether another's exists."""
    _tasks_on(ctx, "This request")     # declared on this very request, or -32021
    record = await _task_record(session, _name(params, "taskId"))
    if record is None:
        raise McpError(INVALID_PARAMS,
                       "Invalid params: no such task (unknown, expired, or another's)")
    return record


async def _tasks_get(session, params, ctx):
    """tasks/get: the task now; once it ended, its result or error inlined."""
    return _task_view(await _task(session, params, ctx))


async def _tasks_update(session, params, ctx):
    """Answers to what a task asked: each answer is checked first (none is taken if one is
    malformed); keys it does not wait for are ignored (SEP-2663 "Task Input Requests")."""
    record, answers = await _task(session, params, ctx), params.get("inputResponses")
    if type(answers) is not dict:
        raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
    for key, ask in record.get("inputRequests", {}).items():
        if key not in answers:
            continue
        problem = _answer_problem(ask["method"], ask["params"], answers[key])
        if problem:
            raise McpError(INVALID_PARAMS, f"Invalid params: inputResponses[{key[:100]!r}] "
                                           f"({ask['method']}): {problem}")

    def take(record):
        asked = record.get("inputRequests", {})
        got = {key: answers[key] for key in asked if key in answers}
        if not got:
            return None
        left = {key: ask for key, ask in asked.items() if key not in got}
        kept = {**record["answers"], **got}
        if len(encode(kept)) > MAX_TASK_ANSWERS:
            raise McpError(INVALID_PARAMS,
                           "Invalid params: the answers are too big (MAX_TASK_ANSWERS)")
        status = "input_required" if left else "working"     # some answered: it waits for the rest
        return {"answers": kept, "inputRequests": left, "status": status}
    await _change_task(session.server, record["taskId"], take)
    return {}


async def _tasks_cancel(session, params, ctx):
    """The task ends cancelled (one that has ended stays as it is), and its work here is
    stopped (elsewhere, by its process's `_keep`, within a second). Cancelling is cooperative
    (SEP-2663 "Task Cancellation"): work that ended first keeps its outcome."""
    task_id = (await _task(session, params, ctx))["taskId"]

    def cancelled(record):
        return {"status": "cancelled"}
    await _change_task(session.server, task_id, cancelled)
    work = _works(session.server).get(task_id)
    if work is not None:
        work.cancel()
    return {}


async def _listen_to_tasks(session, ctx, wanted, honoured):
    """subscriptions/listen may follow the caller's tasks (`taskIds`): notifications/tasks."""
    ids = wanted.get("taskIds")
    if ids is None:
        return
    _tasks_on(ctx, "This request")
    if type(ids) is not list:
        ids = []
    honoured["taskIds"] = [id_ for id_ in ids if type(id_) is str and await _task_record(session,
                                                                                         id_)]


async def _stop_tasks(server):
    """Serving ends: a task cannot outlive its process, so it ends failed; its last words
    (`_finish`) are written and waited for; the store closes."""
    works = list(_works(server).values())
    for work in works:
        work.cancel()
    if works:
        await asyncio.wait(works, timeout=SHUTDOWN_GRACE)
    if _WRITES:
        await asyncio.wait(list(_WRITES), timeout=3 * TASK_STORE_WAIT)
    if isinstance(server.task_store, TaskStore):
        _close_store(server.task_store)
    elif hasattr(server.task_store, "close"):   # another kind of store (RedisTaskStore)
        server.task_store.close()


# --task-store URL: the stores other than a SQLite file, by the URL's scheme (redis://, below)
_TASK_STORES: dict[str, typing.Callable[[str], _Any]] = {}


class _TaskStoreOption(_ServeOptions):
    """serve --task-store FILE (or URL: redis://...)."""

    def add(self, parser):
        parser.add_argument("--task-store", metavar="FILE|URL",
                            help="keep tasks in this SQLite file, which other "
                            "processes serving the same tools may share (default: in memory); "
                            "or in Redis, shared across machines: "
                            "redis://[:PASSWORD@]HOST:PORT/DB (rediss:// for TLS)")

    def configure(self, server, args, options):
        if args.task_store:
            scheme = args.task_store.partition("://")[0] if "://" in args.task_store else ""
            server.task_store = _TASK_STORES.get(scheme, TaskStore)(args.task_store)
        attach = getattr(server.task_store, "attach", None)    # a store that relays changes
        if attach is not None:
            attach(server)


# The client's side: a task is polled until it ends.

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
        self.id: str | None = None
        if answer.get("resultType") == "task":
            self.id = answer.get("taskId")
            if type(self.id) is not str:
                raise McpError(INTERNAL_ERROR, "The server's task has no taskId")
        if self.id and on_status:
            on_status(answer)

    async def status(self) -> _Json:
        """tasks/get: the task now; `on_status` hears each change of its status."""
        if self.id:
            last = await self.client.request("tasks/get", {"taskId": self.id})
            if type(last) is not dict or last.get("taskId") != self.id:
                raise McpError(INTERNAL_ERROR, f"The server's tasks/get is not of task {self.id}")
            if self.on_status and last.get("status") != self.last.get("status"):
                self.on_status(last)
            self.last = last
        return self.last

    async def cancel(self) -> None:
        """tasks/cancel, unless the task has ended (cancelling then would change nothing)."""
        if self.id and self.last.get("status") not in _TERMINAL:
            await self.client.request("tasks/cancel", {"taskId": self.id})

    async def result(self, timeout: float | None = None) -> CallToolResult:
        """Polls (as often as the server asks, less often while nothing changes) until the task
        ends, within `timeout` s (else its ttlMs); what it asks is answered by the client's
        handlers. If this fails or is cancelled, so is the task."""
        loop = asyncio.get_running_loop()
        if timeout is None:
            timeout = _millis(self.last.get("ttlMs"), math.inf)
        end = loop.time() + timeout
        wait, answered = 0.0, set[str]()
        try:
            while self.id and self.last.get("status") not in _TERMINAL:
                status = self.last.get("status")
                if status != "input_required" or not await self._answer(answered):
                    # never sooner than the server asks (SEP-2663), later while nothing changes
                    wait = max(_millis(self.last.get("pollIntervalMs"), 0.05), min(wait * 1.5, 5.0))
                    await asyncio.sleep(max(0.0, min(wait, end - loop.time())))
                now = (await self.status()).get("status")
                if now != status:
                    wait = 0.0
                if now not in _TERMINAL and loop.time() >= end:
                    raise McpError(REQUEST_TIMEOUT,
                                   f"Task {self.id} had not ended within the call's time")
        except BaseException:
            _background(self.client._tasks, self._cancel_quietly())     # if it has not ended
            raise
        if not self.id:
            return typing.cast(CallToolResult, self.last)
        if self.last["status"] == "completed" and type(self.last.get("result")) is dict:
            return self.last["result"]
        error = self.last.get("error")
        if type(error) is not dict:
            error = {}
        code = error.get("code")
        if type(code) is not int:
            code = INTERNAL_ERROR
        message = str(error.get("message") or f"Task {self.id} ended {self.last['status']}")
        raise McpError(code, message, error.get("data"))

    async def _answer(self, answered):
        """One tasks/update with the answers to what the task asks that was not answered yet."""
        asks = self.last.get("inputRequests")
        if type(asks) is not dict:
            asks = {}
        if len(answered | set(asks)) > MAX_ROUNDS * 10:     # a server asking on and on
            raise McpError(INTERNAL_ERROR, f"Task {self.id} asked over {MAX_ROUNDS * 10} questions")
        new = await self.client._answers(asks, answered)
        if not new:
            return False
        await self.client.request("tasks/update", {"taskId": self.id, "inputResponses": new})
        answered.update(new)
        return True

    async def _cancel_quietly(self):
        with contextlib.suppress(McpError):     # the connection may be gone: the task then expires
            await self.cancel()


def _millis(value, otherwise):
    """A server's ms (pollIntervalMs, ttlMs) as seconds, within 50 ms and a day; else `otherwise`.
    """
    if type(value) is not int:
        return otherwise
    return min(max(value, 50), 86_400_000) / 1000


async def _client_task(client, answer, task, timeout, on_status):
    """`Client.call_tool` of a call that is (or with `task`, may be) a task: its TaskHandle, or
    its result once it ends."""
    handle = TaskHandle(client, answer, on_status)
    if task:
        return handle
    return await handle.result(timeout)


def _polls_tasks(client, capabilities):
    """A 2026-07-28 client declares the tasks extension: call_tool polls a task."""
    return {**capabilities, "extensions": {**capabilities.get("extensions", {}), _TASKS: {}}}


# The extension plugs in: a tool option, tools/call that may become a task, the tasks/*
# methods (2026-07-28 only), a capability, listens that follow tasks, the end of serving,
# --task-store; on the client, the capability it declares and the handle it polls.
_TOOL_OPTIONS["task"] = _task_option
_ON_TOOL_OPTION["task"] = _use_tasks
_METHODS.update({"tasks/get": _Method(_tasks_get, _offers_tasks, "2026-07-28"),
                 "tasks/update": _Method(_tasks_update, _offers_tasks, "2026-07-28"),
                 "tasks/cancel": _Method(_tasks_cancel, _offers_tasks, "2026-07-28")})
_NAME_KEY.update(dict.fromkeys(("tasks/get", "tasks/update", "tasks/cancel"), "taskId"))
_EXTENSION_CAPABILITIES["tasks"] = _tasks_capability
_LISTEN_FILTERS.append(_listen_to_tasks)
_ON_STOP.append(_stop_tasks)
_SERVE_OPTIONS.append(_TaskStoreOption())
_STATELESS_CAPABILITIES.append(_polls_tasks)
_SYNCED.append(TaskHandle)
_PROVIDED["Client.call_tool task"] = _client_task
__all__ += ["TaskHandle", "TaskStore"]


##############################################################################
# Extension: tasks in Redis, shared across machines (skip on a first reading)
##############################################################################
# `--task-store redis://[:PASSWORD@]HOST:PORT/DB` (rediss:// for TLS): the processes of a server,
# on any number of machines, keep their tasks in one Redis (or Valkey), as processes of one
# machine share a SQLite file. mcp_min speaks Redis's protocol (RESP2) itself, over a socket of
# the store's thread; each exchange has REDIS_TIMEOUT s. What the store holds, under "mcp_min:":
#
#   task:ID         the record (JSON), expiring with the task (PXAT its `expires`)
#   expires         sorted set: task id, by when it expires (the sweep finds the expired there)
#   client, size    hashes: task id -> whose share it counts against, and its bytes
#   count, bytes    hashes: client -> its tasks, and their bytes; total: {count, bytes} of all
#   alive:RUNNER    a process's sign of life, renewed each second, gone TASK_STALE s after it stops
#   changes:DB      the channel on which each process says what changed (`_RedisRelay`)
#
# A change is atomic: WATCH, read, MULTI ... EXEC, tried again if another process wrote between;
# the expired are swept by a Lua script (EVAL), which Redis runs alone. One Redis primary (Sentinel
# or a managed service for failover); cluster mode is not supported.

REDIS_TIMEOUT = 5.0     # seconds an exchange with Redis may take (connecting too): then the call
                        # fails, naming the store, and the store is not tried again for a second
MAX_REDIS_REPLY = MAX_TASK_BYTES + (1 << 20)    # bytes of one answer from Redis: more -> garbled
MAX_RELAYED = 10_000    # changes waiting to go out to the other processes: more -> dropped, logged
_REDIS_TRIES = 100      # times a change is tried again after another process wrote between
_REDIS_PREFIX = "mcp_min:"
# what one process tells the others (`_RedisRelay`): the changes `Server._tell` and tasks say
_RELAYED = ("notifications/resources/updated", "notifications/tools/list_changed",
            "notifications/prompts/list_changed", "notifications/resources/list_changed",
            "notifications/tasks")

# The expired go, with their share of the counts (ARGV: the prefix, now in ms).
_SWEEP_LUA = """
local p = ARGV[1]
local gone = redis.call('ZRANGEBYSCORE', p .. 'expires', '-inf', '(' .. ARGV[2], 'LIMIT', 0, 1000)
for _, id in ipairs(gone) do
  local client = redis.call('HGET', p .. 'client', id)
  local size = tonumber(redis.call('HGET', p .. 'size', id) or '0')
  if client then
    if redis.call('HINCRBY', p .. 'count', client, -1) <= 0 then
      redis.call('HDEL', p .. 'count', client)
      redis.call('HDEL', p .. 'bytes', client)
    else
      redis.call('HINCRBY', p .. 'bytes', client, -size)
    end
    redis.call('HINCRBY', p .. 'total', 'count', -1)
    redis.call('HINCRBY', p .. 'total', 'bytes', -size)
  end
  redis.call('HDEL', p .. 'client', id)
  redis.call('HDEL', p .. 'size', id)
  redis.call('ZREM', p .. 'expires', id)
  redis.call('DEL', p .. 'task:' .. id)
end
return #gone
"""


class _Garbled(Exception):
    """Redis answered something that is not RESP, or more than MAX_REDIS_REPLY."""


class _RedisError(Exception):
    """Redis answered an error (-ERR ...)."""


class _RedisUrl:
    """redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], rediss:// for TLS. `name` says where, for logs
    and errors: never the password."""

    def __init__(self, url):
        parts, unquote = urllib.parse.urlsplit(url), urllib.parse.unquote
        if parts.scheme not in ("redis", "rediss"):
            raise ValueError("a Redis task store's URL starts with redis:// or rediss://")
        self.tls = parts.scheme == "rediss"
        self.host = parts.hostname or "localhost"
        try:
            self.port = parts.port if parts.port is not None else 6379
            self.db = int(parts.path.strip("/") or 0)
            self.host.encode("idna")    # a label past 63 characters: no host name
        except ValueError:      # (UnicodeError is one)
            raise ValueError(f"a Redis task store's URL is {parts.scheme}://HOST:PORT/DB, DB a "
                             "number") from None
        if not 0 < self.port < 65536 or self.db < 0:
            raise ValueError(f"a Redis task store's URL is {parts.scheme}://HOST:PORT/DB, PORT "
                             "and DB as Redis has them")
        # redis://:secret@host and redis://secret@host are both the password alone
        self.user = None
        self.password = unquote(parts.password) if parts.password is not None else None
        if self.password is None and parts.username:
            self.password = unquote(parts.username)
        elif parts.username:
            self.user = unquote(parts.username)
        host = f"[{self.host}]" if ":" in self.host else self.host     # IPv6, as a URL writes it
        self.name = f"{parts.scheme}://{host}:{self.port}/{self.db}"
        self.channel = f"{_REDIS_PREFIX}changes:{self.db}"  # pub/sub knows no DB: the name does


class _Resp:
    """One connection to Redis, in RESP2: commands out as arrays of bulk strings (whatever bytes a
    task id holds, Redis reads them as data), answers parsed within REDIS_TIMEOUT s each."""

    def __init__(self, where: _RedisUrl) -> None:
        import socket
        self.buffer, self.at = bytearray(), 0   # what came, and how much of it was read
        self.left = 0   # bytes the answer being read may still take (MAX_REDIS_REPLY in all)
        self.sock: _Any = socket.create_connection((where.host, where.port), REDIS_TIMEOUT)
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if where.tls:
                import ssl
                self.sock = ssl.create_default_context().wrap_socket(self.sock,
                                                                     server_hostname=where.host)
            if where.password is not None:
                auth = ["AUTH", where.password]
                if where.user is not None:
                    auth = ["AUTH", where.user, where.password]
                self.call(*auth)
            if where.db:
                self.call("SELECT", where.db)
        except BaseException:
            self.close()
            raise

    def send(self, *commands: list[_Any]) -> None:
        out = []
        for command in commands:
            out.append(b"*%d\r\n" % len(command))
            for arg in command:
                data = arg if type(arg) is bytes else str(arg).encode()
                out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.settimeout(REDIS_TIMEOUT)
        self.sock.sendall(b"".join(out))

    def pipeline(self, *commands: list[_Any]) -> list[_Any]:
        """Each command's answer, sent together (one round trip); an error answer raises
        _RedisError once all are read."""
        self.send(*commands)
        deadline = time.monotonic() + REDIS_TIMEOUT
        replies = [self.read(deadline) for _ in commands]
        for reply in replies:
            if isinstance(reply, _RedisError):
                raise reply
        return replies

    def call(self, *command: _Any) -> _Any:
        return self.pipeline(list(command))[0]

    def wait(self, seconds: float) -> bool:
        """Whether something came within `seconds` (pub/sub: a message may come at any time)."""
        if len(self.buffer) > self.at:
            return True
        self.sock.settimeout(seconds)
        try:
            data = self.sock.recv(1 << 16)
        except TimeoutError:
            return False
        if not data:
            raise ConnectionError("Redis closed the connection")
        self.buffer[:], self.at = data, 0
        return True

    def read(self, deadline: float, depth: int = 0) -> _Any:
        """One answer: str (+), _RedisError (-), int (:), bytes or None ($), list or None (*);
        within MAX_REDIS_REPLY bytes in all (an array's items count 16 bytes each besides)."""
        if depth == 0:
            self.left = MAX_REDIS_REPLY
        line = self._line(deadline)
        kind, rest = line[:1], line[1:]
        try:
            if kind == b"+":
                return rest.decode()
            if kind == b"-":
                return _RedisError(rest.decode(errors="replace")[:500])
            if kind == b":":
                return int(rest)
            size = int(rest)
        except ValueError:
            raise _Garbled("it answered something that is not RESP") from None
        if kind == b"$" and -1 <= size <= self.left:
            if size == -1:
                return None
            self.left -= size
            data = self._take(size + 2, deadline)
            if data[-2:] != b"\r\n":
                raise _Garbled("it answered something that is not RESP")
            return data[:-2]
        if kind == b"*" and -1 <= size <= self.left >> 4 and depth < 4:
            if size == -1:
                return None
            self.left -= size << 4
            return [self.read(deadline, depth + 1) for _ in range(size)]
        raise _Garbled("it answered something that is not RESP, or too much")

    def _line(self, deadline):
        end = self.buffer.find(b"\r\n", self.at)
        while end < 0:
            if len(self.buffer) - self.at > 1 << 16:
                raise _Garbled("it answered something that is not RESP")
            self._fill(deadline)
            end = self.buffer.find(b"\r\n", self.at)
        line, self.at = bytes(self.buffer[self.at:end]), end + 2
        return line

    def _take(self, size, deadline):
        while len(self.buffer) - self.at < size:
            self._fill(deadline)
        data, self.at = bytes(self.buffer[self.at:self.at + size]), self.at + size
        return data

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self.sock.settimeout(left)
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("Redis closed the connection")
        del self.buffer[:self.at]   # what was read goes: the buffer holds the unread alone
        self.at = 0
        self.buffer += data

    def close(self) -> None:
        import socket
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


def _string(answer, command):
    """An answer that is a string or nil (GET's), else garbled."""
    if answer is not None and type(answer) is not bytes:
        raise _Garbled(f"it answered {command} with no string")
    return answer


def _executed(answer):
    """Whether MULTI ... EXEC ran: a list; nil if a key it watched changed (try again)."""
    if answer is not None and type(answer) is not list:
        raise _Garbled("it answered EXEC with no list")
    return answer is not None


def _redis_trouble(name, e):
    """McpError for the peer: what is wrong with the store, named (never its password)."""
    if isinstance(e, TimeoutError):
        why = f"no answer within {REDIS_TIMEOUT:g} s"
    elif isinstance(e, (_Garbled, _RedisError)):
        why = str(e)
    elif isinstance(e, OSError) and type(e).__module__ != "ssl":
        why = (e.strerror or type(e).__name__).lower()     # "connection refused"
    elif isinstance(e, OSError):
        why = getattr(e, "reason", None) or type(e).__name__    # CERTIFICATE_VERIFY_FAILED
    else:
        why = type(e).__name__
    return McpError(INTERNAL_ERROR, f"The task store {name} is unreachable or failing ({why}): "
                                    "try again later")


class RedisTaskStore:
    """Tasks in Redis (or Valkey) at `url`, redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (rediss://
    for TLS): TaskStore's six methods, with its guarantees, for processes on many machines. A
    process's liveness is a key that expires TASK_STALE s after its last sign (`beat`). Changes
    made by any process (Server.resource_updated, list changes, a task's status) reach every
    other's subscribers and listens (`attach`, `_RedisRelay`). Redis out of reach: each call fails
    with an McpError naming the store (not its password), and it is tried again on the next."""

    shared = True

    def __init__(self, url: str) -> None:
        self.where = _RedisUrl(url)
        self.name = self.where.name
        self.lock = threading.RLock()
        self.conn: _Resp | None = None
        self.executor: _Any = None      # the store's own thread (`_stored`)
        self.relay: _RedisRelay | None = None
        self.up_since = 0.0     # when Redis last started (time.monotonic()), for `alive`
        self.retry_at = 0.0     # after a failure: no new connection before then
        self.scripts: dict[str, str] = {}   # Lua source -> its SHA-1, as EVALSHA names it
        try:
            self._connection()
        except McpError as e:
            if any(wrong in e.message for wrong in ("WRONGPASS", "NOAUTH", "NOPERM", "DB index")):
                raise ValueError(e.message) from None
            # down now: each call tries again (the process serves what needs no store meanwhile)
            _logger.warning("%s", e.message)

    def _connection(self):
        """The connection, made if none (AUTH, SELECT); McpError if Redis is out of reach."""
        if self.conn is not None:
            return self.conn
        if time.monotonic() < self.retry_at:
            raise McpError(INTERNAL_ERROR, f"The task store {self.name} is unreachable: try again "
                                           "later")
        try:
            self.conn = _Resp(self.where)
            info = self.conn.call("INFO", "server")
            if type(info) is not bytes:
                raise _Garbled("it answered INFO with no text")
            uptime = re.search(rb"uptime_in_seconds:(\d+)", info)
            self.up_since = time.monotonic() - int(uptime.group(1) if uptime else 1 << 30)
        except (OSError, _Garbled, _RedisError) as e:
            self._drop()
            raise _redis_trouble(self.name, e) from None
        return self.conn

    def _drop(self):
        if self.conn is not None:
            self.conn.close()
        self.conn, self.retry_at = None, time.monotonic() + 1.0

    def _run(self, operation):
        """`operation(conn)` under the lock; a connection that failed is dropped, and a reused one
        (Redis restarted meanwhile) is tried once more on a new one. Each operation is safe to run
        again: `add` finds its task if it was added, `change` reads again."""
        with self.lock:
            for attempt in range(2):
                fresh = self.conn is None
                conn = self._connection()
                try:
                    return operation(conn)
                except _RedisError as e:
                    if e.args[0].startswith(("LOADING", "READONLY", "MASTERDOWN")):
                        self._drop()    # restarting, or failing over: a new connection, soon
                    raise _redis_trouble(self.name, e) from None
                except (OSError, _Garbled, ValueError) as e:
                    self._drop()
                    if fresh or attempt:
                        raise _redis_trouble(self.name, e) from None
                    self.retry_at = 0.0
        raise AssertionError("unreachable")

    def _key(self, task_id):
        return f"{_REDIS_PREFIX}task:{task_id}"

    def _sweep(self, conn, now):
        """The expired go (_SWEEP_LUA): Redis has freed their records; this frees their counts."""
        sha = self.scripts.get(_SWEEP_LUA)
        if sha is None:
            import hashlib
            sha = self.scripts[_SWEEP_LUA] = hashlib.sha1(_SWEEP_LUA.encode()).hexdigest()
        try:
            conn.call("EVALSHA", sha, 0, _REDIS_PREFIX, now)
        except _RedisError as e:
            if not e.args[0].startswith("NOSCRIPT"):
                raise
            conn.call("EVAL", _SWEEP_LUA, 0, _REDIS_PREFIX, now)

    def _usage(self, conn, client):
        if client is None:
            found = conn.call("HMGET", _REDIS_PREFIX + "total", "count", "bytes")
        else:
            found = conn.pipeline(["HGET", _REDIS_PREFIX + "count", client],
                                  ["HGET", _REDIS_PREFIX + "bytes", client])
        return int(found[0] or 0), int(found[1] or 0)

    def add(self, record: _Json) -> bool:
        """TaskStore.add: counted (`_room`) and added in one transaction, durable (as Redis is:
        see the README's recipe) before it returns."""
        p, task_id, client = _REDIS_PREFIX, record["taskId"], record["client"]
        data = json.dumps(record).encode()
        expires = int(record["expires"] * 1000)

        def add(conn):
            for _ in range(_REDIS_TRIES):
                if conn.call("EXISTS", self._key(task_id)):
                    return True     # tried again after its answer was lost: it was added
                self._sweep(conn, int(time.time() * 1000))
                conn.call("WATCH", p + "total")     # every change of a count writes the total
                if not _room(self._usage(conn, client), self._usage(conn, None)):
                    conn.call("UNWATCH")
                    return False
                done = conn.pipeline(
                    ["MULTI"], ["SET", self._key(task_id), data, "PXAT", expires],
                    ["ZADD", p + "expires", expires, task_id],
                    ["HSET", p + "client", task_id, client],
                    ["HSET", p + "size", task_id, len(data)], ["HINCRBY", p + "count", client, 1],
                    ["HINCRBY", p + "bytes", client, len(data)],
                    ["HINCRBY", p + "total", "count", 1],
                    ["HINCRBY", p + "total", "bytes", len(data)],
                    ["EXEC"])
                if _executed(done[-1]):
                    return True
            raise McpError(INTERNAL_ERROR, f"The task store {self.name} is busy: try again later")
        return self._run(add)

    def get(self, task_id: str) -> _Json | None:
        """TaskStore.get: the record (a copy), or None."""
        data = self._run(lambda conn: _string(conn.call("GET", self._key(task_id)), "GET"))
        if data is None:
            return None
        record = json.loads(data)
        return record if record["expires"] >= time.time() else None

    def change(self, task_id: str, change: typing.Callable[[_Json], _Json | None]) -> _Json | None:
        """TaskStore.change: atomically (WATCH ... EXEC; `change` is called again if another
        process wrote the task between)."""
        p, key = _REDIS_PREFIX, self._key(task_id)

        def attempt(conn):
            for _ in range(_REDIS_TRIES):
                old = _string(conn.pipeline(["WATCH", key], ["GET", key])[1], "GET")
                if old is None:
                    conn.call("UNWATCH")
                    return None
                record = json.loads(old)
                new = change(record)
                if new is None:
                    conn.call("UNWATCH")
                    return record
                data = json.dumps(new).encode()
                grown = len(data) - len(old)
                done = conn.pipeline(
                    ["MULTI"], ["SET", key, data, "XX", "PXAT", int(new["expires"] * 1000)],
                    ["HSET", p + "size", task_id, len(data)],
                    ["HINCRBY", p + "bytes", new["client"], grown],
                    ["HINCRBY", p + "total", "bytes", grown], ["EXEC"])
                if _executed(done[-1]):
                    return new
            raise McpError(INTERNAL_ERROR, f"The task store {self.name} is busy: try again later")
        return self._run(attempt)

    def usage(self, client: str | None = None) -> tuple[int, int]:
        """TaskStore.usage: unexpired tasks of `client` (or all), and their bytes."""
        def usage(conn):
            self._sweep(conn, int(time.time() * 1000))
            return self._usage(conn, client)
        return self._run(usage)

    def beat(self, runner: str) -> None:
        """TaskStore.beat: process `runner` is alive for TASK_STALE s more (a key that expires)."""
        self._run(lambda conn: conn.call("SET", f"{_REDIS_PREFIX}alive:{runner}", 1, "PX",
                                         int(TASK_STALE * 1000)))

    def alive(self, runner: str) -> bool:
        """TaskStore.alive: its key is there; or Redis started less than TASK_STALE s ago (keys
        that expired while it was down say nothing of the processes)."""
        if self._run(lambda conn: conn.call("EXISTS", f"{_REDIS_PREFIX}alive:{runner}")):
            return True
        return time.monotonic() - self.up_since < TASK_STALE

    def attach(self, server: "Server") -> None:
        """Serving starts: changes go to and come from the other processes (`_RedisRelay`)."""
        if self.relay is None:
            self.relay = _RedisRelay(server, self)

    def close(self) -> None:
        """Serving ends: the relay stops, the store's thread ends, the connection closes."""
        if self.relay is not None:
            self.relay.stop()
            self.relay = None
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None
        with self.lock:
            if self.conn is not None:
                self.conn.close()
                self.conn = None


class _RedisRelay:
    """What changes in one process (Server._tell: resources/updated, list_changed; a task's
    status), published in the order it happened, and heard by every other process (SUBSCRIBE):
    their sessions subscribed to it and their listens hear it once, as if it had happened there.
    Each way has a thread and a connection of its own: a burst of changes never holds up the
    store's calls (a process's sign of life among them). Redis's pub/sub keeps nothing: what is
    said while a process is cut off from Redis, that process does not hear."""

    def __init__(self, server, store):
        self.server, self.store = server, store
        self.me = os.urandom(8).hex()   # this process, whose own messages it skips
        self.relaying = 0   # the thread telling a change heard from another (the loop's), or 0
        self.out: collections.deque[bytes] = collections.deque()    # to publish (MAX_RELAYED)
        self.ready = threading.Condition()
        self.stopped = threading.Event()
        self.conn: _Resp | None = None      # the listener's
        server.hearing.append(self.hear)
        self.threads = [threading.Thread(target=self._listen, name="mcp-task-store-relay",
                                         daemon=True),
                        threading.Thread(target=self._publish, name="mcp-task-store-publish",
                                         daemon=True)]
        for thread in self.threads:
            thread.start()

    def hear(self, server, method, params):
        """A change here (on the loop, or a sync tool's thread): to the others, in order; not
        one that came from them."""
        if self.relaying == threading.get_ident():
            return
        message = json.dumps({"from": self.me, "method": method, "params": params}).encode()
        with self.ready:
            if len(self.out) >= MAX_RELAYED:
                _logger.warning("%s: %s not relayed (MAX_RELAYED changes wait)", self.store.name,
                                method)
                return
            self.out.append(message)
            self.ready.notify()

    def _publish(self):
        """The publisher's thread: what waits goes in one round trip (PUBLISH after PUBLISH),
        each once: one whose round trip failed is not sent again (it may have been heard)."""
        conn, lost = None, False
        try:
            while True:
                with self.ready:
                    while not self.out and not self.stopped.is_set():
                        self.ready.wait()
                    if not self.out:    # stopped, and all said
                        return
                    batch = [self.out.popleft() for _ in range(min(len(self.out), 1000))]
                try:
                    if conn is None:
                        conn = _Resp(self.store.where)
                    conn.pipeline(*[["PUBLISH", self.store.where.channel, message]
                                    for message in batch])
                    lost = False
                except (OSError, _Garbled, _RedisError, ValueError) as e:
                    if conn is not None:
                        conn.close()
                        conn = None
                    if not lost:
                        _logger.warning("%d changes were not relayed: %s", len(batch),
                                        _redis_trouble(self.store.name, e).message)
                    lost = True
                    if self.stopped.wait(1.0):
                        return
        finally:
            if conn is not None:
                conn.close()

    def _listen(self):
        """The relay's thread: subscribed, and subscribed again after a failure, each second."""
        lost = False
        while not self.stopped.is_set():
            try:
                self.conn = _Resp(self.store.where)
                self.conn.call("SUBSCRIBE", self.store.where.channel)
                if lost:
                    _logger.info("%s: hearing the other processes' changes again", self.store.name)
                lost, pinged = False, False
                while not self.stopped.is_set():
                    if not self.conn.wait(REDIS_TIMEOUT if pinged else KEEPALIVE_INTERVAL):
                        if pinged:      # no answer to a PING: Redis (or the way to it) is gone
                            raise TimeoutError("timed out")
                        self.conn.send(["PING"])    # quiet: is Redis still there?
                        pinged = True
                        continue
                    message, pinged = self.conn.read(time.monotonic() + REDIS_TIMEOUT), False
                    if type(message) is list and message[:1] == [b"message"] and len(message) == 3:
                        self._heard(message[2])
            except (OSError, _Garbled, _RedisError, ValueError) as e:
                if not lost and not self.stopped.is_set():
                    _logger.warning("%s", _redis_trouble(self.store.name, e).message)
                lost = True
            if self.conn is not None:
                self.conn.close()
            self.stopped.wait(1.0)

    def _heard(self, data):
        """A message on the channel, in the relay's thread: to the loop, if it is another's."""
        try:
            message = json.loads(data)
            method, params = message["method"], message["params"]
        except (ValueError, KeyError, TypeError):
            return
        if message.get("from") == self.me or method not in _RELAYED or type(params) is not dict:
            return      # its own, or not a change (whoever writes to Redis is no client of ours)
        for _ in range(3):
            try:    # (the loop adds and removes sessions meanwhile)
                loop = next((session.loop for session in list(self.server.sessions)), None)
                break
            except RuntimeError:
                continue
        else:
            loop = None
        if loop is not None:    # nobody connected: nobody to tell
            loop.call_soon_threadsafe(self._tell, method, params)

    def _tell(self, method, params):
        """On the loop: a change another process made, told here as if made here."""
        if method == "notifications/tasks":
            _publish(self.server, method, params)
            wake = _WAKE.pop(params.get("taskId"), None)    # an ask here waits for an answer
            if wake is not None and not wake.done():
                wake.set_result(None)
            return
        self.relaying = threading.get_ident()
        try:
            self.server._tell(method, params)
        finally:
            self.relaying = 0

    def stop(self):
        """Serving ends: what waits is published (within REDIS_TIMEOUT), and nothing more."""
        if self.hear in self.server.hearing:
            self.server.hearing.remove(self.hear)
        self.stopped.set()
        with self.ready:
            self.ready.notify()
        if self.conn is not None:
            self.conn.close()
        for thread in self.threads:
            thread.join(REDIS_TIMEOUT)


# The store plugs in: --task-store redis://... and rediss://..., and its public name.
_TASK_STORES.update(redis=RedisTaskStore, rediss=RedisTaskStore)
__all__ += ["RedisTaskStore"]


##############################################################################
# Extension: skills (SEP-2640), agent skills served as resources (skip on a first reading)
##############################################################################
# A skill is a folder whose SKILL.md opens with YAML front matter (name, description), served as
# resources skill://<folder>/<file>; skills/list gives each with its front matter and the size
# and sha256 of every file, so that a client can check what it reads:
#
#   C->S  skills/list
#   S->C  {"skills": [{"uri": "skill://pdf/SKILL.md", "frontmatter": {"name": "pdf", ...},
#                      "resources": [{"uri": "skill://pdf/SKILL.md", "digest": "sha256:...",
#                                     "size": 812}]}]}
#   C->S  resources/read {"uri": "skill://pdf/SKILL.md"}
#
# SEP-2640 leaves the skill's format to the Agent Skills specification (agentskills.io) and says
# only how skills travel: each file a resource, skills/list and skills/get for the entries,
# resources/directory/read for a folder. A digest is no security (the same server sends the
# listing and the bytes): it shows a file that changed since it was listed.

MAX_SKILL_FILES = 512       # files in one skill, and bytes: a bigger skill is not served
MAX_SKILL_BYTES = 16 << 20  # (a warning says so)
MAX_SKILL_DEPTH = 16        # folders below a skills folder: deeper ones are not served (warned)

_SKILLS = _MODERN + "skills"    # the extension's name, in capabilities
# Agent Skills' name: 1 to 64 lowercase letters, digits and hyphens, none first, last or doubled
_SKILL_NAME = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")


class _Skills:
    """What a server serves of its skills (`server.extensions["skills"]`): the last call's set."""

    def __init__(self):
        self.entries: dict[str, _Json] = {}     # SKILL.md URI -> skills/list entry
        self.folders: dict[str, list[_Json]] = {}   # skill folder URI -> what is in it


def _skills(server):
    """The server's skills, made when it first serves some (`Server.skills`)."""
    return _state(server, "skills", _Skills)


def _add_skills(server, root):
    """`Server.skills`: each folder under `root` with a SKILL.md we can read is a skill, and the
    files of the skills are resources. A folder deeper down with its own SKILL.md is a skill
    too, whose files are also the enclosing skill's (SEP-2640 "Nested skills")."""
    if not os.path.isdir(root):
        raise ValueError(f"{root}: not a folder of skills")
    files, folders = _skill_files(os.path.realpath(root))
    entries = {}
    for uri in files:
        if uri.endswith("/SKILL.md") and uri.count("/") > 2:  # the root's own SKILL.md: no skill
            entry = _skill_entry(uri, files)
            if entry:
                entries[uri] = entry
    skills = _skills(server)
    for entry in skills.entries.values():     # the last call's skills are what is served
        for listed in entry["resources"]:
            server.resources.pop(listed["uri"], None)
    served = tuple(uri[:-len("SKILL.md")] for uri in entries)     # files outside them: not served
    for uri, (place, mime, size, listed) in files.items():
        if not uri.startswith(served):
            continue
        # SEP-2640 "Resource Metadata": SKILL.md's name and description; another file, its name
        front = {"name": uri.rpartition("/")[2]}
        if uri in entries:
            front = entries[uri]["frontmatter"]
        server.resources[uri] = Resource(_skill_reader(place, listed), uri, front["name"],
                                         front.get("description"), mime, size=size)
    skills.entries = entries
    skills.folders = {}
    for uri, inside in folders.items():
        if (uri + "/").startswith(served):
            skills.folders[uri] = inside
    server._changed("resources")   # notifications/resources/list_changed, to who hears them


def _skill_reader(place, listed):
    """The function a skill file's Resource calls: the file as it is now (`_file_bytes`)."""
    def read():
        return _text_or_bytes(_file_bytes(place, listed))
    return read


def _skill_files(root):
    """The regular files under `root` (none hidden, none a link takes out of it, MAX_SKILL_DEPTH
    folders deep at most), as URI -> ((root, the names on the real path below it), mimeType,
    size, (device, inode)), and its folders, as URI -> what is in each."""
    import mimetypes
    files, folders = {}, {}
    for here, subdirs, names in os.walk(root):
        at = os.path.relpath(here, root).replace(os.sep, "/")
        prefix = "skill://"
        if at != ".":
            prefix += at + "/"
        subdirs[:] = sorted(name for name in subdirs     # in place: os.walk descends into these
                            if _plain(name) and not os.path.islink(os.path.join(here, name)))
        if subdirs and prefix.count("/") - 2 >= MAX_SKILL_DEPTH:    # os.walk recurses: no deeper
            _logger.warning("skills: %s is %d folders deep: what is below it is not served "
                            "(MAX_SKILL_DEPTH)", here, MAX_SKILL_DEPTH)
            subdirs[:] = []
        inside = folders[prefix[:-1]] = [{"uri": prefix + d, "name": d,
                                          "mimeType": "inode/directory"}
                                         for d in subdirs]
        for name in sorted(filter(_plain, names)):
            # A link is served only if it ends at a plain file inside the root: resolved, then
            # contained (SECURITY.md R31; root + os.sep: /srv/skills-evil is not in /srv/skills)
            real = os.path.realpath(os.path.join(here, name))
            parts = os.path.relpath(real, root).split(os.sep)
            if not (real.startswith(root + os.sep) and all(map(_plain, parts))):
                continue
            found = os.stat(real)
            if not stat.S_ISREG(found.st_mode):     # a FIFO, a device: no file to serve
                continue
            mime = mimetypes.guess_type(name)[0]
            if name.endswith(".md"):     # SEP-2640's SKILL.md type; mimetypes may not know .md
                mime = "text/markdown"
            mime = mime or "application/octet-stream"
            place = (root, parts)     # `_file_bytes` opens it a name at a time
            files[prefix + name] = (place, mime, found.st_size, (found.st_dev, found.st_ino))
            inside.append({"uri": prefix + name, "name": name, "mimeType": mime})
    return files, folders


def _skill_entry(uri, files):
    """The skills/list entry of the skill whose SKILL.md is at `uri`; None (with a warning) if
    it cannot be served."""
    folder = uri[:-len("/SKILL.md")]
    mine, name = [u for u in files if u.startswith(folder + "/")], folder.rpartition("/")[2]
    # every file below the folder, a nested skill's too: the list is complete (SEP-2640 "Resources")
    front, why = _skill_front(uri, files, mine, name)
    if why:
        _logger.warning("skill %s is not served: %s", folder, why)
        return None
    resources = [{"uri": u, **_fingerprint(_file_bytes(files[u][0], files[u][3]))} for u in mine]
    return {"uri": uri, "frontmatter": front, "resources": resources}


def _skill_front(uri, files, mine, name):
    """A skill's front matter, and why it cannot be served ("" if it can)."""
    if len(mine) > MAX_SKILL_FILES or sum(files[u][2] for u in mine) > MAX_SKILL_BYTES:
        return None, "too big (MAX_SKILL_FILES, MAX_SKILL_BYTES)"
    text = _text_or_bytes(_file_bytes(files[uri][0], files[uri][3]))
    front = None
    if isinstance(text, str):   # not UTF-8: no client could load it
        front = _front_matter(text)
    if front is None:
        return None, "it is not UTF-8 text opening with key: value YAML"
    # SEP-2640 "Resource Mapping": the folder is named as the skill, so a URI names its skill
    if front.get("name") != name or not _SKILL_NAME.fullmatch(name):
        return None, f"its front matter's name is not {name!r}, or not a valid name"
    if type(front.get("description")) is not str:     # name and description: Agent Skills' two
        return None, "no description"
    return front, ""


def _plain(name):
    """A file or folder name a skill may have: not hidden (.env), nothing a URI could not carry."""
    return name[:1] != "." and name.isprintable()


def _file_bytes(place, listed):
    """A skill file as it is now (`place`: the skills root, the names below it), if it is still
    the one listed: reached through no link put on its path since (`_open_below`), with its
    device and inode (not a file or hard link put in its place), a regular file (a FIFO would
    hang the read), and within MAX_SKILL_BYTES."""
    import errno
    # no link followed at the last step; a FIFO opens without waiting for a writer
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    root, names = place
    try:
        fd = _open_below(root, names, flags)
    except OSError as e:    # a link on the way (FreeBSD says EMLINK), or a file where a folder was
        if e.errno not in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
            raise
        raise McpError(INTERNAL_ERROR, "A skill file was replaced since it was listed") from None
    with open(fd, "rb") as f:
        found = os.fstat(f.fileno())
        if not stat.S_ISREG(found.st_mode) or (found.st_dev, found.st_ino) != listed:
            raise McpError(INTERNAL_ERROR, "A skill file was replaced since it was listed")
        data = f.read(MAX_SKILL_BYTES + 1)     # one byte more shows a file that grew
    if len(data) > MAX_SKILL_BYTES:
        raise McpError(INTERNAL_ERROR, "A skill file grew past MAX_SKILL_BYTES since it was listed")
    return data


def _open_below(root, names, flags):
    """A descriptor of the file at root/names..., opened a folder at a time with O_NOFOLLOW: a
    link put anywhere on the path is never followed (O_NOFOLLOW on a whole path guards its last
    name alone), whatever inode the file it leads to may have (ext4 gives a freed one out again
    at once). Without dir_fd (Windows): the path, opened as it is."""
    if os.open not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):
        return os.open(os.path.join(root, *names), flags)
    in_folder = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    folder = os.open(root, in_folder)
    try:
        for name in names[:-1]:
            below = os.open(name, in_folder, dir_fd=folder)
            os.close(folder)
            folder = below
        return os.open(names[-1], flags, dir_fd=folder)
    finally:
        os.close(folder)


def _text_or_bytes(data):
    """A skill file's content: text if it is UTF-8, else bytes (a base64 blob: PROTOCOL.md 6.4)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _fingerprint(data):
    """A skill file's size and sha256, as skills/list gives them and the client checks them
    (SEP-2640 "Integrity and verification": sha256: and 64 lowercase hex digits)."""
    import hashlib
    return {"digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def _serves_skills(server):
    """Whether the skills methods are served: once a skill is, as the capability says."""
    skills = server.extensions.get("skills")
    return skills is not None and bool(skills.entries)


def _skills_capability(server):
    """The extension in capabilities.extensions (SEP-2640 "Capability Declaration"): it
    promises skills/list and skills/get; directoryRead, resources/directory/read too."""
    if _serves_skills(server):
        return {_SKILLS: {"directoryRead": True}}
    return {}


async def _skills_list(session, params, ctx):
    """skills/list: every skill's entry, paged as resources/list is (an entry is never split
    across pages); 2026-07-28 adds the caching hints (`_CACHEABLE`)."""
    return _page(list(_skills(session.server).entries.values()), params, "skills")


async def _skills_get(session, params, ctx):
    """skills/get: an entry by its SKILL.md's URI; -32602 for no skill served (SEP-2640)."""
    entry = _skills(session.server).entries.get(_name(params, "uri"))
    if entry is None:
        raise McpError(INVALID_PARAMS,
                       "Invalid params: no skill has that SKILL.md URI (see skills/list)")
    return {"skill": entry}


async def _read_directory(session, params, ctx):
    """resources/directory/read: a folder's direct children, files and folders (inode/directory),
    paged; -32602 for what is not a folder served (SEP-2640 "Directory Listing")."""
    inside = _skills(session.server).folders.get(_name(params, "uri"))
    if inside is None:
        raise McpError(INVALID_PARAMS, "Invalid params: not a folder of the skills served")
    return _page(inside, params, "resources")


# SKILL.md's front matter: the YAML that skills use, read as YAML 1.2 would read it. Not a YAML
# parser: what it does not know it refuses (that skill is not served), rather than read it
# otherwise than the clients will, which parse it again to check the listing.

_FRONT = re.compile(r"\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*\r?$", re.DOTALL | re.MULTILINE)
_YAML_LINE = re.compile(r"( *)([A-Za-z0-9_][\w./-]*):((?: .*)?)")     # indent, key, value
_YAML_QUOTED = re.compile(r"""('(?:[^']|'')*'|"(?:[^"\\]|\\.)*")(?:[ \t]+#.*)?[ \t]*""")
# YAML 1.2's core schema: null and the booleans; 1.1's yes, no, on and off are strings
_YAML_WORDS = {"": None, "~": None, "null": None, "Null": None, "NULL": None, "true": True,
               "True": True,
               "TRUE": True, "false": False, "False": False, "FALSE": False}
_YAML_INTEGER = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_YAML_SPECIAL = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")    # no JSON for these


def _front_matter(text):
    """A SKILL.md's front matter as JSON, as YAML 1.2 (core schema) reads it, for what skills
    use: ``key: value`` lines, and under a key one level of them (metadata). None for other YAML
    (lists, block scalars, anchors ...): rather than guess, we do not read it."""
    found = _FRONT.match(text)
    if not found or _CONTROL.search(found.group(1)):
        return None
    result: _Json = {}
    parent: str | None = None   # the key the indented lines are under
    indent = None               # and their indent
    for line in found.group(1).split("\n"):
        line = line.removesuffix("\r")     # CRLF; a bare CR is no YAML we read
        if "\r" in line:
            return None
        # YAML's white space is space and tab alone: Python's strip() would take more (NBSP ...)
        line = line.rstrip(" \t")
        if not line or line.lstrip(" ")[0] == "#":
            continue
        match = _YAML_LINE.fullmatch(line)
        if not match or type(_yaml_scalar(match[2])) is not str:
            return None     # a key YAML would read as a number, a bool or null
        depth, key, value = len(match[1]), match[2], match[3].strip(" \t")
        if depth and (parent is None or indent not in (None, depth) or not value):
            return None
        if depth:
            indent = depth
            target = result[str(parent)] = result[str(parent)] or {}
        else:
            target, indent = result, None
            parent = None if value else key
        scalar = _yaml_scalar(value)
        if key in target or scalar is _NOT_YAML:
            return None
        target[key] = scalar
    return result


_NOT_YAML = object()
# not in YAML text (tab and line ends are)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _yaml_scalar(text):
    """A plain or quoted scalar as YAML 1.2's core schema types it; _NOT_YAML for the rest."""
    quoted = _YAML_QUOTED.fullmatch(text)
    if quoted:
        text = quoted.group(1)
        if text[0] == "'":
            return text[1:-1].replace("''", "'")     # single quotes: '' is the one escape
        try:
            return json.loads(text)     # double quotes: JSON's escapes are YAML's too
        except ValueError:      # an escape YAML has and JSON not
            return _NOT_YAML
    text = re.sub(r"(?:^|[ \t])#.*", "", text).strip(" \t")   # a comment
    if text[:1] and text[0] in "[]{}&*!|>%@`'\",?":
        return _NOT_YAML    # flow collections, anchors, tags, block scalars ...
    if text[:2] in ("- ", "-") or ": " in text or text.endswith(":"):
        return _NOT_YAML    # a list, or a mapping
    if text in _YAML_WORDS:
        return _YAML_WORDS[text]
    if _YAML_INTEGER.fullmatch(text):
        if len(text) > 15:      # past 15 digits: not exact in JSON
            return _NOT_YAML
        if text[:2] in ("0o", "0x"):
            return int(text, 0)     # the prefix says the base
        return int(text)
    if _YAML_FLOAT.fullmatch(text):
        number = float(text)
        if math.isfinite(number):
            return number
        return _NOT_YAML
    if _YAML_SPECIAL.fullmatch(text):
        return _NOT_YAML
    return text


# The client's side: skills listed, and their files read and checked against the listing.

async def _list_skills(client):
    """`Client.list_skills`: every page; [] from a server that did not declare the extension."""
    extensions = typing.cast(_Json, client.server_capabilities or {}).get("extensions")
    if type(extensions) is dict and _SKILLS in extensions:
        return await client._all("skills/list")
    return []


async def _load_skill(client, skill):
    """`Client.load_skill`: SKILL.md's text, once checked: its bytes against the entry's digest,
    its front matter field by field against the entry's; else it is refused, never loaded
    (SEP-2640 "Integrity and verification")."""
    if isinstance(skill, str):
        skill = (await client.request("skills/get", {"uri": skill})).get("skill")
    if type(skill) is not dict or type(skill.get("uri")) is not str \
            or type(skill.get("frontmatter")) is not dict:
        raise McpError(INTERNAL_ERROR, "Not a skill: a skill is {uri, frontmatter, resources}")
    text = _text_or_bytes(await _read_skill_file(client, skill, skill["uri"]))
    if type(text) is not str or not _same(_front_matter(text), skill["frontmatter"]):
        raise McpError(INTERNAL_ERROR, f"Skill {skill['uri']} refused: its front matter is not "
                                       "what the server listed")
    return text


async def _read_skill_file(client, skill, uri):
    """`Client.read_skill_file`: only a file the skill's entry lists, as listed. A relative path
    resolves against the skill's folder; an unlisted file is refused as a bad digest is."""
    folder = str(skill.get("uri")).rpartition("/")[0]
    if "://" not in uri:
        uri = f"{folder}/{uri}"
    files = skill.get("resources")
    listed = None
    if type(files) is list:
        listed = next((f for f in files if type(f) is dict and f.get("uri") == uri), None)
    inside = uri.startswith(folder + "/") and not {".", ".."} & set(uri.split("/")[3:])
    # an entry naming files elsewhere is void
    if not inside or (listed is None and files != "dynamic"):
        raise McpError(INTERNAL_ERROR, f"Skill file {uri} refused: the skill does not list it")
    contents = (await client.read_resource(uri)).get("contents")
    first = {}
    if type(contents) is list and contents and type(contents[0]) is dict:
        first = contents[0]
    data = None
    try:
        if type(first.get("text")) is str:
            data = first["text"].encode()
        else:
            data = base64.b64decode(first["blob"])
    except (KeyError, TypeError, ValueError):
        pass
    if listed and data is not None:
        same = _fingerprint(data) == {"digest": listed.get("digest"), "size": listed.get("size")}
        if not same:
            data = None
    if data is None:
        raise McpError(INTERNAL_ERROR, f"Skill file {uri} refused: its size or sha256 is not what "
                                       "the server listed")
    return data


class _SkillsOption(_ServeOptions):
    """serve --skills DIR."""

    def add(self, parser):
        parser.add_argument("--skills", metavar="DIR", help="serve the agent skills in this folder "
                            "(SKILL.md files)")

    def configure(self, server, args, options):
        if args.skills:
            server.skills(args.skills)


# The extension plugs in: Server.skills, its methods and capability, skills/list's pages and
# caching, serve --skills; on the client, Client.list_skills and the rest.
_PROVIDED["Server.skills"] = _add_skills
_METHODS.update({"skills/list": _Method(_skills_list, _serves_skills),
                 "skills/get": _Method(_skills_get, _serves_skills),
                 "resources/directory/read": _Method(_read_directory, _serves_skills)})
_EXTENSION_CAPABILITIES["skills"] = _skills_capability
_LISTS_OF["skills/list"] = "skills"
_CACHEABLE.update(("skills/list", "skills/get"))
_SERVE_OPTIONS.append(_SkillsOption())
_PROVIDED["Client.list_skills"] = _list_skills
_PROVIDED["Client.load_skill"] = _load_skill
_PROVIDED["Client.read_skill_file"] = _read_skill_file


##############################################################################
# Extension: MCP Apps (SEP-1865), a tool's interactive page (skip on a first reading)
##############################################################################
# An MCP App is a page a tool shows in the host's chat. What the spec asks of a server, in our
# words ([ext-apps] = modelcontextprotocol/ext-apps, specification/2026-01-26/apps.mdx, "Stable"):
#
# * The page is a resource whose URI MUST start with ui:// and whose mimeType is
#   "text/html;profile=mcp-app" (SHOULD in the listing, MUST in resources/read's contents); its
#   text (or blob) is a whole HTML5 document. `_meta.ui` on the content item (and, as a default
#   a host can review at connection time, on the listed resource) says how to frame it:
#     csp: {connectDomains, resourceDomains, frameDomains, baseUriDomains}: lists of origins
#          (fetch/XHR/WebSocket; scripts, styles, images, fonts, media; nested iframes; <base>);
#          omitted: none, and the host MUST apply its restrictive default; it MUST NOT allow more
#     permissions: {camera, microphone, geolocation, clipboardWrite}, each {}: asked, MAY be granted
#     domain: a dedicated sandbox origin, in a form each host defines
#     prefersBorder: true / false (a border and background, or none); omitted: the host decides
# * A tool names its page in `_meta.ui.resourceUri` (the flat `_meta["ui/resourceUri"]` is
#   deprecated; the official SDK still writes both, for older hosts, and so do we). The
#   resource MUST exist on the server; the host reads it with resources/read, and MAY prefetch.
#   `_meta.ui.visibility`, default ["model", "app"]: "model", the agent may see and call it;
#   "app", the page may call it (from the same server only). The host does the filtering: it
#   MUST NOT show the agent a tool without "model", MUST refuse the page a tools/call of a tool
#   without "app". The server lists every tool, as always.
# * The extension is negotiated as SEP-1724's: the client (host) declares
#   capabilities.extensions["io.modelcontextprotocol/ui"] = {"mimeTypes": ["text/html;profile=
#   mcp-app"]} (mimeTypes REQUIRED). ⚠ The spec says nothing of the server's declaration: we
#   declare the same entry in the server's capabilities.extensions, as SEP-1724's extensions
#   are declared by both sides. A server SHOULD give every such tool a text fallback (content),
#   which Tool.result does: structuredContent for the page, its JSON as text for the model.
# * The page talks JSON-RPC over postMessage with the host, not with us: ui/initialize,
#   ui/notifications/initialized, then the host's ui/notifications/tool-input and
#   ui/notifications/tool-result (the tool's CallToolResult); the page's tools/call and
#   resources/read reach the server through the host as ordinary requests.
#
# Here: ``server.app(uri, html)`` (or ``@server.app(uri)`` on a function returning the HTML)
# declares the page, and ``@server.tool(ui=uri, visibility=["app"])`` links a tool to it. A
# tool may come before its page in a module: a link to no page is refused when the server
# starts serving (`Server.resolve`, which also reads the hints that waited for names defined
# later), and at once once it serves; a ValueError names the URI.

_APPS = "io.modelcontextprotocol/ui"        # the extension's name, in capabilities
_APP_MIME = "text/html;profile=mcp-app"
_APP_CSP = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
_APP_PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
_APP_VISIBILITY = ("model", "app")


class _Apps:
    """A server's use of MCP Apps (`server.extensions["apps"]`: there, the capability is
    declared), and whether a check of its tools' links to pages waits for `Server.resolve`: it
    stands in `server.waiting` till then, as a handler whose hints wait does."""

    def __init__(self, server):
        self.server = server
        self.resolved = True    # False while it waits in `server.waiting`

    def _resolve(self):
        """Every tool's page is declared, or a ValueError naming the first URI that is not."""
        missing = self.unlinked(self.server.tools.values())
        self.resolved = not missing
        if missing:
            raise _no_page(missing[0])

    def unlinked(self, tools):
        """Those of `tools` not checked yet whose ui= names no app page of this server (the
        spec: it MUST exist, its mimeType the spec's); the others are marked checked (a page
        removed later is not their fault)."""
        missing = []
        for tool in tools:
            uri = tool.options.get("ui")
            if uri and "apps" not in tool.extensions:
                page = self.server.resources.get(uri)
                if page is not None and page.mime_type == _APP_MIME:
                    tool.extensions["apps"] = "linked"
                else:
                    missing.append(tool)
        return missing


def _no_page(tool):
    uri = tool.options["ui"]
    return ValueError(f"tool {tool.name!r}: ui={uri!r} names no app page; declare it with "
                      f"server.app({uri!r}, html)")


def _apps(server):
    return _state(server, "apps", lambda: _Apps(server))


def _add_app(server, uri, html=None, name=None, description=None, title=None, csp=None,
             permissions=None, domain=None, prefers_border=None):
    """`Server.app`: the page at `uri`; without `html`, a decorator whose function returns it."""
    if type(uri) is not str or not uri.startswith("ui://") or "{" in uri:
        raise ValueError(f"an app's page is at a ui:// URI with no {{variables}}, not {uri!r}")
    if html is not None and not isinstance(html, str):
        raise TypeError(f"app {uri!r}: the page is a str of HTML (or none, to decorate a "
                        "function that returns it)")
    if html is not None and "<" not in html:    # "page.html": the page itself is wanted
        raise ValueError(f"app {uri!r}: the page is its HTML (open(path).read()), not "
                         f"{html[:60]!r}")
    if domain is not None and type(domain) is not str:
        raise TypeError(f"app {uri!r}: domain is a str, not {type(domain).__name__}")
    if prefers_border is not None and type(prefers_border) is not bool:
        raise TypeError(f"app {uri!r}: prefers_border is True or False, not {prefers_border!r}")
    ui = _defined(csp=_app_domains(uri, csp), permissions=_app_permissions(uri, permissions),
                  domain=domain)
    if prefers_border is not None:
        ui["prefersBorder"] = prefers_border

    def add(make, _):
        label = name or (uri[len("ui://"):] if html is not None else make.__name__)
        about = description or _first_paragraph(make.__doc__)
        _apps(server)
        server._add("resources", Resource(_app_page(uri, make, ui), uri, label, about, _APP_MIME,
                                          title, meta={"ui": ui} if ui else None), uri)
    if html is None:
        return _decorator(None, add)
    add(lambda: html, None)
    return None


def _app_domains(uri, csp):
    """`csp=` as the spec's dict, its lists of origins checked: a typo would be no policy, and a
    host that joins them into its CSP header would take "x; script-src *" as a directive."""
    if csp is None:
        return None
    if type(csp) is not dict or not set(csp) <= set(_APP_CSP) or not all(
            isinstance(v, (list, tuple)) for v in csp.values()):
        raise ValueError(f"app {uri!r}: csp is a dict of lists of origins, its keys among "
                         f"{', '.join(_APP_CSP)}")
    for origins in csp.values():
        for origin in origins:
            if type(origin) is not str or not _ORIGIN.fullmatch(origin):
                raise ValueError(f"app {uri!r}: csp: {origin!r} is not an origin, as "
                                 "https://api.example.com or https://*.example.com")
    return {key: list(value) for key, value in csp.items()}


# An origin as a CSP source names one: a scheme, a host (its first label may be *), a port
_ORIGIN = re.compile(r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?"
                     r"(?::[0-9]{1,5})?", re.ASCII)


def _app_permissions(uri, permissions):
    """`permissions=`: the names asked for (camera ...), as the spec's {name: {}}."""
    if permissions is None:
        return None
    names = [permissions] if isinstance(permissions, str) else list(permissions)
    unknown = [p for p in names if p not in _APP_PERMISSIONS]
    if unknown:
        raise ValueError(f"app {uri!r}: permission {unknown[0]!r}: one of "
                         f"{', '.join(_APP_PERMISSIONS)}")
    return {p: {} for p in names}


def _app_page(uri, make, ui):
    """The function the page's Resource calls: resources/read's one content item, its mimeType
    the spec's and its _meta.ui the page's (the host builds the iframe's CSP from this one)."""
    import inspect

    def contents(html):
        if not isinstance(html, str):
            raise TypeError(f"app {uri!r}: the page's function returned "
                            f"{type(html).__name__}, not a str of HTML")
        item = {"uri": uri, "mimeType": _APP_MIME, "text": html}
        if ui:
            item["_meta"] = {"ui": ui}
        return item

    if inspect.iscoroutinefunction(make):
        async def read_async():
            return contents(await make())
        return read_async

    def read():
        return contents(make())
    return read


def _ui_option(tool, uri):
    """A tool's `ui=`: the ui:// URI of the page that shows its results (checked: `_Apps`)."""
    if type(uri) is not str or not uri.startswith("ui://") or "{" in uri:
        raise ValueError(f"tool {tool.name!r}: ui must be a page's ui:// URI (no {{variables}}), "
                         f"not {uri!r}")
    _tool_ui(tool, "resourceUri", uri)
    return uri


def _visibility_option(tool, seen):
    """A tool's `visibility=`: who may see and call it, "model" and/or "app"."""
    names = [seen] if isinstance(seen, str) else seen
    if not isinstance(names, (list, tuple, set, frozenset)) or not names \
            or not all(name in _APP_VISIBILITY for name in names):
        raise ValueError(f"tool {tool.name!r}: visibility is a list of 'model' and/or 'app', "
                         f"not {seen!r}")
    seen = [name for name in _APP_VISIBILITY if name in names]  # each once
    _tool_ui(tool, "visibility", seen)
    return seen


def _tool_ui(tool, key, value):
    """`value` at the tool's _meta.ui[key], beside the author's own meta (a copy: theirs stays)."""
    title, annotations, icons, meta = tool.shown
    meta = dict(meta or {})
    if not isinstance(meta.get("ui") or {}, dict):
        raise TypeError(f"tool {tool.name!r}: meta['ui'] is the spec's object (resourceUri, "
                         f"visibility), not {meta['ui']!r}")
    meta["ui"] = {**(meta.get("ui") or {}), key: value}
    if key == "resourceUri":    # the deprecated flat key, for hosts older than the spec
        meta["ui/resourceUri"] = value
    tool.shown = title, annotations, icons, meta


def _use_apps(server, tool):
    """A tool with ui= or visibility= is added: its link is checked when serving starts (a tool
    may come before its page in a module), or now if it has started (it is then not added, and
    one it would have replaced stays)."""
    apps = _apps(server)
    if server.serving:
        if apps.unlinked([tool]):
            raise _no_page(tool)
    elif apps.resolved:
        apps.resolved = False
        server.waiting.append(apps)


def _apps_capability(server):
    """The extension in capabilities.extensions, in the form a host declares it (see above),
    while the server has an app page (visibility= alone shows none)."""
    if not any(page.mime_type == _APP_MIME for page in server.resources.values()):
        return {}
    return {_APPS: {"mimeTypes": [_APP_MIME]}}


# The extension plugs in: Server.app, the tool options ui= and visibility=, the capability.
_PROVIDED["Server.app"] = _add_app
_TOOL_OPTIONS.update({"ui": _ui_option, "visibility": _visibility_option})
_ON_TOOL_OPTION.update({"ui": _use_apps, "visibility": _use_apps})
_EXTENSION_CAPABILITIES["apps"] = _apps_capability


##############################################################################
# Extension: authorization, the resource server (OAuth 2.1; PROTOCOL.md 8; skip on a first reading)
##############################################################################
# Over HTTP a server may want a bearer token (2025-11-25 basic/authorization): it is an OAuth 2.1
# resource server, and tokens come from an authorization server elsewhere. A request without a
# good one gets 401, whose challenge says where the server's metadata is (RFC 9728):
#
#   C->S  POST /mcp  (no Authorization)
#   S->C  401  WWW-Authenticate: Bearer
#              resource_metadata="http://host/.well-known/oauth-protected-resource/mcp"
#   C->S  GET /.well-known/oauth-protected-resource/mcp
#   S->C  200  {"resource": "http://host/mcp", "authorization_servers": ["https://as.example"], ...}
#         (the client signs in there: the client's side, the next section)
#   C->S  POST /mcp  Authorization: Bearer eyJ...
#
# A token is checked before any body is read, by asking the authorization server (RFC 7662
# introspection) or by a function of the application's; it must be for this server (its `aud`,
# RFC 8707). A fixed --token is the simplest guard of all: one secret, no metadata.
# A token for another server is refused, so that none is ever passed through (PROTOCOL.md 8).

# seconds an introspection answer is reused: a revoked token works that long
INTROSPECTION_TTL = 60.0
# answers kept at most, and refusals: past it the expired go, else the oldest
INTROSPECTION_CACHE = 1000
_WELL_KNOWN = "/.well-known/oauth-protected-resource"     # RFC 9728 3: where the metadata is
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")      # RFC 6749 3.3: a scope's characters


class AuthInfo(typing.NamedTuple):
    """What a verified access token says, as a handler sees it: ``ctx.auth`` (None without auth)."""
    subject: str
    scopes: frozenset
    client_id: str | None
    claims: dict


def _refused(text):
    """Why a sign-in, or an introspection, cannot go on: an McpError (CONNECTION_CLOSED, never
    sent on the wire) that ends the client's request; a resource server answers it with 503."""
    return McpError(CONNECTION_CLOSED, f"authorization: {text}")


def _secure(url, what, error=_refused):
    """`url` if https, or plain http to this machine only (OAuth 2.1 1.5): codes and tokens cross
    it."""
    # an authorization endpoint is printed for a person to open: an escape sequence in it would
    # be obeyed by their terminal (and no URL has a control character)
    if isinstance(url, str) and not url.isprintable():
        raise error(f"refusing the {what} {url[:200]!r}: it has a control character")
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    secure = False
    if parts and parts.hostname:
        local = parts.scheme == "http" and _is_loopback(parts.hostname)
        secure = parts.scheme == "https" or local
    if not secure:
        raise error(f"refusing the {what} {str(url)[:200]!r}: https only (plain http on loopback)")
    return url


async def _fetch_json(url, form=None, headers=(), as_json=False):
    """GET, or POST a form (or JSON), to an OAuth endpoint, within REPLY_TIMEOUT: (status, JSON
    object or {}). A client signing in traces it (`_SIGN_IN_TRACE`), tokens, codes and secrets
    masked: a learner sees the discovery between the 401 and the request sent again."""
    headers = {"Accept": "application/json", **dict(headers)}
    method, body = "GET", b""
    if form is not None:
        method = "POST"
        if as_json:     # RFC 7591 registration is JSON; the rest are forms (RFC 6749)
            headers["Content-Type"] = "application/json"
            body = encode(form)
        else:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            body = urllib.parse.urlencode(form).encode()
    trace = _SIGN_IN_TRACE.get()
    if trace:
        trace = trace.on()
        trace.http("out", f"{method} {url}", headers, encode(_masked(form)) if form else b"")
    try:    # secrets never follow a redirect
        response = await asyncio.wait_for(_http(url, method, headers, body, hops=0), REPLY_TIMEOUT)
        data = await asyncio.wait_for(response.body(READ_CHUNK * 4), REPLY_TIMEOUT)  # cap 256 KiB
        response.close()
    # 3.10's is not yet the builtin TimeoutError
    except (OSError, asyncio.TimeoutError) as e:  # noqa: UP041
        raise _refused(f"cannot reach {url}: {e!r}") from None
    parsed = None
    with contextlib.suppress(ValueError, RecursionError):
        parsed = json.loads(data)
    if type(parsed) is not dict:
        parsed = None
    if trace:
        shown = encode(_masked(parsed)) if parsed is not None else data
        trace.http("in", str(response.status), response.headers, shown)
    return response.status, parsed or {}


# What an OAuth exchange's trace never shows (RFC 6749, 7591, 7662: tokens, codes, secrets)
_SECRET_FIELDS = frozenset(("access_token", "refresh_token", "id_token", "code", "code_verifier",
                            "client_secret", "token", "registration_access_token", "assertion"))
_SIGN_IN_TRACE: "contextvars.ContextVar[_Trace | None]" = contextvars.ContextVar("mcp_min_sign_in",
                                                                                 default=None)


def _masked(fields):
    """A copy of an OAuth form or answer, its secrets `***`: the trace shows they went, not what."""
    masked = {}
    for key, value in fields.items():
        if key in _SECRET_FIELDS and value:
            value = "***"
        masked[key] = value
    return masked


def _basic(client_id, secret):
    """RFC 6749 2.3.1: HTTP Basic, each half form-encoded first."""
    pair = f"{urllib.parse.quote_plus(client_id)}:{urllib.parse.quote_plus(secret or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


async def _server_metadata(issuer):
    """RFC 8414 §3.1, then OpenID Connect discovery, in the spec's order (2025-11-25
    "Authorization Server Metadata Discovery"); the issuer must be the one asked for."""
    parts = urllib.parse.urlsplit(_secure(issuer, "authorization server"))
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    # RFC 8414 3.1: the well-known part goes after the host; OpenID's is inserted, then appended
    places = [f"{origin}/.well-known/oauth-authorization-server{path}",
              f"{origin}/.well-known/openid-configuration{path}"]
    if path:
        places.append(f"{origin}{path}/.well-known/openid-configuration")
    metadata, where = None, ""
    for where in places:
        status, found = await _fetch_json(where)
        if status == 200 and found:
            metadata = found
            break
    if metadata is None:
        raise _refused(f"no authorization server metadata for {issuer}")
    if metadata.get("issuer") != issuer:    # RFC 8414 §3.3: else its endpoints could be anyone's
        raise _refused(f"the metadata at {where} names issuer "
                       f"{str(metadata.get('issuer'))[:200]!r}, not {issuer}")
    # codes, tokens and secrets cross these: https only; token_endpoint is required
    for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        if key in metadata or key == "token_endpoint":
            _secure(metadata.get(key), key.replace("_", " "))
    return metadata


class Introspection:
    """A verifier asking the authorization server `issuer` whether a token is active (RFC 7662)
    at the introspection_endpoint of its metadata; as `client_id` (HTTP Basic) if it wants. The
    answers are kept a while (INTROSPECTION_TTL), refusals apart from the rest so that a flood of
    bad tokens cannot push a user's good one out; requests that ask of one token share one look-up.
    """

    def __init__(self, issuer, client_id=None, client_secret=None):
        self.issuer = _secure(issuer, "authorization server", ValueError)
        self.endpoint, self.good, self.bad, self.asking = None, {}, {}, {}
        self.basic = {}
        if client_id:
            self.basic = {"Authorization": _basic(client_id, client_secret)}

    async def __call__(self, token):
        """The claims of an active token, or None: kept, or asked once for all who wait."""
        import hashlib
        key, now = hashlib.sha256(token.encode()).digest(), _now()    # the caches hold no token
        hit = self.good.get(key) or self.bad.get(key)
        if hit and hit[0] > now:
            return hit[1]
        if key not in self.asking:
            self.asking[key] = asyncio.ensure_future(self._ask(token, key))

            def asked(_):
                self.asking.pop(key, None)
            self.asking[key].add_done_callback(asked)
        return await asyncio.shield(self.asking[key])  # a caller cancelled: the others still wait

    async def _ask(self, token, key):
        """One look-up at the introspection endpoint (RFC 7662 2.1), its answer kept."""
        if not self.endpoint:   # found in the metadata at the first look-up
            endpoint = (await _server_metadata(self.issuer)).get("introspection_endpoint")
            self.endpoint = _secure(endpoint, "introspection endpoint")
        status, claims = await _fetch_json(self.endpoint,
                                           {"token": token, "token_type_hint": "access_token"},
                                           self.basic)
        if status == 401 or (status == 400 and claims.get("error") == "invalid_client"):
            # RFC 7662 2.1: the server may want its caller authenticated
            raise _refused("the authorization server refused our client authentication at its "
                           f"introspection endpoint (HTTP {status} "
                           f"{str(claims.get('error', ''))[:40]}): give a client id and secret "
                           "with --auth-client-file or $MCP_AUTH_CLIENT")
        if status != 200:
            raise _refused(f"the introspection endpoint answered {status}")
        active = claims.get("active") is True     # RFC 7662 2.2
        cache, now = self.bad, _now()
        if active:
            cache = self.good
        if len(cache) >= INTROSPECTION_CACHE:
            expired = [old for old, (until, _) in cache.items() if until <= now]
            for old in expired or [next(iter(cache))]:    # the expired, else the oldest
                del cache[old]
        if not active:
            cache[key] = (now + INTROSPECTION_TTL, None)   # a bad token asked again costs nothing
            return None
        # never kept past the token's own end
        cache[key] = (now + _ttl(claims.get("exp")), claims)
        return claims


def _fixed_token(token):
    """Today's --token: one secret, compared in constant time (SECURITY.md R6)."""
    import hmac
    expected = token.strip(" \t").encode()    # a token file's newline is no part of it

    async def verify(given):
        if hmac.compare_digest(given.encode(), expected):
            return {"sub": "token"}   # one user: whoever holds it
        return None
    verify.fixed = True     # type: ignore[attr-defined]  # no metadata, a bare "Bearer" challenge,
    return verify           # no audience: as before OAuth


class ResourceServer:
    """Guards an HttpServer as an OAuth 2.1 resource server. `verify`: a function, sync (run in
    a thread) or async, from an access token to its claims as RFC 7662 names them (sub, scope,
    client_id, aud, exp) or None; default: `Introspection` at the first `authorization_servers`.
    `scopes`: what every request needs; `resource`: this server's canonical URI, which a token's
    `aud` must name (RFC 8707; default http://HOST:PORT/mcp, set when the HttpServer starts).
    The HttpServer asks it, in this order: `publishes` and `publish` (its metadata, public),
    `check` (a request's token), `who` (whose the session is), `step_up` (a tool's scopes),
    and for a long answer `due`, `left` and `still_good` (its token, checked again)."""

    def __init__(self, verify=None, authorization_servers=(), scopes=(), resource=None,
                 client_id=None, client_secret=None):
        import inspect
        self.authorization_servers = [_secure(s, "authorization server", ValueError)
                                      for s in authorization_servers]
        if not (verify or self.authorization_servers):
            raise ValueError("a ResourceServer needs an authorization server, or a verify function")
        self.verify = verify or Introspection(self.authorization_servers[0], client_id,
                                              client_secret)
        # an async function, or an object with an async __call__
        self.is_async = inspect.iscoroutinefunction(self.verify) or \
            inspect.iscoroutinefunction(type(self.verify).__call__)
        self.fixed, self.scopes = getattr(verify, "fixed", False), frozenset(scopes)
        self.resource: str = resource or ""     # "": the HttpServer names it when it starts

    def publishes(self, path):
        """Whether `path` is metadata, which is served with no token (RFC 9728 3)."""
        return path.startswith(_WELL_KNOWN)

    def publish(self, conn, server):
        """RFC 9728 2 metadata: who issues tokens for us, and the scopes our tools ask; at the root
        well-known URI and the one suffixed with /mcp (3.1; MCP clients try both)."""
        # a fixed token has no authorization server to name
        if self.fixed or conn.request.path not in (_WELL_KNOWN, _WELL_KNOWN + "/mcp"):
            raise _HttpError(404, "Not found")
        if conn.request.method != "GET":
            raise _HttpError(405, headers=[("Allow", "GET")])
        asked = set(self.scopes).union(*(_scopes_of(tool) for tool in server.tools.values()))
        # RFC 9728 2: `resource` (required) and who issues; tokens come in the header alone
        conn.write(200, conn.cors + [("Content-Type", "application/json")], encode({
            "resource": self.resource, "authorization_servers": self.authorization_servers,
            "scopes_supported": sorted(asked), "bearer_methods_supported": ["header"]}))
        return True

    def _refuse(self, status, error=None, scopes=None):
        """RFC 6750 3 and RFC 9728 5.1: where the metadata is, which scopes would do, what failed.
        """
        if self.fixed:      # a bare challenge: no metadata to point at
            return _HttpError(status, "Unauthorized", headers=[("WWW-Authenticate", "Bearer")])
        where = urllib.parse.urlsplit(self.resource)
        fields = []
        if error:
            fields.append(f'error="{error}"')
        metadata = f'{where.scheme}://{where.netloc}{_WELL_KNOWN}{where.path.rstrip("/")}'
        fields.append(f'resource_metadata="{metadata}"')
        if scopes is None:
            scopes = self.scopes
        # only RFC 6749 3.3 scope characters reach the header (an introspected scope may hold any)
        shown = sorted(scope for scope in scopes if _SCOPE.fullmatch(scope))
        if shown:
            fields.append(f'scope="{" ".join(shown)}"')
        message = "Insufficient scope" if status == 403 else "Unauthorized"
        return _HttpError(status, message,
                          headers=[("WWW-Authenticate", "Bearer " + ", ".join(fields))])

    async def check(self, request, conn=None):
        """The AuthInfo of the request's bearer token, or _HttpError 401/403 (503: no verdict).
        Over a connection, when to check it again is kept with it (`due`)."""
        scheme, _, token = request.header("authorization").partition(" ")
        # only HTTP's own whitespace: a Unicode strip() takes NBSP too
        token = token.strip(" \t")
        if scheme.lower() != "bearer" or not token:     # a scheme ignores case (RFC 9110 11.1)
            raise self._refuse(401)     # RFC 6750 3.1: no error code when no token came
        try:
            if self.is_async:
                claims = await self.verify(token)
            else:
                claims = await asyncio.to_thread(self.verify, token)
        # the AS is down or confused: not the client's fault, no 401
        except Exception as e:  # noqa: BLE001
            # a verifier's own message might quote the token: only ours are logged whole
            said = e if isinstance(e, (OSError, McpError)) else type(e).__name__
            _logger.warning("cannot verify an access token: %s", said)
            raise _HttpError(503, "Cannot verify the access token now") from None
        auth = self._auth_info(claims)
        if auth is None:     # inactive, expired, or not for us
            raise self._refuse(401, "invalid_token")
        if not self.scopes <= auth.scopes:  # RFC 6750 3.1: insufficient_scope is a 403
            raise self._refuse(403, "insufficient_scope", self.scopes | auth.scopes)
        if conn is not None:    # a long stream checks the token again then (`due`)
            conn.extensions["recheck"] = _now() + _ttl(auth.claims.get("exp"))
        return auth

    def _auth_info(self, claims):
        """The claims as AuthInfo, or None for a token this server must not take: inactive, not
        for this resource, out of its time, from an issuer not ours, or naming nobody."""
        if type(claims) is not dict or claims.get("active") is False:
            return None
        aud, iss, scope, client = (claims.get(key) for key in ("aud", "iss", "scope", "client_id"))
        if type(aud) is not list:   # RFC 7519 4.1.3: one string, or a list of them
            aud = [aud]
        named = [audience.rstrip("/") for audience in _strings(aud)]
        if not self.fixed and self.resource.rstrip("/") not in named:
            # MCP: never a token issued for another resource (RFC 8707, no passthrough)
            return None
        if not _timely(claims):
            return None
        if iss is not None and self.authorization_servers and iss not in self.authorization_servers:
            return None     # issued by a server we do not take tokens from
        if type(scope) is str:
            scopes = frozenset(scope.split())
        else:
            scopes = frozenset(_strings(scope))
        if type(client) is not str:
            client = None
        subject = claims.get("sub")
        if not (subject or client):
            return None     # nobody to bind a session to: no user shares another's session
        return AuthInfo(str(subject or client), scopes, client, claims)

    def who(self, conn):
        """Who sends this request (`principal`: its verified user and client, whose sessions are
        theirs alone: MCP security best practices, "Session Hijacking"), and whose share of the
        limits it uses (`owner`: the OAuth subject; with a fixed token, the client's address)."""
        # JSON: no subject can pose as another by holding a separator
        principal = encode([conn.auth.subject, conn.auth.client_id]).decode()
        if self.fixed:      # one token for all: each address its own share
            return principal, conn.request.client or conn.peer
        return principal, conn.auth.subject

    def step_up(self, auth, body, server):
        """403 insufficient_scope for a tools/call whose tool needs scopes the token lacks: the
        client asks the user for more and calls again (step-up). Granted scopes stay asked."""
        messages = body if type(body) is list else [body]   # a batch (2025-03-26): every call
        for message in messages:
            if type(message) is not dict or message.get("method") != "tools/call":
                continue
            params = message.get("params")
            name = params.get("name") if type(params) is dict else None
            tool = server.tools.get(name) if type(name) is str else None
            if tool is not None and not _scopes_of(tool) <= auth.scopes:
                raise self._refuse(403, "insufficient_scope",
                                   self.scopes | auth.scopes | _scopes_of(tool))

    # A long answer (an SSE stream) outlives the token's verdict: it is checked again at its
    # exp, INTROSPECTION_TTL at the latest; once no good, the stream ends, and the client
    # comes back (its 401 starts a refresh).

    def due(self, conn):
        return conn.extensions.get("recheck", math.inf) <= _now()

    def left(self, conn):
        return conn.extensions.get("recheck", math.inf) - _now()

    async def still_good(self, conn):
        """Whether the connection's token still holds, checked again once due (else the
        stream ends, and the client's next request meets the 401)."""
        if not self.due(conn):
            return True
        try:
            conn.auth = await self.check(conn.request, conn)
        except _HttpError:
            return False
        return True


def _strings(value):
    """The strings in `value` if it is a list (a list of anything else names nothing)."""
    if type(value) is not list:
        return []
    return [item for item in value if type(item) is str]


def _timely(claims):
    """RFC 7662 2.2: now is before exp and not before nbf (numbers, if given: a malformed one
    is no good either)."""
    times = {key: claims[key] for key in ("exp", "nbf") if claims.get(key) is not None}
    if not all(type(t) in (int, float) for t in times.values()):
        return False
    return times.get("nbf", 0) <= time.time() < times.get("exp", math.inf)


def _ttl(exp):
    """How long a token's verdict holds: until its exp, INTROSPECTION_TTL at most."""
    if type(exp) not in (int, float):
        return INTROSPECTION_TTL
    return min(INTROSPECTION_TTL, exp - time.time())


def _scopes_option(tool, scopes):
    """A tool's `scopes=`: the OAuth scopes a caller's token needs (over HTTP with a
    ResourceServer: without them, 403, and the client may ask for more)."""
    if isinstance(scopes, str):
        scopes = scopes.split()
    return frozenset(scopes)


def _scopes_of(tool):
    return tool.options.get("scopes", frozenset())


def _token_guard(token):
    """HttpServer(token=...): a ResourceServer that takes that one token."""
    return ResourceServer(_fixed_token(token))


class _AuthOptions(_ServeOptions):
    """serve's guards: --auth-server (OAuth) or a fixed token (--token-file, $MCP_TOKEN, --token).
    """

    def add(self, parser):
        secret = parser.add_mutually_exclusive_group()
        secret.add_argument("--auth-server", metavar="URL", help="accept OAuth access tokens this "
                            "authorization server issued for this server (checked by "
                            "introspection, RFC 7662)")
        secret.add_argument("--token-file", metavar="FILE",
                            help="require 'Authorization: Bearer TOKEN' "
                            "on HTTP, the token read from FILE (default: $MCP_TOKEN)")
        secret.add_argument("--token", help="the token itself (every local user can read it in the "
                            "process list: prefer --token-file or $MCP_TOKEN)")
        parser.add_argument("--scope", action="append", default=[],
                            help="with --auth-server: a scope "
                            "every request needs (repeatable)")
        parser.add_argument("--resource", metavar="URL",
                            help="with --auth-server: this server's URL as "
                            "clients see it, which tokens must name (default http://HOST:PORT/mcp)")
        parser.add_argument("--auth-client-file", metavar="FILE", help="with --auth-server: "
                            "'client_id:secret' to introspect with, if the server wants it "
                            "(default: $MCP_AUTH_CLIENT)")

    def configure(self, server, args, options):
        """serve's HttpServer options: auth= for --auth-server (introspection credentials,
        'id:secret', from --auth-client-file or $MCP_AUTH_CLIENT: never the command line), else
        token= (from --token-file, $MCP_TOKEN, or --token with a warning; never empty, which would
        turn it off)."""
        if args.port is None:   # stdio: credentials come from the environment (PROTOCOL.md 8)
            return
        path = args.token_file
        if args.auth_server:
            path = args.auth_client_file
        if path:
            with open(path, encoding="utf-8") as f:
                secret = f.read().strip()
        elif args.token is not None:
            secret = args.token
        elif args.auth_server:
            secret = os.environ.get("MCP_AUTH_CLIENT")
        else:
            secret = os.environ.get("MCP_TOKEN")
        if args.auth_server:
            client_id, _, client_secret = (secret or "").partition(":")
            options["auth"] = ResourceServer(None, [args.auth_server], args.scope, args.resource,
                                             client_id or None, client_secret or None)
            return
        if secret is not None and not secret.strip(" \t"):
            raise ValueError("the token is empty, which would turn authentication off")
        if args.token is not None:
            _logger.warning("--token is visible to every local user (ps, /proc/PID/cmdline); pass "
                            "it in $MCP_TOKEN or --token-file")
        options["token"] = secret


# The extension plugs in (the client's side, below, too): the tool option `scopes`, the token
# guard of HttpServer(token=...), and serve's options.
_TOOL_OPTIONS["scopes"] = _scopes_option
_PROVIDED["HttpServer token"] = _token_guard
_SERVE_OPTIONS.append(_AuthOptions())
__all__ += ["Introspection", "ResourceServer"]


##############################################################################
# Extension: authorization, the client's side (OAuth 2.1; skip on a first reading)
##############################################################################
# The spec's sequence, on a 401 from an MCP server: read the challenge (WWW-Authenticate);
# fetch the protected resource's metadata (RFC 9728), which names the authorization server;
# fetch that server's metadata (RFC 8414 or OpenID discovery); get a client id there
# (pre-registered, a Client ID Metadata Document, or RFC 7591 registration); have the user
# approve in a browser (authorization code + PKCE, a loopback redirect); trade the code for
# tokens; resend. A 403 insufficient_scope asks again with more scope (step-up). Every URL
# that carries a code, a token or a secret is https (or http to this machine: `_secure`), and
# each client id and secret goes only to the authorization server it is from.

# WWW-Authenticate's auth-params (RFC 9110 11.2): name=token or name="quoted string"
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

    tries = 2       # sign-ins for one request (a 401, then a 403 step-up); more could loop forever

    def __init__(self, *, client_id=None, client_secret=None, issuer=None, client_metadata_url=None,
                 grant="authorization_code", headless=False, browser=None, store="default",
                 client_name="mcp_min"):
        if grant not in ("authorization_code", "client_credentials"):
            raise ValueError("grant is 'authorization_code' or 'client_credentials'")
        if grant == "client_credentials" and not (client_id and client_secret):
            raise ValueError("client_credentials needs client_id and client_secret")
        if client_secret and not issuer:    # else it goes to whichever server an MCP server names
            raise ValueError("a client_secret needs issuer=: the authorization server it may be "
                             "sent to")
        if client_metadata_url and not re.match(r"https://[^/?#]+/[^?#]", client_metadata_url):
            raise ValueError("client_metadata_url must be an https URL with a path (a CIMD client "
                             "id)")
        self.client_id, self.client_secret = client_id, client_secret
        self.issuer, self.grant = issuer, grant
        self.client_metadata_url = client_metadata_url
        self.headless, self.browser, self.client_name = headless, browser, client_name
        # the user's configuration folder: XDG's, Windows', else ~/.config
        config = os.environ.get("XDG_CONFIG_HOME") or os.environ.get("APPDATA") or \
            os.path.expanduser("~/.config")
        self.store = store
        if store == "default":
            self.store = os.path.join(config, "mcp_min", "tokens.json")
        self._entries, self._lock = None, asyncio.Lock()     # read when first needed

    def token(self, url: str) -> str | None:
        """The access token for the server at `url` (and for no other URL), or None."""
        return self._all().get(url, {}).get("access_token")

    def _all(self):
        """What `store` keeps: a server's URL -> its sign-in (read once)."""
        if self._entries is None:
            self._entries = {}
            with contextlib.suppress(OSError, ValueError, TypeError), \
                    open(self.store or "", "rb") as f:    # none, or unreadable: none yet
                self._entries = dict(json.load(f))
        return self._entries

    def _save(self):
        """The sign-ins written back: a new file put in place at once (a crash leaves the old)."""
        if self.store:
            os.makedirs(os.path.dirname(self.store), 0o700, exist_ok=True)
            new = self.store + ".new"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(new)
            # 0600 from its creation on: never readable by others, not even for a moment
            with os.fdopen(os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                json.dump(self._entries, f)
            os.replace(new, self.store)

    async def challenged(self, url, status, challenge, sent, trace=None):
        """Sign in for `url` after a 401 (or a 403 insufficient_scope) with this challenge; what
        `sent` was the Authorization of the request refused. True if it may go again. `trace`:
        the client's, which shows the sign-in's exchanges, their secrets masked."""
        signing_in = _SIGN_IN_TRACE.set(trace)
        try:
            async with self._lock:     # requests that hear it together share one sign-in
                return await self._sign_in(url, status, challenge, sent)
        finally:
            _SIGN_IN_TRACE.reset(signing_in)

    async def _sign_in(self, url, status, challenge, sent):
        """The spec's sequence (this section's opening): True once a new token is kept. A 401
        tries the refresh token first; a 403 asks for more scope, unless it was asked already."""
        token = self.token(url)
        if token and f"Bearer {token}" != sent:
            return True         # another request signed in while this one waited
        entry = self._all().get(url, {})
        params = {}
        for key, quoted, bare in _CHALLENGE_PARAM.findall(challenge):
            params[key.lower()] = quoted or bare    # names ignore case (RFC 9110 11.2)
        asked = set(params.get("scope", "").split())
        if status == 403 and asked <= set(entry.get("scope", "").split()):
            return False        # asked for and given already: signing in again would loop
        resource, metadata, server = await self._protected_resource(url,
                                                                    params.get("resource_metadata"))
        if (entry.get("issuer"), entry.get("resource")) != (server["issuer"], resource):
            # first sign-in, or the server moved: a client id and tokens of one
            # authorization server are never shown to another (SEP-2352)
            entry = {"issuer": server["issuer"], "resource": resource}
        entry["token_endpoint"] = server["token_endpoint"]
        if status == 401 and entry.get("refresh_token"):   # RFC 6749 6: no person needed
            with contextlib.suppress(McpError):     # refused or expired: sign in afresh
                return await self._tokens(url, entry, {"grant_type": "refresh_token",
                                                       "refresh_token": entry["refresh_token"]})
        scope = self._scope(status, entry, params, metadata, server)
        if self.grant == "client_credentials":     # RFC 6749 4.4: a program, no person
            self._credentials(entry, server, self.client_id, self.client_secret)
            form = {"grant_type": "client_credentials", "scope": scope}
        else:
            form = await self._authorization_code(server, entry, resource, scope)
        entry["scope"] = scope
        return await self._tokens(url, entry, form)

    def _scope(self, status, entry, params, metadata, server):
        """What to ask for (spec "Scope Selection Strategy"): the challenge's, else all the resource
        lists, else none; a step-up keeps what was asked before (SEP-2350); offline_access for a
        refresh token if the server offers it (SEP-2207)."""
        words = []
        if status == 403:
            words += entry.get("scope", "").split()
        words += (params.get("scope") or " ".join(metadata.get("scopes_supported") or ())).split()
        offered = server.get("scopes_supported") or ()
        if self.grant == "authorization_code" and "offline_access" in offered:
            words.append("offline_access")
        return " ".join(dict.fromkeys(words))

    async def _protected_resource(self, url, hinted):
        """RFC 9728: the resource's metadata from the challenge's URL, else the well-known URIs,
        path-suffixed first (spec "Protected Resource Metadata Discovery Requirements"); then
        its authorization server's: (the resource as published, unnormalized (RFC 8707), its
        metadata, the authorization server's)."""
        parts = urllib.parse.urlsplit(_secure(url, "MCP server"))
        origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
        well_known = origin + _WELL_KNOWN
        places = [hinted, path and well_known + path, well_known]
        metadata, where = None, hinted or well_known
        for where in dict.fromkeys(filter(None, places)):
            status, found = await _fetch_json(_secure(where, "resource metadata URL"))
            if status == 200 and found:
                metadata = found
                break
        # 2025-03-26 servers publish none: the MCP server is its own authorization server
        if metadata is None:
            metadata = {"resource": url, "authorization_servers": [origin]}
        resource = metadata.get("resource")
        if not _about(resource, parts, path):   # RFC 9728 3.3: about another, refused
            raise _refused(f"the resource metadata at {where} is about {str(resource)[:200]!r}, "
                           f"not {url}")
        servers = metadata.get("authorization_servers")
        if type(servers) is not list or not servers:
            raise _refused(f"the protected resource metadata of {url} names no authorization "
                           "server")
        # A client id registered beforehand is its authorization server's alone (2026-07-28
        # "Authorization Server Binding")
        if self.client_id and self.issuer not in (None, servers[0]):
            raise _refused(f"{url} now signs in at {servers[0]}, but the client id is "
                           f"{self.issuer}'s")
        return resource, metadata, await _server_metadata(servers[0])

    async def _authorization_code(self, server, entry, resource, scope):
        """The browser's part: PKCE S256 (RFC 7636), `state`, a loopback redirect (RFC 8252
        §7.3), `iss` checked (RFC 9207). The form for the token request."""
        import hashlib
        import hmac
        import secrets
        if "S256" not in (server.get("code_challenge_methods_supported") or ()):
            raise _refused(f"{server['issuer']} does not offer PKCE (S256): the spec says not to "
                           "go on")
        _secure(server.get("authorization_endpoint"), "authorization endpoint")
        # Unguessable, and single-use: they live for this one sign-in only
        verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(32)
        listener, redirect_uri, answered = await _loopback_redirect(state)
        try:
            await self._register(server, entry, redirect_uri)
            # RFC 7636 4.2: the challenge is BASE64URL(SHA256(verifier)), unpadded
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=")
            # resource: a token for this MCP server alone (RFC 8707)
            query = {"response_type": "code", "client_id": entry["client_id"],
                     "redirect_uri": redirect_uri,
                     "state": state, "code_challenge": challenge.decode(),
                     "code_challenge_method": "S256",
                     "resource": resource, "scope": scope}
            # else an OpenID provider MUST ignore it (OIDC Core 11)
            if "offline_access" in scope.split():
                query["prompt"] = "consent"
            endpoint = server["authorization_endpoint"]
            joiner = "&" if "?" in endpoint else "?"
            given = {key: value for key, value in query.items() if value}  # no empty ones
            url = endpoint + joiner + urllib.parse.urlencode(given)
            answer = await self._approve(url, answered)
        except asyncio.TimeoutError:  # noqa: UP041 — 3.10's is not yet the builtin TimeoutError
            raise _refused("nobody signed in within 5 minutes") from None
        finally:
            listener.close()
        if not hmac.compare_digest(answer.get("state", ""), state):     # RFC 6749 §10.12: CSRF
            raise _refused("the redirect carries another sign-in's state: refused")
        iss = answer.get("iss")
        supported = server.get("authorization_response_iss_parameter_supported")
        if iss != server["issuer"] and (iss is not None or supported):
            # RFC 9207 §2.4: compared as strings; a server that says it sends iss must send it
            raise _refused(f"the redirect's iss {iss!r} is not {server['issuer']}: refused "
                           "(mix-up attack?)")
        if "error" in answer or not answer.get("code"):
            raise _refused(f"the authorization server said {answer.get('error', 'nothing')}: "
                           f"{answer.get('error_description', '')[:300]}")
        return {"grant_type": "authorization_code", "code": answer["code"],
                "redirect_uri": redirect_uri,
                "code_verifier": verifier}

    async def _approve(self, url, answered):
        """The person approves at `url`: the redirect's query, pasted back (headless) or heard."""
        if self.headless:
            print(f"Open this address, sign in, then paste the address the browser ends on:\n{url}",
                  file=sys.stderr)
            pasted = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            return _query(pasted)
        # Off the loop: a $BROWSER that waits for its user holds up no listener (an async
        # `browser` only makes its coroutine there, which runs here)
        opened: object = await asyncio.to_thread(self.browser or _open_browser, url)
        if asyncio.iscoroutine(opened):
            await opened
        return await asyncio.wait_for(answered, 300)    # 5 minutes for a person

    async def _register(self, server, entry, redirect_uri):
        """A client id at this authorization server, in the spec's order (2025-11-25 "Client
        Registration Approaches"); one registered before with it is kept with its issuer."""
        if self.client_id:
            self._credentials(entry, server, self.client_id, self.client_secret)
            return
        if entry.get("client_id"):     # registered before, at this same issuer
            return
        if self.client_metadata_url and server.get("client_id_metadata_document_supported"):
            self._credentials(entry, server, self.client_metadata_url, None)
            return
        if not server.get("registration_endpoint"):
            raise _refused(f"{server['issuer']} takes no registrations: pass a client id "
                           "(--client-id)")
        # RFC 7591 2: a public client (a native app keeps no secret) with a loopback redirect
        status, answer = await _fetch_json(server["registration_endpoint"], {
            "client_name": self.client_name, "redirect_uris": [redirect_uri],
            "application_type": "native",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none"}, as_json=True)
        if status not in (200, 201) or type(answer.get("client_id")) is not str:
            raise _refused(f"registration at {server['registration_endpoint']} failed (HTTP "
                           f"{status})")
        self._credentials(entry, server, answer["client_id"], answer.get("client_secret"),
                          answer.get("token_endpoint_auth_method"))

    @staticmethod
    def _credentials(entry, server, client_id, secret, method=None):
        """Who we are there, and how the token endpoint is told: as registered, else Basic if
        offered (RFC 8414's default when none are listed), else in the form, else no secret."""
        offered = server.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if method not in ("client_secret_basic", "client_secret_post", "none"):
            method = "none"
            if secret:
                for way in ("client_secret_basic", "client_secret_post"):
                    if way in offered:
                        method = way
                        break
        entry.update(client_id=client_id, client_secret=secret, auth_method=method)

    async def _tokens(self, url, entry, form):
        """The token request: `resource` on every one (RFC 8707 §2), the client authenticated
        as registered (RFC 6749 §2.3.1: Basic with each part form-encoded)."""
        form, headers = {**form, "resource": entry["resource"]}, {}
        client_id, secret = entry["client_id"], entry.get("client_secret")
        method = entry["auth_method"]
        if method == "client_secret_basic":
            headers["Authorization"] = _basic(client_id, secret)
        else:
            form["client_id"] = client_id
            if method == "client_secret_post":
                form["client_secret"] = secret
        form = {key: value for key, value in form.items() if value}
        status, answer = await _fetch_json(entry["token_endpoint"], form, headers)
        if status != 200 or type(answer.get("access_token")) is not str:
            error = str(answer.get("error", f"HTTP {status}"))[:100]
            raise _refused(f"the token endpoint said {error}: "
                           f"{str(answer.get('error_description', ''))[:300]}")
        if str(answer.get("token_type", "")).lower() != "bearer":  # case aside (RFC 6749 5.1)
            raise _refused(f"a token of type {str(answer.get('token_type'))[:40]!r}: only Bearer "
                           "is spoken")
        # RFC 6749 §6: a refresh that brings no new refresh token leaves the old one good
        entry.update(access_token=answer["access_token"],
                     refresh_token=answer.get("refresh_token") or form.get("refresh_token"))
        self._all()[url] = entry
        self._save()
        _logger.info("signed in to %s at %s", url, entry["issuer"])
        return True


def _about(resource, parts, path):
    """RFC 9728 §3.3, spec "Canonical Server URI": whether metadata naming `resource` is about the
    server at `parts` (its URL, or a parent path): else its tokens would be minted for another."""
    if type(resource) is not str:
        return False
    named = urllib.parse.urlsplit(resource)
    if (named.scheme, _host_of(named)) != (parts.scheme, _host_of(parts)):
        return False
    return (path + "/").startswith(named.path.rstrip("/") + "/")


def _host_of(parts):
    """A URL's host and port, 127.0.0.1, ::1 and localhost being one machine."""
    host = parts.hostname
    if _is_loopback(host or ""):
        host = "loopback"
    return host, parts.port


async def _loopback_redirect(state):
    """The redirect listener (RFC 8252 §7.3): 127.0.0.1, never a name that could resolve
    elsewhere, on a port the system picks; the first /callback with our `state` is the answer
    (what another local program sends first cannot end the sign-in), then it closes."""
    import hmac
    answered = asyncio.get_running_loop().create_future()

    async def serve(reader, writer):
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CONNECT_TIMEOUT)
            line = head.split(b" ")
            query = {}
            if line[0] == b"GET" and line[1].startswith(b"/callback?"):
                query = _query(line[1].decode("latin-1"))     # any byte decodes so
            ours = hmac.compare_digest(query.get("state", ""), state) and not answered.done()
            if ours:
                answered.set_result(query)
                status, text = b"200 OK", b"Signed in: you may close this window."
            else:
                status, text = b"404 Not Found", b"Not found"
            writer.write(b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: "
                         b"%d\r\nConnection: close\r\n\r\n%s" % (status, len(text), text))
            await writer.drain()
        except Exception as e:  # noqa: BLE001 — a stray or broken connection: not our answer
            _logger.debug("the redirect listener dropped a connection: %r", e)
        finally:
            writer.close()
    # port 0: the system picks a free one (RFC 8252 7.3: the client may use any port)
    listener = await asyncio.start_server(serve, "127.0.0.1", 0)
    return listener, f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/callback", answered


def _open_browser(url):
    """The default `browser`: the system's, the address printed in case none opens."""
    import webbrowser
    print(f"Opening the browser to sign in; if it does not open, visit:\n{url}", file=sys.stderr)
    webbrowser.open(url)


def _query(url):
    """An address's query as a dict (a name given twice: its last value)."""
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url.strip()).query))


__all__ += ["OAuth"]


##############################################################################
# Extension: seeing the wire, --trace (skip on a first reading)
##############################################################################
# `serve --trace` and `client ... --trace` print every frame that enters or leaves as a packet
# capture would, the capture this project began from in the same words:
#
#     0.002s C→S POST /messages?sessionId=62ef...  request #0 initialize
#     0.003s S→C sse event: message  response #0 (initialize) ok
#
# `--trace FILE.jsonl` appends the same records as JSON Lines (examples/capture.py draws them).
# The transports call it where the bytes are: `message` and `line` (stdio and in memory), `http`
# (a request or status line, its headers, its body), `event` (an SSE event), `note`. Secrets
# stay out (Authorization's credentials, a token in a query, OAuth's codes and tokens), and a
# peer's control characters are shown escaped, never obeyed by the terminal.


class _Trace:
    """Every frame that enters or leaves, read like a packet capture. One header line a frame:
    seconds since start, direction (C→S or S→C), what carries it (stdin/stdout, an HTTP request
    or status line, an SSE event's fields), and what the message is: ``request #2 tools/call
    getUsers``, ``response #2 (tools/call) ok``; then the headers worth seeing and the JSON,
    indented. To a file (``--trace=FILE``): the same as JSON Lines."""

    # The headers MCP gives meaning: Host and Origin (SECURITY.md R3, R4), Mcp-Session-Id
    # (2025-03-26), MCP-Protocol-Version (2025-06-18), auth's, and 2026-07-28's routing headers
    SHOWN_HEADERS = ("host", "origin", "accept", "content-type", "mcp-session-id",
                     "mcp-protocol-version",
                     "last-event-id", "authorization", "location", "www-authenticate", "allow",
                     "mcp-method", "mcp-name")     # and every Mcp-Param-*
    ASKED = 1024        # request ids remembered so that a response can name its method

    def __init__(self, target, side="server"):
        self.start, self.side, self.jsonl = time.monotonic(), side, target != "-"
        self.file: _Any = sys.stderr    # "-": the capture as text, for a person
        if self.jsonl:
            self.file = open(  # noqa: SIM115 — open for the trace's life
                target, "a", encoding="utf-8", errors="backslashreplace")  # lone surrogates escaped
        self.lock = threading.Lock()    # records written from several threads never interleave
        self.asked = {}     # (arrow of the request, id) -> method
        self.lane, self.connections = {}, itertools.count(1)

    def on(self):
        """This trace for one more HTTP connection: its JSON Lines say "conn": its number, from 1
        in the order this side opened or accepted them (examples/capture.py draws a lane each)."""
        view = _Trace.__new__(_Trace)
        # the same file, lock and request ids: one trace, a lane for each connection
        view.__dict__ = {**self.__dict__, "lane": {"conn": next(self.connections)}}
        return view

    def _emit(self, direction, channel, head, headers=None, message=None, data=None):
        """Write one record: every frame traced passes here. `direction` is this side's ("in",
        "out"); the arrow says who spoke, C→S or S→C, whichever side the trace is of."""
        server_hears = (direction == "in") == (self.side == "server")
        arrow = "C→S" if server_hears else "S→C"
        if headers:
            headers = _shown_headers(headers, self.SHOWN_HEADERS)
        with self.lock:
            record = {"t": round(time.monotonic() - self.start, 6), "dir": arrow, **self.lane,
                      "channel": channel, "head": head}
            if message is not None:
                record.update(self._about(arrow, message))
            why = _TRACE_WHY.get()
            if why and record.get("kind") == "request":    # the answer names its request anyway
                record["why"] = why
            if self.jsonl:      # JSON Lines: one record a line, the message whole
                for key, value in ("headers", headers), ("data", data), ("message",
                                                                         _shorten(message, None)):
                    if value:
                        record[key] = value
                # JSON escapes C0 itself; a peer's C1 and bidi controls as \u escapes too (the
                # same strings to a JSON reader): a `tail -f` of the file shows them, never obeys
                text = _CONTROLS.sub(_json_escaped, json.dumps(record, ensure_ascii=False,
                                                               default=str)) + "\n"
            else:
                text = _capture_text(record, headers, data, message)
            try:
                self.file.write(text)
                self.file.flush()
            # stderr closed, a full disk: the trace ends, not the server
            except (OSError, ValueError):
                self.file = open(os.devnull, "w")  # noqa: SIM115 — for the trace's life

    def _about(self, arrow, message):
        """What a message is, as record fields (kind, id, method, name, answers, outcome)."""
        if type(message) is list:      # a batch (2025-03-26 only): each message, the first 50
            items = [self._about(arrow, item if type(item) is dict else None) for item in message]
            return {"kind": "batch", "count": len(items), "items": items[:50]}
        if type(message) is not dict:
            return {"kind": "not JSON-RPC"}
        if message.get("jsonrpc") != "2.0":     # JSON of another kind (OAuth's): plain HTTP
            return {}
        method, id_ = message.get("method"), message.get("id")
        if type(id_) is not int and id_ is not None:
            id_ = str(id_)[:40]     # a peer picks its size
        if type(method) is str:
            return self._about_call(arrow, message, method[:80], id_)
        about = {"kind": "response", "id": id_}
        back = "S→C" if arrow == "C→S" else "C→S"      # an answer comes back the other way
        answers = self.asked.pop((back, repr(id_)), None)  # repr: ids 1 and "1" are not the same
        if answers:
            about["answers"] = answers
        about["outcome"] = _outcome(message.get("error"), message.get("result"))
        return about

    def _about_call(self, arrow, message, method, id_):
        """A request's or a notification's record fields; a request is remembered, for its answer.
        """
        params = message.get("params")
        if type(params) is not dict:
            params = {}
        about: _Json = {"kind": "request", "method": method}
        if "id" not in message:
            about["kind"] = "notification"
        why = _what_for(message, params)
        if why:
            about["why"] = why
        if "id" not in message:
            return about
        about["id"] = id_
        if len(self.asked) >= self.ASKED:   # a peer that never answers cannot make it grow
            del self.asked[next(iter(self.asked))]
        key = arrow, repr(id_)
        # Sessions share a trace and may reuse an id: a reply then names no method, not a wrong one.
        if self.asked.get(key, method) != method:
            self.asked[key] = None
        else:
            self.asked[key] = method
        name = params.get(_NAMED[method]) if method in _NAMED else None
        if type(name) is str:
            about["name"] = name[:80]
        return about

    def message(self, direction, channel, message):
        """A message as this side holds it (one it writes, or one handed over in memory)."""
        self._emit(direction, channel, channel, message=message)

    def line(self, direction, channel, data):
        """A line read from a pipe: its JSON, or its first 200 bytes if it holds none (what a
        stray print() on a server's stdout looks like: stdio carries MCP messages alone)."""
        message, shown = _parsed(data, repr(bytes(data[:200])))
        head = channel
        if shown:
            head = f"{channel} (not JSON)"
        self._emit(direction, channel, head, None, message, shown)

    def http(self, direction, head, headers, body=None):
        """An HTTP request or status line, the headers worth seeing, and the body's JSON."""
        # a token in a URL (never put one there: SECURITY.md R6) is masked as in a header
        head = _SECRET_QUERY.sub(r"\1***", head)
        for name, value in (headers or {}).items():
            if name.lower() == "content-type" and value.startswith("text/event-stream"):
                head += "  (an SSE stream opens)"      # its events follow, each as it comes
                break
        parsed = ()
        if body:
            parsed = _parsed(body, f"({len(body)} bytes, not JSON)")
        self._emit(direction, "http", head, headers, *parsed)

    def event(self, direction, fields):
        """An SSE event as it is on the wire: its id, event and retry fields, then its data (the
        server's own events carry their message, not yet encoded)."""
        head = " ".join(f"{key}: {fields[key]}" for key in ("id", "event", "retry")
                       if key in fields)
        message, data = fields.get("data"), None
        if isinstance(message, str):
            message, data = _parsed(message, message)
        self._emit(direction, "sse", head or "(no fields)", message=message, data=data)

    def note(self, direction, text):
        """The trace's own words on a stream (primed, ended ...): no bytes on the wire."""
        self._emit(direction, "sse", text)


def _shown_headers(headers, shown):
    """The headers worth seeing, an Authorization's credentials masked (its scheme shown)."""
    kept = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower not in shown and lower[:10] != "mcp-param-":
            continue
        if lower == "authorization":
            value = value.partition(" ")[0] + " ***"
        kept[name] = value
    return kept


# A query parameter whose name says secret (access_token=, code=, client_secret= ...): masked
_SECRET_QUERY = re.compile(
    r"(?i)([?&][^=&#\s]*(?:token|secret|key|password|code)[^=&#\s]*=)[^&#\s]*")
# method -> the param naming what it acts on (a tool, a prompt, a URI), shown after it
_NAMED = {**_NAME_KEY, "resources/subscribe": "uri", "resources/unsubscribe": "uri"}


def _parsed(text, otherwise):
    """(the JSON in `text`, None), or (None, `otherwise`) if it holds none."""
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):   # deep nesting is a RecursionError (SECURITY.md R20)
        return None, otherwise


def _capture_text(record, headers, data, message):
    """A record as the capture shows it: the header line, then the rest indented."""
    first = f"{record['t']:8.3f}s {record['dir']} {record['head']}"
    if "kind" in record:
        first += f"  {_summary(record)}"
    lines = [first]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if data is not None:
        lines += [f"data: {line}" for line in data.split("\n")]
    if message is not None:
        shown = json.dumps(_shorten(message), indent=2, ensure_ascii=False, default=str)
        lines += shown.splitlines()
    # A peer's words (a method, an id, a header) may hold ESC or a newline: shown, never obeyed
    lines = [_CONTROLS.sub(_escaped, line) for line in lines]
    # the rest indented past the header line's time
    return "\n".join(lines[:1] + [" " * 14 + line for line in lines[1:]]) + "\n"


def _escaped(control):
    """A control character as its hex escape (\\x1b, \\u202e): shown, never obeyed."""
    code = ord(control.group())
    if code > 0xFF:
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def _json_escaped(control):
    """A control character in JSON text as JSON's escape (\\u009b): the same string, not obeyed."""
    return f"\\u{ord(control.group()):04x}"


# C0 and C1, which a terminal acts on, and Unicode's bidirectional controls (ALM, LRM, RLM, the
# embeddings and overrides, the isolates), with which a peer's id or method would show reordered
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _what_for(message, params):
    """What a message is about, for the trace: the request it cancels, the listen stream it
    belongs to, or the answers a next round carries (2026-07-28)."""
    meta = params.get("_meta")
    if type(meta) is not dict:
        meta = {}
    listen = meta.get(_MODERN + "subscriptionId")
    if "id" not in message and _is_id(listen):     # a listen's (PROTOCOL.md 4.7)
        return f"listen #{str(listen)[:40]}"
    if message.get("method") == "notifications/cancelled" and _is_id(params.get("requestId")):
        return f"#{str(params['requestId'])[:40]}"
    if "id" in message and type(params.get("inputResponses")) is dict:  # a retry (PROTOCOL.md 4.5)
        return "answering " + ", ".join(map(str, params["inputResponses"]))[:200]
    return None


def _outcome(error, result):
    """How a response ended, in a few words: ok, an error's code, or what it asks for."""
    if type(error) is dict:
        return f"error {error.get('code')}"
    if type(result) is not dict:
        return "ok"
    asks = result.get("inputRequests")
    if type(asks) is dict:     # 2026-07-28 input_required: what the server asks first
        named = []
        for key, ask in asks.items():
            method = ask.get("method") if type(ask) is dict else "?"
            named.append(f"{key} ({method})")
        return "input required: " + ", ".join(named)[:200]
    if type(result.get("taskId")) is str and type(result.get("status")) is str:  # SEP-2663's task
        return _task_outcome(result)
    if result.get("isError") is True:
        return "ok, isError"    # the tool failed, not the request
    return "ok"


def _task_outcome(result):
    """A task's step (the tasks extension): created, or its status now."""
    words = "task "
    if result.get("resultType") == "task":
        words = "task created, "
    words += result["status"][:40]
    inner = result.get("result")
    if type(inner) is dict and inner.get("isError") is True:
        words += ", isError"
    return words


# A summary's words after the record's kind, in order: (field, how it is shown).
_WORDS = (("id", "#{}"), ("answers", "({})"), ("method", "{}"), ("name", "{}"), ("outcome", "{}"))


def _summary(about: _Json) -> str:
    """A record's JSON-RPC fields as words: ``request #2 tools/call getUsers``."""
    if about["kind"] == "batch":
        return f"batch of {about['count']}: " + "; ".join(_summary(item) for item in about["items"])
    # JSON-RPC: it answers no request
    if about["kind"] == "response" and about.get("id") is None:
        return "error with no id: " + str(about.get("outcome", "")).removeprefix("error ")
    words = [about["kind"]]
    words += [shown.format(about[key]) for key, shown in _WORDS if key in about]
    text = " ".join(words)
    if "why" in about:
        text += f"  [{about['why']}]"
    return text


def _shorten(value, limit: int | None = 300, depth=0):
    """For showing: strings over `limit` and lists over 50 cut (None: kept whole),
    and nesting past 32 levels, which a hostile peer may send."""
    if depth > 32:
        return "..."
    if isinstance(value, str) and limit and len(value) > limit:
        return value[:limit] + f"... ({len(value) - limit} more characters)"
    if isinstance(value, dict):
        return {key: _shorten(item, limit, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        items = value
        if limit:
            items = value[:50]
        shown = [_shorten(item, limit, depth + 1) for item in items]
        if len(shown) < len(value):
            shown.append("...")
        return shown
    return value


def _bare_trace(argv):
    """--trace alone means stderr; --trace=FILE, or --trace FILE.jsonl, that file. It takes
    no next word but a .jsonl one: `serve --trace server.py` must not append to the server."""
    words = list(argv)
    for i, word in enumerate(words):
        if word != "--trace":
            continue
        following = ""
        if i + 1 < len(words):
            following = words[i + 1]
        if following and following.endswith(".jsonl"):
            words[i], words[i + 1] = "--trace=" + following, None
        else:
            words[i] = "--trace=-"     # "-": stderr
    return [word for word in words if word is not None]


def _trace_option(parser):
    """--trace, the same for serve and client (FILE optional: `_bare_trace` reads it first)."""
    parser.add_argument("--trace", nargs="?", const="-", metavar="FILE.jsonl",
                        help="show every message on "
                        "stderr as a packet capture would; --trace FILE.jsonl (or --trace=FILE) "
                        "appends them to the file as JSON Lines")


def _opened_trace(target, side):
    """A _Trace to `target`, or ValueError saying why it cannot be written (one line)."""
    try:
        return _Trace(target, side)
    except OSError as e:
        raise ValueError(f"cannot write the trace to {target}: {e.strerror}") from None


class _TraceOption(_ServeOptions):
    """serve --trace [FILE.jsonl]."""

    def add(self, parser):
        _trace_option(parser)

    def argv(self, argv):
        """`--trace` alone made `--trace=-` before argparse reads it (`_bare_trace`)."""
        return _bare_trace(argv)

    def configure(self, server, args, options):
        if args.trace:
            options["trace"] = _opened_trace(args.trace, "server")  # unwritable: exit 2


# The extension plugs in: Client(trace="FILE") and serve --trace.
_PROVIDED["Client trace"] = _Trace
_SERVE_OPTIONS.append(_TraceOption())


##############################################################################
# Extension: running behind a proxy or a balancer (skip on a first reading)
##############################################################################
# examples/deploy.py runs several processes behind nginx: a balancer probes /healthz, routes a
# session's requests by the start of its id (--node), and a proxy says who the client is in
# X-Forwarded-For, -Host and -Proto, believed from the addresses --forwarded-allow-ips names.
# Nothing here is MCP: a 2026-07-28 request stands alone, so any process may serve it (given
# one MCP_MIN_STATE_KEY and --task-store); a handshake-era session lives in one process, hence
# the balancer's routing by --node.


async def _healthz(http, conn):
    """GET /healthz: a balancer's probe (no Host, no token): ok, or 503 once the server stops.
    Public (served before the Host check and any token): it says nothing but ok."""
    if http.closing:
        raise _HttpError(503, "Server shutting down")
    conn.write(200, [("Content-Type", "text/plain")], b"ok\n")
    return True     # the connection may carry the next request


class _Forwarded:
    """HttpServer(forwarded_allow_ips=...): the proxies ("a, b", networks too, or "*": any) whose
    X-Forwarded-* headers are believed. Anybody can send those headers: believed from anyone
    else, they would let a client pose as another address or name a Host the check passes."""

    def __init__(self, spec):
        import ipaddress
        self.ipaddress = ipaddress      # imported here: a server with no proxy never pays for it
        self.proxies = []
        names = spec.split(",") if isinstance(spec, str) else spec
        for name in map(str.strip, names):
            if name == "*":     # any address at all: both families' whole range
                self.proxies += [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
            elif name:
                self.proxies.append(ipaddress.ip_network(name, strict=False))  # 10.0.0.1/8: its net

    def trusts(self, address):
        """Whether `address` is one of the proxies."""
        try:
            address = self.ipaddress.ip_address(address)
        except ValueError:
            return False
        address = getattr(address, "ipv4_mapped", None) or address  # ::ffff:10.0.0.1 is 10.0.0.1
        return any(address in network for network in self.proxies)

    def apply(self, request, conn):
        """What a trusted proxy says: the client's address (the last X-Forwarded-For entry not a
        proxy's own: anybody can write those before it), the Host it asked for, its scheme."""
        request.client = conn.peer
        if not self.trusts(conn.peer):     # not a proxy of ours: its headers are only words
            return
        for address in reversed(request.header("x-forwarded-for").replace(" ", "").split(",")):
            request.client = address[:64] or request.client     # bounded: it goes in the log
            if not self.trusts(address):
                break
        # the last value of each: the one our proxy wrote (what comes before, anybody could)
        host = request.header("x-forwarded-host").rpartition(",")[2].strip()
        proto = request.header("x-forwarded-proto").rpartition(",")[2].strip().lower()
        if host:
            request.headers["host"] = host      # the name the client used: _check_peer checks it
        if proto in ("http", "https"):
            request.scheme = proto      # a page of the public origin may call: see _check_peer


class _DeployOptions(_ServeOptions):
    """serve --node and --forwarded-allow-ips."""

    def add(self, parser):
        parser.add_argument("--node", metavar="NAME",
                            help="behind a balancer: a name (letters, digits) to start the "
                            "session ids this process makes, for the balancer to route on")
        parser.add_argument("--forwarded-allow-ips", default="", metavar="IPS",
                            help="behind a proxy: "
                            "addresses or networks (a,b; *: any) whose "
                            "X-Forwarded-For/-Host/-Proto are believed (default: none)")

    def configure(self, server, args, options):
        """HTTP only (--port): over stdio no balancer or proxy stands between the two sides."""
        if args.port is not None:
            options.update(node=args.node, forwarded_allow_ips=args.forwarded_allow_ips)


# The extension plugs in: a public route for the probe, and serve's options.
_ROUTES[("GET", "/healthz")] = _Route(_healthz, public=True)
_PROVIDED["HttpServer forwarded_allow_ips"] = _Forwarded
_SERVE_OPTIONS.append(_DeployOptions())


##############################################################################
# Extension: the command line, and the built-in demo (skip on a first reading)
##############################################################################
# `python3 mcp_min.py serve [TARGET]` serves the Server in TARGET (or the demo user store from
# the capture) with `Server.run`'s options; `python3 mcp_min.py client TARGET METHOD [ARGS]`
# connects, sends one request, prints its answer as JSON, and disconnects. It uses the public
# Client and Server.run alone: what it sends (--trace shows it) is what any program using them
# sends, plus a tools/list of its own to type k=v, which the trace marks as the CLI's.


def _load_server(target):
    """A Server from ``path/to/file.py[:name]`` or ``package.module[:name]``: without a name,
    the module's one Server, else the one called `server`. A bad TARGET is a ValueError."""
    import importlib.util  # binds importlib too
    spec, _, name = target.rpartition(":")
    if not spec or not name.isidentifier():    # no ":name" (or a Windows drive letter)
        spec, name = target, None
    if spec.endswith(".py") or os.sep in spec or "/" in spec:     # a file to run, not a module
        path = os.path.abspath(spec)
        module_name = os.path.splitext(os.path.basename(path))[0]
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None or not os.path.exists(path):
            raise ValueError(f"no such file: {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, os.path.dirname(path))   # its neighbours import, as under `python3 f.py`
        module_spec.loader.exec_module(module)  # its code runs now: what it raises, main says
    else:
        module = importlib.import_module(spec)
    if name:
        server = getattr(module, name, None)
        if server is None:
            raise ValueError(f"{spec} has no {name!r}")
        if not isinstance(server, Server):
            raise ValueError(f"{target} is of type {type(server).__name__}, not a Server")
        return server
    found = [value for value in vars(module).values() if isinstance(value, Server)]
    if len(found) == 1:
        return found[0]
    server = getattr(module, "server", None)
    if isinstance(server, Server):
        return server
    what = "several Servers" if found else "no Server"
    # ValueError, not TypeError: a bad TARGET, said in one line
    raise ValueError(f"{target}: {what} found (name one with {spec}:NAME)")


def _load_error(e):
    """Why a TARGET did not load, in one line: the error at the user's file and line."""
    if isinstance(e, SyntaxError) and e.filename:  # its file and line: no frame of the user's shows
        return f"{type(e).__name__} at {os.path.basename(e.filename)}:{e.lineno}: {e.msg}"
    import traceback
    stdlib = os.path.dirname(os.__file__)
    # the user's own frames: neither this file's nor the standard library's (importlib ...)
    frames = [frame for frame in traceback.extract_tb(e.__traceback__) if frame.filename != __file__
              and not frame.filename.startswith(("<frozen", stdlib))]
    if not frames:      # our own word (no such file, no such name), or importlib's
        if type(e) is ValueError:
            return str(e)
        return f"{type(e).__name__}: {e}"
    return f"{type(e).__name__} at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}: {e}"


# What the CLI's methods need after METHOD, for a usage error before anything is sent.
_CLI_NEEDS = {"tools/call": "NAME [k=v ...]", "prompts/get": "NAME [k=v ...]",
              "resources/read": "URI",
              "resources/subscribe": "URI", "resources/unsubscribe": "URI",
              "logging/setLevel": "LEVEL"}


def _client_usage(args):
    """The request the CLI will send, checked first: (name, arguments, raw "k=v" texts). A
    mistake is a usage error (exit 2) before any server is started or any connection made."""
    target, method, words = args.target, args.method, args.args
    if not target.strip():
        raise ValueError("TARGET is empty: give a URL or the command that starts a server")
    if re.fullmatch(r"[\w.\-\[\]:]+:\d+(/\S*)?", target):        # 127.0.0.1:8080/mcp
        raise ValueError(f"{target} is not a URL: write http://{target}")
    scheme = target.partition(":")[0].lower()
    # ws://, file:// ...: no MCP transport, and no command either
    if re.fullmatch(r"[A-Za-z][\w+.-]*://\S*", target) and scheme not in ("http", "https"):
        raise ValueError(f"{target}: only http:// and https:// URLs, or a command that starts a "
                         "server")
    if method in _CLI_NEEDS and not words:
        raise ValueError(f"{method} needs {_CLI_NEEDS[method]}: client TARGET {method} "
                         f"{_CLI_NEEDS[method]}")
    if method in ("tools/call", "prompts/get"):
        return (words[0], *_cli_arguments(words[1:]))
    if method in _CLI_NEEDS or method in _LISTS_OF:     # a URI or a level; a list takes none
        name = words[0] if words else None
        # uri=users://John, as tools/call's k=v: the URI (no scheme holds "=")
        if name and name.lower().startswith(_CLI_NEEDS.get(method, "-").lower() + "="):
            name = name.partition("=")[2]
        return name, None, None
    if not words:
        return None, None, None
    return None, _cli_arguments(words)[0], None     # any other method: k=v are its params


def _cli_arguments(words):
    """``k=v`` pairs (values parsed as JSON when they are JSON) or one JSON object: (arguments,
    raw)."""
    if len(words) == 1 and words[0].lstrip().startswith("{"):
        try:
            return json.loads(words[0]), {}    # typed as written: no k=v text to retype
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
            arguments[key] = value      # not JSON: the text itself
    return arguments, raw


def _client_main(args, name, arguments, raw):
    """Send the request and print its answer on stdout: the exit status. 0: answered; 1: an
    error (one line on stderr, never a traceback) or a tool's isError result; 130: Ctrl-C."""
    # mcp_min's own log goes to stderr: stdout holds the answer alone, for a pipe or jq
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=args.log_level, handlers=[handler])
    try:
        result = asyncio.run(_client_run(args, name, arguments, raw))
    except McpError as e:
        print(_printable(f"error {e.code}: {e.message}"), file=sys.stderr)
        if "client declined" in e.message and not sys.stdin.isatty():     # no one to ask
            print("mcp_min: on a terminal, the CLI asks you for the form's fields", file=sys.stderr)
        asked = e.data.get("elicitations") if type(e.data) is dict else None
        # 2025-11-25's -32042: the URLs to visit before calling again, shown, never opened
        if e.code == URL_ELICITATION_REQUIRED and type(asked) is list:
            for params in asked:
                if type(params) is dict:
                    _show_url(params, ask=False)
        return 1
    except KeyboardInterrupt:
        return 130      # 128 + SIGINT, as a shell reports it
    except Exception as e:      # whatever a broken server makes of us: one line, not a traceback
        _logger.debug("client failed", exc_info=True)      # the traceback: --log-level DEBUG
        print(_printable(f"mcp_min: {_said(e)}"), file=sys.stderr)
        return 1
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if not text.replace("\n", "").isprintable():    # a control or bidi character a server sent
        # JSON's own escapes (DEL too, which JSON leaves): the same value, nothing to obey
        text = json.dumps(result, indent=2).replace("\x7f", "\\u007f")
    try:
        print(text, flush=True)
    except BrokenPipeError:     # piped into `head`, which read enough: no traceback (Python's docs,
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # "Note on SIGPIPE")
        return 1
    if isinstance(result, dict) and result.get("isError"):     # the tool ran, and failed
        print("the tool reported an error", file=sys.stderr)
        return 1
    return 0


def _said(e):
    """An error as one line: an OSError's own words and file, else its type and message."""
    if isinstance(e, OSError) and e.strerror:
        if e.filename:
            return f"{e.strerror}: {e.filename}"
        return e.strerror
    return f"{type(e).__name__}: {e}"


def _printable(text):
    """A server's words as the terminal may show them: "?" for each character it would obey or
    that would reorder the line (C0 and C1 controls, bidi controls: what isprintable refuses).
    No escape sequence from a server writes the clipboard (OSC 52), retitles or clears a screen.
    """
    return "".join(c if c.isprintable() else "?" for c in str(text))


class _PrintableFormatter(logging.Formatter):
    """mcp_min's log on the CLI's stderr, which may quote a server (a method it sent): each line
    `_printable`."""

    def format(self, record):
        return "\n".join(map(_printable, super().format(record).split("\n")))


def _print_log(params):
    """A server's notifications/message, on stderr: stdout carries the answer alone."""
    print(_printable(f"[{params.get('level')}] {params.get('data')}"), file=sys.stderr)


def _print_status(task):
    """A task's status, as it changes (the tasks extension)."""
    print(_printable(f"task {task.get('taskId')}: {task.get('status')}"), file=sys.stderr)


async def _client_run(args, name, arguments, raw):
    """One request's whole life: connect (server/discover or initialize), send METHOD, return
    its answer, disconnect. A terminal lets the server's asks (elicitation) reach the user."""
    # --protocol: a 2026-07-28 version alone, or the handshake alone; none: server/discover
    # first, the handshake if the server does not speak 2026-07-28 (PROTOCOL.md 4.8)
    version, era = args.protocol, "auto"
    if version in MODERN_VERSIONS:
        era = version
    elif version:
        era = "handshake"
    requested = LATEST_PROTOCOL_VERSION     # what initialize asks for, if it comes to that
    if version in PROTOCOL_VERSIONS:
        requested = version
    show = functools.partial(asyncio.to_thread, _show_url)     # input() blocks: off the loop
    fill_in = show if sys.stdin.isatty() else None     # no terminal: no form mode declared
    client = Client(args.target, token=args.token, auth=_cli_auth(args), trace=args.trace, era=era,
                    protocol_version=requested, on_log=_print_log, elicit_url=show,
                    elicitation=fill_in,
                    timeout=args.timeout)
    method = args.method
    async with client:
        if method in _LISTS_OF:
            return {_LISTS_OF[method]: await client._all(method)}  # each page, by nextCursor
        if method == "prompts/get":     # prompt arguments are strings, as typed
            texts = {}
            for key, value in arguments.items():
                if type(value) is not str:
                    value = json.dumps(value)
                texts[key] = raw.get(key, value)
            return await client.get_prompt(name, texts)
        if method == "tools/call":
            typed = await _typed(client, name, arguments, raw)
            return await client.call_tool(name, typed, on_status=_print_status)
        if method == "logging/setLevel":
            return await client.set_log_level(name)
        if method == "ping":
            return await client.ping()
        if name:    # resources/read, subscribe and unsubscribe name a URI
            return await client.request(method, {"uri": name})
        return await client.request(method, arguments)     # completion/complete, your own ...


async def _typed(client, name, arguments, raw):
    """A tool's k=v arguments, each as typed where the tool's schema wants a string (zip=10001,
    or a Decimal's digits, exactly). The CLI's own tools/list, so marked in the trace."""
    if not arguments:   # nothing to type: no tools/list of the CLI's own
        return arguments
    why = _TRACE_WHY.set("the CLI's own: it reads the tool's schema to type k=v")
    try:
        tools = await client._all("tools/list")
    finally:
        _TRACE_WHY.reset(why)
    tool = next((tool for tool in tools if tool["name"] == name), None)
    if tool is None:    # said as the server would: -32602, an unknown tool (PROTOCOL.md 5.3)
        raise McpError(INVALID_PARAMS, f"The server has no tool named {name!r}")
    props = tool.get("inputSchema", {}).get("properties", {})
    for key, text in raw.items():
        prop = props.get(key)
        if type(prop) is not dict or validate(text, prop):
            continue    # the text itself would not do
        # the parsed value would not do, or a string is wanted: zip=10001 stays "10001"
        if validate(arguments[key], prop) or "string" in (prop.get("type") or ()):
            arguments[key] = text
    return arguments


def _show_url(params, ask=True):
    """Elicitation at the CLI. URL mode: the whole URL (never fetched here; no control character
    can hide part of it), and the user's consent; form mode: each field typed in (JSON where it
    parses, a string field as typed; none typed: declined). A terminal asks, anything else declines.
    """
    message = _printable(params.get("message"))
    if "url" in params:
        where = _printable(params.get("url"))
        print(f"the server asks you to visit a URL: {message}\n  {where}", file=sys.stderr)
    else:
        print(f"the server asks: {message}", file=sys.stderr)
    if not (ask and sys.stdin.isatty()):   # nobody to ask: declined, never accepted unseen
        return {"action": "decline"}
    if "url" in params:
        # URL mode (PROTOCOL.md 5.12): the whole URL shown, consent asked, nothing opened here
        if input("Will you open it? [y/N] ").strip().lower() == "y":
            return {"action": "accept"}
        return {"action": "decline"}
    fields = (params.get("requestedSchema") or {}).get("properties") or {}  # flat, primitives only
    content = {}
    for key in fields:
        field = fields[key]
        if type(field) is not dict:
            field = {}
        label = _printable(field.get("title") or key)
        if field.get("description"):
            label += f" ({_printable(field['description'])})"
        typed = input(f"  {label}: ").strip()
        if not typed:
            continue
        if field.get("type") == "string":
            content[key] = typed
        else:
            content[key] = _cli_arguments([f"v={typed}"])[0]["v"]     # JSON if it parses, as k=v
    if not content:
        return {"action": "decline"}
    return {"action": "accept", "content": content}


def _cli_auth(args):
    """--auth [browser|paste|machine], --client-id, --client-secret: an OAuth, or None. A person
    signs in within the request that met the 401: it gets 5 minutes, whatever --timeout says."""
    if not (args.auth or args.client_id):  # no OAuth: a 401 ends the request
        return None
    if args.client_id and args.client_secret and not args.issuer:
        raise ValueError("--client-secret needs --issuer: the authorization server it may be sent "
                         "to")
    grant = "authorization_code"     # a person signs in (browser, paste); machine: its secret
    if args.auth == "machine":
        grant = "client_credentials"
    else:
        args.timeout = max(args.timeout, 300)
    return OAuth(client_id=args.client_id, client_secret=args.client_secret, issuer=args.issuer,
                 headless=args.auth == "paste", grant=grant)


def demo_server():
    """The user store from the packet capture this project started from, in memory: tools,
    resources with a template, a prompt, completions, and an elicitation, each as small as the
    feature allows, so that a learner can call every kind (`client ... --trace`)."""
    server = Server("user-store", version=__version__,
                    instructions="Tools manage a small in-memory user directory.")
    users = {"John": "john@example.com", "Jane": "jane@example.com"}  # the capture's two users

    # These touch only a dict, so they are async: no thread hop per call. Annotations are hints
    # to the client (2025-03-26), never enforced, and untrusted unless the server is.
    @server.tool(annotations={"readOnlyHint": True})
    async def getUsers() -> list:
        """List every user with their email address."""
        return [{"name": name, "email": email} for name, email in users.items()]

    @server.tool()
    async def addUser(name: typing.Annotated[str, "The user's name"],
                      email: typing.Annotated[str, "An email address: ada@example.com"]) -> str:
        """Add a user to the directory."""
        name, email = name.strip(), email.strip()
        if not name:    # McpError in a tool: an isError result, which the model reads and fixes
            raise McpError(INVALID_PARAMS, "The name must not be empty.")
        if name in users:
            raise McpError(INVALID_PARAMS, f"A user named {name!r} already exists.")
        if not _looks_like_email(email):
            raise McpError(INVALID_PARAMS,
                           f"{email!r} is not an email address (like ada@example.com).")
        users[name] = email
        server.resource_updated("users://all")     # subscribers and listens hear of it
        return f"Added {name} <{email}>."

    @server.tool(annotations={"readOnlyHint": True})
    async def getUser(name: str) -> dict:
        """Look up one user by name."""
        if name not in users:   # the message says what to call next: the model can recover
            raise McpError(INVALID_PARAMS,
                           f"No user named {name!r}. Call getUsers to see who exists.")
        return {"name": name, "email": users[name]}

    # destructive, and idempotent: deleting twice leaves what deleting once does
    @server.tool(annotations={"destructiveHint": True, "idempotentHint": True})
    async def deleteUser(name: str, ctx: Context) -> str:
        """Remove a user from the directory (asking the user first, if the client can)."""
        if name not in users:
            raise McpError(INVALID_PARAMS, f"No user named {name!r}.")
        if "elicitation" in (ctx.client_capabilities or {}):  # only a client that declared it
            answer = await ctx.elicit(f"Delete user {name}?", {"ok": {"type": "boolean"}})
            if answer.get("action") != "accept" or answer.get("content", {}).get("ok") is not True:
                return f"Kept {name}."     # declined, cancelled, or not a yes
        users.pop(name, None)
        server.resource_updated("users://all")
        return f"Deleted {name}."

    # A fixed resource, and a template (RFC 6570): resources/templates/list shows users://{name}
    @server.resource("users://all", mime_type="application/json")
    async def all_users():
        """Every user, as JSON."""
        return [{"name": name, "email": email} for name, email in users.items()]

    @server.resource("users://{name}", mime_type="application/json")
    async def one_user(name: str):
        """One user, as JSON."""
        if name not in users:
            raise McpError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": f"users://{name}"})
        return {"name": name, "email": users[name]}

    @server.prompt()    # returns a string: prompts/get gives it as one user message
    async def greet(name: typing.Annotated[str, "Who to welcome"]) -> str:
        """Ask the model to welcome a user."""
        return f"Write a short, friendly welcome message for {name}, a new member of our directory."

    # one function completes both: the prompt's argument and the template's variable
    @server.completion("greet", "name")
    @server.completion("users://{name}", "name")
    async def user_names(prefix: str):
        """completion/complete of a name: the users whose names begin so, case aside."""
        return [name for name in users if name.lower().startswith(prefix.lower())]

    return server


def _looks_like_email(value):
    """Whether addUser takes it: one @, text before it, a dotted domain after; no space."""
    local, at, domain = value.partition("@")
    if not (local and at and "." in domain.strip(".") and not domain.startswith(".")):
        return False
    return not any(c.isspace() or c == "@" for c in value.replace("@", "", 1))


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
    """The command line: ``serve`` (Server.run's options, and TARGET) or ``client``; the exit
    status (2: a usage error or a TARGET that does not load)."""
    parser = _argument_parser(prog="mcp_min", description=_MAIN_HELP)
    parser.add_argument("--version", action="version", version=f"mcp_min {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{serve,client}")
    # serve takes Server.run's own parser: one set of options, whichever way a server starts
    serve = commands.add_parser("serve", parents=[_serve_parser()], add_help=False,
                                formatter_class=parser.formatter_class, description=_SERVE_HELP,
                                help="serve a Server (default: the user-store demo)")
    serve.add_argument("target", nargs="?", metavar="TARGET",
                       help="path/to/file.py[:name] or package.module[:name]")
    client = commands.add_parser("client", formatter_class=parser.formatter_class,
                                 description=_CLIENT_HELP,
                                 help="call a server: TARGET METHOD [ARGS...]")
    _client_options(client)
    # the serve options' own reading of the command line (--trace alone takes no next word)
    args = parser.parse_args(_serve_argv(sys.argv[1:] if argv is None else argv))
    if args.command == "serve":
        # stdio: stdout is the protocol's from here on, before TARGET's imports can print.
        stdout = 1
        if args.port is None:
            stdout = _private_stdout()
        try:
            if args.target:
                server = _load_server(args.target)
            else:
                server = demo_server()
        # the user's file may raise anything: shown in one line
        except Exception as e:  # noqa: BLE001
            print(f"mcp_min: cannot load {args.target}: {_load_error(e)}", file=sys.stderr)
            return 2
        return _serve(server, args, stdout)
    # A usage error, or a trace file that cannot be written: exit 2, before anything is sent
    try:
        request = _client_usage(args)
        if args.trace:
            args.trace = _opened_trace(args.trace, "client")
    except ValueError as e:
        client.error(str(e))    # argparse's way: one line, exit 2
    return _client_main(args, *request)


def _client_options(client):
    """client's arguments. Secrets come from the environment by default: every local user can
    read a command line (ps), not another's environment."""
    client.add_argument("target",
                        help="an http(s):// URL, or a quoted command that starts a stdio server")
    client.add_argument("method", metavar="METHOD",
                        help="tools/list, tools/call, resources/read, prompts/get, ping ...")
    client.add_argument("args", nargs="*", default=[], metavar="ARGS",
                        help="NAME, URI, k=v pairs or one JSON object")
    client.add_argument("--token", default=os.environ.get("MCP_TOKEN"),
                        help="bearer token for HTTP (default: $MCP_TOKEN)")
    client.add_argument("--auth", nargs="?", const="browser",     # --auth alone: the browser
                        choices=("browser", "paste", "machine"),
                        help="sign in with OAuth on a 401: in the browser (default), by pasting "
                             "the "
                        "address back (paste), or as a program with --client-secret (machine)")
    client.add_argument("--client-id", help="a client id registered with the authorization server")
    client.add_argument("--issuer", metavar="URL", help="that authorization server: with a secret, "
                        "required (the secret goes there only, whichever server the MCP server "
                        "names)")
    client.add_argument("--client-secret", default=os.environ.get("MCP_CLIENT_SECRET"),
                        help="its secret (default: $MCP_CLIENT_SECRET; prefer it: every local user "
                        "can read the command line)")
    versions = PROTOCOL_VERSIONS + MODERN_VERSIONS
    client.add_argument("--protocol", choices=versions, metavar="VERSION",
                        help="speak this protocol version only (default: 2026-07-28 if the server "
                        "does, else the handshake); one of " + ", ".join(versions))
    client.add_argument("--timeout", type=_seconds, default=REPLY_TIMEOUT, metavar="SECONDS",
                        help=f"how long to wait for each answer (default {REPLY_TIMEOUT:g})")
    _trace_option(client)
    client.add_argument("--log-level", default="WARNING", type=str.upper, choices=_LOG_LEVELS,
                        metavar="LEVEL",
                        help=f"what mcp_min logs on stderr: {', '.join(_LOG_LEVELS)} (default "
                             "WARNING)")


__all__ += ["demo_server", "main"]     # the CLI itself stays private: `main` is its door

# What the process below runs: this very file (by its path, as sys.argv[1]), as -m runs a
# module, its bytecode read from the cache; sys.path[0] as the script had it (sys.argv[0])
_AS_MODULE = """import importlib.util, sys
sys.argv.pop(0)
sys.path[0], path = sys.argv.pop(0), sys.argv.pop(0)
spec = importlib.util.spec_from_file_location("__main__", path)
main = sys.modules["__main__"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(main)"""
# the interpreter's options that take a value as the next word (`-X dev`)
_OPTION_VALUES = ("-W", "-X", "--check-hash-based-pycs")


def _interpreter_options(words):
    """Whether `words`, before a script's path on the command line, are the interpreter's own
    options (`-S`, `-X dev`, `-Werror`), not a launcher's file and arguments (coverage run ...)."""
    value = False
    for word in words:
        if value or word in _OPTION_VALUES:
            value = not value
        elif not (word.startswith(("-W", "-X", "--check-hash-based-pycs="))
                  or word[:1] == "-" and len(word) > 1 and set(word[1:]) <= set("bBdEiOqsSuvx")):
            return False
    return not value


def _serve_from_bytecode():
    """`python3 mcp_min.py serve ...` goes on as `python3 -m mcp_min serve ...` would, from the
    cached bytecode: the process execs itself (the same pid, stdin, stdout, signals and
    interpreter options). CPython keeps a script's parse tree until the script ends, and this
    file's is 25 MB: a server that runs for hours would hold twice the memory of -m. A command
    that ends at once (client, --help) stays as it is, as does a copy whose bytecode cannot be
    cached, one run by a launcher (coverage run ...), -I and -P, and any system but POSIX."""
    path = os.path.realpath(__file__)
    skip = len(sys.orig_argv) - len(sys.argv)   # the interpreter and its options
    if os.name != "posix" or sys.argv[1:2] != ["serve"] or not sys.executable \
            or not path.endswith(".py") or not os.path.isfile(path) \
            or sys.flags.isolated or getattr(sys.flags, "safe_path", 0) or not sys.path \
            or sys.orig_argv[skip:] != sys.argv or not _interpreter_options(sys.orig_argv[1:skip]):
        return
    import importlib.util  # binds importlib too
    try:
        cache = importlib.util.cache_from_source(path)
    except NotImplementedError:     # no cache_tag: bytecode is never cached
        return
    # Bytecode of this very file (its source's time and size in its head: PEP 552), or a folder
    # the next process can write it to (the first run then compiles twice)
    head, source = b"", os.stat(path)
    with contextlib.suppress(OSError), open(cache, "rb") as f:
        head = f.read(16)
    fresh = head[:8] == importlib.util.MAGIC_NUMBER + bytes(4) and head[8:] == b"".join(
        (int(n) & 0xFFFFFFFF).to_bytes(4, "little") for n in (source.st_mtime, source.st_size))
    folder = os.path.dirname(cache)
    writable = not sys.flags.dont_write_bytecode and os.access(
        folder if os.path.isdir(folder) else os.path.dirname(folder), os.W_OK)
    if not (fresh or writable):
        return
    with contextlib.suppress(OSError):      # else it goes on here
        os.execv(sys.executable, [*sys.orig_argv[:skip], "-c", _AS_MODULE, sys.path[0], path,
                                  *sys.argv])


if __name__ == "__main__":
    atexit.unregister(_core_alone)      # the command line is here (see `_core_alone`)
    if __spec__ is None:    # run as a script, not with -m
        _serve_from_bytecode()
    # Make `import mcp_min` (in a TARGET file) find this very module, not a second copy.
    sys.modules.setdefault("mcp_min", sys.modules[__name__])
    sys.exit(main())
