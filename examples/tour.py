"""The tour: the seed capture played again, exactly, each frame followed by the functions of
mcp_min.py that ran for it, traced from that very run.

    python3 examples/agent_walkthrough.py --transport sse --tour     (or http, or stdio)
    ... --tour --startup        the server's start-up and stop listed too (optional reading)

What is played (`replay`): the capture's own frames, VS Code 1.99 over legacy HTTP+SSE with
protocol 2024-11-05: GET /sse, initialize (id 0), notifications/initialized, tools/list (1),
tools/call getUsers (2), tools/call addUser Carson (3), then the client closes the stream. Over
http and stdio the same messages (their servers accept 2024-11-05 too), so the three compare.

The server (the demo's user store) runs in this process, on an event loop in a thread of its own,
with a profiler (sys.setprofile) that writes down each function of mcp_min.py it calls, who
called it and when; the client, in the main thread, speaks to it as any client would: over a
socket (sse, http) or a pipe (stdio: a small relay process between the client's pipes and the
server's FIFOs). The client's trace says where each frame falls among the server's calls.

Which frame a call belongs to. HTTP: a connection's task, and the tasks and threads it starts
(a context variable goes with them), serves the frame whose request it read (matched by method
and path; the client traces a request before it connects, and one connection carries one of
its requests); a `_Connection` method that runs for another connection than its frame's own is
a POST's answer crossing to the GET stream, marked ``⇢``; the GET stream's end, once the client
leaves, is the leaving's. stdio: each line the server takes in (`Session.receive`), and what ran
since its chunk was read. Before the first frame, the server's start; after the client leaves,
the session's end and the server's: both shown apart, after the frames, as one line each
(`--startup` lists them). The client's own code runs in the main thread, not traced.

What a frame shows, by rule. Its path: every function on the way from where the server takes it
in to its landmarks (LANDMARKS: where its bytes are read, its message classified, a session made
or ended, a stream waits or ends, an answer's bytes made and written), to the tables' entries
(route, method and notification handlers, the server's tools and prompts, a tool's check of its
arguments, shown as `tool.check_input`), to each function that reads a table, and to where an
answer crosses to the GET stream, whatever their size. Beside the path, what it calls directly
of MIN_LINES lines or more, but bookkeeping (constructors, timers, accounts): those that read a
table first, then the transports' and the session's steps, then the longer, up to MAX_SHOWN
entries (EXTRAS at least). Each is shown under the nearest shown caller, and says who called it
when that is not the line above. What a group of frames ran, each called by the same function
(or by functions the same one called), is shown once, at the group's first: every frame the
client sent, every POST, every request with an id (the one kind answered); a frame whose own
lines are those of one shown already says so in a line. The tables a lookup reads (no trace
shows one) are named beside the function that reads them. What the server writes for a frame is
listed in the order it wrote it, at the time it wrote it (a POST's 202, on its connection, and
its answer, on the GET stream's, race to the client: it may read the answer first). Then the
whole path of the first GET and the first request, as the reading guide in mcp_min.py gives
them; last, the reading list: every def the frames ran, once, in the file's order, as "read"
(below the door where a transport hands a frame to its own code) or "skim" (the front door
above it, and bookkeeping), with their lines counted.
"""
import ast
import asyncio
import concurrent.futures
import contextvars
import functools
import itertools
import json
import os
import re
import sys
import tempfile
import threading
import time
import typing
from typing import Any as _Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, ".."))     # a checkout: mcp_min.py is one folder up

import mcp_min  # noqa: E402
from mcp_min import Client, _capture_text, _Trace  # noqa: E402

FILE = os.path.abspath(mcp_min.__file__)
CODE_FILE = mcp_min.Server.__init__.__code__.co_filename     # as the code objects spell it
MIN_LINES = 8       # a function shorter than this is a helper: left out, unless on a frame's path
MAX_SHOWN = 6       # a list's entries off its path come to this, with the path's (at least EXTRAS)
EXTRAS = 2
WIDTH, NOTES = 100, 60  # characters a line, and the column where a note begins if it fits
# The tables a trace cannot show: a lookup in them is no call. Named where they are read.
TABLES = ("_ROUTES", "_METHODS", "_NOTIFICATIONS", "_LIFECYCLE", "_TRANSITIONS")
# The landmarks of a frame's path: where its bytes are read, its message is classified, a session
# made or ended, a stream waits for what it carries or ends, and an answer's bytes are made and
# written; at the start, where a tool's schema and check are made, and where the server listens;
# at the stop, where it closes. Every function on the way to one (or to a table's entry, or to a
# function that reads a table) is shown, whatever its size.
LANDMARKS = ("_parse_head", "HttpServer._read_body", "_Lines.feed", "classify",
             "Session.__init__", "Session.close", "_Stream.get", "_Stream.close",
             "Tool._made", "_checker", "HttpServer.start", "HttpServer.close",
             "_Connection.write", "_Connection.send", "_Connection.fields", "_sse_event",
             "_Output.write")
WRITES = ("_Connection.write", "_Connection.send", "_Output.write")   # bytes onto a socket, a pipe
CROSSES = "_Connection.event"   # an answer made an SSE event: on the GET stream's, written at once
# Bookkeeping, never shown off the path: constructors, timers, the accounts of what a client uses
BOOKKEEPING = (".__init__", "_Timer.", "_Account.", "Server.account")


class Def(typing.NamedTuple):
    """A function of mcp_min.py: its def's first and last line, its name as the tour shows it
    (a method's class before it, an inner function's outer one), the tables its own body reads."""
    first: int
    last: int
    name: str
    tables: tuple[str, ...]
    section: str        # the banner it is under ("Core: the session, ...")

    @property
    def size(self):
        return self.last - self.first + 1

    def where(self):
        return f"mcp_min.py:{self.first}-{self.last}"


@functools.lru_cache(maxsize=None)
def read_defs(path=FILE):
    """Every def of the file, by (its code's first line, its name): a code object's first line is
    its first decorator's, when it has one (so both lines are keys). One walk of the tree: each
    name of a table goes to the innermost def around it."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    banners = [(number, line[2:]) for number, line in enumerate(text.split("\n"), 1)
               if line.startswith(("# Core: ", "# Extension: "))]
    made, reads = [], {}     # (node, dotted name) in the file's order; node -> tables read
    stack = [(ast.parse(text), [], None)]      # node, the names around it, the def it is in
    while stack:
        node, outer, inside = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            made.append((node, ".".join(outer + [node.name])))
            outer, inside = outer + [node.name], node
            reads[node] = set()
        elif isinstance(node, ast.ClassDef):
            outer = outer + [node.name]
        elif isinstance(node, ast.Name) and node.id in TABLES and inside is not None:
            reads[inside].add(node.id)
        stack.extend((child, outer, inside) for child in ast.iter_child_nodes(node))
    found = {}
    for node, name in made:
        section = max(((n, title) for n, title in banners if n < node.lineno), default=(0, ""))
        fn = Def(node.lineno, node.end_lineno, name,
                 tuple(t for t in TABLES if t in reads[node]), section[1])
        for line in [node.lineno] + [d.lineno for d in node.decorator_list]:
            found[(line, node.name)] = fn
    return found


@functools.lru_cache(maxsize=None)
def read_tables(path=FILE):
    """Where each of TABLES is made: its name -> Def of the assignment's lines (no def: a table
    is data, read by the lookups that name it)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in TABLES and target.id not in found:
                found[target.id] = Def(node.lineno, node.end_lineno, target.id, (), "")
    return found


# What an HTTP connection's task serves, set when it begins: [its frame's number, its _Connection,
# whether its request has been read (and its frame matched)]
_CONNECTION: contextvars.ContextVar[list] = contextvars.ContextVar("tour_connection")


class Call(typing.NamedTuple):
    frame: int          # the frame it ran for
    fn: Def
    caller: Def | None  # the nearest function of mcp_min.py below it on the stack
    hop: bool           # it writes a POST's answer on the GET stream's connection
    t: float            # when it began (time.monotonic: the client trace's clock, one process)


class Recorder:
    """The profiler of the server's threads, and the client's trace, in one timeline. A frame the
    client sends is begun by the server when it takes it in (`anchor`: a connection's task begins,
    or stdio's one door, Session.receive); a frame of the tour's own when it is marked."""

    def __init__(self, anchor):
        self.defs = read_defs()
        names = {fn.name for fn in self.defs.values()}
        for name in (anchor, _ROUTES_HTTP, _READS_STDIO, *LANDMARKS):
            if name not in names:
                raise LookupError(f"mcp_min.py has no {name}: the tour must learn anew where "
                                  "a frame begins, and its landmarks")
        self.anchor = anchor
        self.calls: list[Call] = []
        # {"mark": str} or a client trace record, with "lines" (as the client's trace shows each
        # record it joins) and "records" (those records)
        self.frames: list[dict] = []
        self.heard = -1     # the frame the client's trace is at
        self.opened: dict[_Any, int] = {}   # a connection of the client's -> the frame it began
        self.sure: set[int] = set()     # frames an HTTP request the server read was
        self.serving = -1   # the frame the server is at
        self.reading = False    # stdio: a chunk is read, its next line not yet taken in
        self.server: _Any = None     # the mcp_min.Server served
        self.start = time.monotonic()   # the client trace's start (its times count from it)
        self.version = None     # the protocol version the server answered initialize with

    def mark(self, text):
        """A frame of the tour's own (start-up, the client leaving, shutdown): no bytes."""
        self.frames.append({"mark": text, "lines": [], "records": []})
        self.heard = self.serving = len(self.frames) - 1

    def record(self, record):
        """A frame the client traced: one it sends begins a frame; one it hears joins the frame
        of the request it answers, else the one that opened its connection, else the last."""
        line = _capture_text(record, None, None, None).split("\n")[0]
        if record["dir"] == "C→S":
            self.frames.append({**record, "lines": [line], "records": [record]})
            self.heard = len(self.frames) - 1
            self.opened[record.get("conn")] = self.heard
            return
        joins = self.heard
        if record.get("kind") == "response":
            joins = next((n for n, frame in enumerate(self.frames) if frame.get("kind") == "request"
                          and frame.get("id") == record.get("id")), joins)
        elif record.get("conn") in self.opened and not record["head"].startswith("("):
            joins = self.opened[record["conn"]]
        self.frames[joins]["lines"].append(line)
        self.frames[joins]["records"].append(record)

    def begin(self):
        """The server takes in the next frame the client sent."""
        self.serving = self.next(self.serving)

    def next(self, number):
        """The frame the client sent after frame `number` (`number` if none)."""
        for after in range(number + 1, len(self.frames)):
            if "dir" in self.frames[after]:
                return after
        return number

    def profile(self, frame, event, arg):
        if event != "call" or frame.f_code.co_filename != CODE_FILE:
            return
        code = frame.f_code
        fn = self.defs.get((code.co_firstlineno, code.co_name))
        if fn is None:      # a lambda, a comprehension
            return
        caller = None
        back = frame.f_back
        while back is not None:
            if back.f_code.co_filename == CODE_FILE:
                caller = self.defs.get((back.f_code.co_firstlineno, back.f_code.co_name))
                if caller is not None:
                    break
            back = back.f_back
        connection = _CONNECTION.get(None)
        if fn.name == _READS_STDIO:   # a chunk of lines: what runs before each is the next's
            self.reading = True
        if fn.name == self.anchor:
            if self.anchor != _BEGINS_HTTP:
                self.begin()
                self.reading = False
            elif connection is None:    # a connection's task begins (not a resumption)
                self.begin()
                connection = [self.serving, None, False]
                _CONNECTION.set(connection)
        if fn.name == _ROUTES_HTTP and connection is not None and not connection[2]:
            # Its request is read: the frame that sent it (connections opened at once, a GET
            # stream's and a POST's, may be taken in in either order)
            connection[2] = True
            request = frame.f_locals["conn"].request
            connection[0] = self.claim(f"{request.method} {request.path}", connection[0])
        own, hop = self.serving, False
        if self.reading:
            own = self.next(own)
        if connection is not None:
            # A connection's work is its request's, but for a stream's end when the client leaves
            opened = connection[0]
            if not (self.frames[opened].get("head", "").startswith("GET")
                    and "mark" in self.frames[own]):
                own = opened
            if fn.name.startswith("_Connection."):     # its writer, or another connection's?
                conn = frame.f_locals.get("self")
                if connection[1] is None:
                    connection[1] = conn
                hop = conn is not connection[1] and self.sends(own)
        self.calls.append(Call(own, fn, caller, hop, time.monotonic()))

    def claim(self, head, guessed):
        """The first frame the client sent as `head` ("POST /mcp") that no request read so far
        was, in place of the one `guessed` when its connection began; `guessed` if none is."""
        for number, frame in enumerate(self.frames):
            if frame.get("head", "").split("?")[0] == head and number not in self.sure:
                self.sure.add(number)
                return number
        return guessed

    def sends(self, number):
        """Whether frame `number` is a message the client sent (its answer may cross)."""
        return self.frames[number].get("kind") in ("request", "notification")


# Where the server begins a frame: a connection's task (HTTP), the one door (stdio: a line; what
# runs once a chunk is read and before its line goes in is that line's)
_BEGINS_HTTP, _BEGINS_STDIO, _READS_STDIO = ("HttpServer._connection", "Session.receive",
                                             "serve_stdio.readable")
_ROUTES_HTTP = "HttpServer._respond"   # a connection's request is read: which frame it is


class _TraceFile:
    """What the client's trace writes to: each record (JSON Lines) to the recorder."""

    def __init__(self, recorder):
        self.recorder = recorder

    def write(self, text):
        for line in text.splitlines():
            self.recorder.record(json.loads(line))

    def flush(self):
        pass


class ServerThread:
    """An event loop in a thread of its own, and its threads (sync tools run there), profiled."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.loop = asyncio.new_event_loop()
        self.pool = concurrent.futures.ThreadPoolExecutor(
            thread_name_prefix="tour-server", initializer=sys.setprofile,
            initargs=(recorder.profile,))
        self.loop.set_default_executor(self.pool)
        self.thread = threading.Thread(target=self._run, name="tour-server", daemon=True)
        self.thread.start()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        sys.setprofile(self.recorder.profile)
        try:
            self.loop.run_forever()
        finally:
            sys.setprofile(None)

    def run(self, coroutine):
        """`coroutine` run on the server's loop, awaited from ours."""
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self.loop))

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.pool.shutdown()
        self.loop.close()


async def _start_http():
    return await mcp_min.start_http(mcp_min.demo_server(), port=0)


async def _idle(http):
    """Until the server holds no connection and no session: the client's leaving is over."""
    while http.connections or http.sessions:
        await asyncio.sleep(0.005)


# stdio: the client's pipes, relayed to two FIFOs that serve_stdio, in this process, reads and
# writes. The relay opens them in the order the server does (a FIFO's open waits for its other end).
RELAY = """import os, sys, threading
def copy(source, to):
    while True:
        data = os.read(source, 65536)
        if not data:
            break
        os.write(to, data)
    os.close(to)
to_server = os.open(sys.argv[1], os.O_WRONLY)
from_server = os.open(sys.argv[2], os.O_RDONLY)
threading.Thread(target=copy, args=(0, to_server)).start()
copy(from_server, 1)
"""


async def _serve_fifos(server, to_server, from_server):
    loop = asyncio.get_running_loop()
    stdin = await loop.run_in_executor(None, os.open, to_server, os.O_RDONLY)
    stdout = await loop.run_in_executor(None, os.open, from_server, os.O_WRONLY)
    try:
        return await mcp_min.serve_stdio(server, stdin, stdout)
    finally:
        os.close(stdin)
        os.close(stdout)    # the relay reads EOF, and ends


async def _demo_server():
    return mcp_min.demo_server()


# The seed capture, as the tour plays it: VS Code 1.99 over legacy HTTP+SSE, protocol 2024-11-05,
# its requests numbered from 0. Over http and stdio the same messages: both servers accept
# 2024-11-05 too (TourTest checks that each answered it), so nothing there is played otherwise.
CAPTURE_VERSION = "2024-11-05"
CAPTURE_CLIENT = {"name": "Visual Studio Code", "version": "1.99"}
CAPTURE_CALLS = (("getUsers", {}), ("addUser", {"name": "Carson", "email": "carson@gmail.com"}))


async def replay(client):
    """The capture's frames after the handshake (initialize, id 0, and notifications/initialized
    are the client's `connect`): tools/list (id 1), then tools/call getUsers (2) and addUser (3).
    The stream closes when `play` closes the client."""
    await client.list_tools()
    for name, arguments in CAPTURE_CALLS:
        await client.call_tool(name, arguments)


def capture_client(target, trace, transport):
    """A client that says what the capture's says: VS Code's clientInfo, protocol 2024-11-05, no
    capabilities (it is given no handlers), its requests numbered from 0."""
    client = Client(target, trace=trace, era="handshake", protocol_version=CAPTURE_VERSION,
                    transport=transport if transport != "stdio" else "auto")
    # Client(name=...) would send mcp_min's own version beside the name: the capture's, whole
    client.client_info = dict(CAPTURE_CLIENT)
    client._ids = itertools.count(0)   # VS Code numbers its requests from 0, mcp_min's from 1
    return client


async def play(transport):
    """The capture replayed over `transport` (`replay`), with the server here, traced: the
    Recorder."""
    anchor = _BEGINS_STDIO if transport == "stdio" else _BEGINS_HTTP
    recorder = Recorder(anchor)
    trace = _Trace(os.devnull, "client")    # JSON Lines, written to the recorder
    trace.file.close()
    trace.file = _TraceFile(recorder)
    recorder.start = trace.start    # the server's writes are shown on the trace's clock
    server = ServerThread(recorder)
    recorder.mark("the server starts")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if transport == "stdio":
                if not hasattr(os, "mkfifo"):
                    raise SystemExit("the tour over stdio needs FIFOs (POSIX): try --transport sse")
                pipes = os.path.join(tmp, "to-server"), os.path.join(tmp, "from-server")
                for path in pipes:
                    os.mkfifo(path)
                demo = await server.run(_demo_server())
                served = server.run(_serve_fifos(demo, *pipes))
                recorder.server = demo
                target = [sys.executable, "-c", RELAY, *pipes]
            else:
                http = await server.run(_start_http())
                recorder.server = http.server
                target = f"http://127.0.0.1:{http.port}/{'sse' if transport == 'sse' else 'mcp'}"
            client = capture_client(target, trace, transport)
            await client.connect()
            recorder.version = client.protocol_version
            try:
                await replay(client)
            finally:
                recorder.mark("the client leaves")
                await client.close()
            if transport == "stdio":
                await served
            else:
                await server.run(_idle(http))
                recorder.mark("the server stops")
                await server.run(http.close())
    finally:
        server.stop()
    return recorder


# --- What a frame shows ------------------------------------------------------------------------

# The sections whose functions are the transports' and the session's own steps
STEPS = ("Core: HTTP", "Core: stdio", "Core: the session")


def entries(recorder, server):
    """The functions that the tables name (routes, methods, notifications) and the server's own
    tools and prompts, and each tool's check of its arguments: each on a frame's path."""
    return set(_entries(recorder, server))


def labels(recorder, server):
    """What a function that ran is called where it is used, when that is not its def's name: a
    tool's check of its arguments is `tool.check_input`, a function `_checker` made."""
    return {fn: label for fn, label in _entries(recorder, server).items() if label}


def _entries(recorder, server):
    codes = [(route.handler, "") for route in mcp_min._ROUTES.values()]
    codes += [(method.handler, "") for method in mcp_min._METHODS.values()]
    codes += [(fn, "") for fn in mcp_min._NOTIFICATIONS.values()]
    for kind in (server.tools, server.prompts, server.resources):
        codes += [(item.fn, "") for item in kind.values()]
    codes += [(tool.check_input, "tool.check_input, made by _checker")
              for tool in server.tools.values() if hasattr(tool, "check_input")]
    found = {}
    for fn, label in codes:
        code = getattr(fn, "__code__", None)
        if code is not None and (code.co_firstlineno, code.co_name) in recorder.defs:
            found.setdefault(recorder.defs[(code.co_firstlineno, code.co_name)], label)
    return found


def tree(calls):
    """The functions of `calls`, each once, in the order they first ran, with the caller of that
    first run and whether it carried a POST's answer across (its callers' crossing counts too)."""
    first, hops = {}, set()
    for call in calls:
        if call.fn not in first:
            first[call.fn] = call.caller
        if call.hop or call.caller in hops:
            hops.add(call.fn)
    return first, hops


def path_of(first, hops, handlers):
    """A frame's path: every function on the way to a table's entry, a function that reads a
    table, a landmark, or where an answer crosses to the GET stream (those too), whatever its
    size."""
    spine = set()
    for fn in first:
        if (fn in handlers or fn.tables or fn.name in LANDMARKS
                or (fn in hops and first[fn] not in hops)):
            while fn is not None and fn not in spine:
                spine.add(fn)
                fn = first.get(fn)
    return spine


def bookkeeping(fn):
    return fn.name.endswith(BOOKKEEPING[0]) and fn.name not in LANDMARKS or fn.name.startswith(
        BOOKKEEPING[1:])


def choose(first, hops, handlers, members=None):
    """The functions worth showing, by rule: the frame's path (`path_of`), among `members` (a
    shared block's, else all); then, beside it, what the path calls directly of MIN_LINES or
    more, but bookkeeping: those that read a table first, then the transports' and the session's
    steps, then the rest, the longer first; as many as make MAX_SHOWN, and EXTRAS at least. A
    frame with no path (the server's start, its stop): the longer first, MAX_SHOWN."""
    members = set(first) if members is None else members
    spine = path_of(first, hops, handlers)
    shown = spine & members
    if not spine:
        return set(sorted((fn for fn in members if fn.size >= MIN_LINES and not bookkeeping(fn)),
                          key=lambda fn: -fn.size)[:MAX_SHOWN])

    def rank(fn):
        return not fn.tables, not fn.section.startswith(STEPS), -fn.size
    beside = sorted((fn for fn in first if fn in members and fn not in spine
                     and first[fn] in spine and fn.size >= MIN_LINES and not bookkeeping(fn)),
                    key=rank)
    return shown | set(beside[:max(EXTRAS, MAX_SHOWN - len(shown))])


def show(first, hops, shown, named=None, callers=None, scope=None, indent="    "):
    """The chosen functions as lines, each under its nearest chosen caller, in the order they
    first ran; beside each, the tables it reads, and those its hidden callees read; what it is
    called where it is used (`named`), and who called it when that is not the line above it
    (`callers`: each function's callers, where a shared block's frames differ). The tables
    named are those read in `scope` (what the list stands for), all if None."""
    named, callers = named or {}, callers or {}
    scope = set(first) if scope is None else scope

    def nearest(fn):
        caller, seen = first.get(fn), set()
        while caller is not None and caller not in shown and caller not in seen:
            seen.add(caller)
            caller = first.get(caller)
        return caller if caller in shown else None
    reads: dict[Def, dict[str, list[str]]] = {fn: {} for fn in shown}    # table -> where
    for fn in first:
        if fn not in scope:
            continue
        owner = fn if fn in shown else nearest(fn)
        if owner is not None:
            for table in fn.tables:
                reads[owner].setdefault(table, []).append("" if owner is fn else fn.name)
    depth: dict[Def, int] = {}
    lines = []
    for fn in first:
        if fn not in shown:
            continue
        parent = nearest(fn)
        depth[fn] = depth[parent] + 1 if parent in depth else 0
        mark = "⇢ " if fn in hops and (parent is None or parent not in hops) else ""
        line = f"{indent}{'  ' * depth[fn]}{mark}{fn.where()}  {fn.name}"
        notes = []
        if fn in named:
            notes.append(named[fn])
        by = [c for c in callers.get(fn, [first.get(fn)]) if c is not None]
        if by and by != [parent]:
            notes.append("by " + " or ".join(c.name for c in by))
        if reads[fn]:
            notes.append("reads " + ", ".join(_where(table, where)
                                              for table, where in reads[fn].items()))
        if mark:
            notes.append("written on the GET stream's connection")
        note = f"[{'; '.join(notes)}]"
        if notes and len(line) <= NOTES and NOTES + 2 + len(note) <= WIDTH:
            line = f"{line:<{NOTES}}  {note}"
        elif notes:     # on a line of its own, below
            lines.append(line)
            line = f"{indent}{'  ' * depth[fn]}    {note}"
        lines.append(line)
    return lines


def shared(firsts):
    """What each frame of a group ran, called by the same function each time (or by functions
    that the same one called: initialize's handler runs at once, another's in a task): each such
    function with its callers, in the order the first frame ran them."""
    common = set.intersection(*(set(first) for first in firsts))
    found = {}
    for fn in firsts[0]:
        if fn not in common:
            continue
        callers = list(dict.fromkeys(first[fn] for first in firsts))
        if len(callers) == 1 or len({first.get(first[fn]) for first in firsts}) == 1:
            found[fn] = callers
    return found


def groups(recorder):
    """The frames that share what they run, each group shown once, at its first frame: every frame
    the client sent; those of one HTTP method (if not all); the requests among them (messages with
    an id: a notification has no answer to send)."""
    sent = [n for n, frame in enumerate(recorder.frames) if "dir" in frame]
    found = [("every request runs", sent)]
    kinds: dict[str, list[int]] = {}
    for n in sent:
        kinds.setdefault(recorder.frames[n]["head"].split()[0], []).append(n)
    for kind, numbers in kinds.items():
        outer = sent
        if 1 < len(numbers) < len(sent):
            found.append((f"every {kind} also runs", numbers))
            outer = numbers
        asks = [n for n in numbers if recorder.frames[n].get("kind") == "request"]
        if 1 < len(asks) < len(outer):
            found.append(("every JSON-RPC request (a message with an id) also runs", asks))
    return found


def in_order(recorder, n, calls):
    """Frame `n`'s lines, what the server wrote in the order it wrote it and at the time it did:
    a POST's 202 (on its own connection) and its answer (on the GET stream's) race to the client
    on two sockets, and the client may read the answer first. On each connection, in turn, a line
    the client read is one of the server's writes there: WRITES on the frame's own connection,
    an answer made into an event (CROSSES) on the GET stream's; the profiler's clock is the
    trace's (one process). A frame whose lines and writes do not pair up so is shown as the
    client read it, and says why when its lines came on two connections."""
    frame = recorder.frames[n]
    heard = frame["records"][1:]
    if "dir" not in frame or not heard:
        return frame["lines"]
    mine = [record for record in heard if record.get("conn") == frame.get("conn")]
    crossed = [record for record in heard if record.get("conn") != frame.get("conn")]
    writes = [call.t for _, call in calls if call.fn.name in WRITES and not call.hop]
    crossings = [call.t for _, call in calls if call.fn.name == CROSSES and call.hop]
    if len(mine) != len(writes) or len(crossed) != len(crossings):
        if not crossed:
            return frame["lines"]
        # One line: the times are the client's, and two sockets may be read in either order
        return frame["lines"] + ["          (as the client read them, off two connections: the "
                                 "server may have written them otherwise)"]
    timed = sorted(zip(writes + crossings, mine + crossed), key=lambda pair: pair[0])
    lines = frame["lines"][:1]
    for t, record in timed:
        written = {**record, "t": round(t - recorder.start, 6)}
        lines.append(_capture_text(written, None, None, None).split("\n")[0])
    return lines


def what(frame):
    """A frame as the client's trace names its message: "request #3 tools/call getUsers"."""
    head = frame["lines"][0]
    for word in (" request #", " notification "):
        if word in head:
            return head[head.index(word) + 1:]
    return head.strip()


def render(recorder, transport, startup=False):
    """The tour's text: frame by frame (what every request runs shown once, at the first), the
    server's start and stop apart (listed with `startup`), the paths whole, the reading list."""
    indexed: dict[int, list[tuple[int, Call]]] = {}
    for i, call in enumerate(recorder.calls):
        indexed.setdefault(call.frame, []).append((i, call))
    trees = {n: tree([call for _, call in indexed.get(n, [])]) for n in range(len(recorder.frames))}
    handlers = entries(recorder, recorder.server)
    named = labels(recorder, recorder.server)
    blocks = []     # (title, its frames, its functions and their callers)
    for title, numbers in groups(recorder):
        found = shared([trees[n][0] for n in numbers])
        for _, outer, taken in blocks:
            if set(numbers) <= set(outer):
                found = {fn: callers for fn, callers in found.items() if fn not in taken}
        blocks.append((title, numbers, found))
    out = [f"The tour over {transport}: the seed capture replayed (protocol {CAPTURE_VERSION}), "
           "each frame as the client's\ntrace shows it, what the server writes in the order and at "
           "the time it wrote it (seconds\nsince the client began: one process, one clock), then "
           "the functions of mcp_min.py that ran\nfor it (file:first-last line of the def), each "
           "under the nearest one shown that called it.\n⇢: where an answer crosses to the GET "
           "stream's connection."]
    if recorder.version != CAPTURE_VERSION:     # the server would not speak the capture's
        out.append(f"(the server answered protocol {recorder.version}, not {CAPTURE_VERSION})")
    paths: dict[tuple[str, ...], str] = {}     # a frame's own lines -> the first frame they were
    for n, frame in enumerate(recorder.frames):
        first, hops = trees[n]
        if frame.get("mark") in APART:     # the server's start and stop: after the frames
            continue
        if "mark" in frame:
            out.append(f"\n({frame['mark']})")
            out += [f"          {line.strip()}" for line in frame["lines"]]
        else:
            out.append("")
            out += in_order(recorder, n, indexed.get(n, []))
        mine = [block for block in blocks if n in block[1]]
        for title, numbers, found in mine:
            if n == numbers[0]:
                out.append(f"  {title} (shown once, here):")
                out += show(first, hops, choose(first, hops, handlers, set(found)), named, found,
                            set(found))
        own = set(first) - set().union(*(set(found) for _, _, found in mine))
        lines = []
        if own:
            lines = show(first, hops, choose(first, hops, handlers, own), named, scope=own)
        if lines and any(n == numbers[0] for _, numbers, _ in mine):
            out.append("  and this one:")
        if lines and tuple(lines) in paths:
            out.append(f"    (the same path as {paths[tuple(lines)]})")
        else:
            out += lines
            if lines and "dir" in frame:
                paths[tuple(lines)] = what(frame)
        if frame.get("kind") == "notification" and not any(
                "response" in line for line in frame["lines"][1:]):
            out.append("    (no answer, so no event: a notification gets none, not even an error)")
    out += apart(recorder, trees, handlers, named, startup)
    out.append("\nThe paths, whole (the reading guide in mcp_min.py's docstring gives them):")
    for n in guided(recorder):
        to, answer = chain(recorder, n, handlers)
        out += wrapped(f"  {about(recorder.frames[n])}: ", to)
        if answer:
            out += wrapped("  its answer: ", answer)
    out += reading(recorder)
    return "\n".join(out)


# --- Apart: the server's start and stop --------------------------------------------------------

STARTS, STOPS = "the server starts", "the server stops"
APART = (STARTS, STOPS)     # marks of no frame of the capture's: shown after the frames


def apart(recorder, trees, handlers, named, listed):
    """The server's start (before the first frame) and stop (after the client left), apart from
    the frames and optional reading: a line each, how many defs ran and their lines (counted as
    the reading list counts them); with `listed` (--startup), their functions too, chosen as a
    frame's are."""
    out = ["", "Apart, optional reading (no frame of the capture's runs it; --startup lists it):"]
    for n, frame in enumerate(recorder.frames):
        if frame.get("mark") not in APART:
            continue
        first, hops = trees[n]
        folded = fold(set(first))
        lines = sum(fn.size for fn in folded)
        when = "before the first frame" if frame["mark"] == STARTS else "after the client left"
        out.append(f"({frame['mark']}, {when}: {len(folded)} defs ran, {lines} lines)")
        if listed:
            out += show(first, hops, choose(first, hops, handlers), named)
    return out


# --- The reading list --------------------------------------------------------------------------

def doors(recorder):
    """Where a frame is handed to the code that is its own: a route's handler (HTTP: above it is
    the front door, the same for every request), or the session's one door, `Session.receive`
    (stdio: what reads the lines before it is its front door; one chunk read may hold two).
    Not the "every request runs" block: over stdio, that is the session's own path."""
    found = {fn for fn in recorder.defs.values() if fn.name == _BEGINS_STDIO}
    for route in mcp_min._ROUTES.values():
        code = route.handler.__code__
        found.add(recorder.defs[(code.co_firstlineno, code.co_name)])
    return found


def below_doors(recorder, numbers, entered):
    """The defs that ran, in frames `numbers`, at a door (`entered`) or below one (called by one,
    or by what one called). A closure the event loop calls (no caller of mcp_min's) runs for its
    outer def: the GET stream's end (`_Connection.hold.client_left`) is `_Connection.hold`'s."""
    outer = enclosing()
    found = set()
    for n in numbers:
        callees: dict[Def | None, set[Def]] = {}     # in this frame: a caller -> what it called
        for call in recorder.calls:
            if call.frame == n:
                callees.setdefault(call.caller, set()).add(call.fn)
        for fn in list(callees.get(None, ())):
            if outer.get(fn) is not None:
                callees.setdefault(outer[fn], set()).add(fn)
        seen = set()    # each frame walked on its own: a def's callees differ from frame to frame
        stack = [fn for called in callees.values() for fn in called if fn in entered]
        while stack:
            fn = stack.pop()
            if fn not in seen:
                seen.add(fn)
                stack.extend(callees.get(fn, ()))
        found |= seen
    return found


@functools.lru_cache(maxsize=None)
def enclosing(path=FILE):
    """Each def of the file -> the innermost def its lines lie in (None: at a module's or a class's
    level). Defs nest, so one pass in the file's order, with the defs still open, finds it."""
    around: dict[Def, Def | None] = {}
    still_open: list[Def] = []
    for fn in sorted(set(read_defs(path).values()), key=lambda fn: (fn.first, -fn.last)):
        while still_open and still_open[-1].last < fn.first:
            still_open.pop()
        around[fn] = still_open[-1] if still_open else None
        still_open.append(fn)
    return around


def fold(fns):
    """`fns` in the file's order, an inner def within its outer one when that is among them too
    (its lines are the outer's): each listed def -> those folded into it."""
    outer = enclosing()
    found: dict[Def, list[Def]] = {}
    for fn in sorted(fns):
        top = fn
        while outer.get(top) in fns:
            top = outer[top]
        found.setdefault(top, [])
        if top is not fn:
            found[top].append(fn)
    return found


def reading_list(recorder):
    """The defs the capture's frames ran (the server's start and stop apart), each once, in the
    file's order, an inner def within its outer one, split in two, each def -> what it folds:
    "read", what the frames themselves do: what ran at a door or below it (`doors`: the legacy
    handlers, the session's path, the method handlers, the registry's call and result, the answer
    crossing to the GET stream); "skim", the plumbing: what ran above a door (HTTP's front door:
    its connection loop, head parsing, peer checks, body reading), and bookkeeping anywhere
    (constructors, timers, accounts: `bookkeeping`). An outer def is read if one it folds is,
    and then what it calls itself is read too (stdio: `serve_stdio`, read for its `send`, ends
    the session when the client leaves)."""
    numbers = [n for n, frame in enumerate(recorder.frames) if frame.get("mark") not in APART]
    ran = {call.fn for call in recorder.calls if call.frame in numbers}
    folded = fold(ran)

    def split(entered):
        below = below_doors(recorder, numbers, entered)
        read = {fn: inner for fn, inner in folded.items()
                if any(one in below and not bookkeeping(one) for one in [fn, *inner])}
        return read, {fn: inner for fn, inner in folded.items() if fn not in read}
    read, _ = split(doors(recorder))
    # Once more, each def read a door too: what an outer def read whole calls itself is read
    return split(doors(recorder) | set(read))


def reading(recorder):
    """The reading list as lines: "read", then "skim", each def with its lines, and the totals."""
    read, skim = reading_list(recorder)
    total = sum(fn.size for fn in [*read, *skim])
    out = ["", f"The reading list: every def the capture's frames ran, once, in the file's order "
               f"(an inner def\nwith its outer one): {len(read) + len(skim)} defs, {total} lines "
               "in all."]
    for title, listed, why in (
            ("read", read, "what the frames do (from the door where a frame is handed to its\n"
                           "  own code, a route's handler or Session.receive, down)"),
            ("skim", skim, "the plumbing (above that door: the front door, the lines read; and\n"
                           "  bookkeeping anywhere: constructors, timers, accounts)")):
        lines = sum(fn.size for fn in listed)
        out.append(f"  {title}: {len(listed)} defs, {lines} lines, {why}")
        for fn, inner in listed.items():
            line = f"    {fn.where()}  {fn.name}"
            if inner:   # "_Connection.hold  [with its client_left, direct]"
                line += f"  [with its {', '.join(one.name[len(fn.name) + 1:] for one in inner)}]"
            out.append(line)
    # The tables the frames' lookups read: data no trace shows, each where it is made
    made = read_tables()
    tables = sorted({made[name] for fn in folded_defs({**read, **skim}) for name in fn.tables},
                    key=lambda table: table.first)
    out.append(f"  tables: {len(tables)}, {sum(t.size for t in tables)} lines, the data the defs "
               "above look up (named\n  where they read them, in the frames)")
    # (as "NAME  (mcp_min.py:FIRST-LAST)": a line that names a def begins with its place)
    out.extend(f"    {table.name}  ({table.where()})" for table in tables)
    return out


def folded_defs(listed):
    """The defs of a reading list's part, each with those it folds."""
    return [one for fn, inner in listed.items() for one in [fn, *inner]]


# --- The README's excerpt ----------------------------------------------------------------------

README = os.path.join(HERE, "..", "README.md")
COMMAND = "python3 examples/agent_walkthrough.py --transport sse --tour"


def excerpt(text):
    """The README's excerpt of the sse tour: from GET /sse to the frame before the first tool
    call, then the paths, whole, and the reading list's totals; session ids cut to 8 hex digits."""
    lines = text.split("\n")
    start = next(k for k, line in enumerate(lines) if " C→S GET /sse" in line)
    stop = next(k for k, line in enumerate(lines) if " C→S " in line and "tools/call" in line)
    paths = next(k for k, line in enumerate(lines) if line.startswith("The paths, whole"))
    while stop > start and not lines[stop - 1].strip():
        stop -= 1
    # The reading list by its totals alone: its hundred lines of defs are the command's to print
    listed = next(k for k, line in enumerate(lines) if line.startswith("The reading list"))
    totals = [line for line in lines[listed:] if not line.startswith("    mcp_min.py:")]
    part = "\n".join(lines[start:stop] + ["", "   ...", ""] + lines[paths:listed] + totals
                     + ["  (each def of both, with its lines: the command above)"]).rstrip("\n")
    return re.sub(r"\b([0-9a-f]{8})[0-9a-f]{24}\b", "\\1…", part)


def paste(text, path=README):
    """The README's excerpt replaced with the one of `text` (the sse tour's output)."""
    with open(path, encoding="utf-8") as f:
        readme = f.read()
    before, after = readme.split(COMMAND + "\n```\n\n```text\n", 1)
    after = after.split("```", 1)[1]
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{before}{COMMAND}\n```\n\n```text\n{excerpt(text)}\n```{after}")


def chain(recorder, number, handlers):
    """The path the server took for frame `number`: its callers from the first down to the last
    table entry that ran (a route's handler, a method's), then on to where its answer crossed to
    the GET stream, if it did."""
    calls = [call for call in recorder.calls if call.frame == number]
    first, hops = tree(calls)

    def path(fn):
        names = []
        while fn is not None and fn.name not in names:
            names.insert(0, fn.name)
            fn = first.get(fn)
        return names
    ran = [fn for fn in first if fn in handlers and fn.section.startswith("Core")]
    to = path(ran[-1]) if ran else []
    crossed = [fn for fn in first if fn in hops and first[fn] not in hops]
    answer = []
    if crossed:
        answer = path(crossed[0])
        common = 0
        while common < min(len(to), len(answer)) and to[common] == answer[common]:
            common += 1
        answer = answer[common - 1:]    # from where it leaves the request's path
    return to, answer


def _where(table, readers):
    """A table, and which hidden callees read it ("" is the function shown)."""
    others = ", ".join(dict.fromkeys(name for name in readers if name))
    if not others:
        return table
    return f"{table} ({'also ' if '' in readers else ''}in {others})"


def wrapped(head, names, width=WIDTH):
    """A path as lines of `width` at most, each line after the first going on with "->" (as the
    reading guide writes them)."""
    lines, line = [], head + names[0]
    for name in names[1:]:
        if len(line) + len(name) + 4 > width:
            lines.append(line)
            line = "      ->"
        line += f" -> {name}" if not line.endswith("->") else f" {name}"
    return lines + [line]


def guided(recorder):
    """The frames whose paths the reading guide gives: the first GET, the first request."""
    found = {}
    for n, frame in enumerate(recorder.frames):
        if frame.get("head", "").startswith("GET"):
            found.setdefault("GET", n)
        elif frame.get("kind") == "request":
            found.setdefault("request", n)
    return sorted(found.values())


def about(frame):
    """A frame as the reading guide names it: "GET /sse", "POST /messages initialize"."""
    words = [frame["head"].split("?")[0]]
    if frame.get("method"):
        words.append(frame["method"])
    return " ".join(words)
