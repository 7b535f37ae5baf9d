"""Tests for mcp_min.py, in the file's order: the core's tests first, section by section, then
each extension's (issue 35). The core is what mcp_min.py holds above its first "# Extension:"
banner, and stands alone: CI runs this file against that cut, where every extension's test skips
(`needs_trace`, `needs_cli` ...). A test calls pure functions, or drives a Session wired in memory
to a list that collects what it sends, or real pipes (stdio: subprocesses, or serve_stdio in
process) and real sockets on 127.0.0.1 port 0 (HTTP), sending exact bytes.

Adversarial cases follow SECURITY.md section 3 (groups B-I); the item number
is given where a test pins one down; a regression test names the bug it
pins.

Run: ``python -m unittest`` from the directory holding mcp_min.py.
"""

import ast
import argparse
import asyncio
import atexit
import base64
import collections
import concurrent.futures
import contextlib
import dataclasses
import doctest
import enum
import functools
import hmac
import importlib.util
import inspect
import io
import itertools
import json
import logging
import os
import pathlib
import py_compile
import queue
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import types
import typing
import unittest
from unittest import mock
from urllib.parse import parse_qsl

import mcp_min
from mcp_min import (
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, LATEST_PROTOCOL_VERSION, METHOD_NOT_FOUND,
    PARSE_ERROR, PROTOCOL_VERSIONS, RESOURCE_NOT_FOUND, Content, Context, McpError, Server,
    Session, classify, decode, encode, start_http, validate,
)

HERE = os.path.dirname(os.path.abspath(mcp_min.__file__))
MCP_MIN = os.path.join(HERE, "mcp_min.py")
# Child Pythons start with -S (no `site`): mcp_min and the targets need only the standard
# library, mcp_min sees the same argv, and here site's .pth files cost some 30 ms of each
# child's start-up; the suite starts over a hundred of them.
PYTHON = (sys.executable, "-S")
PYTHON_CMD = f"{sys.executable} -S"
# Servers that a test only talks to start as `python -S -m mcp_min` (run from HERE, or with
# HERE on PYTHONPATH): the same main() on the same argv, from the bytecode setUpModule wrote
# (a script is compiled afresh at every start: half of a child's start-up here). Tests of the
# command line and of start-up run `python mcp_min.py` as a user does.
SERVE = (sys.executable, "-S", "-m", "mcp_min")
SERVE_CMD = " ".join(SERVE)
# The demo's user store as a script serves it (`server.run()`: the core alone); give it --db.
USER_STORE = os.path.join(HERE, "examples", "user_store.py")
ROOT = HERE
TIMEOUT = 10.0          # upper bound on any single wait; tests normally take milliseconds


def extension(marker, what):
    """A test (class or method) of an extension: skipped when mcp_min is cut at its core (the lines
    above its first "# Extension:" banner, which CI tests alone). `marker`: a module attribute
    that only that extension defines."""
    return unittest.skipUnless(hasattr(mcp_min, marker),
                               f"needs the {what} extension (mcp_min cut at its core)")


# The extensions, in the file's order
needs_schema_keywords = extension("_ref", "JSON Schema keywords")
needs_2026 = extension("MODERN_VERSIONS", "2026-07-28 era")
needs_resumable = extension("_Resumable", "resumable streams")
needs_tasks = extension("TaskStore", "tasks")
needs_skills = extension("_add_skills", "skills")
needs_auth_server = extension("ResourceServer", "authorization (resource server)")
needs_auth_client = extension("OAuth", "authorization (client)")
needs_trace = extension("_Trace", "trace")
needs_deploy = extension("_Forwarded", "deployment options")
needs_cli = extension("main", "command line and demo")


def runs_beside(cls):
    """A class whose tests drive other processes and wait on them, and touch nothing in this one
    that another test patches or reads (no mock.patch, sys.stdin or sys.stderr, signal handler,
    preexec_fn, mcp_min setting): when the whole module runs, a thread runs such classes beside
    the rest of the suite, and what their tests did is reported in their place, as if they had run
    there (`load_tests`)."""
    cls.runs_beside = True
    return cls


class _Recorded:
    """A TestResult that keeps each call made to it (startTest, addSuccess, addSkip ...) to make it
    again on the real one; with what unittest's suites read of a result."""

    def __init__(self, previous):
        self.calls, self.shouldStop, self.failfast, self._moduleSetUpFailed = [], False, False, False
        self._testRunEntered = True         # not the top level: no module fixtures here
        self._previousTestClass = previous  # of this module: its setUpModule is not run again

    def __getattr__(self, name):
        if name.startswith(("start", "stop", "add")):
            return lambda *args: self.calls.append((name, args))
        raise AttributeError(name)


class _Beside(unittest.TestSuite):
    """A class's tests that may run beside the others (`runs_beside`): the first to claim them
    runs them, the thread of `_WithBeside` (which keeps what they did, to report it in the suite's
    thread) or the suite itself, when it comes to them first."""

    claimed = threading.Lock()

    def __init__(self, tests):
        super().__init__(tests)
        self.done, self.recorded, self.taken = threading.Event(), _Recorded(_Beside), False

    def claim(self):
        with self.claimed:
            taken, self.taken = self.taken, True
        return not taken

    def run_beside(self):
        if not self.claim():
            return
        try:
            suite = unittest.TestSuite(list(self))
            suite.run(self.recorded)
            suite._tearDownPreviousClass(None, self.recorded)     # the class's tearDownClass
        except BaseException:   # noqa: BLE001 — said as the class's error, in its place
            self.recorded.addError(unittest.suite._ErrorHolder(f"runs_beside ({self})"), sys.exc_info())
        finally:
            self.done.set()

    def report(self, result):
        """What the tests did, said to `result` as they did it."""
        for name, args in self.recorded.calls:
            made = getattr(result, name, None)     # addDuration: 3.12 on
            if made is not None:
                made(*args)


class _WithBeside(unittest.TestSuite):
    """The module's classes, in order; those of `runs_beside` classes also run by a thread of its
    own, which the suite never waits for: a class that thread runs is reported once it is done,
    after the classes the suite ran meanwhile."""

    def run(self, result, debug=False):
        beside = [suite for suite in self if isinstance(suite, _Beside)]
        threading.Thread(target=lambda: [suite.run_beside() for suite in beside], name="beside",
                         daemon=True).start()
        running = []
        for suite in list(self):
            if result.shouldStop:
                break
            if isinstance(suite, _Beside) and not suite.claim():
                running.append(suite)
            else:
                suite(result)       # here and now, as any class
            for done in [suite for suite in running if suite.done.is_set()]:
                running.remove(done)
                done.report(result)
        for suite in running:
            suite.done.wait()
            suite.report(result)
        return result


def setUpModule():
    # Tool failures are logged with tracebacks by design; keep the test output clean.
    logging.getLogger("mcp_min").addHandler(_quiet)
    # IsolatedAsyncioTestCase runs its loop in debug mode, which warns of every step over 0.1 s
    # ("Executing <Task ...> took 0.2 seconds"): tests start processes and wait on them in steps
    # on purpose, and a loaded machine is slow. A server's own loop runs without debug mode.
    logging.getLogger("asyncio").addFilter(_no_slow_step_warning)
    # For SERVE and for targets' `import mcp_min` (__pycache__ is ignored by git); if it cannot
    # be written, children compile mcp_min.py themselves.
    with contextlib.suppress(OSError, py_compile.PyCompileError):
        py_compile.compile(MCP_MIN, doraise=True)


def tearDownModule():
    logging.getLogger("mcp_min").removeHandler(_quiet)
    logging.getLogger("asyncio").removeFilter(_no_slow_step_warning)


def _no_slow_step_warning(record):
    return not (str(record.msg).startswith("Executing ") and "took %.3f seconds" in str(record.msg))


_quiet = logging.NullHandler()


def init_params(version=LATEST_PROTOCOL_VERSION, capabilities=None):
    return {"protocolVersion": version, "capabilities": capabilities or {},
            "clientInfo": {"name": "test-client", "version": "1.0"}}


def rpc(id_, method, params=None):
    message = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def note(method, params=None):
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(id_, name, arguments=None, meta=None):
    params = {"name": name, "arguments": arguments or {}}
    if meta is not None:
        params["_meta"] = meta
    return rpc(id_, "tools/call", params)


def tool_text(response):
    """The first text block of a tools/call response."""
    return response["result"]["content"][0]["text"]


async def until(predicate, what, timeout=TIMEOUT):
    """Wait for something that must happen (a barrier), polling; fail if it never does."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.002)


def make_server(instructions="Be nice."):
    """A server with one of everything; `state` lets tests see and steer tools."""
    server = Server("test-server", version="1.2.3", instructions=instructions)
    state = types.SimpleNamespace(calls=0, gate=asyncio.Event(), entered=asyncio.Event(),
                                  thread_gate=threading.Event(), cancelled=False,
                                  finished=False, flood_done=asyncio.Event())

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def echo(text: str) -> str:
        await asyncio.sleep(0.005)      # lets concurrent calls overlap
        return text

    @server.tool()
    def count() -> str:
        state.calls += 1
        return "counted"

    @server.tool()
    async def wait(label: str = "") -> str:
        state.entered.set()
        try:
            await state.gate.wait()
        except asyncio.CancelledError:
            state.cancelled = True
            raise
        state.finished = True
        return label or "released"

    @server.tool()
    def blocking() -> str:
        state.thread_gate.wait(TIMEOUT)     # blocks its thread, never the loop
        return "unblocked"

    @server.tool()
    async def refuse() -> str:
        raise McpError(INVALID_PARAMS, "No such user: bob.")

    @server.tool()
    async def leak() -> str:
        raise ValueError("token=abc /home/u/.ssh/id_rsa")

    @server.tool()
    async def steps(ctx: Context, n: int = 3) -> str:
        for i in range(1, n + 1):
            ctx.progress(i, n, f"step {i}")
            ctx.progress(i, n)              # not increasing: must not be sent
            await asyncio.sleep(0)
        return "done"

    @server.tool()
    async def chat(ctx: Context) -> str:
        await ctx.log("debug", "d")
        ctx.log("info", "i")
        ctx.log("warning", "w", logger="test")
        ctx.log("error", "e")
        return "logged"

    @server.tool()
    async def ask_model(ctx: Context, prompt: str) -> str:
        reply = await ctx.sample(prompt, max_tokens=50, system_prompt="Be brief.")
        return reply["content"]["text"]

    @server.tool()
    async def ask_user(ctx: Context) -> dict:
        return await ctx.elicit("Your name?", {"name": {"type": "string"}})

    @server.tool()
    async def roots(ctx: Context) -> list:
        return [root["uri"] for root in await ctx.list_roots()]

    @server.tool()
    async def flood(ctx: Context, n: int, size: int) -> str:
        await state.gate.wait()
        blob = "x" * size
        for i in range(1, n + 1):
            ctx.progress(i, n, blob)
            await asyncio.sleep(0)
        state.flood_done.set()
        return "flooded"

    @server.resource("config://app", mime_type="application/json")
    def config() -> dict:
        """App configuration."""
        return {"debug": True}

    @server.resource("users://{name}/profile")
    def profile(name: str) -> str:
        return f"profile of {name}"

    @server.resource("blob://logo", mime_type="image/png")
    def logo() -> bytes:
        return b"\x89PNG"

    @server.prompt()
    def review(code: typing.Annotated[str, "The code to review"], style: str = "short") -> str:
        """Review some code."""
        return f"Review ({style}): {code}"

    @server.completion("review", "style")
    def complete_style(value: str) -> list:
        return [s for s in ("short", "long", "loud") if s.startswith(value)]

    return server, state


##############################################################################
# THE CORE: the tests of what mcp_min.py holds above its first "# Extension:" banner. CI
# runs them against that cut alone (.ci/run), in the core's order; none needs an extension.
##############################################################################

##############################################################################
# The module: its names, its doctests, its types
##############################################################################

class ModuleTest(unittest.TestCase):
    def test_all_names_exist(self):
        for name in mcp_min.__all__:
            self.assertTrue(hasattr(mcp_min, name), name)

    def test_doctests_run(self):
        # STYLE.md 10: the docstring tour runs.
        result = doctest.testmod(mcp_min, verbose=False, report=False)
        self.assertGreater(result.attempted, 0)
        self.assertEqual(result.failed, 0)

    def test_readme_serve_targets_exist(self):
        # Issue 33: the OAuth example served an app.py:server that is not there.
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            targets = re.findall(r"mcp_min\.py serve ([\w./-]+\.py)", f.read())
        self.assertTrue(targets)
        for target in targets:
            self.assertTrue(os.path.exists(os.path.join(HERE, target)), target)

    def test_version_and_limits_are_named(self):
        self.assertRegex(mcp_min.__version__, r"^\d+\.\d+\.\d+")
        self.assertEqual(PROTOCOL_VERSIONS, ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"))
        self.assertEqual(LATEST_PROTOCOL_VERSION, "2025-11-25")
        self.assertEqual(mcp_min.MAX_LINE_BYTES, 16 * 1024 * 1024)


class TypingTest(unittest.TestCase):
    """Issue 29: mcp_min.py copied into a typed project. The user's file (the README's server, a
    progress call, a log, a resource, a prompt, the in-memory client, and one bug of the user's
    own) gets exactly that bug under `mypy --strict` and pyright; the copied file none under mypy
    (for this Python and for 3.10, the oldest supported), pyright and `ruff check`, each with its
    defaults (no config file). The pinned tools are in .peers/typecheck ($TYPECHECK_HOME), where
    .ci/typecheck-tools puts them; without them, the class is skipped."""

    USER = '''\
import argparse
import asyncio

from mcp_min import Client, Context, Server

server = Server("weather")


@server.tool()
def forecast(city: str, days: int = 1) -> str:
    """Tell the weather for a city."""
    return f"{city}: sunny for {days} day(s)"


@server.tool
async def trip(cities: list[str], ctx: Context) -> list[str]:
    """The forecast for each stop of a trip."""
    await ctx.log("info", f"planning {len(cities)} stops")
    forecasts = []
    for done, city in enumerate(cities, 1):
        forecasts.append(forecast(city))
        await ctx.progress(done, len(cities), city)
    return forecasts


@server.resource("weather://{city}", mime_type="text/plain")
def report(city: str) -> str:
    """Today's report for a city."""
    return forecast(city)


@server.prompt()
def packing(city: str, days: int = 3) -> str:
    """Ask what to pack for a trip."""
    return f"What should I pack for {days} days in {city}? {forecast(city, days)}"


wrong: int = forecast("Oslo")  # the user's own bug: forecast returns a str


async def main() -> None:
    async with Client(server) as client:
        print([tool["name"] for tool in await client.list_tools()])
        result = await client.call_tool("trip", {"cities": ["Oslo", "Rome"]}, on_progress=print)
        print(result["content"], result.get("isError", False))
        print((await client.read_resource("weather://Oslo"))["contents"])
        print((await client.get_prompt("packing", {"city": "Rome"}))["messages"])


if __name__ == "__main__":
    asyncio.run(main())
'''
    BUG_LINE = USER.splitlines().index('wrong: int = forecast("Oslo")  # the user\'s own bug: '
                                       'forecast returns a str') + 1

    started = None      # {name: (process, its output file)}, or the reason they cannot run

    @classmethod
    def start(cls):
        """The checkers, all at once (pyright's 10-15 s is the whole wait), each a process of its
        own on a copy of mcp_min.py and the user's file: `load_tests` starts them as the whole
        module loads, so that they run beside the tests before this class; or setUpClass."""
        if cls.started is not None:
            return
        tools = os.environ.get("TYPECHECK_HOME") or os.path.join(HERE, ".peers", "typecheck")
        mypy, ruff = os.path.join(tools, "bin", "mypy"), os.path.join(tools, "bin", "ruff")
        pyright = os.path.join(tools, "node_modules", ".bin", "pyright")
        if not all(map(os.path.exists, (mypy, ruff, pyright))) or not shutil.which("node"):
            cls.started = f"no mypy, pyright and ruff in {tools} (.ci/typecheck-tools)"
            return
        mypy_options = ("--cache-dir", os.devnull, "--config-file", "", "-O", "json")
        runs = {"mypy --strict": [mypy, "--strict", *mypy_options, "weather.py"],
                "mypy": [mypy, *mypy_options, "mcp_min.py"],
                "mypy, as a user runs it": [mypy, *mypy_options, "weather.py", "mcp_min.py"],
                "mypy 3.10": [mypy, "--python-version", "3.10", *mypy_options, "mcp_min.py"],
                "pyright": [pyright, "--outputjson", "weather.py", "mcp_min.py"],   # one run, both
                "ruff": [ruff, "check", "--isolated", "--no-cache", "--output-format", "json",
                         "mcp_min.py"],
                "python": [*PYTHON, "weather.py"]}
        env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
        cls.tmp = tempfile.mkdtemp()
        atexit.register(cls.stop)       # should the suite end before the class runs
        shutil.copy(MCP_MIN, cls.tmp)
        with open(os.path.join(cls.tmp, "weather.py"), "w", encoding="utf-8") as f:
            f.write(cls.USER)
        cls.started = {}
        nice = ["nice", "-n", "10"] if shutil.which("nice") else []     # the tests' CPU first
        for name, argv in runs.items():     # output to files: no pipe fills while nobody reads it
            out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
            cls.started[name] = (subprocess.Popen([*nice, *argv], cwd=cls.tmp, env=env, stdout=out,
                                                  stderr=err, text=True), out, err)

    @classmethod
    def stop(cls):
        """The checkers' processes killed (those still running), their files closed, the copy gone."""
        if isinstance(cls.started, dict):
            for process, out, err in cls.started.values():
                process.kill()
                process.wait()
                out.close()
                err.close()
            cls.started = {}
        if getattr(cls, "tmp", None):
            shutil.rmtree(cls.tmp, ignore_errors=True)
            cls.tmp = None

    @classmethod
    def setUpClass(cls):
        cls.start()
        if isinstance(cls.started, str):
            raise unittest.SkipTest(cls.started)
        try:
            cls.out = {}
            for name, (process, out, err) in cls.started.items():
                process.wait(600)
                out.seek(0)
                err.seek(0)
                cls.out[name] = (out.read(), err.read(), process.returncode)
        finally:
            cls.stop()      # each still running only after a timeout
        cls.errors = {name: cls.parse(name, *cls.out[name]) for name in cls.out if name != "python"}

    @staticmethod
    def parse(tool, stdout, stderr, code):
        """[(file, line, code, message)] of each error, in the tool's words. A tool that did
        not get as far as checking (exit status 2 and up) is an error of its own."""
        if code not in (0, 1):
            return [("mcp_min.py", 0, "crash", f"{tool} exited {code}: {stderr[-2000:]}"),
                    ("weather.py", 0, "crash", f"{tool} exited {code}: {stderr[-2000:]}")]
        if tool.startswith("mypy"):
            found = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
            return [(e["file"], e["line"], e["code"], e["message"]) for e in found
                    if e["severity"] == "error"]
        if tool == "pyright":
            return [(os.path.basename(d["file"]), d["range"]["start"]["line"] + 1, d.get("rule"),
                     d["message"].split("\n")[0])
                    for d in json.loads(stdout)["generalDiagnostics"]
                    if d["severity"] in ("error", "warning")]     # "lints clean": no warning either
        return [(os.path.basename(d["filename"]), d["location"]["row"], d["code"], d["message"])
                for d in json.loads(stdout)]

    def expect(self, tool, name, expected):
        """`tool` found the errors `expected` ([(line, code)]) in the file `name`, no others."""
        errors = [(line, code, message) for file, line, code, message in self.errors[tool] if file == name]
        if [(line, code) for line, code, _ in errors] != expected:
            self.fail(f"{tool}: {len(errors)} errors in {name}, expected {expected}:" + "".join(
                f"\n  {name}:{line}: {code}: {message[:150]}" for line, code, message in errors[:20]))

    def test_the_user_file_runs(self):
        stdout, stderr, _ = self.out["python"]
        self.assertIn("Oslo: sunny for 1 day(s)", stdout, stderr)

    def test_a_users_mypy_says_nothing_of_ours(self):
        # Issue 40: 47 annotation-unchecked notes on mcp_min.py in every run of a user's mypy.
        said = [json.loads(line) for line in self.out["mypy, as a user runs it"][0].splitlines()
                if line.startswith("{")]
        self.assertEqual([s["message"] for s in said if s["file"] == "mcp_min.py"], [])
        self.assertTrue(any(s["file"] == "weather.py" for s in said))   # it did check the user's

    def test_the_users_bug_alone_under_mypy_strict(self):
        self.expect("mypy --strict", "weather.py", [(self.BUG_LINE, "assignment")])

    def test_the_users_bug_alone_under_pyright(self):
        self.expect("pyright", "weather.py", [(self.BUG_LINE, "reportAssignmentType")])

    def test_the_copied_file_is_clean_under_mypy(self):
        self.expect("mypy", "mcp_min.py", [])

    def test_the_copied_file_is_clean_under_mypy_for_python_3_10(self):
        # What 3.10's typing lacks (typing.Self, NotRequired, ...) is an error there.
        self.expect("mypy 3.10", "mcp_min.py", [])

    def test_the_copied_file_is_clean_under_pyright(self):
        self.expect("pyright", "mcp_min.py", [])

    def test_the_copied_file_is_clean_under_ruff(self):
        self.expect("ruff", "mcp_min.py", [])



def load_tests(loader, tests, pattern):
    """The whole module loads (`python -m unittest`): TypingTest's checkers, the suite's slowest
    (some 12 s of CPU), start now, beside the tests that come before theirs; the classes that may
    run beside the others (`runs_beside`) will."""
    def each(suite):
        for test in suite:
            yield from each(test) if isinstance(test, unittest.TestSuite) else (test,)
    if any(isinstance(test, TypingTest) for test in each(tests)):
        TypingTest.start()

    classes = []        # the loader's suites of one class each, in order
    for suite in tests:
        cases = list(suite) if isinstance(suite, unittest.TestSuite) else [suite]
        beside = cases and all(not isinstance(case, unittest.TestSuite) and
                               getattr(type(case), "runs_beside", False) for case in cases)
        classes.append(_Beside(cases) if beside else suite)
    return _WithBeside(classes)


##############################################################################
# Core: the protocol's numbers, its errors, and JSON-RPC framing
##############################################################################

class DecodeTest(unittest.TestCase):
    """JSON-RPC framing: decode (SECURITY.md R20, E32-E38, E45)."""

    def assertCode(self, data, code):
        with self.assertRaises(McpError) as caught:
            decode(data)
        self.assertEqual(caught.exception.code, code, data[:80])

    def test_bytes_and_str(self):
        self.assertEqual(decode(b'{"a": [1, "x", null, true]}'), {"a": [1, "x", None, True]})
        self.assertEqual(decode('{"a": 1}'), {"a": 1})
        self.assertEqual(decode(bytearray(b"[]")), [])

    def test_duplicate_keys_are_invalid_request(self):
        self.assertCode(b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}',
                        INVALID_REQUEST)
        self.assertCode(b'{"params":{"a":1,"a":2}}', INVALID_REQUEST)

    def test_nan_and_infinity_rejected(self):
        for constant in ("NaN", "Infinity", "-Infinity"):
            self.assertCode('{"x": %s}' % constant, PARSE_ERROR)

    def test_huge_integer_rejected(self):
        self.assertCode('{"jsonrpc":"2.0","id":%s,"method":"ping"}' % ("9" * 5000), PARSE_ERROR)

    def test_deep_nesting_is_a_parse_error_not_recursion_error(self):
        self.assertCode("[" * 200_000 + "]" * 200_000, PARSE_ERROR)
        self.assertCode('{"a":' * 100_000 + "1" + "}" * 100_000, PARSE_ERROR)

    def test_bad_utf8(self):
        self.assertCode(b'{"a":"\xff"}', PARSE_ERROR)
        self.assertCode(b"\xff\xfe", PARSE_ERROR)

    def test_not_json(self):
        for data in (b"", b"   ", b"\x00", b"hello",
                     b'{"jsonrpc":"2.0","id":1,"method":"ping"', b'{"a":1} x'):
            self.assertCode(data, PARSE_ERROR)

    def test_lone_surrogate_is_accepted_and_encodes_safely(self):
        value = decode('{"t":"\\ud800"}')
        self.assertEqual(value["t"], "\ud800")
        self.assertEqual(decode(encode(value)), value)


class EncodeTest(unittest.TestCase):
    def test_compact_ascii(self):
        self.assertEqual(encode({"a": "é", "b": [1, 2]}), b'{"a":"\\u00e9","b":[1,2]}')

    def test_lone_surrogate_stays_escaped(self):
        data = encode({"t": "\ud800"})
        self.assertEqual(data, b'{"t":"\\ud800"}')
        data.decode("ascii")

    def test_line_separators_never_raw(self):
        data = encode({"t": "a\u2028b\u0085c\nd\re"})
        self.assertNotIn(b"\n", data)
        self.assertNotIn(b"\r", data)
        self.assertNotIn("\u2028".encode(), data)
        self.assertEqual(json.loads(data)["t"], "a\u2028b\u0085c\nd\re")

    def test_nan_never_emitted(self):
        with self.assertRaises(ValueError):
            encode({"x": float("nan")})


class ClassifyTest(unittest.TestCase):
    """classify: PROTOCOL.md 2.2, SECURITY.md E38-E41."""

    def assertInvalid(self, message):
        with self.assertRaises(McpError) as caught:
            classify(message)
        self.assertEqual(caught.exception.code, INVALID_REQUEST, message)

    def test_kinds(self):
        self.assertEqual(classify(rpc(0, "ping")), "request")         # id 0 is an id
        self.assertEqual(classify(rpc("abc", "ping", {})), "request")
        self.assertEqual(classify(note("notifications/initialized")), "notification")
        self.assertEqual(classify({"jsonrpc": "2.0", "id": 3, "result": {}}), "response")
        self.assertEqual(classify({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -1, "message": "x"}}), "response")

    def test_bad_id_types(self):
        for bad in (True, False, 1.5, 100.0, None, {}, [], [1]):
            self.assertInvalid({"jsonrpc": "2.0", "id": bad, "method": "ping"})

    def test_one_and_string_one_are_both_ids(self):
        self.assertEqual(classify(rpc(1, "ping")), "request")
        self.assertEqual(classify(rpc("1", "ping")), "request")

    def test_member_names_are_exact(self):
        for key in ("Method", "METHOD", "method\u0000"):
            self.assertInvalid({"jsonrpc": "2.0", "id": 1, key: "tools/call"})
        self.assertInvalid({"jsonrpc": "2.0", "id": 1, "method": "ping", "method\u0000": "tools/call"})
        self.assertInvalid({"jsonrpc": "2.0", "id": 1, "method": "ping", "paramſ": {}})

    def test_envelope(self):
        self.assertInvalid({"jsonrpc": "1.0", "id": 1, "method": "ping"})
        self.assertInvalid({"id": 1, "method": "ping"})
        self.assertInvalid({"jsonrpc": "2.0", "id": 1, "method": 5})
        self.assertInvalid({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}})
        self.assertInvalid({"jsonrpc": "2.0", "id": 1})
        for not_object in ([], "x", 1, None):
            self.assertInvalid(not_object)


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("MCP_TOKEN", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = HERE
    env.update(extra)
    return env


# Issue 40: a test that signals its child starts it with those signals at their default (`cmd &`
# in a script starts the suite with SIGINT ignored; its children inherit that, exec keeps it, and
# Python keeps it at its start). A Python resets them, then execs the command (the same process):
# not preexec_fn, unsafe in a process with threads (`runs_beside`), nor `sh -c 'trap - INT; ...'`,
# which cannot undo a signal ignored on entry (POSIX). SIGPIPE and SIGXFSZ, which a Python ignores
# at its start, as Popen's restore_signals has them too.
_AT_DEFAULT = (sys.executable, "-S", "-c", "import os, signal, sys\n"
               "for name in ('SIGINT', 'SIGTERM', 'SIGPIPE', 'SIGXFSZ'):\n"
               "    signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
               "os.execvp(sys.argv[1], sys.argv[1:])")


def signals_at_default(argv):
    """`argv`, to run with SIGINT and SIGTERM at their default whatever this process ignores."""
    return [*_AT_DEFAULT, *argv]


# Issue 34 (hold under abuse, round 3): the parsers, the schema validator, skill files, the
# trace and stdio's order. What could hang on the code before the fix runs in a child process
# with a bound (`bounded_child`, a process killed at its timeout), never in the suite's own.


def bounded_child(test, source, seconds=20):
    """`source` run by a child Python (mcp_min importable) that must end within `seconds`:
    what it printed last, as JSON. Code that goes quadratic or exponential fails the test at
    `seconds`, and the suite goes on."""
    try:
        done = subprocess.run([*PYTHON, "-c", textwrap.dedent(source)], capture_output=True, text=True,
                              timeout=seconds, cwd=HERE, env=_clean_env())
    except subprocess.TimeoutExpired:
        test.fail(f"not done within {seconds} s")
    test.assertEqual(done.returncode, 0, done.stderr[-2000:])
    return json.loads(done.stdout.splitlines()[-1])


class StdioProcess:
    """`python -m mcp_min serve --stdio [TARGET]` (SERVE, the command line: the demo without a
    TARGET), or with run=True `python TARGET --stdio` (a file ending in `server.run()`: the core
    alone), with a line reader thread."""

    def __init__(self, target=None, read=True, env=None, options=(), run=False):
        self.stderr_file = tempfile.TemporaryFile()
        if run:
            args = [*PYTHON, target, "--stdio", *options]
        else:
            args = [*SERVE, "serve", "--stdio", *options] + ([target] if target else [])
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr_file, cwd=HERE, env=env or _clean_env())
        self.lines = queue.Queue()
        if read:
            self.start_reading()

    def start_reading(self):
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in iter(self.proc.stdout.readline, b""):
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def write(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def write_in_background(self, data):
        def run():
            with contextlib.suppress(OSError, ValueError):
                self.write(data)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def send(self, message):
        self.write(json.dumps(message).encode() + b"\n")

    def read_line(self, timeout=TIMEOUT):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output within {timeout} s; stderr: {self.stderr()[-2000:]}") from None

    def read(self, timeout=TIMEOUT):
        line = self.read_line(timeout)
        if line is None:
            raise AssertionError(f"stdout closed; stderr: {self.stderr()[-2000:]}")
        self.last_line = line
        return json.loads(line)

    def initialize(self):
        self.send(rpc(0, "initialize", init_params()))
        result = self.read()
        self.send(note("notifications/initialized"))
        return result

    def close_stdin(self):
        with contextlib.suppress(OSError):
            self.proc.stdin.close()

    def wait(self, timeout=TIMEOUT):
        return self.proc.wait(timeout)

    def stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode("utf-8", "replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                if pipe:
                    pipe.close()
        self.stderr_file.close()


def plain_stdio(test):
    """A stdio server with nothing registered, run as a script (`server.run()`: the core alone);
    killed at the test's end."""
    tmp = tempfile.TemporaryDirectory()
    test.addCleanup(tmp.cleanup)
    path = os.path.join(tmp.name, "plain.py")
    with open(path, "w") as f:
        f.write("from mcp_min import Server\nserver = Server('plain')\nserver.run()\n")
    process = StdioProcess(path, run=True)
    test.addCleanup(process.kill)
    return process


@runs_beside
class RequestReaderLinearTest(unittest.TestCase):
    """_request_from, which reads every stdio line and HTTP body: linear in the frame."""

    ESCAPED = b'"' + b'\\"]' * 66000       # 198 KB: one unterminated string of escaped quotes

    def test_escaped_quotes_past_the_container_count_are_read_at_once(self):
        # Issue 34 item 14: the string-stripping regex re-scanned from every escaped quote once
        # a frame held over 65,536 ] and }: this 198 KB body took 127 s (4 MiB: hours).
        found = bounded_child(self, r'''
            import json, time, mcp_min
            out = {}
            for name, body in (("198 KB", b'"' + b'\\"]' * 66000), ("4 MiB", b'"' + b'\\"]' * ((4 << 20) // 3)),
                               ("in strings", b'["' + b']' * 70000 + b'",1]'),
                               ("containers", b'[' + b'[],' * 70000 + b'1]')):
                started = time.perf_counter()
                try:
                    out[name] = [mcp_min._request_from(body) and "read", time.perf_counter() - started]
                except mcp_min.McpError as e:
                    out[name] = [e.code, time.perf_counter() - started]
            print(json.dumps(out))
        ''')
        self.assertEqual({name: code for name, (code, _) in found.items()},
                         {"198 KB": PARSE_ERROR, "4 MiB": PARSE_ERROR, "in strings": "read",
                          "containers": INVALID_REQUEST})    # brackets in strings are not counted
        self.assertLess(found["198 KB"][1], 2.0, found)     # was 127 s
        self.assertLess(found["4 MiB"][1], 10.0, found)     # 0.3 s here: linear

    def test_the_same_line_on_stdio_is_refused_and_the_next_answered(self):
        # Issue 34 item 14, over a real pipe: the server answers the line and goes on (before:
        # its event loop was held for two minutes, so the ping went unanswered).
        process = plain_stdio(self)
        process.write(self.ESCAPED + b"\n" + json.dumps(rpc(1, "ping")).encode() + b"\n")
        error = process.read(timeout=20)
        self.assertEqual((error["id"], error["error"]["code"]), (None, PARSE_ERROR))
        self.assertEqual(process.read(timeout=20), {"jsonrpc": "2.0", "id": 1, "result": {}})


##############################################################################
# Core: HTTP, the legacy HTTP+SSE transport, as the capture shows it (real sockets on 127.0.0.1)
##############################################################################

async def closed_by_server(reader, timeout=TIMEOUT):
    try:
        return await asyncio.wait_for(reader.read(), timeout) == b""
    except ConnectionError:
        return True


def parse_events(data):
    events = []
    for block in data.decode().replace("\r\n", "\n").split("\n\n"):
        event = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            event[name] = event[name] + "\n" + value if name == "data" and name in event else value
        if event:
            events.append(event)
    return events


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        values = self.headers.get(name.lower())
        return values[0] if values else None

    def json(self):
        return json.loads(self.body)

    def events(self):
        return parse_events(self.body or b"")

    def messages(self):
        """The JSON-RPC messages carried, whether as JSON or as an SSE stream."""
        if (self.header("content-type") or "").startswith("text/event-stream"):
            return [json.loads(e["data"]) for e in self.events()
                    if e.get("event", "message") == "message" and e.get("data")]
        if not self.body:
            return []
        body = self.json()
        return body if type(body) is list else [body]

    def __repr__(self):
        return f"<Response {self.status} {self.headers} {self.body!r:.300}>"


async def read_head(reader, timeout=TIMEOUT):
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    lines = head[:-4].split(b"\r\n")
    version, status, _ = (lines[0].split(b" ", 2) + [b""])[:3]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers.setdefault(name.strip().lower().decode("latin-1"), []).append(
            value.strip().decode("latin-1"))
    return Response(int(status), headers, None)


async def read_response(reader, timeout=TIMEOUT):
    """One response; for a long-lived stream (no length, not chunked) the body is None."""
    response = await read_head(reader, timeout)
    if response.header("content-length") is not None:
        response.body = await asyncio.wait_for(
            reader.readexactly(int(response.header("content-length"))), timeout)
    elif "chunked" in (response.header("transfer-encoding") or ""):
        body = b""
        while True:
            size = int((await asyncio.wait_for(reader.readuntil(b"\r\n"), timeout)).strip(), 16)
            if size == 0:
                await asyncio.wait_for(reader.readuntil(b"\r\n"), timeout)
                break
            body += await asyncio.wait_for(reader.readexactly(size + 2), timeout)
            body = body[:-2]
        response.body = body
    return response


class HttpClient:
    """Builds exact request bytes; one connection per request unless told otherwise."""

    def __init__(self, port, token=None, source=None):
        self.port, self.token = port, token
        self.source = (source, 0) if source else None   # another client: 127.0.0.2
        self.writers = []       # every connection opened, closed at the end of a test

    def build(self, method, path, body=None, headers=None):
        h = {"Host": f"127.0.0.1:{self.port}"}
        if path.startswith("/mcp"):
            h["Accept"] = "application/json, text/event-stream"
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
            h["Content-Length"] = str(len(body))
        for name, value in (headers or {}).items():
            for old in [k for k in h if k.lower() == name.lower()]:
                del h[old]
            if value is not None:
                h[name] = value
        head = "".join(f"{k}: {v}\r\n" for k, v in h.items())
        return f"{method} {path} HTTP/1.1\r\n{head}\r\n".encode("latin-1") + (body or b"")

    async def connect(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, local_addr=self.source)
        self.writers.append(writer)
        return reader, writer

    async def close(self):
        for writer in self.writers:
            writer.close()
        self.writers.clear()

    async def exchange(self, data, timeout=TIMEOUT, check_close=False):
        reader, writer = await self.connect()
        try:
            # Read while writing: a server that answers early (413, 431) and
            # closes must still be heard, whatever happens to the rest we send.
            reading = asyncio.ensure_future(read_response(reader, timeout))
            writer.write(data)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            response = await reading
            if check_close:
                response.closed = await closed_by_server(reader, timeout)
            return response
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def request(self, method, path, body=None, headers=None, **options):
        return await self.exchange(self.build(method, path, body, headers), **options)

    async def post(self, message, sid=None, version=None, headers=None, **options):
        h = {}
        if sid:
            h["Mcp-Session-Id"] = sid
        if version:
            h["MCP-Protocol-Version"] = version
        h.update(headers or {})
        return await self.request("POST", "/mcp", message, h, **options)

    async def initialize(self, version=LATEST_PROTOCOL_VERSION):
        response = await self.post(rpc(0, "initialize", init_params(version)))
        if response.status != 200 or not response.header("mcp-session-id"):
            raise AssertionError(f"initialize failed: {response!r}")
        sid = response.header("mcp-session-id")
        done = await self.post(note("notifications/initialized"), sid, version)
        if done.status != 202:
            raise AssertionError(f"initialized notification: {done!r}")
        return sid


class HttpTestCase(unittest.IsolatedAsyncioTestCase):
    options = {}

    async def asyncSetUp(self):
        self.server, self.state = make_server()
        self.http = await start_http(self.server, "127.0.0.1", 0, **self.options)
        self.port = self.http.port
        self.client = HttpClient(self.port, self.options.get("token"))

    async def asyncTearDown(self):
        self.state.gate.set()
        self.state.thread_gate.set()
        await self.client.close()
        await asyncio.wait_for(self.http.close(), TIMEOUT)
        for _ in range(300):       # let connection handlers finish before the loop closes
            if self.http.connections == 0:
                break
            await asyncio.sleep(0.01)

    async def ping(self, sid, id_=1, version=LATEST_PROTOCOL_VERSION, **headers):
        return await self.client.post(rpc(id_, "ping"), sid, version, headers or None)

    async def assertNothingRan(self, sid):
        """After a barrier -- a ping on the session, answered -- no tool has run and none runs."""
        self.assertEqual((await self.ping(sid, "barrier")).status, 200)
        self.assertEqual(self.http.sessions[sid].session.running, {})
        self.assertEqual(self.state.calls, 0)

    def assertJsonRpcError(self, response, status, code, id_=None):
        self.assertEqual(response.status, status, response)
        body = response.json()
        self.assertEqual(body["jsonrpc"], "2.0")
        self.assertEqual(body["error"]["code"], code, response)
        self.assertIn("id", body)
        self.assertEqual(body["id"], id_)
        return body


def parse_qs_session(endpoint):
    from urllib.parse import parse_qs, urlsplit
    return parse_qs(urlsplit(endpoint).query)["sessionId"][0]


async def read_event(reader, timeout=TIMEOUT, priming=False):
    """The next SSE event (comments skipped, and priming events unless asked) from a raw stream."""
    while True:
        block = await asyncio.wait_for(reader.readuntil(b"\n\n"), timeout)
        events = parse_events(block)
        if events and (priming or events[0].get("data")):
            return events[0]


class HttpLegacySseTest(HttpTestCase):
    """SECURITY.md group I: HTTP+SSE (2024-11-05)."""

    async def open_sse(self, **headers):
        reader, writer = await self.client.connect()
        writer.write(self.client.build("GET", "/sse", headers={"Accept": "text/event-stream", **headers}))
        head = await read_head(reader)
        self.assertEqual(head.status, 200)
        self.assertTrue(head.header("content-type").startswith("text/event-stream"))
        event = await read_event(reader)
        return reader, writer, event

    async def post(self, sid, message):
        return await self.client.request("POST", f"/messages?sessionId={sid}", message)

    async def test_endpoint_event(self):
        _, _, event = await self.open_sse(**{"X-Forwarded-Host": "evil.example.com"})
        self.assertEqual(event["event"], "endpoint")
        endpoint = event["data"]
        self.assertTrue(endpoint.startswith("/messages?"), endpoint)
        self.assertNotIn("://", endpoint)
        self.assertNotIn("evil", endpoint)
        self.assertTrue(parse_qs_session(endpoint))

    async def test_messages_arrive_on_the_stream(self):
        reader, _, event = await self.open_sse()
        sid = parse_qs_session(event["data"])
        response = await self.client.request("POST", event["data"], rpc(0, "initialize", init_params("2024-11-05")))
        self.assertEqual(response.status, 202)
        event = await read_event(reader)
        self.assertEqual(event["event"], "message")
        self.assertEqual(json.loads(event["data"])["result"]["protocolVersion"], "2024-11-05")
        self.assertEqual((await self.post(sid, note("notifications/initialized"))).status, 202)
        self.assertEqual((await self.post(sid, call(1, "add", {"a": 1, "b": 2}))).status, 202)
        self.assertEqual((await self.post(sid, rpc(2, "ping"))).status, 202)
        answers = {}
        while len(answers) < 2:
            message = json.loads((await read_event(reader))["data"])
            answers[message["id"]] = message
        self.assertEqual(tool_text(answers[1]), "3")
        self.assertEqual(answers[2]["result"], {})

    async def test_bad_session_ids(self):
        await self.open_sse()
        self.assertEqual((await self.post("0" * 32, rpc(1, "ping"))).status, 404)
        response = await self.client.request("POST", "/messages", rpc(1, "ping"))
        self.assertEqual(response.status, 400)
        for query, status in (("sessionId=", 400), ("sessionId=abc%0d%0aSet-Cookie:%20x=1", 400),
                              ("sessionId=" + "a" * 10_000, 414),      # the request line's limit
                              ("sessionId=a&sessionId=b", 400)):
            response = await self.client.request("POST", "/messages?" + query, rpc(1, "ping"))
            self.assertEqual(response.status, status, query[:30])
            self.assertIsNone(response.header("set-cookie"))
            self.assertNotIn(b"Set-Cookie", response.body)

    async def test_closing_the_stream_ends_the_session(self):
        reader, writer, event = await self.open_sse()
        sid = parse_qs_session(event["data"])
        self.assertEqual((await self.post(sid, rpc(1, "ping"))).status, 202)
        writer.close()
        for _ in range(300):
            response = await self.post(sid, rpc(2, "ping"))
            if response.status == 404:
                break
            await asyncio.sleep(0.01)
        self.assertEqual(response.status, 404)
        self.assertNotIn(sid, self.http.sessions)

    async def test_post_to_sse_is_405(self):
        response = await self.client.request("POST", "/sse", rpc(1, "ping"))
        self.assertEqual(response.status, 405)
        self.assertEqual(response.header("allow"), "GET")
        # in one line, what the endpoint takes (mcp-remote showed "Error POSTing to endpoint: ")
        self.assertIn("/sse takes GET", response.json()["error"]["message"])

    async def test_legacy_body_errors(self):
        _, _, event = await self.open_sse()
        response = await self.client.request("POST", event["data"], b'{"jsonrpc":"2.0","id":1,')
        self.assertEqual(response.status, 400)
        self.assertEqual(response.json()["error"]["code"], PARSE_ERROR)
        response = await self.client.request("POST", event["data"], rpc(1, "ping"),
                                             {"Content-Type": "text/plain"})
        self.assertEqual(response.status, 415)


def _status_mib(pid, what="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(what + r":\s+(\d+)", f.read()).group(1)) / 1024


class ServerProcess:
    """`python -m mcp_min serve --port 0 [ARGS]` (SERVE, the command line: the demo without a
    TARGET), or `python SCRIPT --port 0 [ARGS]` (a file ending in `server.run()`: the core alone):
    its port, and its resident memory."""

    def __init__(self, *args, script=None, **env):
        command = [*PYTHON, script] if script else [*SERVE, "serve"]
        self.proc = subprocess.Popen([*command, "--port", "0", *args], cwd=HERE,
                                     env=_clean_env(**env), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.port = None
        while self.port is None:
            line = self.proc.stderr.readline().decode()
            if not line:
                raise AssertionError("the server exited before it listened")
            match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            self.port = int(match.group(1)) if match else None
        self.client = HttpClient(self.port)

    def rss_mib(self, what="VmRSS"):
        """Resident memory now, or at its peak so far (VmHWM)."""
        return _status_mib(self.proc.pid, what)

    def close(self):
        self.proc.kill()
        self.proc.wait(TIMEOUT)
        self.proc.stderr.close()


_REFUSAL = "Over the memory this client may hold"
_BLOBS = "from mcp_min import Server\nserver = Server('blobs')\n" \
         "@server.tool()\ndef blob(n: int) -> str:\n    return 'x' * n\nserver.run()\n"


@runs_beside
@unittest.skipUnless(os.path.exists("/proc/self/status"), "reads memory from /proc")
class AbuseSseTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_legacy_stream_that_is_not_read_holds_its_clients_account_at_most(self):
        # Regression (issue 15): answers to a client that stopped reading its /sse stream
        # piled up without bound (3 GiB in 17 s) while every POST still got 202. Issue 39: what
        # waits is charged to the client's account (CLIENT_BYTES); past it an answer is dropped
        # whole, and the client told.
        asyncio.get_running_loop().slow_callback_duration = 5     # big bodies are built here
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "blobs.py")
            with open(path, "w") as f:
                f.write(_BLOBS)
            server = ServerProcess(script=path)
        self.addCleanup(server.close)
        client = server.client
        self.addAsyncCleanup(client.close)
        reader, writer = await client.connect()
        writer.write(client.build("GET", "/sse", headers={"Accept": "text/event-stream"}))
        await read_head(reader)
        endpoint = (await read_event(reader))["data"]      # ... and nothing more is read
        statuses = [(await client.request("POST", endpoint, message)).status for message in (
            rpc(0, "initialize", init_params("2024-11-05")), note("notifications/initialized"))]
        before = server.rss_mib()
        accepted, refused = [], []
        for i in range(1, 301):         # 300 MiB of answers, were they all kept
            response = await client.request("POST", endpoint, call(i, "blob", {"n": 1 << 20}))
            # Once the backlog fills the account, a POST may find no room even for its own body.
            self.assertIn(response.status, (202, 503), response.body)
            (accepted if response.status == 202 else refused).append((i, response.body))
        self.assertEqual(statuses, [202, 202])
        self.assertLess(server.rss_mib() - before, mcp_min.CLIENT_BYTES / (1 << 20) + 40)
        for _, body in refused:
            self.assertIn(b"Over the memory this client may hold", body)
        answers, data = {}, b""

        async def read_answers(count):
            nonlocal data
            while len(answers) < count:
                data += await asyncio.wait_for(reader.read(1 << 20), TIMEOUT)
                *events, data = data.split(b"\n\n")
                for event in events:
                    if b"\ndata: " in event:
                        message = json.loads(event.partition(b"\ndata: ")[2])
                        if message["id"]:       # not initialize's
                            answers[message["id"]] = message
        await read_answers(len(accepted))      # the client reads at last: each call has its answer
        self.assertEqual(sorted(answers), [i for i, _ in accepted])
        dropped = [i for i, message in answers.items() if "error" in message]
        self.assertGreater(len(dropped) + len(refused), 200)
        # not taken in past half the account, or not run, or the answer dropped: each says so
        for i in dropped:
            self.assertIn(_REFUSAL, answers[i]["error"]["message"])
        # all read: the account is free again, and a call runs
        self.assertEqual((await client.request("POST", endpoint, call(301, "blob", {"n": 3}))).status, 202)
        await read_answers(len(accepted) + 1)
        self.assertEqual(tool_text(answers[301]), "xxx")


# Issue 39 (hold under abuse, round 4): what one small input made the server hold, bounded by the
# client's account now. The server runs with an account of ACCOUNT_MIB (the settings are module
# globals, read when an account is made) and 4 requests at once; its growth is checked against
# the account plus OVERHEAD_MIB, what a process's heap keeps of building and sending answers.
ACCOUNT_MIB, OVERHEAD_MIB = 4, 40
_ACCOUNTS = f"""import asyncio
import mcp_min
mcp_min.CLIENT_BYTES, mcp_min.MAX_IN_FLIGHT = {ACCOUNT_MIB} << 20, 4
server = mcp_min.Server('accounts')

@server.tool()
async def blob(n: int) -> str:
    return 'x' * n

@server.tool()
async def hang(pad: str = '') -> str:
    await asyncio.Event().wait()
    return pad

server.run()
"""


class StdioChild:
    """`python _ACCOUNTS` on stdio: lines written from a thread of their own (a server that stops
    reading cannot hang the test), answers read with a deadline (the process is killed at it)."""

    def __init__(self, test, *options):
        tmp = tempfile.TemporaryDirectory()
        test.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "accounts.py")
        with open(path, "w") as f:
            f.write(_ACCOUNTS)
        self.proc = subprocess.Popen([*PYTHON, path, *options], env=_clean_env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        test.addCleanup(self.close)
        self.lines = queue.Queue()
        threading.Thread(target=self._write, daemon=True).start()

    def _write(self):
        with contextlib.suppress(OSError):
            while (data := self.lines.get()) is not None:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            self.proc.stdin.close()

    def send(self, *messages):
        self.lines.put("".join(json.dumps(m) + "\n" for m in messages).encode())

    def answer(self, id_, timeout=TIMEOUT):
        """The next line answering `id_` (a batch's answer: any list), read before `timeout`."""
        watchdog = threading.Timer(timeout, self.proc.kill)
        watchdog.start()
        try:
            while line := self.proc.stdout.readline():
                message = json.loads(line)
                if type(message) is list or message.get("id") == id_:
                    return message
            raise AssertionError(f"no answer to {id_!r} in {timeout} s")
        finally:
            watchdog.cancel()

    def initialize(self, version="2024-11-05"):
        self.send(rpc(0, "initialize", init_params(version)), note("notifications/initialized"))
        self.answer(0)

    def close(self):
        self.proc.kill()
        self.proc.wait(TIMEOUT)
        self.proc.stdout.close()


@runs_beside
@unittest.skipUnless(os.path.exists("/proc/self/status"), "reads memory from /proc")
class AccountsTest(unittest.IsolatedAsyncioTestCase):
    """Each finding of issue 39's round: it failed on 122d6f1."""

    async def asyncSetUp(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "accounts.py")
            with open(path, "w") as f:
                f.write(_ACCOUNTS)
            self.server = ServerProcess(script=path)
        self.addCleanup(self.server.close)
        self.client = self.server.client
        self.addAsyncCleanup(self.client.close)
        self.other = HttpClient(self.server.port, source="127.0.0.2")   # another client
        self.addAsyncCleanup(self.other.close)

    async def assertOthersServed(self):
        sid = await self.other.initialize()
        response = await self.other.post(rpc(1, "tools/list"), sid)
        self.assertEqual(response.status, 200)
        self.assertEqual(len(response.messages()[0]["result"]["tools"]), 2)

    async def test_1_a_batch_over_http_is_answered_within_the_account(self):
        # 122d6f1: 200 answers built and sent whole; a 21 kB POST cost 1.8 GB.
        sid = await self.client.initialize("2025-03-26")
        before = self.server.rss_mib()
        response = await self.client.post([call(i, "blob", {"n": 1 << 18}) for i in range(200)],
                                          sid, "2025-03-26")     # 50 MiB of answers
        self.assertEqual(response.status, 200)
        answers = response.messages()
        self.assertEqual(sorted(m["id"] for m in answers), list(range(200)))
        dropped = [m for m in answers if "error" in m]
        self.assertGreater(len(dropped), 180)
        self.assertIn(_REFUSAL, dropped[-1]["error"]["message"])
        self.assertLess(self.server.rss_mib("VmHWM") - before, ACCOUNT_MIB + OVERHEAD_MIB)
        await self.assertOthersServed()

    def test_2_a_batch_on_stdio_is_answered_within_the_account(self):
        child = StdioChild(self)
        child.initialize("2025-03-26")
        before = _status_mib(child.proc.pid)
        child.send([call(i, "blob", {"n": 1 << 18}) for i in range(200)])
        answers = child.answer(None)
        self.assertEqual(sorted(m["id"] for m in answers), list(range(200)))
        dropped = [m for m in answers if "error" in m]
        self.assertGreater(len(dropped), 180)
        self.assertIn(_REFUSAL, dropped[-1]["error"]["message"])
        self.assertLess(_status_mib(child.proc.pid, "VmHWM") - before, ACCOUNT_MIB + OVERHEAD_MIB)

    async def test_3_bodies_waiting_for_a_slot_are_charged_and_refused_past_the_account(self):
        # 122d6f1: waiting requests were bounded by count (256 of them), whatever their size.
        reader, writer = await self.client.connect()
        writer.write(self.client.build("GET", "/sse", headers={"Accept": "text/event-stream"}))
        await read_head(reader)
        endpoint = (await read_event(reader))["data"]
        answers = {}

        async def read_answers():      # read as they come: never held for us
            while True:
                message = json.loads((await read_event(reader, timeout=None))["data"])
                answers[message["id"]] = message
        reading = asyncio.ensure_future(read_answers())
        self.addCleanup(reading.cancel)

        async def post(message):
            self.assertEqual((await self.client.request("POST", endpoint, message)).status, 202)

        async def barrier(id_):    # too big for what is left of requests' half: refused at once,
            await post(rpc(id_, "ping", {"pad": "x" * 300_000}))   # after all before it
            await until(lambda: id_ in answers, "the ping's answer")
        for message in (rpc(0, "initialize", init_params("2024-11-05")), note("notifications/initialized"),
                        *[call(i, "hang") for i in range(1, 5)]):        # the 4 slots taken
            await post(message)
        before = self.server.rss_mib()
        for i in range(5, 45):      # 40 requests of 200 kB each: those taken wait for a slot
            await post(call(i, "hang", {"pad": "x" * 200_000}))
        await barrier("first")
        waiting = [i for i in range(5, 45) if i not in answers]
        self.assertTrue(waiting)
        self.assertLessEqual(len(waiting) * 200_000, (ACCOUNT_MIB << 20) // 2)   # requests' half
        for i in range(5, 45):
            if i in answers:
                self.assertIn(_REFUSAL, answers[i]["error"]["message"])
        self.assertLess(self.server.rss_mib("VmHWM") - before, ACCOUNT_MIB + OVERHEAD_MIB)
        # Its cancel still gets through (the other half is for it), and makes room for one more.
        await post(note("notifications/cancelled", {"requestId": waiting[0]}))
        await post(call(45, "hang", {"pad": "x" * 200_000}))
        await barrier("second")
        self.assertNotIn(45, answers)   # taken: it waits
        await self.assertOthersServed()

    async def test_4_a_client_holds_its_share_of_connections(self):
        # 122d6f1: one client could take all 512 connections; the next client got 503.
        sid = await self.client.initialize("2025-11-25")
        ping = self.client.build("POST", "/mcp", rpc(1, "ping"), {"Mcp-Session-Id": sid,
                                 "MCP-Protocol-Version": "2025-11-25"})
        for opened in range(1, 65):      # each kept open, idle between requests
            reader, writer = await self.client.connect()
            writer.write(ping)
            response = await read_response(reader)
            if response.status == 503:
                break
            # past half the account the ping itself is refused, on a connection still held
            if response.status != 200:
                self.assertEqual(response.messages()[0]["error"]["code"], -32603)
                self.assertIn(_REFUSAL.encode(), response.body)
        self.assertEqual(response.status, 503, f"{opened} connections held")
        self.assertEqual(opened, (ACCOUNT_MIB << 20) // mcp_min.CONNECTION_COST + 1)
        self.assertIn(_REFUSAL.encode(), response.body)
        await self.assertOthersServed()

    def test_5_a_stdio_server_whose_output_is_not_read_still_ends(self):
        # 122d6f1: the write blocked the loop: SIGTERM, a second one and EOF were ignored.
        import fcntl
        import termios
        for ending, options in (("two signals", ()), ("a signal", ("--shutdown-grace", "1")),
                                ("the end of input", ("--shutdown-grace", "1"))):
            with self.subTest(ending):
                child = StdioChild(self, *options)
                child.initialize()
                child.send(*[call(i, "blob", {"n": 1 << 20}) for i in range(1, 41)])
                pipe = child.proc.stdout.fileno()
                full = fcntl.fcntl(pipe, 1032)     # F_GETPIPE_SZ: what the pipe holds unread

                def unread():
                    return struct.unpack("i", fcntl.ioctl(pipe, termios.FIONREAD, b"\0" * 4))[0]
                deadline = time.monotonic() + TIMEOUT
                while unread() < full and time.monotonic() < deadline:
                    time.sleep(0.01)
                self.assertEqual(unread(), full)        # the server has more to write than fits
                if ending == "the end of input":
                    child.lines.put(None)
                else:
                    child.proc.send_signal(signal.SIGTERM)
                if ending == "two signals":
                    child.proc.send_signal(signal.SIGTERM)
                self.assertIsNotNone(child.proc.wait(TIMEOUT))

    def test_6_cancels_behind_many_waiting_calls_are_heard(self):
        # 122d6f1: reading stopped once 260 were taken in; the cancels and a ping waited for
        # the calls' timeout (300 s).
        child = StdioChild(self)
        child.initialize()
        child.send(*[call(i, "hang") for i in range(1, 601)])
        child.send(*[note("notifications/cancelled", {"requestId": i}) for i in range(1, 601)])
        child.send(rpc("barrier", "ping"))
        self.assertEqual(child.answer("barrier")["result"], {})


# Issue 40 (what a newcomer trips on): each failed silently, or said too little, on 122d6f1.
_LAYOUT = """from __future__ import annotations
from dataclasses import dataclass
from mcp_min import Server, Context
server = Server("m")

@server.tool()
async def add(item: Item, qty: int, ctx: Context) -> str:
    return f"{qty} x {item.name} ({type(item).__name__}, {type(ctx).__name__})"

@dataclass
class Item:
    name: str
"""


def _module(source):
    """`source` run as a module of its own, as an import would (its functions' hints resolve in
    its globals; a dataclass finds its module in sys.modules)."""
    name = f"_layout_{next(_MODULES)}"
    module = sys.modules[name] = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


_MODULES = itertools.count()


class NewcomerTest(unittest.IsolatedAsyncioTestCase):
    """Issue 40: silent failures in the library, and words that did not help."""

    async def test_1_a_model_below_its_tool_under_future_annotations(self):
        # 122d6f1: the hints were dropped: {"item": {}, "qty": {}, "ctx": {...}}, never callable.
        server = _module(_LAYOUT).server
        async with mcp_min.Client(server) as client:
            tool, = await client.list_tools()
            self.assertEqual(set(tool["inputSchema"]["properties"]), {"item", "qty"})
            self.assertEqual(tool["inputSchema"]["properties"]["qty"], {"type": "integer"})
            result = await client.call_tool("add", {"item": {"name": "pen"}, "qty": 2})
            self.assertEqual(result["content"][0]["text"], "2 x pen (Item, Context)")
            refused = await client.call_tool("add", {"item": {"name": "pen"}, "qty": "lots"})
            self.assertTrue(refused["isError"])

    async def test_1_a_name_never_defined_is_a_type_error_when_serving_starts(self):
        server = _module(_LAYOUT.replace("class Item:", "class Thing:")).server
        with self.assertRaisesRegex(TypeError, r"add\(\): a type hint names 'Item', which is not "
                                               "defined"):
            server.resolve()
        with self.assertRaisesRegex(TypeError, "'Item'"):
            async with mcp_min.Client(server):
                pass

    async def test_1_a_waiting_tool_removed_is_forgotten_and_one_added_while_serving_is_read_at_once(self):
        module = _module(_LAYOUT.replace("class Item:", "class Thing:"))    # 'Item' never defined
        server = module.server
        server.remove_tool("add")
        server.resolve()        # nothing waits: the removed tool is not read
        http = await mcp_min.start_http(server, "127.0.0.1", 0)
        self.addAsyncCleanup(http.close, 0)

        def late(item: "Item") -> str:
            return ""
        with self.assertRaisesRegex(TypeError, "late\\(\\): a type hint names 'Item'"):
            server.add_tool(late)   # serving: read now, where its author sees it
        self.assertNotIn("late", server.tools)

    async def test_1_a_name_only_type_checking_imports_is_json_when_the_schema_is_given(self):
        source = _LAYOUT.replace("async def add(item: Item, qty: int, ctx: Context)",
                                 "async def add(item: Frame, qty: int, ctx: 'Context')").replace(
            "@server.tool()", '@server.tool(input_schema={"type": "object", "properties": '
                              '{"item": {"type": "object"}, "qty": {"type": "integer"}}})')
        server = _module(source.replace("{item.name}", "{item['name']}")).server
        with self.assertLogs("mcp_min", "WARNING") as logs:
            server.resolve()
        self.assertIn("'Frame', which is not defined", logs.output[0])
        self.assertIn("its arguments arrive as JSON", logs.output[0])

    def test_2_a_template_variable_no_parameter_takes_is_refused(self):
        # 122d6f1: registered, then every read was -32603 Internal error.
        server = Server("s")
        with self.assertRaisesRegex(TypeError, r"note\(\) takes no parameter 'name' for the "
                                               r"URI's \{name\}; its parameters: title"):
            @server.resource("note://{name}")
            def note(title: str) -> str:
                return title
        self.assertEqual(server.resources, {})

    def test_3_a_second_tool_of_one_name_replaces_the_first_and_says_so(self):
        # 122d6f1: replaced without a word. Replaced (a server may update a tool), with a warning.
        server = Server("s")
        server.add_tool(lambda: "a", "twin")
        with self.assertLogs("mcp_min", "WARNING") as logs:
            server.add_tool(lambda: "b", "twin")
            server.add_prompt(lambda: "p", "p")
            server.add_prompt(lambda: "q", "p")
        self.assertEqual(len(logs.output), 2)
        self.assertIn("tool 'twin' registered again: this one replaces the first", logs.output[0])
        self.assertIn("prompt 'p' registered again", logs.output[1])
        self.assertEqual(server.tools["twin"].fn(), "b")

    async def test_4_star_args_refused_dict_keys_made_what_they_say_nested_records_closed(self):
        server = Server("s")
        with self.assertRaisesRegex(TypeError, r"\*numbers can never be given: arguments arrive "
                                               r"by name; take a list \(numbers: list\[...\]\)"):
            @server.tool()
            def total(*numbers: int) -> int:
                return sum(numbers)
        with self.assertRaisesRegex(TypeError, "dict keys are strings in JSON: float keys"):
            @server.tool()
            def weights(w: dict[float, str]) -> str:
                return ""

        @dataclasses.dataclass
        class Inner:
            a: int

        @dataclasses.dataclass
        class Wider(Inner):
            b: int = 2

        class Small(enum.IntEnum):
            ONE = 1

        @server.tool()
        def keyed(m: dict[int, str], inner: Inner) -> str:
            return repr((m, inner.a))

        @server.tool()
        def widest() -> list[Inner]:    # out, a record stays open: a subclass's instance is one
            return [Wider(1)]

        @server.tool()
        def small(m: dict[Small, int]) -> str:
            return repr(m)
        wire = Wire(server)
        await wire.initialize()
        good = await wire.request(call(1, "keyed", {"m": {"1": "x", "-2": "y"}, "inner": {"a": 1}}))
        self.assertEqual(tool_text(good), "({1: 'x', -2: 'y'}, 1)")
        for i, (arguments, problem) in enumerate((
                ({"m": {"one": "x"}, "inner": {"a": 1}}, "(key 'one' is not an integer)"),
                ({"m": {}, "inner": {"a": 1, "b": 2}}, "inner.b: unexpected property")), 2):
            answer = await wire.request(call(i, "keyed", arguments))
            self.assertTrue(answer["result"]["isError"])
            self.assertIn(problem, tool_text(answer))
        answer = await wire.request(call(5, "keyed", {"m": {"1": "x", "01": "y"}, "inner": {"a": 1}}))
        self.assertIn("two keys name the same one", tool_text(answer))
        answer = await wire.request(call(6, "widest"))
        self.assertEqual(answer["result"]["structuredContent"], {"result": [{"a": 1, "b": 2}]})
        self.assertEqual(tool_text(await wire.request(call(7, "small", {"m": {"1": 5}}))),
                         "{<Small.ONE: 1>: 5}")
        self.assertIn("key '2' is not one of [1]",
                      tool_text(await wire.request(call(8, "small", {"m": {"2": 5}}))))

    async def test_7_what_the_readme_says_a_resource_that_fails_gets(self):
        # The README (item 7): McpError(RESOURCE_NOT_FOUND, ...) says "not found" in its words;
        # any other exception is logged here, and the client gets only -32603 Internal error.
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            self.assertIn("raise McpError(RESOURCE_NOT_FOUND, f\"No note {day!r}\")", f.read())
        server = Server("s")

        @server.resource("notes://{day}")
        def notes(day: str) -> str:
            if day == "lost":
                raise McpError(RESOURCE_NOT_FOUND, f"No note {day!r}")
            return {}["secret"]
        wire = Wire(server)
        await wire.initialize()
        answer = await wire.request(rpc(1, "resources/read", {"uri": "notes://lost"}))
        self.assertEqual(answer["error"], {"code": RESOURCE_NOT_FOUND, "message": "No note 'lost'"})
        with self.assertLogs("mcp_min", "ERROR") as logs:
            answer = await wire.request(rpc(2, "resources/read", {"uri": "notes://monday"}))
        self.assertEqual(answer["error"], {"code": INTERNAL_ERROR, "message": "Internal error"})
        self.assertIn("KeyError", "\n".join(logs.output))

    async def test_6_what_is_not_found_is_named(self):
        server = Server("s")
        server.add_prompt(lambda: "hi", "greet")
        wire = Wire(server)
        await wire.initialize()
        answer = await wire.request(rpc(1, "tool/list"))
        self.assertEqual(answer["error"], {"code": -32601, "message": "Method not found: 'tool/list'"})
        answer = await wire.request(rpc(2, "prompts/get", {"name": "no_such_prompt"}))
        self.assertIn("Unknown prompt 'no_such_prompt': call prompts/list", answer["error"]["message"])

    async def test_6_a_url_that_names_no_endpoint_says_where_servers_answer(self):
        http = await mcp_min.start_http(Server("s"), "127.0.0.1", 0)
        self.addAsyncCleanup(http.close, 0)
        with self.assertRaisesRegex(McpError, r"HTTP 404 from http://127\.0\.0\.1:\d+/: MCP servers "
                                              r"usually answer at /mcp \(or /sse"):
            async with mcp_min.Client(f"http://127.0.0.1:{http.port}/"):
                pass

    async def test_6_a_stdio_server_that_exits_at_once_says_why(self):
        source = "import sys; print('starting', file=sys.stderr); sys.exit('config.toml: not found')"
        stderr = io.StringIO()
        with mock.patch.object(sys, "stderr", stderr):
            with self.assertRaises(McpError) as caught:
                async with mcp_min.Client([*PYTHON, "-c", source]):
                    pass
        # which the client hears first, its output closed or its input, depends on the timing
        self.assertRegex(str(caught.exception), r"^The server (closed its output|is gone): it "
                         r"exited with status 1; its stderr ended: starting \| config.toml: not found$")
        self.assertIn("config.toml: not found", stderr.getvalue())     # passed on as it came


@runs_beside
@unittest.skipUnless(sys.platform == "linux", "reads /proc")
@needs_cli
class ScriptFormTest(unittest.TestCase):
    """Issue 41 (5): `python3 mcp_min.py serve` runs on from the cached bytecode, as -m does (a
    script's parse tree stays in memory until it ends: 25 MB, twice -m's RSS), keeping the
    interpreter's options; where no bytecode can be cached, it stays the script it was."""

    def serve(self, folder, **env):
        env = {k: v for k, v in _clean_env(**env).items() if k != "PYTHONPATH"}
        process = subprocess.Popen([*PYTHON, "-X", "utf8", os.path.join(folder, "mcp_min.py"),
                                    "serve", "--stdio"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.addCleanup(process.wait, TIMEOUT)
        self.addCleanup(process.stdin.close)
        process.stdin.write(json.dumps(rpc(1, "ping")).encode() + b"\n")
        process.stdin.flush()
        self.assertEqual(json.loads(process.stdout.readline()), {"jsonrpc": "2.0", "id": 1,
                                                                 "result": {}})
        with open(f"/proc/{process.pid}/cmdline", "rb") as f:   # what it runs now
            return f.read().split(b"\0")[:-1]

    def test_serve_goes_on_from_the_bytecode_with_its_options(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(MCP_MIN, tmp)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            with mock.patch.dict(os.environ, env, clear=True):
                first = self.serve(tmp)     # writes the bytecode, as -m would
                second = self.serve(tmp)
            self.assertTrue(os.listdir(os.path.join(tmp, "__pycache__")))
        for argv in (first, second):
            self.assertIn(b"-c", argv)
            self.assertEqual(argv[1:4], [b"-S", b"-X", b"utf8"])   # the interpreter's options
            self.assertEqual(argv[-3:], [os.path.join(tmp, "mcp_min.py").encode(), b"serve",
                                         b"--stdio"])

    def test_with_no_bytecode_to_read_it_stays_a_script(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(MCP_MIN, tmp)
            argv = self.serve(tmp, PYTHONDONTWRITEBYTECODE="1")
        self.assertNotIn(b"-c", argv)
        self.assertEqual(argv[-3:], [os.path.join(tmp, "mcp_min.py").encode(), b"serve",
                                     b"--stdio"])


class NewcomerProcessTest(unittest.TestCase):
    """Issue 40, in real processes: the core alone as a script, and a tool's child process."""

    def test_11_the_core_alone_run_as_a_script_says_it_has_no_command_line(self):
        # 122d6f1: `python3 mcp_min.py serve --stdio` on the cut copy did nothing, and exited 0.
        with open(MCP_MIN, encoding="utf-8") as f:
            source = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            core = os.path.join(tmp, "mcp_min.py")
            with open(core, "w", encoding="utf-8") as f:
                f.write(source.split("\n# Extension:", 1)[0])
            done = subprocess.run([*PYTHON, core, "serve", "--stdio"], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=TIMEOUT, env=_clean_env())
        self.assertEqual(done.returncode, 2)
        self.assertIn("its core alone, without the command line", done.stderr)
        self.assertIn("Server.run()", done.stderr)
        # the core with a server below it is a program of its own: served, and ends as it should
        with tempfile.TemporaryDirectory() as tmp:
            single = os.path.join(tmp, "single.py")
            with open(single, "w", encoding="utf-8") as f:
                f.write(source.split("\n# Extension:", 1)[0] + textwrap.dedent("""
                    server = Server("single")
                    server.add_tool(lambda: "hi", "hi")
                    server.run()
                    """))
            lines = [rpc(0, "initialize", init_params("2025-11-25")), note("notifications/initialized"),
                     call(1, "hi")]
            done = subprocess.run([*PYTHON, single], input="".join(json.dumps(m) + "\n" for m in lines),
                                  capture_output=True, text=True, timeout=TIMEOUT, env=_clean_env())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(tool_text(json.loads(done.stdout.splitlines()[-1])), "hi")
        self.assertNotIn("core alone", done.stderr)

    def test_13_a_tools_child_process_does_not_read_the_protocols_input(self):
        # 122d6f1: a child reading stdin took 20 bytes of the client's next request (-32700).
        script = textwrap.dedent(f"""\
            import subprocess
            import mcp_min
            server = mcp_min.Server("child")

            @server.tool()
            def child() -> str:
                read = [{PYTHON[0]!r}, "-c", "import sys; print(len(sys.stdin.buffer.read(20)))"]
                return subprocess.run(read, capture_output=True, text=True, timeout=10).stdout

            server.run()
            """)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "child.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(script)
            lines = [rpc(0, "initialize", init_params("2025-11-25")), note("notifications/initialized"),
                     call(1, "child")]
            proc = subprocess.Popen([*PYTHON, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=_clean_env())
            try:
                proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
                proc.stdin.flush()
                answers = {}
                while 1 not in answers:
                    message = json.loads(proc.stdout.readline())
                    answers[message.get("id")] = message
                proc.stdin.write((json.dumps(rpc(2, "ping")) + "\n").encode())
                proc.stdin.flush()
                ping = json.loads(proc.stdout.readline())
            finally:
                proc.kill()
                proc.wait(TIMEOUT)
                proc.stdout.close()
                proc.stdin.close()
        self.assertEqual(tool_text(answers[1]).strip(), "0")    # the child read the null device
        self.assertEqual(ping, {"jsonrpc": "2.0", "id": 2, "result": {}})


##############################################################################
# Core: the session, wired in memory
##############################################################################

class Wire:
    """The client's end of an in-memory Session: everything it was sent."""

    def __init__(self, server):
        self.sent = []      # (message, related); message None = "ended with no response"
        self.taken = set()  # ids of messages a test already waited for
        self.session = Session(server, lambda message, related: self.sent.append((message, related)))

    @property
    def messages(self):
        return [m for m, _ in self.sent if m is not None]

    def feed(self, data):
        self.session.receive(data.encode() if isinstance(data, str) else
                             data if isinstance(data, bytes) else json.dumps(data).encode())

    async def wait_for(self, predicate, timeout=TIMEOUT):
        """The first message matching `predicate` not yet waited for."""
        deadline = time.monotonic() + timeout
        while True:
            for message in self.messages:
                if id(message) not in self.taken and predicate(message):
                    self.taken.add(id(message))
                    return message
            if time.monotonic() > deadline:
                raise AssertionError(f"no such message; sent: {self.messages!r}"[:3000])
            await asyncio.sleep(0.002)

    async def response(self, id_):
        return await self.wait_for(lambda m: "method" not in m and m.get("id") == id_
                                   and type(m.get("id")) is type(id_))

    async def request(self, message):
        self.feed(message)
        return await self.response(message["id"])

    async def initialize(self, version=LATEST_PROTOCOL_VERSION, capabilities=None):
        response = await self.request(rpc(0, "initialize", init_params(version, capabilities)))
        self.feed(note("notifications/initialized"))
        return response

    def answers(self, id_):
        return [m for m in self.messages if "method" not in m and m.get("id") == id_
                and type(m.get("id")) is type(id_)]

    async def settle(self):
        """Let every running request finish, and a few loop turns pass."""
        await asyncio.wait_for(self.session.drain(), TIMEOUT)
        for _ in range(5):
            await asyncio.sleep(0)


class SessionLifecycleTest(unittest.IsolatedAsyncioTestCase):
    """initialize, capabilities, early requests (PROTOCOL.md 3)."""

    async def test_known_versions_are_echoed(self):
        for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
            wire = Wire(make_server()[0])
            result = (await wire.initialize(version))["result"]
            self.assertEqual(result["protocolVersion"], version)
            self.assertEqual(wire.session.protocol_version, version)

    async def test_unknown_version_gets_latest(self):
        for version in ("1999-01-01", "2026-07-28", "2025-11-26"):
            wire = Wire(make_server()[0])
            result = (await wire.initialize(version))["result"]
            self.assertEqual(result["protocolVersion"], "2025-11-25")

    async def test_server_info_instructions_and_capabilities(self):
        wire = Wire(make_server()[0])
        result = (await wire.initialize())["result"]
        self.assertEqual(result["serverInfo"], {"name": "test-server", "version": "1.2.3"})
        self.assertEqual(result["instructions"], "Be nice.")
        self.assertEqual(result["capabilities"], {
            "logging": {}, "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True}, "completions": {}})
        bare = Wire(Server("bare"))
        result = (await bare.initialize())["result"]
        self.assertNotIn("instructions", result)
        self.assertEqual(result["capabilities"], {"logging": {}})

    async def test_capabilities_follow_the_registry(self):
        def thing():
            return "x"
        server = Server("s")
        self.assertEqual(server.capabilities(), {"logging": {}})
        server.tool()(thing)
        self.assertEqual(set(server.capabilities()), {"logging", "tools"})
        server.prompt()(thing)
        self.assertEqual(set(server.capabilities()), {"logging", "tools", "prompts"})

    async def test_initialize_without_params(self):
        wire = Wire(make_server()[0])
        response = await wire.request(rpc(1, "initialize"))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)
        self.assertEqual(wire.session.state, "new")
        response = await wire.request(rpc(2, "initialize", {"protocolVersion": 5}))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)

    async def test_initialize_params_not_object(self):
        wire = Wire(make_server()[0])
        for i, params in enumerate(('"x"', "null", "[]")):
            wire.feed('{"jsonrpc":"2.0","id":%d,"method":"initialize","params":%s}' % (i, params))
            self.assertEqual((await wire.response(i))["error"]["code"], INVALID_PARAMS)
        self.assertEqual((await wire.initialize())["result"]["protocolVersion"], "2025-11-25")

    async def test_second_initialize_refused(self):
        wire = Wire(make_server()[0])
        await wire.initialize("2025-06-18")
        response = await wire.request(rpc(9, "initialize", init_params("2024-11-05")))
        self.assertEqual(response["error"]["code"], INVALID_REQUEST)
        self.assertEqual(wire.session.protocol_version, "2025-06-18")

    async def test_ping_before_initialize(self):
        wire = Wire(make_server()[0])
        self.assertEqual(await wire.request(rpc(1, "ping")), {"jsonrpc": "2.0", "id": 1, "result": {}})

    async def test_other_requests_before_initialize_refused(self):
        server, state = make_server()
        wire = Wire(server)
        response = await wire.request(rpc(1, "tools/list"))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)
        response = await wire.request(call(2, "count"))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)
        self.assertEqual(state.calls, 0)

    async def test_unknown_method(self):
        wire = Wire(make_server()[0])
        response = await wire.request(rpc(1, "server/discover"))
        self.assertEqual(response["error"]["code"], METHOD_NOT_FOUND)
        await wire.initialize()
        for i, method in enumerate(("server/discover", "tools/List", "notifications/cancelled")):
            response = await wire.request(rpc(10 + i, method, {"requestId": 1}))
            self.assertEqual(response["error"]["code"], METHOD_NOT_FOUND, method)

    async def test_method_of_undeclared_capability(self):
        wire = Wire(Server("bare"))
        await wire.initialize()
        for i, method in enumerate(("tools/list", "prompts/list", "resources/read", "completion/complete")):
            response = await wire.request(rpc(i, method))
            self.assertEqual(response["error"]["code"], METHOD_NOT_FOUND, method)

    async def test_notifications_never_answered(self):
        wire = Wire(make_server()[0])
        quiet = [note("notifications/initialized"), note("notifications/whatever", {"a": 1}),
                 note("notifications/cancelled", {"requestId": 999}),
                 note("notifications/cancelled", "not an object"),
                 note("notifications/cancelled", {"requestId": True}),
                 note("notifications/progress", {"progressToken": 1, "progress": 1})]
        for message in quiet:
            wire.feed(message)
        await wire.initialize()
        before = len(wire.sent)
        for message in quiet:
            wire.feed(message)
        wire.feed({"jsonrpc": "2.0", "id": 12345, "result": {}})        # a response nobody asked for
        await wire.settle()
        self.assertEqual(len(wire.sent), before)

    async def test_params_must_be_an_object(self):
        wire = Wire(make_server()[0])
        await wire.initialize()
        response = await wire.request(rpc(1, "tools/list", [1]))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)
        response = await wire.request(rpc(2, "tools/call", {"arguments": {}}))  # no name
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)
        self.assertEqual((await wire.request(rpc(3, "ping")))["result"], {})

    async def test_list_changed_after_initialize(self):
        server, _ = make_server()
        early, late = Wire(server), Wire(server)
        await late.initialize()
        server.add_tool(lambda: "new", "new_tool")
        server.remove_tool("new_tool")
        server.add_prompt(lambda: "p", "new_prompt")
        server.add_resource(lambda: "r", "mem://r")
        await late.settle()
        methods = [m.get("method") for m in late.messages]
        self.assertEqual(methods.count("notifications/tools/list_changed"), 2)
        self.assertIn("notifications/prompts/list_changed", methods)
        self.assertIn("notifications/resources/list_changed", methods)
        self.assertEqual(early.messages, [])        # not initialized: nothing but logs
        late.session.close()
        server.add_tool(lambda: "x", "after_close")
        self.assertEqual(methods, [m.get("method") for m in late.messages])
        self.assertNotIn(late.session, server.sessions)

    async def test_null_params_on_a_notification_still_count(self):
        server, _ = make_server()
        wire = Wire(server)
        await wire.request(rpc(0, "initialize", init_params()))
        wire.feed({"jsonrpc": "2.0", "method": "notifications/initialized", "params": None})
        self.assertEqual(wire.session.state, "operating")     # else list_changed notices never go out


class SessionJsonRpcTest(unittest.IsolatedAsyncioTestCase):
    """Ids, bad envelopes, batches (SECURITY.md group E on the session)."""

    async def asyncSetUp(self):
        self.server, self.state = make_server()
        self.wire = Wire(self.server)

    async def test_parse_error_has_null_id(self):
        for data in (b"{bad", b"", b'{"a":"\xff"}', "[" * 200_000):
            self.wire.feed(data)
            self.assertEqual(self.wire.messages[-1], {"jsonrpc": "2.0", "id": None, "error": {
                "code": PARSE_ERROR, "message": "Parse error"}})

    async def test_bad_envelopes_run_nothing(self):
        await self.wire.initialize()
        bad = ['{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call",'
               '"params":{"name":"count"}}',
               '{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"count"}}',
               '{"jsonrpc":"2.0","id":1,"method":"ping","method\\u0000":"tools/call"}',
               '{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"count"}}',
               '{"jsonrpc":"2.0","id":1,"method":5}']
        for data in bad:
            before = len(self.wire.messages)
            self.wire.feed(data)
            self.assertEqual(len(self.wire.messages), before + 1, data)
            self.assertEqual(self.wire.messages[-1]["error"]["code"], INVALID_REQUEST, data)
        await self.wire.settle()
        self.assertEqual(self.state.calls, 0)

    async def test_bad_id_types_get_null_id_and_run_nothing(self):
        await self.wire.initialize()
        self.wire.feed(call(1, "wait"))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        for bad in ("true", "1.5", "1e2", "null", "{}", "[]"):
            self.wire.feed('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"count"}}' % bad)
            self.assertEqual(self.wire.messages[-1], {"jsonrpc": "2.0", "id": None, "error": {
                "code": INVALID_REQUEST, "message": "Invalid request"}}, bad)
        self.state.gate.set()
        self.assertEqual(tool_text(await self.wire.response(1)), "released")   # id true did not touch id 1
        await self.wire.settle()
        self.assertEqual(self.state.calls, 0)

    async def test_ids_1_and_string_1_are_distinct(self):
        # SECURITY.md E40 and R20: never coerce 1 and "1" to one key.
        await self.wire.initialize()
        self.wire.feed(call(1, "wait", {"label": "int"}))
        self.wire.feed(call("1", "wait", {"label": "str"}))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        self.assertEqual(len(self.wire.session.running), 2)
        self.wire.feed(note("notifications/cancelled", {"requestId": "1"}))
        self.state.gate.set()
        self.assertEqual(tool_text(await self.wire.response(1)), "int")
        await self.wire.settle()
        self.assertEqual(self.wire.answers("1"), [])       # only "1" was cancelled

    async def test_duplicate_in_flight_id(self):
        # SECURITY.md F55: the second gets -32600 with the id; the first gets its own result.
        await self.wire.initialize()
        self.wire.feed(call(7, "wait", {"label": "first"}))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        self.wire.feed(rpc(7, "ping"))
        duplicate = await self.wire.response(7)
        self.assertEqual(duplicate["error"]["code"], INVALID_REQUEST)
        self.state.gate.set()
        self.assertEqual(tool_text(await self.wire.response(7)), "first")
        self.assertEqual(len(self.wire.answers(7)), 2)
        self.assertEqual((await self.wire.request(rpc(7, "ping")))["result"], {})  # free again

    async def test_batch_on_2025_03_26(self):
        await self.wire.initialize("2025-03-26")
        self.wire.feed([rpc(1, "ping"), call(2, "add", {"a": 1, "b": 2}), note("notifications/x")])
        self.assertEqual((await self.wire.response(1))["result"], {})
        self.assertEqual(tool_text(await self.wire.response(2)), "3")
        await self.wire.settle()
        self.assertEqual(len(self.wire.messages), 3)    # initialize + two answers

    async def test_a_batch_beyond_the_account_is_refused_whole(self):
        await self.wire.initialize("2025-03-26")
        five = [rpc(i, "ping") for i in range(1, 6)]
        half = len(json.dumps(five)) + 5 * mcp_min.MESSAGE_COST     # requests take half of it
        limit = self.wire.session.account.limit = 2 * half
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 2):
            self.wire.feed([rpc(i, "ping") for i in range(1, 7)])
            error = await self.wire.response(None)
            self.assertTrue(error["error"]["message"].startswith(
                f"Invalid request: Over the memory this client may hold ({half} bytes of its {limit} "
                "for requests"), error)
            self.wire.feed([rpc(i, "ping") for i in range(1, 6)])     # five fit: all are answered
            for i in range(1, 6):
                self.assertEqual((await self.wire.response(i))["result"], {})
        self.assertEqual(self.wire.session.account.used, 0)     # all given back

    async def test_batch_refused_on_other_versions(self):
        for version in ("2024-11-05", "2025-06-18", "2025-11-25"):
            server, state = make_server()
            wire = Wire(server)
            await wire.initialize(version)
            wire.feed([call(1, "count"), rpc(2, "ping")])
            await wire.settle()
            self.assertEqual(wire.messages[1:], [{"jsonrpc": "2.0", "id": None, "error": {
                "code": INVALID_REQUEST, "message": "Invalid request: batches are not accepted"}}])
            self.assertEqual(state.calls, 0, version)

    async def test_batch_before_initialize_refused(self):
        self.wire.feed([rpc(1, "initialize", init_params("2025-03-26"))])
        self.assertEqual(self.wire.messages[-1]["error"]["code"], INVALID_REQUEST)
        self.assertEqual(self.wire.session.state, "new")

    async def test_initialize_inside_batch_refused(self):
        await self.wire.initialize("2025-03-26")
        self.wire.feed([rpc(5, "initialize", init_params("2025-03-26")), rpc(6, "ping")])
        self.assertEqual((await self.wire.response(5))["error"]["code"], INVALID_REQUEST)
        self.assertEqual((await self.wire.response(6))["result"], {})

    async def test_empty_batch_refused(self):
        await self.wire.initialize("2025-03-26")
        self.wire.feed("[]")
        self.assertEqual(self.wire.messages[-1]["error"]["code"], INVALID_REQUEST)
        self.assertIsNone(self.wire.messages[-1]["id"])

    async def test_an_id_can_be_reused_as_soon_as_it_is_answered(self):
        # Regression: `running` was cleared after the answer went out, so a client
        # reusing id 1 at once (the claude.ai connector does) got "id already in use".
        server, _ = make_server()
        out = []

        def send(message, related):
            out.append(message)
            if message and message.get("id") == 1 and len(out) < 6:
                session.receive(call(1, "add", {"a": len(out), "b": 0}))
        session = Session(server, send)
        session.receive(rpc(0, "initialize", init_params()))
        session.receive(call(1, "add", {"a": 1, "b": 0}))

        def answers():
            return [m for m in out if m and m.get("id") == 1]
        await until(lambda: len(answers()) >= 3, "three answers to id 1")
        answers = answers()
        self.assertTrue(all("result" in m for m in answers), answers)

    async def test_nested_batch_is_answered_not_raised(self):
        await self.wire.initialize("2025-03-26")
        self.wire.feed("[" * 450 + "]" * 450)
        self.wire.feed("[[1], 2, {\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"ping\"}]")
        self.assertEqual((await self.wire.response(5))["result"], {})
        errors = [m for m in self.wire.messages if m.get("error", {}).get("code") == INVALID_REQUEST]
        self.assertEqual(len(errors), 3)

    async def test_requests_in_flight_are_bounded_per_session(self):
        await self.wire.initialize()
        held = sum(len(json.dumps(call(i, "wait"))) + mcp_min.MESSAGE_COST for i in range(1, 5))
        self.wire.session.account.limit = 2 * held      # requests take half of it: four
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 3):
            for i in range(1, 6):
                self.wire.feed(call(i, "wait"))
            refused = await self.wire.response(5)
            self.assertEqual(refused["error"]["code"], INTERNAL_ERROR)
            self.assertIn("Over the memory this client may hold", refused["error"]["message"])
            self.assertEqual((set(self.wire.session.running), set(self.wire.session.waiting)),
                             ({1, 2, 3}, {4}))
            self.state.gate.set()
            for i in range(1, 5):       # the one that waited runs when a slot frees
                self.assertEqual(tool_text(await self.wire.response(i)), "released")

    @unittest.skipUnless(hasattr(asyncio, "eager_task_factory"), "Python 3.12+")
    async def test_an_eager_task_factory_answers_and_frees_the_id(self):
        # Regression: a request finished inside create_task was recorded as running
        # afterwards: no answer (KeyError in the task) and its id refused forever.
        asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
        server, _ = make_server()
        wire = Wire(server)
        await wire.initialize()
        for _ in range(2):
            self.assertEqual((await wire.request(rpc(1, "ping")))["result"], {})
            self.assertEqual(tool_text(await wire.request(call(2, "add", {"a": 1, "b": 2}))), "3")
        self.assertEqual(wire.session.running, {})


class SessionWithoutLoopTest(unittest.TestCase):
    def test_json_text_as_str_is_received_like_bytes(self):
        out = []
        session = Session(make_server()[0], lambda message, related: out.append(message))
        self.assertEqual(session.receive(json.dumps(rpc(0, "initialize", init_params()))), 1)
        self.assertEqual(out[-1]["result"]["protocolVersion"], LATEST_PROTOCOL_VERSION)
        self.assertEqual(session.receive(json.dumps("hello")), 0)     # a JSON string is no message
        self.assertEqual(out[-1]["error"]["code"], INVALID_REQUEST)

    def test_a_request_that_needs_a_loop_is_answered_not_dropped(self):
        # Regression: with no running loop a valid request was silently dropped.
        out = []
        session = Session(make_server()[0], lambda message, related: out.append(message))
        self.assertEqual(session.receive(json.dumps(rpc(0, "initialize", init_params())).encode()), 1)
        self.assertEqual(session.receive(json.dumps(rpc(1, "ping")).encode()), 1)
        self.assertEqual(out[-1], {"jsonrpc": "2.0", "id": 1, "error": {
            "code": INTERNAL_ERROR, "message": "No event loop is running"}})
        self.assertEqual(session.running, {})


class TimeLimitTest(unittest.IsolatedAsyncioTestCase):
    """R32: a request that runs past its time is answered, and cancelled (the session's timer
    wakes at the first limit due: no sweep to wait for)."""

    async def test_requests_past_their_time_are_answered_and_cancelled(self):
        server, cancelled, gate, release = Server("slow", timeout=0.2), [], asyncio.Event(), threading.Event()

        @server.tool()
        async def forever() -> str:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append("forever")
                raise

        @server.tool(timeout=3600)      # its own limit, above the server's
        async def patient() -> str:
            await gate.wait()
            return "waited"

        @server.tool()
        def stuck_thread() -> str:
            release.wait(TIMEOUT)
            return "late"

        @server.resource("slow://r")
        async def slow_resource() -> str:
            await asyncio.sleep(3600)
        self.addCleanup(release.set)
        wire = Wire(server)
        await wire.initialize()
        for message in (call(1, "forever"), call(2, "patient"), call(3, "stuck_thread"),
                        rpc(4, "resources/read", {"uri": "slow://r"})):
            wire.feed(message)
        for id_, name in ((1, "forever"), (3, "stuck_thread")):
            answer = (await wire.response(id_))["result"]
            self.assertTrue(answer["isError"])
            self.assertEqual(answer["content"][0]["text"], f"Tool '{name}' did not finish within 0.2 s.")
        self.assertEqual((await wire.response(4))["error"],
                         {"code": INTERNAL_ERROR, "message": "Request timed out"})
        # the cancel reaches the tool's task on a later turn of the loop than the answers may
        await until(lambda: cancelled and server.abandoned, "the timed-out tools hear their cancels")
        self.assertEqual(cancelled, ["forever"])
        self.assertEqual(server.abandoned, 1)       # the sync tool's thread runs on, counted
        self.assertEqual(list(wire.session.running), [2])
        gate.set()
        self.assertEqual(tool_text(await wire.response(2)), "waited")

    async def test_a_handler_that_ignores_its_cancel_is_answered_all_the_same(self):
        # Regression: the timeout's answer waited for the task to end, and a tool that
        # swallowed its cancel was never answered (nor did the server exit at EOF).
        server, release = Server("stubborn", timeout=0.2), []
        self.addCleanup(release.append, True)

        @server.tool()
        async def stubborn() -> str:
            while not release:
                with contextlib.suppress(asyncio.CancelledError):   # a badly behaved tool
                    await asyncio.sleep(3600)
            return "late"
        wire = Wire(server)
        await wire.initialize()
        wire.feed(call(1, "stubborn"))
        self.assertTrue((await wire.response(1))["result"]["isError"])
        await asyncio.wait_for(wire.session.drain(), TIMEOUT)     # nothing live is left to wait for
        self.assertEqual((await wire.request(rpc(1, "ping")))["result"], {})     # its id is free
        [orphan] = [t for t in asyncio.all_tasks() if "_serve" in repr(t.get_coro())]
        release.append(True)        # it ran on, unheard, until it ended
        orphan.cancel()
        await asyncio.wait_for(orphan, TIMEOUT)
        self.assertEqual([m.get("id") for m in wire.messages].count(1), 2)  # no late answer

    async def test_drain_does_not_spin_on_slots_held_by_what_was_answered(self):
        # Regression: with every slot held by tasks already answered (cancelled, still
        # running) and a request waiting, drain() looped on sleep(0) at full CPU.
        server, release = Server("held"), asyncio.Event()

        @server.tool()
        async def hold() -> str:
            while not release.is_set():
                with contextlib.suppress(asyncio.CancelledError):   # it ignores the cancel
                    await release.wait()
            return "held"
        self.addCleanup(release.set)
        wire = Wire(server)
        await wire.initialize()
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 1):
            wire.feed(call(1, "hold"))
            await until(lambda: 1 in wire.session._running, "it runs")
            wire.feed(call(2, "hold"))      # waits for the slot
            wire.feed(note("notifications/cancelled", {"requestId": 1}))
            with mock.patch("asyncio.sleep", wraps=asyncio.sleep) as sleep:
                await wire.session.drain(0.3)
            self.assertLess(sleep.call_count, 5)

    async def test_the_default_limit_is_tool_timeout(self):
        server = Server("slow")

        @server.tool()
        async def forever() -> str:
            await asyncio.sleep(3600)
        wire = Wire(server)
        await wire.initialize()
        with mock.patch.object(mcp_min, "TOOL_TIMEOUT", 0.1):
            self.assertTrue((await wire.request(call(1, "forever")))["result"]["isError"])


class SessionClientFeaturesCase(unittest.IsolatedAsyncioTestCase):
    """Server -> client requests: the fixture, and helpers."""

    async def asyncSetUp(self):
        self.server, self.state = make_server()
        self.wire = Wire(self.server)
        await self.wire.initialize(capabilities={"sampling": {}, "elicitation": {}, "roots": {}})

    async def server_request(self, method):
        return await self.wire.wait_for(lambda m: m.get("method") == method and "id" in m)

    @staticmethod
    def planner():
        """A server whose tool samples with tools."""
        server, _ = make_server()

        @server.tool()
        async def plan(ctx: Context) -> str:
            reply = await ctx.sample("Plan it", 50, tools=[{"name": "t", "inputSchema": {"type": "object"}}])
            return reply["content"]["text"]
        return server

    @staticmethod
    def payer():
        """A server whose tools elicit in URL mode, and say one is required."""
        server, _ = make_server()

        @server.tool()
        async def pay(ctx: Context, form: bool = False) -> str:
            if form:
                return (await ctx.elicit("Card?", {"card": {"type": "string"}}))["action"]
            answer = await ctx.elicit_url("Pay at the bank", "https://bank.example/pay?o=1", "e-1")
            ctx.elicitation_complete("e-1")
            return answer["action"]

        @server.tool()
        async def gated() -> str:
            raise mcp_min.UrlElicitationRequired([{"mode": "url", "elicitationId": "e-2", "message": "Sign in",
                                                   "url": "https://id.example/"}])
        return server

    async def pay_by_url(self, target, era, shown, done):
        async with mcp_min.Client(target, era=era, elicit_url=lambda p: shown.append(p) or {"action": "accept"},
                                  on_notification=lambda m, p: m.endswith("complete") and done.set()) as client:
            self.assertEqual(client.capabilities().get("elicitation"), {"url": {}})
            self.assertEqual("extensions" in client.capabilities(), era != "handshake")     # it polls tasks
            result = await client.call_tool("pay")
            self.assertEqual(result["content"][0]["text"], "accept")
            self.assertEqual((shown[-1]["mode"], shown[-1]["url"]), ("url", "https://bank.example/pay?o=1"))
            if era == "handshake":      # form mode was not declared
                self.assertIn("elicitation.form", (await client.call_tool("pay", {"form": True}))[
                    "content"][0]["text"])
            else:
                with self.assertRaises(McpError) as caught:
                    await client.call_tool("pay", {"form": True})
                self.assertEqual(caught.exception.data, {"requiredCapabilities": {"elicitation": {"form": {}}}})
            with self.assertRaises(McpError) as caught:
                await client.call_tool("gated")
            self.assertEqual(caught.exception.code, mcp_min.URL_ELICITATION_REQUIRED)
            self.assertEqual(caught.exception.data["elicitations"][0]["elicitationId"], "e-2")


class SessionClientFeaturesTest(SessionClientFeaturesCase):
    """Server -> client requests: sampling, elicitation, roots."""

    async def test_sample(self):
        self.wire.feed(call(1, "ask_model", {"prompt": "Hi?"}))
        request = await self.server_request("sampling/createMessage")
        self.assertEqual(request["params"], {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Hi?"}}],
            "maxTokens": 50, "systemPrompt": "Be brief."})
        self.assertEqual([r for m, r in self.wire.sent if m is request], [1])    # related to call 1
        self.wire.feed({"jsonrpc": "2.0", "id": request["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "Hello."}, "model": "m"}})
        self.assertEqual(tool_text(await self.wire.response(1)), "Hello.")

    async def test_elicit(self):
        self.wire.feed(call(1, "ask_user"))
        request = await self.server_request("elicitation/create")
        self.assertEqual(request["params"]["message"], "Your name?")
        self.assertEqual(request["params"]["requestedSchema"],
                         {"type": "object", "properties": {"name": {"type": "string"}}})
        self.wire.feed({"jsonrpc": "2.0", "id": request["id"],
                        "result": {"action": "accept", "content": {"name": "Ada"}}})
        response = await self.wire.response(1)
        self.assertEqual(response["result"]["structuredContent"],
                         {"action": "accept", "content": {"name": "Ada"}})

    async def test_list_roots(self):
        self.wire.feed(call(1, "roots"))
        request = await self.server_request("roots/list")
        self.wire.feed({"jsonrpc": "2.0", "id": request["id"],
                        "result": {"roots": [{"uri": "file:///work", "name": "work"}]}})
        self.assertEqual((await self.wire.response(1))["result"]["structuredContent"],
                         {"result": ["file:///work"]})

    async def test_client_error_reply(self):
        self.wire.feed(call(1, "ask_model", {"prompt": "Hi?"}))
        request = await self.server_request("sampling/createMessage")
        self.wire.feed({"jsonrpc": "2.0", "id": request["id"],
                        "error": {"code": -1, "message": "User rejected sampling"}})
        result = (await self.wire.response(1))["result"]
        self.assertEqual(result, {"content": [{"type": "text", "text": "User rejected sampling"}],
                                  "isError": True})

    async def test_refused_when_not_declared(self):
        wire = Wire(self.server)
        await wire.initialize(capabilities={})
        for i, name in enumerate(("ask_model", "ask_user", "roots")):
            arguments = {"prompt": "x"} if name == "ask_model" else {}
            result = (await wire.request(call(i, name, arguments)))["result"]
            self.assertTrue(result["isError"], name)
            self.assertIn("does not support", result["content"][0]["text"])
        self.assertFalse([m for m in wire.messages if "method" in m and "id" in m])

    async def test_unencodable_request_to_the_client_fails_in_the_tool(self):
        server = Server("s")

        @server.tool()
        async def bad(ctx: Context) -> str:
            await ctx.sample([{"role": "user", "content": {"type": "text", "text": b"bytes"}}])
            return "unreachable"
        wire = Wire(server)
        await wire.initialize(capabilities={"sampling": {}})
        result = (await wire.request(call(2, "bad")))["result"]
        self.assertTrue(result["isError"])
        self.assertFalse([m for m in wire.messages if m.get("method") == "sampling/createMessage"])

    async def test_a_broken_reply_never_answers_with_its_id_and_fails_the_waiter(self):
        # Regression: {"id": 1} with no result answered -32600 *with id 1*, which the
        # client matches to its own request 1, and the tool waited 60 s for its reply.
        self.wire.feed(call(1, "ask_model", {"prompt": "Hi?"}))
        request = await self.wire.wait_for(lambda m: m.get("method") == "sampling/createMessage")
        self.assertEqual(request["id"], 1)      # our ids and the client's collide by design
        self.wire.feed({"jsonrpc": "2.0", "id": request["id"]})
        error = await self.wire.wait_for(lambda m: "error" in m)
        self.assertEqual((error["id"], error["error"]["code"]), (None, INVALID_REQUEST))
        response = await self.wire.wait_for(lambda m: "result" in m and m.get("id") == 1, timeout=5)
        self.assertTrue(response["result"]["isError"])
        self.assertEqual(self.wire.answers(1), [response])
        # A request-shaped message keeps its id (SECURITY 38).
        self.assertEqual((await self.wire.request({"jsonrpc": "2.0", "id": 9, "method": "ping", "x": 1}))
                         ["error"]["code"], INVALID_REQUEST)

    async def test_sampling_with_tools_needs_sampling_tools(self):
        server = self.planner()
        wire = Wire(server)
        await wire.initialize(capabilities={"sampling": {}})
        refused = (await wire.request(call(1, "plan")))["result"]
        self.assertTrue(refused["isError"])
        self.assertIn("sampling.tools", refused["content"][0]["text"])
        wire = Wire(server)
        await wire.initialize(capabilities={"sampling": {"tools": {}}})
        wire.feed(call(3, "plan"))
        ask = await wire.wait_for(lambda m: m.get("method") == "sampling/createMessage")
        self.assertEqual(ask["params"]["tools"][0]["name"], "t")
        wire.feed({"jsonrpc": "2.0", "id": ask["id"], "result": {
            "role": "assistant", "model": "m", "content": {"type": "text", "text": "done"}}})
        self.assertEqual(tool_text(await wire.response(3)), "done")
        seen = []   # and our Client says its sampling takes tools when told so
        model = lambda p: seen.append(p["tools"]) or {"role": "assistant", "model": "m",  # noqa: E731
                                                      "content": {"type": "text", "text": "planned"}}
        async with mcp_min.Client(server, era="handshake", sampling=model, sampling_tools=True) as client:
            self.assertEqual((await client.call_tool("plan"))["content"][0]["text"], "planned")
        self.assertEqual(seen[0][0]["name"], "t")

    async def test_url_elicitation(self):
        server = self.payer()
        shown, done = [], asyncio.Event()
        http = await start_http(server, "127.0.0.1", 0)     # and over real sockets
        self.addAsyncCleanup(http.close)
        for target in (server, f"http://127.0.0.1:{http.port}/mcp"):
            await self.pay_by_url(target, "handshake", shown, done)
        self.assertEqual([p.get("elicitationId") for p in shown], ["e-1", "e-1"])
        await asyncio.wait_for(done.wait(), TIMEOUT)
        async with mcp_min.Client(server, era="handshake", elicitation=lambda p: {"action": "decline"}) as client:
            refused = await client.call_tool("pay")
            self.assertTrue(refused["isError"])
            self.assertIn("elicitation.url", refused["content"][0]["text"])

    async def test_roots_changes_reach_the_server_author(self):
        server, _ = make_server()
        changed = []
        server.on_roots_changed = changed.append
        wire = Wire(server)
        await wire.initialize(capabilities={"roots": {"listChanged": True}})
        wire.feed(note("notifications/roots/list_changed"))
        await wire.request(rpc(1, "ping"))      # a barrier: the notification came first
        self.assertEqual(changed, [wire.session])


##############################################################################
# Core: method handlers
##############################################################################

class SessionToolsTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.server, self.state = make_server()
        self.wire = Wire(self.server)
        await self.wire.initialize()

    async def test_list(self):
        tools = {t["name"]: t for t in (await self.wire.request(rpc(1, "tools/list")))["result"]["tools"]}
        self.assertEqual(tools["add"]["description"], "Add two integers.")
        self.assertEqual(tools["add"]["inputSchema"]["required"], ["a", "b"])
        self.assertNotIn("ctx", tools["steps"]["inputSchema"]["properties"])

    async def test_standard_library_hints_round_trip(self):
        import datetime, decimal, pathlib, uuid
        server, seen = Server("hints"), {}

        @server.tool()
        def echo(d: datetime.date, dt: datetime.datetime, t: datetime.time, u: uuid.UUID,
                 n: decimal.Decimal, p: pathlib.Path, b: bytes, days: list[datetime.date]) -> dict:
            seen.update(d=d, dt=dt, t=t, u=u, n=n, p=p, b=b, days=days)
            return {"d": d, "dt": dt, "t": t, "u": u, "n": n, "p": p, "b": b, "days": days}

        @server.tool()
        def tomorrow(d: datetime.date) -> datetime.date:
            return d + datetime.timedelta(days=1)
        wire = Wire(server)
        await wire.initialize()
        sent = {"d": "2024-02-29", "dt": "2024-02-29T10:30:00Z", "t": "10:30:00", "n": 0.1,
                "u": "12345678-1234-5678-1234-567812345678", "p": "/tmp/x.txt", "b": "AAEC/w==",
                "days": ["2024-01-01"]}
        result = (await wire.request(call(1, "echo", sent)))["result"]
        self.assertNotIn("isError", result, result)
        self.assertEqual(seen, {
            "d": datetime.date(2024, 2, 29), "t": datetime.time(10, 30),
            "dt": datetime.datetime(2024, 2, 29, 10, 30, tzinfo=datetime.timezone.utc),
            "u": uuid.UUID("12345678-1234-5678-1234-567812345678"), "n": decimal.Decimal("0.1"),
            "p": pathlib.Path("/tmp/x.txt"), "b": b"\x00\x01\x02\xff", "days": [datetime.date(2024, 1, 1)]})
        self.assertEqual(result["structuredContent"], dict(sent, dt="2024-02-29T10:30:00+00:00", n="0.1"))
        result = (await wire.request(call(2, "tomorrow", {"d": "2024-02-29"})))["result"]
        self.assertEqual(result["structuredContent"], {"result": "2024-03-01"})
        for i, (name, bad) in enumerate((("d", "2024-13-01"), ("u", "not-a-uuid"), ("n", "lots"),
                                         ("b", "not base64!"), ("days", ["yesterday"]))):
            result = (await wire.request(call(10 + i, "echo", dict(sent, **{name: bad}))))["result"]
            self.assertTrue(result.get("isError"), result)
            self.assertIn(f"Invalid arguments: {name}: not a valid", result["content"][0]["text"])

    async def test_pagination(self):
        server = Server("many")
        for i in range(250):
            server.add_tool(lambda: "x", f"tool{i:03d}")
        wire = Wire(server)
        await wire.initialize()
        names, cursor, pages = [], None, 0
        while True:
            params = {} if cursor is None else {"cursor": cursor}
            result = (await wire.request(rpc(100 + pages, "tools/list", params)))["result"]
            names += [t["name"] for t in result["tools"]]
            pages += 1
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        self.assertEqual(pages, 3)
        self.assertEqual(names, [f"tool{i:03d}" for i in range(250)])
        for i, bad in enumerate(("abc", "99999", 5, "-1", "")):
            response = await wire.request(rpc(200 + i, "tools/list", {"cursor": bad}))
            self.assertEqual(response["error"]["code"], INVALID_PARAMS, bad)

    async def test_call(self):
        response = await self.wire.request(call(1, "add", {"a": 2, "b": 3}))
        self.assertEqual(response["result"], {"content": [{"type": "text", "text": "5"}],
                                              "structuredContent": {"result": 5}})

    async def test_unknown_tool(self):
        response = await self.wire.request(call(1, "nope"))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)
        self.assertEqual(response["id"], 1)

    async def test_bad_arguments_are_a_tool_error(self):
        cases = [({"a": "x", "b": 1}, "Invalid arguments for tool 'add': a: expected integer, got string"),
                 ({"a": 1}, "Invalid arguments for tool 'add': b: required property is missing"),
                 ({"a": 1, "b": 2, "c": 3}, "Invalid arguments for tool 'add': c: unexpected property"),
                 ({"a": True, "b": 2}, "Invalid arguments for tool 'add': a: expected integer, got boolean")]
        for i, (arguments, message) in enumerate(cases):
            result = (await self.wire.request(call(i, "add", arguments)))["result"]
            self.assertEqual(result, {"content": [{"type": "text", "text": message}], "isError": True})
        response = await self.wire.request(rpc(9, "tools/call", {"name": "add", "arguments": [1, 2]}))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)

    async def test_mcp_error_becomes_tool_error(self):
        result = (await self.wire.request(call(1, "refuse")))["result"]
        self.assertEqual(result, {"content": [{"type": "text", "text": "No such user: bob."}], "isError": True})

    async def test_exception_text_never_leaks(self):
        # SECURITY.md G56: the secret and the path stay in the server log.
        with self.assertLogs("mcp_min", "ERROR") as logs:
            result = (await self.wire.request(call(1, "leak")))["result"]
        self.assertTrue(result["isError"])
        wire_text = json.dumps(result)
        for secret in ("abc", "token", ".ssh", "/home", "id_rsa", "ValueError", "Traceback"):
            self.assertNotIn(secret, wire_text)
        self.assertIn("id_rsa", "\n".join(logs.output))

    async def test_sync_tool_runs_off_the_loop(self):
        # The sync tool blocks its thread until released; a ping must still be answered.
        try:
            self.wire.feed(call(1, "blocking"))
            self.assertEqual((await self.wire.request(rpc(2, "ping")))["result"], {})
            self.assertEqual(self.wire.answers(1), [])
        finally:
            self.state.thread_gate.set()
        self.assertEqual(tool_text(await self.wire.response(1)), "unblocked")

    async def test_cancellation(self):
        self.wire.feed(call(5, "wait"))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        self.wire.feed(note("notifications/cancelled", {"requestId": 5, "reason": "user"}))
        await self.wire.settle()
        self.assertTrue(self.state.cancelled)
        self.assertEqual(self.wire.answers(5), [])
        self.assertIn((None, 5), self.wire.sent)       # the transport learns the request ended
        self.assertEqual(self.wire.session.running, {})
        self.wire.feed(note("notifications/cancelled", {"requestId": 5}))     # again: ignored
        self.assertEqual((await self.wire.request(rpc(6, "ping")))["result"], {})
        self.assertEqual(tool_text(await self.wire.request(call(5, "add", {"a": 1, "b": 1}))), "2")

    async def test_progress(self):
        response = await self.wire.request(call(1, "steps", meta={"progressToken": "tok-1"}))
        self.assertEqual(tool_text(response), "done")
        progress = [(m, related) for m, related in self.wire.sent
                    if m and m.get("method") == "notifications/progress"]
        self.assertEqual([m["params"] for m, _ in progress], [
            {"progressToken": "tok-1", "progress": i, "total": 3, "message": f"step {i}"}
            for i in (1, 2, 3)])
        self.assertTrue(all(related == 1 for _, related in progress))
        order = [m.get("method") or m.get("id") for m in self.wire.messages[1:]]
        self.assertEqual(order, ["notifications/progress"] * 3 + [1])

    async def test_progress_token_zero_and_absent(self):
        await self.wire.request(call(1, "steps", {"n": 2}, meta={"progressToken": 0}))
        tokens = [m["params"]["progressToken"] for m in self.wire.messages
                  if m.get("method") == "notifications/progress"]
        self.assertEqual(tokens, [0, 0])
        await self.wire.request(call(2, "steps", {"n": 2}))
        self.assertEqual(len([m for m in self.wire.messages if m.get("method") == "notifications/progress"]), 2)

    async def test_log_level(self):
        def logs():
            return [(m["params"]["level"], m["params"].get("logger")) for m in self.wire.messages
                    if m.get("method") == "notifications/message"]
        await self.wire.request(call(1, "chat"))
        self.assertEqual(logs(), [("info", None), ("warning", "test"), ("error", None)])
        self.assertEqual((await self.wire.request(rpc(2, "logging/setLevel", {"level": "error"})))["result"], {})
        await self.wire.request(call(3, "chat"))
        self.assertEqual(logs()[3:], [("error", None)])
        response = await self.wire.request(rpc(4, "logging/setLevel", {"level": "loud"}))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)

    async def test_request_cancelled_before_its_task_ran_is_not_stuck(self):
        # Regression: cancel in the same loop turn as the request left the id in
        # `running` forever (no response, the id refused, drain() spinning).
        self.wire.feed(call(7, "wait"))
        self.wire.feed(note("notifications/cancelled", {"requestId": 7}))
        await self.wire.settle()
        self.assertEqual(self.wire.session.running, {})
        self.assertEqual(self.wire.answers(7), [])
        self.assertIn((None, 7), self.wire.sent)     # "no response" reaches the transport
        self.assertEqual((await self.wire.request(rpc(7, "ping")))["result"], {})

    async def test_a_cursor_of_thousands_of_digits_is_invalid_params(self):
        for cursor in ("1" * 5000, "9" * 10):
            response = await self.wire.request(rpc(1, "tools/list", {"cursor": cursor}))
            self.assertEqual(response["error"]["code"], INVALID_PARAMS, cursor[:12])

    async def test_arguments_that_are_not_an_object_are_refused(self):
        for i, arguments in enumerate((False, [], 0, "", "x")):
            response = await self.wire.request(rpc(i + 1, "tools/call", {"name": "count",
                                                                         "arguments": arguments}))
            self.assertEqual(response["error"]["code"], INVALID_PARAMS, repr(arguments))
            response = await self.wire.request(rpc(i + 10, "prompts/get", {"name": "review",
                                                                           "arguments": arguments}))
            self.assertEqual(response["error"]["code"], INVALID_PARAMS, repr(arguments))
        self.assertEqual(self.state.calls, 0)
        response = await self.wire.request(rpc(20, "tools/call", {"name": "count", "arguments": None}))
        self.assertEqual(tool_text(response), "counted")

    async def test_argument_types_the_schema_promises(self):
        @dataclasses.dataclass
        class Point:
            x: int
            y: int = 0
            norm: float = dataclasses.field(init=False, default=0.0)

        server = Server("s")

        @server.tool()
        def repeat(s: str, n: int) -> str:
            return s * n            # a float n would raise TypeError

        @server.tool()
        def where(p: Point) -> str:
            return f"{p.x},{p.y}"

        @server.tool()
        def pair(p: tuple[int, str]) -> str:
            return repr(p)

        class Count(typing.TypedDict):
            n: int

        @server.tool()
        def counted(c: Count) -> str:
            return repr(c["n"])

        wire = Wire(server)
        await wire.initialize()
        self.assertEqual(tool_text(await wire.request(call(1, "repeat", {"s": "ab", "n": 2.0}))), "abab")
        point = server.tools["where"].input_schema["properties"]["p"]
        self.assertEqual(point["required"], ["x"])
        # Keys the constructor does not take (an extra one, an init=False field) are ignored.
        # issue 40: a member no field takes is refused, as at the top level (it was dropped)
        self.assertEqual(tool_text(await wire.request(call(2, "where", {"p": {"x": 1, "y": 2, "z": 3}}))),
                         "Invalid arguments for tool 'where': p.z: unexpected property")
        self.assertEqual(tool_text(await wire.request(call(3, "where", {"p": {"x": 1, "norm": 2.5}}))), "1,0")
        response = await wire.request(call(4, "pair", {"p": ["a", 1]}))
        self.assertTrue(response["result"]["isError"])
        self.assertIn("p[0]: expected integer", tool_text(response))
        self.assertEqual(tool_text(await wire.request(call(5, "pair", {"p": [1, "a"]}))), "(1, 'a')")
        self.assertEqual(tool_text(await wire.request(call(6, "counted", {"c": {"n": 2.0}}))), "2")

    async def test_dataclasses_out_with_init_false_fields_and_in_with_initvars(self):
        @dataclasses.dataclass
        class Scaled:
            x: int
            scale: dataclasses.InitVar[int] = 1
            norm: float = dataclasses.field(init=False, default=0.0)

            def __post_init__(self, scale):
                self.x *= scale

        server = Server("s")

        @server.tool()
        def make(x: int) -> Scaled:
            return Scaled(x)

        @server.tool()
        def scaled(p: Scaled) -> int:
            return p.x

        wire = Wire(server)
        await wire.initialize()
        result = (await wire.request(call(1, "make", {"x": 2})))["result"]
        self.assertEqual(result["structuredContent"], {"x": 2, "norm": 0.0})
        self.assertEqual(tool_text(await wire.request(call(2, "scaled", {"p": {"x": 2, "scale": 3}}))), "6")

    async def test_content_and_none_returns_declare_no_output_schema(self):
        server = Server("s")

        @server.tool()
        def pictures() -> list[Content]:
            return [mcp_min.text("a"), mcp_min.image(b"x")]

        @server.tool()
        def nothing() -> None:
            pass

        for name in ("pictures", "nothing"):
            self.assertNotIn("outputSchema", server.tools[name].definition, name)
        wire = Wire(server)
        await wire.initialize()
        result = (await wire.request(call(1, "pictures")))["result"]
        self.assertEqual([c["type"] for c in result["content"]], ["text", "image"])
        self.assertNotIn("structuredContent", result)
        self.assertEqual((await wire.request(call(2, "nothing")))["result"], {"content": []})

    async def test_a_progress_token_that_is_not_a_string_or_number_is_ignored(self):
        for i, token in enumerate((True, {"a": 1}, None)):
            response = await self.wire.request(call(i + 1, "steps", {"n": 2}, {"progressToken": token}))
            self.assertEqual(tool_text(response), "done")
        self.assertFalse([m for m in self.wire.messages if m.get("method") == "notifications/progress"])
        await self.wire.request(call(9, "steps", {"n": 2}, {"progressToken": 1.5}))
        self.assertEqual(len([m for m in self.wire.messages if m.get("method") == "notifications/progress"]), 2)


class ToolFailureLogTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_self_referential_result_logs_one_line(self):
        # Regression (issue 15): each call logged a 124 KB RecursionError traceback.
        server = Server("loops")

        @server.tool()
        def loop() -> list:
            x = []
            x.append(x)
            return x
        wire = Wire(server)
        await wire.initialize()
        with self.assertLogs("mcp_min", "ERROR") as logs:
            result = (await wire.request(call(1, "loop")))["result"]
        self.assertTrue(result["isError"])
        self.assertEqual(len(logs.records), 1)
        self.assertIsNone(logs.records[0].exc_info)
        self.assertLess(len(logs.output[0]), 200)


class SessionResourcesPromptsTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.server, self.state = make_server()
        self.wire = Wire(self.server)
        await self.wire.initialize()

    async def test_list_and_templates(self):
        result = (await self.wire.request(rpc(1, "resources/list")))["result"]
        self.assertEqual(sorted(r["uri"] for r in result["resources"]), ["blob://logo", "config://app"])
        config = next(r for r in result["resources"] if r["uri"] == "config://app")
        self.assertEqual(config, {"uri": "config://app", "name": "config",
                                  "description": "App configuration.", "mimeType": "application/json"})
        result = (await self.wire.request(rpc(2, "resources/templates/list")))["result"]
        self.assertEqual(result["resourceTemplates"], [{"uriTemplate": "users://{name}/profile",
                                                        "name": "profile"}])

    async def test_read(self):
        result = (await self.wire.request(rpc(1, "resources/read", {"uri": "config://app"})))["result"]
        self.assertEqual(result["contents"], [{"uri": "config://app", "mimeType": "application/json",
                                               "text": '{"debug": true}'}])
        result = (await self.wire.request(rpc(2, "resources/read", {"uri": "users://ada%20l/profile"})))["result"]
        self.assertEqual(result["contents"], [{"uri": "users://ada%20l/profile", "text": "profile of ada l"}])
        result = (await self.wire.request(rpc(3, "resources/read", {"uri": "blob://logo"})))["result"]
        self.assertEqual(result["contents"], [{"uri": "blob://logo", "mimeType": "image/png",
                                               "blob": base64.b64encode(b"\x89PNG").decode()}])

    async def test_unknown_resource(self):
        response = await self.wire.request(rpc(1, "resources/read", {"uri": "nope://x"}))
        self.assertEqual(response["error"], {"code": RESOURCE_NOT_FOUND, "message": "Resource not found",
                                             "data": {"uri": "nope://x"}})
        response = await self.wire.request(rpc(2, "resources/read", {}))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)

    async def test_hostile_uri_answered_quickly(self):
        uri = "users://" + "1," * 25_000 + "X"
        started = time.perf_counter()
        response = await self.wire.request(rpc(1, "resources/read", {"uri": uri}))
        self.assertLess(time.perf_counter() - started, 1.0)
        self.assertEqual(response["error"]["code"], RESOURCE_NOT_FOUND)

    async def test_subscribe(self):
        other = Wire(self.server)
        await other.initialize()
        self.assertEqual((await self.wire.request(rpc(1, "resources/subscribe", {"uri": "config://app"})))["result"], {})
        self.server.resource_updated("config://app")
        self.server.resource_updated("blob://logo")
        update = await self.wire.wait_for(lambda m: m.get("method") == "notifications/resources/updated")
        self.assertEqual(update["params"], {"uri": "config://app"})
        await self.wire.request(rpc(2, "resources/unsubscribe", {"uri": "config://app"}))
        self.server.resource_updated("config://app")
        await self.wire.settle()
        updates = [m for m in self.wire.messages if m.get("method") == "notifications/resources/updated"]
        self.assertEqual(len(updates), 1)
        self.assertFalse([m for m in other.messages if m.get("method") == "notifications/resources/updated"])

    async def test_subscribe_needs_a_resource_and_is_bounded(self):
        # Regression (issue 15): anything was accepted; 200 x 1 MiB URIs cost 205 MiB.
        for i, uri in enumerate(("nope://x", "users://ada/profile/extra", "users://" + "a" * 9000 + "/profile")):
            error = (await self.wire.request(rpc(i, "resources/subscribe", {"uri": uri})))["error"]
            self.assertEqual((error["code"], len(error["data"]["uri"]) <= mcp_min.MAX_URI),
                             (RESOURCE_NOT_FOUND, True))
        with mock.patch.object(mcp_min, "MAX_SUBSCRIPTIONS", 2):
            for i, uri in enumerate(("config://app", "users://ada/profile", "config://app"), 10):
                self.assertEqual((await self.wire.request(rpc(i, "resources/subscribe", {"uri": uri})))["result"], {})
            error = (await self.wire.request(rpc(20, "resources/subscribe", {"uri": "blob://logo"})))["error"]
        self.assertEqual(error["code"], INVALID_PARAMS)
        self.assertEqual(self.wire.session.subscriptions, {"config://app", "users://ada/profile"})

    async def test_prompts(self):
        prompts = (await self.wire.request(rpc(1, "prompts/list")))["result"]["prompts"]
        self.assertEqual(prompts, [{"name": "review", "description": "Review some code.", "arguments": [
            {"name": "code", "description": "The code to review", "required": True},
            {"name": "style", "required": False}]}])
        result = (await self.wire.request(rpc(2, "prompts/get", {"name": "review",
                                                                "arguments": {"code": "x=1"}})))["result"]
        self.assertEqual(result, {"description": "Review some code.", "messages": [
            {"role": "user", "content": {"type": "text", "text": "Review (short): x=1"}}]})

    async def test_prompt_errors(self):
        cases = [{"name": "review", "arguments": {}},                  # missing required argument
                 {"name": "nope"},                                      # unknown prompt
                 {"name": "review", "arguments": {"code": 5}},         # arguments are strings
                 {}]
        for i, params in enumerate(cases):
            response = await self.wire.request(rpc(i, "prompts/get", params))
            self.assertEqual(response["error"]["code"], INVALID_PARAMS, params)

    async def test_completion(self):
        params = {"ref": {"type": "ref/prompt", "name": "review"},
                  "argument": {"name": "style", "value": "l"}}
        result = (await self.wire.request(rpc(1, "completion/complete", params)))["result"]
        self.assertEqual(result, {"completion": {"values": ["long", "loud"], "total": 2, "hasMore": False}})
        params["argument"] = {"name": "code", "value": "x"}           # nothing registered: no values
        result = (await self.wire.request(rpc(2, "completion/complete", params)))["result"]
        self.assertEqual(result["completion"]["values"], [])
        params["ref"] = {"type": "ref/prompt", "name": "nope"}
        response = await self.wire.request(rpc(3, "completion/complete", params))
        self.assertEqual(response["error"]["code"], INVALID_PARAMS)

    async def test_a_completion_that_returns_one_string_suggests_it_whole(self):
        # Regression (issue 35): a str was taken as a list, one suggestion a character.
        self.server.completion("review", "code")(lambda value: value + "()")
        params = {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "code", "value": "run"}}
        result = (await self.wire.request(rpc(1, "completion/complete", params)))["result"]
        self.assertEqual(result["completion"]["values"], ["run()"])

    async def test_an_unknown_uri_is_not_echoed_whole(self):
        # Regression (issue 35): resources/read's -32002 held the URI whole, megabytes if sent (R22).
        uri = "nope://" + "a" * (mcp_min.MAX_URI * 4)
        error = (await self.wire.request(rpc(1, "resources/read", {"uri": uri})))["error"]
        self.assertEqual((error["code"], error["data"]["uri"]), (RESOURCE_NOT_FOUND, uri[:mcp_min.MAX_URI]))


##############################################################################
# Core: content, what tools return
##############################################################################

class ToolResultTest(unittest.TestCase):
    """What a tool returns becomes a CallToolResult."""

    def result(self, fn, value):
        return mcp_min.Tool(fn).result(value)

    def test_str(self):
        def f() -> str: ...
        self.assertEqual(self.result(f, "hi"), {"content": [{"type": "text", "text": "hi"}]})

    def test_dict_is_structured(self):
        def f() -> dict: ...
        result = self.result(f, {"a": 1})
        self.assertEqual(result["structuredContent"], {"a": 1})
        self.assertEqual(json.loads(result["content"][0]["text"]), {"a": 1})

    def test_list_and_int_are_wrapped(self):
        def f() -> list[int]: ...
        tool = mcp_min.Tool(f)
        self.assertEqual(tool.output_schema["properties"]["result"], {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(tool.result([1, 2])["structuredContent"], {"result": [1, 2]})

        def g() -> int: ...
        self.assertEqual(self.result(g, 5)["structuredContent"], {"result": 5})

        def h(): ...
        self.assertEqual(self.result(h, [1])["structuredContent"], {"result": [1]})

    def test_dataclass(self):
        @dataclasses.dataclass
        class User:
            name: str
            tags: tuple = ()

        def f() -> User: ...
        result = self.result(f, User("ada", ("x",)))
        self.assertEqual(result["structuredContent"], {"name": "ada", "tags": ["x"]})

    def test_content_blocks(self):
        def f(): ...
        block = mcp_min.text("hello", annotations={"priority": 1})
        self.assertEqual(self.result(f, block), {"content": [block]})
        pic = mcp_min.image(b"\x89PNG")
        self.assertEqual(pic, {"type": "image", "data": base64.b64encode(b"\x89PNG").decode(),
                               "mimeType": "image/png"})
        sound = mcp_min.audio(b"RIFF", "audio/x-wav")
        self.assertEqual(sound["type"], "audio")
        self.assertEqual(base64.b64decode(sound["data"]), b"RIFF")
        self.assertEqual(self.result(f, [pic, sound]), {"content": [pic, sound]})
        self.assertEqual(mcp_min.image("QUJD")["data"], "QUJD")     # already base64
        link = mcp_min.resource_link("file:///a", "a")
        self.assertEqual(link, {"type": "resource_link", "uri": "file:///a", "name": "a"})
        embedded = mcp_min.embedded_resource("file:///b", b"\x00", "application/octet-stream")
        self.assertEqual(embedded["resource"], {"uri": "file:///b", "mimeType": "application/octet-stream",
                                                "blob": "AA=="})

    def test_plain_dict_is_not_a_content_block(self):
        def f(): ...
        result = self.result(f, {"type": "text", "text": "x"})
        self.assertEqual(result["structuredContent"], {"type": "text", "text": "x"})

    def test_none(self):
        def f(): ...
        self.assertEqual(self.result(f, None), {"content": []})

    def test_output_not_matching_schema_is_an_error(self):
        def f() -> int: ...
        result = self.result(f, "not an int")
        self.assertTrue(result["isError"])
        self.assertNotIn("structuredContent", result)

    def test_a_schema_json_cannot_hold_fails_at_registration(self):
        # A second read: a NaN in an author's schema passed registration, then failed every
        # tools/list with -32603.
        def f(): ...
        nan = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("nan")}}}
        for option in ("input_schema", "output_schema"):
            with self.assertRaises(TypeError) as raised:
                mcp_min.Tool(f, **{option: nan})
            self.assertIn(f"tool 'f': {option} is not JSON", str(raised.exception))

    def test_the_authors_output_schema_holds_for_every_return(self):
        # Issue 35 (a careful read): a str return skipped the author's outputSchema (no
        # structuredContent, which a tool with one MUST send), and one not of an object, which
        # no structuredContent can match, failed every call: now refused at registration.
        def f(): ...
        said = mcp_min.Tool(f, output_schema={"type": "object", "properties": {"result": {"type": "string"}}})
        self.assertEqual(said.result("hi")["structuredContent"], {"result": "hi"})
        strict = mcp_min.Tool(f, output_schema={"type": "object", "required": ["name"]})
        with self.assertLogs("mcp_min", "ERROR") as logged:
            self.assertTrue(strict.result("hi")["isError"])
        self.assertIn("outputSchema: structuredContent.name: required property is missing", logged.output[0])
        # kept as given, so that its $ref still finds its $defs (SchemaKeywordsTest checks them)
        schema = {"$defs": {"P": {"type": "object", "required": ["a"]}}, "$ref": "#/$defs/P"}
        self.assertEqual(mcp_min.Tool(f, output_schema=schema).definition["outputSchema"], schema)
        for bad in ({"type": "array", "items": {"type": "integer"}}, {"type": ["string", "null"]}):
            with self.assertRaises(ValueError) as raised:
                mcp_min.Tool(f, output_schema=bad)
            self.assertIn("output_schema must describe an object", str(raised.exception))
        mcp_min.Tool(f, output_schema={"type": ["object", "null"]})     # an object among them: taken
        with self.assertRaises(TypeError):
            mcp_min.Tool(f, output_schema='{"type": "object"}')

    def test_optional_return_of_none_meets_the_output_schema(self):
        server = Server("s")

        @server.tool()
        def maybe() -> typing.Optional[dict]:
            return None
        result = server.tools["maybe"].result(None)
        self.assertEqual(result["structuredContent"], {"result": None})
        self.assertIsNone(validate(result["structuredContent"], server.tools["maybe"].output_schema))


##############################################################################
# Core: the registry of tools, resources and prompts
##############################################################################

class DecoratorTest(unittest.TestCase):
    def test_decorators_return_the_function(self):
        server = Server("s")

        @server.tool()
        def forecast(city: str) -> str:
            return f"{city}: sunny"

        @server.resource("notes://{day}")
        def notes(day: str) -> str:
            return day

        @server.prompt()
        def review(code: str) -> str:
            return code

        @server.completion("review", "code")
        def snippets(prefix: str) -> list:
            return [prefix]
        self.assertEqual(forecast("Paris"), "Paris: sunny")     # a plain function still
        self.assertEqual((notes("mon"), review("x"), snippets("d")), ("mon", "x", ["d"]))
        self.assertIs(server.tools["forecast"].fn, forecast)
        self.assertIs(server.resources["notes://{day}"].fn, notes)

    def test_bare_tool_and_prompt_decorators_register(self):
        server = Server("s")

        @server.tool
        def ping_me() -> str:
            return "pong"

        @server.prompt
        def hello(name: str) -> str:
            return f"Hello {name}"
        self.assertEqual(ping_me(), "pong")
        self.assertEqual(hello("Ada"), "Hello Ada")
        self.assertEqual(list(server.tools), ["ping_me"])
        self.assertEqual(list(server.prompts), ["hello"])

    def test_a_name_that_is_not_a_string_is_refused(self):
        server = Server("s")
        for decorator in (server.tool, server.prompt):
            with self.assertRaisesRegex(TypeError, "a name is a string, not int"):
                decorator(123)

    def test_a_bare_resource_decorator_says_how_to_write_it(self):
        server = Server("s")
        with self.assertRaisesRegex(TypeError, r'@server.resource\("notes://today"\)'):
            @server.resource
            def today() -> str:
                return ""
        self.assertEqual(server.resources, {})

    def test_positional_only_parameters_are_refused_at_registration(self):
        server = Server("s")
        with self.assertRaisesRegex(ValueError, "positional-only"):
            server.tool()(lambda a, /: a)


class ToolNameTest(unittest.TestCase):
    def test_valid(self):
        for name in ("a", "get_user", "users.get-v2", "A" * 128):
            self.assertEqual(mcp_min.Tool(lambda: None, name).name, name)

    def test_invalid(self):
        for name in ("", "a b", "x/y", "ü", "A" * 129, "tool\u0000", "a:b"):
            with self.assertRaises(ValueError, msg=repr(name)):
                mcp_min.Tool(lambda: None, name)


class UriTemplateTest(unittest.TestCase):
    def test_match(self):
        t = mcp_min._UriTemplate("users://{name}/profile")
        self.assertEqual(t.match("users://ada/profile"), {"name": "ada"})
        self.assertEqual(t.match("users://ada%20l/profile"), {"name": "ada l"})
        self.assertIsNone(t.match("users://a/b/profile"))        # a variable never spans '/'
        self.assertIsNone(t.match("users:///profile"))           # nor is empty
        self.assertIsNone(t.match("users://ada/profile/x"))
        self.assertIsNone(t.match("other://ada/profile"))
        two = mcp_min._UriTemplate("repo://{owner}/{name}")
        self.assertEqual(two.match("repo://me/proj"), {"owner": "me", "name": "proj"})
        self.assertIsNone(two.match("repo://me/proj/x"))

    def test_unsupported_template_rejected(self):
        # "{a}{b}": no URI says where one ends and the next begins (issue 35: taken, matched wrong)
        for bad in ("r://{/ids*}", "r://{a", "r://{}", "r://{a}{b}", "r://x/{a}{b}/y"):
            with self.assertRaises(ValueError):
                mcp_min._UriTemplate(bad)

    def test_hostile_uri_is_linear(self):
        # SECURITY.md J74 / CVE-2026-0621: 50,000 characters answer in far less than a second.
        templates = [mcp_min._UriTemplate(t) for t in
                     ("users://{name}/profile", "r://{a},{b},{c}X", "r://{a}/{b}")]
        uris = ["users://" + "1," * 25_000 + "X", "r://" + "1," * 25_000 + "Y",
                "r://" + "a" * 50_000, "users://" + "a" * 50_000 + "/profil"]
        started = time.perf_counter()
        for t in templates:
            for uri in uris:
                t.match(uri)
        self.assertLess(time.perf_counter() - started, 1.0)

    def test_uri_template_values_cannot_walk_a_path(self):
        template = mcp_min._UriTemplate("file:///docs/{name}")
        for uri in ("file:///docs/..%2F..%2Fetc%2Fpasswd", "file:///docs/a%00b", "file:///docs/..",
                    "file:///docs/C:..", "file:///docs/%43%3Ax",
                    "file:///docs/a%5Cb", "file:///docs/a/b"):
            self.assertIsNone(template.match(uri), uri)
        self.assertEqual(template.match("file:///docs/read%20me"), {"name": "read me"})


##############################################################################
# Core: schemas from type hints, and arguments checked against them
##############################################################################

class SchemaTest(unittest.TestCase):
    """Input schemas from type hints."""

    @staticmethod
    def schema(fn):
        return mcp_min.Tool(fn).input_schema

    def prop(self, hint, **default):
        ns = {"T": hint}
        if default:
            exec("def f(x: T = D): pass", {"D": default["default"], **ns}, ns)
        else:
            exec("def f(x: T): pass", ns, ns)
        return self.schema(ns["f"])["properties"]["x"]

    def test_simple_types(self):
        def f(s: str, i: int, x: float, b: bool):
            pass
        schema = self.schema(f)
        self.assertEqual(schema, {"type": "object", "properties": {
            "s": {"type": "string"}, "i": {"type": "integer"}, "x": {"type": "number"},
            "b": {"type": "boolean"}}, "required": ["s", "i", "x", "b"],
            "additionalProperties": False})

    def test_optional(self):
        for hint in (typing.Optional[int], int | None):
            prop = self.prop(hint, default=None)
            self.assertEqual(prop["anyOf"], [{"type": "integer"}, {"type": "null"}])
        def f(x: typing.Optional[int] = None):
            pass
        self.assertNotIn("required", self.schema(f))

    def test_containers(self):
        self.assertEqual(self.prop(list[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(self.prop(dict[str, int]),
                         {"type": "object", "additionalProperties": {"type": "integer"}})
        self.assertEqual(self.prop(list), {"type": "array"})

    def test_literal_and_enum(self):
        self.assertEqual(self.prop(typing.Literal["a", "b"]), {"enum": ["a", "b"], "type": "string"})

        class Color(enum.Enum):
            RED = "red"
            BLUE = "blue"
        self.assertEqual(self.prop(Color), {"enum": ["red", "blue"], "type": "string"})

    def test_typeddict(self):
        class Point(typing.TypedDict):
            """A point."""
            x: int
            y: int

        class Partial(typing.TypedDict, total=False):
            x: int
        point = self.prop(Point)
        self.assertEqual(point["type"], "object")
        self.assertEqual(point["properties"], {"x": {"type": "integer"}, "y": {"type": "integer"}})
        self.assertEqual(point["required"], ["x", "y"])
        self.assertEqual(point["description"], "A point.")
        self.assertNotIn("required", self.prop(Partial))

    def test_dataclass(self):
        @dataclasses.dataclass
        class Item:
            name: str
            qty: int = 1
        item = self.prop(Item)
        self.assertEqual(item["properties"], {"name": {"type": "string"}, "qty": {"type": "integer"}})
        self.assertEqual(item["required"], ["name"])
        self.assertNotIn("description", item)   # the generated "Item(name: str, ...)" doc is skipped

    def test_annotated_description(self):
        self.assertEqual(self.prop(typing.Annotated[str, "The user's name"]),
                         {"type": "string", "description": "The user's name"})

    def test_defaults_are_optional(self):
        def f(a: int, b: int = 2, c: str = "x"):
            """Do it.

            Details that are not the description."""
        tool = mcp_min.Tool(f)
        self.assertEqual(tool.input_schema["required"], ["a"])
        self.assertEqual(tool.input_schema["properties"]["b"], {"type": "integer", "default": 2})
        self.assertEqual(tool.definition["description"], "Do it.")

    def test_context_hidden_and_kwargs_open(self):
        def f(x: int, ctx: Context, **rest):
            pass
        schema = self.schema(f)
        self.assertEqual(list(schema["properties"]), ["x"])
        self.assertNotIn("additionalProperties", schema)


def _with_hint(hint):
    def f(w):
        pass
    f.__annotations__ = {"w": hint}
    return f


class HintTest(unittest.TestCase):
    """Standard-library hints pydantic users expect, and hints refused at registration."""

    def test_standard_library_hints_have_json_forms(self):
        import datetime, decimal, pathlib, uuid

        def f(d: datetime.date, dt: datetime.datetime, t: datetime.time, u: uuid.UUID,
              n: decimal.Decimal, p: pathlib.Path, b: bytes, when: datetime.date = datetime.date(2024, 1, 2)):
            pass
        props = mcp_min.Tool(f).input_schema["properties"]
        self.assertEqual(props["d"], {"type": "string", "format": "date"})
        self.assertEqual(props["dt"], {"type": "string", "format": "date-time"})
        self.assertEqual(props["t"], {"type": "string", "format": "time"})
        self.assertEqual(props["u"], {"type": "string", "format": "uuid"})
        self.assertEqual(props["n"], {"type": ["number", "string"]})
        self.assertEqual(props["p"], {"type": "string", "format": "path"})
        self.assertEqual(props["b"], {"type": "string", "contentEncoding": "base64"})
        self.assertEqual(props["when"]["default"], "2024-01-02")    # a default as JSON

    def test_a_literal_of_enum_members_travels_as_their_values(self):
        # Regression (issue 35): the schema listed the members themselves, which JSON cannot hold.
        class Color(enum.Enum):
            RED, BLUE = "red", "blue"
        server = Server("s")

        @server.tool()
        def paint(color: typing.Literal[Color.RED, Color.BLUE]) -> str:
            return repr(color)
        self.assertEqual(server.tools["paint"].input_schema["properties"]["color"],
                         {"enum": ["red", "blue"], "type": "string"})

        async def calls():
            wire = Wire(server)
            await wire.initialize()
            blue = await wire.request(call(1, "paint", {"color": "blue"}))
            green = await wire.request(call(2, "paint", {"color": "green"}))
            return tool_text(blue), green["result"]["isError"]
        self.assertEqual(asyncio.run(calls()), (repr(Color.BLUE), True))

    def test_containers_from_collections_abc_and_typing_markers(self):
        import collections.abc
        self.assertEqual(SchemaTest().prop(collections.abc.Sequence[int]),
                         {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(SchemaTest().prop(collections.abc.Mapping[str, bool]),
                         {"type": "object", "additionalProperties": {"type": "boolean"}})
        self.assertEqual(SchemaTest().prop(typing.NewType("UserId", int)), {"type": "integer"})

    def test_an_unsupported_hint_is_refused_at_registration(self):
        class Widget:
            pass
        server = Server("s")
        for hint in (Widget, typing.Callable[[int], str], list[Widget], dict[str, Widget],
                     typing.Optional[Widget], typing.Iterator[int]):
            ns = {"T": hint}
            exec("def make(thing: T): pass", ns)
            with self.subTest(hint=hint), self.assertRaises(TypeError) as raised:
                server.tool()(ns["make"])
            self.assertIn("make()", str(raised.exception))          # the function,
            self.assertIn("parameter 'thing'", str(raised.exception))   # the parameter,
            self.assertRegex(str(raised.exception), r"Widget|Callable|Iterator")  # and the hint
        self.assertEqual(server.tools, {})

        def widget() -> Widget:
            pass
        with self.assertRaisesRegex(TypeError, r"widget\(\): its return value: .*Widget"):
            server.tool()(widget)
        with self.assertRaisesRegex(TypeError, "parameter 'w'"):
            server.prompt()(_with_hint(Widget))

    def test_any_and_no_hint_take_any_json_value(self):
        def f(a: typing.Any, b, c: object, d: typing.TypeVar("T")):
            pass
        self.assertEqual(mcp_min.Tool(f).input_schema["properties"], {"a": {}, "b": {}, "c": {}, "d": {}})

    def test_hints_that_registered_before_still_do(self):
        # Review of the refusal: these had a JSON form all along (or were taken as any value).
        import collections

        class Name(str):
            pass

        class Point(typing.NamedTuple):
            x: int
            y: float
        prop = SchemaTest().prop
        self.assertEqual(prop(Name), {"type": "string"})
        self.assertEqual(prop(Point), {"type": "array", "minItems": 2, "maxItems": 2,
                                       "prefixItems": [{"type": "integer"}, {"type": "number"}]})
        self.assertEqual(prop(typing.Deque[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(prop(collections.OrderedDict), {"type": "object"})
        self.assertEqual(prop(typing.DefaultDict[str, int]),
                         {"type": "object", "additionalProperties": {"type": "integer"}})
        self.assertEqual(mcp_min._convert("ada", Name), "ada")
        self.assertIs(type(mcp_min._convert("ada", Name)), Name)
        self.assertEqual(mcp_min._convert([1, 2.5], Point), Point(1, 2.5))
        self.assertEqual(mcp_min._convert([1, 2], typing.Deque[int]), collections.deque([1, 2]))
        self.assertEqual(mcp_min._convert([1, 2], typing.AbstractSet[int]), frozenset({1, 2}))

        def never() -> typing.NoReturn:
            raise McpError(INVALID_PARAMS, "no")
        self.assertIsNone(mcp_min.Tool(never).output_schema)

    def test_not_required_counts_under_string_annotations(self):
        ns = {"__name__": __name__}     # where typing.get_type_hints looks the names up
        exec("from __future__ import annotations\nimport typing\n"
             "class Ask(typing.TypedDict):\n    when: str\n    tag: typing.NotRequired[int]\n", ns)
        if not hasattr(typing, "NotRequired"):
            self.skipTest("typing.NotRequired is 3.11+")
        self.assertEqual(SchemaTest().prop(ns["Ask"])["required"], ["when"])

    def test_a_union_with_str_falls_back_to_the_text(self):
        import datetime
        hint = typing.Union[datetime.date, str]
        self.assertEqual(mcp_min._convert("2024-01-02", hint), datetime.date(2024, 1, 2))
        self.assertEqual(mcp_min._convert("tomorrow", hint), "tomorrow")
        with self.assertRaises(ValueError):
            mcp_min._convert("tomorrow", typing.Optional[datetime.date])

    def test_a_decimal_must_be_finite_and_of_sane_size(self):
        import decimal
        self.assertEqual(mcp_min._convert("12.50", decimal.Decimal), decimal.Decimal("12.50"))
        for bad in ("NaN", "sNaN", "Infinity", "1e999999999", "lots"):
            with self.subTest(bad=bad), self.assertRaises((ValueError, ArithmeticError)):
                mcp_min._convert(bad, decimal.Decimal)

    def test_iterables_and_mappings_return_as_json(self):
        import types as pytypes
        self.assertEqual(mcp_min._to_json(range(3)), [0, 1, 2])
        self.assertEqual(mcp_min._to_json(x * 2 for x in range(2)), [0, 2])
        self.assertEqual(mcp_min._to_json(pytypes.MappingProxyType({"a": (1,)})), {"a": [1]})


class ConvertTest(unittest.IsolatedAsyncioTestCase):
    """Validated arguments become what the hints ask for."""

    async def test_arguments_are_converted(self):
        class Color(enum.Enum):
            RED = "red"

        @dataclasses.dataclass
        class Item:
            name: str

        seen = {}

        def f(color: Color, item: Item, pair: tuple[int, int], ratio: float):
            seen.update(color=color, item=item, pair=pair, ratio=ratio)
        await mcp_min.Tool(f).call({"color": "red", "item": {"name": "x"}, "pair": [1, 2],
                                    "ratio": 2}, None)
        self.assertIs(seen["color"], Color.RED)
        self.assertEqual(seen["item"], Item("x"))
        self.assertEqual(seen["pair"], (1, 2))
        self.assertIs(type(seen["ratio"]), float)


class ValidateTest(unittest.TestCase):
    obj = {"type": "object", "properties": {"a": {"type": "integer"},
                                            "p": {"type": "object", "properties": {"x": {"type": "string"}}},
                                            "xs": {"type": "array", "items": {"type": "number"}}},
           "required": ["a"], "additionalProperties": False}

    def test_valid(self):
        self.assertIsNone(validate({"a": 1, "p": {"x": "y"}, "xs": [1, 2.5]}, self.obj))
        self.assertIsNone(validate(2.0, {"type": "integer"}))
        self.assertIsNone(validate("x", {"unknownKeyword": 1}))

    def test_messages_name_the_place(self):
        self.assertEqual(validate({"a": "x"}, self.obj), "a: expected integer, got string")
        self.assertEqual(validate({}, self.obj), "a: required property is missing")
        self.assertEqual(validate({"a": 1, "b": 2}, self.obj), "b: unexpected property")
        self.assertEqual(validate({"a": 1, "p": {"x": 1}}, self.obj), "p.x: expected string, got integer")
        self.assertEqual(validate({"a": 1, "xs": [1, "2"]}, self.obj), "xs[1]: expected number, got string")
        self.assertEqual(validate([], self.obj), "arguments: expected object, got array")

    def test_bool_is_not_a_number(self):
        self.assertEqual(validate(True, {"type": "integer"}), "arguments: expected integer, got boolean")
        self.assertIsNotNone(validate(True, {"type": "number"}))

    def test_keywords(self):
        self.assertIsNotNone(validate("c", {"enum": ["a", "b"]}))
        self.assertIsNone(validate(1, {"enum": [1.0]}))
        self.assertIsNotNone(validate(True, {"enum": [1]}))
        self.assertIsNotNone(validate([], {"minItems": 1}))
        self.assertIsNone(validate(None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}))
        self.assertIsNotNone(validate("x", {"anyOf": [{"type": "integer"}, {"type": "null"}]}))


class CompiledSchemaTest(unittest.TestCase):
    """Schemas and hints compiled once (issue 11's types as data), read against a review."""

    def test_an_authors_schema_is_copied_so_what_is_advertised_is_checked(self):
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        server = Server("s")
        server.add_tool(lambda n=0: n, "count", input_schema=schema)
        schema["required"] = ["n"]      # changed afterwards: neither advertised nor checked
        tool = server.tools["count"]
        self.assertNotIn("required", tool.definition["inputSchema"])
        self.assertIsNone(tool.check_input({}, ""))

    def test_loaders_leave_unchecked_values_of_another_json_type_alone(self):
        @dataclasses.dataclass
        class Item:
            name: str
        self.assertEqual(mcp_min._convert("xyz", tuple[str, ...]), "xyz")   # not ('x', 'y', 'z')
        self.assertEqual(mcp_min._convert("123", list[int]), "123")
        self.assertEqual(mcp_min._convert("text", Item), "text")
        self.assertEqual(mcp_min._convert("text", dict[str, int]), "text")

    def test_a_recursive_dataclass_loads_at_any_depth(self):
        module = types.ModuleType("recursive_nodes")     # where 'list[Node]' is looked up
        sys.modules[module.__name__] = module
        self.addCleanup(sys.modules.pop, module.__name__)
        exec("import dataclasses\n@dataclasses.dataclass\nclass Node:\n    v: int\n"
             "    kids: 'list[Node]'\n", module.__dict__)
        Node = module.Node
        data = {"v": 0, "kids": []}
        for i in range(1, 31):
            data = {"v": i, "kids": [data]}
        node, depth = mcp_min._convert(data, Node), 0
        while node.kids:
            self.assertIsInstance(node, Node)
            node, depth = node.kids[0], depth + 1
        self.assertEqual((type(node), depth), (Node, 30))

    def test_malformed_keywords_are_ignored_never_raised(self):
        for schema in ({"anyOf": {"a": 1}}, {"oneOf": "ab"}, {"required": [[1], "a"]},
                       {"type": 5}, {"enum": 5}, {"minimum": "2"}, {"properties": ["a"]}):
            with self.subTest(schema=schema):
                self.assertIsNone(validate({"a": 1}, schema))


class SchemaAbuseTest(unittest.TestCase):
    """validate against schemas made to cost: false."""

    def test_a_false_subschema_refuses(self):
        # Issue 34 item 16: false inside anyOf, allOf or behind a $ref accepted everything,
        # and oneOf [true, false] refused everything.
        for value, schema in ((1, {"anyOf": [False]}),
                              ({"a": 1}, {"properties": {"a": {"anyOf": [False, {"type": "string"}]}}})):
            with self.subTest(schema=schema):
                self.assertIsNotNone(validate(value, schema))
        self.assertEqual(validate(1, {"anyOf": [False]}), "arguments: does not match any allowed form")
        self.assertIsNone(validate(1, {"anyOf": [False, True]}))
        self.assertIsNone(validate({"a": "s"}, {"properties": {"a": {"anyOf": [False, {"type": "string"}]}}}))


##############################################################################
# Core: HTTP, the front door (SECURITY.md groups B-F, I)
##############################################################################

def check_host_on_a_non_loopback_bind(test, **allowed_to_bind):
    """Bound to 0.0.0.0 (as `allowed_to_bind` allows), the server still checks Host."""
    # Regression: binding 0.0.0.0 turned the Host allowlist off (R3: fail closed).
    http = mcp_min.HttpServer(test.server, "0.0.0.0", 0, **allowed_to_bind)
    for host, allowed in (("evil.example", False), ("192.168.1.5:8080", False),
                          ("localhost:8080", True), ("127.0.0.1", True)):
        request = mcp_min._parse_head(f"POST /mcp HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        if allowed:
            http._check_peer(request)
        else:
            with test.assertRaises(mcp_min._HttpError, msg=host) as caught:
                http._check_peer(request)
            test.assertEqual(caught.exception.status, 403)
    http = mcp_min.HttpServer(test.server, "0.0.0.0", 0, **allowed_to_bind, allow_hosts=["192.168.1.5"])
    http._check_peer(mcp_min._parse_head(b"POST /mcp HTTP/1.1\r\nHost: 192.168.1.5:8080\r\n\r\n"))


class HttpHostOriginTest(HttpTestCase):
    """SECURITY.md B4-B8 and A3: DNS rebinding, Origin, CORS."""

    async def test_rebinding_probe_refused_and_mints_nothing(self):
        response = await self.client.post(rpc(0, "initialize", init_params()),
                                          headers={"Host": "evil.example.com",
                                                   "Origin": "http://evil.example.com"})
        self.assertEqual(response.status, 403)
        self.assertNotIn(b"evil", response.body)
        self.assertIsNone(response.header("mcp-session-id"))
        self.assertEqual(self.http.sessions, {})

    async def test_good_localhost_hosts(self):
        for host in (f"localhost:{self.port}", f"127.0.0.1:{self.port}", f"[::1]:{self.port}",
                     "localhost", f"LOCALHOST:{self.port}"):
            origin = "http://" + host
            response = await self.client.post(rpc(0, "initialize", init_params()),
                                              headers={"Host": host, "Origin": origin})
            self.assertEqual(response.status, 200, host)

    async def test_bad_hosts_on_every_endpoint(self):
        sid = await self.client.initialize()
        for host in (f"0.0.0.0:{self.port}", f"192.168.1.5:{self.port}", "localhost.evil.example.com",
                     f"evil.example.com:{self.port}", "localhost:abc", "127.0.0.2", "[::2]:80"):
            for method, path, body in (("GET", "/mcp", None), ("GET", "/sse", None),
                                       ("POST", "/messages?sessionId=abc", rpc(1, "ping")),
                                       ("POST", "/mcp", call(1, "count")),
                                       ("DELETE", "/mcp", None)):
                response = await self.client.request(method, path, body, {
                    "Host": host, "Mcp-Session-Id": sid, "Accept": "text/event-stream, application/json"})
                self.assertEqual(response.status, 403, (host, method, path))
        self.assertEqual(self.state.calls, 0)
        self.assertEqual(list(self.http.sessions), [sid])

    async def test_missing_and_duplicate_host(self):
        response = await self.client.request("POST", "/mcp", rpc(1, "ping"), {"Host": None})
        self.assertEqual(response.status, 400)
        data = self.client.build("POST", "/mcp", rpc(1, "ping")).replace(
            b"\r\n", f"\r\nHost: localhost:{self.port}\r\n".encode(), 1)
        response = await self.client.exchange(data, check_close=True)
        self.assertEqual(response.status, 400)
        self.assertTrue(response.closed)

    async def test_origins(self):
        for origin in ("http://evil.example.com", "null", "about:blank", "not a url",
                       "http://localhost.evil.example.com", f"http://localhost:{self.port}/path",
                       "file://localhost", "http://localhost@evil.example.com"):
            response = await self.client.post(rpc(0, "initialize", init_params()),
                                              headers={"Origin": origin})
            self.assertEqual(response.status, 403, origin)
            self.assertNotIn(b"evil", response.body)
        self.assertEqual(self.http.sessions, {})
        for origin in (f"http://localhost:{self.port}", f"https://127.0.0.1:{self.port}", None):
            response = await self.client.post(rpc(0, "initialize", init_params()), headers={"Origin": origin})
            self.assertEqual(response.status, 200, origin)

    async def test_no_permissive_cors(self):
        response = await self.client.request("OPTIONS", "/mcp", headers={
            "Origin": "http://evil.example.com", "Access-Control-Request-Method": "POST"})
        self.assertEqual(response.status, 403)      # transports: an invalid Origin gets 403, first
        self.assertFalse([k for k in response.headers if k.startswith("access-control-")])
        response = await self.client.post(rpc(0, "initialize", init_params()))
        self.assertIsNone(response.header("access-control-allow-origin"))

    def test_host_is_checked_on_a_non_loopback_bind(self):
        check_host_on_a_non_loopback_bind(self, insecure=True)


class HttpCorsCase(HttpTestCase):
    """Allowed origins (the fixture, and a preflight)."""

    options = {"allow_origins": ["http://app.example"]}

    def preflight(self, extra=""):
        return (f"OPTIONS /mcp HTTP/1.1\r\nHost: localhost:{self.port}\r\nOrigin: http://app.example\r\n"
                f"Access-Control-Request-Method: POST\r\n{extra}").encode()


class HttpCorsTest(HttpCorsCase):
    """Allowed origins: preflights, and CORS headers that end with their request."""

    async def test_a_preflight_body_is_never_read_as_a_request(self):
        # Regression: OPTIONS skipped the body check, so its body ran as the next request.
        hidden = f"DELETE /nope HTTP/1.1\r\nHost: localhost:{self.port}\r\nContent-Length: 0\r\n\r\n".encode()
        for extra, body in ((f"Content-Length: {len(hidden)}\r\n\r\n", hidden),
                            ("Transfer-Encoding: chunked\r\n\r\n", b"0\r\n\r\n")):
            response = await self.client.exchange(self.preflight(extra) + body, check_close=True)
            self.assertEqual((response.status, response.closed), (400, True), extra)

    async def test_a_preflight_has_no_content_length_and_its_cors_ends_with_it(self):
        reader, writer = await self.client.connect()
        writer.write(self.preflight("\r\n"))
        response = await read_response(reader)
        self.assertEqual(response.status, 204)
        self.assertIsNone(response.header("content-length"))    # RFC 9110 8.6
        self.assertEqual(response.header("access-control-allow-origin"), "http://app.example")
        writer.write(b"0\r\n\r\n")     # garbage next: its 400 carries no CORS of the last request
        response = await read_response(reader)
        self.assertEqual(response.status, 400)
        self.assertIsNone(response.header("access-control-allow-origin"))


class HttpContentTypeTest(HttpTestCase):
    """SECURITY.md B9 / GO GHSA-89xv-2j6f-qhc8: the tool must not run."""

    async def test_rejected_content_types(self):
        sid = await self.client.initialize()
        for content_type in ("text/plain", "application/x-www-form-urlencoded",
                             "multipart/form-data; boundary=x", "text/plain; a=application/json",
                             None, "application/json, text/plain", "application/jsonx", ""):
            response = await self.client.post(call(1, "count"), sid, LATEST_PROTOCOL_VERSION,
                                              {"Content-Type": content_type}, check_close=True)
            self.assertEqual(response.status, 415, content_type)
        data = self.client.build("POST", "/mcp", call(1, "count"), {"Mcp-Session-Id": sid}).replace(
            b"\r\n", b"\r\nContent-Type: text/plain\r\n", 1)
        self.assertEqual((await self.client.exchange(data)).status, 400)     # two Content-Type lines
        await self.assertNothingRan(sid)

    async def test_accepted_content_types(self):
        sid = await self.client.initialize()
        for i, content_type in enumerate(("application/json; charset=utf-8", "Application/JSON",
                                          "application/json ; charset=UTF-8")):
            response = await self.client.post(call(i, "count"), sid, LATEST_PROTOCOL_VERSION,
                                              {"Content-Type": content_type})
            self.assertEqual(response.status, 200, content_type)
        self.assertEqual(self.state.calls, 3)

    async def test_accept_header(self):
        sid = await self.client.initialize()
        for accept in ("application/json", "text/event-stream", None, "text/html"):
            response = await self.client.post(rpc(1, "ping"), sid, headers={"Accept": accept})
            self.assertEqual(response.status, 406, accept)


class HttpBindTest(unittest.TestCase):
    """SECURITY.md A1-A2."""

    def test_default_host_is_loopback(self):
        self.assertEqual(inspect.signature(start_http).parameters["host"].default, "127.0.0.1")
        self.assertEqual(mcp_min._serve_parser().parse_args([]).host, "127.0.0.1")

    def test_non_loopback_needs_token_or_insecure(self):
        server = make_server()[0]
        for host in ("0.0.0.0", "::", "192.168.1.5", "example.com"):
            with self.assertRaises(ValueError):
                mcp_min.HttpServer(server, host, 0)
            mcp_min.HttpServer(server, host, 0, insecure=True)
        for host in ("127.0.0.1", "localhost", "::1", "127.0.0.5"):
            mcp_min.HttpServer(server, host, 0)


class HttpRequestLineTest(HttpTestCase):
    async def test_absolute_form_and_a_leading_empty_line(self):
        # RFC 9112 3.2.2: a server MUST accept absolute-form, its authority being the host;
        # 2.2: an empty line before the request line SHOULD be ignored.
        message = rpc(0, "initialize", init_params())
        accept = {"Accept": "application/json, text/event-stream"}
        good = self.client.build("POST", f"http://127.0.0.1:{self.port}/mcp", message, accept)
        self.assertEqual((await self.client.exchange(b"\r\n" + good)).status, 200)
        request = mcp_min._parse_head(b"GET http://h:1?a=1 HTTP/1.1\r\n\r\n")
        self.assertEqual((request.path, request.query, request.headers), ("/", "a=1", {"host": "h:1"}))
        evil = self.client.build("POST", "http://evil.example.com/mcp", message, accept)
        self.assertEqual((await self.client.exchange(evil)).status, 403)    # the authority is checked


class HttpFramingTest(HttpTestCase):
    """SECURITY.md group D: raw bytes at the parser."""

    async def raw(self, data, **options):
        return await self.client.exchange(data, check_close=True, **options)

    async def test_close_among_the_connection_options_closes(self):
        # Regression (issue 35): "close" was heard only alone; the header is a list (RFC 9110 7.6.1).
        sid = await self.client.initialize()
        response = await self.client.post(rpc(1, "ping"), sid, headers={"Connection": "keep-alive, Close"},
                                          check_close=True)
        self.assertEqual((response.status, response.closed), (200, True))

    async def test_413_before_the_body_is_read(self):
        sid = await self.client.initialize()
        reader, writer = await self.client.connect()
        try:
            writer.write(self.client.build("POST", "/mcp", None, {
                "Mcp-Session-Id": sid, "Content-Type": "application/json",
                "Content-Length": str(10 * 1024 * 1024)}))
            response = await read_response(reader, timeout=5)     # no body was sent
            self.assertEqual(response.status, 413)
            self.assertTrue(await closed_by_server(reader))
        finally:
            writer.close()
        self.assertEqual(list(self.http.sessions), [sid])

    async def test_body_limit_edge(self):
        sid = await self.client.initialize()
        message = json.dumps(rpc(1, "ping")).encode()
        exact = message + b" " * (mcp_min.MAX_BODY_BYTES - len(message))
        response = await self.client.post(exact, sid)
        self.assertEqual(response.status, 200)
        over = exact + b" "
        response = await self.raw(self.client.build("POST", "/mcp", None, {
            "Mcp-Session-Id": sid, "Content-Type": "application/json",
            "Content-Length": str(len(over))}))
        self.assertEqual(response.status, 413)

    async def test_smuggling_set(self):
        body = json.dumps(call(1, "count")).encode()
        sid = await self.client.initialize()
        base = {"Mcp-Session-Id": sid}
        cases = {
            "CL+TE": {"Transfer-Encoding": "chunked"},
            "CL +5": {"Content-Length": "+%d" % len(body)},
            "CL -1": {"Content-Length": "-1"},
            "CL 0x10": {"Content-Length": "0x10"},
            "CL 5,6": {"Content-Length": "%d,%d" % (len(body), len(body))},
            "CL arabic digit": {"Content-Length": "\u0665"},
            "CL 1e2": {"Content-Length": "1e2"},
        }
        for name, headers in cases.items():
            data = self.client.build("POST", "/mcp", body, {**base, **{
                k: v for k, v in headers.items() if k != "Content-Length"}})
            if "Content-Length" in headers:
                data = data.replace(b"Content-Length: %d" % len(body),
                                    b"Content-Length: " + headers["Content-Length"].encode("utf-8"))
            response = await self.raw(data)
            self.assertEqual(response.status, 400, name)
            self.assertTrue(response.closed, name)
        data = self.client.build("POST", "/mcp", body, base).replace(
            b"\r\n", b"\r\nContent-Length: %d\r\n" % (len(body) + 1), 1)
        self.assertEqual((await self.raw(data)).status, 400)                 # two Content-Lengths
        data = self.client.build("POST", "/mcp", body, {**base, "Content-Length": None,
                                                      "Transfer-Encoding": "xchunked"})
        # TE alone: refused. RFC 9112 allows 400 or 501 too; ours says what to send instead.
        response = await self.raw(data)
        self.assertEqual((response.status, response.closed), (411, True))
        data = self.client.build("POST", "/mcp", body, {**base, "Transfer-Encoding": "chunked"}).replace(
            b"HTTP/1.1\r\n", b"HTTP/1.0\r\n", 1)
        self.assertEqual((await self.raw(data)).status, 400)                 # TE on HTTP/1.0
        await self.assertNothingRan(sid)

    async def test_bad_lines_and_bytes(self):
        sid = await self.client.initialize()
        good = self.client.build("POST", "/mcp", call(1, "count"), {"Mcp-Session-Id": sid})
        host = f"Host: 127.0.0.1:{self.port}\r\n".encode()
        cases = {
            "bare LF inside the head": good.replace(host, host[:-2] + b"\nX-A: 1\r\n"),
            "obs-fold": good.replace(host, host + b"X-A: 1\r\n  folded\r\n"),
            "NUL in value": good.replace(host, host + b"X-A: a\x00b\r\n"),
            "bare CR in value": good.replace(host, host + b"X-A: a\rb\r\n"),
            "space before colon": good.replace(b"Content-Length:", b"Content-Length :"),
            "colon-less line": good.replace(host, host + b"NoColonHere\r\n"),
            "bad method": good.replace(b"POST /mcp", b"P?ST /mcp"),
            "two spaces": good.replace(b"POST /mcp", b"POST  /mcp"),
        }
        for name, data in cases.items():
            response = await self.raw(data)
            self.assertEqual(response.status, 400, name)
            self.assertTrue(response.closed, name)
        await self.assertNothingRan(sid)

    async def test_non_ascii_target(self):
        response = await self.raw(f"GET /mcp\xe9 HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n"
                                  .encode("latin-1"), timeout=3)
        self.assertEqual(response.status, 400)

    async def test_bare_lf_request_is_refused_at_once(self):
        data = self.client.build("POST", "/mcp", call(1, "count")).replace(b"\r\n", b"\n")
        reader, writer = await self.client.connect()
        try:
            writer.write(data)      # no EOF: the answer must not wait for HEADER_TIMEOUT
            response = await read_response(reader, timeout=TIMEOUT)
            self.assertTrue(await closed_by_server(reader))
        finally:
            writer.close()
        self.assertEqual(response.status, 400)
        self.assertIn("CRLF", response.json()["error"]["message"])
        self.assertEqual(self.state.calls, 0)

    async def test_sizes(self):
        long_target = b"GET /mcp?" + b"a" * 100_000 + f" HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n".encode()
        self.assertEqual((await self.raw(long_target)).status, 414)
        medium_target = b"GET /mcp?" + b"a" * 10_000 + f" HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n".encode()
        self.assertEqual((await self.raw(medium_target)).status, 414)
        huge_header = self.client.build("GET", "/mcp", headers={"X-Big": "b" * 100_000})
        self.assertEqual((await self.raw(huge_header)).status, 431)
        many = self.client.build("GET", "/mcp", headers={f"X-H{i}": "1" for i in range(200)})
        self.assertEqual((await self.raw(many)).status, 431)

    async def test_huge_header_in_small_segments(self):
        reader, writer = await self.client.connect()
        reading = asyncio.ensure_future(read_response(reader))
        writer.write(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nX-Big: ".encode())
        with contextlib.suppress(ConnectionError):
            for _ in range(100):
                writer.write(b"b" * 1000)
                await writer.drain()
                await asyncio.sleep(0.001)
            writer.write(b"\r\n\r\n")
            await writer.drain()
        self.assertEqual((await reading).status, 431)

    async def test_routing(self):
        response = await self.client.request("GET", "/nope")
        self.assertEqual(response.status, 404)
        response = await self.client.request("GET", "/mcp/../etc/passwd")
        self.assertEqual(response.status, 404)
        for method in ("PUT", "PATCH"):
            response = await self.client.request(method, "/mcp", rpc(1, "ping"))
            self.assertEqual(response.status, 405, method)
            self.assertEqual(response.header("allow"), "GET, POST, DELETE")
        response = await self.client.request("GET", "/messages")
        self.assertEqual(response.status, 405)

    async def test_pipelined_requests(self):
        sid = await self.client.initialize()
        data = b"".join(self.client.build("POST", "/mcp", rpc(i, "ping"), {"Mcp-Session-Id": sid})
                        for i in range(1, 21))
        reader, writer = await self.client.connect()
        try:
            writer.write(data)
            for i in range(1, 21):
                response = await read_response(reader)
                self.assertEqual(response.status, 200)
                self.assertEqual(response.json(), {"jsonrpc": "2.0", "id": i, "result": {}})
        finally:
            writer.close()

    async def test_error_response_holds_nothing_of_the_next_request(self):
        sid = await self.client.initialize()
        bad = self.client.build("GET", "/mcp", headers={"X-A": "a\x00b"})
        nxt = self.client.build("POST", "/mcp", call(1, "count", {"marker": "MARKER-123"}),
                                {"Mcp-Session-Id": sid})
        response = await self.raw(bad + nxt)
        self.assertEqual(response.status, 400)
        self.assertTrue(response.closed)
        self.assertNotIn(b"MARKER", response.body)
        await self.assertNothingRan(sid)

    async def test_expect_100_continue_is_answered_before_the_body(self):
        sid = await self.client.initialize()
        body = json.dumps(rpc(1, "ping")).encode()
        head = self.client.build("POST", "/mcp", body, {"Mcp-Session-Id": sid, "Expect": "100-continue"})
        head = head[:-len(body)]
        reader, writer = await self.client.connect()
        writer.write(head)
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        self.assertEqual(interim, b"HTTP/1.1 100 Continue\r\n\r\n")
        writer.write(body)
        self.assertEqual((await read_response(reader)).json()["result"], {})
        # Refused before the body: no 100, the final status instead.
        head = self.client.build("POST", "/mcp", None, {"Expect": "100-continue", "Content-Type":
                                 "application/json", "Content-Length": str(1 << 30)})
        self.assertEqual((await self.client.exchange(head)).status, 413)


async def quiet_streams(test, primed):
    """A slow call's answer, then the session's GET stream, each quiet; `primed`: what each
    begins with is checked (the priming event of resumable streams, an extension's: if there is
    one, it comes first), then the rest is read."""
    with mock.patch.object(mcp_min, "KEEPALIVE_INTERVAL", 0.1):
        sid = await test.client.initialize()
        test.state.gate.clear()
        reader, writer = await test.client.connect()
        writer.write(test.client.build("POST", "/mcp", call(1, "wait"), {"Mcp-Session-Id": sid}))
        head = await read_head(reader)
        test.assertTrue(head.header("content-type").startswith("text/event-stream"))
        await primed(reader)
        first = await asyncio.wait_for(reader.readuntil(b"\n\n"), TIMEOUT)
        test.assertIn(b": keepalive", first)
        test.state.gate.set()
        test.assertEqual(tool_text(json.loads((await read_event(reader))["data"])), "released")
        # The session's GET stream, quiet, gets comment lines too.
        reader, writer = await test.client.connect()
        writer.write(test.client.build("GET", "/mcp", headers={
            "Mcp-Session-Id": sid, "Accept": "text/event-stream"}))
        test.assertEqual((await read_head(reader)).status, 200)
        await primed(reader)
        for _ in range(2):
            test.assertEqual(await asyncio.wait_for(reader.readuntil(b"\n\n"), TIMEOUT),
                             b": keepalive\n\n")


class HttpLimitsTest(HttpTestCase):
    """SECURITY.md 1.5: the named limits, shrunk so that hitting them is cheap."""

    async def test_header_deadline(self):
        with mock.patch.object(mcp_min, "HEADER_TIMEOUT", 0.2):
            reader, writer = await self.client.connect()
            writer.write(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n".encode())
            response = await read_response(reader)
            self.assertEqual(response.status, 408)
            self.assertTrue(await closed_by_server(reader))

    async def test_body_deadline(self):
        sid = await self.client.initialize()
        with mock.patch.object(mcp_min, "BODY_TIMEOUT", 0.2):
            reader, writer = await self.client.connect()
            writer.write(self.client.build("POST", "/mcp", None, {
                "Mcp-Session-Id": sid, "Content-Type": "application/json",
                "Content-Length": "100"}) + b'{"jsonrpc"')
            response = await read_response(reader)
            self.assertEqual(response.status, 408)
            self.assertTrue(await closed_by_server(reader))

    async def test_idle_keep_alive_closed(self):
        with mock.patch.object(mcp_min, "IDLE_TIMEOUT", 0.2):
            reader, writer = await self.client.connect()
            writer.write(self.client.build("POST", "/mcp", rpc(0, "initialize", init_params())))
            self.assertEqual((await read_response(reader)).status, 200)
            self.assertEqual(await asyncio.wait_for(reader.read(), TIMEOUT), b"")

    async def test_deadline_moves_without_new_timers(self):
        loop = asyncio.get_running_loop()

        async def past(when):       # the barrier: every loop timer due by `when` has run
            reached = loop.create_future()
            loop.call_at(when + 0.001, reached.set_result, None)
            await reached
        fired = []
        deadline = mcp_min._Timer(loop)
        deadline.set(0.05, lambda: fired.append("early"))
        first = deadline.handle
        deadline.set(0.2, lambda: fired.append("late"))     # later: the first timer re-arms
        self.assertIs(deadline.handle, first)
        await past(first.when())
        self.assertEqual(fired, [])
        self.assertEqual(deadline.handle.when(), deadline.when)
        await past(deadline.when)
        self.assertEqual(fired, ["late"])
        deadline.set(0.05, lambda: fired.append("cleared"))
        timer = deadline.handle
        deadline.clear()
        await past(timer.when())
        self.assertEqual(fired, ["late"])
        deadline.set(0.05, lambda: fired.append("cancelled"))
        deadline.cancel()
        self.assertIsNone(deadline.handle)

    async def test_quiet_streams_get_keepalives(self):
        # A slow call's answer becomes a stream that carries keepalives, result last.
        async def past_priming(reader):
            if hasattr(mcp_min, "_Resumable"):      # its test: test_streams_are_primed_with_a_retry
                await asyncio.wait_for(reader.readuntil(b"\n\n"), TIMEOUT)
        await quiet_streams(self, past_priming)

    async def test_connection_cap(self):
        with mock.patch.object(mcp_min, "MAX_CONNECTIONS", 1):
            reader, writer = await self.client.connect()
            for _ in range(300):
                if self.http.connections == 1:
                    break
                await asyncio.sleep(0.01)
            response = await self.client.request("POST", "/mcp", rpc(0, "initialize", init_params()))
            self.assertEqual(response.status, 503)
            writer.close()
            for _ in range(300):
                if self.http.connections == 0:
                    break
                await asyncio.sleep(0.01)
            response = await self.client.request("POST", "/mcp", rpc(0, "initialize", init_params()))
            self.assertEqual(response.status, 200)

    async def test_session_cap(self):
        with mock.patch.object(mcp_min, "MAX_SESSIONS", 2):
            await self.client.initialize()
            await self.client.initialize()
            response = await self.client.post(rpc(0, "initialize", init_params()))
            self.assertJsonRpcError(response, 503, INTERNAL_ERROR)
            response = await self.client.request("GET", "/sse", headers={"Accept": "text/event-stream"})
            self.assertEqual(response.status, 503)
        self.assertEqual(len(self.http.sessions), 2)

    async def test_write_deadline_frees_a_stalled_stream(self):
        # SECURITY.md R25: a reader that stops reading is cut off after WRITE_TIMEOUT.
        sid = await self.client.initialize()
        with mock.patch.object(mcp_min, "WRITE_TIMEOUT", 0.3):
            reader, writer = await self.client.connect()
            writer.write(self.client.build("POST", "/mcp", call(7, "flood", {"n": 3000, "size": 4000},
                                                                meta={"progressToken": 1}),
                                           {"Mcp-Session-Id": sid}))
            self.state.gate.set()
            await read_head(reader)            # then never read again, never close
            await asyncio.wait_for(self.state.flood_done.wait(), 30)
            for _ in range(500):
                if self.http.connections == 0:
                    break
                await asyncio.sleep(0.01)
            self.assertEqual(self.http.connections, 0)
            self.assertEqual((self.http.sessions[sid].posts, self.http.sessions[sid].session.replies), (set(), {}))
            self.assertEqual((await self.ping(sid)).status, 200)

    async def test_close_does_not_wait_for_idle_keepalive_connections(self):
        other = await start_http(self.server, "127.0.0.1", 0)
        client = HttpClient(other.port)
        await client.initialize()          # leaves a kept-alive connection open
        await asyncio.wait_for(other.close(), 5)
        await client.close()

    async def test_a_silent_connection_gets_the_header_deadline(self):
        # Regression: the head's deadline started at its first byte; a silent
        # connection held a slot for the 75 s idle timeout instead.
        with mock.patch.object(mcp_min, "HEADER_TIMEOUT", 0.2):
            reader, _ = await self.client.connect()
            response = await read_response(reader, timeout=5)
            self.assertEqual(response.status, 408)
            self.assertTrue(await closed_by_server(reader))


class SmallParsersTest(unittest.TestCase):
    """The HTTP request line, the SSE parser: what a fuzzer found (issue 34 F)."""

    def test_control_bytes_in_an_absolute_form_authority_are_refused(self):
        # Issue 34 item 20: GET http://local\x01host/mcp passed the request-line check (then 403).
        for byte in (b"\x01", b"\x1b", b"\x7f", b"\xff"):
            with self.subTest(byte=byte):
                with self.assertRaises(mcp_min._HttpError) as caught:
                    mcp_min._parse_head(b"GET http://local%shost/mcp HTTP/1.1\r\nHost: localhost\r\n\r\n" % byte)
                self.assertEqual(caught.exception.status, 400)
        request = mcp_min._parse_head(b"GET http://localhost:1/mcp HTTP/1.1\r\nHost: localhost\r\n\r\n")
        self.assertEqual((request.path, request.headers["host"]), ("/mcp", "localhost:1"))

    @staticmethod
    def events(pieces, limit):
        parser, events = mcp_min._SseParser(limit), []
        for piece in pieces:
            events += parser.feed(piece)
        return events

    def assertSameWhateverTheCuts(self, data, limit):
        whole = self.events([data], limit)
        for at in range(len(data) + 1):
            self.assertEqual(self.events([data[:at], b"", data[at:]], limit), whole, (data, limit, at))
        self.assertEqual(self.events([data[i:i + 1] for i in range(len(data))], limit), whole, (data, limit))
        return whole

    def test_sse_events_do_not_depend_on_where_chunks_are_cut(self):
        # Issue 34 item 20: an empty chunk between \r and \n made the \n a second line end (an
        # event cut in two); "data:" then \r\r, and a line too long, read differently cut.
        self.assertEqual(self.events([b"data: x\r", b"", b"\ndata: y\r\n\r\n"], 100),
                         [{"event": "message", "data": "x\ny"}])
        for limit in (3, 5, 8, 100):
            self.assertSameWhateverTheCuts(b"data:\r\rdata: abcdef\n\ndata: ab\n\n", limit)
        self.assertEqual(self.assertSameWhateverTheCuts(b"data: abcdefghij\r\n\r\ndata: ok\r\n\r\n", 8),
                         [{"event": "message", "too_big": (b"abcdefghij", b"abcdefghij")},
                          {"event": "message", "data": "ok"}])

    def test_sse_events_the_same_in_a_random_sweep_of_cuts(self):
        # Issue 34 item 20: seeded, with _EDGE (the ends kept of a line too long) 2 bytes, so
        # that short lines take the long-line path.
        bom = b"\xef\xbb\xbf"

        def stream(rng):
            parts = [bom] if rng.random() < 0.2 else []
            for _ in range(rng.randint(1, 12)):
                field = rng.choice([b"data:", b"data: ", b"data: ", b"data:  ", b"event: ", b"id: ", b"retry: ",
                                    b": ", b"", b"dat"])
                value = bytes(rng.choice(b"ab \r\n:" if rng.random() < 0.1 else b"abcxyz")
                              for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 13, 30])))
                parts.append(field + value + rng.choice([b"\n", b"\r", b"\r\n", b"\n\n", b"\r\r", b"\r\n\r\n"]))
            return b"".join(parts)
        differ = []
        with mock.patch.object(mcp_min, "_EDGE", 2):
            for seed in range(1500):
                rng = __import__("random").Random(seed)
                data, limit = stream(rng), rng.choice([1, 2, 3, 4, 6, 9, 16, 40])
                whole = self.events([data], limit)
                for _ in range(3):
                    cuts = sorted(rng.randint(0, len(data)) for _ in range(rng.randint(1, 8)))
                    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
                    if self.events(pieces, limit) != whole:
                        differ.append((seed, limit, pieces))
        self.assertEqual(differ[:3], [], f"{len(differ)} of 1500 streams read differently when cut")


class HttpAuthorityBytesTest(HttpTestCase):
    async def test_a_control_byte_in_an_absolute_form_authority_is_400(self):
        # Issue 34 item 20, on a socket: it went on to the Host check (403), against the
        # request line's own rule.
        for byte in (b"\x01", b"\x1b", b"\x7f"):
            with self.subTest(byte=byte):
                line = b"GET http://127.0.0.1%s:%d/mcp HTTP/1.1\r\n" % (byte, self.port)
                response = await self.client.exchange(line + b"Host: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n"
                                                      b"\r\n" % self.port)
                self.assertEqual(response.status, 400)


##############################################################################
# Core: HTTP, Streamable HTTP at /mcp
##############################################################################

class HttpSessionTest(HttpTestCase):
    """SECURITY.md group C."""

    async def test_session_ids(self):
        ids = [await self.client.initialize() for _ in range(20)]
        self.assertEqual(len(set(ids)), 20)
        for sid in ids:
            self.assertRegex(sid, r"^[\x21-\x7e]{22,128}$")
        self.assertEqual(sorted(self.http.sessions), sorted(ids))

    async def test_missing_session_id(self):
        await self.client.initialize()
        self.assertJsonRpcError(await self.client.post(call(1, "count")), 400, INVALID_REQUEST)
        self.assertEqual(self.state.calls, 0)

    async def test_unknown_and_malformed_session_ids(self):
        response = await self.ping(os.urandom(16).hex())
        self.assertJsonRpcError(response, 404, INVALID_REQUEST)
        for sid in ("a b", "\xe9" * 8, "x" * 10_000, "../../etc"):
            response = await self.ping(sid)         # never ours, whatever its shape: 404
            self.assertJsonRpcError(response, 404, INVALID_REQUEST)

    async def test_delete_then_404(self):
        sid = await self.client.initialize()
        self.assertEqual((await self.ping(sid)).status, 200)
        response = await self.client.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
        self.assertEqual(response.status, 200)      # the spec names no status; ours is 200
        self.assertEqual((await self.ping(sid)).status, 404)
        for method in ("GET", "DELETE"):
            response = await self.client.request(method, "/mcp", headers={
                "Mcp-Session-Id": sid, "Accept": "text/event-stream"})
            self.assertEqual(response.status, 404, method)
        self.assertEqual(self.http.sessions, {})

    async def test_delete_cancels_in_flight_work(self):
        sid = await self.client.initialize()
        pending = asyncio.ensure_future(self.client.post(call(3, "wait"), sid))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        other = HttpClient(self.port)
        response = await other.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
        self.assertEqual(response.status, 200)
        answer = await asyncio.wait_for(pending, TIMEOUT)   # ends cleanly, with no response
        self.assertEqual((answer.status, answer.messages()), (200, []))
        self.assertTrue(self.state.cancelled)
        await other.close()

    async def test_reinitialize_refused(self):
        sid = await self.client.initialize()
        response = await self.client.post(rpc(5, "initialize", init_params()), sid)
        self.assertJsonRpcError(response, 200, INVALID_REQUEST, 5)  # the session says no, as on stdio and /sse
        response = await self.client.post([rpc(5, "initialize", init_params("2025-03-26"))],
                                          version="2025-03-26")
        self.assertJsonRpcError(response, 400, INVALID_REQUEST)
        self.assertEqual(list(self.http.sessions), [sid])

    async def test_protocol_version_header(self):
        sid = await self.client.initialize()
        for bad in ("1999-01-01", "2026-07-28", "latest", "2025-11-25x", "2025-11-25,2025-06-18"):
            response = await self.client.post(rpc(1, "ping"), sid, headers={"MCP-Protocol-Version": bad})
            self.assertEqual(response.status, 400, bad)
        self.assertEqual((await self.client.post(rpc(1, "ping"), sid)).status, 200)     # absent: 2025-03-26
        self.assertEqual((await self.ping(sid, version="2025-11-25")).status, 200)

    async def test_protocol_version_header_on_get_and_delete(self):
        sid = await self.client.initialize()
        response = await self.client.request("DELETE", "/mcp", headers={
            "Mcp-Session-Id": sid, "MCP-Protocol-Version": "1999-01-01"})
        self.assertEqual(response.status, 400)

    async def test_rejected_requests_leave_no_session(self):
        # SECURITY.md C20 / PY #3228.
        init = rpc(0, "initialize", init_params())
        rejected = [
            self.client.post(init, headers={"Host": "evil.example.com"}),
            self.client.post(init, headers={"Origin": "http://evil.example.com"}),
            self.client.post(init, headers={"Content-Type": "text/plain"}),
            self.client.post(init, headers={"Accept": "application/json"}),
            self.client.post(init, headers={"MCP-Protocol-Version": "1999-01-01"}),
            self.client.post(b'{"jsonrpc":"2.0","id":0,"method":"initialize"'),
            self.client.post(rpc(0, "initialize")),                            # -32602: no params
            self.client.post(rpc(0, "initialize", {"protocolVersion": "2025-11-25"})),
            self.client.post([init], version="2025-03-26"),
            self.client.post(init, sid="made-up"),
        ]
        for attempt in rejected:
            response = await attempt
            self.assertIsNone(response.header("mcp-session-id"), response)
        self.assertEqual(self.http.sessions, {})

    async def test_failed_initialize_answers_error_without_session(self):
        response = await self.client.post(rpc(0, "initialize"))
        self.assertEqual(response.status, 200)
        self.assertEqual(response.json()["error"]["code"], INVALID_PARAMS)
        self.assertEqual(response.json()["id"], 0)

    async def test_initialize_params_not_object(self):
        response = await self.client.post(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":"x"}',
                                          timeout=3)
        self.assertEqual(response.status, 200)      # a JSON-RPC error, as any failed initialize
        self.assertEqual(response.json()["error"]["code"], INVALID_PARAMS)

    async def test_legacy_session_id_not_valid_on_mcp(self):
        reader, writer = await self.client.connect()
        try:
            writer.write(self.client.build("GET", "/sse", headers={"Accept": "text/event-stream"}))
            await read_head(reader)
            sid = parse_qs_session((await read_event(reader))["data"])
            self.assertEqual((await self.ping(sid)).status, 404)
        finally:
            writer.close()

    async def test_rejected_posts_leave_no_session_behind(self):
        before = len(self.server.sessions)
        for _ in range(5):      # a notification named initialize
            response = await self.client.post(note("initialize"))
            self.assertJsonRpcError(response, 400, INVALID_REQUEST)    # not initialize: no session, 400
        self.assertEqual(len(self.server.sessions), before)
        self.assertEqual(self.http.sessions, {})


    async def test_a_closed_session_is_freed_without_the_garbage_collector(self):
        # Issue 15: sessions were in reference cycles, freed only by a full collection
        # (RSS saw-toothed over fill/expire cycles).
        import gc
        import weakref
        gc.collect()
        gc.disable()
        self.addCleanup(gc.enable)
        freed = []
        for _ in range(3):
            sid = await self.client.initialize()
            entry = self.http.sessions[sid]
            freed += [weakref.ref(entry), weakref.ref(entry.session)]
            del entry
            self.assertEqual((await self.client.post(call(1, "add", {"a": 1, "b": 2}), sid)).status, 200)
            self.assertEqual((await self.client.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})).status, 200)
        await until(lambda: all(ref() is None for ref in freed), "freed by reference counting")


class HttpStatelessTest(HttpTestCase):
    """--stateless: Streamable HTTP without sessions; every POST stands alone."""
    options = {"stateless": True}

    async def test_posts_without_a_session_id_are_answered(self):
        version = LATEST_PROTOCOL_VERSION
        response = await self.client.post(call(1, "add", {"a": 1, "b": 2}), version=version)
        self.assertEqual(response.status, 200)
        self.assertIsNone(response.header("mcp-session-id"))
        self.assertEqual(tool_text(response.json()), "3")
        response = await self.client.post(rpc(1, "tools/list"), version=version)    # id 1 again
        self.assertEqual(response.status, 200)
        self.assertIn("add", [t["name"] for t in response.json()["result"]["tools"]])
        response = await self.client.post(rpc(2, "initialize", init_params()), version=version)
        self.assertEqual(response.json()["result"]["protocolVersion"], version)
        self.assertIsNone(response.header("mcp-session-id"))       # answered, yet no session
        self.assertEqual((self.http.sessions, self.http.stateless_entries), ({}, set()))

    async def test_get_and_delete_are_405_allow_post(self):
        for method in ("GET", "DELETE"):
            response = await self.client.request(method, "/mcp", headers={"Accept": "text/event-stream"})
            self.assertEqual(response.status, 405, method)
            self.assertEqual(response.header("allow"), "POST")


class _Clock:
    """Stands in for mcp_min._now: time moves only when a test moves it."""

    def __init__(self):
        self.now, self.sweeps = 1000.0, 0

    def __call__(self):
        if sys._getframe(1).f_code.co_name == "_expire":    # the reaper of idle sessions
            self.sweeps += 1
        return self.now

    async def sweep_after(self, seconds):
        """Move time on, then wait until the reaper has looked at the sessions (a barrier)."""
        self.now += seconds
        sweeps = self.sweeps
        await until(lambda: self.sweeps > sweeps, "a sweep of idle sessions")


class HttpExpiryTest(HttpTestCase):
    options = {"session_idle": 0.25}

    async def asyncSetUp(self):
        self.clock = _Clock()
        patcher = mock.patch.object(mcp_min, "_now", self.clock)
        patcher.start()
        self.addCleanup(patcher.stop)
        await super().asyncSetUp()

    async def test_idle_session_expires(self):
        sid = await self.client.initialize()
        self.assertEqual((await self.ping(sid)).status, 200)
        await self.clock.sweep_after(0.7)
        self.assertJsonRpcError(await self.ping(sid), 404, INVALID_REQUEST)
        self.assertEqual(self.http.sessions, {})

    async def test_not_expired_mid_call(self):
        sid = await self.client.initialize()
        pending = asyncio.ensure_future(self.client.post(call(3, "wait", {"label": "late"}), sid))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        await self.clock.sweep_after(0.7)
        self.state.gate.set()
        response = await asyncio.wait_for(pending, TIMEOUT)
        self.assertEqual(tool_text(response.messages()[-1]), "late")
        self.assertEqual((await self.ping(sid)).status, 200)
        await self.clock.sweep_after(0.7)
        self.assertEqual((await self.ping(sid)).status, 404)


    async def test_a_session_whose_request_is_stuck_still_expires(self):
        # Regression (issue 15): a request that never ended kept its session forever.
        self.server.timeout = 0.2
        sid = await self.client.initialize()
        response = await self.client.post(call(3, "wait"), sid)     # the gate never opens
        self.assertTrue(response.messages()[-1]["result"]["isError"])
        self.assertTrue(self.state.cancelled)
        await self.clock.sweep_after(0.7)
        self.assertEqual((await self.ping(sid)).status, 404)


class HttpSessionCapTest(HttpTestCase):
    """Issue 15: one client filling MAX_SESSIONS must not lock everyone out for long."""
    options = {"session_idle": 3600}

    async def asyncSetUp(self):
        self.clock = _Clock()
        for patcher in (mock.patch.object(mcp_min, "_now", self.clock),
                        mock.patch.object(mcp_min, "HANDSHAKE_IDLE", 0.25)):
            patcher.start()
            self.addCleanup(patcher.stop)
        await super().asyncSetUp()

    async def half_open(self):
        """A session that gets past initialize and no further."""
        return (await self.client.post(rpc(0, "initialize", init_params()))).header("mcp-session-id")

    async def test_a_session_never_past_initialize_expires_soon(self):
        half, ready = await self.half_open(), await self.client.initialize()
        await self.clock.sweep_after(0.5)
        self.assertEqual(set(self.http.sessions), {ready})
        self.assertEqual((await self.ping(half)).status, 404)

    async def test_at_the_cap_the_session_idle_longest_makes_room(self):
        with mock.patch.object(mcp_min, "MAX_SESSIONS", 3):
            half = [await self.half_open() for _ in range(3)]
            ready = [await self.client.initialize() for _ in range(3)]    # each makes room
            self.assertEqual(set(self.http.sessions), set(ready))
            self.assertNotIn(None, half)
            response = await self.client.post(rpc(0, "initialize", init_params()))
            self.assertJsonRpcError(response, 503, INTERNAL_ERROR)     # all in use: none goes
            response = await self.client.request("GET", "/sse", headers={"Accept": "text/event-stream"})
            self.assertEqual(response.status, 503)
            self.clock.now += 0.5       # idle for HANDSHAKE_IDLE: the oldest may go now
            newest = await self.client.initialize()
        self.assertEqual(set(self.http.sessions), {*ready[1:], newest})
        self.assertEqual((await self.ping(ready[0])).status, 404)     # its client initializes again


class HttpJsonRpcTest(HttpTestCase):
    """SECURITY.md group E over Streamable HTTP."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.sid = await self.client.initialize()
        self.bodies = []

    async def post(self, body, version=LATEST_PROTOCOL_VERSION, sid=None):
        response = await self.client.post(body, sid or self.sid, version)
        self.bodies.append(response.body or b"")
        return response

    def assertNoLeaks(self):
        # SECURITY.md E47: no exception names, tracebacks, paths or echoed input.
        for body in self.bodies:
            for leak in (b"Traceback", b"Exception", b"Error:", b".py", b"line ", b"json.",
                         b"Expecting", b"MARKER", b"/home"):
                self.assertNotIn(leak, body)

    async def test_parse_errors(self):
        for body in (b'{"jsonrpc":"2.0","id":1,"method":"ping"', b"", b"   ", b"\x00",
                     b"[" * 200_000 + b"]" * 60_000, b'{"a":"\xff"}',
                     b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % (b"9" * 5000),
                     b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
                     b'"arguments":{"text":NaN}}}', b"MARKER not json"):
            response = await self.post(body)
            self.assertEqual(response.json(), {"jsonrpc": "2.0", "id": None, "error": {
                "code": PARSE_ERROR, "message": "Parse error"}}, body[:50])
            self.assertEqual(response.status, 400)
        self.assertEqual((await self.ping(self.sid)).status, 200)     # the session is still usable
        self.assertNoLeaks()

    async def test_invalid_envelopes_run_nothing(self):
        bodies = [b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"count"}}',
                  b'{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"count"}}',
                  b'{"jsonrpc":"2.0","id":1,"method":"tools/call","method\\u0000":"x","params":{"name":"count"}}',
                  b'{"jsonrpc":"2.0","id":1,"method":"tools/call","paramS":{"name":"count"}}',
                  b'{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"count"}}',
                  b'{"id":1,"method":"tools/call","params":{"name":"count"}}',
                  b'{"jsonrpc":"2.0","id":1,"method":5}', b'"MARKER"', b"5", b"null"]
        for bad_id in (b"{}", b"[]", b"true", b"1.5", b"1e2", b"null"):
            bodies.append(b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"count"}}' % bad_id)
        for body in bodies:
            response = await self.post(body)
            self.assertEqual(response.status, 400, body)
            self.assertEqual(response.json()["error"]["code"], INVALID_REQUEST, body)
        for bad_id in (b"true", b"1.5", b"null"):
            body = b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"count"}}' % bad_id
            self.assertIsNone((await self.post(body)).json()["id"])
        await self.assertNothingRan(self.sid)
        self.assertNoLeaks()

    async def test_method_and_params_errors_keep_the_id(self):
        response = await self.post(rpc(7, "server/discover"))
        self.assertJsonRpcError(response, 200, METHOD_NOT_FOUND, 7)
        response = await self.post(rpc(8, "tools/call", {"arguments": {}}))
        self.assertJsonRpcError(response, 200, INVALID_PARAMS, 8)
        response = await self.post(call("9", "nope"))
        self.assertJsonRpcError(response, 200, INVALID_PARAMS, "9")
        self.assertEqual((await self.ping(self.sid)).status, 200)

    async def test_batch_refused_on_later_versions(self):
        response = await self.post([call(1, "count"), rpc(2, "ping")])
        self.assertJsonRpcError(response, 400, INVALID_REQUEST)
        await self.assertNothingRan(self.sid)

    async def test_batch_on_2025_03_26(self):
        sid = await self.client.initialize("2025-03-26")
        response = await self.post([rpc(1, "ping"), call(2, "count"), note("notifications/x")],
                                   "2025-03-26", sid)
        self.assertEqual(response.status, 200)
        answers = {m["id"]: m for m in response.messages()}
        self.assertEqual(set(answers), {1, 2})
        self.assertEqual(tool_text(answers[2]), "counted")
        response = await self.post([note("notifications/x")], "2025-03-26", sid)
        self.assertEqual(response.status, 202)

    async def test_empty_batch(self):
        sid = await self.client.initialize("2025-03-26")
        response = await self.post(b"[]", "2025-03-26", sid)
        self.assertJsonRpcError(response, 400, INVALID_REQUEST)

    async def test_notifications_and_responses_get_202(self):
        for body in (note("notifications/initialized"), note("notifications/unknown"),
                     note("notifications/cancelled", "x"), note("notifications/cancelled", {"requestId": 4242}),
                     {"jsonrpc": "2.0", "id": 999, "result": {}},
                     {"jsonrpc": "2.0", "id": 998, "error": {"code": 1, "message": "x"}}):
            response = await self.post(body)
            self.assertEqual(response.status, 202, body)
            self.assertEqual(response.body, b"")

    async def test_lone_surrogate_echo(self):
        response = await self.post(b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                                   b'"params":{"name":"echo","arguments":{"text":"a\\ud800b"}}}')
        self.assertEqual(response.status, 200)
        self.assertTrue(response.body.isascii())
        self.assertEqual(tool_text(response.json()), "a\ud800b")

    async def test_duplicate_in_flight_id_returns_409(self):
        pending = asyncio.ensure_future(self.client.post(call(7, "wait", {"label": "mine"}), self.sid))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        response = await self.client.post(rpc(7, "ping"), self.sid)
        self.assertEqual(response.status, 409)
        self.assertEqual(response.json()["error"]["code"], INVALID_REQUEST)
        self.state.gate.set()
        first = await asyncio.wait_for(pending, TIMEOUT)
        self.assertEqual(tool_text(first.messages()[-1]), "mine")

    async def test_duplicate_in_flight_id_409_carries_the_id(self):
        pending = asyncio.ensure_future(self.client.post(call(7, "wait"), self.sid))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        try:
            response = await self.client.post(rpc(7, "ping"), self.sid)
            self.assertJsonRpcError(response, 409, INVALID_REQUEST, 7)
        finally:
            self.state.gate.set()
            await asyncio.wait_for(pending, TIMEOUT)

    async def test_ids_1_and_string_1_in_flight_together(self):
        one = asyncio.ensure_future(self.client.post(call(1, "wait", {"label": "int"}), self.sid))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        other = asyncio.ensure_future(self.client.post(call("1", "wait", {"label": "str"}), self.sid))
        running = self.http.sessions[self.sid].session.running
        await until(lambda: len(running) == 2, "both requests in flight")
        self.state.gate.set()
        first, second = await asyncio.wait_for(asyncio.gather(one, other), TIMEOUT)
        self.assertEqual(first.messages()[-1]["id"], 1)
        self.assertEqual(tool_text(first.messages()[-1]), "int")
        self.assertEqual(second.messages()[-1]["id"], "1")
        self.assertEqual(tool_text(second.messages()[-1]), "str")

    async def test_unserializable_result_is_an_error_not_a_dead_connection(self):
        @self.server.resource("data://raw")
        def raw():
            return {"uri": "data://raw", "text": b"bytes are not JSON"}
        sid = await self.client.initialize()
        response = await self.client.post(rpc(2, "resources/read", {"uri": "data://raw"}), sid)
        self.assertJsonRpcError(response, 200, INTERNAL_ERROR, 2)
        self.assertEqual((await self.ping(sid, 3)).json()["result"], {})

    async def test_a_duplicate_id_late_in_a_batch_is_refused_with_it(self):
        sid = await self.client.initialize("2025-03-26")
        batch = [rpc(i, "ping") for i in range(2000)] + [rpc(1999, "ping")]
        response = await self.client.post(batch, sid, "2025-03-26")
        self.assertEqual(response.status, 200)
        answers = response.json()      # as on stdio: the duplicate alone is refused, with its id
        self.assertEqual(len(answers), 2001)
        self.assertEqual([m["error"]["message"] for m in answers if m["id"] == 1999 and "error" in m],
                         ["Invalid request: id already in use"])

    async def test_a_broken_reply_over_http_fails_the_waiting_tool_at_once(self):
        # Regression: the 400 went out but the tool waited REPLY_TIMEOUT for its reply.
        version = LATEST_PROTOCOL_VERSION
        response = await self.client.post(rpc(0, "initialize", init_params(capabilities={"sampling": {}})))
        sid = response.header("mcp-session-id")
        self.assertEqual((await self.client.post(note("notifications/initialized"), sid, version)).status, 202)
        reader, writer = await self.client.connect()
        writer.write(self.client.build("POST", "/mcp", call(1, "ask_model", {"prompt": "Hi?"}),
                                       {"Mcp-Session-Id": sid, "MCP-Protocol-Version": version}))
        self.assertEqual((await read_head(reader)).status, 200)
        request = json.loads((await read_event(reader))["data"])
        self.assertEqual(request["method"], "sampling/createMessage")
        broken = await self.client.post({"jsonrpc": "2.0", "id": request["id"]}, sid, version)
        self.assertEqual(broken.status, 400)
        result = json.loads((await read_event(reader, timeout=5))["data"])
        self.assertEqual((result["id"], result["result"]["isError"]), (1, True))


class HttpStreamingTest(HttpTestCase):
    """SECURITY.md group F: streams, disconnects, concurrency, backpressure."""

    async def test_progress_makes_the_answer_a_stream(self):
        sid = await self.client.initialize()
        response = await self.client.post(call(1, "steps", meta={"progressToken": "p-1"}), sid)
        self.assertEqual(response.status, 200)
        self.assertTrue(response.header("content-type").startswith("text/event-stream"))
        messages = response.messages()
        self.assertEqual([m.get("method") for m in messages], ["notifications/progress"] * 3 + [None])
        self.assertEqual([m["params"]["progressToken"] for m in messages[:3]], ["p-1"] * 3)
        self.assertEqual([m["params"]["progress"] for m in messages[:3]], [1, 2, 3])
        self.assertEqual(tool_text(messages[-1]), "done")
        plain = await self.client.post(call(2, "steps"), sid)        # no token: plain JSON
        self.assertEqual(plain.header("content-type"), "application/json")

    async def test_a_kept_alive_connection_carries_a_request_after_an_sse_answer(self):
        # Regression (seen in the conformance run's server log): after an SSE answer, the read that
        # watched for the client leaving was still pending when the next request's head was read:
        # "readuntil() called while another coroutine is already waiting", and the connection died.
        sid = await self.client.initialize()
        reader, writer = await self.client.connect()
        for id_ in (1, 2, 3):
            writer.write(self.client.build("POST", "/mcp", call(id_, "steps", meta={"progressToken": id_}),
                                           {"Mcp-Session-Id": sid}))
            await writer.drain()
            response = await read_response(reader)
            self.assertEqual(response.status, 200)
            self.assertEqual(tool_text(response.messages()[-1]), "done")

    async def test_client_disconnect_mid_call(self):
        # SECURITY.md F48 / PY CVE-2025-53365: a disconnect is not a cancel.
        sid = await self.client.initialize()
        for attempt in range(3):
            self.state.gate.clear()
            self.state.entered.clear()
            self.state.finished = False
            reader, writer = await self.client.connect()
            writer.write(self.client.build("POST", "/mcp", call(10 + attempt, "wait"),
                                           {"Mcp-Session-Id": sid}))
            await writer.drain()
            await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
            writer.transport.abort()
            # The barrier: a ping answered after the disconnect; the server has seen it.
            self.assertEqual((await self.ping(sid, 50 + attempt)).status, 200)
            self.state.gate.set()
            for _ in range(500):
                if self.state.finished:
                    break
                await asyncio.sleep(0.01)
            self.assertTrue(self.state.finished)
            self.assertFalse(self.state.cancelled)
            self.assertEqual((await self.ping(sid, 100 + attempt)).status, 200)
        fresh = await self.client.initialize()
        response = await self.client.post(rpc(1, "tools/list"), fresh)
        self.assertEqual(response.status, 200)
        self.assertTrue(response.json()["result"]["tools"])

    async def test_fifty_sessions_with_id_1(self):
        # SECURITY.md F50 / TS CVE-2026-25536.
        async def one(i):
            sid = await self.client.initialize()
            response = await self.client.post(call(1, "echo", {"text": f"nonce-{i}"}), sid)
            return tool_text(response.messages()[-1])
        texts = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(50))), 30)
        self.assertEqual(texts, [f"nonce-{i}" for i in range(50)])

    async def test_slow_consumer_is_bounded(self):
        # SECURITY.md F51, kept cheap: ~16 MB of progress to a client that reads
        # only the response head. The stream's queue must stay within the client's
        # account (4 MiB here), the result must not be dropped, and other sessions
        # must not wait.
        sid = await self.client.initialize()
        canary = await self.client.initialize()
        account = self.http.sessions[sid].session.account = mcp_min._Account(4 << 20, self.server.memory)
        reader, writer = await self.client.connect()
        try:
            writer.write(self.client.build("POST", "/mcp", call(7, "flood", {"n": 4000, "size": 4000},
                                                                meta={"progressToken": 1}),
                                           {"Mcp-Session-Id": sid}))
            await writer.drain()
            entry = self.http.sessions[sid]
            for _ in range(500):
                if 7 in entry.session.replies:
                    break
                await asyncio.sleep(0.01)
            [stream] = entry.posts
            self.state.gate.set()
            await read_head(reader)        # ... and read nothing more
            await asyncio.wait_for(self.state.flood_done.wait(), 30)
            for _ in range(500):
                if stream.items[-1:] == [mcp_min._FINISHED]:
                    break
                await asyncio.sleep(0.01)
            self.assertEqual(stream.items.pop(), mcp_min._FINISHED)    # the POST's work is over
            self.assertLessEqual(account.used, 4 << 20)
            self.assertGreater(stream.size, 2 << 20)
            self.assertGreater(stream.dropped, 0)
            self.assertEqual(stream.items[-1]["id"], 7)
            self.assertEqual(stream.items[-1]["result"]["content"][0]["text"], "flooded")
            self.assertEqual((await self.ping(canary)).status, 200)
        finally:
            writer.transport.abort()
        for _ in range(500):
            if self.http.connections == 0:
                break
            await asyncio.sleep(0.01)
        self.assertEqual(self.http.connections, 0)      # the stalled writer was let go

    async def test_standalone_get_stream(self):
        sid = await self.client.initialize()
        reader, writer = await self.client.connect()
        try:
            writer.write(self.client.build("GET", "/mcp", headers={
                "Mcp-Session-Id": sid, "Accept": "text/event-stream"}))
            head = await read_head(reader)
            self.assertEqual(head.status, 200)
            self.assertTrue(head.header("content-type").startswith("text/event-stream"))
            second = await self.client.request("GET", "/mcp", headers={
                "Mcp-Session-Id": sid, "Accept": "text/event-stream"})
            self.assertEqual(second.status, 409)
            self.server.add_tool(lambda: "x", "late_tool")
            event = await read_event(reader)
            self.assertEqual(json.loads(event["data"])["method"], "notifications/tools/list_changed")
            response = await self.client.request("GET", "/mcp", headers={
                "Mcp-Session-Id": sid, "Accept": "application/json"})
            self.assertEqual(response.status, 406)      # Accept is checked before the open stream
        finally:
            writer.close()

    def test_a_full_stream_drops_notifications_then_answers_then_closes(self):
        # Issue 39: a stream's backlog is charged to its client's account (not counted).
        progress = note("notifications/progress", {"progress": 0})
        cost = mcp_min.MESSAGE_COST + len(mcp_min.encode(progress))
        account = mcp_min._Account(10 * cost)
        stream = mcp_min._Stream(account)
        stream.put(rpc("first", "x"))       # the head is being written: it never counts
        for _ in range(11):
            stream.put(progress)
        self.assertEqual((len(stream.items), stream.dropped, account.used), (11, 1, 10 * cost))
        stream.put({"jsonrpc": "2.0", "id": 1, "result": {}})    # room is made for it
        self.assertEqual([m.get("id") for m in stream.items], ["first", 1])
        self.assertFalse(stream.overflowed)
        # an answer with no room is dropped whole: an error naming the bound takes its place
        stream.put({"jsonrpc": "2.0", "id": 2, "result": {"text": "x" * 20 * cost}})
        error = stream.items[-1]
        self.assertEqual((error["id"], error["error"]["code"]), (2, INTERNAL_ERROR))
        self.assertIn(f"The answer was dropped: Over the memory this client may hold ({10 * cost} bytes",
                      error["error"]["message"])
        for i in range(3, 100):     # requests to the client find no room: the stream closes
            stream.put(rpc(i, "sampling/createMessage"))
        self.assertTrue(stream.overflowed)
        self.assertTrue(stream.closed)
        self.assertEqual((stream.items, account.used), ([], 0))

    def test_a_full_stream_still_takes_its_end_marker(self):
        stream = mcp_min._Stream(mcp_min._Account(10 * mcp_min.MESSAGE_COST))
        for i in range(20):
            stream.put(note("notifications/progress", {"progress": i}))
        stream.put(mcp_min._FINISHED)
        self.assertIs(stream.items[-1], mcp_min._FINISHED)

    async def test_json_response_mode_refuses_requests_to_the_client_at_once(self):
        json_only = await start_http(self.server, "127.0.0.1", 0, json_response=True)
        try:
            client = HttpClient(json_only.port)
            sid = await client.initialize()
            started = time.monotonic()
            response = await client.post(call(2, "ask_user"), sid)
            self.assertLess(time.monotonic() - started, 5)
            self.assertEqual(response.status, 200)
            self.assertTrue(response.json()["result"]["isError"])
            await client.close()
        finally:
            await json_only.close()

    async def test_http_1_0_gets_no_chunked_stream(self):
        # Regression: RFC 9112 6.1: no Transfer-Encoding to a client that did not send 1.1.
        sid = await self.client.initialize()
        data = self.client.build("POST", "/mcp", call(1, "chat"), {"Mcp-Session-Id": sid})
        data = data.replace(b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1)
        reader, writer = await self.client.connect()
        writer.write(data)
        response = await read_head(reader)
        body = await asyncio.wait_for(reader.read(), TIMEOUT)      # until the server closes
        self.assertEqual(response.status, 200)
        self.assertIsNone(response.header("transfer-encoding"))
        self.assertEqual(response.header("connection"), "close")
        response.body = body
        messages = response.messages()
        self.assertEqual(messages[-1]["id"], 1)
        self.assertEqual(tool_text(messages[-1]), "logged")
        self.assertTrue(all(m.get("method") == "notifications/message" for m in messages[:-1]))


class HttpJsonResponseTest(HttpTestCase):
    options = {"json_response": True}

    async def test_clients_that_leave_while_waiting_free_their_connections(self):
        # Regression (issue 15): with --json-response nothing noticed a client leaving, so 520
        # never-ending calls held every connection slot and all later clients got 503.
        sid = await self.client.initialize()
        session = self.http.sessions[sid].session
        with mock.patch.object(mcp_min, "KEEPALIVE_INTERVAL", 0.05):
            for i in range(20):
                reader, writer = await self.client.connect()
                writer.write(self.client.build("POST", "/mcp", call(i, "wait"), {"Mcp-Session-Id": sid}))
                await writer.drain()
            await until(lambda: len(session.running) == 20, "the calls run")
            await self.client.close()       # ... and the clients leave
            await until(lambda: self.http.connections == 0, "every connection freed")
        self.assertEqual(len(session.running), 20)      # a disconnect is not a cancel (R27)
        self.assertEqual((await self.ping(sid, "barrier")).status, 200)


class HttpCancelTest(HttpTestCase):
    async def test_cancelled_request_gets_an_empty_stream_not_a_response(self):
        # transports: a POST carrying a request is answered with JSON or SSE; cancellation:
        # no response. So: an SSE answer with no message in it.
        sid = await self.client.initialize()
        waiting = asyncio.ensure_future(self.client.post(call(5, "wait"), sid))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        other = HttpClient(self.port)
        accepted = await other.post(note("notifications/cancelled", {"requestId": 5}), sid)
        self.assertEqual(accepted.status, 202)
        answer = await asyncio.wait_for(waiting, TIMEOUT)
        self.assertEqual(answer.status, 200)
        self.assertTrue(answer.header("content-type").startswith("text/event-stream"))
        self.assertEqual(answer.messages(), [])
        self.assertTrue(self.state.cancelled)
        await other.close()


@runs_beside
@unittest.skipUnless(os.path.exists("/proc/self/status"), "reads memory from /proc")
class AbuseProcessCase(unittest.IsolatedAsyncioTestCase):
    """The user store as a process (the fixture)."""
    async def asyncSetUp(self):
        asyncio.get_running_loop().slow_callback_duration = 5     # big bodies are built here
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        # glibc raises its mmap threshold past each big block freed, after which big blocks come
        # from the heap and their pages may stay resident once freed: RSS then says where the
        # allocator put things, not what the server keeps (a listen test read 11 MiB, or 0.5,
        # by the layout of the source). A fixed threshold gives big blocks back when freed.
        self.server = ServerProcess("--db", os.path.join(tmp.name, "users.db"), script=USER_STORE,
                                    MALLOC_MMAP_THRESHOLD_=str(128 * 1024))
        self.addCleanup(self.server.close)


class AbuseProcessTest(AbuseProcessCase):

    async def test_initialize_parameters_are_not_kept_whole(self):
        # Regression: a 4 MB initialize of 1.4 M empty objects kept 96 MiB per session. Such a
        # body is now refused before it is parsed (MAX_CONTAINERS); one just within the limit,
        # with a 3 MB string beside, is taken, and not kept.
        def body(objects, filler=b""):
            capabilities = b'{"experimental":{"x":[' + b",".join([b"{}"] * objects) + b'],"s":"' + \
                filler + b'"},"junk":[]}'
            return (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
                    b'"capabilities":' + capabilities + b',"clientInfo":{"name":"x","version":"1"}}}')
        response = await self.server.client.request("POST", "/mcp", body(1_390_000))
        self.assertEqual(response.status, 400, response)
        self.assertIn(f"over {mcp_min.MAX_CONTAINERS} objects and arrays", response.json()["error"]["message"])
        rss = []
        for _ in range(4):      # the first one warms the allocator up
            response = await self.server.client.request("POST", "/mcp", body(mcp_min.MAX_CONTAINERS - 10,
                                                                             b"x" * 3_000_000))
            self.assertEqual(response.status, 200, response)
            rss.append(self.server.rss_mib())
        self.assertLess(rss[-1] - rss[0], 40, rss)      # it was +96 MiB a session


##############################################################################
# Core: stdio over real pipes: subprocesses, and serve_stdio in process (SECURITY.md group H)
##############################################################################

TARGET_SOURCE = textwrap.dedent('''
    import asyncio, os, subprocess, sys
    from mcp_min import Server

    server = Server("target")
    MARKS = os.environ["MCP_TEST_MARKS"]

    @server.tool()
    def noisy() -> str:
        print("print noise")
        sys.stdout.write("sys.stdout noise\\n")
        sys.stdout.flush()
        os.write(1, b"fd1 noise\\n")
        subprocess.run([sys.executable, "-c", "print('child noise')"], check=True)
        return "quiet"

    @server.tool()
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool()
    def mark(name: str) -> str:
        open(os.path.join(MARKS, name), "w").close()
        return "marked"

    @server.tool()
    def echo(text: str) -> str:
        return text

    if __name__ == "__main__":
        server.run()
''')


@runs_beside
class StdioTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.target = os.path.join(cls.tmp.name, "target_server.py")
        with open(cls.target, "w") as f:
            f.write(TARGET_SOURCE)

        cls.ready = collections.deque()     # started ahead

    @classmethod
    def tearDownClass(cls):
        for _, process in cls.ready:
            process.kill()
        cls.tmp.cleanup()

    AHEAD = 3       # servers starting side by side while the tests before them run

    def start(self, read=True):
        # Each test has a fresh server of its own, TARGET run as a script (`server.run()`: the
        # core alone); it was started a few tests ahead.
        ready = self.ready
        while len(ready) <= self.AHEAD:
            marks = tempfile.mkdtemp(dir=self.tmp.name)
            ready.append((marks, StdioProcess(self.target, False, _clean_env(MCP_TEST_MARKS=marks), run=True)))
        self.marks, process = ready.popleft()
        if read:
            process.start_reading()
        self.addCleanup(process.kill)
        return process

    def assertCleanExit(self, process, code=0):
        self.assertEqual(process.wait(), code)
        self.assertNotIn("Traceback", process.stderr())

    def test_eof_when_idle_exits_zero(self):
        p = self.start()
        p.close_stdin()
        self.assertCleanExit(p)
        self.assertIsNone(p.read_line())        # nothing was written

    def test_in_flight_request_finished_on_eof(self):
        p = self.start()
        p.initialize()
        p.send(call(1, "slow", {"seconds": 0.3}))
        p.close_stdin()
        self.assertEqual(tool_text(p.read()), "slept")
        self.assertCleanExit(p)

    def test_final_line_without_newline(self):
        p = self.start()
        p.write(json.dumps(rpc(1, "ping")).encode())
        p.close_stdin()
        self.assertEqual(p.read(), {"jsonrpc": "2.0", "id": 1, "result": {}})
        self.assertCleanExit(p)

    def test_crlf(self):
        p = self.start()
        p.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n')
        self.assertEqual(p.read(), {"jsonrpc": "2.0", "id": 1, "result": {}})

    def test_bare_cr_inside_json_is_one_message(self):
        p = self.start()
        p.write(b'{"jsonrpc":"2.0","id":1,\r"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
        self.assertEqual(p.read()["id"], 1)
        self.assertEqual(p.read()["id"], 2)

    def test_unicode_line_separators_inside_a_string(self):
        p = self.start()
        p.initialize()
        text = "a\u2028b\u0085c\u2029d"
        p.write(json.dumps(call(1, "echo", {"text": text}), ensure_ascii=False).encode() + b"\n")
        self.assertEqual(tool_text(p.read()), text)
        self.assertTrue(p.last_line.isascii())
        p.send(rpc(2, "ping"))
        self.assertEqual(p.read()["id"], 2)

    def test_invalid_utf8_line_then_ping(self):
        p = self.start()
        p.write(b"\xff\xfe\n" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        error = p.read()
        self.assertIsNone(error["id"])
        self.assertEqual(error["error"]["code"], PARSE_ERROR)
        self.assertEqual(p.read(), {"jsonrpc": "2.0", "id": 1, "result": {}})

    def test_non_json_line(self):
        p = self.start()
        p.write(b"hello\n")
        self.assertEqual(p.read(), {"jsonrpc": "2.0", "id": None,
                                    "error": {"code": PARSE_ERROR, "message": "Parse error"}})
        p.send(rpc(1, "ping"))
        self.assertEqual(p.read()["id"], 1)

    def test_blank_lines_ignored(self):
        p = self.start()
        p.write(b"\n\n   \n\r\n\t\n" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        self.assertEqual(p.read()["id"], 1)
        p.send(rpc(2, "ping"))
        self.assertEqual(p.read()["id"], 2)

    def test_notification_not_answered(self):
        p = self.start()
        p.initialize()
        p.send(note("notifications/cancelled", {"requestId": 77}))
        p.send(rpc(2, "ping"))
        self.assertEqual(p.read()["id"], 2)

    def test_tool_output_never_reaches_stdout(self):
        # SECURITY.md H67: print(), sys.stdout, os.write(1) and a child's stdout go to stderr.
        p = self.start()
        p.initialize()
        p.send(call(1, "noisy"))
        p.send(call(2, "noisy"))
        p.send(rpc(3, "ping"))
        seen = set()
        while len(seen) < 3:
            message = p.read()
            self.assertEqual(message["jsonrpc"], "2.0")
            seen.add(message["id"])
            if message["id"] in (1, 2):
                self.assertEqual(tool_text(message), "quiet")
        p.close_stdin()
        self.assertCleanExit(p)
        self.assertIsNone(p.read_line())
        stderr = p.stderr()
        for noise in ("print noise", "sys.stdout noise", "fd1 noise", "child noise"):
            self.assertIn(noise, stderr)

    def test_oversized_line_is_one_error_and_its_tail_never_runs(self):
        # SECURITY.md H68: the line is 20 MB of JSON whitespace followed by a valid
        # tools/call, so only the length limit can stop it.
        p = self.start()
        p.initialize()
        tail = json.dumps(call(99, "mark", {"name": "tail-ran"})).encode()
        line = b" " * (20 * 1024 * 1024 - len(tail)) + tail + b"\n"
        self.assertGreater(len(line), mcp_min.MAX_LINE_BYTES)
        writer = p.write_in_background(line + b'{"jsonrpc":"2.0","id":100,"method":"ping"}\n')
        error = p.read(timeout=30)
        self.assertIn("error", error)
        self.assertIsNone(error["id"])
        self.assertEqual(p.read(timeout=30), {"jsonrpc": "2.0", "id": 100, "result": {}})
        writer.join(TIMEOUT)
        p.close_stdin()
        self.assertCleanExit(p)
        self.assertIsNone(p.read_line())         # exactly one error, no answer for id 99
        self.assertEqual(os.listdir(self.marks), [])

    def test_message_fed_one_byte_at_a_time(self):
        p = self.start()
        for byte in b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n':
            p.write(bytes([byte]))
            time.sleep(0.003)
        self.assertEqual(p.read(), {"jsonrpc": "2.0", "id": 1, "result": {}})
        p.send(rpc(2, "ping"))
        self.assertEqual(p.read()["id"], 2)

    def test_many_pipelined_pings(self):
        p = self.start()
        count = 3000        # more than MAX_IN_FLIGHT, so reading must pause and resume
        writer = p.write_in_background(b"".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(count)))
        ids = {p.read()["id"] for _ in range(count)}
        self.assertEqual(ids, set(range(count)))
        writer.join(TIMEOUT)
        p.close_stdin()
        self.assertCleanExit(p)

    def test_closed_stdout_quiet_exit(self):
        # SECURITY.md H62: the client stops reading: exit quietly, no busy loop.
        p = self.start(read=False)
        p.proc.stdout.close()
        with contextlib.suppress(OSError):
            for i in range(3):
                p.send(rpc(i, "ping"))
        self.assertCleanExit(p)

    def test_malformed_initialize_then_ping(self):
        p = self.start()
        p.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}\n'
                b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
        self.assertEqual(p.read(timeout=3)["error"]["code"], INVALID_PARAMS)
        self.assertEqual(p.read(timeout=3)["id"], 2)


@runs_beside
class StdioBatchTest(unittest.TestCase):
    def test_a_batch_is_answered_in_one_line(self):
        # JSON-RPC: the answers to a batch SHOULD come as one array (2025-03-26 sessions).
        lines = [rpc(0, "initialize", init_params("2025-03-26")), note("notifications/initialized"),
                 [call(1, "getUser", {"name": "John"}), note("notifications/cancelled", {"requestId": 9}),
                  rpc(2, "nope")], [], [note("notifications/initialized")], rpc(3, "ping")]
        with tempfile.TemporaryDirectory() as tmp:      # the demo's users, as a script serves them
            done = subprocess.run([*PYTHON, "examples/user_store.py", "--db", os.path.join(tmp, "users.db"),
                                   "--stdio"], cwd=HERE, env=_clean_env(),
                                  input="".join(json.dumps(m) + "\n" for m in lines).encode(),
                                  capture_output=True, timeout=TIMEOUT)
        out = [json.loads(line) for line in done.stdout.splitlines()]
        self.assertEqual(len(out), 4, out)      # initialize, the empty batch's error, the array, ping
        batch = next(m for m in out if type(m) is list)
        self.assertEqual(sorted(m["id"] for m in batch), [1, 2])
        self.assertEqual([m["error"]["message"] for m in out if type(m) is dict and "error" in m],
                         ["Invalid request: empty batch"])


ASKING_SOURCE = textwrap.dedent("""
    import asyncio
    from mcp_min import Context, Server

    server = Server("asking")

    @server.tool()
    async def ask(ctx: Context) -> str:
        roots = await ctx.list_roots()
        form = await ctx.elicit("Your name?", {"name": {"type": "string"}})
        said = await ctx.sample("Say hi")
        return f"{roots[0]['uri']} {form['content']['name']} {said['content']['text']}"

    @server.tool()
    async def timed() -> str:
        # asyncio.timeout and TaskGroup need the current task (3.11+), as the asks do (3.12+)
        if hasattr(asyncio, "timeout"):
            async with asyncio.timeout(5):
                await asyncio.sleep(0)
        return "in a task" if asyncio.current_task() else "no task"

    if __name__ == "__main__":
        server.run()
""")


# The official Python SDK's client (in .peers, see .ci/interop/README.md), VS Code's and Claude
# Desktop's era: initialize, then the tool asks it over the same pipe.
SDK_ASKING_CLIENT = textwrap.dedent("""
    import anyio, sys
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client

    async def sampling(context, params):
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="hi"))

    async def elicitation(context, params):
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///work")])

    async def main():
        server = StdioServerParameters(command=sys.executable, args=["-S", sys.argv[1]],
                                       env={"PYTHONPATH": sys.argv[2]})
        async with stdio_client(server) as (read, write), ClientSession(
                read, write, sampling_callback=sampling, elicitation_callback=elicitation,
                list_roots_callback=roots) as session:
            await session.initialize()
            for name in ("ask", "timed"):
                result = await session.call_tool(name, {})
                print(result.content[0].text)
    anyio.run(main)
""")


def _sdk_python():
    """The official SDK's interpreter in .peers, if it imports `mcp` (else None: those tests skip)."""
    python = os.path.join(HERE, ".peers", "bin", "python")
    if not os.path.exists(python):
        return None
    probe = subprocess.run([python, "-c", "import mcp"], capture_output=True, timeout=60)
    return python if probe.returncode == 0 else None


class StdioAskingTest(unittest.IsolatedAsyncioTestCase):
    """Issue 33: a tool that asks the client (ctx.list_roots, ctx.elicit, ctx.sample) over a real
    stdio pipe, driven by a handshake-era client, on every Python (on 3.12 and 3.13 the run-at-once
    shortcut ran the tool outside any task, and `asyncio.wait_for` refused: an internal error)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.server = os.path.join(self.tmp.name, "asking.py")
        with open(self.server, "w") as f:
            f.write(ASKING_SOURCE)

    def tearDown(self):
        self.tmp.cleanup()

    async def test_our_client_in_the_handshake_era(self):
        async def sampling(params):
            return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}}

        async def elicitation(params):
            return {"action": "accept", "content": {"name": "Ada"}}
        async with mcp_min.Client([*PYTHON, self.server], era="handshake", env=_clean_env(),
                                  sampling=sampling, elicitation=elicitation,
                                  roots=[{"uri": "file:///work"}], timeout=TIMEOUT) as client:
            self.assertIn(client.protocol_version, PROTOCOL_VERSIONS)
            asked = await client.call_tool("ask", {})
            timed = await client.call_tool("timed", {})
        self.assertEqual(asked["content"][0]["text"], "file:///work Ada hi", asked)
        self.assertEqual(timed["content"][0]["text"], "in a task", timed)


@runs_beside
class StdioAskingSdkTest(unittest.TestCase):
    """Issue 33's tool that asks the client, driven by the official Python SDK's client."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.server = os.path.join(self.tmp.name, "asking.py")
        with open(self.server, "w") as f:
            f.write(ASKING_SOURCE)

    def test_the_official_sdk_client(self):
        python = _sdk_python()
        if python is None:
            self.skipTest("the official Python SDK is not in .peers (see .ci/interop/README.md)")
        done = subprocess.run([python, "-c", SDK_ASKING_CLIENT, self.server, HERE], capture_output=True,
                              text=True, timeout=60, env=_clean_env())
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        self.assertEqual(done.stdout.split("\n")[:2], ["file:///work Ada hi", "in a task"], done.stderr[-2000:])

class StdioInProcessTest(unittest.IsolatedAsyncioTestCase):
    """serve_stdio in-process on os.pipe()s: framing, the in-flight cap and its queue."""

    async def asyncSetUp(self):
        self.server, self.state = make_server()
        self.to_server, self.from_client = os.pipe()
        self.to_client, self.from_server = os.pipe()
        self.buffer = b""

    async def asyncTearDown(self):
        # Each end once: `finish` closed two already, and closing a number twice may close what
        # another test's thread opened since under that number.
        for fd in (self.to_server, self.to_client, self.from_server, self.from_client):
            if fd is not None:
                os.close(fd)

    def serve(self):
        return asyncio.ensure_future(mcp_min.serve_stdio(self.server, self.to_server, self.from_server))

    def write(self, *messages):
        data = "".join(m if isinstance(m, str) else json.dumps(m) + "\n" for m in messages).encode()
        self.assertLess(len(data), 65536)   # what a pipe takes without a reader: no hang
        os.write(self.from_client, data)

    async def read(self):
        loop = asyncio.get_running_loop()
        while b"\n" not in self.buffer:
            readable = loop.create_future()     # polled, not a blocking read: a failure cannot hang
            loop.add_reader(self.to_client, lambda: readable.done() or readable.set_result(None))
            try:
                await asyncio.wait_for(readable, TIMEOUT)
            finally:
                loop.remove_reader(self.to_client)
            chunk = os.read(self.to_client, 65536)
            self.assertTrue(chunk, "stdout closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    async def finish(self, serving):
        """Close stdin; everything the server writes until it ends, as messages."""
        rest = []

        def drain():        # stdout writes block: read while the server finishes
            while chunk := os.read(self.to_client, 65536):
                rest.append(chunk)
        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        os.close(self.from_client)
        self.from_client = None
        self.assertEqual(await asyncio.wait_for(serving, TIMEOUT), 0)
        os.close(self.from_server)
        self.from_server = None
        reader.join(TIMEOUT)
        return [json.loads(line) for line in (self.buffer + b"".join(rest)).splitlines()]

    async def test_a_json_string_holding_a_request_is_not_run(self):
        # Regression: the line was decoded twice, so "{\"jsonrpc\"...}" ran (SECURITY 37).
        serving = self.serve()
        self.write(rpc(0, "initialize", init_params()), note("notifications/initialized"),
                   json.dumps(json.dumps(call(5, "count"))) + "\n", json.dumps("hello") + "\n")
        out = await self.finish(serving)
        self.assertEqual([(m["id"], m.get("error", {}).get("code")) for m in out],
                         [(0, None), (None, INVALID_REQUEST), (None, INVALID_REQUEST)])
        self.assertEqual(self.state.calls, 0)

    async def test_queued_requests_answered_at_once_do_not_recurse(self):
        # Regression: each queued request answered synchronously started the next one
        # from inside its own answer: RecursionError, double answers, lost answers.
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 2):
            serving = self.serve()
            self.write(rpc(0, "initialize", init_params()), note("notifications/initialized"),
                       call(1, "wait"), call(2, "wait"), *[rpc(100 + i, "nope") for i in range(1000)])
            await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)  # all read: the rest are queued
            self.state.gate.set()
            out = await self.finish(serving)
        ids = [m["id"] for m in out]
        self.assertEqual(sorted(ids), [0, 1, 2] + list(range(100, 1100)))   # each exactly once
        self.assertEqual({m["error"]["code"] for m in out if m["id"] >= 100}, {METHOD_NOT_FOUND})

    async def test_the_answer_to_our_request_gets_in_past_a_full_queue(self):
        # Regression: reading paused with the queue full, so the client's answer to
        # sampling/createMessage sat unread and the tool waited 60 s.
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 1):
            serving = self.serve()
            self.write(rpc(0, "initialize", init_params(capabilities={"sampling": {}})),
                       note("notifications/initialized"),
                       call(1, "ask_model", {"prompt": "Hi?"}), rpc(2, "ping"))    # the queue is full
            self.assertEqual((await self.read())["id"], 0)
            request = await self.read()
            self.assertEqual(request["method"], "sampling/createMessage")
            self.write({"jsonrpc": "2.0", "id": request["id"], "result": {
                "role": "assistant", "content": {"type": "text", "text": "Hello."}, "model": "m"}}, rpc(3, "ping"))
            answers = {}
            while len(answers) < 3:
                message = await self.read()
                answers[message["id"]] = message
            self.assertEqual(tool_text(answers[1]), "Hello.")
            self.assertEqual((answers[2]["result"], answers[3]["result"]), ({}, {}))
            await self.finish(serving)

    async def test_the_reader_thread_goes_on_when_a_cancel_empties_the_queue(self):
        # Regression: the thread (Windows, stdin from a file) waited on a full queue that
        # a cancel had emptied, and was never woken: nothing more was read, not even EOF.
        loop = asyncio.get_running_loop()
        add_reader = loop.add_reader

        def no_polling_stdin(fd, *args):        # as on Windows: the server reads in a thread
            if fd == self.to_server:
                raise NotImplementedError
            return add_reader(fd, *args)
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 1), \
                mock.patch.object(loop, "add_reader", no_polling_stdin):
            serving = self.serve()
            self.write(rpc(0, "initialize", init_params()), note("notifications/initialized"), call(1, "wait"))
            self.assertEqual((await self.read())["id"], 0)
            await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
            self.write(call(2, "count"), note("notifications/cancelled", {"requestId": 2}))
            await asyncio.sleep(0.2)
            self.write(rpc(3, "ping"), note("notifications/cancelled", {"requestId": 1}))
            self.assertEqual(await self.read(), {"jsonrpc": "2.0", "id": 3, "result": {}})
            self.assertEqual(await self.finish(serving), [])
        self.assertEqual((self.state.calls, self.state.cancelled), (0, True))

    async def test_past_a_full_queue_new_requests_are_refused_not_queued_ones(self):
        # Regression: a request read while the client owed us an answer could take the
        # slot a queued request was about to get; the queued one was refused instead.
        taken = (call(1, "ask_model", {"prompt": "Hi?"}), call(2, "wait"), rpc(10, "ping"), rpc(11, "ping"))
        held = sum(len(json.dumps(m)) + mcp_min.MESSAGE_COST for m in taken)   # requests' half is full
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 2), \
                mock.patch.object(mcp_min, "CLIENT_BYTES", 2 * (held + mcp_min.MESSAGE_COST)):
            serving = self.serve()
            self.write(rpc(0, "initialize", init_params(capabilities={"sampling": {}})),
                       note("notifications/initialized"), *taken)
            self.assertEqual((await self.read())["id"], 0)
            request = await self.read()
            self.write(rpc(13, "ping"))
            self.assertEqual((await self.read())["error"]["code"], INTERNAL_ERROR)
            self.state.gate.set()
            self.write({"jsonrpc": "2.0", "id": request["id"], "result": {
                "role": "assistant", "content": {"type": "text", "text": "Hello."}, "model": "m"}})
            out = await self.finish(serving)
        self.assertEqual(sorted(m["id"] for m in out), [1, 2, 10, 11])
        self.assertTrue(all("result" in m for m in out))

    async def test_a_cancel_drops_a_request_still_queued(self):
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 1):
            serving = self.serve()
            self.write(rpc(0, "initialize", init_params()), note("notifications/initialized"),
                       call(1, "wait"), call(2, "count"), call("2", "count"),
                       note("notifications/cancelled", {"requestId": 2}))
            await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)  # all read, the cancel too
            self.state.gate.set()
            out = await self.finish(serving)
        self.assertEqual([m["id"] for m in out], [0, 1, "2"])
        self.assertEqual(self.state.calls, 1)

    async def test_cancel_gets_through_past_the_in_flight_cap(self):
        # Regression: the reader blocked on request #cap+1, so a cancel (or EOF)
        # behind it was never read.
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 2):
            serving = self.serve()
            self.write(rpc(0, "initialize", init_params()), note("notifications/initialized"),
                       *[call(i, "wait") for i in range(1, 5)],
                       note("notifications/cancelled", {"requestId": 1}))
            # The cancel must be read now, before any request ends: 1 ends, and 3 takes its slot.
            await until(lambda: [set(s.running) for s in self.server.sessions] == [{2, 3}],
                        "the cancel behind the cap was read")
            self.state.gate.set()
            out = await self.finish(serving)
        self.assertEqual(sorted(m["id"] for m in out), [0, 2, 3, 4])    # 1 was cancelled: no answer


class StdioExitCase(unittest.TestCase):
    """A server run on given lines of stdin (`serve_target`)."""
    def serve_target(self, source, *options, lines=None, run=False):
        """`serve [OPTIONS] TARGET` (the command line), or with run=True `python TARGET [OPTIONS]`
        (TARGET ending in `server.run()`: the core alone), on `lines` (default: initialize); the
        run, and TARGET's text afterwards."""
        lines = lines or [rpc(0, "initialize", init_params())]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "target.py")
            with open(path, "w") as f:
                f.write(source + ("server.run()\n" if run else ""))
            done = subprocess.run([*PYTHON, path, *options] if run else [*PYTHON, MCP_MIN, "serve", *options, path],
                                  input="".join(json.dumps(m) + "\n" for m in lines).encode(),
                                  capture_output=True, timeout=30, cwd=HERE, env=_clean_env())
            with open(path) as f:
                return done, f.read()


@runs_beside
class StdioExitTest(StdioExitCase):

    def test_stdin_from_a_file_is_served_by_the_reader_thread(self):
        # A regular file cannot be polled: this exercises the thread that Windows uses too.
        with tempfile.TemporaryFile() as f:
            lines = [rpc(0, "initialize", init_params()), note("notifications/initialized"),
                     call(1, "getUser", {"name": "John"}), rpc(2, "ping")]
            f.write("".join(json.dumps(m) + "\n" for m in lines).encode())
            f.seek(0)
            with tempfile.TemporaryDirectory() as tmp:      # the demo's users, as a script serves them
                done = subprocess.run([*PYTHON, "examples/user_store.py", "--db", os.path.join(tmp, "users.db"),
                                       "--stdio"], stdin=f, capture_output=True, timeout=30, cwd=HERE,
                                      env=_clean_env())
        self.assertEqual(done.returncode, 0, done.stderr)
        answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
        self.assertEqual(sorted(answers), [0, 1, 2])
        self.assertEqual(answers[1]["result"]["structuredContent"]["email"], "john@example.com")

    def test_stdio_eof_exits_even_with_a_sync_tool_stuck(self):
        started = time.monotonic()
        done, _ = self.serve_target(
            "import time\nfrom mcp_min import Server\nserver = Server('stuck')\n"
            "@server.tool()\ndef stuck() -> str:\n    time.sleep(60)\n    return 'late'\n",
            "--shutdown-grace", "0.3",
            lines=[rpc(0, "initialize", init_params()), note("notifications/initialized"), call(1, "stuck")],
            run=True)
        self.assertEqual(done.returncode, 0)
        self.assertLess(time.monotonic() - started, mcp_min.SHUTDOWN_GRACE + 10)

    def test_a_tool_raising_systemexit_or_keyboardinterrupt_ends_its_call_not_the_server(self):
        # Regression: SystemExit (argparse inside a tool) or KeyboardInterrupt ended the process.
        tools = "".join(f"@server.tool()\n{kw}def {name}() -> str:\n    raise {exc}\n"
                        for name, kw, exc in (("exit_sync", "", "SystemExit(2)"),
                                              ("exit_async", "async ", "SystemExit(3)"),
                                              ("interrupt_sync", "", "KeyboardInterrupt"),
                                              ("interrupt_async", "async ", "KeyboardInterrupt")))
        names = ["exit_sync", "exit_async", "interrupt_sync", "interrupt_async"]
        done, _ = self.serve_target(
            "from mcp_min import Server\nserver = Server('rude')\n" + tools,
            lines=[rpc(0, "initialize", init_params()), note("notifications/initialized"),
                   *[call(i, name) for i, name in enumerate(names, 1)], rpc(9, "ping")], run=True)
        answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        for i, name in enumerate(names, 1):
            self.assertTrue(answers[i]["result"]["isError"], answers[i])
            self.assertIn(name, done.stderr.decode())       # the traceback is logged
        self.assertEqual(answers[9]["result"], {})


@runs_beside
class StdioOrderTest(unittest.TestCase):
    """stdio: what the door refuses is answered in arrival order, before a later request."""

    LINES = b'[]\nnot json\n{"id":3}\n[1]\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n'

    @staticmethod
    def said(process, count):
        """The next `count` answers, each as its id and error message, or "ok"; an array as a list."""
        def one(m):
            return [one(item) for item in m] if type(m) is list else (m["id"], m["error"]["message"] if "error" in m
                                                                          else "ok")
        return [one(process.read()) for _ in range(count)]

    def test_refusals_then_the_ping_without_a_session(self):
        # Issue 34 item 13: [] then a ping was answered ping first, then -32600 "empty batch".
        process = plain_stdio(self)
        process.write(b'[]\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        self.assertEqual(self.said(process, 2), [(None, "Invalid request: empty batch"), (1, "ok")])
        process.write(self.LINES)       # one write: the server reads them together
        self.assertEqual(self.said(process, 5), [
            (None, "Invalid request: empty batch"), (None, "Parse error"), (None, "Invalid request"),
            (None, "Invalid request: batches are not accepted"), (1, "ok")])

    def test_refusals_then_the_ping_in_a_2025_03_26_session(self):
        # Issue 34 item 13, where batches are taken: a batch's answers go out in order too.
        process = plain_stdio(self)
        process.send(rpc(0, "initialize", init_params("2025-03-26")))
        self.assertEqual(process.read()["id"], 0)
        process.send(note("notifications/initialized"))
        process.write(self.LINES)
        self.assertEqual(self.said(process, 5), [
            (None, "Invalid request: empty batch"), (None, "Parse error"), (None, "Invalid request"),
            [(None, "Invalid request")], (1, "ok")])


@runs_beside
@unittest.skipUnless(os.path.exists("/proc/self/status"), "reads memory from /proc")
class AbuseStdioTest(unittest.TestCase):
    def test_a_sync_tool_logging_while_stdout_is_not_read_is_bounded(self):
        # Regression (issue 15): 200k x 1 KB log messages from a thread while the loop was
        # blocked writing to an unread stdout grew the server by 173 MiB.
        with tempfile.TemporaryDirectory() as tmp:
            path, mark = os.path.join(tmp, "chatty.py"), os.path.join(tmp, "said")
            with open(path, "w") as f:
                f.write("from mcp_min import Server, Context\nserver = Server('chatty')\n"
                        "@server.tool()\ndef chatty(ctx: Context, n: int, mark: str) -> str:\n"
                        "    for i in range(n):\n        ctx.log('info', 'x' * 1000)\n"
                        "    open(mark, 'w').close()\n    return 'said'\nserver.run()\n")
            server = StdioProcess(path, read=False, run=True)
            try:
                server.send(rpc(0, "initialize", init_params()))
                json.loads(server.proc.stdout.readline())
                server.send(note("notifications/initialized"))
                server.send(call(1, "chatty", {"n": 200_000, "mark": mark}))
                deadline = time.monotonic() + 60
                while not os.path.exists(mark):     # the barrier: every message was sent
                    self.assertLess(time.monotonic(), deadline, "the tool never finished")
                    time.sleep(0.05)
                with open(f"/proc/{server.proc.pid}/status") as f:
                    rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024
                # the interpreter (~25 MiB) and at most its client's account (CLIENT_BYTES, 64 MiB),
                # with room for the allocator (63-66 MiB here); it was 173 MiB more
                self.assertLess(rss, 120, "MiB")
                server.close_stdin()
                lines = [json.loads(line) for line in server.proc.stdout]   # now read it all
                self.assertEqual(server.wait(), 0)
                stderr = server.stderr()
            finally:
                server.kill()
        self.assertEqual(tool_text(lines[-1]), "said")      # the result is never dropped
        self.assertLess(len(lines), 200_000)
        self.assertRegex(stderr, r"dropped \d+ log/progress notifications")


##############################################################################
# Core: one door: the same message gets the same answer on every transport
##############################################################################

class OneDoorTest(HttpTestCase):
    """A fault inside the session is answered alike on every transport."""

    async def test_a_bug_in_the_session_is_minus_32603_everywhere_and_the_id_is_free_again(self):
        original = mcp_min.Session._refusal

        def faulty(session, method, params, *rest):
            if method == "ping":
                raise RuntimeError("injected")
            return original(session, method, params, *rest)
        with mock.patch.object(mcp_min.Session, "_refusal", faulty):
            wire = Wire(self.server)                                    # receive, in memory
            await wire.initialize()
            for _ in range(2):
                self.assertEqual((await wire.request(rpc(5, "ping")))["error"]["code"], INTERNAL_ERROR)
            sid = await self.client.initialize()                        # Streamable HTTP
            for _ in range(2):      # the same id again: was 409 "id already in use" for good
                response = await self.client.post(rpc(5, "ping"), sid, LATEST_PROTOCOL_VERSION)
                self.assertEqual(response.status, 200, response)
                self.assertEqual(response.json()["error"]["code"], INTERNAL_ERROR)
            async with mcp_min.Client(f"http://127.0.0.1:{self.port}/sse", transport="sse",
                                      timeout=TIMEOUT) as client:        # legacy SSE
                for _ in range(2):
                    with self.assertRaises(McpError) as failed:
                        await client.ping()
                    self.assertEqual(failed.exception.code, INTERNAL_ERROR)


class SameAnswersTest(HttpTestCase):
    """The same battery of edge-case messages gets the same JSON-RPC answers on every
    transport: stdio (serve_stdio on os pipes), Streamable HTTP (POST /mcp) and legacy
    HTTP+SSE (GET /sse + POST /messages). Each item's answers are the JSON-RPC messages it
    got: over /mcp the bodies or SSE events of its POSTs; on stdio and /sse what the stream
    carried before the answer to a ping sent after it (a barrier: with MAX_IN_FLIGHT 1 the
    ping runs only once every earlier request has been answered), plus /sse's 400 bodies."""
    VERSION = "2025-03-26"      # batches: this version only; the legacy session negotiates it too

    def battery(self):
        """(frames, expected answers as (id, error code, or "ok")), by JSON-RPC 2.0 and MCP."""
        bad = {"jsonrpc": "2.0", "id": 12, "error": {"code": -1, "message": "x"}, "result": {}}
        cancel = note("notifications/cancelled", {"requestId": "q"})
        return [
            ([b'{"jsonrpc":"2.0","id":1,'], [(None, PARSE_ERROR)]),                    # not JSON
            ([{"jsonrpc": "1.0", "id": 2, "method": "ping"}], [(2, INVALID_REQUEST)]),
            ([rpc(None, "ping")], [(None, INVALID_REQUEST)]),      # MCP: an id is never null
            ([rpc(True, "ping")], [(None, INVALID_REQUEST)]),
            ([rpc(1.5, "ping")], [(None, INVALID_REQUEST)]),       # MCP: a string or an integer
            ([b'{"jsonrpc":"2.0","id":6,"method":"ping","id":7}'], [(None, INVALID_REQUEST)]),
            ([rpc(8, "no/such")], [(8, METHOD_NOT_FOUND)]),
            ([rpc(9, "tools/list", [1])], [(9, INVALID_PARAMS)]),
            ([rpc(10, "tools/call", {"arguments": {}})], [(10, INVALID_PARAMS)]),
            ([call(11, "add", {"a": "one", "b": 2})], [(11, "isError")]),     # 2025-11-25: a tool error
            ([note("notifications/no-such")], []),
            ([bad], [(None, INVALID_REQUEST)]),      # a broken response: its id is not the client's
            ([{"jsonrpc": "2.0", "id": "nobody", "result": {}}], []),
            ([note("notifications/cancelled", {"requestId": "nobody"})], []),
            ([call("w", "wait"), call("q", "count"), cancel], [("w", "ok")]),    # q queued, then dropped
            ([[rpc("b1", "ping"), {"jsonrpc": "2.0", "id": "b2", "method": 5}, 1, rpc("b3", "no/such"),
               note("notifications/initialized")]],
             [("b1", "ok"), ("b2", INVALID_REQUEST), (None, INVALID_REQUEST), ("b3", METHOD_NOT_FOUND)]),
            ([[]], [(None, INVALID_REQUEST)]),
            ([[rpc("i1", "initialize", init_params(self.VERSION)), rpc("i2", "ping")]],
             [("i1", INVALID_REQUEST), ("i2", "ok")]),       # MCP 2025-03-26: never in a batch
            ([[rpc("d", "ping"), rpc("d", "ping")]], [("d", INVALID_REQUEST), ("d", "ok")]),
            ([rpc("again", "initialize", init_params(self.VERSION))], [("again", INVALID_REQUEST)]),
            ([call("r", "wait"), call("r", "count")], [("r", INVALID_REQUEST), ("r", "ok")]),
        ]

    def new_item(self):
        self.state.gate = asyncio.Event()   # `wait` blocks until the item's frames are all taken in

    async def streamed(self, send, read, battery):
        """Answers per item on a transport with one stream (stdio, legacy SSE)."""
        await send([rpc(0, "initialize", init_params(self.VERSION)), note("notifications/initialized")])
        self.assertEqual((await read())["result"]["protocolVersion"], self.VERSION)
        out = []
        for n, (frames, _) in enumerate(battery):
            self.new_item()
            got = await send(frames)
            self.state.gate.set()
            await send([rpc(f"barrier-{n}", "ping")])
            while (message := await read()) != {"jsonrpc": "2.0", "id": f"barrier-{n}", "result": {}}:
                got += message if type(message) is list else [message]  # stdio: a batch's, one line
            out.append(got)
        return out

    async def over_stdio(self, battery):
        to_server, from_client = os.pipe()
        to_client, from_server = os.pipe()
        serving = asyncio.ensure_future(mcp_min.serve_stdio(self.server, to_server, from_server))
        lines = asyncio.StreamReader()
        pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(lines), open(to_client, "rb", buffering=0))

        async def send(frames):     # done once the server has read every line (one receive each)
            taken = self.receive.call_count
            os.write(from_client, b"".join((f if type(f) is bytes else json.dumps(f).encode()) + b"\n"
                                           for f in frames))
            await until(lambda: self.receive.call_count == taken + len(frames), "lines taken in")
            return []

        async def read():
            return json.loads(await asyncio.wait_for(lines.readline(), TIMEOUT))
        try:
            return await self.streamed(send, read, battery)
        finally:
            os.close(from_client)
            self.assertEqual(await asyncio.wait_for(serving, TIMEOUT), 0)
            pipe.close()
            for fd in (to_server, from_server):
                os.close(fd)

    async def over_legacy_sse(self, battery):
        reader, writer = await self.client.connect()
        writer.write(self.client.build("GET", "/sse", headers={"Accept": "text/event-stream"}))
        self.assertEqual((await read_head(reader)).status, 200)
        endpoint = (await read_event(reader))["data"]

        async def send(frames):
            errors = []
            for frame in frames:    # each is taken in before its 202 is read: the next comes after
                response = await self.client.request("POST", endpoint, frame)
                self.assertEqual(response.status, 400 if type(frame) is bytes else 202, response)
                errors += response.messages()
            return errors

        async def read():
            while (event := await read_event(reader)).get("event") != "message":
                pass
            return json.loads(event["data"])
        return await self.streamed(send, read, battery)

    async def over_mcp(self, battery):
        sid = await self.client.initialize(self.VERSION)
        out = []
        for frames, _ in battery:
            self.new_item()
            posts = []
            for frame in frames:    # a POST may wait for its answer: the barrier is its frame taken in
                taken = self.receive.call_count
                posts.append(asyncio.ensure_future(self.client.post(frame, sid, self.VERSION)))
                await until(lambda: posts[-1].done() or self.receive.call_count > taken, "frame taken in")
            self.state.gate.set()
            out.append([m for r in await asyncio.gather(*posts) for m in r.messages()])
        return out

    async def test_every_transport_answers_the_battery_alike(self):
        battery = self.battery()
        with mock.patch.object(mcp_min, "MAX_IN_FLIGHT", 1), \
                mock.patch.object(Session, "receive", autospec=True, side_effect=Session.receive) as self.receive:
            answers = {"stdio": await self.over_stdio(battery),
                       "/mcp": await self.over_mcp(battery),
                       "/sse": await self.over_legacy_sse(battery)}
        for n, (frames, expected) in enumerate(battery):
            got = {name: sorted(out[n], key=lambda m: json.dumps(m, sort_keys=True))
                   for name, out in answers.items()}
            with self.subTest(item=n, frames=json.dumps(frames, default=bytes.decode)[:120]):
                summary = sorted(((m["id"], m["error"]["code"] if "error" in m else
                                   "isError" if m["result"].get("isError") else "ok") for m in got["stdio"]),
                                 key=json.dumps)
                self.assertEqual(summary, sorted(expected, key=json.dumps))
                self.assertEqual(got["/mcp"], got["stdio"], "/mcp")
                self.assertEqual(got["/sse"], got["stdio"], "/sse")
        self.assertEqual(self.state.calls, 0)       # a cancelled queued call and a refused duplicate


##############################################################################
# Core: the client, against our server over every transport, and hostile ones
##############################################################################

SLOW_SERVER = '''
import asyncio, sys, os
sys.path.insert(0, {root!r})
from mcp_min import Server, Context
server = Server("slow")
state = {{"cancelled": 0}}

@server.tool()
async def slow(seconds: float = 5.0) -> str:
    """Sleep, noting a cancel."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        state["cancelled"] += 1
        raise
    return "done"

@server.tool()
async def stream_then_wait(ctx: Context) -> str:
    """Start an SSE answer (a progress notice), then hang."""
    ctx.log("info", "working")
    await asyncio.sleep(30)
    return "late"

@server.tool()
def cancelled() -> int:
    """How many calls were cancelled."""
    return state["cancelled"]

@server.tool()
async def chatty(ctx: Context) -> str:
    """Log, report progress, ask the client's model and the user."""
    ctx.log("info", "hello from the tool")
    for i in range(3):
        ctx.progress(i + 1, 3)
    answer = await ctx.sample("Say hi", max_tokens=10)
    form = await ctx.elicit("Name?", {{"name": {{"type": "string"}}}})
    roots = await ctx.list_roots()
    return f"{{answer['content']['text']}} / {{form['content']['name']}} / {{roots[0]['uri']}}"

if __name__ == "__main__":
    server.run()
'''


def _slow_server_file(tmp):
    path = os.path.join(tmp, "slow_server.py")
    with open(path, "w") as f:
        f.write(SLOW_SERVER.format(root=ROOT))
    return path


class ClientTestCase(unittest.IsolatedAsyncioTestCase):
    """A slow server's file, and that server on HTTP (the fixture and helpers)."""

    async def asyncSetUp(self):
        self.tmp = tempfile.mkdtemp()
        self.server_file = _slow_server_file(self.tmp)
        spec = importlib.util.spec_from_file_location("slow_server", self.server_file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.slow = module.server
        self.http = await mcp_min.start_http(self.slow, "127.0.0.1", 0)
        self.base = f"http://127.0.0.1:{self.http.port}"

    async def asyncTearDown(self):
        await self.http.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def handlers(self, seen):
        return dict(
            sampling=lambda p: {"role": "assistant", "content": {"type": "text", "text": "hi"},
                                "model": "test"},
            elicitation=lambda p: {"action": "accept", "content": {"name": "Ada"}},
            roots=[{"uri": "file:///tmp/project", "name": "project"}],
            on_log=lambda p: seen.append(("log", p["data"])))

    async def check_full_exchange(self, target, era="handshake"):
        seen = []
        async with mcp_min.Client(target, timeout=10, era=era, **self.handlers(seen)) as client:
            self.assertIn(client.protocol_version, mcp_min.PROTOCOL_VERSIONS if era == "handshake"
                          or target[-4:] == "/sse" else mcp_min.MODERN_VERSIONS)
            self.assertEqual(client.server_info["name"], "slow")
            names = [t["name"] for t in await client.list_tools()]
            self.assertEqual(names, ["slow", "stream_then_wait", "cancelled", "chatty"])
            progress = []
            # 2026-07-28: the tool asks by answering, three times, and runs again each time
            result = await client.call_tool("chatty", on_progress=progress.append)
            self.assertEqual(result["content"][0]["text"], "hi / Ada / file:///tmp/project")
            self.assertEqual([p["progress"] for p in progress][-3:], [1, 2, 3])
            self.assertIn(("log", "hello from the tool"), seen)
            self.assertEqual(await client.ping(), {})
        return client

    async def timeout_cancels(self, target, era):
        async with mcp_min.Client(target, timeout=10, era=era) as client:
            before = (await client.call_tool("cancelled"))["structuredContent"]["result"]
            with self.assertRaises(mcp_min.McpError) as caught:
                await client.call_tool("slow", {"seconds": 30}, timeout=0.3)
            self.assertEqual(caught.exception.code, mcp_min.REQUEST_TIMEOUT)
            for _ in range(50):     # the cancel (a notification, or a closed stream) reaches it
                count = await client.call_tool("cancelled")
                if count["structuredContent"]["result"] == before + 1:
                    break
                await asyncio.sleep(0.05)
            self.assertEqual(count["structuredContent"]["result"], before + 1, (target, era))

    def faster_keepalives(self):
        faster = mock.patch.object(mcp_min, "KEEPALIVE_INTERVAL", 0.2)    # a closed stream is seen sooner
        faster.start()
        self.addCleanup(faster.stop)

    async def assert_call_fails_when_server_dies(self, target, tool, kill):
        client = mcp_min.Client(target, timeout=30)
        await client.connect()
        call = asyncio.ensure_future(client.call_tool(tool))
        await asyncio.sleep(0.3)
        await kill(client)
        started = time.monotonic()
        with self.assertRaises(mcp_min.McpError) as caught:
            await call
        self.assertLess(time.monotonic() - started, 5)     # at once, not at the timeout
        self.assertEqual(caught.exception.code, mcp_min.CONNECTION_CLOSED)
        await client.close()

    @staticmethod
    async def reap(process):
        if process.returncode is None:
            process.kill()
            await process.wait()

    async def hostile_server(self, answer):
        """A hostile HTTP server: `answer(head, body)` gives the bytes to send for each request."""
        async def handle(reader, writer):
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = re.search(rb"Content-Length: (\d+)", head)
                    body = await reader.readexactly(int(length.group(1))) if length else b""
                    writer.write(answer(head, body))
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
                writer.close()
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        self.addAsyncCleanup(server.wait_closed)
        self.addCleanup(server.close)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"


class ClientTests(ClientTestCase):
    """mcp_min.Client against mcp_min servers (pipes, sockets, both HTTP transports), and hostile ones."""

    async def test_stdio(self):
        await self.check_full_exchange([*PYTHON, self.server_file])

    async def test_streamable_http(self):
        await self.check_full_exchange(self.base + "/mcp")
        self.assertEqual(self.http.sessions, {}, "the client DELETEs its session on close")

    async def test_legacy_sse(self):
        await self.check_full_exchange(self.base + "/sse")
        await self.check_full_exchange(self.base + "/sse", "auto")   # a 405 to the probes

    async def test_probe_picks_the_transport(self):
        async with mcp_min.Client(self.base + "/mcp") as client:
            self.assertIsInstance(client._transport, mcp_min._StreamableHttp)
        async with mcp_min.Client(self.base + "/sse") as client:
            self.assertIsInstance(client._transport, mcp_min._LegacySse)

    async def test_timeout_cancels_on_the_server(self):
        self.faster_keepalives()
        await asyncio.gather(self.timeout_cancels(self.base + "/mcp", "handshake"),     # side by side
                             self.timeout_cancels([*PYTHON, self.server_file], "handshake"))

    async def test_dying_server_fails_pending_calls_at_once(self):
        async def kill(client):
            client._transport.process.kill()
        await self.assert_call_fails_when_server_dies([*PYTHON, self.server_file], "slow", kill)

    async def test_server_gone_mid_stream_fails_the_call_at_once(self):
        # Regression: a Streamable HTTP answer stream that ended without the result
        # left the call waiting for its own timeout.
        other = await mcp_min.start_http(self.slow, "127.0.0.1", 0)

        async def kill(client):
            for writer in list(other.writers):      # the connection drops: no answer comes
                writer.transport.abort()
            await other.close()
        await self.assert_call_fails_when_server_dies(f"http://127.0.0.1:{other.port}/mcp",
                                                      "stream_then_wait", kill)

    async def test_reinitializes_when_the_session_is_gone(self):
        async with mcp_min.Client(self.base + "/mcp", era="handshake") as client:
            old = client._transport.session_id
            for entry in list(self.http.sessions.values()):     # the server forgets us
                entry.close(cancel=True)
            self.http.sessions.clear()
            results = await asyncio.gather(*[client.call_tool("cancelled") for _ in range(5)])
            self.assertFalse(any(r.get("isError") for r in results))    # all resent, none lost
            self.assertNotEqual(client._transport.session_id, old)
            self.assertEqual(len(self.http.sessions), 1)                # initialized once

    async def test_an_http_error_answer_closes_its_connection(self):
        # Regression (issue 33): an error status to a POST (a 401; a legacy server's 404 to the
        # probe) was read and raised, and its connection left open for the garbage collector.
        closed = asyncio.Event()

        async def refuse(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\nno")
            await reader.read()     # to its end: the client closed the connection
            closed.set()
            writer.close()
        refuser = await asyncio.start_server(refuse, "127.0.0.1", 0)
        error = None
        try:
            try:
                await mcp_min.Client(f"http://127.0.0.1:{refuser.sockets[0].getsockname()[1]}/mcp",
                                     transport="http", era="handshake").connect()
            except McpError as e:
                error = e   # kept, with its traceback and all it holds: the collector closes nothing
            self.assertIn("HTTP 401", getattr(error, "message", ""))
            await asyncio.wait_for(closed.wait(), TIMEOUT)
        finally:
            refuser.close()

    async def test_endpoint_on_another_origin_is_refused(self):
        async def fake(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                         b"event: endpoint\ndata: http://evil.example.com/messages?s=1\n\n")
            await writer.drain()
            writer.close()
        fake_server = await asyncio.start_server(fake, "127.0.0.1", 0)
        port = fake_server.sockets[0].getsockname()[1]
        try:
            with self.assertRaises(mcp_min.McpError) as caught:
                await mcp_min.Client(f"http://127.0.0.1:{port}/sse", transport="sse").connect()
            self.assertIn("another origin", caught.exception.message)
        finally:
            fake_server.close()

    async def test_failed_connect_leaves_no_child_process(self):
        # The child is seen as it starts: close() forgets the transport, and its process with it.
        started, start = [], mcp_min._StdioClient.start

        async def seen_start(transport):
            await start(transport)
            started.append(transport.process)
            self.addAsyncCleanup(self.reap, transport.process)
        client = mcp_min.Client([*PYTHON, "-c", "import time; time.sleep(30)"], timeout=0.15)
        with mock.patch.object(mcp_min._StdioClient, "start", seen_start), \
                mock.patch.object(mcp_min, "KILL_STEP", 0.2), self.assertRaises(McpError) as caught:
            await client.connect()
        self.assertEqual(caught.exception.code, mcp_min.REQUEST_TIMEOUT)    # no answer to initialize
        self.assertIsNone(client._transport)
        self.assertEqual(len(started), 1)
        self.assertIsNotNone(started[0].returncode, "the child still runs")

    def test_sse_parsing_follows_whatwg(self):
        def events(*pieces):
            parser, out = mcp_min._SseParser(), []
            for piece in pieces:
                out += parser.feed(piece)
            return out
        self.assertEqual(events(b"event: endpoint\rdata: /m\r\r"), [{"event": "endpoint", "data": "/m"}])
        self.assertEqual(events(b"\xef\xbb", b"\xbfdata: {}\n\n"), [{"event": "message", "data": "{}"}])
        self.assertEqual(events(b"event:\ndata: 1\n\n"), [{"event": "message", "data": "1"}])
        self.assertEqual(events(b"event: endpoint\n\nid: 5\nretry: 9\n\n"), [{"id": "5", "retry": "9"}])
        self.assertEqual(events(b"data: a\r", b"\ndata: b\r\n\r", b"\n"), [{"event": "message", "data": "a\nb"}])
        # An id holding NUL is ignored (WHATWG): that event has none, the last good one stands (issue 35).
        self.assertEqual(events(b"id: 7\ndata: a\n\nid: 8\0x\ndata: b\n\n"),
                         [{"id": "7", "event": "message", "data": "a"}, {"event": "message", "data": "b"}])

    def test_body_sizes_are_digits_only(self):
        for bad in ("-1", "+5", " 5", "", "1e3", "9" * 13):
            with self.assertRaises(ValueError, msg=bad):
                mcp_min._size(bad, 10)
        self.assertEqual((mcp_min._size("42", 10), mcp_min._size(b"1F", 16)), (42, 31))
        with self.assertRaises(ValueError):
            mcp_min._size(b"-1", 16)

    async def test_a_cursor_that_is_not_a_string_is_an_error_not_a_crash(self):
        # A second read: a list as nextCursor raised TypeError (unhashable) from the pager.
        client = mcp_min.Client(make_server()[0])
        client.request = mock.AsyncMock(return_value={"tools": [], "nextCursor": ["x"]})
        with self.assertRaises(McpError) as raised:
            await client.list_tools()
        self.assertEqual(raised.exception.message, "tools/list: the server's cursor is not a string")

    async def test_a_response_with_two_lengths_is_refused(self):
        # RFC 9112 6.3: the client took the last Content-Length of two that differ (issue 35's read)
        answer = b'{"jsonrpc":"2.0","id":0,"result":{}}'
        url = await self.hostile_server(lambda head, body: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                        b"Content-Length: %d\r\nContent-Length: 5\r\n\r\n%s" % (len(answer), answer))
        with self.assertRaises(McpError) as caught:
            await asyncio.wait_for(mcp_min.Client(url, timeout=5, transport="http").connect(), TIMEOUT)
        self.assertIn("two Content-Lengths", caught.exception.message)

    async def test_a_body_that_never_comes_is_bounded_by_the_timeout(self):
        url = await self.hostile_server(lambda head, body: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                                           b"Content-Length: 500\r\n\r\n{")
        with self.assertRaises(McpError) as caught:
            await asyncio.wait_for(mcp_min.Client(url, timeout=0.2, transport="http").connect(), TIMEOUT)
        self.assertEqual(caught.exception.code, mcp_min.REQUEST_TIMEOUT)

    async def test_a_session_the_server_always_forgets_ends_in_an_error(self):
        # Regression: the 404 to the re-initialization's own notice waited on itself forever.
        def answer(head, body):
            if b"Mcp-Session-Id" in head:
                return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
            result = json.dumps(mcp_min._result(json.loads(body)["id"], {
                "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
                "serverInfo": {"name": "forgetful", "version": "1"}})).encode()
            return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s%d\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), len(result), result))
        url = await self.hostile_server(answer)
        with self.assertRaises(McpError):
            await asyncio.wait_for(mcp_min.Client(url, timeout=2, transport="http", era="handshake")
                                   .connect(), TIMEOUT)

    async def test_a_stream_that_ends_before_its_answer_is_resumed(self):
        # transports: a POST's SSE stream that ends unanswered is resumed by a GET
        # carrying Last-Event-ID, after the server's `retry`; the request is not sent again.
        calls, resumed_from = [], []

        def http(status, headers, body=b""):
            return b"HTTP/1.1 %s\r\n%s\r\n%s" % (status, b"".join(h + b"\r\n" for h in headers), body)
        sse = [b"Content-Type: text/event-stream", b"Connection: close"]

        async def handle(reader, writer):
            try:
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"Content-Length: (\d+)", head)
                message = json.loads(await reader.readexactly(int(length.group(1)))) if length else None
                last_id = re.search(rb"Last-Event-ID: (\S+)", head)
                if message and message.get("method") == "initialize":
                    result = json.dumps(mcp_min._result(message["id"], {
                        "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {"tools": {}},
                        "serverInfo": {"name": "resumable", "version": "1"}})).encode()
                    writer.write(http(b"200 OK", [b"Content-Type: application/json", b"Mcp-Session-Id: s1",
                                                  b"Content-Length: %d" % len(result)], result))
                elif message and "id" not in message:
                    writer.write(http(b"202 Accepted", [b"Content-Length: 0"]))
                elif message:       # the call: its stream ends after a priming event
                    calls.append(message["id"])
                    writer.write(http(b"200 OK", sse, b"id: e1\nretry: 10\ndata:\n\n"))
                elif last_id:
                    resumed_from.append(last_id.group(1))
                    answer = json.dumps(mcp_min._result(calls[0], {"content": [
                        {"type": "text", "text": "resumed"}]})).encode()
                    writer.write(http(b"200 OK", sse, b"id: e2\ndata: " + answer + b"\n\n"))
                else:               # the GET stream for the server's own messages, the DELETE
                    writer.write(http(b"405 Method Not Allowed", [b"Content-Length: 0"]))
                await writer.drain()
            finally:
                writer.close()
        fake = await asyncio.start_server(handle, "127.0.0.1", 0)
        self.addAsyncCleanup(fake.wait_closed)
        self.addCleanup(fake.close)
        url = f"http://127.0.0.1:{fake.sockets[0].getsockname()[1]}/mcp"
        async with mcp_min.Client(url, timeout=TIMEOUT, transport="http", era="handshake") as client:
            result = await client.call_tool("anything")
        self.assertEqual(result["content"][0]["text"], "resumed")
        self.assertEqual((len(calls), resumed_from), (1, [b"e1"]))

    async def test_a_repeated_cursor_ends_the_listing(self):
        client = mcp_min.Client("unused")

        async def request(method, params=None, **_):
            return {"tools": [{"name": "t"}], "nextCursor": "again"}
        client.request = request
        with self.assertRaisesRegex(McpError, "repeated a cursor"):
            await asyncio.wait_for(client.list_tools(), TIMEOUT)

    async def test_env_adds_to_ours_unless_told(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "env.json")
            script = f"import json, os; json.dump([os.environ.get(k) for k in ('PATH', 'EXTRA')], open({out!r}, 'w'))"
            for inherit, path in ((True, os.environ.get("PATH")), (False, None)):
                client = mcp_min.Client([*PYTHON, "-c", script], env={"EXTRA": "x"}, inherit_env=inherit)
                transport = mcp_min._StdioClient(client.target, client)
                await transport.start()
                await asyncio.wait_for(transport.process.wait(), TIMEOUT)
                await transport.close()
                with open(out) as f:
                    self.assertEqual(json.load(f), [path, "x"], inherit)

    async def test_the_client_stops_answering_what_the_server_cancels(self):
        server, _ = make_server()
        stopped = asyncio.Event()

        @server.tool()
        async def impatient(ctx: Context) -> str:
            try:
                await ctx.session.request("elicitation/create", {"message": "?", "requestedSchema": {
                    "type": "object", "properties": {}}}, ctx.request_id, timeout=0.2)
            except McpError as e:
                return f"gave up: {e.code}"

        async def slow_user(params):
            try:
                await asyncio.sleep(TIMEOUT)
            finally:
                stopped.set()
        async with mcp_min.Client(server, era="handshake", elicitation=slow_user) as client:
            result = await client.call_tool("impatient")
            self.assertEqual(result["content"][0]["text"], f"gave up: {mcp_min.REQUEST_TIMEOUT}")
            await asyncio.wait_for(stopped.wait(), TIMEOUT)     # notifications/cancelled stopped it
            self.assertEqual(client._asked, {})
            await client.subscribe("config://app")
            self.assertEqual(await client.unsubscribe("config://app"), {})

    def test_a_notification_with_malformed_params_is_skipped_never_raised(self):
        # Regression: a progressToken that is no id (a list), or params that are no object, raised
        # in the reader and ended the connection ("The server closed its output") for every call.
        seen = []
        client = mcp_min.Client("unused", on_notification=lambda method, params: seen.append(method))
        for params in ({"progressToken": [1]}, {"requestId": [1]}, [1], {"_meta": [1]}):
            for method in ("notifications/progress", "notifications/cancelled"):
                client._received({"jsonrpc": "2.0", "method": method, "params": params})
        self.assertEqual(len(seen), 8)


_BIG_ANSWERS = """\
from mcp_min import Server, Context
server = Server('big')

@server.tool()
async def big(ctx: Context, n: int, stream: bool = False) -> str:
    if stream:      # a log message first: the answer then goes as an SSE stream
        ctx.log('info', 'a big answer comes')
    return 'x' * n

if __name__ == "__main__":
    server.run()
"""


# _BIG_ANSWERS' tool, its answers written as the TypeScript SDK writes them: the id last.
_ID_LAST = """\
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if 'id' not in message:
        continue
    if message['method'] == 'initialize':
        result = {'protocolVersion': message['params']['protocolVersion'], 'capabilities': {'tools': {}},
                  'serverInfo': {'name': 'id-last', 'version': '1'}}
    else:
        result = {'content': [{'type': 'text', 'text': 'x' * message['params']['arguments']['n']}]}
    print(json.dumps({'result': result, 'jsonrpc': '2.0', 'id': message['id']}), flush=True)
"""


def side_by_side(function, *cases):
    """`function(*case)` for each case, in threads, four at a time (most of a child process's
    time is its start-up; more at once would only queue for the CPUs, each against its own
    timeout): the results, in order."""
    with concurrent.futures.ThreadPoolExecutor(min(len(cases), 4)) as pool:
        return list(pool.map(lambda case: function(*case), cases))


class ClientBigAnswerTest(unittest.IsolatedAsyncioTestCase):
    """Issue 30: the client's limit on one message from a server is its own (MAX_MESSAGE_BYTES,
    Client(max_message_bytes=)); big answers arrive on every transport, and one past the limit
    fails its call at once while the session goes on."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.path, cls.id_last = os.path.join(cls.tmp, "big.py"), os.path.join(cls.tmp, "id_last.py")
        for path, source in ((cls.path, _BIG_ANSWERS), (cls.id_last, _ID_LAST)):
            with open(path, "w") as f:
                f.write(source)
        cls.json, cls.sse = side_by_side(lambda *args: ServerProcess(*args, script=cls.path),
                                         ("--json-response",), ())

    @classmethod
    def tearDownClass(cls):
        cls.json.close()
        cls.sse.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    async def asyncSetUp(self):
        asyncio.get_running_loop().slow_callback_duration = 5     # big answers are decoded here

    def transports(self):
        """(name, target, stream, era): the tool's answer goes as JSON unless `stream`."""
        mcp, sse = f"http://127.0.0.1:{self.json.port}/mcp", f"http://127.0.0.1:{self.sse.port}"
        return [("stdio", [*PYTHON, self.path], False, "auto"),
                ("HTTP JSON", mcp, False, "auto"), ("HTTP JSON", mcp, False, "handshake"),
                ("HTTP SSE", sse + "/mcp", True, "auto"), ("HTTP SSE", sse + "/mcp", True, "handshake"),
                ("legacy SSE", sse + "/sse", True, "handshake")]

    def client(self, target, era, logs, **options):
        return mcp_min.Client(target, timeout=TIMEOUT, era=era, on_log=logs.append, env=_clean_env(),
                              inherit_env=False, **options)

    async def test_a_9_mib_answer_arrives_within_a_second_on_every_transport(self):
        # Regression (issue 30): reading SSE was quadratic; this answer took 7 s on /mcp, 10 s on /sse.
        seconds = {}
        for name, target, stream, era in self.transports():
            if era == "handshake" and name != "legacy SSE":
                continue    # the default era (2026-07-28 with these servers) is enough here
            logs = []
            async with self.client(target, era, logs) as client:
                await client.call_tool("big", {"n": 1, "stream": stream})   # connected, tools listed
                best = float("inf")
                for _ in range(3):      # the best of three: other work on the machine can only add
                    started = time.perf_counter()
                    result = await client.call_tool("big", {"n": 9 << 20, "stream": stream})
                    best = min(best, time.perf_counter() - started)
                    self.assertEqual(len(result["content"][0]["text"]), 9 << 20, name)
                    if best < 1.0:
                        break
            seconds[name] = round(best, 3)
            self.assertEqual(bool(logs), stream, name)      # SSE: the log message came first
        self.assertLess(max(seconds.values()), 1.0, f"seconds per 9 MiB answer: {seconds}")

    async def test_an_answer_past_the_limit_fails_its_call_at_once_and_the_session_goes_on(self):
        # ... its id read where the server wrote it, even last (the TypeScript SDK's order)
        id_last = ("stdio, id last", [*PYTHON, self.id_last], False, "handshake")

        async def past_the_limit(name, target, stream, era):
            async with self.client(target, era, [], max_message_bytes=1 << 20) as client:
                started = time.perf_counter()
                with self.assertRaises(McpError, msg=(name, era)) as caught:
                    await client.call_tool("big", {"n": 2 << 20, "stream": stream})
                # not at its timeout (TIMEOUT): at once, however busy the machine (1 s was not)
                self.assertLess(time.perf_counter() - started, TIMEOUT / 3, (name, era))
                self.assertEqual(caught.exception.code, INTERNAL_ERROR, (name, era))
                self.assertIn(f"over {1 << 20} bytes", caught.exception.message)
                self.assertIn("Client(max_message_bytes=...)", caught.exception.message)
                result = await client.call_tool("big", {"n": 1000, "stream": stream})
                self.assertEqual(result["content"][0]["text"], "x" * 1000, (name, era))
        await asyncio.gather(*(past_the_limit(*transport) for transport in [*self.transports(), id_last]))

    def test_sse_reading_is_linear_in_the_event_size(self):
        # Regression (issue 30): each 64 KiB piece re-split the whole buffer: 14 MiB took 8.4 s.
        # 4 times the size costs under 8 times the CPU (it was 16 times: quadratic; linear is 4, and
        # the bigger one's page faults, counted as the thread's time, took it to 6.4 once in CI).
        def event(size):    # one event of `size` bytes of data, as read: in READ_CHUNK pieces
            data = b"data: " + b"x" * size + b"\n\n"
            return size, [data[i:i + mcp_min.READ_CHUNK] for i in range(0, len(data), mcp_min.READ_CHUNK)]

        def cost(size, pieces):     # CPU seconds to parse it
            parser, events, started = mcp_min._SseParser(), [], time.thread_time()
            for piece in pieces:
                events += parser.feed(piece)
            spent = time.thread_time() - started
            self.assertEqual([len(e["data"]) for e in events], [size])
            return spent
        events = event(7 << 19), event(14 << 20)    # 3.5 MiB, 14 MiB
        # the least of four each, taken in turns: a pause or a busy neighbour can only add
        small, large = map(min, zip(*[[cost(*e) for e in events] for _ in range(4)]))
        self.assertLess(large, 8 * small, f"CPU seconds: 3.5 MiB {small:.3f}, 14 MiB {large:.3f}")


# A stdio server that asks for what the client never said it takes: a form or a URL
# elicitation (the tool's `mode`), as an input request (2026-07-28) or a request of its own,
# whose answer it returns as the tool's text (the handshake era).
_ASKING = """\
import json, sys
def send(message):
    print(json.dumps({'jsonrpc': '2.0', **message}), flush=True)
def ask(mode):
    if mode == 'url':
        return {'mode': 'url', 'message': 'Sign in', 'url': 'https://example.com/in', 'elicitationId': 'e1'}
    return {'message': 'Name?', 'requestedSchema': {'properties': {'name': {'type': 'string'}}}}
handshake = False
for line in sys.stdin:
    message = json.loads(line)
    method, id_, params = message.get('method'), message.get('id'), message.get('params') or {}
    info = {'capabilities': {'tools': {}}, 'serverInfo': {'name': 'asking', 'version': '1'}}
    if method == 'server/discover':
        send({'id': id_, 'result': {'supportedVersions': ['2026-07-28'], **info}})
    elif method == 'initialize':
        handshake = True
        send({'id': id_, 'result': {'protocolVersion': params['protocolVersion'], **info}})
    elif method == 'tools/call' and handshake:
        send({'id': 'ask-1', 'method': 'elicitation/create', 'params': ask(params['arguments'].get('mode'))})
        answer = json.loads(sys.stdin.readline())
        send({'id': id_, 'result': {'content': [{'type': 'text', 'text': json.dumps(answer)}]}})
    elif method == 'tools/call':
        asked = {'ask': {'method': 'elicitation/create', 'params': ask(params['arguments'].get('mode'))}}
        send({'id': id_, 'result': {'resultType': 'input_required', 'inputRequests': asked}})
    elif id_ is not None:
        send({'id': id_, 'result': {'tools': []} if method == 'tools/list' else {}})
"""


def _kill(pid):
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _live_processes(group):
    """PIDs of the processes of process group `group` still running: a zombie (dead, not yet
    reaped: PID 1 in a container may never reap an orphan) counts as gone."""
    live = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/stat") as f:
                state, _, pgrp = f.read().rpartition(")")[2].split()[:3]
            if int(pgrp) == group and state not in "ZX":
                live.append(int(pid))
    return live


def _running(pid):
    """Whether process `pid` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in "ZX"
    except FileNotFoundError:
        return False


@unittest.skipUnless(os.path.exists("/proc/self/stat"), "reads processes from /proc")
class ClientProcessCase(unittest.IsolatedAsyncioTestCase):
    """Stdio servers, wrapped or asking (the helpers)."""

    async def check_wrapped(self, pidfile, grandchild, with_block):
        """A server started by `sh`, which first starts `grandchild` (it outlives EOF, and writes
        its PID in `pidfile`), ended by close() or by the end of `async with` (`with_block`):
        nothing of its process group runs after. How long the ending took."""
        shell = (f"{grandchild} & echo $! > {shlex.quote(pidfile)}; exec {PYTHON_CMD} {shlex.quote(USER_STORE)} "
                 f"--db {shlex.quote(pidfile + '.db')} --stdio")
        client = mcp_min.Client(["sh", "-c", shell], timeout=TIMEOUT, env=_clean_env(), inherit_env=False)

        async def running():
            with open(pidfile) as f:
                pid = int(f.read())
            self.addCleanup(_kill, pid)
            server = client._transport.process
            self.assertTrue(_running(pid))
            self.assertEqual(os.getpgid(pid), server.pid)   # the server leads the group: both in it
            result = await client.call_tool("getUser", {"name": "Jane"})
            self.assertEqual(result["structuredContent"]["name"], "Jane")
            return pid, server, time.monotonic()
        if with_block:
            async with client:
                pid, server, started = await running()
        else:
            await client.connect()
            pid, server, started = await running()
            await client.close()
        took = time.monotonic() - started
        self.assertIsNotNone(server.returncode)
        self.assertFalse(_running(pid), "the grandchild still runs")
        self.assertEqual(_live_processes(server.pid), [])
        return took

    async def asking(self, path, era, mode="form", **handlers):
        """What the asking server's tool answers this client, or the McpError it raises."""
        async with mcp_min.Client([*PYTHON, path], era=era, timeout=TIMEOUT, **handlers) as client:
            try:
                return json.loads((await client.call_tool("ask", {"mode": mode}))["content"][0]["text"])
            except McpError as e:
                return e

    def asking_server(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "asking.py")
        with open(path, "w") as f:
            f.write(_ASKING)
        return path

    # Regression (issue 30): it read "-32601 Method not found", as if the server had said it.
    DECLINED = "This client declined the server's {}: it has no handler for it (Client({}=...))"


class ClientProcessGroupAndRefusalTest(ClientProcessCase):
    """Issue 30: a stdio server runs in a process group of its own, which close() ends whole
(npx, uvx and shell wrappers start the server as a grandchild); and what this client has
no handler for, it declines in its own name."""

    async def test_a_wrapped_server_leaves_no_process_behind(self):
        # Regression (issue 30): the server's grandchild (npx -> sh -> node) outlived close(), reparented.
        step = 0.2
        with mock.patch.object(mcp_min, "KILL_STEP", step), tempfile.TemporaryDirectory() as tmp:
            # one ignores SIGTERM too (SIGKILL ends it); one ends on SIGTERM, at the end of `async with`
            took = await asyncio.gather(
                self.check_wrapped(os.path.join(tmp, "1"), "(trap '' TERM; exec sleep 300)", False),
                self.check_wrapped(os.path.join(tmp, "2"), "sleep 300", True))
        self.assertLess(max(took), 3 * step + 2.0, took)    # EOF, SIGTERM, SIGKILL: a KILL_STEP each

    async def test_what_the_client_has_no_handler_for_it_declines_in_its_own_name(self):
        handshake = await self.asking(self.asking_server(), "handshake")
        # the handshake era: the server's request gets an error answer, and its tool goes on
        self.assertEqual(handshake, {"jsonrpc": "2.0", "id": "ask-1", "error": {
            "code": METHOD_NOT_FOUND, "message": self.DECLINED.format("form elicitation", "elicitation")}})


class SyncClientCase(unittest.TestCase):
    """SyncClient against the user store over stdio (the helper)."""

    def user_store(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        return mcp_min.SyncClient([*PYTHON, USER_STORE, "--db", os.path.join(tmp.name, "users.db")],
                                  timeout=TIMEOUT, env=_clean_env(), inherit_env=False)


class SyncClientTest(SyncClientCase):
    """SyncClient: the Client's methods without await, against the user store over stdio."""

    def test_methods_without_await_and_close_on_exit(self):
        with self.user_store() as client:
            self.assertEqual(client.server_info["name"], "user-store")     # attributes pass through
            names = sorted(t["name"] for t in client.list_tools())
            self.assertEqual(names, ["addUser", "deleteUser", "getUser", "getUsers"])
            result = client.call_tool("getUser", {"name": "Jane"})
            self.assertEqual(result["structuredContent"], {"name": "Jane", "email": "jane@example.com"})
            self.assertTrue(client.call_tool("getUser", {"name": "Nobody"})["isError"])
            self.assertEqual(client.ping(), {})
            process, thread = client.client._transport.process, client._thread
        self.assertEqual(process.returncode, 0)     # stdin closed: the server ended by itself
        self.assertFalse(thread.is_alive())
        self.assertTrue(client._loop.is_closed())   # its loop too (it leaked, with its sockets)

    def test_a_failed_connect_raises_and_stops_its_thread(self):
        # Its own thread (issue 40: every "mcp-client" thread of the process counted, those of
        # the classes that run beside too): the client made first, so that it is known when
        # __init__ raises.
        client = mcp_min.SyncClient.__new__(mcp_min.SyncClient)
        with self.assertRaises(McpError) as caught:
            client.__init__([*PYTHON, "-c", "import sys; sys.stdin.read()"], timeout=0.15)
        self.assertEqual(caught.exception.code, mcp_min.REQUEST_TIMEOUT)
        self.assertEqual(client._thread.name, "mcp-client")
        self.assertFalse(client._thread.is_alive())
        self.assertTrue(client._loop.is_closed())


class ClientInMemoryTest(unittest.IsolatedAsyncioTestCase):
    """Client(server): a Server in this process, no pipe or socket (issue 11's pairing)."""

    async def test_a_server_is_used_in_memory(self):
        server, state = make_server()
        logs, progress = [], []
        async with mcp_min.Client(server, timeout=TIMEOUT, on_log=logs.append, era="handshake",
                                  sampling=lambda p: {"role": "assistant", "model": "m",
                                                      "content": {"type": "text", "text": "hi"}},
                                  roots=[{"uri": "file:///tmp/p", "name": "p"}]) as client:
            self.assertEqual(client.server_info["name"], "test-server")
            self.assertEqual(client.protocol_version, LATEST_PROTOCOL_VERSION)
            self.assertIn("add", [t["name"] for t in await client.list_tools()])
            self.assertEqual((await client.call_tool("add", {"a": 2, "b": 3}))["structuredContent"],
                             {"result": 5})
            refused = await client.call_tool("refuse")
            self.assertTrue(refused["isError"])
            self.assertEqual(refused["content"][0]["text"], "No such user: bob.")
            self.assertEqual((await client.call_tool("ask_model", {"prompt": "?"}))["content"][0]["text"],
                             "hi")     # the server's request to us, answered in memory
            self.assertEqual((await client.call_tool("roots"))["structuredContent"], {"result": ["file:///tmp/p"]})
            await client.set_log_level("debug")
            await client.call_tool("chat")
            await client.call_tool("steps", {"n": 2}, on_progress=progress.append)
            with self.assertRaises(McpError) as unknown:
                await client.request("nope")
            self.assertEqual(unknown.exception.code, METHOD_NOT_FOUND)
            @server.tool
            async def odd_log(ctx: Context) -> str:    # keys that collide once encoded
                ctx.log("info", {1: "a", "1": "b"})
                return "ok"
            self.assertEqual((await client.call_tool("odd_log"))["content"][0]["text"], "ok")
            waiting = asyncio.ensure_future(client.call_tool("wait"))
            await asyncio.wait_for(state.entered.wait(), TIMEOUT)
        # Closing the client ends the session: what still ran is cancelled, and nothing leaks.
        with self.assertRaises(McpError):
            await asyncio.wait_for(waiting, TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while not state.cancelled:      # the cancellation lands on a later turn
            self.assertLess(time.monotonic(), deadline)
            await asyncio.sleep(0.001)
        self.assertEqual(server.sessions, set())
        self.assertEqual([entry["data"] for entry in logs], ["d", "i", "w", "e"])
        self.assertEqual([p["progress"] for p in progress], [1, 2])


class RedirectingTestCase(HttpTestCase):
    """A front that redirects everything to the real server, 307 or 308 (`self.url`)."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.seen = []

        async def redirect(reader, writer):     # everything: to the real server, 307 or 308
            head = await reader.readuntil(b"\r\n\r\n")
            self.seen.append(head)
            length = re.search(rb"(?i)content-length: *(\d+)", head)
            await reader.readexactly(int(length.group(1)) if length else 0)
            status = b"308 Permanent Redirect" if head.startswith(b"GET") else b"307 Temporary Redirect"
            writer.write(b"HTTP/1.1 %s\r\nLocation: http://127.0.0.1:%d/mcp\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n" % (status, self.port))
            writer.close()
        self.front = await asyncio.start_server(redirect, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.front.sockets[0].getsockname()[1]}/old"

    async def asyncTearDown(self):
        self.front.close()
        await super().asyncTearDown()


class ClientRedirectTest(RedirectingTestCase):
    """Client: a 307 or 308 is followed with the same method and body."""

    async def test_redirects_are_followed_with_the_same_method_and_body(self):
        async with mcp_min.Client(self.url, era="handshake", timeout=TIMEOUT) as client:
            self.assertEqual((await client.call_tool("add", {"a": 2, "b": 3}))["content"][0]["text"], "5")
        methods = [h.split(b" ")[0] for h in self.seen]
        self.assertEqual(methods.count(b"POST"), 3)     # initialize, initialized, tools/call
        self.assertIn(b"GET", methods)


class _CarelessHttpServer:
    """A Streamable HTTP server in a few lines, answering as a careless or hostile one may:
    initialize in JSON; every other request in an SSE stream whose head holds `headers` and
    which opens with the raw SSE bytes `before`, then the answer. A GET (the client's own
    stream) gets 405; one request a connection."""

    def __init__(self, before=b"", headers=b""):
        self.before, self.headers = before, headers

    async def __aenter__(self):
        self.listener = await asyncio.start_server(self.answer, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.listener.sockets[0].getsockname()[1]}/mcp"

    async def __aexit__(self, *exc):
        self.listener.close()

    async def answer(self, reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            body = await reader.readexactly(int(length.group(1)) if length else 0)
            message = json.loads(body) if body else {}
            if not head.startswith(b"POST"):
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")
            elif "id" not in message:
                writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            elif message["method"] == "initialize":
                data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "protocolVersion": message["params"]["protocolVersion"], "capabilities": {},
                    "serverInfo": {"name": "careless", "version": "1"}}}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n%s" % (len(data), data))
            else:
                data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n%sConnection: close\r\n\r\n"
                             b"%sevent: message\ndata: %s\n\n" % (self.headers, self.before, data))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


# A stdio server that, before each answer, writes three lines over the client's limit whose id
# cannot be read as JSON: 00, a control byte in a string, a byte that is no UTF-8.
_UNREADABLE_IDS = r'''
import json, sys
out = sys.stdout.buffer
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    result = {}
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {},
                  "serverInfo": {"name": "unreadable", "version": "1"}}
    else:
        for head in (b'{"id":00,', b'{"jsonrpc":"2.0","id":"a\x01b",', b'{"id":"\xff",'):
            out.write(head + b'"result":"' + b"x" * (1 << 17) + b'"}\n')
    out.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n")
    out.flush()
'''


class ClientHostileServerTest(unittest.IsolatedAsyncioTestCase):
    """The client against a server that sends what a parser must survive."""

    async def test_a_retry_field_of_no_ascii_digits_is_ignored(self):
        # Issue 34 item 17: "²".isdigit() is true and int("²") raises: the SSE reader died,
        # the ping timed out, and asyncio logged "Task exception was never retrieved".
        async with _CarelessHttpServer(before="id: 1\nretry: ²\n\n".encode()) as url, \
                mcp_min.Client(url, era="handshake", timeout=5) as client:
            started = time.monotonic()
            self.assertEqual(await client.ping(), {})
            self.assertEqual(await client.ping(), {})
            self.assertLess(time.monotonic() - started, 4)

    def test_an_id_that_is_no_json_is_no_error(self):
        # Issue 34 item 18: _too_big read an id off a skipped message's ends with json.loads,
        # which raised on 00, a control byte or \xff in a string (the stdio reader died with it).
        client = mcp_min.Client("http://127.0.0.1:1/mcp")
        waiting = client._pending[0] = concurrent.futures.Future()
        for head, tail in ((b'{"id":00,"result":"xx', b""), (b'{"jsonrpc":"2.0","id":"a\x01b","result":"', b""),
                           (b'{"id":"\xff","result":"', b""), (b"", b'xx","id":00}'), (b"", b'xx","id":"\xff"}')):
            with self.subTest(head=head, tail=tail), self.assertLogs("mcp_min", "ERROR"):
                client._too_big(None, head, tail)
        self.assertFalse(waiting.done())    # 00 is not 0: no request is failed on an id not read
        with self.assertLogs("mcp_min", "ERROR"):
            client._too_big(None, b'{"id":0,"result":"', b"")
        self.assertIn("over", str(waiting.exception()))

    async def test_unreadable_ids_over_the_limit_on_stdio_are_skipped(self):
        # Issue 34 item 18, over a real pipe: the three lines are skipped, the answer arrives.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "unreadable.py")
            with open(path, "w") as f:
                f.write(_UNREADABLE_IDS)
            with self.assertLogs("mcp_min", "ERROR") as logged:
                async with mcp_min.Client([*PYTHON, path], era="handshake", timeout=TIMEOUT,
                                          max_message_bytes=1 << 16) as client:
                    self.assertEqual(await client.ping(), {})
                    self.assertEqual(await client.ping(), {})
        self.assertEqual(sum("was skipped" in line for line in logged.output), 6)


# Issue 39's fake stdio server. A ping is answered first with `bombs` empty arrays, once. A
# tools/call sends n requests of its `method` (with a sampling request's params unless "ping"),
# then a log message (the client has read every request by then: one stream, read in order);
# with `read`, it reads as many answers and returns how many were results and the refusals,
# else it never reads its stdin again.
_FLOODING = r'''
import json, sys, time
bombs = int(sys.argv[1])
def send(message):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    if method == "initialize":
        send({"id": id_, "result": {"protocolVersion": message["params"]["protocolVersion"],
                                    "capabilities": {"tools": {}},
                                    "serverInfo": {"name": "flooding", "version": "1"}}})
    elif method == "ping" and bombs:
        sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":[%s]}\n'
                         % (json.dumps(id_), ",".join(["[]"] * bombs)))
        bombs = 0
    elif method == "tools/call":
        n, ask, read = (message["params"]["arguments"][k] for k in ("n", "method", "read"))
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                  "maxTokens": 10}
        for i in range(n):
            send({"id": f"s{i}", "method": ask, **({} if ask == "ping" else {"params": params})})
        send({"method": "notifications/message", "params": {"level": "info", "data": "all sent"}})
        sys.stdout.flush()
        if not read:
            time.sleep(60)
        answers = [json.loads(sys.stdin.readline()) for _ in range(n)]
        refusals = [a["error"] for a in answers if "error" in a]
        summary = {"results": n - len(refusals), "refusals": refusals}
        send({"id": id_, "result": {"content": [{"type": "text", "text": json.dumps(summary)}]}})
    elif id_ is not None:
        send({"id": id_, "result": {}})
    sys.stdout.flush()
'''


class ClientBoundsTest(unittest.IsolatedAsyncioTestCase):
    """Issue 39: what a server can make our Client hold is bounded: a message's objects and
    arrays (MAX_CONTAINERS, before parsing), the server's requests and our answers by bytes
    (MAX_ASKED_BYTES), our answers' POSTs in number (MAX_ANSWERING), a response's head
    (MAX_RESPONSE_HEAD)."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.flooding = os.path.join(tmp.name, "flooding.py")
        with open(self.flooding, "w") as f:
            f.write(_FLOODING)

    def shrink(self, **limits):
        for name, value in limits.items():
            patch = mock.patch.object(mcp_min, name, value)
            patch.start()
            self.addCleanup(patch.stop)

    def stdio_client(self, bombs=0, **options):
        return mcp_min.Client([*PYTHON, self.flooding, str(bombs)], era="handshake",
                              timeout=TIMEOUT, env=_clean_env(), inherit_env=False, **options)

    async def http_server(self, answer):
        """A Streamable HTTP server in a few lines: ``await answer(head, message, writer)`` for
        each request (`message`: its JSON body parsed, or None), on a connection of its own.
        Connections still held are closed before the test's loop ends: one cancelled there set
        off an error in asyncio's own callback on 3.12.1 ("Exception in callback ...")."""
        handlers = {}

        async def handle(reader, writer):
            handlers[asyncio.current_task()] = writer
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                body = await reader.readexactly(int(length.group(1)) if length else 0)
                await answer(head, json.loads(body) if body else None, writer)
                await writer.drain()
                if not writer.is_closing():     # held open: until the client lets go
                    await reader.read()
                writer.close()

        async def let_go():
            for writer in handlers.values():
                writer.close()
            await asyncio.gather(*handlers, return_exceptions=True)
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        self.addCleanup(server.close)
        self.addAsyncCleanup(let_go)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"

    @staticmethod
    def json_answer(writer, data):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (len(data), data))
        writer.close()

    def routine(self, message, writer):
        """What the fake servers answer alike: True if it was a GET (405: no stream of its
        own), a notification (202) or initialize."""
        if message is None:
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return True
        if "id" not in message:
            writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            writer.close()
            return True
        if message.get("method") != "initialize":
            return False
        self.json_answer(writer, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": message["params"]["protocolVersion"], "capabilities": {},
            "serverInfo": {"name": "fake", "version": "1"}}}).encode())
        return True

    async def test_a_container_bomb_is_refused_before_parsing_and_fails_what_it_answers(self):
        # Regression (issue 39 item 7): the client parsed a server's [[],[],...] whole (16 MB
        # peaked at 425 MiB); now it refuses it first, as the server does (_request_from).
        self.shrink(MAX_CONTAINERS=100)
        with self.assertLogs("mcp_min", "WARNING") as logged:
            async with self.stdio_client(bombs=1000) as client:     # a stdio line
                with self.assertRaises(McpError) as caught:
                    await client.ping()
                self.assertEqual(await client.ping(), {})     # the session goes on
        self.assertEqual(caught.exception.code, INTERNAL_ERROR)
        self.assertIn("over 100 objects and arrays", caught.exception.message)
        self.assertIn("over 100 objects and arrays", "\n".join(logged.output))

        async def bombing(head, message, writer):   # a POST's JSON answer
            if not self.routine(message, writer):
                self.json_answer(writer, b'{"jsonrpc":"2.0","id":%d,"result":[%s]}'
                                 % (message["id"], b",".join([b"[]"] * 1000)))
        url = await self.http_server(bombing)
        async with mcp_min.Client(url, era="handshake", timeout=TIMEOUT) as client:
            with self.assertRaises(McpError) as caught:
                await client.ping()
        self.assertIn("over 100 objects and arrays", caught.exception.message)

    async def test_requests_past_the_bound_are_refused_not_run(self):
        # Regression (issue 39 item 8): 50,000 sampling requests to a slow handler were all held
        # (+215 MiB). Now those past the bound get -32603 naming it, and their handler never runs.
        self.shrink(MAX_ASKED_BYTES=20 << 10, REFUSING_BYTES=8 << 10)
        gate, sent, calls = asyncio.Event(), asyncio.Event(), []

        async def sampling(params):
            calls.append(params)
            await gate.wait()
            return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
        async with self.stdio_client(sampling=sampling, on_log=lambda p: sent.set()) as client:
            call = asyncio.ensure_future(client.call_tool(
                "flood", {"n": 200, "method": "sampling/createMessage", "read": True}))
            await asyncio.wait_for(sent.wait(), TIMEOUT)    # every request read
            held = len(client._asked)
            gate.set()
            summary = json.loads((await call)["content"][0]["text"])
        self.assertEqual(summary["results"], held)
        self.assertEqual(len(calls), held)
        self.assertLess(held, 20)   # 12 KiB, at MESSAGE_COST and its bytes each
        refusals = summary["refusals"]
        self.assertEqual(len(refusals), 200 - held)
        self.assertEqual({r["code"] for r in refusals}, {INTERNAL_ERROR})
        self.assertTrue(refusals[0]["message"].startswith(
            f"Over the memory this client may hold ({12 << 10} bytes"), refusals[0])
        self.assertNotIn("\n", refusals[0]["message"])
        self.assertEqual(client._memory.used, 0)    # all given back

    async def test_a_server_that_never_reads_its_stdin_costs_a_bounded_amount(self):
        # Regression (issue 39 item 8): 200,000 pings from a server that never read its stdin
        # held an answer each, and a task blocked writing it (362-708 MiB). Now the answers
        # waiting are within the bound; those past it are dropped, logged.
        self.shrink(MAX_ASKED_BYTES=40 << 10, REFUSING_BYTES=8 << 10, KILL_STEP=0.2)
        sent = asyncio.Event()
        with self.assertLogs("mcp_min", "WARNING") as logged:
            async with self.stdio_client(on_log=lambda p: sent.set()) as client:
                call = asyncio.ensure_future(client.call_tool(
                    "flood", {"n": 6000, "method": "ping", "read": False}))
                await asyncio.wait_for(sent.wait(), TIMEOUT)    # every ping read
                unsent = client._transport.process.stdin.transport.get_write_buffer_size()
                waiting = len(client._asked)
            with self.assertRaises(McpError):
                await call
        # unread: the pipe's 64 KiB and asyncio's write buffer (its high-water mark: 64 KiB)
        self.assertLess(waiting, (32 << 10) // mcp_min.MESSAGE_COST)   # 2,500 before
        self.assertLessEqual(unsent, (64 << 10) + mcp_min.MAX_ANSWERING * 512)
        self.assertTrue(any("messages dropped in all for this client" in line
                            for line in logged.output))

    async def test_answers_posts_are_few_and_our_own_requests_still_connect(self):
        # Regression (issue 39 item 8): 3,000 pings on a GET /mcp stream whose answers' POSTs
        # never completed held 3,008 open connections, and under ulimit -n 1024 the client's
        # own next request failed with "Too many open files".
        self.shrink(MAX_ANSWERING=2)
        open_posts, most, sent = set(), [0], asyncio.Event()

        async def holding(head, message, writer):
            if head.startswith(b"GET"):     # the client's GET stream: 50 pings, then a log
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
                for i in range(50):
                    writer.write(b'data: {"jsonrpc":"2.0","id":%d,"method":"ping"}\n\n' % i)
                writer.write(b'data: {"jsonrpc":"2.0","method":"notifications/message",'
                             b'"params":{"level":"info","data":"all sent"}}\n\n')
            elif self.routine(message, writer):
                pass
            elif "method" in message:     # a request of the client's own: answered
                self.json_answer(writer, b'{"jsonrpc":"2.0","id":%d,"result":{}}' % message["id"])
            else:   # our answer to a ping: its POST is never answered
                open_posts.add(writer)
                most[0] = max(most[0], len(open_posts))
        url = await self.http_server(holding)
        async with mcp_min.Client(url, era="handshake", timeout=TIMEOUT,
                                  on_log=lambda p: sent.set()) as client:
            await asyncio.wait_for(sent.wait(), TIMEOUT)    # every ping read
            self.assertEqual(await client.ping(), {})
            self.assertEqual(most[0], 2)
            # the other answers wait their turn, charged
            self.assertGreater(client._memory.used, 50 * mcp_min.MESSAGE_COST)
        for task in client._tasks:  # they would wait REPLY_TIMEOUT for the POSTs
            task.cancel()
        await asyncio.gather(*client._tasks, return_exceptions=True)

    async def test_a_response_head_too_large_is_an_mcp_error_naming_the_url(self):
        # Regression (issue 39 item 10): a 200 kB head was a raw LimitOverrunError, no URL.
        async def big_head(head, message, writer):
                writer.write(b"HTTP/1.1 200 OK\r\nX-Big: " + b"x" * 200_000 + b"\r\n\r\n")
        url = await self.http_server(big_head)
        for era in ("auto", "handshake"):
            with self.subTest(era=era), self.assertRaises(McpError) as caught:
                await mcp_min.Client(url, era=era, timeout=TIMEOUT).connect()
            self.assertIn(url, caught.exception.message)
            self.assertIn(f"response head too large (over {mcp_min.MAX_RESPONSE_HEAD} bytes)",
                          caught.exception.message)


##############################################################################
# Core: running a server: server.run(), its signals, the official SDK's client
##############################################################################

def start_http_server(test, command, *args, **popen):
    """A server process on a free port, killed at the test's end: `command` is `python FILE` (FILE
    ends in `server.run()`: the core alone) or the command line's `serve TARGET`, given
    `--port 0 ARGS`. The process, and its port."""
    process = subprocess.Popen([*command, "--port", "0", *args], cwd=HERE, env=_clean_env(),
                               stderr=subprocess.PIPE, text=True, **popen)
    test.addCleanup(process.stderr.close)
    test.addCleanup(lambda: process.poll() is None and (process.kill(), process.wait()))
    port = int(re.search(r"127\.0\.0\.1:(\d+)/mcp", process.stderr.readline()).group(1))
    return process, port


@runs_beside
class ServerRunTest(unittest.TestCase):
    """`server.run()` as a script's last line (the core's way to serve): its status, its help,
    its signals."""

    def test_server_run_ends_the_process_with_its_status(self):
        # Issue 33: the README's `server.run()` as a script's last line exited 0 when the port was
        # in use or a public --host was refused: a supervisor saw no failure.
        with tempfile.TemporaryDirectory() as tmp, socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            path = os.path.join(tmp, "weather.py")
            with open(path, "w") as f:
                f.write("from mcp_min import Server\nserver = Server('w')\nserver.run()\n"
                        "print('run() returned')\n")
            cases = [(["--port", str(taken.getsockname()[1])],), (["--port", "0", "--host", "0.0.0.0"],)]
            runs = side_by_side(lambda args: subprocess.run(
                [*PYTHON, path, *args], cwd=HERE, env=_clean_env(), capture_output=True, text=True,
                timeout=TIMEOUT), *cases)
        for (args,), done in zip(cases, runs):
            self.assertEqual(done.returncode, 1, (args, done.stderr))
            self.assertNotIn("run() returned", done.stdout)
        self.assertIn("address already in use", runs[0].stderr.lower())
        self.assertIn("without a token", runs[1].stderr)

    def test_a_scripts_help_names_its_own_options_and_serves(self):
        done = subprocess.run([*PYTHON, os.path.join(HERE, "examples", "user_store.py"), "--help"],
                              capture_output=True, text=True, timeout=TIMEOUT, cwd=HERE, env=_clean_env(),
                              stdin=subprocess.DEVNULL)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("--db PATH", done.stdout)
        self.assertIn("--port", done.stdout)

    @unittest.skipUnless(os.name == "posix", "POSIX signals")
    def test_an_ignored_sigint_stays_ignored(self):
        # `python server.py --port 8080 &` from a script starts with SIGINT ignored: Ctrl-C is
        # not for it.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "plain.py")
            with open(path, "w") as f:
                f.write("from mcp_min import Server\nserver = Server('plain')\nserver.run()\n")
            # (SIGINT ignored by a shell's trap, as `&` does: no preexec_fn, which threads make unsafe)
            server, port = start_http_server(self, ["sh", "-c", 'trap "" INT; exec "$0" "$@"', *PYTHON, path])
        server.send_signal(signal.SIGINT)
        import urllib.request
        request = urllib.request.Request(          # answered after the signal: still serving
            f"http://127.0.0.1:{port}/mcp", json.dumps(rpc(0, "initialize", init_params())).encode(),
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            self.assertEqual(json.loads(answer.read())["id"], 0)
        self.assertIsNone(server.poll())


_NAPS = """\
import time
from mcp_min import Server
server = Server('naps')

@server.tool()
def nap(seconds: float, mark: str) -> str:
    open(mark, 'w').close()
    time.sleep(seconds)
    return 'rested'

if __name__ == "__main__":
    server.run()
"""


@runs_beside
@unittest.skipUnless(os.name == "posix", "POSIX signals")
class ShutdownTest(unittest.TestCase):
    """SIGTERM and Ctrl-C: calls in flight finish within the grace period, the rest are
    answered with an error, and the process exits 0; a second signal ends it at once. The server
    is a script ending in `server.run()`."""
    def start_http_server(self, path, *args):     # signalled: SIGINT at its default (issue 40)
        return start_http_server(self, signals_at_default([*PYTHON, path]), *args)

    def naps(self, tmp):
        path = os.path.join(tmp, "naps.py")
        with open(path, "w") as f:
            f.write(_NAPS)
        return path

    @staticmethod
    def wait_for(*paths):
        deadline = time.monotonic() + TIMEOUT
        while not all(map(os.path.exists, paths)):     # the barrier: the tools are running
            if time.monotonic() > deadline:
                raise AssertionError("the tools never started")
            time.sleep(0.01)

    def test_http_calls_in_flight_finish_or_are_answered_then_exit_0(self):
        with concurrent.futures.ThreadPoolExecutor(2) as both:     # the two signals side by side
            for done in [both.submit(self.http_signal, s) for s in (signal.SIGTERM, signal.SIGINT)]:
                done.result(2 * TIMEOUT)

    def http_signal(self, signum):
        with tempfile.TemporaryDirectory() as tmp, \
                concurrent.futures.ThreadPoolExecutor(2) as pool:
            server, port = self.start_http_server(self.naps(tmp), "--shutdown-grace", "1")
            url = f"http://127.0.0.1:{port}/mcp"

            def nap(seconds, mark):
                with mcp_min.SyncClient(url) as client:
                    try:
                        result = client.call_tool("nap", {"seconds": seconds, "mark": mark})
                        return result["content"][0]["text"]
                    except mcp_min.McpError as e:
                        return e.code, e.message
            marks = os.path.join(tmp, "short"), os.path.join(tmp, "stuck")
            short, stuck = pool.submit(nap, 0.2, marks[0]), pool.submit(nap, 600, marks[1])
            self.wait_for(*marks)
            server.send_signal(signum)
            self.assertEqual(short.result(TIMEOUT), "rested")    # finished within the grace
            self.assertEqual(stuck.result(TIMEOUT), (INTERNAL_ERROR, "Server shutting down"))
            self.assertEqual(server.wait(TIMEOUT), 0)           # not after the tool's 600 s
            self.assertNotIn("Traceback", server.stderr.read())

    def test_a_second_signal_ends_the_server_at_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            server, port = self.start_http_server(self.naps(tmp), "--shutdown-grace", "600")
            mark = os.path.join(tmp, "stuck")

            def nap():      # fails when the server goes
                with contextlib.suppress(mcp_min.McpError), mcp_min.SyncClient(
                        f"http://127.0.0.1:{port}/mcp", timeout=2 * TIMEOUT) as client:
                    client.call_tool("nap", {"seconds": 600, "mark": mark})
            client = threading.Thread(target=nap, daemon=True)
            client.start()
            self.addCleanup(client.join, TIMEOUT)
            self.wait_for(mark)
            server.send_signal(signal.SIGTERM)
            self.assertIn("stopping", server.stderr.readline())    # the barrier: it is stopping
            server.send_signal(signal.SIGINT)
            self.assertEqual(server.wait(TIMEOUT), 128 + signal.SIGINT)

    def stuck_stdio(self, tmp, calls):
        """A stdio server (grace 0.3 s) with `calls` calls of a 600 s tool running."""
        server = StdioProcess(self.naps(tmp), options=("--shutdown-grace", "0.3"), run=True)
        self.addCleanup(server.kill)
        server.initialize()
        mark = os.path.join(tmp, "stuck")
        for id_ in range(1, calls + 1):
            server.send(call(id_, "nap", {"seconds": 600, "mark": mark}))
        self.wait_for(mark)
        return server

    def test_stdio_a_signal_during_the_grace_after_eof_still_answers(self):
        # Regression: the spec's stdio shutdown (close stdin, then SIGTERM) cut the grace
        # short and left the call in flight unanswered.
        with tempfile.TemporaryDirectory() as tmp:
            server = self.stuck_stdio(tmp, 1)
            server.close_stdin()
            server.proc.send_signal(signal.SIGTERM)
            self.assertEqual(server.read()["error"]["code"], INTERNAL_ERROR)
            self.assertEqual(server.wait(), 0)

    def test_stdio_sigterm_answers_what_runs_with_an_error_and_logs_no_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            server = self.stuck_stdio(tmp, 2)
            server.proc.send_signal(signal.SIGTERM)
            answers = {m["id"]: m for m in (server.read(), server.read())}
            self.assertEqual(server.wait(), 0)
            for id_ in (1, 2):
                self.assertEqual(answers[id_]["error"]["code"], INTERNAL_ERROR, answers[id_])
            self.assertNotIn("ERROR", server.stderr())      # no "an inner task was cancelled"


# The official Python SDK's client (in .peers) as a user runs it against a server of their own:
# examples/user_store.py. argv: HERE, then [target, name] pairs (a URL, or a stdio command as JSON).
SDK_USER_STORE_CLIENT = textwrap.dedent("""
    import anyio, json, sys
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.sse import sse_client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    def transport(target):
        if target.endswith("/sse"):
            return sse_client(target)
        if target.startswith("http"):
            return streamable_http_client(target)
        command = json.loads(target)
        return stdio_client(StdioServerParameters(command=command[0], args=command[1:],
                                                  env={"PYTHONPATH": sys.argv[1]}))

    async def main():
        for target, name in map(json.loads, sys.argv[2:]):
            async with transport(target) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                added = await session.call_tool("addUser", {"name": name, "email": name.lower() + "@example.com"})
                users = await session.call_tool("getUsers", {})
                print(json.dumps([added.content[0].text, bool(added.is_error), users.structured_content]), flush=True)
    anyio.run(main)
""")


@runs_beside
class OfficialClientTest(unittest.TestCase):
    """Issue 35: the official Python SDK's client (mcp==2.3.0 in .peers, see .ci/interop/README.md)
    adds a user and lists the users, against examples/user_store.py (`server.run()`: the core
    alone) over stdio, the legacy /sse and Streamable HTTP at /mcp."""

    def test_the_sdk_client_adds_and_lists_users_on_every_transport(self):
        python = _sdk_python()
        if python is None:
            self.skipTest("the official Python SDK is not in .peers (see .ci/interop/README.md)")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        _, port = start_http_server(self, [*PYTHON, USER_STORE, "--db", os.path.join(tmp.name, "http.db")])
        stdio = [sys.executable, "-S", USER_STORE, "--db", os.path.join(tmp.name, "stdio.db"), "--stdio"]
        cases = [(json.dumps(stdio), "Carson"), (f"http://127.0.0.1:{port}/sse", "Ada"),
                 (f"http://127.0.0.1:{port}/mcp", "Grace")]
        done = subprocess.run([python, "-c", SDK_USER_STORE_CLIENT, HERE, *map(json.dumps, cases)],
                              capture_output=True, text=True, timeout=60, env=_clean_env())
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        self.assertEqual(len(answers), 3, done.stderr[-2000:])
        for (target, name), (added, failed, users) in zip(cases, answers):
            with self.subTest(target=target):
                self.assertEqual((added, failed), (f"Added {name} <{name.lower()}@example.com>.", False))
                names = [user["name"] for user in users["result"]]
                self.assertEqual(names[:2], ["John", "Jane"])
                self.assertIn(name, names)
        self.assertEqual(names, ["John", "Jane", "Ada", "Grace"])     # /sse and /mcp: one server


##############################################################################
# THE EXTENSIONS: each test below needs one (`needs_...`), and is skipped when mcp_min.py is
# cut at its core; in the file's order of the extensions.
##############################################################################

##############################################################################
# Extension: JSON Schema keywords beyond what type hints make
##############################################################################

@needs_schema_keywords
class SchemaKeywordsTest(unittest.TestCase):
    """What validate checks of schemas written by hand: const, allOf, oneOf, bounds, $ref."""

    def test_an_authors_output_schema_with_a_ref_is_checked(self):
        # Issue 35's second read: wrapping an author's schema under "result" left its $ref
        # pointing at nothing, and every value passed.
        def f(): ...
        schema = {"$defs": {"P": {"type": "object", "required": ["a"]}}, "$ref": "#/$defs/P"}
        referred = mcp_min.Tool(f, output_schema=schema)
        self.assertEqual(referred.result({"a": 1})["structuredContent"], {"a": 1})
        with self.assertLogs("mcp_min", "ERROR"):
            self.assertTrue(referred.result({"b": 1})["isError"])

    def test_keywords_beyond_type_hints(self):
        self.assertIsNotNone(validate("b", {"const": "a"}))
        self.assertIsNotNone(validate(0, {"minimum": 1}))
        self.assertIsNotNone(validate(1, {"exclusiveMaximum": 1}))
        self.assertIsNotNone(validate("abc", {"maxLength": 2}))
        self.assertIsNotNone(validate(1, {"oneOf": [{"type": "integer"}, {"type": "number"}]}))
        self.assertIsNotNone(validate(1, {"allOf": [{"type": "integer"}, {"minimum": 5}]}))
        ref = {"$defs": {"n": {"type": "integer"}}, "type": "object",
               "properties": {"v": {"$ref": "#/$defs/n"}}}
        self.assertIsNone(validate({"v": 1}, ref))
        self.assertEqual(validate({"v": "1"}, ref), "v: expected integer, got string")

    def test_hostile_inputs_terminate(self):
        loop_schema = {"$ref": "#"}             # refers to itself
        self.assertIsNone(validate(1, loop_schema))
        deep = []
        for _ in range(10_000):
            deep = [deep]
        self.assertIsNone(validate(deep, {"type": "array", "items": {"$ref": "#"}}))

    def test_recursive_refs_compile_a_bounded_number_of_checks(self):
        tree = {"$defs": {"node": {"type": "object", "properties": {
            "left": {"$ref": "#/$defs/node"}, "right": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node"}
        check = mcp_min._checker(tree)

        def grow(n, seed):
            return {} if n == 0 else {("left", "right")[seed % 2]: grow(n - 1, seed // 2 + n)}
        with mock.patch.object(mcp_min, "_checker", wraps=mcp_min._checker) as compiled:
            for seed in range(300):       # every path a new shape: each ref is compiled once per depth
                self.assertIsNone(check(grow(30, seed), ""))
        self.assertLessEqual(compiled.call_count, 2 * 65 + 2)


_SELF_LOOP = {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}


# A server that lists a tool whose property schema is _SELF_LOOP (its author hostile or careless).
_LOOPING_SERVER = f'''
import json, sys
LOOP = {_SELF_LOOP!r}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method, params = message["method"], message.get("params") or {{}}
    if method == "initialize":
        answer = {{"result": {{"protocolVersion": params["protocolVersion"], "capabilities": {{"tools": {{}}}},
                              "serverInfo": {{"name": "looping", "version": "1"}}}}}}
    elif method == "tools/list":
        answer = {{"result": {{"tools": [{{"name": "evil", "inputSchema": {{
            "type": "object", "properties": {{"x": LOOP}}}}}}]}}}}
    elif method == "tools/call":
        answer = {{"result": {{"content": [{{"type": "text", "text": "called " + json.dumps(params["arguments"])}}]}}}}
    else:
        answer = {{"error": {{"code": -32601, "message": "Method not found"}}}}
    print(json.dumps({{"jsonrpc": "2.0", "id": message["id"], **answer}}), flush=True)
'''


@runs_beside
@needs_schema_keywords
class SchemaKeywordsAbuseTest(unittest.TestCase):
    """validate / _checker against hand-written schemas made to cost: $ref loops and chains, false."""

    def test_a_self_referring_anyof_and_a_doubling_chain_answer_at_once(self):
        # Issue 34 item 15: each $defs entry whose anyOf names the next twice doubled the work
        # (30 entries: hours); the 96-byte self loop never finished. Each $ref is checked once
        # per value and place; a loop that never consumes the value is a problem, named.
        found = bounded_child(self, f'''
            import json, time, mcp_min
            loop = {_SELF_LOOP!r}
            defs = {{f"d{{i}}": {{"anyOf": [{{"$ref": f"#/$defs/d{{i + 1}}"}}] * 2}} for i in range(30)}}
            chain = {{"$defs": {{**defs, "d30": {{"type": "integer"}}}}, "$ref": "#/$defs/d0"}}
            all_of = {{"$defs": {{"a": {{"allOf": [{{"$ref": "#/$defs/a"}}]}}}}, "$ref": "#/$defs/a"}}
            tree = {{"$defs": {{"n": {{"type": "array", "items": {{"$ref": "#/$defs/n"}}}}}}, "$ref": "#/$defs/n"}}
            started = time.perf_counter()
            out = {{"loop": [mcp_min.validate(v, loop) for v in (1, "x", None, {{"a": [1]}}, [[]])],
                    "chain": [mcp_min.validate(1, chain), mcp_min.validate("x", chain)],
                    "allOf": mcp_min.validate(1, all_of),
                    "tree": [mcp_min.validate([[[]], []], tree), mcp_min.validate([[1]], tree)]}}
            out["seconds"] = time.perf_counter() - started
            print(json.dumps(out))
        ''')
        self.assertLess(found["seconds"], 2.0)
        for problem in found["loop"]:
            self.assertRegex(problem or "", r"^arguments: (does not match any allowed form|\$ref #/\$defs/a "
                                            r"refers to itself without end)$")
        self.assertEqual(found["chain"], [None, "arguments: does not match any allowed form"])
        self.assertEqual(found["allOf"], "arguments: $ref #/$defs/a refers to itself without end")
        self.assertEqual(found["tree"], [None, "[0][0]: expected array, got integer"])  # recursion still works

    def test_a_tools_input_schema_with_a_loop_is_checked_at_once(self):
        # Issue 34 item 15, through Tool.check_input: a tools/call is answered -32602, not held.
        found = bounded_child(self, f'''
            import json, time, mcp_min
            server = mcp_min.Server("s")
            server.add_tool(lambda x=0: x, "t", input_schema={{"type": "object", "$defs": {_SELF_LOOP["$defs"]!r},
                                                              "properties": {{"x": {{"$ref": "#/$defs/a"}}}}}})
            started = time.perf_counter()
            problems = [server.tools["t"].check_input(arguments, "") for arguments in ({{"x": 1}}, {{}})]
            print(json.dumps([problems, time.perf_counter() - started]))
        ''')
        self.assertEqual(found[0], ["x: does not match any allowed form", None])
        self.assertLess(found[1], 2.0)

    @needs_cli
    def test_a_hostile_servers_schema_does_not_hold_the_cli(self):
        # Issue 34 item 15, from a hostile server: the CLI types k=v by the tool's schema
        # (`_typed`); the looping one held it forever. Now the call goes out, x typed as JSON.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "looping.py")
            with open(path, "w") as f:
                f.write(_LOOPING_SERVER)
            try:
                done = subprocess.run([*PYTHON, MCP_MIN, "client", f"{PYTHON_CMD} {path}", "tools/call", "evil",
                                       "x=1"], capture_output=True, text=True, timeout=20, cwd=ROOT)
            except subprocess.TimeoutExpired:
                self.fail("the CLI was still checking the schema after 20 s")
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        self.assertEqual(json.loads(done.stdout)["content"][0]["text"], 'called {"x": 1}')

    def test_a_false_subschema_refuses_in_all_of_one_of_and_behind_a_ref(self):
        for value, schema in ((1, {"allOf": [False]}), (1, {"allOf": [True, False]}),
                              (1, {"$defs": {"no": False}, "$ref": "#/$defs/no"})):
            with self.subTest(schema=schema):
                self.assertIsNotNone(validate(value, schema))
        self.assertEqual(validate(1, {"allOf": [False]}), "arguments: no value is allowed here")
        self.assertIsNone(validate(1, {"oneOf": [True, False]}))


##############################################################################
# Extension: the 2026-07-28 era: requests that stand alone
##############################################################################

def modern(id_, method, params=None, capabilities=None, version="2026-07-28", **meta):
    """A 2026-07-28 request: it names its version and the client's capabilities in _meta."""
    return rpc(id_, method, {**(params or {}), "_meta": {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}, **meta}})


@needs_2026
class ModernSessionTest(unittest.IsolatedAsyncioTestCase):
    """2026-07-28 beside the handshake era: a request that names its version stands alone."""

    async def asyncSetUp(self):
        self.server, self.state = make_server()
        self.wire = Wire(self.server)       # never initialized

    async def test_discover_and_a_call_need_no_initialize(self):
        found = (await self.wire.request(modern(1, "server/discover")))["result"]
        self.assertEqual(found["resultType"], "complete")
        self.assertEqual(found["supportedVersions"][0], "2026-07-28")
        self.assertIn("2025-11-25", found["supportedVersions"])
        self.assertEqual(found["capabilities"]["resources"], {"subscribe": True, "listChanged": True})
        self.assertEqual((found["ttlMs"], found["cacheScope"]), (0, "private"))
        self.assertEqual(found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test-server")
        result = (await self.wire.request(modern(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})))["result"]
        self.assertEqual((result["resultType"], result["structuredContent"]), ("complete", {"result": 5}))
        self.assertNotIn("ttlMs", result)           # a call is not cached
        self.server.cache = {"ttlMs": 60_000, "cacheScope": "public"}
        listed = (await self.wire.request(modern(3, "tools/list")))["result"]
        self.assertEqual((listed["ttlMs"], listed["cacheScope"]), (60_000, "public"))
        self.assertEqual(self.wire.session.state, "new")     # nothing was kept between them

    async def test_bad_meta_versions_and_removed_methods(self):
        no_caps = rpc(1, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
        self.assertEqual((await self.wire.request(no_caps))["error"]["code"], INVALID_PARAMS)
        error = (await self.wire.request(modern(2, "tools/list", version="2099-01-01")))["error"]
        self.assertEqual((error["code"], error["data"]), (mcp_min.UNSUPPORTED_VERSION, {
            "supported": ["2026-07-28"], "requested": "2099-01-01"}))
        for i, method in enumerate(("initialize", "ping", "logging/setLevel", "resources/subscribe",
                                    "resources/unsubscribe", "tasks/list"), 3):
            self.assertEqual((await self.wire.request(modern(i, method)))["error"]["code"], METHOD_NOT_FOUND)
        # Batches are 2025-03-26's; a 2026-07-28 request in one is refused, the rest served.
        batcher = Wire(self.server)
        await batcher.initialize("2025-03-26")
        batcher.feed([modern(31, "tools/list"), rpc(32, "tools/list")])
        self.assertEqual((await batcher.response(31))["error"]["code"], mcp_min.INVALID_REQUEST)
        self.assertIn("tools", (await batcher.response(32))["result"])
        # Without the claim, the handshake era: discover is not one of its methods.
        await self.wire.initialize()
        self.assertEqual((await self.wire.request(rpc(20, "server/discover")))["error"]["code"],
                         METHOD_NOT_FOUND)

    async def test_a_template_that_finds_nothing_answers_in_the_eras_code(self):
        # Regression (issue 35): a template's handler raising -32002 reached a 2026-07-28 client
        # as -32002, which that era MUST NOT send: -32602 instead (PROTOCOL.md, error codes).
        @self.server.resource("files://{name}")
        def file(name: str) -> str:
            raise McpError(RESOURCE_NOT_FOUND, f"no file {name}", {"uri": f"files://{name}"})
        error = (await self.wire.request(modern(1, "resources/read", {"uri": "files://x"})))["error"]
        self.assertEqual((error["code"], error["data"]), (INVALID_PARAMS, {"uri": "files://x"}))
        await self.wire.initialize()
        error = (await self.wire.request(rpc(2, "resources/read", {"uri": "files://x"})))["error"]
        self.assertEqual(error["code"], RESOURCE_NOT_FOUND)

    async def test_logs_only_when_asked_and_capabilities_per_request(self):
        self.wire.feed(modern(1, "tools/call", {"name": "chat"}))
        self.assertEqual(tool_text(await self.wire.response(1)), "logged")
        self.wire.feed(modern(2, "tools/call", {"name": "chat"}, **{"io.modelcontextprotocol/logLevel": "warning"}))
        self.assertEqual(tool_text(await self.wire.response(2)), "logged")
        levels = [m["params"]["level"] for m, related in self.wire.sent
                  if m and m.get("method") == "notifications/message"]
        self.assertEqual(levels, ["warning", "error"])      # request 1 asked for none
        error = (await self.wire.request(modern(3, "tools/call", {"name": "ask_user"})))["error"]
        self.assertEqual((error["code"], error["data"]), (mcp_min.MISSING_CAPABILITY,
                                                          {"requiredCapabilities": {"elicitation": {}}}))


@needs_2026
class MultiRoundTest(unittest.IsolatedAsyncioTestCase):
    """2026-07-28 multi round-trip requests: a handler asks by answering input_required,
    and runs again from the start when the client calls with the answers."""

    ASKS = {"elicitation": {}, "sampling": {}, "roots": {}}

    async def asyncSetUp(self):
        self.server, self.state = make_server()
        self.runs, self.charged = [], []

        @self.server.tool()
        async def order(ctx: Context, item: str) -> str:
            self.runs.append(item)                  # runs once per round
            number = await ctx.once("order", lambda: self.charged.append(item) or len(self.charged))
            size = await ctx.elicit("Size?", {"size": {"type": "string"}})
            if size["action"] != "accept":
                return "cancelled"
            color = await ctx.elicit("Color?", {"color": {"type": "string"}}, key="color")
            return f"order {number}: {size['content']['size']} {color['content']['color']} {item}"

        @self.server.tool()
        async def survey(ctx: Context) -> str:
            name, roots, reply = await asyncio.gather(
                ctx.elicit("Name?", {"name": {"type": "string"}}, key="name"),
                ctx.list_roots(), ctx.sample("Hi", 10, key="hi"))
            return f"{name['content']['name']} {len(roots)} {reply['content']['text']}"

        @self.server.tool()
        def confirm(ctx: Context) -> str:           # a sync tool asks from its thread
            return ctx.run(ctx.elicit("Sure?", {"ok": {"type": "boolean"}}, key="ok"))["action"]
        self.wire = Wire(self.server)

    async def call(self, id_, name, arguments=None, server=None, **rounds):
        wire = Wire(server) if server else self.wire
        message = modern(id_, "tools/call", {"name": name, "arguments": arguments or {}, **rounds},
                         self.ASKS)
        return await wire.request(message)

    async def test_rounds_until_complete_and_once_runs_once(self):
        first = (await self.call(1, "order", {"item": "tea"}))["result"]
        self.assertEqual(first["resultType"], "input_required")
        self.assertEqual(first["inputRequests"], {"elicitation-1": {"method": "elicitation/create", "params": {
            "message": "Size?", "requestedSchema": {"type": "object", "properties": {"size": {"type": "string"}}}}}})
        accept = {"action": "accept", "content": {"size": "large"}}
        second = (await self.call(2, "order", {"item": "tea"}, inputResponses={"elicitation-1": accept},
                                  requestState=first["requestState"]))["result"]
        self.assertEqual((second["resultType"], list(second["inputRequests"])), ("input_required", ["color"]))
        self.assertNotEqual(second["requestState"], first["requestState"])
        # A missing answer is asked for again; answers not asked for are ignored.
        again = (await self.call(3, "order", {"item": "tea"}, inputResponses={"other": accept},
                                 requestState=second["requestState"]))["result"]
        self.assertEqual(list(again["inputRequests"]), ["color"])
        last = (await self.call(4, "order", {"item": "tea"}, requestState=second["requestState"],
                                inputResponses={"color": {"action": "accept", "content": {"color": "red"}}}))
        self.assertEqual(tool_text(last), "order 1: large red tea")
        self.assertEqual(last["result"]["resultType"], "complete")
        self.assertEqual((len(self.runs), self.charged), (4, ["tea"]))    # four rounds, one charge

    async def test_asks_made_together_go_in_one_round(self):
        first = (await self.call(1, "survey"))["result"]
        self.assertEqual(sorted(first["inputRequests"]), ["hi", "name", "roots-2"])
        answers = {"name": {"action": "accept", "content": {"name": "Ada"}},
                   "roots-2": {"roots": [{"uri": "file:///a"}]},
                   "hi": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}}
        done = await self.call(2, "survey", inputResponses=answers, requestState=first["requestState"])
        self.assertEqual(tool_text(done), "Ada 1 hello")
        # A sync tool too; and answers sent with no requestState are taken as this round's.
        self.assertEqual((await self.call(3, "confirm"))["result"]["resultType"], "input_required")
        done = await self.call(4, "confirm", inputResponses={"ok": {"action": "decline"}})
        self.assertEqual(tool_text(done), "decline")

    async def test_bad_state_and_answers_are_refused(self):
        first = (await self.call(1, "order", {"item": "tea"}))["result"]
        state, accept = first["requestState"], {"elicitation-1": {"action": "accept", "content": {"size": "s"}}}
        other_server = make_server()[0]
        cases = [({"item": "tea"}, {"requestState": state[:-3] + "AAA="}, None, "not this server's"),
                 ({"item": "cake"}, {"requestState": state}, None, "not this server's"),    # other params
                 ({"item": "tea"}, {"requestState": state}, other_server, "not this server's"),
                 ({"item": "tea"}, {"requestState": 7}, None, "requestState a string"),
                 ({"item": "tea"}, {"inputResponses": None}, None, "must be an object"),
                 ({"item": "tea"}, {"requestState": state, "inputResponses": {"elicitation-1": 12345}},
                  None, "expected an object")]
        for i, (arguments, rounds, server, words) in enumerate(cases, 2):
            rounds.setdefault("inputResponses", accept)
            error = (await self.call(i, "order", arguments, server, **rounds))["error"]
            self.assertEqual(error["code"], INVALID_PARAMS, rounds)
            self.assertIn(words, error["message"])
        self.wire.session.principal = "Bearer someone-else"     # another user
        error = (await self.call(20, "order", {"item": "tea"}, requestState=state, inputResponses=accept))["error"]
        self.assertIn("not this server's", error["message"])
        self.wire.session.principal = ""
        with mock.patch.object(mcp_min.time, "time", return_value=time.time() + mcp_min.STATE_TTL + 1):
            error = (await self.call(21, "order", {"item": "tea"}, requestState=state, inputResponses=accept))
        self.assertIn("expired", error["error"]["message"])
        self.assertEqual(self.charged, ["tea"])     # nothing refused ran the tool on

    async def test_a_sealed_state_of_the_wrong_shape_is_refused(self):
        # A requestState sealed with our key but not of the shape we seal (a list of an expiry
        # and two objects) was -32603 with a traceback in the log.
        params = {"name": "order", "arguments": {"item": "tea"}}
        for shape in ("x", [1, {}], [str(time.time() + 60), {}, {}], [time.time() + 60, [], {}], {}):
            data = base64.urlsafe_b64encode(json.dumps(shape).encode())
            seal = mcp_min._Rounds(self.wire.session, params, "tools/call").binding(data)
            state = (data + b"." + seal).decode()
            with self.assertNoLogs("mcp_min", "ERROR"):
                error = (await self.call(30, "order", {"item": "tea"}, requestState=state,
                                         inputResponses={}))["error"]
            self.assertEqual(error["code"], INVALID_PARAMS, shape)
            self.assertIn("malformed", error["message"])

    async def test_hostile_answers_and_states_get_an_answer(self):
        # Regressions (hostile review): 1e400 parsed as inf hung the round (its state could
        # not be written); a once() value that is not JSON did too; a tools/call state was
        # taken by prompts/get of the same name; answers of the wrong shape reached handlers.
        self.wire.feed(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"order",'
                       b'"arguments":{"item":"tea"},"inputResponses":{"elicitation-1":{"action":"accept",'
                       b'"content":{"size":1e400}}}}}')
        self.assertEqual((await self.wire.response(None))["error"]["code"], mcp_min.PARSE_ERROR)

        @self.server.tool()
        async def odd(ctx: Context) -> str:
            await ctx.once("x", set)
            return str(await ctx.elicit("?", {}))
        error = (await self.call(2, "odd"))["error"]
        self.assertEqual(error["code"], INTERNAL_ERROR)
        self.assertEqual(self.wire.session.running, {})

        @self.server.prompt()
        async def order(ctx: Context, item: str) -> str:
            return str(await ctx.elicit("Size?", {"size": {"type": "string"}}))
        state = (await self.call(3, "order", {"item": "tea"}))["result"]["requestState"]
        prompt = modern(4, "prompts/get", {"name": "order", "arguments": {"item": "tea"}, "requestState": state,
                                           "inputResponses": {}}, self.ASKS)
        self.assertIn("not this server's", (await self.wire.request(prompt))["error"]["message"])
        for i, bad in enumerate([{"action": "yes-please"}, {"action": "accept", "content": "DROP"},
                                 {"action": "accept", "content": {"size": 12345}}], 5):
            error = (await self.call(i, "order", {"item": "tea"}, requestState=state,
                                     inputResponses={"elicitation-1": bad}))["error"]
            self.assertEqual(error["code"], INVALID_PARAMS, bad)
        for i, bad in enumerate([{"roots": "file:///etc"}, {"roots": [1]}], 10):
            error = (await self.call(i, "survey", inputResponses={"roots-2": bad}))["error"]
            self.assertIn("roots must be a list", error["message"])

    async def test_a_shared_key_lets_any_process_continue(self):
        one, two = (Server("a", state_key="k" * 32), Server("b", state_key=b"k" * 32))

        def hi(ctx: Context) -> str:
            return ctx.run(ctx.elicit("Hi?", {}))["action"]
        one.add_tool(hi), two.add_tool(hi)
        first = (await self.call(1, "hi", server=one))["result"]
        done = await self.call(2, "hi", server=two, requestState=first["requestState"],
                               inputResponses={"elicitation-1": {"action": "cancel"}})
        self.assertEqual(tool_text(done), "cancel")
        with self.assertRaises(ValueError):
            Server("short", state_key="too short")
        with mock.patch.dict(os.environ, {"MCP_MIN_STATE_KEY": "e" * 16}):
            self.assertEqual(Server("env").state_key, b"e" * 16)

    async def test_only_what_may_ask_does(self):
        # A capability not declared is -32021; in a handshake session asks are requests.
        error = (await self.wire.request(modern(1, "tools/call", {"name": "survey"})))["error"]
        self.assertEqual(error["code"], mcp_min.MISSING_CAPABILITY)
        await self.wire.initialize(capabilities={"elicitation": {}})
        self.wire.feed(rpc(2, "tools/call", {"name": "confirm"}))
        ask = await self.wire.wait_for(lambda m: m.get("method") == "elicitation/create")
        self.wire.feed({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}})
        self.assertEqual(tool_text(await self.wire.response(2)), "accept")
        self.wire.feed(rpc(3, "tools/call", {"name": "confirm"}))     # a malformed answer: isError
        ask = await self.wire.wait_for(lambda m: m.get("method") == "elicitation/create")
        self.wire.feed({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "maybe"}})
        self.assertTrue((await self.wire.response(3))["result"]["isError"])


@needs_2026
class ListenTest(unittest.IsolatedAsyncioTestCase):
    """2026-07-28 subscriptions/listen: change notifications on a request's own stream."""

    async def asyncSetUp(self):
        self.server, _ = make_server()
        self.wire = Wire(self.server)

    def tagged(self, id_):
        return lambda m: m.get("params", {}).get("_meta", {}).get(
            "io.modelcontextprotocol/subscriptionId") == id_

    async def test_acknowledged_filtered_tagged_and_ended(self):
        self.wire.feed(modern(7, "subscriptions/listen", {"notifications": {
            "toolsListChanged": True, "promptsListChanged": False, "nonsense": True,
            "resourceSubscriptions": ["config://app", 3]}}))
        ack = await self.wire.wait_for(self.tagged(7))
        self.assertEqual(ack["method"], "notifications/subscriptions/acknowledged")
        self.assertEqual(ack["params"]["notifications"], {"toolsListChanged": True,
                                                          "resourceSubscriptions": ["config://app"]})
        self.server.add_prompt(lambda: "p", "p")       # not asked for: not sent
        self.server.add_tool(lambda: "t", "t")
        self.server.resource_updated("config://other")
        self.server.resource_updated("config://app")
        changed = await self.wire.wait_for(self.tagged(7))
        self.assertEqual(changed["method"], "notifications/tools/list_changed")
        updated = await self.wire.wait_for(self.tagged(7))
        self.assertEqual((updated["method"], updated["params"]["uri"]),
                         ("notifications/resources/updated", "config://app"))
        self.assertEqual(await self.wire.request(modern(8, "tools/list")) and
                         len([m for m in self.wire.messages if self.tagged(7)(m)]), 3)
        # The client ends it by cancelling: no answer. A second one ends when the server stops.
        self.wire.feed(note("notifications/cancelled", {"requestId": 7}))
        self.wire.feed(modern(9, "subscriptions/listen", {"notifications": {}}))
        await self.wire.wait_for(self.tagged(9))
        await asyncio.wait_for(self.wire.session.stop(5.0), TIMEOUT)
        self.assertEqual(self.wire.answers(7), [])
        end = (await self.wire.response(9))["result"]
        self.assertEqual(end["resultType"], "complete")
        self.assertEqual(end["_meta"]["io.modelcontextprotocol/subscriptionId"], 9)
        self.assertEqual(mcp_min._listens(self.wire.session), {})

    async def test_bad_and_too_many(self):
        error = (await self.wire.request(modern(1, "subscriptions/listen", {"notifications": []})))["error"]
        self.assertEqual(error["code"], INVALID_PARAMS)
        for i in range(2, 2 + mcp_min.MAX_LISTENS // 16):
            self.wire.feed(modern(i, "subscriptions/listen", {"notifications": {}}))
            await self.wire.wait_for(self.tagged(i))
        error = (await self.wire.request(modern(50, "subscriptions/listen", {"notifications": {}})))["error"]
        self.assertIn("Too many", error["message"])
        other = Wire(self.server)       # the handshake era has no listen
        await other.initialize()
        self.assertEqual((await other.request(rpc(1, "subscriptions/listen", {"notifications": {}})))
                         ["error"]["code"], METHOD_NOT_FOUND)
        self.wire.session.close()
        await self.wire.settle()
        self.assertEqual(mcp_min._listens(self.wire.session), {})


@needs_2026
class SessionClientFeaturesModernTest(SessionClientFeaturesCase):
    """Server -> client requests in 2026-07-28 requests."""

    async def test_sampling_with_tools_needs_sampling_tools_in_2026_07_28(self):
        wire = Wire(self.planner())
        await wire.initialize(capabilities={"sampling": {}})
        error = (await wire.request(modern(2, "tools/call", {"name": "plan"}, {"sampling": {}})))["error"]
        self.assertEqual((error["code"], error["data"]), (mcp_min.MISSING_CAPABILITY,
                                                          {"requiredCapabilities": {"sampling": {"tools": {}}}}))

    async def test_url_elicitation_in_2026_07_28(self):
        shown = []
        await self.pay_by_url(self.payer(), "2026-07-28", shown, asyncio.Event())
        self.assertEqual([p.get("elicitationId") for p in shown], [None])     # 2026-07-28: no ids


@needs_2026
class DeepRequestStateTest(unittest.TestCase):
    def test_a_request_state_over_params_nested_deep_is_invalid_params(self):
        # Issue 34 item 19: params that parse but nest too deep to be written out again made
        # _Rounds.binding raise RecursionError: -32603 and a traceback. Every depth around the
        # limit is -32602 (or -32700, too deep to parse).
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
        lines = [b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"getUser","arguments":'
                 b'{"a":%s%s},"requestState":"e30.x","_meta":%s}}\n' % (depth, b"[" * depth, b"]" * depth,
                                                                    json.dumps(meta).encode())
                 for depth in range(900, 1001)]
        done = subprocess.run([*SERVE, "serve", "--stdio"], input=b"".join(lines), capture_output=True,
                              timeout=60, cwd=HERE, env=_clean_env())
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        self.assertEqual(len(answers), len(lines))
        self.assertEqual({a["error"]["code"] for a in answers} - {INVALID_PARAMS, PARSE_ERROR}, set(),
                         [(a["id"], a["error"]) for a in answers if a["error"]["code"] == INTERNAL_ERROR][:3])
        self.assertIn(INVALID_PARAMS, {a["error"]["code"] for a in answers})
        self.assertNotIn(b"Traceback", done.stderr)


@needs_2026
class HttpModernTest(HttpTestCase):
    """2026-07-28 on /mcp: every POST stands alone, its headers say what its body says."""

    def headers(self, message, **extra):
        params = message.get("params", {})
        h = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": message["method"]}
        if "name" in params or "uri" in params:
            h["Mcp-Name"] = params.get("name", params.get("uri"))
        return {**h, **extra}

    async def post(self, message, **extra):
        return await self.client.post(message, headers=self.headers(message, **extra))

    async def test_a_call_without_a_session(self):
        response = await self.post(modern(7, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
        self.assertEqual(response.status, 200, response)
        self.assertIsNone(response.header("mcp-session-id"))
        self.assertEqual(response.json()["result"]["resultType"], "complete")
        self.assertEqual(tool_text(response.json()), "3")
        self.assertEqual(self.http.sessions, {})
        # A handshake session on the same endpoint, at the same time.
        sid = await self.client.initialize()
        self.assertEqual((await self.ping(sid)).status, 200)

    async def test_errors_have_their_status_and_the_request_id(self):
        cases = [
            (modern(1, "nope/nope"), {}, 404, METHOD_NOT_FOUND),
            (modern(2, "ping"), {}, 404, METHOD_NOT_FOUND),
            (modern(3, "initialize"), {}, 404, METHOD_NOT_FOUND),
            (modern(4, "tools/list", version="2099-01-01"), {"MCP-Protocol-Version": "2099-01-01"},
             400, mcp_min.UNSUPPORTED_VERSION),
            (modern(5, "tools/list"), {"MCP-Protocol-Version": "2025-11-25"}, 400, mcp_min.HEADER_MISMATCH),
            (modern(6, "tools/list"), {"Mcp-Method": "prompts/list"}, 400, mcp_min.HEADER_MISMATCH),
            (modern(7, "tools/call", {"name": "add"}), {"Mcp-Name": "echo"}, 400, mcp_min.HEADER_MISMATCH),
            (rpc(8, "tools/list"), {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
             400, INVALID_PARAMS),      # the header says 2026-07-28; the _meta is missing
        ]
        for message, extra, status, code in cases:
            response = await self.client.post(message, headers={**self.headers(message), **extra})
            self.assertJsonRpcError(response, status, code, message["id"])
        self.assertEqual(self.state.calls, 0)

    async def test_a_name_header_may_be_base64(self):
        message = modern(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        name = "=?base64?" + base64.b64encode(b"add").decode() + "?="
        response = await self.post(message, **{"Mcp-Name": name})
        self.assertEqual(tool_text(response.json()), "2")


    async def test_a_method_that_is_not_a_string_is_answered(self):
        # Regression (fold review): a list as the method closed the connection with no answer.
        message = modern(3, "tools/list")
        message["method"] = ["tools/list"]
        response = await self.client.post(message, headers={"MCP-Protocol-Version": "2026-07-28",
                                                             "Mcp-Method": "tools/list"})
        self.assertEqual(response.status, 400)

    async def test_param_headers_must_match_the_arguments(self):
        def where(region: str, n: int = 0) -> str:
            return region
        self.server.add_tool(where, input_schema={"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"}}})
        call = modern(1, "tools/call", {"name": "where", "arguments": {"region": "us west"}})
        numbered = modern(1, "tools/call", {"name": "where", "arguments": {"region": "x", "n": 42}})
        for header, status in [("us west", 200), ("=?base64?dXMgd2VzdA==?=", 200), (None, 400),
                               ("eu", 400), ("=?base64?dXMgd2VzdA?=", 400)]:
            response = await self.post(call, **{"Mcp-Param-Region": header})
            self.assertEqual(response.status, status, (header, response))
            if status == 400:
                self.assertJsonRpcError(response, 400, mcp_min.HEADER_MISMATCH, 1)
        for number, status in [("42", 200), ("042", 200), ("+42", 200), ("43", 400), ("4x", 400)]:
            response = await self.post(numbered, **{"Mcp-Param-Region": "x", "Mcp-Param-N": number})
            self.assertEqual(response.status, status, number)
        for hostile in ("+-42", "--42", "\u00b2", "4" * 5000, "", "0x2a"):  # an answer, never a crash
            with self.assertNoLogs("mcp_min", "ERROR"):
                response = await self.post(numbered, **{"Mcp-Param-Region": "x",
                                                        "Mcp-Param-N": hostile.encode().decode("latin-1")})
            self.assertJsonRpcError(response, 400, mcp_min.HEADER_MISMATCH, 1)
        zurich = modern(1, "tools/call", {"name": "where", "arguments": {"region": "Zürich"}})
        raw = self.client.build("POST", "/mcp", zurich, self.headers(zurich, **{"Mcp-Param-Region": "x"}))
        raw = raw.replace(b"Mcp-Param-Region: x", "Mcp-Param-Region: Zürich".encode("latin-1"))
        self.assertEqual((await self.client.exchange(raw)).status, 400)     # raw, not base64
        # Our client learns the marks (tools/list) before its first call, and base64s Zürich
        async with mcp_min.Client(f"http://127.0.0.1:{self.port}/mcp", era="2026-07-28") as client:
            self.assertEqual((await client.call_tool("where", {"region": "Zürich"}))["content"][0]["text"],
                             "Zürich")

    async def test_our_client_names_a_notifications_method_in_a_header(self):
        # PROTOCOL.md ambiguity 10: no header is defined for a notification's POST; send
        # MCP-Protocol-Version and Mcp-Method anyway (ours sent no Mcp-Method; issue 35's read)
        sent = []
        request = mcp_min._StreamableHttp._request

        async def recorded(transport, method, url, headers, body=b"", sign_in=True):
            sent.append((headers, body))
            return await request(transport, method, url, headers, body, sign_in)
        with mock.patch.object(mcp_min._StreamableHttp, "_request", recorded):
            async with mcp_min.Client(f"http://127.0.0.1:{self.port}/mcp", era="2026-07-28") as client:
                await client.notify("notifications/cancelled", {"requestId": 99})
                await client.list_tools()
        said = next(headers for headers, body in sent if b"notifications/cancelled" in body)
        said = {key.lower(): value for key, value in said.items()}
        self.assertEqual((said.get("mcp-protocol-version"), said.get("mcp-method")),
                         ("2026-07-28", "notifications/cancelled"))

    async def test_input_required_rounds_over_http(self):
        ask = modern(1, "tools/call", {"name": "ask_user", "arguments": {}}, {"elicitation": {}})
        first = await self.post(ask)
        self.assertEqual(first.status, 200, first)
        state = first.json()["result"]["requestState"]
        self.assertEqual(first.json()["result"]["inputRequests"]["elicitation-1"]["method"],
                         "elicitation/create")
        ask["params"].update(requestState=state, inputResponses={
            "elicitation-1": {"action": "accept", "content": {"name": "Ada"}}})
        ask["id"] = 2
        stolen = await self.post(ask, Authorization="Bearer someone-else")     # another user's
        self.assertJsonRpcError(stolen, 400, INVALID_PARAMS, 2)
        done = await self.post(ask)
        self.assertEqual(done.json()["result"]["structuredContent"],
                         {"action": "accept", "content": {"name": "Ada"}})

    async def test_get_and_delete_are_405(self):
        # 2026-07-28 has no GET stream and no session to delete (it was 400).
        for method in ("GET", "DELETE"):
            response = await self.client.request(method, "/mcp", headers={
                "Accept": "text/event-stream", "MCP-Protocol-Version": "2026-07-28"})
            self.assertEqual((response.status, response.header("allow")), (405, "POST"), method)

    async def test_every_header_and_meta_field_with_hostile_values_gets_an_answer(self):
        # Whatever a header the server reads, or a 2026-07-28 _meta field, holds: an HTTP
        # answer, and no traceback in the log.
        sid = await self.client.initialize()
        headers = ("Host", "Origin", "Accept", "Content-Type", "Content-Length", "Transfer-Encoding",
                   "Authorization", "Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID", "Mcp-Method",
                   "Mcp-Name", "Mcp-Param-Region", "Expect", "Connection", "Access-Control-Request-Headers")
        values = ("", "x" * 9000, "Z\xc3\xbcrich", "a\x01b\x7f", "=?base64?!!?=", "9" * 30, "twice")
        call_ = modern(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        requests = [("POST", call_, self.headers(call_)),
                    ("GET", None, {"Mcp-Session-Id": sid, "Accept": "text/event-stream"})]
        with self.assertNoLogs("mcp_min", "ERROR"):
            for (method, body, base), header, value in itertools.product(requests, headers, values):
                raw = self.client.build(method, "/mcp", body, {**base, header: "PLACEHOLDER"})
                line = f"{header}: {value}\r\n".encode("latin-1")
                line = line.replace(b"twice", b"1") * 2 if value == "twice" else line
                data = raw.replace(f"{header}: PLACEHOLDER\r\n".encode(), line)
                response = await (self.client.exchange(data) if method == "POST" else self.answered(data))
                self.assertGreaterEqual(response.status, 200, (method, header, value))
            for key in ("protocolVersion", "clientCapabilities", "clientInfo", "logLevel"):
                for value in (5, [], {}, None, True, "x" * 100_000, "\u0000", {"a": [1]}):
                    message = modern(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
                    message["params"]["_meta"]["io.modelcontextprotocol/" + key] = value
                    response = await self.post(message)
                    self.assertIn(response.status, (200, 400), (key, value))
            for key, value in (("progressToken", [1]), ("progressToken", 1.5), ("progressToken", True),
                               ("io.modelcontextprotocol/subscriptionId", {})):
                response = await self.post(modern(4, "tools/call", {"name": "add", "arguments": {"a": 1}},
                                                  **{key: value}))
                self.assertEqual(response.status, 200, (key, value))

    async def answered(self, data):
        """The head of what a request got (a GET stream's body never ends)."""
        reader, writer = await self.client.connect()
        writer.write(data)
        try:
            return await read_head(reader, 5)
        finally:
            writer.close()

    async def test_listen_streams_until_the_client_leaves(self):
        listen = modern(5, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        refused = await self.post(listen, Accept="application/json")
        self.assertEqual(refused.status, 406)
        with mock.patch.object(mcp_min, "KEEPALIVE_INTERVAL", 0.05):
            reader, writer = await self.client.connect()
            writer.write(self.client.build("POST", "/mcp", listen, self.headers(listen)))
            head = await read_head(reader)
            self.assertEqual((head.status, head.header("content-type")), (200, "text/event-stream"))

            async def next_message():
                while True:
                    event = await read_event(reader)
                    if "data" in event:
                        return json.loads(event["data"])
            ack = await next_message()
            self.assertEqual(ack["method"], "notifications/subscriptions/acknowledged")
            self.server.add_tool(lambda: "", "new_tool")
            changed = await next_message()
            self.assertEqual(changed["method"], "notifications/tools/list_changed")
            self.assertEqual(changed["params"]["_meta"], {"io.modelcontextprotocol/subscriptionId": 5})
            writer.close()
            for _ in range(500):   # the server notices at its next keepalive
                if not any(mcp_min._listens(s) for s in list(self.server.sessions)):
                    break
                await asyncio.sleep(0.01)
            self.assertFalse(any(mcp_min._listens(s) for s in list(self.server.sessions)))
            self.assertEqual(self.http.stateless_entries, set())


LISTEN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}


async def open_listen(port, id_=1, host="127.0.0.1", body=None, headers=None):
    """A 2026-07-28 subscriptions/listen POST from address `host`, read until it is acknowledged:
    (reader, writer, the first message: the acknowledgement, or the error that refused it)."""
    body = body or json.dumps(modern(id_, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(host, 0))
    writer.write(HttpClient(port).build("POST", "/mcp", body.encode() if isinstance(body, str) else body,
                                        {**LISTEN_HEADERS, **(headers or {})}))
    head = await read_head(reader)
    if not (head.header("content-type") or "").startswith("text/event-stream"):
        return reader, writer, json.loads(await reader.readexactly(int(head.header("content-length"))))
    return reader, writer, json.loads((await read_event(reader))["data"])


@needs_2026
class HttpListenSlotsTest(HttpTestCase):
    """2026-07-28 subscriptions/listen over HTTP, where each listen is a connection of its own:
    one client's share of the slots, and a slot given back however the client leaves."""

    async def test_one_client_cannot_take_every_listen(self):
        share = mcp_min.MAX_LISTENS // 16
        listens = [await open_listen(self.port, i) for i in range(share)]
        self.assertTrue(all(ack["method"].endswith("acknowledged") for _, _, ack in listens))
        listens.append(await open_listen(self.port, 99))
        self.assertIn(f"{share} a client at most", listens[-1][2]["error"]["message"])
        listens.append(await open_listen(self.port, 100, host="127.0.0.2"))  # another client: its own share
        self.assertEqual(listens[-1][2]["method"], "notifications/subscriptions/acknowledged")
        for _, writer, _ in listens:
            writer.close()

    async def test_every_way_of_leaving_gives_the_slot_back_soon(self):
        # Closing cleanly freed a slot within 2 s; a reset took ~20 s, and bytes sent after the
        # request, then a close, never did. Every slot taken, a third left each way: all free.
        # (64 slots, 4 a client, not 256: the same bounds at a quarter of the cost.)
        fewer = mock.patch.object(mcp_min, "MAX_LISTENS", 64)
        fewer.start()
        self.addCleanup(fewer.stop)
        opened = await asyncio.gather(*(open_listen(self.port, i, f"127.0.0.{1 + i % 16}")
                                        for i in range(mcp_min.MAX_LISTENS)))
        self.assertTrue(all("method" in ack for _, _, ack in opened))
        _, writer, refused = await open_listen(self.port, 999, "127.0.0.17")
        self.assertIn("in all", refused["error"]["message"])
        writer.close()
        started = time.monotonic()
        for i, (_, writer, _) in enumerate(opened):
            if i % 3 == 0:          # a reset
                writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                           struct.pack("ii", 1, 0))
                writer.transport.abort()
                continue
            if i % 3 == 1:          # a few bytes more, then a close
                writer.write(b"GET / HTTP/1.1\r\n")
            writer.close()
        while any(mcp_min._listens(s) for s in list(self.server.sessions)):
            self.assertLess(time.monotonic() - started, 3.0, [i % 3 for i, (_, w, _) in enumerate(opened)
                                                              if not w.transport.is_closing()])
            await asyncio.sleep(0.05)
        _, writer, ack = await open_listen(self.port, 1000, "127.0.0.17")
        self.assertEqual(ack["method"], "notifications/subscriptions/acknowledged")
        writer.close()


@needs_2026
class HttpCloseTest(HttpTestCase):
    async def test_a_big_answer_on_connection_close_arrives_whole(self):
        # Regression (hostile review): after "Connection: close" the server gave the
        # reader 1 s to take the answer, then cut it off.
        message = json.dumps(modern(1, "tools/call", {"name": "echo", "arguments": {"text": "😀" * 1_000_000}}),
                             ensure_ascii=False).encode()      # 4 MB in, 12 MB out (escaped)
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                   "Mcp-Name": "echo", "Connection": "close"}
        reader, writer = await self.client.connect()
        writer.write(self.client.build("POST", "/mcp", message, headers))
        head = await read_head(reader)
        self.assertEqual(head.status, 200)
        await asyncio.sleep(1.2)        # a slow reader (it used to get 1 s)
        body = await asyncio.wait_for(reader.read(), TIMEOUT)
        self.assertEqual(len(body), int(head.header("content-length")))


@needs_2026
class HttpCorsModernTest(HttpCorsCase):
    """Preflights for 2026-07-28's headers."""

    async def test_a_preflight_allows_the_2026_07_28_headers(self):
        asked = "Access-Control-Request-Headers: mcp-method, mcp-name, mcp-param-region, x-evil\r\n\r\n"
        response = await self.client.exchange(self.preflight(asked))
        allowed = {h.strip().lower() for h in response.header("access-control-allow-headers").split(",")}
        self.assertLessEqual({"mcp-method", "mcp-name", "mcp-param-region"}, allowed)
        self.assertNotIn("x-evil", allowed)


@needs_2026
class AbuseListenTest(AbuseProcessCase):
    """A 2026-07-28 listen, padded."""

    async def test_a_listen_keeps_its_filter_not_its_request(self):
        # Ten listens padded with 4 MiB of [] raised the server's RSS from 31 to 945 MiB, held
        # for their streams' lives. Such a body is refused now before it is parsed; a listen
        # padded with text (in its params and its _meta) keeps none of it.
        port = self.server.port
        nested = json.dumps(modern(1, "subscriptions/listen", {"notifications": {"toolsListChanged": True},
                                                               "padding": "PAD"})).replace(
            '"PAD"', "[" + ",".join(["[]"] * 1_300_000) + "]")
        _, writer, refused = await open_listen(port, body=nested)
        writer.close()
        self.assertIn("objects and arrays", refused["error"]["message"])

        def padded(id_):    # 2.8 MB: ten are charged within half the client's account (a
            return json.dumps(modern(id_, "subscriptions/listen", {    # request's bytes, to its end)
                "notifications": {"toolsListChanged": True}, "padding": "p" * 1_400_000},
                padding="m" * 1_400_000))
        _, writer, _ = await open_listen(port, 0, body=padded(0))   # warms the allocator up
        writer.close()
        before = self.server.rss_mib()
        listens = [await open_listen(port, i, body=padded(i)) for i in range(1, 11)]
        self.assertTrue(all(ack["method"].endswith("acknowledged") for _, _, ack in listens))
        self.assertLess(self.server.rss_mib() - before, 8, "ten listens hold their padding")
        for _, writer, _ in listens:
            writer.close()


@runs_beside
@needs_2026
@needs_cli
class StdioModernTest(unittest.TestCase):
    def test_both_eras_in_one_process(self):
        server = StdioProcess()
        try:
            server.send(modern(1, "server/discover"))
            self.assertEqual(server.read()["result"]["supportedVersions"][0], "2026-07-28")
            server.initialize()                             # a handshake beside it
            server.send(modern(2, "tools/call", {"name": "getUser", "arguments": {"name": "John"}}))
            server.send(call(3, "getUser", {"name": "Jane"}))
            answers = {m["id"]: m for m in (server.read(), server.read())}
            self.assertEqual(answers[2]["result"]["resultType"], "complete")
            self.assertNotIn("resultType", answers[3]["result"])
            server.close_stdin()
            self.assertEqual(server.wait(), 0)
        finally:
            server.kill()


@needs_2026
class HeaderMirrorTest(unittest.TestCase):
    """2026-07-28 HTTP: what a client mirrors into Mcp-Name and Mcp-Param-* headers."""

    def test_values_are_plain_or_base64(self):
        for value, sent in [("us-west1", "us-west1"), ("", ""), ("us west 1", "us west 1"),
                            (" padded ", "=?base64?IHBhZGRlZCA=?="), ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                            ("a\tb", "=?base64?YQli?="), ("=?base64?eA==?=", "=?base64?PT9iYXNlNjQ/ZUE9PT89?=")]:
            self.assertEqual(mcp_min._header_value(value), sent, value)

    def test_a_tool_with_bad_marks_is_named_at_registration(self):
        with self.assertLogs("mcp_min", "WARNING") as logs:
            mcp_min.Server("x").add_tool(lambda a: a, "bad", input_schema={"type": "object", "properties": {
                "a": {"type": "number", "x-mcp-header": "A"}}})
        self.assertIn("'bad': its x-mcp-header marks are invalid", logs.output[0])

    def test_malformed_tools_are_left_out(self):
        client = mcp_min.Client("http://127.0.0.1:1/mcp")
        client.protocol_version, client._transport = "2026-07-28", mcp_min._StreamableHttp("http://x", client)
        good = {"name": "ok", "inputSchema": {"type": "object"}}
        self.assertEqual(mcp_min._StatelessClient.tools(client, ["x", {"name": ["a"]}, good]), [good])

    def test_marks_are_checked(self):
        def schema(**props):
            return {"type": "object", "properties": props}
        good = schema(region={"type": "string", "x-mcp-header": "Region"},
                      inner={"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}})
        self.assertEqual(mcp_min._header_params(good), [(("region",), "Region"), (("inner", "n"), "N")])
        for bad in [schema(a={"type": "string", "x-mcp-header": ""}),
                    schema(a={"type": "number", "x-mcp-header": "A"}),
                    schema(a={"type": "object", "x-mcp-header": "A"}),
                    schema(a={"type": "string", "x-mcp-header": "My Region"}),
                    schema(a={"type": "string", "x-mcp-header": "Région"}),
                    schema(a={"type": "string", "x-mcp-header": "X"}, b={"type": "boolean", "x-mcp-header": "x"})]:
            self.assertIsNone(mcp_min._header_params(bad), bad)
        self.assertEqual(mcp_min._header_params({"type": "object"}), [])


@needs_2026
class ClientModernTests(ClientTestCase):
    """mcp_min.Client in 2026-07-28 against mcp_min servers."""

    async def test_stdio_auto_speaks_2026_07_28(self):
        await self.check_full_exchange([*PYTHON, self.server_file], "auto")

    async def test_streamable_http_in_2026_07_28(self):
        await self.check_full_exchange(self.base + "/mcp", "2026-07-28")

    async def test_timeout_cancels_on_the_server_in_2026_07_28(self):
        # (2026-07-28 on stdio cancels as the handshake era does: notifications/cancelled)
        self.faster_keepalives()
        await self.timeout_cancels(self.base + "/mcp", "2026-07-28")


@needs_2026
class ClientRefusalModernTest(ClientProcessCase):
    """What this client has no handler for, in 2026-07-28."""

    async def test_what_the_client_has_no_handler_for_it_declines_in_its_own_name_in_2026_07_28(self):
        path = self.asking_server()
        url = lambda p: {"action": "decline"}      # noqa: E731
        form, url_only, form_only = await asyncio.gather(
            self.asking(path, "2026-07-28"), self.asking(path, "2026-07-28", elicit_url=url),
            self.asking(path, "2026-07-28", "url", elicitation=url))
        declined = self.DECLINED
        self.assertIsInstance(form, McpError)     # 2026-07-28: raised here, as the call's error
        self.assertEqual((form.code, form.message), (METHOD_NOT_FOUND, declined.format(
            "form elicitation", "elicitation")))
        self.assertEqual((url_only.code, url_only.message), (INVALID_PARAMS, declined.format(
            "form elicitation", "elicitation")))
        self.assertEqual((form_only.code, form_only.message), (INVALID_PARAMS, declined.format(
            "URL elicitation", "elicit_url")))


@needs_2026
class SyncClientModernTest(SyncClientCase):
    """SyncClient's default era."""

    def test_the_default_era_is_2026_07_28_when_the_server_speaks_it(self):
        with self.user_store() as client:
            self.assertEqual(client.protocol_version, "2026-07-28")     # attributes pass through


class _Lines:
    def __init__(self, lines):
        self.lines = lines

    def write(self, text):
        self.lines.append(text)

    def flush(self):
        pass


async def _until(condition, step=0.005):
    """Wait until `condition()` holds (the caller bounds the wait)."""
    while not condition():
        await asyncio.sleep(step)


@needs_2026
class ClientModernInMemoryTest(unittest.IsolatedAsyncioTestCase):
    """Client(server) and Client(command) in 2026-07-28."""

    async def test_a_silent_handshake_server_is_probed_once(self):
        # A handshake-era stdio server that ignores server/discover: the client falls back to
        # initialize after DISCOVER_TIMEOUT, and remembers it (the next connect asks no more).
        script = textwrap.dedent('''
            import json, sys
            for line in sys.stdin:
                m = json.loads(line)
                if m.get("method") == "initialize":
                    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {
                        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "old", "version": "1"}}}), flush=True)
                elif m.get("method") == "tools/list":
                    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": []}}), flush=True)
            ''')
        target = [*PYTHON, "-c", script]
        with mock.patch.object(mcp_min, "DISCOVER_TIMEOUT", 0.5):
            for most in (TIMEOUT, 0.4):     # the second connect does not wait for discover
                started = time.monotonic()
                async with mcp_min.Client(target, timeout=TIMEOUT) as client:
                    self.assertEqual((client.protocol_version, client.server_info["name"]), ("2025-06-18", "old"))
                    self.assertEqual(await client.list_tools(), [])
                self.assertLess(time.monotonic() - started, most)

    @needs_trace
    async def test_2026_07_28_rounds_listen_and_logs(self):
        server, _ = make_server()
        lines, logs, changes = [], [], []
        trace = mcp_min._Trace("-", side="client")
        trace.file = _Lines(lines)
        async with mcp_min.Client(server, timeout=TIMEOUT, trace=trace, on_log=logs.append,
                                  elicitation=lambda p: {"action": "accept", "content": {"name": "Ada"}},
                                  sampling=lambda p: {"role": "assistant", "model": "m",
                                                      "content": {"type": "text", "text": "hi"}}) as client:
            self.assertEqual((client.protocol_version, client.server_info["name"]), ("2026-07-28", "test-server"))
            self.assertFalse(server.sessions and any(s.state != "new" for s in server.sessions if not mcp_min._listens(s)))
            result = await client.call_tool("ask_user")     # input_required, answered, sent again
            self.assertEqual(result["structuredContent"], {"action": "accept", "content": {"name": "Ada"}})
            self.assertEqual(await client.ping(), {})
            await client.set_log_level("warning")           # kept: each request asks for its own
            await client.call_tool("chat")
            self.assertEqual([log["level"] for log in logs], ["warning", "error"])
            listening = asyncio.ensure_future(client.listen(on_tools=changes.append))
            for _ in range(500):
                if any(mcp_min._listens(s) for s in server.sessions):
                    break
                await asyncio.sleep(0.01)
            server.add_tool(lambda: "", "brand_new")
            await asyncio.wait_for(_until(lambda: changes), TIMEOUT)
            self.assertEqual(changes[0]["_meta"]["io.modelcontextprotocol/subscriptionId"], 6)
            listening.cancel()      # in memory as on stdio: a notifications/cancelled
            await asyncio.wait_for(_until(lambda: not any(mcp_min._listens(s) for s in server.sessions)), TIMEOUT)
        wire = "".join(lines)
        self.assertIn("request #3 tools/call ask_user  [round 2 of tools/call #2]", wire)
        self.assertIn("response #2 (tools/call) input required: elicitation-1 (elicitation/create)", wire)


def region_server():
    """The test server, and a tool `where` whose `region` is mirrored in Mcp-Param-Region."""
    server, _ = make_server()
    server.add_tool(lambda region: region, "where", input_schema={"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}})
    return server


@needs_2026
class ClientHostileModernServerTest(unittest.IsolatedAsyncioTestCase):
    """The client's mirrored headers against hostile values."""

    async def test_a_lone_surrogate_in_a_mirrored_header_is_an_invalid_params_error(self):
        # Issue 34 item 20: a tool name or a mirrored argument holding a lone surrogate raised
        # UnicodeEncodeError in the transport (a "connection closed" error naming it).
        server = region_server()
        http = await start_http(server, "127.0.0.1", 0)
        self.addAsyncCleanup(http.close)
        async with mcp_min.Client(f"http://127.0.0.1:{http.port}/mcp", timeout=TIMEOUT) as client:
            self.assertEqual(client.protocol_version, "2026-07-28")
            await client.list_tools()
            for name, arguments in (("\ud800", {}), ("where", {"region": "eu\udc80"})):
                with self.subTest(arguments=arguments), self.assertRaises(McpError) as caught:
                    await client.call_tool(name, arguments)
                self.assertEqual(caught.exception.code, INVALID_PARAMS)
                self.assertIn("lone surrogate", caught.exception.message)
            self.assertEqual((await client.call_tool("where", {"region": "eu"}))["content"][0]["text"], "eu")

    def test_the_helpers_name_a_lone_surrogate(self):
        # Issue 34 item 20: _header_value raised UnicodeEncodeError.
        with self.assertRaises(McpError) as caught:
            mcp_min._header_value("a\ud800")
        self.assertEqual(caught.exception.code, INVALID_PARAMS)
        self.assertIn(repr("a\ud800"), caught.exception.message)
        self.assertEqual(mcp_min._header_value("é"), "=?base64?w6k=?=")


@runs_beside
@needs_2026
@needs_cli
class ScaleOutTest(unittest.IsolatedAsyncioTestCase):
    """The README's scale-out: 2026-07-28 requests need no session, so any process that
    shares the requestState key (MCP_MIN_STATE_KEY) continues what another began."""

    async def test_two_processes_one_request(self):
        key = "a shared secret of some length"
        one, two, stranger = (ServerProcess(MCP_MIN_STATE_KEY=key), ServerProcess(MCP_MIN_STATE_KEY=key),
                              ServerProcess())
        for process in (one, two, stranger):
            self.addCleanup(process.close)
        ask = modern(1, "tools/call", {"name": "deleteUser", "arguments": {"name": "John"}},
                     {"elicitation": {}})
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "deleteUser"}
        first = (await one.client.post(ask, headers=headers)).json()["result"]
        self.assertEqual(first["inputRequests"]["elicitation-1"]["params"]["message"], "Delete user John?")
        ask["params"].update(requestState=first["requestState"], inputResponses={
            "elicitation-1": {"action": "accept", "content": {"ok": True}}})
        refused = await stranger.client.post(ask, headers=headers)
        self.assertEqual((refused.status, refused.json()["error"]["code"]), (400, INVALID_PARAMS))
        done = await two.client.post(ask, headers=headers)
        self.assertEqual(tool_text(done.json()), "Deleted John.")


##############################################################################
# Extension: resumable streams
##############################################################################

@needs_resumable
class HttpResumeTest(HttpTestCase):
    """2025-11-25 transports, resumability and SEP-1699 polling: event ids, priming events,
    GET with Last-Event-ID, bounded replay."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        gate = self.state.gate

        async def paced(ctx: Context, part: bool = False) -> str:
            ctx.progress(1, 2)
            if part:
                ctx.close_sse_stream()
            await gate.wait()
            ctx.progress(2, 2)
            return "paced"
        self.server.add_tool(paced)
        self.gate = gate
        gate.clear()

    async def stream(self, method, sid, body=None, **headers):
        """A raw SSE response on its own connection: (reader, writer, head)."""
        reader, writer = await self.client.connect()
        writer.write(self.client.build(method, "/mcp", body, {
            "Mcp-Session-Id": sid, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION,
            **({} if body else {"Accept": "text/event-stream"}), **headers}))
        return reader, writer, await read_head(reader)

    async def test_a_cut_stream_is_resumed_from_the_last_event_seen(self):
        sid = await self.client.initialize()
        reader, writer, head = await self.stream("POST", sid, call(7, "paced", meta={"progressToken": 1}))
        self.assertTrue(head.header("content-type").startswith("text/event-stream"))
        priming = await read_event(reader, priming=True)
        self.assertEqual((priming["data"], priming["retry"]), ("", str(mcp_min.SSE_RETRY)))
        progress = await read_event(reader)
        number, _, seq = progress["id"].partition("-")
        self.assertEqual((priming["id"], seq), (f"{number}-0", "1"))
        writer.transport.abort()        # the network drops it after the first progress
        beyond = await self.client.request("GET", "/mcp", headers={
            "Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": f"{number}-99"})
        self.assertIn("no such event", beyond.json()["error"]["message"])     # and the stream stays
        # From the priming id: what was sent after it comes again, then the rest, live.
        reader, writer, head = await self.stream("GET", sid, **{"Last-Event-ID": priming["id"]})
        self.assertEqual(head.status, 200)
        again = await read_event(reader)
        self.assertEqual((again["id"], json.loads(again["data"])), (progress["id"], json.loads(progress["data"])))
        self.gate.set()
        rest = [await read_event(reader), await read_event(reader)]
        self.assertEqual([e["id"] for e in rest], [f"{number}-2", f"{number}-3"])
        self.assertEqual(json.loads(rest[0]["data"])["params"]["progress"], 2)
        self.assertEqual(tool_text(json.loads(rest[1]["data"])), "paced")
        self.assertTrue(await closed_by_server(reader))     # the answer ends the stream
        over = await self.client.request("GET", "/mcp", headers={
            "Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": rest[1]["id"]})
        self.assertEqual(over.status, 400)
        self.assertIn("over", over.json()["error"]["message"])

    async def test_the_server_ends_a_stream_early_and_the_rest_comes_on_resume(self):
        sid = await self.client.initialize()
        response = await self.client.post(call(8, "paced", {"part": True}), sid, LATEST_PROTOCOL_VERSION)
        events = response.events()      # ctx.close_sse_stream(): a whole, short response
        self.assertEqual([bool(e.get("data")) for e in events], [False])
        self.gate.set()
        self.assertEqual((await self.ping(sid)).status, 200)
        reader, _, head = await self.stream("GET", sid, **{"Last-Event-ID": events[0]["id"]})
        self.assertEqual(tool_text(json.loads((await read_event(reader))["data"])), "paced")

    async def test_replay_is_bounded_and_bad_ids_are_refused(self):
        sid = await self.client.initialize()
        with mock.patch.object(mcp_min, "REPLAY_BYTES", 10):    # no event fits
            reader, writer, _ = await self.stream("POST", sid, call(9, "paced", meta={"progressToken": 1}))
            priming = await read_event(reader, priming=True)
            await read_event(reader)
            writer.transport.abort()
            lost = await self.client.request("GET", "/mcp", headers={
                "Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": priming["id"]})
        self.assertEqual(lost.status, 400)
        self.assertIn("not kept", lost.json()["error"]["message"])
        self.assertEqual(replay_kept(self.http), 0)
        for bad in ("x", "1-", "99-0", "-1-0", "\xb2-0", "1-\xb2"):
            response = await self.client.request("GET", "/mcp", headers={
                "Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": bad})
            self.assertEqual(response.status, 400, bad)

    def test_a_clients_streams_together_keep_a_quarter_of_its_account(self):
        account, other = mcp_min._Account(100), mcp_min._Account(100)     # a quarter: 25 bytes
        replay = mcp_min._Replay()
        old, new = mcp_min._ResumableStream(account, 1, False), mcp_min._ResumableStream(account, 2, False)
        apart = mcp_min._ResumableStream(other, 1, False)
        for stream in (old, apart, new, old, new):
            stream.seq += 1
            replay.add(stream, b"x" * 10)
        # old, written least recently, lost its first; another client's stream lost nothing
        self.assertEqual((account.used, other.used), (20, 10))
        self.assertEqual([[n for n, _ in s.log] for s in (old, new, apart)], [[2], [2], [1]])
        self.assertEqual((old.since(0), old.since(1)), (None, [b"x" * 10]))
        new.close()
        self.assertEqual((account.used, new.log), (10, None))
        replay.add(new, b"late")        # what a closed stream still writes is never kept
        self.assertEqual((account.used, new.log), (10, None))

    def test_a_session_keeps_unanswered_streams_before_answered_ones(self):
        entry = mcp_min._HttpSession(self.server, "sid", False)
        streams = [mcp_min._STREAMS.open(entry) for _ in range(4)]
        streams[1].ended = True
        with mock.patch.object(mcp_min, "KEPT_STREAMS", 2):
            for stream in streams[:3]:
                mcp_min._keep_stream(entry, stream)
            self.assertEqual(list(entry.kept), [1, 3])      # the answered one went, not the oldest
            streams[0].attached = True
            mcp_min._keep_stream(entry, streams[3])
            self.assertEqual(list(entry.kept), [1, 4])      # never one in use

    async def test_the_get_stream_keeps_what_came_while_it_was_gone(self):
        sid = await self.client.initialize()
        reader, writer, _ = await self.stream("GET", sid)
        priming = await read_event(reader, priming=True)
        writer.transport.abort()
        self.assertEqual((await self.ping(sid)).status, 200)    # the barrier: the server saw it go
        self.server.add_tool(lambda: "x", "late_tool")
        reader, writer, head = await self.stream("GET", sid, **{"Last-Event-ID": priming["id"]})
        event = await read_event(reader)
        self.assertEqual(json.loads(event["data"])["method"], "notifications/tools/list_changed")
        self.assertTrue(event["id"].startswith(priming["id"].split("-")[0] + "-"))

    async def test_a_refused_resume_leaves_every_stream_as_it_was(self):
        # A Last-Event-ID from the future cut the live GET stream; one from before what was kept
        # dropped the stream, so that a resume with a good id then found it over.
        sid = await self.client.initialize()
        reader, writer, _ = await self.stream("GET", sid)
        number = (await read_event(reader, priming=True))["id"].split("-")[0]
        future = await self.client.request("GET", "/mcp", headers={
            "Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": f"{number}-99"})
        self.assertEqual(future.status, 400)
        self.server.add_tool(lambda: "x", "one")      # the live stream carries on
        self.assertEqual(json.loads((await read_event(reader))["data"])["method"],
                         "notifications/tools/list_changed")
        with mock.patch.object(mcp_min, "REPLAY_BYTES", 150):    # room for one event, not two
            self.server.add_tool(lambda: "x", "two")
            second = await read_event(reader)
            writer.transport.abort()
            self.assertEqual((await self.ping(sid)).status, 200)    # the barrier: the server saw it go
            old = await self.client.request("GET", "/mcp", headers={
                "Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": f"{number}-0"})
            self.assertIn("not kept", old.json()["error"]["message"])
            self.server.add_tool(lambda: "x", "three")
            reader, writer, head = await self.stream("GET", sid, **{"Last-Event-ID": second["id"]})
            self.assertEqual(head.status, 200)
            self.assertEqual(json.loads((await read_event(reader))["data"])["method"],
                             "notifications/tools/list_changed")

    async def test_before_2025_11_25_events_have_ids_and_no_priming(self):
        sid = await self.client.initialize("2025-06-18")
        response = await self.client.post(call(3, "steps", meta={"progressToken": 1}), sid, "2025-06-18")
        events = response.events()
        self.assertTrue(all(e.get("data") and e.get("id") for e in events), events)
        self.assertNotIn("retry", events[0])


@needs_resumable
class HttpPrimingTest(HttpTestCase):
    """Resumable streams open with a priming event that names the retry."""

    async def test_streams_are_primed_with_a_retry(self):
        async def primed(reader):
            self.assertIn(b"retry: ", await asyncio.wait_for(reader.readuntil(b"\n\n"), TIMEOUT))
        await quiet_streams(self, primed)


def replay_kept(http):
    """Bytes the resumable streams of `http` keep, all clients together."""
    return sum(share.used for share, _ in mcp_min._replay(http).parts.values())


@needs_resumable
class HttpLeftStreamTest(HttpTestCase):
    """Issue 34 item 2: answers that came for a POST's SSE stream after its client left were
    queued without bound (3 sessions x 20 POSTs x 3 MB: +173 MiB). They go to the replay log now:
    REPLAY_BYTES a stream, a quarter of the client's account in all, oldest dropped first."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.gates = collections.defaultdict(asyncio.Event)

        async def answer(ctx: Context, key: str, size: int) -> str:
            ctx.progress(1, 2)
            await self.gates[key].wait()
            return key * size
        self.server.add_tool(answer)

    async def resume(self, sid, last):
        """GET with Last-Event-ID: (status, the events it replays, up to the stream's end)."""
        reader, writer = await self.client.connect()
        writer.write(self.client.build("GET", "/mcp", None, {
            "Mcp-Session-Id": sid, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION,
            "Accept": "text/event-stream", "Last-Event-ID": last}))
        head = await read_head(reader)
        if head.status != 200:
            return head.status, []
        events = []
        with contextlib.suppress(asyncio.IncompleteReadError):
            while True:
                events.append(json.loads((await read_event(reader))["data"]))
        return head.status, events

    async def test_answers_to_a_stream_whose_client_left_go_to_the_replay_log(self):
        sid = await self.client.initialize()
        entry, primed = self.http.sessions[sid], {}
        # A stream keeps 3000 bytes, all of them 5000: "a"'s 4000-byte answer is over the first;
        # b, c and d's 2000 bytes each are over the second, and b, written least recently, goes.
        headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION}
        account = entry.session.account     # its streams' logs may hold 5000 bytes
        mcp_min._replay(self.http).parts[account] = (mcp_min._Account(5000, account), {})
        with mock.patch.object(mcp_min, "REPLAY_BYTES", 3000):
            for id_, (key, size) in enumerate((("a", 4000), ("b", 2000), ("c", 2000), ("d", 2000)), 1):
                reader, writer = await self.client.connect()
                writer.write(self.client.build("POST", "/mcp", call(id_, "answer", {"key": key, "size": size},
                                                                    meta={"progressToken": key}), headers))
                self.assertEqual((await read_head(reader)).status, 200)
                primed[key] = (await read_event(reader, priming=True))["id"]
                self.assertEqual(json.loads((await read_event(reader))["data"])["method"], "notifications/progress")
                writer.transport.abort()        # the client leaves after the priming event and a progress
            def streams():
                return {*entry.posts, *entry.kept.values()}
            await until(lambda: len(streams()) == 4 and not any(s.attached for s in streams()),
                        "the server saw the four clients leave")
            for id_, key in enumerate("abcd", 1):       # the answers come, one after another
                self.assertIn(id_, entry.session.running)
                self.gates[key].set()
                await until(lambda id_=id_: id_ not in entry.session.running, f"{key}'s answer written")
            kept = replay_kept(self.http)
            held = [m for s in streams() for m in s.items if m is not mcp_min._FINISHED]
            resumed = {key: await self.resume(sid, primed[key]) for key in "abcd"}
        self.assertEqual((resumed["a"], resumed["b"]), ((400, []), (400, [])))    # not kept: 400
        for id_, key in ((3, "c"), (4, "d")):       # what was kept comes again, then the stream ends
            status, events = resumed[key]
            self.assertEqual(status, 200)
            self.assertEqual([e.get("method") for e in events], ["notifications/progress", None])
            self.assertEqual((events[1]["id"], tool_text(events[1])), (id_, key * 2000))
        self.assertLessEqual(kept, 5000)
        self.assertEqual(held, [])      # nothing kept outside the replay log (before: every answer)


class CuttingProxy:
    """A TCP relay to a server that cuts a connection (both sides, at once) right after
    relaying server bytes that contain `cut`, once: a network that drops a stream."""

    def __init__(self, port, cut=None):
        self.port, self.cut, self.requests = port, cut, []

    async def start(self):
        self.listener = await asyncio.start_server(self.relay, "127.0.0.1", 0)
        return self.listener.sockets[0].getsockname()[1]

    async def relay(self, reader, writer):
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)

        async def pump(source, sink, upstream):
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                while (data := await source.read(65536)):
                    if upstream:
                        self.requests.append(data)
                    sink.write(data)
                    if not upstream and self.cut and self.cut in data:
                        self.cut = None
                        writer.transport.abort()
                        up_writer.transport.abort()
                        return
                sink.close()
        await asyncio.gather(pump(reader, up_writer, True), pump(up_reader, writer, False))

    async def close(self):
        self.listener.close()


@needs_resumable
class ClientResumeTest(HttpTestCase):
    """Client: a stream the network cuts is resumed with Last-Event-ID; the GET stream too."""

    async def test_a_call_whose_stream_is_cut_gets_its_result(self):
        gate = self.state.gate

        async def paced(ctx: Context) -> str:
            ctx.progress(1, 2)
            await gate.wait()
            return "paced"
        self.server.add_tool(paced)
        gate.clear()
        proxy = CuttingProxy(self.port, b"notifications/progress")
        port = await proxy.start()
        seen = asyncio.Event()
        with mock.patch.object(mcp_min, "SSE_RETRY", 10):
            async with mcp_min.Client(f"http://127.0.0.1:{port}/mcp", era="handshake", timeout=TIMEOUT) as client:
                call_ = asyncio.ensure_future(client.call_tool("paced", on_progress=lambda p: seen.set()))
                await asyncio.wait_for(seen.wait(), TIMEOUT)
                await until(lambda: any(b"Last-Event-ID" in r for r in proxy.requests), "a resume")
                gate.set()
                result = await asyncio.wait_for(call_, TIMEOUT)
        await proxy.close()
        self.assertEqual(result["content"][0]["text"], "paced")

    async def test_a_get_stream_the_network_cuts_is_opened_again(self):
        proxy = CuttingProxy(self.port, b"retry: ")     # the GET stream's priming event
        port = await proxy.start()
        changed = asyncio.Event()
        with mock.patch.object(mcp_min, "SSE_RETRY", 10):
            async with mcp_min.Client(f"http://127.0.0.1:{port}/mcp", era="handshake", timeout=TIMEOUT,
                                      on_notification=lambda *_: changed.set()) as client:
                await until(lambda: any(b"Last-Event-ID" in r for r in proxy.requests), "a reopened stream")
                self.assertEqual((await client.ping()), {})
                self.server.add_tool(lambda: "x", "late_tool")
                await asyncio.wait_for(changed.wait(), TIMEOUT)
        await proxy.close()


##############################################################################
# Extension: tasks (SEP-2663)
##############################################################################

TASKS = "io.modelcontextprotocol/tasks"


WITH_TASKS = {"extensions": {TASKS: {}}, "elicitation": {}}


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


async def close_task_store(server):
    """The works stop, then the store (SQLite in memory) closes: 3.13 warns of a connection
    left to the garbage collector."""
    works = list(mcp_min._works(server).values())
    for work in works:
        work.cancel()
    await asyncio.gather(*works, return_exceptions=True)
    await asyncio.sleep(0)      # their last words (`_finish`) start
    if mcp_min._WRITES:
        await asyncio.wait(list(mcp_min._WRITES))
    if isinstance(server.task_store, mcp_min.TaskStore):
        mcp_min._close_store(server.task_store)
    elif server.task_store:     # RedisTaskStore
        server.task_store.close()


def task_call(id_, name, arguments=None, capabilities=WITH_TASKS):
    return modern(id_, "tools/call", {"name": name, "arguments": arguments or {}}, capabilities)


def task_request(id_, method, task_id, capabilities=WITH_TASKS, **params):
    return modern(id_, method, {"taskId": task_id, **params}, capabilities)


def task_server():
    """Tools that may be tasks; `state` records what their works lived through."""
    server, state = Server("tasks"), types.SimpleNamespace(cancelled=[], release=threading.Event())

    @server.tool(task="optional")
    async def slow(seconds: float = 60.0, label: str = "done") -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            state.cancelled.append(label)
            raise
        return label

    @server.tool(task="optional")
    def blocking() -> str:
        state.release.wait(TIMEOUT)
        return "released"

    @server.tool(task="optional")
    async def two_questions(ctx: Context) -> str:
        await ctx.detach()
        schema = {"name": {"type": "string"}}
        first, second = await asyncio.gather(ctx.elicit("First?", schema, key="a"),
                                             ctx.elicit("Second?", schema, key="b"))
        return f"{first['content']['name']} {second['content']['name']}"

    @server.tool(task="required")
    async def only_a_task(ctx: Context) -> str:
        return f"{await ctx.detach()}"

    @server.tool(task="optional")
    async def broken(ctx: Context) -> str:
        await ctx.detach()
        raise mcp_min.RequestError(INVALID_PARAMS, "no such thing", {"why": "test"})

    @server.tool()
    async def plain(ctx: Context) -> str:
        return f"{await ctx.detach()}"

    @server.tool(task="optional")
    async def chatty(ctx: Context) -> str:
        await ctx.log("info", "before")
        await ctx.detach()
        await ctx.log("info", "after")      # nobody listens to a task's call: neither is sent
        await ctx.progress(1, 2)
        return "chatted"
    return server, state


@needs_tasks
class TasksTest(unittest.IsolatedAsyncioTestCase):
    """A task-supporting tools/call becomes a task; tasks/get, tasks/update and tasks/cancel."""

    async def asyncSetUp(self):
        self.server, self.state = task_server()
        self.addAsyncCleanup(close_task_store, self.server)     # the last cleanup
        self.wire = Wire(self.server)
        self.addCleanup(self.state.release.set)
        for patcher in (mock.patch.object(mcp_min, "TASK_AFTER", 0.05),
                        # the runner's look at its works each 0.05 s: their ends are seen at once
                        mock.patch.object(mcp_min, "_SWEEP_EVERY", 0.05)):
            patcher.start()
            self.addCleanup(patcher.stop)

    async def get(self, task_id, id_=None, wire=None):
        return await (wire or self.wire).request(task_request(id_ or f"get-{time.monotonic()}", "tasks/get", task_id))

    async def until_status(self, task_id, *statuses):
        deadline = time.monotonic() + TIMEOUT
        while (task := (await self.get(task_id))["result"])["status"] not in statuses:
            self.assertLess(time.monotonic(), deadline, task)
            await asyncio.sleep(0.01)
        return task

    async def test_a_slow_call_becomes_a_task_and_a_quick_one_does_not(self):
        quick = (await self.wire.request(task_call(1, "slow", {"seconds": 0, "label": "quick"})))["result"]
        self.assertEqual((quick["resultType"], tool_text({"result": quick})), ("complete", "quick"))
        created = (await self.wire.request(task_call(2, "slow", {"seconds": 0.3})))["result"]
        self.assertEqual((created["resultType"], created["status"]), ("task", "working"))
        self.assertEqual(set(created) - {"_meta"}, {"resultType", "taskId", "status", "createdAt",
                                                    "lastUpdatedAt", "ttlMs", "pollIntervalMs"})
        self.assertRegex(created["createdAt"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(len(created["taskId"]), 32)      # 128 random bits: the id is a bearer token
        self.assertEqual((await self.get(created["taskId"]))["result"]["status"], "working")
        done = await self.until_status(created["taskId"], "completed")
        self.assertEqual((done["resultType"], done["result"]), ("complete", {"content": [mcp_min.text("done")]}))
        # Without the extension on this request: the task gate before any lookup; a plain call.
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            error = (await self.wire.request(task_request(3, method, created["taskId"], {})))["error"]
            self.assertEqual((error["code"], error["data"]), (mcp_min.MISSING_CAPABILITY,
                                                              {"requiredCapabilities": {"extensions": {TASKS: {}}}}))
        plain = (await self.wire.request(task_call(4, "slow", {"seconds": 0.2, "label": "plain"}, {})))["result"]
        self.assertEqual((plain["resultType"], tool_text({"result": plain})), ("complete", "plain"))
        error = (await self.wire.request(task_call(5, "only_a_task", capabilities={})))["error"]
        self.assertEqual(error["code"], mcp_min.MISSING_CAPABILITY)
        other = "1" if created["taskId"].endswith("0") else "0"     # (one id in 16 ends in 0)
        for unknown in ("nope", "x" * 100, created["taskId"][:-1] + other):
            self.assertEqual((await self.get(unknown))["error"]["code"], INVALID_PARAMS)
        # detach() makes a task at once; where none can be, it says so and the call goes on.
        made = (await self.wire.request(task_call(6, "only_a_task")))["result"]
        self.assertEqual((await self.until_status(made["taskId"], "completed"))["result"]["content"][0]["text"],
                         "True")
        self.assertEqual(tool_text(await self.wire.request(task_call(7, "plain"))), "False")
        # A JSON-RPC error from the tool: the task failed, with the error inlined.
        failed = await self.until_status((await self.wire.request(task_call(8, "broken")))["result"]["taskId"],
                                         "failed")
        self.assertEqual(failed["error"], {"code": INVALID_PARAMS, "message": "no such thing", "data": {"why": "test"}})
        self.assertNotIn("result", failed)

    async def test_the_handshake_era_has_no_tasks(self):
        await self.wire.initialize()
        self.assertEqual((await self.wire.request(rpc(1, "tasks/get", {"taskId": "x"})))["error"]["code"],
                         METHOD_NOT_FOUND)
        self.assertEqual((await self.wire.request(call(2, "only_a_task")))["error"]["code"],
                         mcp_min.MISSING_CAPABILITY)
        self.assertEqual(tool_text(await self.wire.request(call(3, "slow", {"seconds": 0.2}))), "done")
        found = (await Wire(Server("none")).request(modern(1, "server/discover")))["result"]["capabilities"]
        self.assertNotIn("extensions", found)       # no tool with task=: nothing of the extension
        self.assertEqual((await Wire(Server("none")).request(task_request(1, "tasks/get", "x")))["error"]["code"],
                         METHOD_NOT_FOUND)
        with self.assertRaisesRegex(ValueError, "task must be"):
            Server("x").add_tool(lambda: 1, "t", task="sometimes")

    async def test_cancel_a_running_async_and_sync_tool(self):
        running = (await self.wire.request(task_call(1, "slow", {"label": "async"})))["result"]["taskId"]
        ack = (await self.wire.request(task_request(2, "tasks/cancel", running)))["result"]
        self.assertEqual(set(ack), {"resultType", "_meta"})
        self.assertEqual((await self.get(running))["result"]["status"], "cancelled")
        await until(lambda: self.state.cancelled == ["async"], "the async tool cancelled")
        before = self.server.abandoned
        stuck = (await self.wire.request(task_call(3, "blocking")))["result"]["taskId"]
        self.assertIn("result", await self.wire.request(task_request(4, "tasks/cancel", stuck)))
        self.assertEqual((await self.get(stuck))["result"]["status"], "cancelled")
        await until(lambda: self.server.abandoned == before + 1, "the thread counted as abandoned")
        self.state.release.set()
        # An ended task stays as it ended; cancelling it again is acknowledged all the same.
        done = (await self.wire.request(task_call(5, "slow", {"seconds": 0.1})))["result"]["taskId"]
        await self.until_status(done, "completed")
        self.assertIn("result", await self.wire.request(task_request(6, "tasks/cancel", done)))
        self.assertEqual((await self.get(done))["result"]["status"], "completed")

    async def test_input_mid_task_partial_answers_and_bad_ones(self):
        task_id = (await self.wire.request(task_call(1, "two_questions")))["result"]["taskId"]
        asked = await self.until_status(task_id, "input_required")
        while len(asked.get("inputRequests", {})) < 2:
            asked = (await self.get(task_id))["result"]
        self.assertEqual(asked["inputRequests"]["a"]["method"], "elicitation/create")
        bad = await self.wire.request(task_request(2, "tasks/update", task_id, inputResponses={
            "a": {"action": "accept", "content": {"name": 3}}}))
        self.assertEqual(bad["error"]["code"], INVALID_PARAMS)     # checked against the schema: nothing taken
        ack = await self.wire.request(task_request(3, "tasks/update", task_id, inputResponses={
            "a": {"action": "accept", "content": {"name": "Ada"}}, "unknown": {"ignored": True}}))
        self.assertEqual(ack["result"]["resultType"], "complete")
        now = (await self.get(task_id))["result"]
        self.assertEqual((now["status"], list(now["inputRequests"])), ("input_required", ["b"]))
        await self.wire.request(task_request(4, "tasks/update", task_id, inputResponses={
            "b": {"action": "accept", "content": {"name": "Lovelace"}}}))
        done = await self.until_status(task_id, "completed")
        self.assertEqual(done["result"]["content"][0]["text"], "Ada Lovelace")
        self.assertNotIn("inputRequests", done)

    async def test_tasks_are_their_sessions_and_bounded(self):
        mine = (await self.wire.request(task_call(1, "slow")))["result"]["taskId"]
        other = Wire(self.server)
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            self.assertEqual((await other.request(task_request(2, method, mine, inputResponses={})))
                             ["error"]["code"], INVALID_PARAMS)
        self.assertEqual((await self.get(mine))["result"]["status"], "working")
        with mock.patch.object(mcp_min, "MAX_TASKS", 2):     # past it, a call stays a plain one
            await self.wire.request(task_call(3, "slow"))
            plain = (await self.wire.request(task_call(4, "slow", {"seconds": 0.15, "label": "plain"})))["result"]
            self.assertEqual((plain["resultType"], tool_text({"result": plain})), ("complete", "plain"))
            self.assertEqual((await other.request(task_call(5, "slow", {"seconds": 0.15})))["result"]["resultType"],
                             "task")     # another session's count is its own
        with mock.patch.object(mcp_min, "MAX_TASKS", 1):     # and 16 times as many in all
            crowd = [Wire(self.server) for _ in range(13)]
            made = await asyncio.gather(*(wire.request(task_call(i, "slow")) for i, wire in enumerate(crowd)))
            for answer in made:     # all at once: 3 tasks before, and these 13, are 16
                self.assertEqual(answer["result"]["resultType"], "task")
            late = (await Wire(self.server).request(task_call(99, "slow", {"seconds": 0.15})))["result"]
            self.assertEqual(late["resultType"], "complete")
        for task_id in list(mcp_min._works(self.server)):
            mcp_min._works(self.server)[task_id].cancel()
        await until(lambda: not mcp_min._works(self.server) and self.server not in mcp_min._KEEPING,
                    "the works and their keeper ended")
        task_id = (await self.wire.request(task_call(7, "two_questions")))["result"]["taskId"]
        await self.until_status(task_id, "input_required")
        with mock.patch.object(mcp_min, "MAX_TASK_ANSWERS", 100):
            error = (await self.wire.request(task_request(8, "tasks/update", task_id, inputResponses={
                "a": {"action": "accept", "content": {"name": "x" * 100}}})))["error"]
        self.assertIn("MAX_TASK_ANSWERS", error["message"])
        self.assertEqual(len((await self.get(task_id))["result"]["inputRequests"]), 2)   # nothing taken
        mcp_min._works(self.server)[task_id].cancel()

    async def test_a_tasks_call_is_not_heard_from(self):
        message = task_call(1, "chatty")
        message["params"]["_meta"].update({"io.modelcontextprotocol/logLevel": "debug", "progressToken": "p"})
        task_id = (await self.wire.request(message))["result"]["taskId"]
        self.assertEqual((await self.until_status(task_id, "completed"))["result"]["content"][0]["text"], "chatted")
        heard = [m["params"].get("data") for m in self.wire.messages if m.get("method", "").startswith("notif")]
        self.assertEqual(heard, ["before"])

    async def test_over_http_a_task_is_its_users(self):
        http = await start_http(self.server, "127.0.0.1", 0)
        self.addAsyncCleanup(http.close)
        resource = f"http://127.0.0.1:{http.port}/mcp"
        http.auth = mcp_min.ResourceServer(lambda token: {"sub": token, "aud": resource},
                                           ["https://as.example"], resource=resource)
        client = HttpClient(http.port)
        self.addAsyncCleanup(client.close)

        async def post(user, message):
            method, params = message["method"], message["params"]
            headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, **bearer(user),
                       "Mcp-Name": params.get("name", params.get("taskId"))}
            return (await client.post(message, headers=headers)).json()
        task_id = (await post("alice", task_call(1, "slow")))["result"]["taskId"]
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            refused = await post("bob", task_request(2, method, task_id, inputResponses={}))
            self.assertEqual(refused["error"]["code"], INVALID_PARAMS)
        self.assertEqual((await post("alice", task_request(3, "tasks/get", task_id)))["result"]["status"],
                         "working")
        await post("alice", task_request(4, "tasks/cancel", task_id))
        await until(lambda: self.state.cancelled == ["done"], "alice's cancel")
        owners = self.server.task_store._rows("SELECT owner, record FROM tasks")
        self.assertNotIn("alice", repr(owners))     # who: a hash, never a token

    async def test_status_notifications_on_a_listen(self):
        task_id = (await self.wire.request(task_call(1, "two_questions")))["result"]["taskId"]
        stranger = (await Wire(self.server).request(task_call(1, "slow")))["result"]["taskId"]
        refused = await self.wire.request(modern(2, "subscriptions/listen", {"notifications": {
            "taskIds": [task_id]}}))
        self.assertEqual(refused["error"]["code"], mcp_min.MISSING_CAPABILITY)
        self.wire.feed(modern(3, "subscriptions/listen", {"notifications": {"taskIds": [task_id, stranger, 7]}},
                              WITH_TASKS))
        ack = await self.wire.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
        self.assertEqual(ack["params"]["notifications"], {"taskIds": [task_id]})   # its own tasks only
        await self.until_status(task_id, "input_required")
        await self.wire.request(task_request(4, "tasks/update", task_id, inputResponses={
            "a": {"action": "accept", "content": {"name": "x"}}}))
        asked = await self.wire.wait_for(lambda m: m.get("method") == "notifications/tasks")
        self.assertEqual((asked["params"]["taskId"], asked["params"]["status"]), (task_id, "input_required"))
        self.assertEqual(list(asked["params"]["inputRequests"]), ["b"])     # the whole task, as tasks/get has it
        self.assertEqual(asked["params"]["_meta"], {"io.modelcontextprotocol/subscriptionId": 3})
        await self.wire.request(task_request(5, "tasks/update", task_id, inputResponses={
            "b": {"action": "accept", "content": {"name": "y"}}}))
        working = await self.wire.wait_for(lambda m: m.get("method") == "notifications/tasks")
        self.assertEqual(working["params"]["status"], "working")
        end = await self.wire.wait_for(lambda m: m.get("method") == "notifications/tasks")
        self.assertEqual(end["params"]["status"], "completed")
        self.assertEqual(end["params"]["result"]["content"][0]["text"], "x y")     # the result inlined
        self.assertFalse([m for m in self.wire.messages if m.get("params", {}).get("taskId") == stranger])
        for work in list(mcp_min._works(self.server).values()):
            work.cancel()


@needs_tasks
class TaskCountRaceTest(unittest.IsolatedAsyncioTestCase):
    """Issue 39 item 12: a client's tasks were counted, then one added, awaits apart: calls that
    came together were each counted before any was added, and all became tasks (200 of 200 on
    stdio with MAX_TASKS 5). The store now counts and adds in one transaction."""

    async def test_calls_that_come_together_never_pass_max_tasks(self):
        server, _ = task_server()
        self.addAsyncCleanup(close_task_store, server)
        wire = Wire(server)
        with mock.patch.object(mcp_min, "MAX_TASKS", 5):
            for i in range(40):     # one client's calls, all in before any is answered
                wire.feed(task_call(i, "only_a_task"))
            answers = [(await wire.response(i))["result"] for i in range(40)]
        made = [answer for answer in answers if answer["resultType"] == "task"]
        self.assertEqual(len(made), 5)
        self.assertEqual({tool_text({"result": a}) for a in answers if a not in made}, {"False"})
        self.assertEqual(server.task_store.usage(mcp_min._task_client(wire.session))[0], 5)

    def test_two_stores_on_one_file_add_within_the_bound(self):
        # Two processes sharing a store file: each has its own connection, and its own lock.
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        stores = [mcp_min.TaskStore(os.path.join(tmp, "tasks.db")) for _ in range(2)]
        for store in stores:
            self.addCleanup(mcp_min._close_store, store)
        ready = threading.Barrier(20)

        def add(i):
            ready.wait(TIMEOUT)     # all at once
            return stores[i % 2].add({"taskId": f"t{i}", "client": "one", "expires": time.time() + 60})
        with mock.patch.object(mcp_min, "MAX_TASKS", 5), concurrent.futures.ThreadPoolExecutor(20) as pool:
            added = list(pool.map(add, range(20)))
        self.assertEqual(added.count(True), 5)
        self.assertEqual(added.count(False), 15)
        self.assertEqual(stores[1].usage("one")[0], 5)


@needs_tasks
class TaskClientTest(unittest.IsolatedAsyncioTestCase):
    """The client: call_tool polls a task to its end; task=True gives a handle; the CLI and the
    trace show a task's steps."""

    def test_the_tasks_extension_joins_the_others_a_client_declares(self):
        # Regression (issue 35): declaring tasks replaced the extensions declared before it.
        caps = mcp_min._polls_tasks(None, {"sampling": {}, "extensions": {"x.example/other": {}}})
        self.assertEqual(caps, {"sampling": {}, "extensions": {"x.example/other": {}, mcp_min._TASKS: {}}})

    async def asyncSetUp(self):
        self.server, self.state = task_server()
        self.addAsyncCleanup(close_task_store, self.server)     # the last cleanup
        self.addCleanup(self.state.release.set)
        for name, value in (("TASK_AFTER", 0.05), ("TASK_POLL", 0.02)):
            patcher = mock.patch.object(mcp_min, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)

    @needs_trace
    async def test_a_tool_knows_its_tasks_id_and_the_client_its_era(self):
        # ctx.task_id and Client.modern, public before issue 35's restyle, were lost in it
        async def whose(ctx: Context) -> str:
            before = ctx.task_id
            await ctx.detach()
            return f"{before} {ctx.task_id}"
        self.server.add_tool(whose, task="optional")
        async with mcp_min.Client(self.server) as client:
            handle = await client.call_tool("whose", task=True)
            self.assertEqual(tool_text({"result": await handle.result()}), f"None {handle.id}")
            self.assertTrue(client.modern)
        async with mcp_min.Client(self.server, era="handshake") as client:
            self.assertFalse(client.modern)

    async def test_polled_to_the_end_answered_and_cancelled(self):
        seen, trace = [], io.StringIO()
        answers = iter(["Ada", "Lovelace"])
        http = await start_http(self.server, "127.0.0.1", 0)     # over real sockets, traced
        self.addAsyncCleanup(http.close)
        client = mcp_min.Client(f"http://127.0.0.1:{http.port}/mcp", elicitation=lambda p: {
            "action": "accept", "content": {"name": next(answers)}}, trace=mcp_min._Trace("-", side="client"))
        client.trace.file = trace
        async with client:
            result = await client.call_tool("slow", {"seconds": 0.2}, on_status=lambda t: seen.append(t["status"]))
            self.assertEqual((result, seen), ({"content": [mcp_min.text("done")]}, ["working", "completed"]))
            self.assertEqual(tool_text({"result": await client.call_tool("two_questions")}), "Ada Lovelace")
            handle = await client.call_tool("slow", {"label": "handled"}, task=True)
            self.assertEqual((await handle.status())["status"], "working")
            await handle.cancel()
            with self.assertRaisesRegex(McpError, "ended cancelled"):
                await handle.result()
            quick = await client.call_tool("slow", {"seconds": 0}, task=True)
            self.assertEqual((quick.id, (await quick.result())["content"][0]["text"]), (None, "done"))
            with self.assertRaises(McpError) as failed:
                await client.call_tool("broken")
            self.assertEqual((failed.exception.code, failed.exception.data), (INVALID_PARAMS, {"why": "test"}))
            # Past its timeout, a call's task is cancelled too.
            with self.assertRaises(McpError) as late:
                await client.call_tool("slow", {"label": "late"}, timeout=0.3)
            self.assertEqual(late.exception.code, mcp_min.REQUEST_TIMEOUT)
            await until(lambda: "late" in self.state.cancelled, "the task cancelled")
        self.assertIn("handled", self.state.cancelled)
        lines = [line for line in trace.getvalue().splitlines() if re.match(r"\s*\d+\.\d{3}s ", line)]
        self.assertTrue(any("(tools/call) task created, working" in line for line in lines), lines)
        self.assertTrue(any("request" in line and "tasks/get " in line for line in lines), lines)
        self.assertTrue(any("(tasks/get) task completed" in line for line in lines), lines)

    async def test_a_servers_task_answers_are_checked(self):
        class Stub:     # a server's answers, as Client.request returns them
            def __init__(self, *answers):
                self.answers, self._tasks = list(answers), set()

            async def request(self, method, params):
                return self.answers.pop(0)
        task = {"resultType": "task", "taskId": "t", "status": "working", "pollIntervalMs": 0}
        for answer in ({"resultType": "task", "status": "working"}, ["not", "an", "object"]):
            with self.assertRaises(McpError):
                mcp_min.TaskHandle(Stub(), answer)
        with self.assertRaisesRegex(McpError, "not of task t"):
            await mcp_min.TaskHandle(Stub({**task, "taskId": "other"}), task).status()
        asks = {f"k{i}": {"method": "elicitation/create", "params": {}} for i in range(101)}
        with self.assertRaisesRegex(McpError, "asked over 100"):
            await mcp_min.TaskHandle(Stub({}), {**task, "status": "input_required", "inputRequests": asks}).result()
        # The server's intervals, bounded: no busy loop at 0 ms, no overflow at 10**400.
        self.assertEqual([mcp_min._millis(v, None) for v in (0, -5, 250, 10 ** 400, "9")],
                         [0.05, 0.05, 0.25, 86_400, None])

    def test_sync_client(self):
        with mcp_min.SyncClient(self.server) as client:
            handle = client.call_tool("slow", {"seconds": 0.2}, task=True)
            self.assertEqual(handle.result()["content"][0]["text"], "done")


@runs_beside
@needs_tasks
@needs_cli
class TaskCommandLineTest(unittest.TestCase):
    """`client ... tools/call` of a tool that becomes a task: the CLI polls it, saying so."""

    def test_the_cli_polls_a_task_to_its_end(self):
        run = subprocess.run([*SERVE, "client", f"{PYTHON_CMD} examples/everything.py", "tools/call", "slow_compute",
                              "seconds=0.8"], cwd=HERE, capture_output=True, text=True, timeout=30,
                             env=_clean_env())
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(run.stderr, r"task [0-9a-f]{32}: working\n(.*\n)*task [0-9a-f]{32}: completed")
        self.assertIn("computed: done after 0.8 s", run.stdout)


_TASK_PROCESS = '''
import asyncio, os, mcp_min
mcp_min.TASK_STALE = 1.0
mcp_min._SWEEP_EVERY = 0.1      # signs of life, and looks at the store for cancels, each 0.1 s
mcp_min.TASK_AFTER = 0.1        # a call is a task after 0.1 s (not 0.5)
server = mcp_min.Server("shared")

@server.tool(task="optional")
async def wait(seconds: float, mark: str = "") -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark and open(mark, "w").close()
        raise
    return f"waited {seconds} s in {os.getpid()}"
'''


@runs_beside
@needs_tasks
@needs_cli
class _ModernCalls(unittest.IsolatedAsyncioTestCase):
    """2026-07-28 requests to a `ServerProcess` over HTTP, the tasks extension declared."""

    async def call(self, process, id_, method, params):
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if "name" in params or "taskId" in params:
            headers["Mcp-Name"] = params.get("name", params.get("taskId"))
        return (await process.client.post(modern(id_, method, params, WITH_TASKS), headers=headers)).json()

    async def status(self, process, task_id, *statuses):
        deadline = time.monotonic() + TIMEOUT
        while (task := (await self.call(process, 9, "tasks/get", {"taskId": task_id}))["result"])[
                "status"] not in statuses:
            self.assertLess(time.monotonic(), deadline, task)
            await asyncio.sleep(0.05)
        return task


class TaskProcessTest(_ModernCalls):
    """Tasks that outlive a process: several `serve --port` sharing a --task-store FILE."""

    def process(self, tmp, store):
        process = ServerProcess(os.path.join(tmp, "shared.py"), "--task-store", store)
        self.addCleanup(process.close)
        return process

    async def test_a_task_read_and_cancelled_from_another_process_and_its_end(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(tmp, "shared.py"), "w") as f:
            f.write(_TASK_PROCESS)
        store = os.path.join(tmp, "tasks.db")
        one = self.process(tmp, store)      # (it makes the store: the others start after)
        two = self.process(tmp, store)
        self.assertEqual(os.stat(store).st_mode & 0o777, 0o600)     # results are in it: the user's alone
        created = (await self.call(one, 1, "tools/call", {"name": "wait", "arguments": {"seconds": 0.8}}))["result"]
        self.assertEqual(created["resultType"], "task")
        self.assertEqual((await self.call(two, 2, "tasks/get", {"taskId": created["taskId"]}))["result"]["status"],
                         "working")     # durable before it was answered
        done = await self.status(two, created["taskId"], "completed")
        self.assertEqual(done["result"]["content"][0]["text"], f"waited 0.8 s in {one.proc.pid}")
        # A cancel on two stops the work on one, within a second or so.
        mark = os.path.join(tmp, "cancelled")
        long = (await self.call(one, 3, "tools/call", {"name": "wait", "arguments": {"seconds": 60, "mark": mark}}))
        await self.call(two, 4, "tasks/cancel", {"taskId": long["result"]["taskId"]})
        await until(lambda: os.path.exists(mark), "the work on the other process stopped", timeout=5)
        # A process that stops: SIGTERM fails its tasks at once; SIGKILL after TASK_STALE (1 s here).
        for sig, why in ((signal.SIGTERM, "The server stopped before the task ended"),
                         (signal.SIGKILL, "The server process running this task stopped")):
            runner = self.process(tmp, store)
            task_id = (await self.call(runner, 5, "tools/call", {"name": "wait", "arguments": {"seconds": 60}}))[
                "result"]["taskId"]
            os.kill(runner.proc.pid, sig)
            runner.proc.wait(TIMEOUT)
            failed = await self.status(two, task_id, "failed")
            self.assertEqual(failed["error"]["message"], why)


@runs_beside
@needs_tasks
class TaskMemoryTest(unittest.TestCase):
    """Results are kept for their ttlMs, then freed: what Python holds stays flat (tracemalloc), and
    so do the store's rows. Not the resident size: the allocator keeps freed pages as it likes (in
    CI a round's worth stayed, twice, with nothing held)."""

    def test_expired_results_are_freed(self):
        # The store's clock (time.time) is moved on past the tasks' ttlMs after each round: no
        # sleep, and a loaded machine cannot expire a task before its result is read.
        script = textwrap.dedent('''
            import asyncio, gc, sys, time, tracemalloc, mcp_min
            mcp_min.TASK_AFTER, mcp_min.TASK_POLL = 0.0, 0.05
            mcp_min.MAX_TASK_BYTES = 1 << 30    # what this measures is the freeing, not the bound
            server = mcp_min.Server("big")
            later, now = [0.0], time.time
            time.time = lambda: now() + later[0]

            @server.tool(task="optional")
            async def big(i: int) -> str:
                await asyncio.sleep(0.01)
                return str(i) * (1 << 20)

            def held():     # MB
                gc.collect()
                return tracemalloc.get_traced_memory()[0] >> 20

            async def main():
                tracemalloc.start()
                async with mcp_min.Client(server) as client:
                    for round_ in range(6):     # 20 MB of results a round
                        handles = await asyncio.gather(*(client.call_tool("big", {"i": i}, task=True)
                                                         for i in range(20)))
                        await asyncio.gather(*(handle.result() for handle in handles))
                        later[0] += mcp_min.TASK_TTL + 1    # they expire; the next round's first add frees them
                        if mcp_min._WRITES:     # what the store's thread still writes holds results
                            await asyncio.wait(list(mcp_min._WRITES))
                        rows = server.task_store._rows("SELECT COUNT(*) FROM tasks")[0][0]
                        print(round_, held(), rows, flush=True)
            asyncio.run(main())
        ''')
        run = subprocess.run([*PYTHON, "-c", script], cwd=HERE, capture_output=True, text=True, timeout=60,
                             env=_clean_env())
        self.assertEqual(run.returncode, 0, run.stderr)
        rounds = [[int(word) for word in line.split()] for line in run.stdout.splitlines()]
        self.assertEqual(len(rounds), 6)
        self.assertLessEqual(max(rows for _, _, rows in rounds), 21, rounds)   # a round's, at most
        self.assertLess(rounds[-1][1] - rounds[1][1], 10, rounds)   # kept: +30 MB a round; freed: flat


@needs_tasks
class TaskResultBoundTest(unittest.IsolatedAsyncioTestCase):
    """Issue 34 item 1: a task's result was kept for TASK_TTL with no size bound, and with no
    authentication each made-up Authorization header was another owner with a quota of its own.
    Now: one result past MAX_TASK_RESULT, or past its client's quarter of MAX_TASK_BYTES or
    everyone's MAX_TASK_BYTES, fails its task naming the bound; past a share, a call stays plain;
    the client is its address (HTTP), never a header nobody checked."""

    async def asyncSetUp(self):
        self.server, self.state = task_server()
        self.addCleanup(self.state.release.set)
        patcher = mock.patch.object(mcp_min, "TASK_AFTER", 0.05)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.addAsyncCleanup(self.end_works)

    async def end_works(self):
        for work in list(mcp_min._works(self.server).values()):
            work.cancel()
        await until(lambda: not mcp_min._works(self.server), "the works ended")

    async def ended(self, wire, task_id):
        """The task, once it has ended (polled with tasks/get)."""
        deadline = time.monotonic() + TIMEOUT
        while (task := (await wire.request(task_request(f"get-{time.monotonic()}", "tasks/get", task_id)))[
                "result"])["status"] not in ("completed", "failed", "cancelled"):
            self.assertLess(time.monotonic(), deadline, task)
            await asyncio.sleep(0.01)
        return task

    async def run_task(self, wire, label, id_=1):
        """`slow` as a task, returning `label`: the task as it ended."""
        created = (await wire.request(task_call(id_, "slow", {"seconds": 0.1, "label": label})))["result"]
        self.assertEqual(created["resultType"], "task", created)
        return await self.ended(wire, created["taskId"])

    def assertFailedNaming(self, task, bound):
        self.assertEqual(task["status"], "failed", task)
        self.assertNotIn("result", task)
        self.assertEqual(task["error"]["code"], INTERNAL_ERROR)
        self.assertIn(f"({bound})", task["error"]["message"])

    async def test_a_result_over_max_task_result_fails_its_task_naming_it(self):
        wire = Wire(self.server)
        with mock.patch.object(mcp_min, "MAX_TASK_RESULT", 2000):
            fits = await self.run_task(wire, "y" * 1000, 1)
            too_big = await self.run_task(wire, "x" * 3000, 2)
        self.assertEqual((fits["status"], fits["result"]["content"][0]["text"]), ("completed", "y" * 1000))
        self.assertFailedNaming(too_big, "MAX_TASK_RESULT")     # before: completed, 3000 bytes kept

    async def test_a_clients_results_together_are_bounded_in_bytes(self):
        # Results of ~6-8 KB against MAX_TASK_BYTES 40000: a quarter (10000) per client. A record
        # without its result is ~0.45 KB, one that failed ~0.7 KB: the margins are KBs.
        mine, other = Wire(self.server), Wire(self.server)
        with mock.patch.object(mcp_min, "MAX_TASK_BYTES", 40_000):
            first = await self.run_task(mine, "a" * 6000, 1)
            self.assertEqual(first["status"], "completed", first)
            second = await self.run_task(mine, "b" * 6000, 2)    # a task (room), whose result does not fit
            self.assertFailedNaming(second, "MAX_TASK_BYTES")
            self.assertEqual((await self.run_task(other, "c" * 6000))["status"], "completed")   # its own share
        with mock.patch.object(mcp_min, "MAX_TASK_BYTES", 20_000):   # mine (~7 KB) past its quarter now
            plain = (await mine.request(task_call(3, "slow", {"seconds": 0.2, "label": "plain"})))["result"]
            self.assertEqual(plain["resultType"], "complete", plain)
            self.assertEqual(tool_text({"result": plain}), "plain")
            fresh = await Wire(self.server).request(task_call(4, "slow", {"seconds": 0.2}))
            self.assertEqual(fresh["result"]["resultType"], "task")   # another client's share is its own

    async def test_everyones_results_together_are_bounded_in_bytes(self):
        # Four clients fill 4 x ~8.5 KB of MAX_TASK_BYTES 40000; a fifth's 8 KB fits its own
        # share (10000) but not the store's.
        crowd = [Wire(self.server) for _ in range(5)]
        with mock.patch.object(mcp_min, "MAX_TASK_BYTES", 40_000):
            self.assertEqual([task["status"] for task in await asyncio.gather(
                *(self.run_task(wire, "d" * 8000) for wire in crowd[:4]))], ["completed"] * 4)
            self.assertFailedNaming(await self.run_task(crowd[4], "e" * 8000), "MAX_TASK_BYTES")
        with mock.patch.object(mcp_min, "MAX_TASK_BYTES", 32_000):   # all (~35 KB) past it: a new client
            late = (await Wire(self.server).request(task_call(5, "slow", {"seconds": 0.2, "label": "late"})))
            self.assertEqual(late["result"]["resultType"], "complete")     # a plain call

    async def test_made_up_authorization_headers_share_one_quota(self):
        # No authentication: the Authorization header is nobody's word. Before, each header was
        # an owner of its own, MAX_TASKS each: one client could be as many owners as it liked.
        http = await start_http(self.server, "127.0.0.1", 0)
        self.addAsyncCleanup(http.close)
        client = HttpClient(http.port)
        self.addAsyncCleanup(client.close)

        async def post(authorization, message):
            params = message["params"]
            headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": message["method"],
                       "Mcp-Name": params.get("name", params.get("taskId")), "Authorization": authorization}
            return (await client.post(message, headers=headers)).json()
        with mock.patch.object(mcp_min, "MAX_TASKS", 2):
            made = [(await post(f"Bearer made-up-{i}", task_call(i, "slow")))["result"] for i in (1, 2)]
            self.assertEqual([task["resultType"] for task in made], ["task", "task"])
            for i, authorization in enumerate(("Bearer made-up-3", None), 3):
                plain = (await post(authorization, task_call(i, "slow", {"seconds": 0.2, "label": "plain"})))
                self.assertEqual(plain["result"]["resultType"], "complete", (authorization, plain))
                self.assertEqual(tool_text(plain), "plain")
        # Who may see a task is still the one who made it (its header, hashed, with no auth).
        seen = await post("Bearer made-up-2", task_request(5, "tasks/get", made[0]["taskId"]))
        self.assertEqual(seen["error"]["code"], INVALID_PARAMS)
        self.assertEqual((await post("Bearer made-up-1", task_request(6, "tasks/get", made[0]["taskId"])))[
            "result"]["status"], "working")


_HELD_STORE = '''
import asyncio, mcp_min
mcp_min.TASK_AFTER, mcp_min.TASK_STALE, mcp_min.TASK_STORE_WAIT = 0.05, 1.0, 1.0
server = mcp_min.Server("held")

@server.tool(task="optional")
async def wait(ctx: mcp_min.Context, seconds: float, mark: str = "") -> str:
    if mark:    # the test's barrier: what comes next is the task's first write to the store
        open(mark, "w").close()
        await ctx.detach()
    await asyncio.sleep(seconds)
    return f"waited {seconds} s"
'''


# Another process on the machine holds the store's write lock until told (a line on stdin).
_LOCKER = '''
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
'''


@runs_beside
@needs_tasks
class TaskStoreLockTest(unittest.IsolatedAsyncioTestCase):
    """Issue 34 item 4: store calls ran on the event loop: another process holding a shared
    store's write lock for 3 s made /healthz take 2.59 s, and a second process read a task still
    running in the first as failed ("The server process running this task stopped"), its
    heartbeat having died of 'database is locked'. Real processes, a real lock."""

    async def asyncSetUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.store = os.path.join(self.tmp, "tasks.db")
        with open(os.path.join(self.tmp, "held.py"), "w") as f:
            f.write(_HELD_STORE)

    def process(self):
        process = ServerProcess(os.path.join(self.tmp, "held.py"), "--task-store", self.store)
        self.addCleanup(process.close)
        process.lines = []      # what it logs from now on, read by a thread

        def read():
            with contextlib.suppress(ValueError, OSError):     # closed by process.close()
                process.lines.extend(iter(process.proc.stderr.readline, b""))
        threading.Thread(target=read, daemon=True).start()
        return process

    async def lock(self):
        """A process that holds the store's write lock, once it said so; `release()` ends it."""
        locker = subprocess.Popen([*PYTHON, "-c", _LOCKER, self.store], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=_clean_env())

        def release():
            if locker.poll() is None:
                locker.stdin.write("\n")
                locker.stdin.close()
            self.assertEqual(locker.wait(TIMEOUT), 0)

        def end():
            if locker.poll() is None:
                locker.kill()
                locker.wait(TIMEOUT)
            locker.stdin.close()
            locker.stdout.close()
        self.addCleanup(end)
        self.assertEqual(await asyncio.wait_for(asyncio.to_thread(locker.stdout.readline), TIMEOUT), "locked\n")
        locker.release = release
        return locker

    async def call(self, process, id_, method, params, timeout=TIMEOUT):
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method,
                   "Mcp-Name": params.get("name", params.get("taskId"))}
        return (await process.client.post(modern(id_, method, params, WITH_TASKS), headers=headers,
                                          timeout=timeout)).json()

    async def status(self, process, task_id, *statuses):
        deadline = time.monotonic() + TIMEOUT
        while (task := (await self.call(process, 9, "tasks/get", {"taskId": task_id}))["result"])[
                "status"] not in statuses:
            self.assertLess(time.monotonic(), deadline, task)
            await asyncio.sleep(0.05)
        return task

    async def healthz(self, process):
        """/healthz's status, or None if it was not answered within 2 s (it takes milliseconds)."""
        with contextlib.suppress(asyncio.TimeoutError):
            return (await process.client.request("GET", "/healthz", timeout=2)).status

    async def test_a_store_another_process_holds_blocks_no_request_and_is_waited_for(self):
        one = self.process()
        locker = await self.lock()
        mark = os.path.join(self.tmp, "detaching")
        calling = asyncio.ensure_future(self.call(one, 1, "tools/call", {"name": "wait", "arguments": {
            "seconds": 0.1, "mark": mark}}))
        await until(lambda: os.path.exists(mark), "the tool made its call a task")
        self.assertEqual(await self.healthz(one), 200, "no answer while the store was held")    # before: none
        # The task's first write waits on the lock for TASK_STORE_WAIT (1 s here); then it is
        # tried again, and a warning says so.
        await until(lambda: any(b"task store is busy" in line for line in one.lines),
                    "the call waits for the store and tries again", timeout=5)
        self.assertEqual(await self.healthz(one), 200)
        self.assertIsNone(locker.poll())       # the lock is still held ...
        self.assertFalse(calling.done())       # ... and the call still waits on it
        locker.release()
        created = (await asyncio.wait_for(calling, TIMEOUT))["result"]
        self.assertEqual(created["resultType"], "task", created)
        done = await self.status(one, created["taskId"], "completed")
        self.assertEqual(done["result"]["content"][0]["text"], "waited 0.1 s")

    async def test_a_runner_held_up_by_another_process_is_not_taken_for_dead(self):
        # One after the other: two processes creating a new store at once can fail to start
        # ("database is locked", before c4c00b5 and since), which is not what this test is about.
        one, two = self.process(), self.process()
        task_id = (await self.call(one, 1, "tools/call", {"name": "wait", "arguments": {"seconds": 60}}))[
            "result"]["taskId"]
        locker = await self.lock()
        # The barrier: one's last heartbeat in the store is older than TASK_STALE (1 s), one's
        # writes waiting on the lock; before, that alone made its task read failed elsewhere.
        import sqlite3
        reading = sqlite3.connect(self.store, isolation_level=None)     # reads pass a writer's lock (WAL)
        self.addCleanup(reading.close)
        runner = json.loads(reading.execute("SELECT record FROM tasks WHERE id = ?", (task_id,)).fetchone()[0])[
            "runner"]
        await until(lambda: time.time() - reading.execute("SELECT seen FROM runners WHERE id = ?",
                                                          (runner,)).fetchone()[0] > 1.2,
                    "one's heartbeat held up past TASK_STALE", timeout=5)
        getting = asyncio.ensure_future(self.call(two, 2, "tasks/get", {"taskId": task_id}))
        if not (await asyncio.wait((getting,), timeout=3))[0]:     # (before: two waited on the lock)
            locker.release()
            self.fail(f"two did not answer while the lock was held; then: {(await getting)['result']}")
        self.assertIsNone(locker.poll())       # read while the lock was still held
        held = getting.result()["result"]
        self.assertEqual(held["status"], "working", held)    # before: failed, "...process ... stopped"
        health = await one.client.request("GET", "/healthz", timeout=2)
        self.assertEqual(health.status, 200)
        locker.release()
        self.assertEqual((await self.call(two, 3, "tasks/get", {"taskId": task_id}))["result"]["status"],
                         "working")
        # and it ends as a task does: cancelled from the other process
        await self.call(two, 4, "tasks/cancel", {"taskId": task_id})
        self.assertEqual((await self.status(one, task_id, "cancelled"))["status"], "cancelled")


@needs_tasks
class TaskStoreFileTest(unittest.TestCase):
    """Issue 34 item 5: a store file that already existed kept its mode (644, 666): every task's
    result readable, or writable, by other users, and nothing said. Now it, its -wal and its
    -shm are made 0600 and a warning says so; another user's is refused."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)

    @unittest.skipUnless(os.name == "posix", "file modes")
    def test_a_store_open_to_others_is_made_0600_and_said(self):
        path = os.path.join(self.tmp, "tasks.db")
        modes = {path: 0o644, path + "-wal": 0o666, path + "-shm": 0o604}
        for name, mode in modes.items():
            open(name, "wb").close()
            os.chmod(name, mode)
        with self.assertLogs("mcp_min", "WARNING") as said:
            store = mcp_min.TaskStore(path)
        self.addCleanup(store.db.close)
        self.assertEqual({name: os.stat(name).st_mode & 0o777 for name in modes}, dict.fromkeys(modes, 0o600))
        self.assertEqual(len(said.output), 3, said.output)
        for name, line in zip(modes, said.output):
            self.assertIn(f"{name} was open to other users: made 0600", line)
        with self.assertNoLogs("mcp_min", "WARNING"):       # a store that is its user's alone: nothing said
            mcp_min.TaskStore(path).db.close()

    @unittest.skipUnless(os.name == "posix" and os.getuid() == 0, "needs root to give a file to another user")
    def test_a_store_of_another_user_is_refused_and_serve_says_why(self):
        for part in ("", "-wal"):
            path = os.path.join(self.tmp, f"theirs{part or '-db'}.db")
            for name in {path, path + part}:
                open(name, "ab").close()
                os.chmod(name, 0o600)
            os.chown(path + part, 65534, 65534)
            with self.assertRaisesRegex(ValueError, f"^{re.escape(path + part)} belongs to another user"):
                mcp_min.TaskStore(path)
            self.assertEqual(os.stat(path + part).st_uid, 65534)    # left as it was
        with subprocess.Popen([*PYTHON, MCP_MIN, "serve", "--port", "0", "--task-store", path], cwd=HERE,
                              env=_clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) as served:
            first = served.stderr.readline()
            if "http://" in first:      # it served (before): stop it, and fail below
                served.kill()
            said = first + served.stderr.read()
            code = served.wait(TIMEOUT)
        self.assertEqual(code, 2, said)
        self.assertEqual(said.count("\n"), 1, said)       # one line, saying why
        self.assertTrue(said.startswith(f"mcp_min: {path}-wal belongs to another user"), said)


##############################################################################
# Extension: tasks in Redis (issue 42)
##############################################################################

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A real redis-server (Debian's package) on a free port of 127.0.0.1, its files in a
    temporary folder, with a password and AOF: stopped and started again on the same port, it
    has what it had."""

    PASSWORD = "s3cr*t:@/"      # URL metacharacters: the URL carries it %-encoded

    def __init__(self):
        self.dir = tempfile.mkdtemp()
        self.port = _free_port()
        self.proc = None
        self.start()

    @property
    def url(self):
        from urllib.parse import quote
        return f"redis://:{quote(self.PASSWORD, safe='')}@127.0.0.1:{self.port}/2"

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", self.dir,
             "--requirepass", self.PASSWORD, "--logfile", os.path.join(self.dir, "log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(100).startswith((b"+PONG", b"-NOAUTH")):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError("redis-server did not start")
            time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(TIMEOUT)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)
        shutil.rmtree(self.dir, True)


needs_redis = unittest.skipUnless(shutil.which("redis-server"),
                                  "needs redis-server (Debian: apt-get install redis-server)")

_REDIS_PROCESS = _TASK_PROCESS + '''
# Redis started again forgets the signs of life: each process gives one within a second or so, so
# for TASK_STALE s after Redis starts nobody is taken for dead (1 s, as above, is too close).
mcp_min.TASK_STALE = 3.0
@server.resource("note://board")
def board() -> str:
    return "the board"

@server.resource("note://end")
def end() -> str:
    return "the end"

@server.tool()
def touch(uri: str) -> str:
    server.resource_updated(uri)
    return "touched"

server.run()
'''


def _task_record(task_id, client="c", expires_in=60.0, **fields):
    now = time.time()
    return {"taskId": task_id, "status": "working", "createdAt": mcp_min._iso(now),
            "lastUpdatedAt": mcp_min._iso(now), "ttlMs": 60000, "pollIntervalMs": 500,
            "owner": "o", "client": client, "runner": "r1", "expires": now + expires_in,
            "answers": {}, **fields}


@needs_tasks
@needs_redis
class RedisStoreTest(_ModernCalls):
    """--task-store redis://...: TaskStore's six methods in a real redis-server, and several
    processes sharing it (tasks, liveness, changes, Redis stopped and started again)."""

    def setUp(self):
        self.redis = RedisServer()
        self.addCleanup(self.redis.close)

    def store(self):
        store = mcp_min.RedisTaskStore(self.redis.url)
        self.addCleanup(store.close)
        return store

    def test_a_db_out_of_range_is_refused_at_start_and_a_relay_ends_with_its_store(self):
        # A hostile read: SELECT 99's error was a warning, the store then failing each call; a
        # closed relay still published each change (twice once attached again)
        with self.assertRaisesRegex(ValueError, "DB index"):
            mcp_min.RedisTaskStore(self.redis.url.rsplit("/", 1)[0] + "/99")
        server, store = Server("relayed"), self.store()
        before = list(server.hearing)
        store.attach(server)
        self.assertEqual(len(server.hearing), len(before) + 1)
        store.close()
        self.assertEqual(server.hearing, before)

    def test_the_six_methods_with_ids_and_clients_that_hold_redis_metacharacters(self):
        store = self.store()
        hostile = "id\r\n*1\r\n$8\r\nFLUSHALL\r\n \"' {x}*?"
        client = "client\r\nDEL mcp_min:total\x00"
        record = _task_record(hostile, client)
        self.assertTrue(store.add(record))
        self.assertEqual(store.get(hostile), record)
        size = len(json.dumps(record).encode())
        self.assertEqual(store.usage(client), (1, size))
        self.assertEqual(store.usage(), (1, size))
        ended = store.change(hostile, lambda r: {**r, "status": "completed", "result": {"x": "y" * 100}})
        self.assertEqual(store.get(hostile)["status"], "completed")
        self.assertEqual(store.usage(client)[1], len(json.dumps(ended).encode()))
        self.assertEqual(store.change(hostile, lambda r: None), ended)     # no change: as it is
        self.assertIsNone(store.change("nobody's", lambda r: {**r, "status": "failed"}))
        self.assertIsNone(store.get("nobody's"))
        # RESP bulk strings: the id was data, never a command (FLUSHALL) and no key of its own
        self.assertTrue(store.add(_task_record("second")))
        self.assertEqual(store.usage(), (2, size + (store.usage()[1] - size)))
        store.beat("runner\r\nX")
        self.assertTrue(store.alive("runner\r\nX"))
        self.assertTrue(store.add(_task_record("brief", expires_in=0.3)))
        deadline = time.monotonic() + TIMEOUT
        while store.get("brief") is not None:     # Redis frees it (PXAT); the sweep, its counts
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertEqual(store.usage()[0], 2)

    def test_the_bounds_and_a_status_moving_once_hold_across_stores(self):
        stores = [self.store() for _ in range(4)]
        with mock.patch.object(mcp_min, "MAX_TASKS", 5):
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                added = list(pool.map(lambda i: stores[i % 4].add(_task_record(f"t{i}", "one")), range(20)))
        self.assertEqual(added.count(True), 5)      # counted and added at once, whoever adds
        self.assertEqual(stores[0].usage("one")[0], 5)
        winners = []

        def end(i):
            def finish(record):
                if record["status"] in mcp_min._TERMINAL:
                    return None
                return {**record, "status": "completed", "by": i}
            winners.append(stores[i].change(f"t{added.index(True)}", finish)["by"])
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(end, range(4)))
        self.assertEqual(len(set(winners)), 1, winners)     # each saw the one end that was written

    def test_a_wrong_password_is_refused_at_start_without_saying_it(self):
        wrong = self.redis.url.replace("s3cr", "guess")
        with self.assertRaises(ValueError) as refused:
            mcp_min.RedisTaskStore(wrong)
        self.assertIn(f"redis://127.0.0.1:{self.redis.port}/2", str(refused.exception))
        self.assertIn("WRONGPASS", str(refused.exception))
        self.assertNotIn("guess", str(refused.exception))

    @unittest.skipUnless(shutil.which("openssl"), "needs openssl to make a certificate")
    def test_rediss_speaks_tls_and_checks_the_certificate(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)

        def openssl(*args):
            subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True, timeout=TIMEOUT)
        # the extensions 3.13's strict checking wants (VERIFY_X509_STRICT): a CA marked so, a leaf
        # naming its issuer's key
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
                "-days", "2", "-subj", "/CN=test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                "-subj", "/CN=localhost")
        with open(os.path.join(tmp, "ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                    "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
                    "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.crt", "-days", "2", "-extfile", "ext")
        port = _free_port()
        tls = subprocess.Popen(["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
                                "--tls-cert-file", "server.crt", "--tls-key-file", "server.key",
                                "--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "no", "--save", "",
                                "--requirepass", "pw", "--dir", tmp, "--logfile", "log"],
                               cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.addCleanup(tls.wait, TIMEOUT)
        self.addCleanup(tls.kill)
        url = f"rediss://:pw@localhost:{port}/1"
        with mock.patch.dict(os.environ, {"SSL_CERT_FILE": os.path.join(tmp, "ca.crt")}):
            deadline = time.monotonic() + TIMEOUT
            while True:
                try:
                    with self.assertNoLogs("mcp_min", "WARNING"):
                        store = mcp_min.RedisTaskStore(url)
                    break
                except AssertionError:      # not listening yet
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.05)
            self.addCleanup(store.close)
            self.assertTrue(store.add(_task_record("over-tls")))
            self.assertEqual(store.get("over-tls")["taskId"], "over-tls")
            self.assertEqual(store.conn.sock.version()[:4], "TLSv")
        # A certificate no CA of ours signed, in a process of its own: once (in CI, on 3.11, cause
        # unknown) the refusal did not come in this process after the CA had been trusted in it.
        env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
        refused = subprocess.run(
            [sys.executable, "-c", "import logging, mcp_min; logging.basicConfig(); "
             f"mcp_min.RedisTaskStore({url!r}).close()"], cwd=os.path.dirname(os.path.abspath(__file__)),
            env=env, capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(refused.returncode, 0, refused.stderr)
        self.assertIn(f"The task store rediss://localhost:{port}/1 is unreachable or failing "
                      "(CERTIFICATE_VERIFY_FAILED)", refused.stderr)
        self.assertNotIn(":pw@", refused.stderr)

    def process(self, script, *extra, **env):
        process = ServerProcess("--task-store", self.redis.url, *extra, script=script, **env)
        self.addCleanup(process.close)
        return process

    async def test_processes_share_tasks_liveness_and_changes_and_outlive_redis_stopping(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        script = os.path.join(tmp, "shared.py")
        with open(script, "w") as f:
            f.write(_REDIS_PROCESS)
        n1, n2, n3 = (self.process(script, "--node", f"n{i}") for i in (1, 2, 3))
        # A task made on n1 is working on n2 (durable before n1 answered), completed on n3.
        made = (await self.call(n1, 1, "tools/call", {"name": "wait", "arguments": {"seconds": 0.8}}))["result"]
        self.assertEqual(made["resultType"], "task")
        self.assertEqual((await self.call(n2, 2, "tasks/get", {"taskId": made["taskId"]}))["result"]["status"],
                         "working")
        done = await self.status(n3, made["taskId"], "completed")
        self.assertEqual(done["result"]["content"][0]["text"], f"waited 0.8 s in {n1.proc.pid}")
        # A listen on n2 following a task on n1 hears it end (n1's change, relayed).
        followed = (await self.call(n1, 16, "tools/call", {"name": "wait", "arguments": {"seconds": 1.0}}))["result"]
        body = json.dumps(modern(2, "subscriptions/listen", {"notifications": {"taskIds": [followed["taskId"]]}},
                                 WITH_TASKS))
        task_reader, task_writer, ack = await open_listen(n2.port, body=body)
        self.addCleanup(task_writer.close)
        self.assertEqual(ack["params"]["notifications"], {"taskIds": [followed["taskId"]]})
        told = json.loads((await read_event(task_reader))["data"])
        self.assertEqual((told["method"], told["params"]["taskId"], told["params"]["status"]),
                         ("notifications/tasks", followed["taskId"], "completed"))
        # A listen on n2 (2026-07-28) and a subscription on n1 (2025-11-25) hear of a resource a
        # tool on n3 updated: once each.
        body = json.dumps(modern(1, "subscriptions/listen", {"notifications": {
            "resourceSubscriptions": ["note://board", "note://end"]}}))
        reader, writer, ack = await open_listen(n2.port, body=body)
        self.addCleanup(writer.close)
        self.assertEqual(ack["params"]["notifications"], {"resourceSubscriptions": ["note://board", "note://end"]})
        subscribed = asyncio.Queue()
        subscriber = mcp_min.Client(f"http://127.0.0.1:{n1.port}/mcp", era="handshake",
                                    on_notification=lambda method, params: subscribed.put_nowait((method, params)))
        await subscriber.connect()
        self.addAsyncCleanup(subscriber.close)
        await subscriber.subscribe("note://board")
        await subscriber.subscribe("note://end")
        await self.call(n3, 3, "tools/call", {"name": "touch", "arguments": {"uri": "note://board"}})
        heard = json.loads((await read_event(reader))["data"])
        self.assertEqual((heard["method"], heard["params"]["uri"]), ("notifications/resources/updated", "note://board"))
        self.assertEqual(await asyncio.wait_for(subscribed.get(), TIMEOUT),
                         ("notifications/resources/updated", {"uri": "note://board"}))
        # Once each, in order per process: n3 updates note://other, note://board, and last
        # note://end; n2 updates note://board between. Each hears the two boards, then the end.
        # (Across processes no order is promised: n2's board and n3's end are published by two
        # processes, so n3 updates the end once n1 has heard both boards.)
        await self.call(n3, 4, "tools/call", {"name": "touch", "arguments": {"uri": "note://other"}})
        await self.call(n3, 5, "tools/call", {"name": "touch", "arguments": {"uri": "note://board"}})
        await self.call(n2, 12, "tools/call", {"name": "touch", "arguments": {"uri": "note://board"}})
        uris = [(await asyncio.wait_for(subscribed.get(), TIMEOUT))[1]["uri"] for _ in range(2)]
        self.assertEqual(uris, ["note://board", "note://board"])
        await self.call(n3, 13, "tools/call", {"name": "touch", "arguments": {"uri": "note://end"}})
        uris = [json.loads((await read_event(reader))["data"])["params"]["uri"] for _ in range(3)]
        self.assertEqual(uris, ["note://board", "note://board", "note://end"])
        self.assertEqual(await asyncio.wait_for(subscribed.get(), TIMEOUT),
                         ("notifications/resources/updated", {"uri": "note://end"}))
        # n1 killed mid-task: n2 says failed (TASK_STALE is 1 s in the script).
        orphan = (await self.call(n1, 6, "tools/call", {"name": "wait", "arguments": {"seconds": 60}}))["result"]
        os.kill(n1.proc.pid, signal.SIGKILL)
        n1.proc.wait(TIMEOUT)
        failed = await self.status(n2, orphan["taskId"], "failed")
        self.assertEqual(failed["error"]["message"], "The server process running this task stopped")
        # Redis stopped: a clear error naming the store (not its password); n2 serves the rest.
        # A task on n3 ends while it is down: its end is written once Redis is back.
        across = (await self.call(n3, 14, "tools/call", {"name": "wait", "arguments": {"seconds": 1.5}}))["result"]
        self.redis.stop()
        lost = await self.call(n2, 7, "tasks/get", {"taskId": made["taskId"]})
        self.assertEqual(lost["error"]["code"], mcp_min.INTERNAL_ERROR)
        self.assertIn(f"The task store redis://127.0.0.1:{self.redis.port}/2 is unreachable",
                      lost["error"]["message"])
        self.assertNotIn("s3cr", json.dumps(lost))
        call = await self.call(n2, 8, "tools/call", {"name": "wait", "arguments": {"seconds": 5}})
        self.assertIn("The task store", call["error"]["message"])
        self.assertEqual((await self.call(n2, 10, "tools/call", {"name": "touch", "arguments": {"uri": "x"}}))
                         ["result"]["content"][0]["text"], "touched")
        # Started again (AOF): the first task is still there, and n2 goes on without a restart.
        self.redis.start()
        deadline = time.monotonic() + TIMEOUT   # (the store is not asked for a second after a failure)
        while "error" in (again := await self.call(n2, 11, "tasks/get", {"taskId": made["taskId"]})):
            self.assertLess(time.monotonic(), deadline, again)
            await asyncio.sleep(0.1)
        self.assertEqual(again["result"]["status"], "completed", again)
        self.assertEqual(again["result"]["result"], done["result"])
        ended = await self.status(n2, across["taskId"], "completed")
        self.assertEqual(ended["result"]["content"][0]["text"], f"waited 1.5 s in {n3.proc.pid}")
        # The relays subscribe again (n2 and n3: n1 is gone), and n2's listen hears n3 once more.
        redis = mcp_min._Resp(mcp_min._RedisUrl(self.redis.url))
        self.addCleanup(redis.close)
        await until(lambda: redis.call("PUBSUB", "NUMSUB", "mcp_min:changes:2")[1] == 2,
                    "both relays subscribed again")
        await self.call(n3, 15, "tools/call", {"name": "touch", "arguments": {"uri": "note://end"}})
        self.assertEqual(json.loads((await read_event(reader))["data"])["params"]["uri"], "note://end")


@needs_tasks
@needs_redis
class RedisResultBoundTest(TaskResultBoundTest):
    """TaskResultBoundTest's bounds (a huge result, a client's share, everyone's), the tasks kept
    in a real redis-server."""

    async def asyncSetUp(self):
        redis = RedisServer()
        self.addCleanup(redis.close)    # the very last: the works' last words are written first
        await super().asyncSetUp()
        self.server.task_store = mcp_min.RedisTaskStore(redis.url)
        self.addCleanup(self.server.task_store.close)


@needs_tasks
@needs_redis
class RedisTasksTest(TasksTest):
    """TasksTest whole (a call becomes a task; tasks/get, update, cancel; the listens that follow
    tasks), the tasks kept in a real redis-server: the same guarantees as SQLite's."""

    async def asyncSetUp(self):
        redis = RedisServer()
        self.addCleanup(redis.close)    # the very last: the works' last words are written first
        await super().asyncSetUp()
        self.server.task_store = mcp_min.RedisTaskStore(redis.url)
        # what TasksTest reads of SQLite's rows (who owns a task): all that Redis holds
        self.server.task_store._rows = functools.partial(_redis_holds, self.server.task_store)


def _redis_holds(store, *_):
    """Every key the store holds in Redis, with its value: [(key, value)]. Under the store's lock:
    its own thread may be using the connection (a sign of life, a task's end), and two users of one
    connection read each other's replies."""
    held = []
    with store.lock:
        conn = store._connection()
        for key in conn.call("KEYS", "*"):
            kind = conn.call("TYPE", key)
            read = {"string": ["GET"], "hash": ["HGETALL"],
                    "zset": ["ZRANGE", 0, -1, "WITHSCORES"]}[kind]
            held.append((key, conn.call(read[0], key, *read[1:])))
    return held


class _FakeRedis:
    """A server socket that answers every command with `answer` (after `delay` s), or nothing."""

    def __init__(self, answer, delay=0.0):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.answer, self.delay, self.conns = answer, delay, []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            with contextlib.suppress(OSError):
                while conn.recv(65536):
                    time.sleep(self.delay)
                    if self.answer is not None:
                        conn.sendall(self.answer)

    def close(self):
        self.sock.close()
        for conn in self.conns:
            conn.close()


@needs_tasks
class RedisGarbledTest(unittest.TestCase):
    """A Redis that answers garbage, too much, or too slowly (a fake server socket, no
    redis-server): a clear error naming the store, never its password, within REDIS_TIMEOUT."""

    def fake(self, answer, delay=0.0):
        fake = _FakeRedis(answer, delay)
        self.addCleanup(fake.close)
        return f"redis://:hunter2@127.0.0.1:{fake.port}/0"

    def refused(self, url):
        with self.assertLogs("mcp_min", "WARNING") as said:
            store = mcp_min.RedisTaskStore(url)     # out of reach at start: said, and served on
        self.addCleanup(store.close)
        store.retry_at = 0.0
        with self.assertRaises(McpError) as failed:
            store.get("x")
        self.assertEqual(failed.exception.code, mcp_min.INTERNAL_ERROR)
        for text in (failed.exception.message, *said.output):
            self.assertNotIn("hunter2", text)
        return failed.exception.message

    def test_garbage(self):
        message = self.refused(self.fake(b"HTTP/1.1 400 Bad Request\r\n\r\n"))
        self.assertRegex(message, r"^The task store redis://127\.0\.0\.1:\d+/0 is unreachable or failing "
                                  r"\(it answered something that is not RESP\)")

    def test_an_answer_past_the_bound(self):
        message = self.refused(self.fake(b"$%d\r\n" % (mcp_min.MAX_REDIS_REPLY + 1)))
        self.assertIn("not RESP, or too much", message)

    def test_an_answer_past_the_bound_in_many_parts_or_of_the_wrong_kind(self):
        # A hostile read: the bound was per string, so an array of strings each under it took
        # 1.2 GB; GET answered by an array, EXEC by a number, passed (EXEC's as done)
        def read(data):
            conn = object.__new__(mcp_min._Resp)    # a connection whose answer has all come
            conn.buffer, conn.at, conn.left = bytearray(data), 0, 0
            return conn.read(time.monotonic() + 1)
        with mock.patch.object(mcp_min, "MAX_REDIS_REPLY", 1000):
            self.assertEqual(read(b"*2\r\n$400\r\n" + b"x" * 400 + b"\r\n:7\r\n"), [b"x" * 400, 7])
            for data in (b"*3\r\n" + (b"$400\r\n" + b"x" * 400 + b"\r\n") * 3,   # 1,200 bytes
                         b"*100\r\n" + b":1\r\n" * 100):                       # 100 items
                with self.assertRaisesRegex(mcp_min._Garbled, "or too much"):
                    read(data)
        with self.assertRaisesRegex(mcp_min._Garbled, "GET with no string"):
            mcp_min._string([b"x"], "GET")
        with self.assertRaisesRegex(mcp_min._Garbled, "EXEC with no list"):
            mcp_min._executed(1)
        self.assertEqual((mcp_min._executed(None), mcp_min._executed([b"OK"])), (False, True))

    def test_a_slow_answer(self):
        with mock.patch.object(mcp_min, "REDIS_TIMEOUT", 0.3):
            started = time.monotonic()
            message = self.refused(self.fake(None))     # it reads, and never answers
            self.assertLess(time.monotonic() - started, 3.0)
        self.assertIn("(no answer within 0.3 s)", message)

    def test_nobody_listening(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.assertIn("(connection refused)", self.refused(f"redis://:hunter2@127.0.0.1:{port}/0"))

    def test_urls(self):
        where = mcp_min._RedisUrl("rediss://user:p%40ss@cache.example:6380/3")
        self.assertEqual((where.tls, where.host, where.port, where.db, where.user, where.password),
                         (True, "cache.example", 6380, 3, "user", "p@ss"))
        self.assertEqual(where.name, "rediss://cache.example:6380/3")
        # pub/sub knows no DB: a deployment on DB 3 hears nothing of one on DB 2 of that Redis
        self.assertEqual(where.channel, "mcp_min:changes:3")
        self.assertEqual(mcp_min._RedisUrl("redis://secret@h").password, "secret")
        self.assertEqual(mcp_min._RedisUrl("redis://[::1]:7000/1").name, "redis://[::1]:7000/1")
        for bad in ("http://h", "redis://h/zero", "redis://:pw@h:99999/0", "redis://:pw@h:0/0",
                    "redis://:pw@" + "x" * 70 + ".example/0"):
            with self.assertRaises(ValueError) as refused:
                mcp_min._RedisUrl(bad)
            self.assertNotIn("pw", str(refused.exception))


##############################################################################
# Extension: skills (SEP-2640)
##############################################################################

@needs_skills
class SkillsTest(unittest.IsolatedAsyncioTestCase):
    """Server.skills: a folder of skills as resources, listed with sizes and digests; nothing
    outside the folder can be read; the client checks what it loads."""

    SKILL = "---\nname: {name}\ndescription: Does {name} things.\nmetadata:\n  version: \"2\"\n---\n# {name}\n"

    async def asyncSetUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.outside = os.path.join(self.tmp, "secret.txt")
        with open(self.outside, "w") as f:
            f.write("not for clients")
        root = self.root = os.path.join(self.tmp, "skills")
        for path, data in (("good/SKILL.md", self.SKILL.format(name="good")), ("good/sub/notes.txt", "notes"),
                           ("good/sub/blob.bin", b"\xff\x00\xfe"), ("good/.hidden", "hidden"),
                           ("misnamed/SKILL.md", self.SKILL.format(name="other")),
                           ("broken/SKILL.md", "---\nname: broken\ndescription: [a, list]\n---\n"),
                           ("latin/SKILL.md", b"---\nname: latin\ndescription: caf\xe9\n---\n"),
                           ("stray.txt", "not in a skill")):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode())
        os.symlink(self.outside, os.path.join(root, "good", "link-out"))
        os.makedirs(os.path.join(root, "good", ".secret"))
        with open(os.path.join(root, "good", ".secret", "key"), "w") as f:
            f.write("hidden by its folder")
        os.symlink(os.path.join(root, "good", ".secret", "key"), os.path.join(root, "good", "key.md"))
        os.symlink(self.tmp, os.path.join(root, "good", "dir-out"))
        self.server = Server("skilled")
        with self.assertLogs("mcp_min", "WARNING") as logged:
            self.server.skills(root)
        self.assertEqual(len(logged.output), 3)     # misnamed, broken, not UTF-8: not served, said why
        self.wire = Wire(self.server)

    async def test_listed_read_and_escapes_refused(self):
        found = (await self.wire.request(modern(1, "server/discover")))["result"]["capabilities"]
        self.assertEqual(found["extensions"], {"io.modelcontextprotocol/skills": {"directoryRead": True}})
        listed = (await self.wire.request(modern(2, "skills/list")))["result"]
        self.assertEqual((listed["ttlMs"], listed["cacheScope"]), (0, "private"))
        [skill] = listed["skills"]
        self.assertEqual(skill["frontmatter"], {"name": "good", "description": "Does good things.",
                                                "metadata": {"version": "2"}})
        files = {f["uri"]: f for f in skill["resources"]}
        self.assertEqual(sorted(files), ["skill://good/SKILL.md", "skill://good/sub/blob.bin",
                                         "skill://good/sub/notes.txt"])
        self.assertEqual(files["skill://good/sub/blob.bin"], {"uri": "skill://good/sub/blob.bin", "size": 3,
                         "digest": "sha256:" + __import__("hashlib").sha256(b"\xff\x00\xfe").hexdigest()})
        read = (await self.wire.request(modern(3, "resources/read", {"uri": "skill://good/sub/blob.bin"})))["result"]
        self.assertEqual(base64.b64decode(read["contents"][0]["blob"]), b"\xff\x00\xfe")
        listing = (await self.wire.request(modern(4, "resources/list")))["result"]["resources"]
        manifest = next(r for r in listing if r["uri"] == "skill://good/SKILL.md")
        self.assertEqual((manifest["name"], manifest["description"], manifest["mimeType"]),
                         ("good", "Does good things.", "text/markdown"))
        inside = (await self.wire.request(modern(5, "resources/directory/read", {"uri": "skill://good"})))["result"]
        self.assertEqual([(r["uri"], r["mimeType"]) for r in inside["resources"]], [
            ("skill://good/sub", "inode/directory"), ("skill://good/SKILL.md", "text/markdown")])
        got = (await self.wire.request(modern(6, "skills/get", {"uri": "skill://good/SKILL.md"})))["result"]
        self.assertEqual(got["skill"], skill)
        for i, uri in enumerate(("skill://good/../../secret.txt", "skill://good/%2e%2e/%2e%2e/secret.txt",
                                 "skill://good/link-out", "skill://good/dir-out/secret.txt", self.outside,
                                 "skill:///" + self.outside, "skill://good/.hidden", "skill://stray.txt",
                                 "skill://misnamed/SKILL.md", "skill://good", "skill://good/sub",
                                 "skill://good/key.md", "skill://good/.secret/key"), 10):
            error = (await self.wire.request(modern(i, "resources/read", {"uri": uri})))["error"]
            self.assertEqual(error["code"], INVALID_PARAMS, uri)
        for i, (method, uri) in enumerate((("resources/directory/read", "skill://good/SKILL.md"),
                                           ("resources/directory/read", "skill://good/dir-out"),
                                           ("resources/directory/read", "skill://misnamed"),
                                           ("skills/get", "skill://good/sub/notes.txt")), 30):
            self.assertEqual((await self.wire.request(modern(i, method, {"uri": uri})))["error"]["code"],
                             INVALID_PARAMS, uri)

    async def test_the_client_checks_what_it_loads(self):
        async with mcp_min.Client(self.server) as client:
            [skill] = await client.list_skills()
            self.assertIn("# good", await client.load_skill(skill))
            self.assertIn("# good", await client.load_skill("skill://good/SKILL.md"))
            self.assertEqual(await client.read_skill_file(skill, "sub/notes.txt"), b"notes")
            for uri in ("skill://good/.hidden", "skill://misnamed/SKILL.md"):
                with self.assertRaisesRegex(McpError, "does not list it"):
                    await client.read_skill_file(skill, uri)
            with self.assertRaisesRegex(McpError, "front matter"):
                await client.load_skill({**skill, "frontmatter": {**skill["frontmatter"], "name": "evil"}})
            with self.assertRaisesRegex(McpError, "does not list it"):     # unchecked, yet inside it
                await client.read_skill_file({**skill, "resources": "dynamic"}, "../misnamed/SKILL.md")
            self.assertEqual(await client.read_skill_file({**skill, "resources": "dynamic"}, "sub/notes.txt"),
                             b"notes")
            with open(os.path.join(self.root, "good", "sub", "notes.txt"), "w") as f:
                f.write("NOTES")        # same size, another digest: changed since it was listed
            with self.assertRaisesRegex(McpError, "size or sha256"):
                await client.read_skill_file(skill, "sub/notes.txt")
        async with mcp_min.Client(Server("none")) as client:
            self.assertEqual(await client.list_skills(), [])

    def test_front_matter_as_yaml_reads_it(self):
        read = mcp_min._front_matter
        self.assertEqual(read("---\nname: a\nn: 12\nf: 1.5\nx: 0x1f\no: 0o17\nt: true\nF: False\nz: ~\ne:\n"
                              "s: 'it''s'\nd: \"a\\tb\"  # comment\np: plain # comment\nhash: C#\nm:\n  k: v\n"
                              "  q: \"1\"\n---\nbody"),
                         {"name": "a", "n": 12, "f": 1.5, "x": 31, "o": 15, "t": True, "F": False, "z": None,
                          "e": None, "s": "it's", "d": "a\tb", "p": "plain", "hash": "C#",
                          "m": {"k": "v", "q": "1"}})
        self.assertEqual(read("\ufeff---\r\nname: a\r\n---\r\n"), {"name": "a"})
        # YAML's white space is space and tab: what Python's strip() takes besides is content
        self.assertEqual(read("---\nd: PDFs\xa0# not a comment\ne: \u3000x\n---\n"),
                         {"d": "PDFs\xa0# not a comment", "e": "\u3000x"})
        for unread in ("no front matter", "---\nname: a\n", "---\nlist:\n  - a\n---\n", "---\nk: [1]\n---\n",
                       "---\nk: |\n  text\n---\n", "---\nk: &a x\n---\n", "---\nk: a: b\n---\n",
                       "---\nk: v\nk: w\n---\n", "---\n  k: v\n---\n", "---\nm:\n  a:\n    b: c\n---\n",
                       "---\nk: .inf\n---\n", "---\nk:v\n---\n", "---\nk: \"\\x41\"\n---\n",
                       "---\nk: 1e999\n---\n", "---\nk: 1234567890123456\n---\n", "---\n1: a\n---\n",
                       "---\ntrue: a\n---\n", "---\n\xa0k: v\n---\n", "---\nk:\tv\n---\n",
                       "---\nk: v\x0b\n---\n", "---\nk: a\x00b\n---\n"):
            self.assertIsNone(read(unread), unread)


@needs_skills
class SkillsFrontMatterTest(unittest.TestCase):
    """Front matter: what a fuzzer found (issue 34 F)."""

    def test_front_matter_with_a_bare_cr_is_not_read(self):
        # Issue 34 item 20: YAML 1.2 refuses a bare CR; it was read as part of a value.
        read = mcp_min._front_matter
        for text in ("---\nname: a\rb\n---\n", "---\nname: a\ndescription: b\r\n---\n".replace("\r\n", "\r\r\n"),
                     "---\nname: a\rdescription: b\n---\n"):
            self.assertIsNone(read(text), repr(text))
        self.assertEqual(read("---\r\nname: a\r\ndescription: b c\r\n---\r\n"), {"name": "a", "description": "b c"})
        with tempfile.TemporaryDirectory() as root:     # as a skill: not served, and said why
            for name, description in (("cr", "a\rb"), ("fine", "a b")):
                os.makedirs(os.path.join(root, name))
                with open(os.path.join(root, name, "SKILL.md"), "w", newline="") as f:
                    f.write(f"---\nname: {name}\ndescription: {description}\n---\n")
            server = Server("s")
            with self.assertLogs("mcp_min", "WARNING") as logged:
                server.skills(root)
        self.assertEqual(sorted(mcp_min._skills(server).entries), ["skill://fine/SKILL.md"])
        self.assertIn("skill://cr is not served", logged.output[0])


@needs_skills
class SkillsSwapTest(unittest.IsolatedAsyncioTestCase):
    """Skill files read only if still the file listed: not through a link or hard link put in
    its place, never a FIFO; a tree too deep is cut, not fatal."""

    SKILL = "---\nname: swap\ndescription: Swaps.\n---\n# swap\n"

    async def asyncSetUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root, self.outside = os.path.join(self.tmp, "skills"), os.path.join(self.tmp, "outside")
        for folder, name, text in ((self.root, "swap/SKILL.md", self.SKILL), (self.root, "swap/refs/doc.md", "inside"),
                                   (self.root, "swap/notes.md", "inside"), (self.outside, "doc.md", "SECRET doc"),
                                   (self.outside, "notes.md", "SECRET notes")):
            os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)

    async def test_a_folder_or_file_swapped_for_a_link_after_listing_is_not_read(self):
        # Issue 34 item 6: O_NOFOLLOW guarded the last component only: swap/refs replaced by a
        # symlink to a folder outside served its doc.md; a hard link in a file's place too.
        server = Server("skilled")
        server.skills(self.root)
        wire = Wire(server)
        for i, uri in enumerate(("skill://swap/refs/doc.md", "skill://swap/notes.md")):
            read = await wire.request(modern(i, "resources/read", {"uri": uri}))
            self.assertEqual(read["result"]["contents"][0]["text"], "inside")
        shutil.rmtree(os.path.join(self.root, "swap", "refs"))
        os.symlink(self.outside, os.path.join(self.root, "swap", "refs"))
        os.remove(os.path.join(self.root, "swap", "notes.md"))
        os.link(os.path.join(self.outside, "notes.md"), os.path.join(self.root, "swap", "notes.md"))
        for i, uri in enumerate(("skill://swap/refs/doc.md", "skill://swap/notes.md"), 10):
            with self.subTest(uri=uri):
                answer = await wire.request(modern(i, "resources/read", {"uri": uri}))
                self.assertNotIn("SECRET", json.dumps(answer))
                self.assertIn("replaced since it was listed", answer["error"]["message"])

    def test_a_file_swapped_for_a_fifo_is_an_error_at_once(self):
        # Issue 34 item 7: the read blocked in open() until someone wrote to the pipe (no answer,
        # a worker thread held). A real server process: before the fix it hangs, and is killed.
        process = StdioProcess(options=("--skills", self.root))
        self.addCleanup(process.kill)
        process.send(modern(1, "skills/list"))
        self.assertEqual(len(process.read()["result"]["skills"]), 1)
        os.remove(os.path.join(self.root, "swap", "notes.md"))
        os.mkfifo(os.path.join(self.root, "swap", "notes.md"))
        started = time.monotonic()
        process.send(modern(2, "resources/read", {"uri": "skill://swap/notes.md"}))
        answer = process.read(timeout=TIMEOUT)
        self.assertLess(time.monotonic() - started, 5)
        self.assertIn("replaced since it was listed", answer["error"]["message"])
        process.send(modern(3, "resources/read", {"uri": "skill://swap/SKILL.md"}))     # and it goes on
        self.assertEqual(process.read()["result"]["contents"][0]["text"], self.SKILL)

    def test_a_tree_1100_folders_deep_starts_with_a_warning(self):
        # Issue 34 item 8: os.walk recursed to the bottom: RecursionError, the server did not start.
        # Made and removed a folder at a time, relative to the one above (dir_fd): paths from
        # the root would cost the depth squared, and shutil.rmtree recurses as deep as the tree.
        opened = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
        here = os.open(os.path.join(self.root, "swap"), opened)
        for depth in range(1, 1101):
            os.mkdir("d", dir_fd=here)
            below = os.open("d", opened, dir_fd=here)
            os.close(here)
            here = below
            if depth in (3, 30):
                os.close(os.open(f"at{depth}.txt", os.O_WRONLY | os.O_CREAT, dir_fd=here))

        def remove(here):
            for _ in range(1100):
                above = os.open("..", opened, dir_fd=here)
                for name in os.listdir(here):
                    os.unlink(name, dir_fd=here)
                os.close(here)
                os.rmdir("d", dir_fd=above)
                here = above
            os.close(here)
        self.addCleanup(remove, here)
        server = Server("deep")
        started = time.monotonic()
        with self.assertLogs("mcp_min", "WARNING") as logged:
            server.skills(self.root)
        self.assertLess(time.monotonic() - started, 5)
        self.assertIn("MAX_SKILL_DEPTH", logged.output[0])
        self.assertEqual(list(mcp_min._skills(server).entries), ["skill://swap/SKILL.md"])
        self.assertIn("skill://swap/d/d/d/at3.txt", server.resources)
        self.assertFalse([uri for uri in server.resources if uri.endswith("at30.txt")])


@needs_skills
@unittest.skipUnless(hasattr(os, "O_NOFOLLOW") and os.open in os.supports_dir_fd,
                     "opening a name at a time (dir_fd, O_NOFOLLOW) is POSIX's")
class SkillsLinkOnThePathTest(unittest.IsolatedAsyncioTestCase):
    """Issue 39 item 11: ext4 gives a freed inode out again at once, so a file outside the root
    may have the inode a skill file was listed with; a folder on its path swapped for a link to
    the outside then served it (O_NOFOLLOW guards a path's last name alone)."""

    async def test_a_link_on_the_path_to_a_file_with_the_listed_inode_is_not_followed(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        root, outside = os.path.join(tmp, "skills"), os.path.join(tmp, "outside")
        os.makedirs(os.path.join(root, "swap", "refs"))
        os.makedirs(outside)
        for name, text in (("SKILL.md", SkillsSwapTest.SKILL), ("refs/doc.md", "inside")):
            with open(os.path.join(root, "swap", name), "w") as f:
                f.write(text)
        server = Server("skilled")
        server.skills(root)
        wire = Wire(server)
        read = await wire.request(modern(1, "resources/read", {"uri": "skill://swap/refs/doc.md"}))
        self.assertEqual(read["result"]["contents"][0]["text"], "inside")
        # The inode reused, made certain: the listed file itself moved out (its inode goes with
        # it) and rewritten; then its folder swapped for a link to where it now is.
        listed = os.stat(os.path.join(root, "swap", "refs", "doc.md")).st_ino
        os.rename(os.path.join(root, "swap", "refs", "doc.md"), os.path.join(outside, "doc.md"))
        with open(os.path.join(outside, "doc.md"), "w") as f:
            f.write("SECRET")
        self.assertEqual(os.stat(os.path.join(outside, "doc.md")).st_ino, listed)
        os.rmdir(os.path.join(root, "swap", "refs"))
        os.symlink(outside, os.path.join(root, "swap", "refs"))
        answer = await wire.request(modern(2, "resources/read", {"uri": "skill://swap/refs/doc.md"}))
        self.assertNotIn("SECRET", json.dumps(answer))
        self.assertIn("replaced since it was listed", answer["error"]["message"])
        # and the skill's other files are read as before
        read = await wire.request(modern(3, "resources/read", {"uri": "skill://swap/SKILL.md"}))
        self.assertEqual(read["result"]["contents"][0]["text"], SkillsSwapTest.SKILL)


##############################################################################
# Extension: MCP Apps
##############################################################################

needs_apps = extension("_add_app", "MCP Apps")


@needs_apps
class AppsTest(unittest.IsolatedAsyncioTestCase):
    """MCP Apps (SEP-1865): a ui:// page declared once, with the spec's mimeType and _meta.ui on
    the listing and on resources/read's contents; tools linked to it by _meta.ui.resourceUri and
    visibility; the extension in the server's capabilities; a link to no page refused."""

    PAGE = "<!DOCTYPE html><html><body><p>users</p></body></html>"
    MIME = "text/html;profile=mcp-app"

    def make(self):
        server = Server("apps")

        @server.tool(ui="ui://users/table")     # before its page: checked when serving starts
        def users() -> list[str]:
            """The users."""
            return ["Ada", "Grace"]

        @server.tool(visibility=["app"], meta={"ui": {"x": 1}, "other": 2})
        def refresh() -> str:
            return "ok"
        self.author_meta = {"ui": {"x": 1}, "other": 2}
        server.app("ui://users/table", self.PAGE, csp={"connectDomains": ["https://api.example.com"]},
                   permissions=["clipboardWrite"], domain="users.example.com", prefers_border=False)
        return server

    async def test_page_and_tools_carry_the_specs_meta(self):
        server = self.make()
        async with mcp_min.Client(server) as client:
            self.assertEqual(client.server_capabilities["extensions"],
                             {"io.modelcontextprotocol/ui": {"mimeTypes": [self.MIME]}})
            tools = {tool["name"]: tool for tool in await client.list_tools()}
            # the host hides an app-only tool from its model (the spec: Host MUST NOT include
            # it in the agent's tool list); the server lists every tool, with its visibility
            self.assertEqual(tools["users"]["_meta"], {"ui": {"resourceUri": "ui://users/table"},
                                                       "ui/resourceUri": "ui://users/table"})
            self.assertEqual(tools["refresh"]["_meta"], {"ui": {"x": 1, "visibility": ["app"]},
                                                         "other": 2})
            [listed] = await client.list_resources()
            ui = {"csp": {"connectDomains": ["https://api.example.com"]},
                  "permissions": {"clipboardWrite": {}}, "domain": "users.example.com",
                  "prefersBorder": False}
            self.assertEqual(listed, {"uri": "ui://users/table", "name": "users/table",
                                      "mimeType": self.MIME, "_meta": {"ui": ui}})
            [item] = (await client.read_resource("ui://users/table"))["contents"]
            self.assertEqual(item, {"uri": "ui://users/table", "mimeType": self.MIME,
                                    "text": self.PAGE, "_meta": {"ui": ui}})
            result = await client.call_tool("users", {})     # data for the page, text for a model
            self.assertEqual(result["structuredContent"], {"result": ["Ada", "Grace"]})
            self.assertEqual(result["content"][0]["text"], '["Ada", "Grace"]')
        self.assertEqual(self.author_meta, {"ui": {"x": 1}, "other": 2})    # theirs, untouched

    async def test_a_decorated_function_makes_the_page(self):
        server = Server("apps")

        @server.app("ui://clock", prefers_border=True)
        def clock() -> str:
            """A clock."""
            return "<p>12:00</p>"

        @server.app("ui://later")
        async def later() -> str:
            return "<p>later</p>"
        self.assertEqual(clock(), "<p>12:00</p>")   # the function, unchanged
        async with mcp_min.Client(server) as client:
            listed = {r["uri"]: r for r in await client.list_resources()}
            self.assertEqual(listed["ui://clock"], {"uri": "ui://clock", "name": "clock",
                                                    "description": "A clock.", "mimeType": self.MIME,
                                                    "_meta": {"ui": {"prefersBorder": True}}})
            self.assertNotIn("_meta", listed["ui://later"])
            [item] = (await client.read_resource("ui://later"))["contents"]
            self.assertEqual(item, {"uri": "ui://later", "mimeType": self.MIME, "text": "<p>later</p>"})

    async def test_a_tool_whose_page_is_never_declared_is_refused(self):
        server = Server("apps")
        server.tool("show", ui="ui://users/gone")(lambda: "x")  # not refused yet: the page may follow
        with self.assertRaisesRegex(ValueError, r"tool 'show': ui='ui://users/gone' names no app page"):
            await mcp_min.Client(server).connect()
        with self.assertRaisesRegex(ValueError, "ui://users/gone"):
            await start_http(server, "127.0.0.1", 0)
        server.app("ui://users/gone", self.PAGE)        # declared after all: served
        async with mcp_min.Client(server) as client:
            self.assertEqual(len(await client.list_tools()), 1)

            def other() -> str:
                return "y"
            # once serving, at once; and the tool is not added
            with self.assertRaisesRegex(ValueError, "tool 'other': ui='ui://nowhere' names no app page"):
                server.tool(ui="ui://nowhere")(other)
            self.assertEqual([t["name"] for t in await client.list_tools()], ["show"])
            # nor does it replace one of its name: the tool that works stays (hostile read: it
            # was gone, tools/call then -32601)
            with self.assertRaisesRegex(ValueError, "names no app page"):
                server.tool("show", ui="ui://users/typo")(other)
            self.assertEqual((await client.call_tool("show", {}))["content"][0]["text"], "x")
            # a resource that is no app page is no page to link (resources/read would give no
            # mimeType the host renders)
            server.resource("ui://plain")(lambda: "<p>plain</p>")
            with self.assertRaisesRegex(ValueError, "tool 'plainly': ui='ui://plain' names no app page"):
                server.tool("plainly", ui="ui://plain")(other)
            server.remove_resource("ui://plain")
            # a page removed while serving: its tool stays (the host finds no page: -32002), and
            # the tools added later are checked alone
            server.remove_resource("ui://users/gone")
            server.app("ui://users/new", self.PAGE)
            server.tool("shown", ui="ui://users/new")(other)
            self.assertEqual([t["name"] for t in await client.list_tools()], ["show", "shown"])
            with self.assertRaises(McpError) as gone:
                await client.read_resource("ui://users/gone")
            self.assertEqual(gone.exception.code, INVALID_PARAMS)   # 2026-07-28's (-32002 before)

    def test_bad_options_are_refused_at_registration(self):
        server = Server("apps")
        fn = lambda: "x"    # noqa: E731
        for options, message in (({"ui": "https://example.com/page"}, "ui:// URI"),
                                 ({"ui": 3}, "ui:// URI"),
                                 ({"ui": "ui://rows/{id}"}, "no {variables}"),
                                 ({"visibility": ["agent"]}, "'model' and/or 'app'"),
                                 ({"visibility": []}, "'model' and/or 'app'"),
                                 ({"visibility": None}, "'model' and/or 'app'"),
                                 ({"visibility": [["app"]]}, "'model' and/or 'app'")):
            with self.assertRaisesRegex(ValueError, message, msg=options):
                server.tool("t", **options)(fn)
        with self.assertRaisesRegex(TypeError, "the spec's object"):
            server.tool("t", visibility=["app"], meta={"ui": "x"})(fn)
        for args, options, message in ((("https://x/page", self.PAGE), {}, "ui:// URI"),
                                       (("ui://{id}", self.PAGE), {}, "no {variables}"),
                                       (("ui://p", self.PAGE), {"csp": {"connect": ["x"]}}, "connectDomains"),
                                       (("ui://p", self.PAGE), {"csp": {"connectDomains": "https://x"}},
                                        "lists of origins"),
                                       (("ui://p", self.PAGE), {"permissions": ["camra"]}, "'camra'"),
                                       (("ui://p", "page.html"), {}, "its HTML")):
            with self.assertRaisesRegex(ValueError, message, msg=args):
                server.app(*args, **options)
        # csp's entries are origins: what a host joins into its CSP header stays one source each
        for origin in ("https://api.example.com; script-src *", "'unsafe-eval'", "*", "", "a b",
                       "https://a.example.com\n", "https://a.example.com/path", 5):
            with self.assertRaisesRegex(ValueError, "is not an origin", msg=origin):
                server.app("ui://p", self.PAGE, csp={"connectDomains": ["https://ok.example.com",
                                                                        origin]})
        for options, message in (({"prefers_border": "false"}, "True or False"),
                                 ({"domain": 5}, "domain is a str")):
            with self.assertRaisesRegex(TypeError, message, msg=options):
                server.app("ui://p", self.PAGE, **options)
        with self.assertRaisesRegex(TypeError, "a str of HTML"):
            server.app("ui://p", b"<p>bytes</p>")
        self.assertEqual((server.tools, server.resources), ({}, {}))

    async def test_a_server_without_apps_declares_nothing(self):
        server = Server("plain")
        server.tool("t")(lambda: "x")
        async with mcp_min.Client(server) as client:
            self.assertNotIn("extensions", client.server_capabilities)
        self.assertNotIn("apps", server.extensions)
        # visibility= alone shows no page: no capability either; the origins wildcard and
        # duplicates read as the spec has them
        server.tool("hidden", visibility=["app", "app"])(lambda: "x")
        async with mcp_min.Client(server) as client:
            self.assertNotIn("extensions", client.server_capabilities)
            tools = {tool["name"]: tool for tool in await client.list_tools()}
            self.assertEqual(tools["hidden"]["_meta"], {"ui": {"visibility": ["app"]}})
        server.app("ui://p", self.PAGE, csp={"resourceDomains": ["https://*.example.com:8443"]})
        async with mcp_min.Client(server) as client:
            self.assertIn("io.modelcontextprotocol/ui", client.server_capabilities["extensions"])

    async def test_the_example_over_http(self):
        # examples/user_table_app.py, served over Streamable HTTP, to a client of the handshake era
        import importlib
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        sys.path.insert(0, os.path.join(HERE, "examples"))
        self.addCleanup(sys.path.remove, os.path.join(HERE, "examples"))
        user_store = importlib.import_module("user_store")
        saved = user_store.DEFAULT_DB, user_store.store
        user_store.DEFAULT_DB, user_store.store = os.path.join(tmp, "users.db"), None

        def restore():
            if user_store.store:
                user_store.store.db.close()
            user_store.DEFAULT_DB, user_store.store = saved
        self.addCleanup(restore)
        example = importlib.import_module("user_table_app")
        http = await start_http(example.server, "127.0.0.1", 0)
        self.addAsyncCleanup(http.close)
        url = f"http://127.0.0.1:{http.port}/mcp"
        async with mcp_min.Client(url, era="handshake", timeout=TIMEOUT) as client:
            self.assertIn("io.modelcontextprotocol/ui", client.server_capabilities["extensions"])
            tools = {tool["name"]: tool.get("_meta") for tool in await client.list_tools()}
            self.assertEqual(tools, {"getUsers": {"ui": {"resourceUri": "ui://users/table"},
                                                  "ui/resourceUri": "ui://users/table"},
                                     "addUser": None, "deleteUser": {"ui": {"visibility": ["model"]}}})
            [page] = (await client.read_resource("ui://users/table"))["contents"]
            self.assertEqual(page["mimeType"], self.MIME)
            self.assertEqual(page["_meta"], {"ui": {"csp": {"connectDomains": [], "resourceDomains": []},
                                                    "prefersBorder": True}})
            # the page's own calls: ui/initialize with the host, tools/call through it
            for needed in ('"ui/initialize"', "ui/notifications/tool-result", '"tools/call"',
                           '"addUser"', "structuredContent"):
                self.assertIn(needed, page["text"])
            await client.call_tool("addUser", {"name": "Ada", "email": "ada@example.com"})
            users = (await client.call_tool("getUsers", {}))["structuredContent"]["result"]
            self.assertEqual([user["name"] for user in users], ["John", "Jane", "Ada"])


##############################################################################
# Extension: authorization, the resource server
##############################################################################

TOKEN = "k" * 20 + "-test-token-0123456789abcdef"


@needs_auth_server
class HttpAuthTest(HttpTestCase):
    """SECURITY.md B10-B11: static bearer token."""
    options = {"token": TOKEN}

    def test_host_is_checked_on_a_non_loopback_bind_with_a_token(self):
        check_host_on_a_non_loopback_bind(self, token=TOKEN)

    def test_non_loopback_with_a_token(self):
        server = make_server()[0]
        for host in ("0.0.0.0", "::", "192.168.1.5", "example.com"):
            mcp_min.HttpServer(server, host, 0, token=TOKEN)

    async def test_wrong_or_missing_token(self):
        sid = await self.client.initialize()
        for authorization in (None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x",
                              f"Bearer {TOKEN[:-1]}", "Bearer", f"{TOKEN}"):
            for method, path, body in (("POST", "/mcp", call(1, "count")), ("GET", "/mcp", None),
                                       ("DELETE", "/mcp", None), ("GET", "/sse", None),
                                       ("POST", "/messages?sessionId=abc", rpc(1, "ping")),
                                       ("POST", f"/mcp?access_token={TOKEN}", call(1, "count"))):
                response = await self.client.request(method, path, body, {
                    "Authorization": authorization, "Mcp-Session-Id": sid})
                self.assertEqual(response.status, 401, (authorization, method, path))
                self.assertEqual(response.header("www-authenticate"), "Bearer")
                self.assertNotIn(TOKEN.encode(), response.body)
        self.assertEqual(self.state.calls, 0)
        self.assertEqual(list(self.http.sessions), [sid])

    async def test_no_authorization_server_here_is_404_without_a_token(self):
        # With a fixed token these answered 401, and mcp-remote waited for a sign-in that could not be.
        for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration",
                     "/register", "/.well-known/oauth-protected-resource"):
            for method in ("GET", "POST"):
                response = await self.client.request(method, path, headers={"Authorization": None})
                self.assertEqual(response.status, 404, (method, path))

    async def test_right_token(self):
        sid = await self.client.initialize()
        self.assertEqual((await self.client.post(call(1, "count"), sid)).status, 200)
        # RFC 7235: the scheme name is case-insensitive.
        response = await self.client.post(call(2, "count"), sid, headers={"Authorization": f"bearer {TOKEN}"})
        self.assertEqual(response.status, 200)
        self.assertEqual(self.state.calls, 2)

    async def test_auth_before_body(self):
        reader, writer = await self.client.connect()
        try:
            writer.write(self.client.build("POST", "/mcp", None, {
                "Authorization": None, "Content-Type": "application/json",
                "Content-Length": "4000000"}))
            response = await read_response(reader, timeout=5)     # the body timeout is 30 s
            self.assertEqual(response.status, 401)
            self.assertTrue(await closed_by_server(reader))
        finally:
            writer.close()

    async def test_only_http_whitespace_is_trimmed(self):
        # Regression (issue 15): a Unicode strip() let NBSP or NEL after the token through.
        sid = await self.client.initialize()
        for authorization, status in ((f"Bearer {TOKEN}\xa0", 401), (f"Bearer {TOKEN}\x85", 401),
                                      (f"Bearer \xa0{TOKEN}", 401), (f"Bearer  {TOKEN} \t", 200)):
            response = await self.client.post(rpc(1, "ping"), sid, headers={"Authorization": authorization})
            self.assertEqual(response.status, status, repr(authorization))

    async def test_comparison_is_timing_safe(self):
        with mock.patch("hmac.compare_digest", wraps=hmac.compare_digest) as compare:
            response = await self.client.request("GET", "/mcp", headers={"Authorization": "Bearer nope"})
        self.assertEqual(response.status, 401)
        compare.assert_called()


@needs_auth_server
class HttpCorsTokenTest(HttpTestCase):
    options = {"token": "t0k3n", "allow_origins": ["http://app.example.com"]}

    async def test_preflight_needs_no_token_and_errors_carry_cors(self):
        preflight = await self.client.request("OPTIONS", "/mcp", headers={
            "Origin": "http://app.example.com", "Access-Control-Request-Method": "POST",
            "Authorization": None})
        self.assertEqual(preflight.status, 204)
        self.assertEqual(preflight.header("access-control-allow-origin"), "http://app.example.com")
        missing = await self.client.post(rpc(1, "ping"), "no-such-session",
                                         headers={"Origin": "http://app.example.com"})
        self.assertEqual(missing.status, 404)
        self.assertEqual(missing.header("access-control-allow-origin"), "http://app.example.com")


@needs_auth_server
class ClientRedirectTokenTest(RedirectingTestCase):
    """Client: a token does not follow a redirect to another origin; OAuth's requests follow none."""
    options = {"token": "s3cret"}

    async def test_a_token_does_not_follow_a_redirect_to_another_origin(self):
        with self.assertRaises(McpError) as caught:
            async with mcp_min.Client(self.url, token="s3cret", era="handshake", timeout=TIMEOUT):
                pass
        self.assertIn("401", caught.exception.message)
        self.assertIn(b"Bearer s3cret", self.seen[0])      # the origin it was given to has it

    async def test_oauth_requests_follow_no_redirect(self):
        status, _ = await mcp_min._fetch_json(self.url, {"client_secret": "s"})
        self.assertEqual(status, 307)


@needs_auth_server
@needs_trace
class ClientTokenTest(ClientTestCase):
    """mcp_min.Client with a token."""

    async def test_token_goes_in_a_header_never_the_url(self):
        secure = await mcp_min.start_http(self.slow, "127.0.0.1", 0, token="s3cret")
        try:
            url = f"http://127.0.0.1:{secure.port}/mcp"
            with self.assertRaises(mcp_min.McpError):
                async with mcp_min.Client(url, transport="http"):
                    pass
            lines = []
            trace = mcp_min._Trace("-", side="client")
            trace.file = _Lines(lines)
            async with mcp_min.Client(url, token="s3cret", trace=trace, era="handshake") as client:
                await client.ping()
            wire = "".join(lines)
            self.assertNotIn("s3cret", wire)    # the trace hides it too
            self.assertIn("Bearer ***", wire)
            self.assertNotIn("token", wire.split("\n")[0])
        finally:
            await secure.close()


class AuthorizationServer:
    """A small OAuth 2.1 authorization server (stdlib, 127.0.0.1, a thread), for the tests and
    the interop harness (.ci/interop/servers/oauth_checks.py): RFC 8414 metadata, RFC 7662
    introspection (its callers authenticate: HTTP Basic with CLIENT), and for real clients RFC 7591
    registration, /authorize (no user to ask: it redirects with a code at once) and /token
    (authorization_code with PKCE S256). Tokens name the `resource` asked (RFC 8707) as `aud`."""
    CLIENT = ("rs-client", "rs-s3cret")

    def __init__(self, port=0):
        import http.server
        self.tokens, self.codes, self.clients, self.introspections = {}, {}, {}, 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer._get(self)

            def do_POST(self):
                outer._post(self)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.issuer = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def issue(self, sub="alice", scope="mcp", aud=None, client_id="app", **claims):
        token = "at-" + os.urandom(16).hex()
        self.tokens[token] = {"sub": sub, "scope": scope, "client_id": client_id, "aud": aud,
                              "exp": int(time.time()) + 3600, **claims}
        return token

    @staticmethod
    def _reply(h, status, body=None, headers=()):
        data = json.dumps(body).encode() if body is not None else b""
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _get(self, h):
        from urllib.parse import parse_qs, urlencode, urlsplit
        url = urlsplit(h.path)
        if url.path == "/.well-known/oauth-authorization-server":
            i = self.issuer
            return self._reply(h, 200, {
                "issuer": i, "authorization_endpoint": i + "/authorize", "token_endpoint": i + "/token",
                "registration_endpoint": i + "/register", "introspection_endpoint": i + "/introspect",
                "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": ["authorization_code"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic",
                                                          "none"]})
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path != "/authorize" or q.get("redirect_uri") not in self.clients.get(q.get("client_id"), ()) \
                or q.get("code_challenge_method") != "S256":
            return self._reply(h, 400, {"error": "invalid_request"})
        code = os.urandom(12).hex()
        self.codes[code] = q
        target = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        self._reply(h, 302, headers=[("Location", target)])

    def _post(self, h):
        import hashlib
        from urllib.parse import parse_qs
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        if h.path == "/register":
            client = json.loads(body)
            client_id = "c-" + os.urandom(8).hex()
            self.clients[client_id] = client.get("redirect_uris") or []
            return self._reply(h, 201, {**client, "client_id": client_id, "client_secret": "cs-" + client_id})
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if h.path == "/introspect":
            basic = base64.b64encode(":".join(self.CLIENT).encode()).decode()
            if h.headers.get("Authorization") != "Basic " + basic:
                return self._reply(h, 401, {"error": "invalid_client"})
            self.introspections += 1
            claims = self.tokens.get(form.get("token"))
            return self._reply(h, 200, {"active": True, **claims} if claims else {"active": False})
        asked = self.codes.pop(form.get("code"), None)
        verifier = form.get("code_verifier", "").encode()
        if h.path != "/token" or asked is None or asked["code_challenge"] != \
                base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode():
            return self._reply(h, 400, {"error": "invalid_grant"})
        scope = asked.get("scope", "")
        token = self.issue("interop-user", scope, form.get("resource") or asked.get("resource"),
                           asked["client_id"])
        self._reply(h, 200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                             "scope": scope})


@needs_auth_server
class OAuthServerTest(unittest.IsolatedAsyncioTestCase):
    """Issue 14, the resource server: metadata, challenges, introspection, audience, step-up,
    sessions bound to their user, ctx.auth; against AuthorizationServer on real sockets."""

    @classmethod
    def setUpClass(cls):
        cls.issuer_server = AuthorizationServer().start()
        cls.issuer = cls.issuer_server.issuer

    @classmethod
    def tearDownClass(cls):
        cls.issuer_server.stop()

    async def asyncSetUp(self, **options):
        self.server, self.state = make_server()

        @self.server.tool(scopes="admin")
        def wipe() -> str:
            return "wiped"

        @self.server.tool()
        def whoami(ctx: Context) -> dict:
            auth = ctx.auth
            return {"sub": auth.subject, "scopes": sorted(auth.scopes), "client": auth.client_id}
        self.rs = mcp_min.ResourceServer(authorization_servers=[self.issuer], scopes=["mcp"],
                                         client_id=AuthorizationServer.CLIENT[0],
                                         client_secret=AuthorizationServer.CLIENT[1])
        self.http = await start_http(self.server, "127.0.0.1", 0, auth=self.rs, **options)
        self.resource = f"http://127.0.0.1:{self.http.port}/mcp"
        self.client = HttpClient(self.http.port)
        self.alice = self.issuer_server.issue("alice", "mcp", self.resource)

    async def asyncTearDown(self):
        await self.client.close()
        await asyncio.wait_for(self.http.close(), TIMEOUT)

    async def initialize(self, token):
        response = await self.client.post(rpc(0, "initialize", init_params()), headers=bearer(token))
        self.assertEqual(response.status, 200, response)
        return response.header("mcp-session-id")

    def challenge(self, response):
        """The WWW-Authenticate fields, as a dict."""
        header = response.header("www-authenticate")
        self.assertTrue(header.startswith("Bearer "), header)
        return dict(re.findall(r'(\w+)="([^"]*)"', header))

    async def test_metadata_at_both_well_known_uris_without_a_token(self):
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            response = await self.client.request("GET", path)
            self.assertEqual(response.status, 200, path)
            self.assertEqual(response.json(), {
                "resource": self.resource, "authorization_servers": [self.issuer],
                "scopes_supported": ["admin", "mcp"], "bearer_methods_supported": ["header"]})
        self.assertEqual((await self.client.request("GET", "/.well-known/oauth-protected-resource/x")).status,
                         404)
        # a fixed token (today's --token) publishes none: there is no authorization server to name
        fixed = await start_http(self.server, "127.0.0.1", 0, token="s3cret-s3cret")
        try:
            response = await HttpClient(fixed.port).request("GET", "/.well-known/oauth-protected-resource")
            self.assertEqual(response.status, 404)
        finally:
            await fixed.close()

    async def test_401_names_the_metadata_and_the_scope(self):
        for headers, error in (({}, None), (bearer("made-up"), "invalid_token"),
                               ({"Authorization": f"Basic {self.alice}"}, None)):
            for method, path in (("POST", "/mcp"), ("GET", "/mcp"), ("GET", "/sse"),
                                 ("POST", "/messages?sessionId=abc")):
                body = call(1, "count") if method == "POST" else None
                response = await self.client.request(method, path, body, headers)
                self.assertEqual(response.status, 401, (headers, path))
                fields = self.challenge(response)
                self.assertEqual(fields.get("error"), error)
                self.assertEqual(fields["scope"], "mcp")
                self.assertEqual(fields["resource_metadata"], f"http://127.0.0.1:{self.http.port}"
                                                              "/.well-known/oauth-protected-resource/mcp")
        self.assertEqual(self.state.calls, 0)   # invalid tokens never reach a handler

    async def test_introspection_active_inactive_and_ctx_auth(self):
        sid = await self.initialize(self.alice)
        response = await self.client.post(call(1, "whoami"), sid, headers=bearer(self.alice))
        self.assertEqual(response.json()["result"]["structuredContent"],
                         {"sub": "alice", "scopes": ["mcp"], "client": "app"})
        self.issuer_server.tokens[self.alice]["active"] = False     # revoked, but still cached
        response = await self.client.post(call(2, "count"), sid, headers=bearer(self.alice))
        self.assertEqual(response.status, 200)
        self.rs.verify.good.clear()
        response = await self.client.post(call(3, "count"), sid, headers=bearer(self.alice))
        self.assertEqual(response.status, 401)
        self.assertEqual(self.challenge(response)["error"], "invalid_token")
        self.assertEqual(self.state.calls, 1)

    async def test_a_token_for_another_resource_or_expired_is_refused(self):
        for token in (self.issuer_server.issue("bob", "mcp", "http://127.0.0.1:1/mcp"),
                      self.issuer_server.issue("bob", "mcp", None),
                      self.issuer_server.issue("bob", "mcp", [self.resource + "x"]),
                      self.issuer_server.issue("bob", "mcp", self.resource, exp=int(time.time()) - 5),
                      # nobody: no sub, no client_id, so no session could be told apart from another's
                      self.issuer_server.issue(None, "mcp", self.resource, client_id=None)):
            response = await self.client.post(call(1, "count"), headers=bearer(token))
            self.assertEqual(response.status, 401)
            self.assertEqual(self.challenge(response)["error"], "invalid_token")
        self.assertEqual(self.state.calls, 0)
        await self.initialize(self.issuer_server.issue("bob", "mcp", ["https://other.example",
                                                                      self.resource]))

    async def test_step_up_403_for_a_tool_and_for_the_servers_scopes(self):
        sid = await self.initialize(self.alice)
        for body in (call(1, "wipe"), [call(1, "add", {"a": 1, "b": 2}), call(2, "wipe")]):
            response = await self.client.post(body, sid, headers=bearer(self.alice))
            self.assertEqual(response.status, 403)
            fields = self.challenge(response)
            self.assertEqual((fields["error"], fields["scope"]), ("insufficient_scope", "admin mcp"))
            self.assertIn("resource_metadata", fields)
        response = await self.client.post(call(2, ["wipe"]), sid, headers=bearer(self.alice))
        self.assertEqual(response.json()["error"]["code"], INVALID_PARAMS)     # no name: no crash
        admin = self.issuer_server.issue("alice", "mcp admin", self.resource)
        response = await self.client.post(call(3, "wipe"), sid, headers=bearer(admin))
        self.assertEqual(tool_text(response.json()), "wiped")
        weak = self.issuer_server.issue("carol", "profile", self.resource)     # lacks "mcp"
        response = await self.client.post(call(1, "count"), headers=bearer(weak))
        self.assertEqual(response.status, 403)
        self.assertEqual(self.challenge(response)["scope"], "mcp profile")

    async def test_cache_bounded_in_size_and_time(self):
        clock = [1000.0]
        with mock.patch.object(mcp_min, "INTROSPECTION_CACHE", 3), \
                mock.patch.object(mcp_min, "_now", lambda: clock[0]):
            verify, before = self.rs.verify, self.issuer_server.introspections
            self.assertEqual((await verify(self.alice))["sub"], "alice")
            self.assertEqual((await verify(self.alice))["sub"], "alice")
            self.assertEqual(self.issuer_server.introspections, before + 1)
            for n in range(5):
                self.assertIsNone(await verify(f"unknown-{n}"))
                self.assertLessEqual(len(verify.bad), 3)
            self.assertEqual(self.issuer_server.introspections, before + 6)
            await verify(self.alice)    # refusals never push a good answer out
            self.assertEqual(self.issuer_server.introspections, before + 6)
            clock[0] += mcp_min.INTROSPECTION_TTL + 1       # past the TTL: asked again
            await verify(self.alice)
            self.assertEqual(self.issuer_server.introspections, before + 7)

    async def test_legacy_sse_protected_and_bound_to_its_user(self):
        reader, writer = await self.client.connect()
        writer.write(self.client.build("GET", "/sse", headers={"Accept": "text/event-stream",
                                                               **bearer(self.alice)}))
        self.assertEqual((await read_head(reader)).status, 200)
        endpoint = (await read_event(reader))["data"]
        bob = self.issuer_server.issue("bob", "mcp", self.resource)
        for headers, status in (({}, 401), (bearer(bob), 404), (bearer(self.alice), 202)):
            response = await self.client.request("POST", endpoint, rpc(1, "ping"), headers)
            self.assertEqual(response.status, status)
        self.assertEqual(json.loads((await read_event(reader))["data"])["result"], {})

    async def open_streams(self, token):
        """A GET /mcp stream (of a new session) and a GET /sse stream, both opened with `token`."""
        sid = await self.initialize(token)
        await self.client.post(note("notifications/initialized"), sid, headers=bearer(token))
        streams = []
        for path, headers in (("/mcp", {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION}),
                              ("/sse", {})):
            reader, writer = await self.client.connect()
            writer.write(self.client.build("GET", path, headers={"Accept": "text/event-stream",
                                                                  **bearer(token), **headers}))
            self.assertEqual((await read_head(reader)).status, 200, path)
            await read_event(reader, priming=True)      # the priming event; /sse's endpoint
            streams.append(reader)
        return streams

    async def assertEnds(self, reader, within):
        """The stream ends within `within` seconds, having carried no list_changed."""
        rest = await asyncio.wait_for(reader.read(), within)
        self.assertNotIn(b"list_changed", rest)

    async def test_a_stream_ends_at_its_tokens_expiry(self):
        # GET /sse and GET /mcp opened with a token that expired 4 s later went on carrying
        # list_changed (and would have carried logs and server requests) long after.
        exp = time.time() + 0.8     # the streams open well within it
        soon = self.issuer_server.issue("bob", "mcp", self.resource, exp=exp)
        streams = await self.open_streams(soon)
        await asyncio.sleep(exp - time.time() + 0.05)     # until it has expired
        self.server.add_tool(lambda: "", "late")           # what the streams would carry
        for reader in streams:
            await self.assertEnds(reader, 2.0)
        response = await self.client.request("GET", "/sse", headers=bearer(soon))
        self.assertEqual((response.status, self.challenge(response)["error"]), (401, "invalid_token"))

    async def test_a_stream_ends_when_its_token_is_found_revoked(self):
        with mock.patch.object(mcp_min, "INTROSPECTION_TTL", 0.3):   # checked again that often
            token = self.issuer_server.issue("carol", "mcp", self.resource)
            streams = await self.open_streams(token)
            self.issuer_server.tokens[token]["active"] = False
            for reader in streams:
                await self.assertEnds(reader, 2.0)

    async def test_only_scope_characters_reach_the_challenge(self):
        # Scopes from introspection went unescaped into WWW-Authenticate: CR/LF split the response,
        # a quote forged parameters, a non-Latin-1 scope left the client with no answer at all.
        token = self.issuer_server.issue("dave", ["mcp", "x\r\nX-Injected: 1", 'q"uote', "\u00fcn\u00ef", "ok:fine"],
                                         self.resource)
        response = await self.client.post(call(1, "wipe"), headers=bearer(token))
        self.assertEqual(response.status, 403)
        self.assertNotIn("x-injected", response.headers)
        self.assertEqual(self.challenge(response)["scope"], "admin mcp ok:fine")

    async def test_not_before_malformed_expiry_and_another_issuer_are_refused(self):
        for claims in ({"nbf": time.time() + 3600}, {"exp": str(int(time.time()) + 3600)},
                       {"iss": "https://other.example"}, {"nbf": "0"}):
            token = self.issuer_server.issue("erin", "mcp", self.resource, **claims)
            response = await self.client.post(call(1, "count"), headers=bearer(token))
            self.assertEqual(response.status, 401, claims)
        token = self.issuer_server.issue("erin", "mcp", self.resource, iss=self.issuer, nbf=time.time() - 5)
        self.assertIsNotNone(await self.initialize(token))     # the same, well-formed, is taken

    async def test_one_look_up_for_a_token_asked_by_many_at_once(self):
        token, before = self.issuer_server.issue("frank", "mcp", self.resource), self.issuer_server.introspections
        responses = await asyncio.gather(*(self.client.post(rpc(0, "initialize", init_params()),
                                                            headers=bearer(token)) for _ in range(10)))
        self.assertEqual([r.status for r in responses], [200] * 10)
        self.assertEqual(self.issuer_server.introspections, before + 1)

    async def test_a_session_refuses_another_users_token(self):
        sid = await self.initialize(self.alice)
        bob = self.issuer_server.issue("bob", "mcp", self.resource)
        other_client = self.issuer_server.issue("alice", "mcp", self.resource, client_id="other-app")
        for token in (bob, other_client):
            for method, body in (("POST", call(1, "count")), ("GET", None), ("DELETE", None)):
                response = await self.client.request(method, "/mcp", body, {"Mcp-Session-Id": sid,
                                                                            **bearer(token)})
                self.assertEqual(response.status, 404, (method, token))   # as if there were none
        again = self.issuer_server.issue("alice", "mcp", self.resource)     # a refreshed token
        self.assertEqual((await self.client.post(call(2, "count"), sid, headers=bearer(again))).status, 200)
        self.assertEqual(self.state.calls, 1)

    async def test_request_state_is_bound_to_the_user_not_the_token(self):
        ask = modern(1, "tools/call", {"name": "ask_user", "arguments": {}}, {"elicitation": {}})

        def headers(token):
            return {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ask_user",
                    **bearer(token)}
        state = (await self.client.post(ask, headers=headers(self.alice))).json()["result"]["requestState"]
        ask["params"].update(requestState=state, inputResponses={
            "elicitation-1": {"action": "accept", "content": {"name": "Ada"}}})
        bob = self.issuer_server.issue("bob", "mcp", self.resource)
        stolen = await self.client.post(ask, headers=headers(bob))
        self.assertEqual((stolen.status, stolen.json()["error"]["code"]), (400, INVALID_PARAMS))
        refreshed = self.issuer_server.issue("alice", "mcp", self.resource)
        done = await self.client.post(ask, headers=headers(refreshed))
        self.assertEqual(done.json()["result"]["structuredContent"],
                         {"action": "accept", "content": {"name": "Ada"}})

    async def test_no_token_in_logs_trace_or_errors(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.jsonl")
            trace = mcp_min._Trace(path)
            down = mcp_min.ResourceServer(mcp_min.Introspection("http://127.0.0.1:1"),
                                          ["http://127.0.0.1:1"])
            http = await start_http(self.server, "127.0.0.1", 0, auth=down, trace=trace)
            bad = self.issuer_server.issue("bob", "mcp", "elsewhere")
            try:
                with self.assertLogs("mcp_min", "DEBUG") as logs:
                    bodies = []
                    for client, token in ((self.client, self.alice), (self.client, bad),
                                          (HttpClient(http.port), self.alice)):
                        response = await client.post(call(1, "count"), headers=bearer(token))
                        bodies.append(response.body + str(response.headers).encode())
                    mcp_min._logger.debug("end")
            finally:
                await http.close()
                trace.file.close()
            self.assertEqual(response.status, 503)      # the AS is down: no verdict, not a 401
            text = pathlib.Path(path).read_text() + "".join(logs.output) + repr(bodies)
            self.assertIn("Bearer ***", text)
            self.assertIn("cannot verify", text)
            for token in (self.alice, bad):
                self.assertNotIn(token, text)

    async def test_a_sync_verifier_runs_off_the_loop(self):
        threads = []

        def verify(token):
            threads.append(threading.current_thread())
            return {"sub": "s", "aud": self.resource} if token == "good" else None
        self.http.auth = mcp_min.ResourceServer(verify, [self.issuer], resource=self.resource)
        await self.initialize("good")
        self.assertEqual((await self.client.post(call(1, "count"), headers=bearer("bad"))).status, 401)
        self.assertNotIn(threading.main_thread(), threads)
        self.assertEqual(len(threads), 2)

    def test_cli_options(self):
        args = mcp_min._serve_parser().parse_args(["--port", "0", "--auth-server", self.issuer,
                                                   "--scope", "mcp", "--scope", "files"])
        with mock.patch.dict(os.environ, {"MCP_AUTH_CLIENT": "id:se:cret", "MCP_TOKEN": "ignored"}):
            options = {}
            mcp_min._AuthOptions().configure(None, args, options)
            rs = options["auth"]
        self.assertEqual((rs.scopes, rs.authorization_servers), ({"mcp", "files"}, [self.issuer]))
        self.assertEqual(base64.b64decode(rs.verify.basic["Authorization"].split()[1]), b"id:se%3Acret")
        for bad in ("http://as.example", "ftp://127.0.0.1"):
            with self.assertRaisesRegex(ValueError, "https"):
                mcp_min.ResourceServer(authorization_servers=[bad])
        with self.assertRaisesRegex(ValueError, "resource="):
            mcp_min.HttpServer(Server("x"), "0.0.0.0", 0, auth=mcp_min.ResourceServer(
                authorization_servers=[self.issuer]))


@needs_auth_server
class IntrospectionRefusedTest(unittest.IsolatedAsyncioTestCase):
    """Issue 34 G 22: an introspection endpoint that refuses our client authentication (RFC 7662
    2.1) is said so, with the options that give one; the request still gets 503 (no verdict)."""

    class Refusing(AuthorizationServer):
        """An authorization server whose introspection endpoint answers `status` {"error": `error`}."""

        def __init__(self, status, error):
            super().__init__()
            self.answer = status, error

        def _post(self, h):
            if h.path != "/introspect":
                return super()._post(h)
            h.rfile.read(int(h.headers.get("Content-Length") or 0))
            return self._reply(h, self.answer[0], {"error": self.answer[1]})

    async def verdict(self, issuer_server, token, **client):
        """The status of one request with `token` to a server checking tokens there, and the log."""
        server, _ = make_server()
        rs = mcp_min.ResourceServer(authorization_servers=[issuer_server.issuer], scopes=["mcp"], **client)
        http = await start_http(server, "127.0.0.1", 0, auth=rs)
        client = HttpClient(http.port)
        try:
            with self.assertLogs("mcp_min", "WARNING") as logs:
                response = await client.post(call(1, "count"), headers=bearer(token))
        finally:
            await client.close()
            await asyncio.wait_for(http.close(), TIMEOUT)
        return response.status, "\n".join(logs.output)

    async def test_a_refused_client_authentication_is_said_and_the_options_named(self):
        # Before: "the introspection endpoint answered 400" (or 401), nothing of why or what to do.
        standard = AuthorizationServer().start()     # its introspection wants HTTP Basic: 401
        self.addCleanup(standard.stop)
        token = standard.issue("alice", "mcp", None)
        refusing = self.Refusing(400, "invalid_client").start()     # as oidc-provider answers
        self.addCleanup(refusing.stop)
        cases = [(standard, {}, "401"),
                 (standard, {"client_id": "rs-client", "client_secret": "not-the-secret"}, "401"),
                 (refusing, {}, "400")]
        for issuer_server, client, status in cases:
            with self.subTest(status=status, client=client):
                got, log = await self.verdict(issuer_server, token, **client)
                self.assertEqual(got, 503, log)     # no verdict: not a 401
                self.assertIn("refused our client authentication", log)
                self.assertIn(f"HTTP {status}", log)
                self.assertIn("--auth-client-file", log)
                self.assertIn("MCP_AUTH_CLIENT", log)
                self.assertNotIn(token, log)
        other = self.Refusing(400, "invalid_request").start()    # another 400: only its status
        self.addCleanup(other.stop)
        got, log = await self.verdict(other, token)
        self.assertEqual(got, 503)
        self.assertIn("the introspection endpoint answered 400", log)
        self.assertNotIn("--auth-client-file", log)

    def test_the_readme_names_the_introspection_client_options(self):
        # The README's `serve --auth-server` example answered every token 503 against a standard
        # server: --auth-client-file and $MCP_AUTH_CLIENT were only in --help.
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            section = f.read().split("\n## OAuth\n", 1)[1].split("\n## ", 1)[0]
        for words in ("--auth-client-file", "MCP_AUTH_CLIENT", "introspection"):
            self.assertTrue(words in section, f"the README's OAuth section does not name {words}")


##############################################################################
# Extension: authorization, the client's side
##############################################################################

class _OAuthWorld:
    """A tiny authorization server and OAuth-protected MCP server in one, on 127.0.0.1 port 0
    (http.server in a thread). It grants what is asked but `admin`, checks PKCE, the code's
    single use, `resource` and `redirect_uri`, and logs every request."""

    def __init__(self, **options):
        import http.server
        self.o = dict(prm_hint=True, prm_root=False, issuer_path="", metadata_issuer=None, iss=None,
                      authorize_at=None, resource=None, register=True, offline=True, cimd=False)
        self.o.update(options)
        self.log, self.codes, self.tokens, self.refreshes, self.registered = [], {}, {}, {}, None
        self.asked = []     # the authorization requests' queries
        world = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                world.handle(self, self.command)
            do_POST = do_DELETE = do_GET

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_port}"
        self.url = self.base + "/mcp"
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def paths(self, method=None):
        return [p for m, p, _, _ in self.log if method in (None, m)]

    def handle(self, h, method):
        import hashlib
        from urllib.parse import parse_qsl, urlencode, urlsplit
        o, base, target = self.o, self.base, urlsplit(h.path)
        path, query = target.path, dict(parse_qsl(target.query))
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0)) if method == "POST" else b""
        self.log.append((method, path, h.headers.get("Authorization"), body))
        issuer = base + o["issuer_path"]

        def send(status, data=None, headers=()):
            payload = b"" if data is None else json.dumps(data).encode()
            h.send_response(status)
            for k, v in headers:
                h.send_header(k, v)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)

        prm = "/.well-known/oauth-protected-resource" + ("" if o["prm_root"] else "/mcp")
        if path == prm:
            return send(200, {"resource": o["resource"] or base + ("" if o["prm_root"] else "/mcp"),
                              "authorization_servers": [issuer], "scopes_supported": ["read"]})
        if path == "/.well-known/openid-configuration" + o["issuer_path"]:
            return send(200, {"issuer": o["metadata_issuer"] or issuer, "token_endpoint": base + "/token",
                              "authorization_endpoint": o["authorize_at"] or base + "/authorize",
                              "code_challenge_methods_supported": ["S256"],
                              "authorization_response_iss_parameter_supported": True,
                              "scopes_supported": ["read", "write"] + ["offline_access"] * o["offline"],
                              "client_id_metadata_document_supported": o["cimd"],
                              **({"registration_endpoint": base + "/register"} if o["register"] else {})})
        if path == "/register":
            self.registered = json.loads(body)
            return send(201, {"client_id": "dynamic-client", "client_secret": "dynamic-secret"})
        if path == "/authorize":
            code = f"code-{len(self.log)}"
            self.codes[code] = query
            self.asked.append(query)
            answer = {"code": code, "state": query["state"], "iss": o["iss"] or issuer}
            return send(302, headers=[("Location", query["redirect_uri"] + "?" + urlencode(answer))])
        if path == "/token":
            form = dict(parse_qsl(body.decode()))
            if form["grant_type"] == "authorization_code":
                asked = self.codes.pop(form["code"], None)      # a code works once
                challenge = base64.urlsafe_b64encode(hashlib.sha256(
                    form["code_verifier"].encode()).digest()).rstrip(b"=").decode()
                good = asked and (challenge, "S256", form["resource"], form["redirect_uri"]) == tuple(
                    asked[k] for k in ("code_challenge", "code_challenge_method", "resource", "redirect_uri"))
                scope = asked and asked.get("scope", "")
            else:
                scope = self.refreshes.pop(form.get("refresh_token"), None)
                good = scope is not None and form["resource"] == base + "/mcp"
            if not good:
                return send(400, {"error": "invalid_grant"})
            token, refresh = f"at-{len(self.log)}-{os.urandom(4).hex()}", f"rt-{os.urandom(8).hex()}"
            self.tokens[token] = set(scope.split()) - {"admin"}
            self.refreshes[refresh] = scope
            return send(200, {"access_token": token, "token_type": "Bearer", "refresh_token": refresh})
        if path in ("/mcp", "/sse"):
            auth = h.headers.get("Authorization") or ""
            hint = f', resource_metadata="{base}{prm}"' * o["prm_hint"]
            granted = self.tokens.get(auth[7:]) if auth.startswith("Bearer ") else None
            if granted is None:
                return send(401, {}, [("WWW-Authenticate", 'Bearer error="invalid_token"' + hint)])
            if path == "/sse":      # legacy HTTP+SSE: the endpoint event, then the stream ends
                h.send_response(200)
                h.send_header("Content-Type", "text/event-stream")
                h.end_headers()
                return h.wfile.write(b"event: endpoint\ndata: /messages\n\n")
            if method != "POST":
                return send(405, {})
            message = json.loads(body)
            need = {"read", (message.get("params") or {}).get("name", "read")} \
                if message["method"] == "tools/call" else {"read"}
            if not need <= granted:
                return send(403, {}, [("WWW-Authenticate", 'Bearer error="insufficient_scope", '
                                       f'scope="{" ".join(sorted(need))}"' + hint)])
            if "id" not in message:
                return send(202)
            result = {"tools/list": {"tools": []}, "tools/call": {"content": []}}.get(message["method"]) or {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "w", "version": "1"}}
            return send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        send(404, {})


async def _follow(url, tamper=None):
    """The browser, approving at once: the authorization endpoint's redirect, taken to our listener."""
    response = await mcp_min._http(url, "GET", {})
    response.close()
    location = response.headers["location"]
    (await mcp_min._http(tamper(location) if tamper else location, "GET", {})).close()


@needs_auth_client
class OAuthClientTest(unittest.IsolatedAsyncioTestCase):
    """The client's side of MCP authorization against `_OAuthWorld`."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.store = os.path.join(self.tmp, "config", "mcp_min", "tokens.json")
        self.addCleanup(shutil.rmtree, self.tmp)

    def world(self, **options):
        world = _OAuthWorld(**options)
        self.addCleanup(world.close)
        return world

    def auth(self, **options):
        return mcp_min.OAuth(browser=options.pop("browser", _follow), store=options.pop("store", self.store),
                             **options)

    def test_a_secret_goes_to_one_authorization_server_only(self):
        # Without issuer=, a pre-registered secret went to whichever token endpoint the MCP server named.
        for grant in ("client_credentials", "authorization_code"):
            with self.assertRaisesRegex(ValueError, "issuer="):
                mcp_min.OAuth(client_id="svc", client_secret="s3cret", grant=grant)
        self.assertEqual(mcp_min.OAuth(client_id="svc", client_secret="s", issuer="https://as.example",
                                       grant="client_credentials").issuer, "https://as.example")

    async def test_sign_in_discovers_registers_and_keeps_the_token_private(self):
        # No hint in the challenge, PRM only at the root, an issuer with a path served by
        # OpenID discovery only: every step of the discovery order is walked.
        world = self.world(prm_hint=False, prm_root=True, issuer_path="/tenant")
        lines, auth = [], self.auth()
        trace = mcp_min._Trace("-", side="client")
        trace.file = _Lines(lines)
        async with mcp_min.Client(world.url, era="handshake", auth=auth, trace=trace) as client:
            await client.list_tools()
            # the GET stream is opened beside the list: under load it may come after it
            await until(lambda: world.paths().count("/mcp") == 5, "the client's GET stream")
        self.assertEqual(world.paths(), [
            "/mcp", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server/tenant", "/.well-known/openid-configuration/tenant",
            "/register", "/authorize", "/token", "/mcp", "/mcp", "/mcp", "/mcp"])  # + initialized, GET, list
        self.assertEqual(world.registered["application_type"], "native")
        self.assertRegex(world.registered["redirect_uris"][0], r"^http://127\.0\.0\.1:\d+/callback$")
        (token,) = world.tokens
        self.assertEqual(auth.token(world.url), token)
        self.assertIsNone(auth.token(world.base + "/other"))     # only for the server it was issued for
        self.assertEqual(os.stat(self.store).st_mode & 0o777, 0o600)
        with open(self.store, encoding="utf-8") as f:
            self.assertEqual(json.load(f)[world.url]["access_token"], token)
        text = "".join(lines)
        self.assertIn("Bearer ***", text)
        for secret in (token, *world.refreshes, "dynamic-secret"):
            self.assertNotIn(secret, text)

    async def test_authorization_request_has_pkce_state_resource_and_offline_access(self):
        world = self.world()
        async with mcp_min.Client(world.url, era="handshake", auth=self.auth()) as client:
            await client.list_tools()
        (asked,) = world.asked
        keys = ("response_type", "code_challenge_method", "resource", "scope")
        self.assertEqual({k: asked[k] for k in keys},
                         {"response_type": "code", "code_challenge_method": "S256", "resource": world.url,
                          "scope": "read offline_access"})
        self.assertGreaterEqual(len(asked["state"]), 43)      # 256 bits
        (_, _, basic, body), = [e for e in world.log if e[1] == "/token"]
        form = dict(parse_qsl(body.decode()))
        self.assertEqual(base64.b64decode(basic[6:]), b"dynamic-client:dynamic-secret")
        self.assertEqual((form["grant_type"], form["resource"]), ("authorization_code", world.url))
        self.assertGreaterEqual(len(form["code_verifier"]), 43)
        self.assertEqual(world.codes, {})       # the code was spent (the world checked PKCE)

    async def test_a_second_run_reuses_the_stored_token_and_a_401_refreshes_it(self):
        world = self.world()
        async with mcp_min.Client(world.url, era="handshake", auth=self.auth()) as client:
            await client.list_tools()
        world.tokens.clear()        # the server forgets the access token: the refresh token is used
        async with mcp_min.Client(world.url, era="handshake", auth=self.auth()) as client:
            await client.list_tools()
        self.assertEqual(world.paths().count("/authorize"), 1)
        self.assertEqual(world.paths().count("/register"), 1)
        grants = [dict(parse_qsl(b.decode()))["grant_type"]
                  for _, p, _, b in world.log if p == "/token"]
        self.assertEqual(grants, ["authorization_code", "refresh_token"])

    async def test_step_up_asks_for_more_scope_and_stops_when_it_would_loop(self):
        world = self.world()
        async with mcp_min.Client(world.url, era="handshake", auth=self.auth(store=None)) as client:
            await client.call_tool("write", {})
            with self.assertRaises(McpError):
                await client.call_tool("admin", {})     # never granted: one step-up, then the 403 stands
        self.assertEqual([q["scope"] for q in world.asked], [
            "read offline_access", "read offline_access write", "read offline_access write admin"])

    async def test_refuses_metadata_that_is_not_what_it_should_be(self):
        cases = [({"metadata_issuer": "https://evil.example"}, {}, "names issuer"),
                 ({"authorize_at": "http://example.com/authorize"}, {}, "https only"),
                 # printed for a person to open: no escape sequence for their terminal to obey
                 ({"authorize_at": "https://as.example/authorize\x1b]52;c;aGk=\x07"}, {},
                  "control character"),
                 ({"resource": "https://evil.example/mcp"}, {}, "is about"),
                 ({"iss": "https://evil.example"}, {}, "iss"),
                 ({"register": False}, {}, "--client-id"),
                 ({}, {"client_id": "ours", "issuer": "https://as.example"}, "https://as.example's")]
        for options, who, words in cases:
            with self.subTest(options=options, who=who):
                world = self.world(**options)
                with self.assertRaises(McpError) as caught:
                    async with mcp_min.Client(world.url, era="handshake", auth=self.auth(store=None, **who)):
                        pass
                self.assertIn(words, caught.exception.message)
                self.assertNotIn("/token", world.paths())

    async def test_a_redirect_with_another_state_does_not_end_the_sign_in(self):
        world, statuses = self.world(), []

        async def browser(url):     # another local program gets its forged redirect in first
            response = await mcp_min._http(url, "GET", {})
            response.close()
            location = response.headers["location"]
            for target in (re.sub(r"state=[^&]+", "state=forged", location), location):
                answer = await mcp_min._http(target, "GET", {})
                statuses.append(answer.status)
                answer.close()
        async with mcp_min.Client(world.url, era="handshake", auth=self.auth(store=None, browser=browser)) as c:
            self.assertTrue(await c.list_tools() is not None)
        self.assertEqual(statuses, [404, 200])


    async def test_a_client_id_metadata_document_url_is_the_client_id_where_taken(self):
        with self.assertRaises(ValueError):
            mcp_min.OAuth(client_metadata_url="http://example.com/client.json")
        url = "https://client.example/mcp_min.json"
        for cimd, client_id in ((True, url), (False, "dynamic-client")):
            world = self.world(cimd=cimd)
            async with mcp_min.Client(world.url, era="handshake",
                                      auth=self.auth(store=None, client_metadata_url=url)) as client:
                await client.list_tools()
            self.assertEqual((world.asked[0]["client_id"], "/register" in world.paths()), (client_id, not cimd))

    async def test_other_errors_start_no_sign_in(self):
        world = self.world()
        with self.assertRaises(McpError):   # 404 to the POST, then to legacy SSE's GET
            async with mcp_min.Client(world.base + "/nothing", auth=self.auth(store=None)):
                pass
        self.assertEqual(set(world.paths()), {"/nothing"})

    async def test_legacy_sse_signs_in_on_the_streams_401(self):
        world = self.world(prm_root=True)
        with self.assertRaises(McpError):   # the world's stream ends after its endpoint event
            async with mcp_min.Client(world.base + "/sse", transport="sse", auth=self.auth(store=None)):
                pass
        (token,) = world.tokens
        self.assertEqual([(p, a) for m, p, a, _ in world.log if p == "/sse"],
                         [("/sse", None), ("/sse", f"Bearer {token}")])

    def test_cli_auth_paste_signs_in_headless(self):
        import http.client
        world = self.world()
        env = {**os.environ, "XDG_CONFIG_HOME": self.tmp}
        env.pop("APPDATA", None)
        with subprocess.Popen([sys.executable, MCP_MIN, "client", world.url, "tools/list", "--auth", "paste",
                               "--protocol", "2025-11-25"], env=env, text=True, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
            line = ""
            while not line.startswith("http://"):
                line = process.stderr.readline()
                self.assertTrue(line, "the CLI printed no address to open")
            connection = http.client.HTTPConnection("127.0.0.1", world.httpd.server_port, timeout=TIMEOUT)
            connection.request("GET", line.strip()[len(world.base):])
            location = connection.getresponse().getheader("Location")    # where the browser would end
            connection.close()
            out, err = process.communicate(location + "\n", timeout=TIMEOUT)
        self.assertEqual((process.returncode, json.loads(out)), (0, {"tools": []}), err)
        (token,) = world.tokens
        self.assertNotIn(token, out + err)
        store = os.path.join(self.tmp, "mcp_min", "tokens.json")
        self.assertEqual(os.stat(store).st_mode & 0o777, 0o600)


@needs_auth_client
class OAuthSignInRound3Test(unittest.IsolatedAsyncioTestCase):
    """Issue 34 G, the client's side against `_OAuthWorld`: prompt=consent with offline_access (21),
    the browser off the event loop (23), the sign-in's own requests in the trace, secrets masked (24)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.store = os.path.join(self.tmp, "config", "mcp_min", "tokens.json")
        self.addCleanup(shutil.rmtree, self.tmp)

    def world(self, **options):
        world = _OAuthWorld(**options)
        self.addCleanup(world.close)
        return world

    async def test_offline_access_is_asked_with_prompt_consent(self):
        # 21. `scope=read offline_access` went without prompt=consent: an OpenID provider then
        # drops offline_access (OIDC Core 11) and gives no refresh token.
        from urllib.parse import urlsplit
        for offline, scope, prompt in ((True, "read offline_access", "consent"), (False, "read", None)):
            with self.subTest(offline_access_offered=offline):
                world, opened = self.world(offline=offline), []

                async def browser(url, opened=opened):
                    opened.append(url)      # the address the browser is given
                    await _follow(url)
                async with mcp_min.Client(world.url, era="handshake", timeout=TIMEOUT,
                                          auth=mcp_min.OAuth(browser=browser, store=None)) as client:
                    await client.list_tools()
                (url,) = opened
                query = dict(parse_qsl(urlsplit(url).query))
                self.assertEqual((query["scope"], query.get("prompt")), (scope, prompt))
                self.assertEqual([q.get("prompt") for q in world.asked], [prompt])  # as it arrived

    async def test_a_browser_that_waits_runs_off_the_loop_and_the_sign_in_ends(self):
        # 23. webbrowser.open (or a sync `browser`) ran on the event loop: a browser that waits
        # until it has been to the loopback listener waited for a listener that could not answer.
        # This one fetches the authorization URL itself (urllib, synchronously), follows the
        # 302 to the listener and returns once it has read the answer. On the old code it blocks
        # the loop until urllib's own timeout (TIMEOUT) and the sign-in fails.
        import urllib.request
        world, pages, threads = self.world(), [], []
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))    # no $http_proxy

        def browser(url):
            threads.append(threading.current_thread())
            with opener.open(url, timeout=TIMEOUT) as page:
                pages.append((page.status, page.geturl(), page.read()))
        loop_thread = threading.current_thread()
        started = time.monotonic()
        try:
            async with mcp_min.Client(world.url, era="handshake", timeout=TIMEOUT,
                                      auth=mcp_min.OAuth(browser=browser, store=None)) as client:
                await client.list_tools()
        except Exception as e:  # noqa: BLE001 — the old code: urllib timed out on a blocked loop
            self.fail(f"the sign-in did not end ({time.monotonic() - started:.1f} s): {e!r}")
        (status, where, text), = pages
        self.assertEqual((status, text), (200, b"Signed in: you may close this window."))
        self.assertRegex(where, r"^http://127\.0\.0\.1:\d+/callback\?")
        self.assertNotIn(loop_thread, threads)
        self.assertEqual(len(world.tokens), 1)
        self.assertLess(time.monotonic() - started, TIMEOUT / 2)

    async def test_the_sign_in_is_traced_between_the_401_and_the_request_sent_again(self):
        # 24. The trace showed the 401, then the request sent again: nothing of the discovery,
        # registration and token requests between. Now traced like any frame, secrets masked.
        world = self.world()
        base, path = world.base, os.path.join(self.tmp, "trace.jsonl")
        trace = mcp_min._Trace(path, side="client")
        try:
            async with mcp_min.Client(world.url, era="handshake", timeout=TIMEOUT, trace=trace,
                                      auth=mcp_min.OAuth(browser=_follow, store=self.store)) as client:
                await client.list_tools()
        finally:
            trace.file.close()
        first_tokens, first_refreshes = set(world.tokens), set(world.refreshes)
        # A second run whose stored access token the server forgot: a refresh, in the text trace.
        world.tokens.clear()
        lines = []
        text_trace = mcp_min._Trace("-", side="client")
        text_trace.file = _Lines(lines)
        async with mcp_min.Client(world.url, era="handshake", timeout=TIMEOUT, trace=text_trace,
                                  auth=mcp_min.OAuth(browser=_follow, store=self.store)) as client:
            await client.list_tools()

        text = pathlib.Path(path).read_text(encoding="utf-8")
        records = [json.loads(line) for line in text.splitlines()]
        shown = [(r["dir"], r["head"] if r["dir"] == "C→S" else r["head"][:3]) for r in records]
        at_401 = shown.index(("S→C", "401"))
        again = shown.index(("C→S", "POST /mcp"), at_401)
        self.assertEqual(shown[at_401 + 1:again], [
            ("C→S", f"GET {base}/.well-known/oauth-protected-resource/mcp"), ("S→C", "200"),
            ("C→S", f"GET {base}/.well-known/oauth-authorization-server"), ("S→C", "404"),
            ("C→S", f"GET {base}/.well-known/openid-configuration"), ("S→C", "200"),
            ("C→S", f"POST {base}/register"), ("S→C", "201"),
            ("C→S", f"POST {base}/token"), ("S→C", "200")])
        sign_in = records[at_401 + 1:again]
        self.assertEqual(sign_in[1]["message"]["authorization_servers"], [base])     # metadata shown
        self.assertEqual(sign_in[7]["message"], {"client_id": "dynamic-client", "client_secret": "***"})
        asked = sign_in[8]["message"]
        self.assertEqual((asked["grant_type"], asked["code"], asked["code_verifier"], asked["resource"]),
                         ("authorization_code", "***", "***", world.url))
        self.assertEqual(sign_in[9]["message"],
                         {"access_token": "***", "token_type": "Bearer", "refresh_token": "***"})
        self.assertEqual(records[again]["headers"]["Authorization"], "Bearer ***")
        # OAuth's JSON is no JSON-RPC: not labelled as a reply; a Basic header says it is Basic
        self.assertEqual([r.get("kind") for r in sign_in], [None] * len(sign_in))
        self.assertEqual(sign_in[8]["headers"].get("Authorization"), "Basic ***")

        seen = "".join(lines)      # the text trace: 401, metadata, the refresh, the request again
        at_401 = seen.index("S→C 401")
        metadata = seen.index(f"C→S GET {base}/.well-known/oauth-protected-resource/mcp", at_401)
        refresh = seen.index(f"C→S POST {base}/token", metadata)
        self.assertIn("C→S POST /mcp", seen[refresh:])
        self.assertRegex(seen[refresh:], r'"grant_type": "refresh_token",\s+"refresh_token": "\*\*\*"')
        forms = [dict(parse_qsl(b.decode())) for _, p, _, b in world.log if p == "/token"]
        self.assertEqual([f["grant_type"] for f in forms], ["authorization_code", "refresh_token"])
        hidden = {*first_tokens, *world.tokens, *first_refreshes, *world.refreshes,
                  forms[0]["code"], forms[0]["code_verifier"], "dynamic-secret",
                  base64.b64encode(b"dynamic-client:dynamic-secret").decode()}
        self.assertEqual(len(hidden), 8)
        for secret in hidden:
            self.assertNotIn(secret, text)
            self.assertNotIn(secret, seen)


##############################################################################
# Extension: seeing the wire, --trace
##############################################################################

@needs_trace
class TraceTest(unittest.IsolatedAsyncioTestCase):
    """--trace, the server's side: a legacy SSE session reads as the capture did."""

    async def test_a_legacy_session_reads_as_the_capture_in_wire_order(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.jsonl")
            trace = mcp_min._Trace(path)
            http = await start_http(mcp_min.demo_server(), "127.0.0.1", 0, token="s3cret", trace=trace)
            closed = "(the GET /sse stream closed: the session ends with it)"
            try:
                async with mcp_min.Client(f"http://127.0.0.1:{http.port}/sse", transport="sse",
                                          token="s3cret", timeout=TIMEOUT) as client:
                    await client.list_tools()
                    await client.call_tool("getUsers")
                    await client.call_tool("addUser", {"name": "Carson", "email": "carson@gmail.com"})
                deadline = time.monotonic() + TIMEOUT
                while closed not in pathlib.Path(path).read_text(encoding="utf-8"):   # the server saw it go
                    self.assertLess(time.monotonic(), deadline)
                    await asyncio.sleep(0.01)
            finally:
                await http.close()
                trace.file.close()
            with open(path, encoding="utf-8") as f:
                text = f.read()
        records = [json.loads(line) for line in text.splitlines()]
        self.assertNotIn("s3cret", text)                        # the token is masked
        self.assertEqual(records[0]["headers"]["authorization"], "Bearer ***")
        sid = records[2]["data"].partition("=")[2]
        self.assertEqual(records[2]["data"], f"/messages?sessionId={sid}")   # as on the wire
        self.assertRegex(sid, "^[0-9a-f]{32}$")
        post = f"POST /messages?sessionId={sid}"
        self.assertEqual([(r["dir"], r["head"], mcp_min._summary(r) if "kind" in r else "") for r in records], [
            ("C→S", "GET /sse", ""),
            ("S→C", "200 OK  (an SSE stream opens)", ""),
            ("S→C", "event: endpoint", ""),
            ("C→S", post, "request #1 initialize"),
            ("S→C", "202 Accepted", ""),
            ("S→C", "event: message", "response #1 (initialize) ok"),
            ("C→S", post, "notification notifications/initialized"),
            ("S→C", "202 Accepted", ""),
            ("C→S", post, "request #2 tools/list"),
            ("S→C", "202 Accepted", ""),
            ("S→C", "event: message", "response #2 (tools/list) ok"),
            ("C→S", post, "request #3 tools/call getUsers"),
            ("S→C", "202 Accepted", ""),
            ("S→C", "event: message", "response #3 (tools/call) ok"),
            ("C→S", post, "request #4 tools/call addUser"),
            ("S→C", "202 Accepted", ""),
            ("S→C", "event: message", "response #4 (tools/call) ok"),
            ("S→C", closed, "")])

    def test_hostile_messages_are_summarized_not_raised(self):
        trace = mcp_min._Trace(os.devnull)
        self.addCleanup(trace.file.close)
        for message in ([[[[]]]], [1, "x", None, {"id": 1}], {"method": 5, "id": [1]},
                        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ["x"]},
                        {"id": {"a": 1}, "error": "bad"}, "text", 3):
            trace.message("in", "stdin", message)
        trace.line("in", "stdin", b"\xff not json")
        for i in range(3 * trace.ASKED):    # requests never answered: what is remembered is bounded
            trace.message("in", "stdin", {"jsonrpc": "2.0", "id": i, "method": "ping"})
        self.assertLessEqual(len(trace.asked), trace.ASKED)

    def test_replies_name_their_request_or_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.jsonl")
            trace = mcp_min._Trace(path)
            batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(60)]
            trace.message("in", "http", batch)
            trace.message("out", "http", [{"jsonrpc": "2.0", "id": i, "result": {}} for i in range(60)])
            # Two sessions' request 7, different methods, on one trace: no reply is mislabelled.
            trace.message("in", "http", {"jsonrpc": "2.0", "id": 7, "method": "tools/call"})
            trace.message("in", "http", {"jsonrpc": "2.0", "id": 7, "method": "prompts/get"})
            trace.message("out", "http", {"jsonrpc": "2.0", "id": 7, "result": {}})
            trace.message("in", "http", {"jsonrpc": "2.0", "id": "\ud800", "method": "ping"})  # no UTF-8
            trace.file.close()
            with open(path, encoding="utf-8") as f:
                records = [json.loads(line) for line in f]
        self.assertEqual(records[0]["count"], 60)
        self.assertEqual(mcp_min._summary(records[1])[:40], "batch of 60: response #0 (ping) ok; resp")
        self.assertEqual(records[1]["items"][-1]["answers"], "ping")
        self.assertNotIn("answers", records[4])
        self.assertEqual(len(records), 6)

    def test_a_trace_that_cannot_be_written_never_stops_the_server(self):
        # --trace into a pipe nobody reads any more (`| head` that ended): answers still go out.
        process = subprocess.Popen([*PYTHON, MCP_MIN, "serve", "--stdio", "--trace"], cwd=HERE,
                                   env=_clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        process.stderr.close()      # every write to it is EPIPE from now on
        out, _ = process.communicate(
            "".join(json.dumps(m) + "\n" for m in (rpc(0, "initialize", init_params()),
                                                   rpc(1, "ping"))).encode(), timeout=30)
        self.assertEqual([json.loads(line)["id"] for line in out.splitlines()], [0, 1])


@needs_trace
class HttpTraceTest(HttpTestCase):
    """The trace of an HTTP server."""

    async def test_tracing_a_deeply_nested_body_cannot_drop_the_request(self):
        # Regression: --trace recursed on a 1 KB body and the connection died unanswered.
        with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as devnull:
            path = os.path.join(tmp, "trace.jsonl")
            for target in ("-", path):      # shown on stderr, and recorded as JSON Lines
                with mock.patch.object(sys, "stderr", devnull):
                    self.http.trace = mcp_min._Trace(target)
                response = await self.client.post(b"[" * 500 + b"]" * 500)
                self.assertEqual(response.status, 400, target)
            self.http.trace.file.close()
            self.http.trace = None
            with open(path) as f:
                records = [json.loads(line) for line in f]
        self.assertTrue(any("..." in json.dumps(r.get("message")) for r in records))


@needs_trace
class TraceHeadersTest(unittest.IsolatedAsyncioTestCase):
    """--trace shows the headers that drive the protocol, and never a secret."""

    async def test_challenges_allow_and_routing_headers_shown_a_token_in_a_url_not(self):
        # WWW-Authenticate, Allow, Mcp-Method, Mcp-Name and Mcp-Param-* were left out (the capture
        # of OAuth discovery showed a bare 401); a token sent in the URL was written verbatim.
        server = region_server()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.jsonl")
            trace = mcp_min._Trace(path)
            http = await start_http(server, "127.0.0.1", 0, token=TOKEN, trace=trace)
            client = HttpClient(http.port, TOKEN)
            message = modern(1, "tools/call", {"name": "where", "arguments": {"region": "eu"}})
            try:
                self.assertEqual((await client.request("POST", "/mcp?access_token=URL-SECRET-1", call(1, "x"),
                                                       {"Authorization": None})).status, 401)
                self.assertEqual((await client.request("POST", "/sse", rpc(2, "ping"))).status, 405)
                self.assertEqual((await client.post(message, headers={
                    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "where",
                    "Mcp-Param-Region": "eu"})).status, 200)
            finally:
                await client.close()
                await http.close()
                trace.file.close()
            text = pathlib.Path(path).read_text(encoding="utf-8")
        self.assertNotIn("URL-SECRET-1", text)
        self.assertNotIn(TOKEN, text)
        shown = [{k.lower(): v for k, v in json.loads(line).get("headers", {}).items()}
                 for line in text.splitlines()]
        self.assertTrue(any(h.get("www-authenticate") == "Bearer" for h in shown))
        self.assertTrue(any(h.get("allow") == "GET" for h in shown))
        self.assertTrue(any((h.get("mcp-method"), h.get("mcp-name"), h.get("mcp-param-region")) ==
                            ("tools/call", "where", "eu") for h in shown))
        self.assertIn("access_token=***", text)


def trace_headers(stderr):
    """The header lines of a --trace on stderr, without their times."""
    return [line.split("s ", 1)[1] for line in stderr.splitlines()
            if re.match(r" *\d+\.\d{3}s [CS]→[CS] ", line)]


@needs_trace
@needs_cli
class TourTest(unittest.TestCase):
    """Issue 41: examples/tour.py (agent_walkthrough.py --tour) replays the seed capture with the
    demo served in the test's process: each `mcp_min.py:FIRST-LAST name` it prints is a def of
    that name there, on each transport; the reading guide's paths are the ones the tour finds;
    the reading list adds up."""

    EXAMPLES = os.path.join(HERE, "examples")
    LINE = re.compile(r"mcp_min\.py:(\d+)(?:-(\d+))?\s+([\w.]+)")
    # The seed capture's messages (VS Code 1.99, legacy HTTP+SSE, 2024-11-05), as the README
    # gives them: the tour plays these and no other, on every transport
    CAPTURE = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "Visual Studio Code", "version": "1.99"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "getUsers", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "addUser", "arguments": {"name": "Carson", "email": "carson@gmail.com"}}},
    ]

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, cls.EXAMPLES)
        try:
            import tour
        finally:
            sys.path.remove(cls.EXAMPLES)
        cls.tour = tour
        cls.played = {}
        for transport in ("sse", "http", "stdio"):
            recorder = asyncio.run(tour.play(transport))
            cls.played[transport] = recorder, tour.render(recorder, transport)
        # --startup: the server's start and stop listed, not a line each
        cls.startup = tour.render(cls.played["sse"][0], "sse", startup=True)
        # Every def of mcp_min.py, read here: its first line -> (last line, dotted name)
        cls.defs = {}
        with open(MCP_MIN, encoding="utf-8") as f:
            cls.source = f.read().split("\n")

        def visit(node, outer):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    if not isinstance(child, ast.ClassDef):
                        name = ".".join([*outer, child.name])
                        cls.defs[child.lineno] = (child.end_lineno, name)
                    visit(child, [*outer, child.name])
                else:
                    visit(child, outer)
        with open(MCP_MIN, encoding="utf-8") as f:
            visit(ast.parse(f.read()), [])

    def test_every_line_names_a_def_at_that_line(self):
        texts = {transport: text for transport, (_, text) in self.played.items()}
        for transport, text in [*texts.items(), ("sse --startup", self.startup)]:
            with self.subTest(transport=transport):
                found = self.LINE.findall(text)
                self.assertGreaterEqual(len(found), 30, text)
                for first, last, name in found:
                    self.assertIn(int(first), self.defs, f"no def at line {first} ({name})")
                    self.assertEqual(self.defs[int(first)], (int(last or self.defs[int(first)][0]),
                                                             name))

    def test_the_readmes_excerpt_names_defs_at_their_lines(self):
        # STYLE.md 10: the README's excerpt of the sse tour cannot rot (after mcp_min.py's lines
        # move, paste the tour's output again: agent_walkthrough.py --transport sse --tour --readme)
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        command = "python3 examples/agent_walkthrough.py --transport sse --tour"
        excerpt = readme.split(command + "\n```\n\n```text\n", 1)[1].split("```", 1)[0]
        found = self.LINE.findall(excerpt)
        self.assertGreaterEqual(len(found), 20)
        again = f"paste the tour's excerpt again: {command} --readme"
        for first, last, name in found:
            self.assertEqual(self.defs.get(int(first), (None, None)), (int(last), name),
                             f"README: mcp_min.py:{first}-{last} {name} ({again})")

    def test_each_frame_shows_what_handled_it(self):
        shown = {t: {name for _, _, name in self.LINE.findall(text)}
                 for t, (_, text) in self.played.items()}
        self.assertLessEqual({"_sse_get", "_sse_post", "Session.receive", "_initialize",
                              "_call_tool", "_Connection.direct"}, shown["sse"])
        self.assertLessEqual({"_mcp_post", "_initialize", "_call_tool"}, shown["http"])
        self.assertLessEqual({"serve_stdio.readable", "Session.receive", "_initialize",
                              "_call_tool"}, shown["stdio"])
        sse = self.played["sse"][1]
        self.assertIn("⇢ mcp_min.py:", sse)     # the answer's hop to the GET stream
        self.assertIn("no answer, so no event", sse.split("notifications/initialized")[1]
                      .split("C→S")[0])
        for table in ("_ROUTES", "_METHODS", "_LIFECYCLE", "_NOTIFICATIONS"):
            self.assertRegex(sse, rf"reads [^\]]*{table}")
        # The server's start and stop: apart, after the frames, a line each (--startup lists them)
        frames, apart = sse.split("\nApart, optional reading")
        apart = apart.split("\nThe paths, whole")[0]
        self.assertIn("(the client leaves)", frames)
        self.assertNotIn("(the server starts", frames)
        self.assertRegex(apart, r"\(the server starts, before the first frame: \d+ defs ran, "
                                r"\d+ lines\)")
        self.assertRegex(apart, r"\(the server stops, after the client left: \d+ defs ran")
        self.assertNotIn("mcp_min.py:", apart)
        listed = self.startup.split("\nApart, optional reading")[1].split("\nThe paths, whole")[0]
        self.assertLessEqual({"demo_server", "Tool._made", "HttpServer.start", "HttpServer.close"},
                             {name for _, _, name in self.LINE.findall(listed)})
        # What every request runs is shown once, not in each frame (the reading list names
        # every def once more, after the frames)
        self.assertEqual(frames.count("  HttpServer._parse_head") + frames.count("  _parse_head"),
                         1)

    def test_the_tour_replays_the_capture(self):
        # Issue 41 (2nd reader, 1): the capture's frames and no others, on every transport
        for transport, (recorder, text) in self.played.items():
            with self.subTest(transport=transport):
                sent = [frame for frame in recorder.frames if "dir" in frame]
                self.assertEqual([frame["message"] for frame in sent if "message" in frame],
                                 self.CAPTURE)
                # each server speaks the capture's version: none needed an other one
                self.assertEqual(recorder.version, "2024-11-05")
                heard = [record for frame in recorder.frames for record in frame["records"]
                         if record.get("kind") == "response"]
                self.assertEqual([record["id"] for record in heard], [0, 1, 2, 3])
                self.assertNotIn("error", json.dumps([r["message"] for r in heard]))
                marks = [frame["mark"] for frame in recorder.frames if "mark" in frame]
                self.assertEqual(marks[:2], ["the server starts", "the client leaves"])
        recorder, text = self.played["sse"]
        sent = [frame for frame in recorder.frames if "dir" in frame]
        self.assertEqual([frame["head"].split("?")[0] for frame in sent],
                         ["GET /sse"] + ["POST /messages"] * 5)
        # every answer an `event: message` on the GET stream's connection, none on a POST's
        heard = [record for frame in recorder.frames for record in frame["records"]
                 if record.get("kind") == "response"]
        self.assertEqual({(r["head"], r["conn"]) for r in heard}, {("event: message",
                                                                   sent[0]["conn"])})
        self.assertEqual(heard[0]["message"]["result"]["protocolVersion"], "2024-11-05")
        order = ["request #0 initialize", "notification notifications/initialized",
                 "request #1 tools/list", "request #2 tools/call getUsers",
                 "request #3 tools/call addUser", "(the client leaves)"]
        self.assertEqual(sorted(order, key=text.index), order)
        self.assertNotIn("prompts/get", text)

    def test_what_the_server_wrote_shows_in_its_order(self):
        # Issue 41 (2nd reader, 4): a POST's 202 and its answer (on the GET stream) race to the
        # client, which may read the answer first: shown in the order, and at the times, the
        # server wrote them
        time_of = re.compile(r"^\s*(\d+\.\d+)s S→C ")
        for transport, (recorder, _) in self.played.items():
            for n, frame in enumerate(recorder.frames):
                if "dir" not in frame:
                    continue
                calls = [(i, call) for i, call in enumerate(recorder.calls) if call.frame == n]
                lines = self.tour.in_order(recorder, n, calls)
                times = [float(time_of.match(line)[1]) for line in lines if time_of.match(line)]
                with self.subTest(transport=transport, frame=lines[0]):
                    self.assertEqual(times, sorted(times))
                    if transport == "sse" and frame.get("kind") == "request":
                        self.assertIn("202 Accepted", lines[1])
                        self.assertIn("event: message", lines[2])

    def test_the_reading_list_adds_up(self):
        # Issue 41 (2nd reader, 3): every def the capture's frames ran, once, in the file's order,
        # as "read" or "skim"; each total the sum of its entries' lines
        for transport, (recorder, text) in self.played.items():
            with self.subTest(transport=transport):
                tail, tables = text.split("\nThe reading list: ")[1].split("\n  tables: ")
                defs, total = map(int, re.search(r"(\d+) defs, (\d+) lines in all", tail).groups())
                # the tables the lookups read, each at the lines where it is made
                count, lines = map(int, re.match(r"(\d+), (\d+) lines", tables).groups())
                made = {name: (int(first), int(last)) for name, first, last in
                        re.findall(r"(\w+)  \(mcp_min\.py:(\d+)-(\d+)\)", tables)}
                self.assertEqual(len(made), count)
                self.assertEqual(sum(last - first + 1 for first, last in made.values()), lines)
                for name, (first, last) in made.items():
                    self.assertRegex(self.source[first - 1], rf"^{name}\b")
                    self.assertTrue(self.source[last - 1].strip(), name)
                self.assertLessEqual({"_LIFECYCLE", "_TRANSITIONS", "_METHODS"}, set(made))
                parts = re.split(r"\n  (read|skim): (\d+) defs, (\d+) lines", tail)[1:]
                self.assertEqual(parts[0::4], ["read", "skim"])
                listed = {}
                for title, count, lines, body in zip(*[iter(parts)] * 4):
                    entries = self.LINE.findall(body)
                    for first, last, name in entries:
                        self.assertEqual(self.defs.get(int(first)), (int(last), name))
                    spans = [(int(first), int(last)) for first, last, _ in entries]
                    self.assertEqual(spans, sorted(spans))      # the file's order
                    self.assertEqual(len(entries), int(count))
                    self.assertEqual(sum(last - first + 1 for first, last in spans), int(lines))
                    listed[title] = {name for _, _, name in entries}
                self.assertEqual(len(listed["read"]) + len(listed["skim"]), defs)
                self.assertEqual(total, sum(int(n) for n in parts[2::4]))
                self.assertEqual(listed["read"] & listed["skim"], set())
                # every def the frames ran is listed, or lies in one listed (an inner def)
                spans = [(first, self.defs[first][0]) for first in
                         {int(f) for f, _, _ in self.LINE.findall(tail)}]
                apart = {"the server starts", "the server stops"}
                for call in recorder.calls:
                    if recorder.frames[call.frame].get("mark") not in apart:
                        self.assertTrue(any(first <= call.fn.first and call.fn.last <= last
                                            for first, last in spans), call.fn.name)
        read, skim = self.tour.reading_list(self.played["sse"][0])
        read, skim = {fn.name for fn in read}, {fn.name for fn in skim}
        self.assertLessEqual({"_sse_get", "_sse_post", "Session.receive", "Session._serve",
                              "_initialize", "_call_tool", "_Handler.call", "Tool.result",
                              "_Stream.put", "_Connection.hold"}, read)
        self.assertLessEqual({"HttpServer._connection", "_parse_head", "HttpServer._check_peer",
                              "HttpServer._read_body", "_Timer.set", "_Account.take"}, skim)

    def test_no_extension_runs_for_the_capture(self):
        # Issue 41 (1): on 122d6f1 17 functions of the extensions ran on the capture's path (the
        # tasks' tools/call for everyone, the 2026-07-28 era's claims ...), on 67feda8 one (the
        # era's _prepare_server, at start-up); the demo's own tools and
        # what they call excepted (they live in the command line's section), none may. (On /mcp
        # the streams are numbered, so resumable: that extension serves them there.)
        def demo(fn):
            return fn is not None and fn.name.startswith("demo_")
        for transport in ("sse", "stdio"):
            recorder = self.played[transport][0]
            ran = {call.fn.name for call in recorder.calls     # start-up and shutdown too
                   if call.fn.section.startswith("Extension")
                   and not (demo(call.fn) or demo(call.caller))}
            self.assertEqual(ran, set(), transport)

    def test_what_the_capture_runs_comes_before_the_rest(self):
        # Issue 41 (3): in a class or section on the capture's path, a "# Below:" line opens what
        # the capture never runs (batches, time limits, CORS ...): nothing it runs lies under one.
        with open(MCP_MIN, encoding="utf-8") as f:
            source = f.read()
        lines = source.splitlines()
        classes = [(node.lineno, node.end_lineno) for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.ClassDef)]
        banners = [n for n, line in enumerate(lines, 1) if line.startswith("# Core:")
                   or line.startswith("# Extension:")]
        marks = [n for n, line in enumerate(lines, 1) if line.strip().startswith("# Below:")]
        self.assertGreaterEqual(len(marks), 5)
        recorder = self.played["sse"][0]
        ran = {call.fn.first: call.fn.name for call in recorder.calls
               if recorder.frames[call.frame].get("mark") != "the server stops"}
        for mark in marks:
            if lines[mark - 1].startswith(" "):     # a class's: to its end
                end = min(last for first, last in classes if first < mark <= last)
            else:                                   # a section's: to the next banner
                end = min(n for n in banners if n > mark)
            under = {name for first, name in ran.items() if mark < first <= end}
            self.assertEqual(under, set(), f"run by the capture, below line {mark}")

    def test_the_reading_guide_gives_the_paths_the_tour_finds(self):
        recorder, _ = self.played["sse"]
        handlers = self.tour.entries(recorder, recorder.server)
        found = {}
        for n in self.tour.guided(recorder):
            to, answer = self.tour.chain(recorder, n, handlers)
            found[self.tour.about(recorder.frames[n])] = to
            if answer:
                found["its answer"] = answer
        self.assertEqual(set(found), {"GET /sse", "POST /messages initialize", "its answer"})
        # The guide: "NAME: a -> b" lines, a path going on in lines that begin with "->"
        guide, key = {}, None
        for line in mcp_min.__doc__.splitlines():
            line = line.strip()
            head, colon, rest = line.partition(": ")
            if colon and head in found:
                key, guide[head] = head, rest
            elif key and line.startswith("->"):
                guide[key] += " " + line
            else:
                key = None
        guide = {k: [name.strip() for name in v.split("->")] for k, v in guide.items()}
        self.assertEqual(guide, found)


@needs_trace
class CaptureTest(unittest.IsolatedAsyncioTestCase):
    """examples/capture.py: a trace drawn as a sequence diagram, one arrow per frame labelled as the
    text trace says it, one lane per connection; from a server's trace or a client's."""

    EXAMPLES = os.path.join(HERE, "examples")

    @classmethod
    def setUpClass(cls):
        spec = importlib.util.spec_from_file_location("capture", os.path.join(cls.EXAMPLES, "capture.py"))
        cls.capture = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.capture)

    @staticmethod
    def picture(page):
        """What a page draws: its arrows (dir, conn, n: the frames it stands for, label), its lanes."""
        from html.parser import HTMLParser
        arrows, lanes = [], set()

        class Reader(HTMLParser):
            label = None    # the arrow whose label is being read: text of class l, less its ×count

            def handle_starttag(self, tag, attrs):
                a = dict(attrs)
                kind = (a.get("class") or "").split()
                if tag == "g" and "f" in kind:
                    arrows.append({"dir": a["data-dir"], "conn": a["data-conn"], "n": int(a.get("data-n", 1)),
                                   "label": ""})
                elif tag == "g" and "lane" in kind:
                    lanes.add(a["data-conn"])
                if tag == "text" or tag == "tspan":
                    self.label = arrows[-1] if tag == "text" and kind == ["l"] else None

            def handle_endtag(self, tag):
                if tag == "text":
                    self.label = None

            def handle_data(self, data):
                if self.label is not None:
                    self.label["label"] += data
        reader = Reader()
        reader.feed(page)
        reader.close()
        return types.SimpleNamespace(arrows=arrows, lanes=lanes)

    def assertDrawnFrameByFrame(self, records, page):
        """Each record an arrow, in order, labelled as the text trace labels it, in the lane of
        its connection; a lane for each connection."""
        drawn = self.picture(page)
        text = "".join(mcp_min._capture_text(r, r.get("headers"), r.get("data"), r.get("message"))
                       for r in records)
        self.assertEqual([f"{a['dir']} {a['label']}" for a in drawn.arrows], trace_headers(text))
        self.assertEqual([a["conn"] for a in drawn.arrows], [str(r.get("conn", "stdio")) for r in records])
        self.assertEqual(drawn.lanes, {a["conn"] for a in drawn.arrows})
        return drawn

    def test_the_walkthrough_on_each_transport(self):
        def walk(transport):
            page = os.path.join(tmp, f"{transport}.html")
            done = subprocess.run([*PYTHON, os.path.join(self.EXAMPLES, "agent_walkthrough.py"), "--trace",
                                   "--transport", transport, "--picture", page], capture_output=True,
                                  text=True, timeout=60, cwd=HERE, env=_clean_env())
            self.assertEqual(done.returncode, 0, done.stderr)
            return trace_headers(done.stderr), pathlib.Path(page).read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory() as tmp:
            walks = dict(zip(("stdio", "http", "sse"), side_by_side(walk, ("stdio",), ("http",), ("sse",))))
        last = {"stdio": "S→C stdout  response #6 (prompts/get) ok",
                "http": "S→C 200 OK  response #6 (prompts/get) ok",
                "sse": "S→C event: message  response #6 (prompts/get) ok"}
        # Issue 34: a transport named is used at once, as VS Code's "type": "sse": no probe first
        self.assertEqual(walks["sse"][0][0], "C→S GET /sse")
        for transport, (text, page) in walks.items():
            drawn = self.picture(page)
            self.assertEqual([f"{a['dir']} {a['label']}" for a in drawn.arrows], text)     # frame by frame
            self.assertIn(last[transport], text)
            if transport == "stdio":
                self.assertEqual(drawn.lanes, {"stdio"})
                continue
            # Our client opens a connection for each HTTP request: a lane each, its answer's head in it.
            requests = [a for a in drawn.arrows if a["dir"] == "C→S"]
            heads = [a for a in drawn.arrows if a["dir"] == "S→C" and a["label"][:3].isdigit()]
            self.assertEqual(len({a["conn"] for a in requests}), len(requests))
            self.assertEqual(drawn.lanes, {a["conn"] for a in requests})
            self.assertEqual([a["conn"] for a in heads], [a["conn"] for a in requests])
            if transport == "sse":      # legacy: every answer comes on the GET /sse stream
                get = next(a["conn"] for a in requests if a["label"] == "GET /sse")
                events = [a["conn"] for a in drawn.arrows if a["label"].startswith("event: message")]
                self.assertEqual(events, [get] * 6)

    async def modern(self, port, path):
        """2026-07-28: listen, a call that reports progress, one that changes the tools (listen
        hears it), one that asks two questions in turn (three rounds)."""
        answers = iter([{"action": "accept", "content": {"name": "Ada"}},
                        {"action": "accept", "content": {"color": "blue"}}])
        heard = asyncio.Event()
        async with mcp_min.Client(f"http://127.0.0.1:{port}/mcp", era="2026-07-28", trace=path,
                                  timeout=TIMEOUT, elicitation=lambda params: next(answers)) as client:
            listen = asyncio.ensure_future(client.listen(on_tools=lambda params: heard.set()))
            await until(lambda: "acknowledged" in pathlib.Path(path).read_text(encoding="utf-8"), "listening")
            await client.call_tool("test_tool_with_progress", on_progress=lambda *progress: None)
            await client.call_tool("test_trigger_tool_change")
            done = await client.call_tool("test_input_required_result_multi_round")
            self.assertEqual(done["content"][0]["text"], "Ada likes blue")
            await asyncio.wait_for(heard.wait(), TIMEOUT)
            listen.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listen
        client.trace.file.close()

    async def session(self, port, path):
        """2025-11-25: its GET stream, an elicitation on a call's stream, a stream resumed."""
        async with mcp_min.Client(f"http://127.0.0.1:{port}/mcp", era="handshake", trace=path, timeout=TIMEOUT,
                                  elicitation=lambda params: {"action": "decline"}) as client:
            await client.call_tool("test_elicitation", {"message": "Your name?"})
            done = await client.call_tool("test_reconnection")
            self.assertIn("completed", done["content"][0]["text"])
        client.trace.file.close()

    async def test_both_eras_drawn_from_either_end(self):
        asyncio.get_running_loop().slow_callback_duration = 5     # servers start, pages are drawn here
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        path = {f"{era}-{end}": os.path.join(tmp, f"{era}-{end}.jsonl")
                for era in ("modern", "session") for end in ("server", "client")}
        servers = [ServerProcess(os.path.join(self.EXAMPLES, "everything.py"),
                                 f"--trace={path[era + '-server']}") for era in ("modern", "session")]
        for server in servers:
            self.addCleanup(server.close)
        await asyncio.gather(self.modern(servers[0].port, path["modern-client"]),
                             self.session(servers[1].port, path["session-client"]))
        for server in servers:
            server.proc.terminate()     # its trace is whole once it is gone
            server.proc.wait(TIMEOUT)
        records = {name: self.capture.read(p) for name, p in path.items()}
        for name, page in ((name, self.capture.draw(records[name], name)) for name in path):
            with self.subTest(name):
                drawn = self.assertDrawnFrameByFrame(records[name], page)

                def lane(what):     # of the arrow whose label ends so
                    return next(a["conn"] for a in drawn.arrows if a["label"].endswith(what))
                if name.startswith("modern"):   # each request its own POST, so its own lane
                    requests = [a["conn"] for a in drawn.arrows if "  request #" in a["label"]]
                    self.assertEqual(len(set(requests)), len(requests))
                    heard = {a["conn"] for a in drawn.arrows if "[listen #" in a["label"]}
                    self.assertEqual(heard, {lane("subscriptions/listen")})
                    first = next(r["id"] for r in records[name]
                                 if r.get("name") == "test_input_required_result_multi_round")
                    self.assertEqual(re.findall(r'class="rounds">.*?>([^<]+)<tspan[^>]*>([^<]+)<', page),
                                     [(f"tools/call #{first}", "3 rounds")])
                else:       # the server's question on the stream of the call that asks it
                    self.assertEqual(lane("elicitation/create"), lane("tools/call test_elicitation"))
                    resumed = lane("tools/call test_reconnection")
                    again = next(str(r["conn"]) for r in records[name] if r["head"] == "GET /mcp"
                                 and "last-event-id" in {k.lower() for k in r.get("headers", {})})
                    self.assertEqual(re.findall(r"<title>connection (\w+): GET /mcp \(resumes the stream of "
                                                r"connection (\w+)\)", page), [(again, resumed)])
                    columns = dict(re.findall(r'class="lane" data-conn="(\w+)"><rect x="(\d+)"', page))
                    self.assertEqual(columns[again], columns[resumed])
        for era in ("modern", "session"):   # the same requests, seen from either end
            server, client = ([(r["method"], r["id"], r.get("name")) for r in records[f"{era}-{end}"]
                               if r.get("kind") == "request" and r["dir"] == "C→S"]
                              for end in ("server", "client"))
            self.assertEqual(server, client)
        for name in ("modern-server", "modern-client"):     # a trace without "conn": its lanes guessed
            old = [{k: v for k, v in r.items() if k not in ("conn", "lane", "run")} for r in records[name]]
            drawn = self.picture(self.capture.draw(old, name))
            pairs = set(zip([str(r["conn"]) for r in records[name]], [a["conn"] for a in drawn.arrows]))
            self.assertEqual(len(pairs), len(drawn.lanes))
            self.assertEqual(len(pairs), len({r["conn"] for r in records[name]}))
        # --trace=FILE appends: two runs in one file keep their connections apart
        drawn = self.picture(self.capture.draw(records["modern-client"] + records["session-client"], "both"))
        self.assertEqual(len(drawn.lanes), sum(len({r["conn"] for r in records[f"{era}-client"]})
                                               for era in ("modern", "session")))

    @staticmethod
    def write_big_trace(path, frames=10_000):
        """A server's trace of a long Streamable HTTP session, written by _Trace: a POST per call,
        and on its stream a priming event, progress, the result; the 500th call reports 120 times."""
        trace = mcp_min._Trace(path)
        headers = {"Host": "127.0.0.1:8080", "Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json", "Mcp-Session-Id": "f" * 32,
                   "MCP-Protocol-Version": "2025-11-25"}
        written = id_ = 0
        while written < frames:
            id_ += 1
            x, reports = trace.on(), min(120 if id_ % 500 == 0 else 2, frames - written - 5)
            asked = call(id_, "search", {"query": f"{id_} " + "x" * 120})
            x.http("in", "POST /mcp", headers, json.dumps(asked).encode())
            x.http("out", "200 OK", {"Content-Type": "text/event-stream"})
            x.event("out", {"id": f"{id_}-0", "retry": 1000, "data": ""})
            for k in range(reports):
                x.event("out", {"id": f"{id_}-{k + 1}", "event": "message", "data": note(
                    "notifications/progress", {"progressToken": id_, "progress": k, "total": reports})})
            x.event("out", {"id": f"{id_}-{reports + 1}", "event": "message", "data": {
                "jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": "y" * 800}]}}})
            x.note("out", "(the SSE stream ends: every answer was sent)")
            written += 5 + reports
        trace.file.close()

    def test_ten_thousand_frames_make_a_page_under_five_megabytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace, page = os.path.join(tmp, "big.jsonl"), os.path.join(tmp, "big.html")
            self.write_big_trace(trace)
            done = subprocess.run([*PYTHON, os.path.join(self.EXAMPLES, "capture.py"), trace, "-o", page],
                                  capture_output=True, text=True, timeout=60, cwd=HERE, env=_clean_env())
            self.assertEqual(done.returncode, 0, done.stderr)
            size, text = os.path.getsize(page), pathlib.Path(page).read_text(encoding="utf-8")
        self.assertLess(size, 5_000_000)
        arrows = re.findall(r'<g class="f [^"]*" data-i="\d+"(?: data-n="(\d+)")?', text)
        self.assertEqual(sum(int(n or 1) for n in arrows), 10_000)
        self.assertEqual(re.findall(r'notifications/progress<tspan class="x"> ×(\d+)<', text), ["120", "120"])
        self.assertIn(f"10000 frames, {text.count('>POST /mcp  request #')} connections", text)

    # Issue 34 item 12
    def test_what_a_frame_costs_in_memory_does_not_grow_with_the_trace(self):
        """What capture.py holds a frame, in memory: its small fields and where its line starts
        (~1 KB); its headers and JSON are read again when its detail is built, and the page is
        written a part at a time. Read whole, a frame held 5 to 9 KB (100,000 frames: over half a
        gigabyte); the bound is the issue's, 250 MB for 100,000 frames. The peak for 2,500 frames
        is taken from that for 10,000: the interpreter's own cancels out."""
        if not os.path.exists("/proc/self/status"):
            self.skipTest("no /proc/self/status: its VmHWM is the peak read here")
        # The child's own peak: getrusage's ru_maxrss would count the forking parent's (this
        # process's) too, as Linux keeps the larger of the two across exec.
        peak = ("import re, runpy, sys; sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__'); "
                r"print(re.search(r'VmHWM:\s*(\d+) kB', open('/proc/self/status').read())[1])")

        def draw(frames):
            trace, page = os.path.join(tmp, f"{frames}.jsonl"), os.path.join(tmp, f"{frames}.html")
            self.write_big_trace(trace, frames)
            done = subprocess.run([*PYTHON, "-c", peak, os.path.join(self.EXAMPLES, "capture.py"), trace,
                                   "-o", page], capture_output=True, text=True, timeout=60, cwd=HERE,
                                  env=_clean_env())
            self.assertEqual(done.returncode, 0, done.stderr)
            return int(done.stdout.split()[-1]) * 1024     # bytes
        with tempfile.TemporaryDirectory() as tmp:
            small, big = side_by_side(draw, (2_500,), (10_000,))
        per_frame = (big - small) / 7_500
        self.assertLess(per_frame, 2_500, f"{small / 1e6:.0f} MB for 2,500 frames, {big / 1e6:.0f} MB "
                                          "for 10,000")


_FORGED = "\n   9.999s S→C stdout  FORGED"     # a trace line a peer would like us to print


# A stdio server whose every answer comes after a hostile notification, an answer to no request
# and a log message, with ESC, C1 bytes and newlines where the client's trace shows them.
_HOSTILE_WORDS = f'''
import json, sys
FORGED = {_FORGED!r}
def send(message):
    print(json.dumps(message), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "initialize":
        send({{"jsonrpc": "2.0", "id": message["id"], "result": {{
            "protocolVersion": message["params"]["protocolVersion"], "capabilities": {{"logging": {{}}}},
            "serverInfo": {{"name": "hostile", "version": "1"}}}}}})
        continue
    send({{"jsonrpc": "2.0", "method": "\\x1b]0;pwned\\x07" + FORGED}})
    send({{"jsonrpc": "2.0", "id": "\\x1b[2J\\x9b2J" + FORGED, "result": {{}}}})
    send({{"jsonrpc": "2.0", "method": "notifications/message", "params": {{"level": "info",
          "data": "\\x9b31m\\x85red" + FORGED}}}})
    send({{"jsonrpc": "2.0", "id": message["id"], "result": {{}}}})
'''


@needs_trace
class TraceEscapeTest(unittest.IsolatedAsyncioTestCase):
    """The text trace shows a peer's control characters escaped: never obeyed by a terminal,
    never a line of its own (the JSON Lines trace: TraceBidiTest)."""

    def assertShownNotObeyed(self, text):
        self.assertIsNone(re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text), "a raw control character")
        for line in text.splitlines():
            self.assertRegex(line, r"^( *\d+\.\d{3}s (C→S|S→C) | {14})", "a line neither a frame's nor under one")
            self.assertNotRegex(line, r"^ *9\.999s", "a forged trace line")
        self.assertIn("\\x1b", text)    # shown, escaped
        self.assertIn("FORGED", text)

    def test_the_servers_text_trace_escapes_a_clients_words(self):
        # Issue 34 item 9: a method, an id or a tool name holding ESC and a newline wrote raw
        # ESC bytes (title, clear screen) and a forged trace line to stderr. Item 10: an error
        # with a null id read "response #None error -32600".
        lines = [rpc(0, "initialize", init_params()), rpc("\x1b]0;title\x07" + _FORGED, "ping"),
                 rpc(2, "\x1b[2J\x9b2J" + _FORGED), call(3, "\x1b[31mred\x85" + _FORGED), [], rpc(4, "ping")]
        done = subprocess.run([*SERVE, "serve", "--stdio", "--trace"], input="".join(
            json.dumps(m) + "\n" for m in lines).encode(), capture_output=True, timeout=30, cwd=HERE, env=_clean_env())
        self.assertEqual(len(done.stdout.splitlines()), 6)
        text = done.stderr.decode()
        self.assertShownNotObeyed(text)
        self.assertIn("request #2 \\x1b[2J\\x9b2J\\x0a   9.999s S→C stdout  FORGED", text)
        self.assertIn("S→C stdout  error with no id: -32600", text)
        self.assertNotIn("#None", text)

    async def test_the_clients_text_trace_escapes_a_servers_words(self):
        # Issue 34 item 9, the client's side: a hostile server's notification, an answer to
        # no request and a log message, shown escaped.
        lines = []
        trace = mcp_min._Trace("-", side="client")
        trace.file = _Lines(lines)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "hostile.py")
            with open(path, "w") as f:
                f.write(_HOSTILE_WORDS)
            async with mcp_min.Client([*PYTHON, path], era="handshake", timeout=TIMEOUT, trace=trace) as client:
                self.assertEqual(await client.ping(), {})
        text = "".join(lines)
        self.assertShownNotObeyed(text)
        self.assertIn("S→C stdout  notification \\x1b]0;pwned\\x07\\x0a   9.999s", text)
        self.assertIn("\\x9b31m", text)

    async def test_the_clients_text_trace_escapes_http_headers_and_sse_data(self):
        # Issue 34 item 9, over HTTP: a header the trace shows, an SSE id and data that is no JSON.
        lines = []
        trace = mcp_min._Trace("-", side="client")
        trace.file = _Lines(lines)
        hostile = _CarelessHttpServer(before="id: \x1b[2J\nevent: message\ndata: \x1b]0;pwned\x07\x85 no JSON\n\n"
                                      .encode(), headers=b"Location: /\x1b]0;pwned\x07\xc2\x9b\r\n")
        async with hostile as url, mcp_min.Client(url, era="handshake", timeout=TIMEOUT, trace=trace) as client:
            self.assertEqual(await client.ping(), {})
        text = "".join(lines)
        self.assertIsNone(re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text), "a raw control character")
        self.assertIn("S→C id: \\x1b[2J event: message", text)
        self.assertIn("data: \\x1b]0;pwned\\x07\\x85 no JSON", text)
        self.assertIn("location: /\\x1b]0;pwned\\x07", text)

    def test_an_error_with_no_id_is_named_so_in_the_trace_and_the_picture(self):
        # Issue 34 item 10: "response #None error -32600" in the text trace and in
        # examples/capture.py's labels, which are the text trace's words (_summary).
        spec = importlib.util.spec_from_file_location("capture", os.path.join(HERE, "examples", "capture.py"))
        capture = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(capture)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.jsonl")
            done = subprocess.run([*SERVE, "serve", "--stdio", f"--trace={path}"], capture_output=True,
                                  input=b'not json\n[]\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
                                  timeout=30, cwd=HERE, env=_clean_env())
            self.assertEqual(len(done.stdout.splitlines()), 3, done.stderr)
            records = capture.read(path)
        replies = [r for r in records if r["dir"] == "S→C"]
        self.assertEqual(sorted(capture.label(r) for r in replies), [
            "stdout  error with no id: -32600", "stdout  error with no id: -32700", "stdout  response #1 (ping) ok"])
        drawn = CaptureTest.picture(capture.draw(records, "no id"))
        self.assertIn("S→C stdout  error with no id: -32700", [f"{a['dir']} {a['label']}" for a in drawn.arrows])
        self.assertEqual(mcp_min._summary({"kind": "response", "id": None, "outcome": "error -32600"}),
                         "error with no id: -32600")


_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@runs_beside
@needs_trace
class TraceBidiTest(unittest.TestCase):
    """Issue 39 item 13: the text trace escaped C0 and C1, and let Unicode's bidirectional controls
    through: an id or a method showed reordered on the terminal. Now they are escaped too."""

    def test_bidi_controls_in_an_id_or_a_method_are_shown_escaped(self):
        lines = [rpc(0, "initialize", init_params()), rpc("id" + _BIDI, "ping"),
                 rpc(2, "tools/\u202ellac"), rpc(3, "ping")]
        done = subprocess.run([*SERVE, "serve", "--stdio", "--trace"], input="".join(
            json.dumps(m) + "\n" for m in lines).encode(), capture_output=True, timeout=30, cwd=HERE,
                              env=_clean_env())
        self.assertEqual(len(done.stdout.splitlines()), 4, done.stderr)
        text = done.stderr.decode()
        self.assertIsNone(re.search(f"[{_BIDI}]", text), "a raw bidi control")
        self.assertIn("request #id\\u061c\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066"
                      "\\u2067\\u2068\\u2069 ping", text)
        self.assertIn("request #2 tools/\\u202ellac", text)

    def test_the_json_lines_trace_escapes_c1_and_bidi_controls_and_keeps_the_strings(self):
        # JSON escapes C0 itself; C1 (\x9b is a CSI to a terminal) and bidi controls went into
        # the file raw, for a `tail -f` to obey. Now escaped; a JSON reader gets the same strings.
        method = "\x1b[2J\x9b2J\x85" + _BIDI + "ï"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.jsonl")
            done = subprocess.run([*SERVE, "serve", "--stdio", f"--trace={path}"], input="".join(
                json.dumps(m) + "\n" for m in [rpc(0, "initialize", init_params()), rpc(1, method)]).encode(),
                                  capture_output=True, timeout=30, cwd=HERE, env=_clean_env())
            self.assertEqual(len(done.stdout.splitlines()), 2, done.stderr)
            with open(path, encoding="utf-8") as f:
                text = f.read()
        self.assertIsNone(re.search(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_BIDI}]", text), "a raw control character")
        self.assertIn("ï", text)     # the rest as it was: not ASCII-escaped
        asked = [json.loads(line) for line in text.splitlines()][-2]
        self.assertEqual(asked["message"]["method"], method)


##############################################################################
# Extension: running behind a proxy or a balancer
##############################################################################

@needs_deploy
class BalancerTest(HttpTestCase):
    """Behind a balancer (issue 25): session ids start with the node it routes on; X-Forwarded-*
    are believed from --forwarded-allow-ips alone; /healthz; a stopping server drains."""
    options = {"node": "n7", "forwarded_allow_ips": "127.0.0.1", "allow_hosts": ["mcp.example.com"]}

    async def test_session_ids_start_with_the_node_and_stay_unguessable(self):
        sids = {await self.client.initialize() for _ in range(3)}
        self.assertEqual(len(sids), 3)
        for sid in sids:
            node, dot, rest = sid.partition(".")
            self.assertEqual(node + dot, "n7.")
            self.assertEqual(len(base64.urlsafe_b64decode(rest)), 24)      # 192 random bits, as before
        reader, writer = await self.client.connect()        # legacy: the endpoint's sessionId too
        writer.write(self.client.build("GET", "/sse", headers={"Accept": "text/event-stream"}))
        self.assertEqual((await read_head(reader)).status, 200)
        endpoint = (await read_event(reader))["data"]
        self.assertRegex(parse_qs_session(endpoint), r"^n7\.[0-9a-f]{32}$")
        response = await self.client.request("POST", endpoint, rpc(0, "initialize", init_params()))
        self.assertEqual(response.status, 202)      # taken: its answer comes on the stream
        self.assertEqual(json.loads((await read_event(reader))["data"])["id"], 0)

    async def test_listens_count_per_forwarded_client_not_per_proxy(self):
        opened = []
        for i in range(mcp_min.MAX_LISTENS // 16 + 1):
            opened.append(await open_listen(self.port, i, headers={"X-Forwarded-For": "10.0.0.1"}))
        self.assertIn("Too many", opened[-1][2]["error"]["message"])    # that client's share is full
        other = await open_listen(self.port, 99, headers={"X-Forwarded-For": "10.0.0.2"})
        self.assertEqual(other[2]["method"], "notifications/subscriptions/acknowledged")
        for _, writer, _ in opened + [other]:
            writer.close()

    async def test_an_id_another_node_made_is_404_saying_start_anew(self):
        async def both(sid):
            return [await self.client.post(rpc(1, "ping"), sid, LATEST_PROTOCOL_VERSION),
                    await self.client.request("POST", f"/messages?sessionId={sid}", rpc(1, "ping"))]
        for response in await both("n8.0123abcd"):
            self.assertEqual(response.status, 404)
            self.assertIn("another process made it", response.json()["error"]["message"])
            self.assertNotIn("n8", response.json()["error"]["message"])    # input is never echoed
        for response in await both("n7.0123abcd") + await both("0123abcd"):
            self.assertEqual(response.status, 404)
            self.assertEqual(response.json()["error"]["message"], "Session not found")

    def test_a_node_name_is_letters_and_digits(self):
        for bad in ("", "n.1", "n-1", "x" * 33, "nü"):
            with self.assertRaises(ValueError):
                mcp_min.HttpServer(self.server, node=bad)

    async def test_a_trusted_proxy_names_the_public_host_and_origin(self):
        def post(**headers):
            return self.client.post(rpc(0, "initialize", init_params()), headers=headers)
        public = {"X-Forwarded-Host": "mcp.example.com", "X-Forwarded-Proto": "https"}
        self.assertEqual((await post(**{"X-Forwarded-Host": "evil.example"})).status, 403)
        self.assertEqual((await post(**public, Origin="https://mcp.example.com")).status, 200)
        self.assertEqual((await post(**public, Origin="https://MCP.example.com")).status, 200)
        for origin in ("http://mcp.example.com", "https://evil.example", "null"):
            self.assertEqual((await post(**public, Origin=origin)).status, 403, origin)
        # Without -Proto the scheme is the connection's: http
        response = await post(**{"X-Forwarded-Host": "mcp.example.com"}, Origin="https://mcp.example.com")
        self.assertEqual(response.status, 403)

    async def test_forwarded_headers_from_anyone_else_are_ignored(self):
        for trusted in ((), ["10.0.0.0/8", "::1"]):
            http = await start_http(self.server, "127.0.0.1", 0, allow_hosts=["mcp.example.com"],
                                    forwarded_allow_ips=trusted)
            try:
                client = HttpClient(http.port)
                response = await client.post(rpc(0, "initialize", init_params()),
                                             headers={"X-Forwarded-Host": "evil.example"})
                self.assertEqual(response.status, 200, trusted)
                response = await client.post(rpc(0, "initialize", init_params()), headers={
                    "X-Forwarded-Host": "mcp.example.com", "X-Forwarded-Proto": "https",
                    "Origin": "https://mcp.example.com"})
                self.assertEqual(response.status, 403, trusted)
            finally:
                await http.close()

    async def test_the_trace_names_the_client_a_trusted_proxy_names(self):
        chains = {"127.0.0.1": "6.6.6.6, 203.0.113.7, 127.0.0.1",   # the last address that is no proxy's
                  "*": "6.6.6.6, 203.0.113.7",                     # every one a proxy's: the first
                  "10.0.0.0/8": "203.0.113.7"}                     # not a proxy: the connection's own
        with tempfile.TemporaryDirectory() as tmp:
            heads = {}
            for i, (trusted, chain) in enumerate(chains.items()):
                trace = mcp_min._Trace(os.path.join(tmp, f"{i}.jsonl"))
                http = await start_http(self.server, "127.0.0.1", 0, forwarded_allow_ips=trusted, trace=trace)
                try:
                    await HttpClient(http.port).post(rpc(0, "initialize", init_params()),
                                                     headers={"X-Forwarded-For": chain})
                finally:
                    await http.close()
                    trace.file.close()
                with open(trace.file.name, encoding="utf-8") as f:
                    heads[trusted] = next(r["head"] for r in map(json.loads, f) if r["dir"] == "C→S")
        self.assertEqual(heads, {"127.0.0.1": "POST /mcp  (from 203.0.113.7)",
                                 "*": "POST /mcp  (from 6.6.6.6)",
                                 "10.0.0.0/8": "POST /mcp  (from 127.0.0.1)"})

    def test_behind_a_proxy_oauth_needs_the_public_resource_url(self):
        def auth(resource=None):
            return mcp_min.ResourceServer(verify=lambda token: None, resource=resource)
        with self.assertRaisesRegex(ValueError, "resource"):
            mcp_min.HttpServer(self.server, auth=auth(), forwarded_allow_ips="127.0.0.1")
        mcp_min.HttpServer(self.server, auth=auth("https://mcp.example.com/mcp"),
                           forwarded_allow_ips="127.0.0.1")     # named: fine

    async def test_healthz_comes_before_the_host_and_token_checks(self):
        token = await start_http(self.server, "127.0.0.1", 0, token="s3cret")
        try:
            for port in (self.port, token.port):
                response = await HttpClient(port).request("GET", "/healthz", headers={"Host": "evil.example"})
                self.assertEqual((response.status, response.body), (200, b"ok\n"))
        finally:
            await token.close()

    async def test_a_stopping_server_says_503_and_serves_what_comes_on_open_connections(self):
        sid = await self.client.initialize()
        running = asyncio.ensure_future(self.client.post(call(5, "wait", {"label": "finished"}), sid,
                                                         LATEST_PROTOCOL_VERSION))
        await asyncio.wait_for(self.state.entered.wait(), TIMEOUT)
        kept = []       # two kept-alive connections, idle as a proxy keeps them
        for _ in range(2):
            reader, writer = await self.client.connect()
            writer.write(self.client.build("GET", "/healthz"))
            self.assertEqual((await read_response(reader)).status, 200)
            kept.append((reader, writer))
        closing = asyncio.ensure_future(self.http.close(grace=TIMEOUT))
        while not self.http.closing:
            await asyncio.sleep(0)
        with self.assertRaises(OSError):        # no new connection
            await self.client.connect()
        (reader, writer), (reader2, writer2) = kept
        writer.write(self.client.build("GET", "/healthz"))
        response = await read_response(reader)
        self.assertEqual((response.status, response.header("connection")), (503, "close"))
        self.assertTrue(await closed_by_server(reader))
        headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION}
        writer2.write(self.client.build("POST", "/mcp", call(6, "add", {"a": 2, "b": 3}), headers))
        response = await read_response(reader2)
        self.assertEqual((response.status, tool_text(response.messages()[0])), (200, "5"))
        self.assertEqual(response.header("connection"), "close")     # then the proxy lets it go
        self.assertTrue(await closed_by_server(reader2))
        self.state.gate.set()
        self.assertEqual(tool_text((await running).messages()[-1]), "finished")
        await asyncio.wait_for(closing, TIMEOUT)


##############################################################################
# Extension: the command line, and the built-in demo
##############################################################################

@runs_beside
@needs_cli
class CliTest(unittest.TestCase):
    def run_cli(self, *args, timeout=TIMEOUT):
        return subprocess.run([*PYTHON, MCP_MIN, *args], capture_output=True, text=True,
                              timeout=timeout, cwd=HERE, env=_clean_env(), stdin=subprocess.DEVNULL)

    def test_version(self):
        done = self.run_cli("--version")
        self.assertEqual(done.returncode, 0)
        self.assertIn(mcp_min.__version__, done.stdout)

    def test_trace_takes_a_jsonl_file_after_a_space(self):
        # Issue 33: --help shows `--trace [FILE]`, and `--trace t.jsonl` was refused.
        self.assertEqual(mcp_min._bare_trace(["--trace", "t.jsonl", "--port", "1"]),
                         ["--trace=t.jsonl", "--port", "1"])
        self.assertEqual(mcp_min._bare_trace(["--trace", "server.py"]), ["--trace=-", "server.py"])
        self.assertEqual(mcp_min._bare_trace(["x", "--trace"]), ["x", "--trace=-"])
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "t.jsonl")
            done = subprocess.run([*PYTHON, MCP_MIN, "client", f"{SERVE_CMD} serve --stdio", "tools/list",
                                   "--trace", trace], capture_output=True, text=True, timeout=30,
                                  cwd=HERE, env=_clean_env())
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(trace) as f:
                methods = [json.loads(line).get("method") for line in f]
        self.assertIn("tools/list", methods)

    def test_the_client_piped_into_head_ends_without_a_traceback(self):
        # Issue 33: `client ... | head` ended in a BrokenPipeError traceback.
        reader, writer = os.pipe()
        os.close(reader)    # the reader left before the answer is printed
        try:
            done = subprocess.run([*PYTHON, MCP_MIN, "client", f"{SERVE_CMD} serve --stdio", "tools/list"],
                                  stdout=writer, stderr=subprocess.PIPE, text=True, timeout=30, cwd=HERE,
                                  env=_clean_env())
        finally:
            os.close(writer)
        self.assertEqual(done.returncode, 1)
        self.assertNotIn("Traceback", done.stderr)
        self.assertNotIn("BrokenPipeError", done.stderr)

    @needs_auth_server
    def test_an_empty_token_is_refused(self):
        # Regression (issue 15): --token "" or MCP_TOKEN= turned authentication off, silently.
        cases = ((["--token", ""], {}), (["--token", " \t"], {}), ([], {"MCP_TOKEN": ""}))
        runs = side_by_side(lambda args, env: subprocess.run(
            [*PYTHON, MCP_MIN, "serve", "--port", "0", *args], cwd=HERE, env=_clean_env(**env),
            capture_output=True, text=True, timeout=TIMEOUT), *cases)
        for (args, env), done in zip(cases, runs):
            self.assertEqual(done.returncode, 2, (args, env, done.stderr))
            self.assertIn("token is empty", done.stderr)
        with self.assertRaises(ValueError):
            mcp_min.HttpServer(Server("x"), token="")

    def test_the_token_from_a_file_or_the_command_line_which_warns(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "token")
            with open(path, "w") as f:
                f.write("s3cret\n")
            side_by_side(self.serve_with_token, (["--token-file", path],), (["--token", "s3cret"],))

    def serve_with_token(self, args):
        import urllib.error
        import urllib.request
        process = subprocess.Popen([*PYTHON, MCP_MIN, "serve", "--port", "0", *args],
                                   cwd=HERE, env=_clean_env(), stderr=subprocess.PIPE, text=True)
        try:
            lines = [process.stderr.readline()]
            while "/mcp" not in lines[-1]:
                self.assertTrue(lines[-1], f"the server exited: {lines}")
                lines.append(process.stderr.readline())
            warned = "visible to every local user" in "".join(lines)
            self.assertEqual(warned, args[0] == "--token", lines)
            port = int(re.search(r"127\.0\.0\.1:(\d+)/mcp", lines[-1]).group(1))
            for token, status in (("wrong", 401), ("s3cret", 200)):
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/mcp", json.dumps(rpc(0, "ping")).encode(),
                    {"Content-Type": "application/json", "Authorization": f"Bearer {token}",
                     "Accept": "application/json, text/event-stream"})
                try:
                    with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                        got = answer.status
                except urllib.error.HTTPError as e:
                    got = e.code
                    e.close()
                self.assertIn(got, (status,) if status == 401 else (400, 404), (args, token))
        finally:
            process.kill()
            process.wait()
            process.stderr.close()

    def test_non_loopback_bind_refused_without_token(self):
        for done in side_by_side(self.run_cli, *[("serve", "--port", "0", "--host", host)
                                                 for host in ("0.0.0.0", "::")]):
            self.assertEqual(done.returncode, 1, done.stderr)
            self.assertIn("refusing", done.stderr)
            self.assertNotIn("Traceback", done.stderr)

    def test_bad_target(self):
        done = self.run_cli("serve", "--stdio", os.path.join(HERE, "no_such_file.py"))
        self.assertEqual(done.returncode, 2)
        self.assertNotIn("Traceback", done.stderr)

    def assert_one_line(self, done, status, says):
        self.assertEqual(done.returncode, status, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertIn(says, done.stderr)

    def test_usage_errors_are_one_line_found_before_anything_is_sent(self):
        nobody = "http://127.0.0.1:9/mcp"      # nothing listens: a request sent would fail otherwise
        cases = []
        for args, says in (
                (("serve", "--port", "99999"), "'99999' is not a TCP port (0-65535"),
                (("serve", "--port", "-1"), "'-1' is not a TCP port"),
                (("serve", "--log-level", "LOUD"), "choose from 'DEBUG', 'INFO'"),
                (("serve", "--stdio", "--port", "8080"), "--port: not allowed with argument --stdio"),
                (("client", "127.0.0.1:8080/mcp", "tools/list"), "write http://127.0.0.1:8080/mcp"),
                (("client", "ftp://example.com/mcp", "tools/list"), "only http:// and https://"),
                (("client", nobody), "required: METHOD"),
                (("client", " ", "ping"), "TARGET is empty"),
                (("client", nobody, "tools/call"), "tools/call needs NAME"),
                (("client", nobody, "resources/read"), "resources/read needs URI"),
                (("client", nobody, "tools/call", "t", "=x"), "expected key=value, got '=x'"),
                (("client", nobody, "tools/call", "t", "{nope"), "not valid JSON"),
                (("client", nobody, "ping", "--timeout", "-1"), "'-1' is not a number of seconds"),
                (("client", nobody, "ping", "--trace=/nonexistent/dir/x.jsonl"), "cannot write the trace")):
            cases.append((args, says))
        for (args, says), done in zip(cases, side_by_side(self.run_cli, *[args for args, _ in cases])):
            with self.subTest(args=args):
                self.assert_one_line(done, 2, says)

    def test_a_uri_or_a_level_may_be_written_as_tools_call_writes_its_arguments(self):
        # `resources/read uri=users://John` read the URI "uri=users://John": Resource not found
        for method, words, name in (("resources/read", ["uri=users://John"], "users://John"),
                                    ("resources/read", ["users://John"], "users://John"),
                                    ("logging/setLevel", ["level=debug"], "debug")):
            args = argparse.Namespace(target="http://127.0.0.1:9/mcp", method=method, args=words)
            self.assertEqual(mcp_min._client_usage(args)[0], name)

    def test_a_trace_file_that_cannot_be_written(self):
        done = self.run_cli("serve", "--trace=/nonexistent/dir/x.jsonl", "--stdio")
        self.assert_one_line(done, 2, "cannot write the trace to /nonexistent/dir/x.jsonl")

    def test_a_target_that_fails_to_load_names_the_users_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = [os.path.join(tmp, name, "server.py") for name in ("name", "syntax", "fine")]
            for path, source in zip(paths, ("from mcp_min import Server\nserver = Server('x')\n\n\n\n\ny = x + 1\n",
                                            "from mcp_min import Server\nserver = Server('x')\ndef f(:\n",
                                            "from mcp_min import Server\nserver = Server('x')\n")):
                os.mkdir(os.path.dirname(path))
                with open(path, "w") as f:
                    f.write(source)
            path = paths[2]
            name, syntax, nope, server = side_by_side(self.run_cli, ("serve", paths[0]), ("serve", paths[1]),
                                                      ("serve", f"{path}:nope"), ("serve", f"{path}:Server"))
            self.assert_one_line(name, 2, "NameError at server.py:7: name 'x' is not defined")
            self.assert_one_line(syntax, 2, "SyntaxError at server.py:3")
            self.assert_one_line(nope, 2, f"{path} has no 'nope'")
            self.assert_one_line(server, 2, "is of type type, not a Server")

    def test_a_normal_start_logs_at_info(self):
        process = subprocess.Popen([*PYTHON, MCP_MIN, "serve", "--port", "0"], cwd=HERE,
                                   env=_clean_env(), stderr=subprocess.PIPE, text=True)
        try:
            first = process.stderr.readline()
        finally:
            process.kill()
            process.communicate()
        self.assertRegex(first, r" INFO mcp_min: serving MCP on http://127\.0\.0\.1:\d+/mcp")

    def test_help_teaches(self):
        cases = ((("--help",), ("serve --stdio", "client http://")),
                 (("serve", "--help"), ("examples:", "0-65535", "DEBUG, INFO", "$MCP_TOKEN", "JSON Lines")),
                 (("client", "--help"), ("examples:", "k=v", "default 60", "SECONDS")))
        runs = side_by_side(lambda *args: subprocess.run(
            [*PYTHON, *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=HERE, env=_clean_env(),
            stdin=subprocess.DEVNULL), *[(MCP_MIN, *command) for command, _ in cases])
        for (command, says), run in zip(cases, runs):
            self.assertEqual(run.returncode, 0, run.stderr)
            for words in says:
                self.assertIn(words, run.stdout, command)

    @unittest.skipUnless(hasattr(os, "openpty"), "needs a pseudo-terminal")
    def test_stdio_on_a_terminal_prints_one_hint(self):
        main, tty = os.openpty()
        process = subprocess.Popen([*PYTHON, MCP_MIN, "serve", "--stdio"], stdin=tty,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=HERE,
                                   env=_clean_env())
        os.close(tty)
        try:
            os.write(main, b"\x04")        # Ctrl-D: end of input, whenever the server reads
            _, hint = process.communicate(timeout=TIMEOUT)
        finally:
            process.kill()
            os.close(main)
        self.assertEqual(process.returncode, 0)
        hint = hint.decode()
        self.assertEqual(len(hint.splitlines()), 1, hint)
        self.assertIn("type one JSON-RPC message a line", hint)
        self.assertIn("Ctrl-D ends", hint)
        done = self.run_cli("serve", "--stdio")     # not a terminal: no hint
        self.assertEqual(done.stderr, "")

    @unittest.skipUnless(hasattr(os, "killpg"), "needs process groups")
    def test_ctrl_c_in_the_client_while_a_tool_runs_exits_at_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            started = os.path.join(tmp, "started")
            path = os.path.join(tmp, "slow.py")
            with open(path, "w") as f:
                f.write(f"import time\nfrom mcp_min import Server\nserver = Server('slow')\n"
                        f"@server.tool\ndef nap() -> str:\n    open({started!r}, 'w').close()\n"
                        f"    time.sleep(60)\n    return 'late'\n")
            process = subprocess.Popen(signals_at_default(     # Ctrl-C heard if this ignores it
                [*PYTHON, MCP_MIN, "client", f"{PYTHON_CMD} {MCP_MIN} serve {path}",
                 "tools/call", "nap"]), cwd=HERE, env=_clean_env(), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, start_new_session=True)
            try:
                deadline = time.monotonic() + TIMEOUT
                while not os.path.exists(started):     # the barrier: the tool is running
                    self.assertLess(time.monotonic(), deadline, "the tool never started")
                    time.sleep(0.01)
                os.killpg(process.pid, signal.SIGINT)      # a terminal's Ctrl-C: the whole group
                out, err = process.communicate(timeout=3)  # at once: not the 2 s close steps
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.stdout.close()      # read by communicate, or not if the test failed first
                process.stderr.close()
                process.wait(TIMEOUT)
        self.assertEqual(process.returncode, 130)
        self.assertEqual((out, err), ("", ""))


@runs_beside
@needs_cli
class ReadmeCommandLineTest(unittest.TestCase):
    """The README's commands, run: its snippets served and called, the demo's transcripts, the
    walkthrough's trace."""

    def test_readme_snippets_run(self):
        # STYLE.md 10: the README's Python snippets are real code. The server ones are
        # served over stdio and asked for their tools; the client one needs a URL.
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            snippets = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        servers = [s for s in snippets if "Server(" in s]
        self.assertGreaterEqual(len(servers), 2)
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, snippet in enumerate(servers):
                paths.append(os.path.join(tmp, f"snippet{i}.py"))
                with open(paths[-1], "w") as f:
                    f.write(snippet)
            # Issue 33: each runs as `python3 file.py`, as the README shows it (server.run()).
            runs = side_by_side(lambda path: subprocess.run(
                [*PYTHON, MCP_MIN, "client", f"{PYTHON_CMD} {path}", "tools/list"], env=_clean_env(),
                capture_output=True, text=True, timeout=30, cwd=HERE), *[(path,) for path in paths])
            for snippet, done in zip(servers, runs):
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertTrue(json.loads(done.stdout)["tools"], snippet)
            every = next(path for path, snippet in zip(paths, servers) if "def chart" in snippet)
            chart = subprocess.run([*PYTHON, MCP_MIN, "client", f"{PYTHON_CMD} {every}", "tools/call",
                                    "chart"], env=_clean_env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(chart.returncode, 0, chart.stderr)     # no file it needs is missing
        self.assertEqual([c["type"] for c in json.loads(chart.stdout)["content"]], ["text", "image"])
        client = next(s for s in snippets if "Client(" in s)
        compile(client, "README client snippet", "exec")

    @needs_2026
    def test_readme_2026_session_is_what_the_demo_says(self):
        # Issue 33: the second request carries the requestState of the first answer, as the
        # README says to paste it (a state from another run is another server's: -32602).
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            intro, block = f.read().split("deleteUser`", 1)[1].split("```text\n", 1)
        self.assertIn("paste your first answer's `requestState`", intro)
        block = block.split("```", 1)[0]
        lines = block.strip().splitlines()[1:]      # after the command
        first, second = json.loads(lines[0]), json.loads(lines[2])
        with subprocess.Popen([*PYTHON, MCP_MIN, "serve", "--stdio"], cwd=HERE, env=_clean_env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as served:
            served.stdin.write(json.dumps(first) + "\n")
            served.stdin.flush()
            asked = json.loads(served.stdout.readline())
            second["params"]["requestState"] = asked["result"]["requestState"]
            served.stdin.write(json.dumps(second) + "\n")
            served.stdin.close()
            answered = json.loads(served.stdout.readline())
        shown = [json.loads(lines[1]), json.loads(lines[3])]
        for got, want in zip((asked, answered), shown):
            got["result"].pop("requestState", None)
            want["result"].pop("requestState", None)
            self.assertEqual(got, want)

    def test_readme_transcript_is_what_the_demo_says(self):
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            block = f.read().split("$ python3 mcp_min.py serve --stdio\n", 1)[1].split("```", 1)[0]
        lines = block.strip().splitlines()
        sent = [line for line in lines if '"method"' in line]
        shown = [line for line in lines if '"method"' not in line]
        done = subprocess.run([*PYTHON, MCP_MIN, "serve", "--stdio"], cwd=HERE,
                              input="\n".join(sent) + "\n", capture_output=True, text=True,
                              timeout=30, env=_clean_env())
        answers = done.stdout.splitlines()
        self.assertEqual(len(answers), len(shown))
        for expected, actual in zip(shown, answers):
            if "..." not in expected:       # the README shortens the long tools/list
                self.assertEqual(json.loads(expected), json.loads(actual))

    @needs_trace
    def test_readme_whole_conversation_is_what_the_walkthrough_traces(self):
        # The capture, replayed: the README's command runs, and its trace's header lines are the
        # README's (times and session ids aside; a 202 and the event it announces travel on two
        # connections, so only their counts are compared).
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            section = f.read().split("## See the whole conversation", 1)[1]
        command = re.search(r"```sh\n(python3 [^\n]*)\n```", section).group(1)
        shown = re.search(r"```text\n(.*?)```", section, re.S).group(1)
        done = subprocess.run([*PYTHON, *command.split()[1:]], capture_output=True,
                              timeout=60, cwd=HERE, env=_clean_env())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("agent: Hello Carson", done.stdout.decode())

        def shape(text):
            lines = [re.sub(r"[0-9a-f]{32}", "SID", line) for line in trace_headers(text)]
            return [line for line in lines if "202 Accepted" not in line], \
                sum("202 Accepted" in line for line in lines)
        self.assertEqual(shape(done.stderr.decode("utf-8")), shape(shown))
        self.assertIn("data: /messages?sessionId=", done.stderr.decode())   # SSE as on the wire


@runs_beside
@needs_cli
class ReadmeFirstScreenTest(unittest.TestCase):
    """Issue 40 (8, 9): the README is a start, not a digest: what this is, the demo, a host, your
    own server, the tests; its words explained where they first appear; nothing of our machine."""

    def test_the_first_screen_starts_a_newcomer(self):
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.assertEqual(re.findall(r"^## (.+)$", readme, re.M)[:4],
                         ["Run the demo", "Connect it to a host", "Write your own server in 11 lines",
                          "Run the tests"])
        first = readme.index("2026-07-28")
        self.assertIn("newest released revision", " ".join(readme[first:first + 200].split()))
        first = readme.lower().index("the capture")
        self.assertIn("packet capture", readme[max(0, first - 200):first])
        self.assertIn("print()", readme[:readme.index("## Run the tests")])     # goes to stderr
        for ours in ("this project's 2-core machine", " here loads"):
            self.assertNotIn(ours, readme)
        self.assertNotRegex(readme, r"\bsandbox\b")    # ours; a host's "sandboxed iframe" is fine

    def test_the_bench_says_what_its_ratios_are(self):
        # Issue 40 (10): "cold 0.279 of SDK (<=0.125)" said nothing of what it is, or whether a
        # miss matters to a user: the README and the bench's own output say so.
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            readme = " ".join(f.read().split())
        self.assertIn("A miss means the project has not reached its own goal against the SDK yet; "
                      "nothing fails for you.", readme)
        with open(os.path.join(HERE, ".ci", "bench", "harness.py"), encoding="utf-8") as f:
            self.assertIn("not that anything fails for a user", f.read())      # harness.GOALS
        for bench in ("stdio.py", "http.py"):
            with open(os.path.join(HERE, ".ci", "bench", bench), encoding="utf-8") as f:
                self.assertIn("print(harness.GOALS)", f.read(), bench)      # above the ratios


@needs_cli
class ReadmeTranscriptTest(unittest.TestCase):
    """Issue 40: the README's transcript of the demo is what the demo prints, character for
    character, its shortened tools/list too: that line said addUser's email was "An email address,
    like ada@example.com" while the demo sent "An email address: ada@example.com", unseen because
    the line with "..." was not compared."""

    def test_the_readme_transcript_is_what_the_demo_prints(self):
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            text = f.read()
        block = re.search(r"```text\n\$ (python3 mcp_min\.py serve --stdio)\n(.*?)```", text, re.S)
        command, lines = block.group(1).split(), block.group(2).splitlines()
        sent = [line for line in lines if '"method"' in line]
        shown = [line for line in lines if '"method"' not in line]
        self.assertIn("initialize", sent[0])        # the handshake era's transcript, the first
        done = subprocess.run([*PYTHON, *command[1:]], cwd=HERE, env=_clean_env(), timeout=30,
                              input="\n".join(sent) + "\n", capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        printed = done.stdout.splitlines()
        self.assertEqual(len(printed), len(shown), done.stdout)
        for number, (want, got) in enumerate(zip(shown, printed), 1):
            head, shortened, _ = want.partition(", ...]")
            with self.subTest(answer=number):
                if shortened:       # the first tools as printed, then "..." for the rest
                    self.assertEqual(got[:len(head) + 1], head + ",")
                else:
                    self.assertEqual(got, want)


@runs_beside
@needs_cli
class StdioDemoTest(unittest.TestCase):
    def test_demo_round_trip(self):
        p = StdioProcess()      # `serve --stdio`: the demo
        self.addCleanup(p.kill)
        result = p.initialize()["result"]
        self.assertEqual(result["serverInfo"]["name"], "user-store")
        p.send(rpc(1, "tools/list"))
        names = [t["name"] for t in p.read()["result"]["tools"]]
        self.assertEqual(sorted(names), ["addUser", "deleteUser", "getUser", "getUsers"])
        p.send(call(2, "getUser", {"name": "Jane"}))
        self.assertEqual(p.read()["result"]["structuredContent"], {"name": "Jane", "email": "jane@example.com"})
        p.close_stdin()
        self.assertEqual(p.wait(), 0)
        self.assertNotIn("Traceback", p.stderr())


@runs_beside
@needs_cli
class StdioExitCommandLineTest(StdioExitCase):
    """`serve --stdio TARGET`: how it starts and ends."""

    def test_a_target_printing_while_it_loads_cannot_corrupt_stdout(self):
        # Regression: TARGET was imported before fd 1 was moved to stderr (SECURITY 67).
        done, _ = self.serve_target("import os\nfrom mcp_min import Server\nprint('loading...')\n"
                                    "os.write(1, b'raw\\n')\nserver = Server('noisy')\n", "--stdio")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual([json.loads(line)["id"] for line in done.stdout.splitlines()], [0])
        self.assertIn(b"loading...", done.stderr)

    def test_stdout_ends_with_serving_even_if_a_thread_lingers(self):
        # Regression: main's own copy of stdout stayed open until the process exited.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lingers.py")
            with open(path, "w") as f:
                f.write("import threading, time\nfrom mcp_min import Server\nserver = Server('x')\n"
                        "threading.Thread(target=time.sleep, args=(30,)).start()\n")
            proc = subprocess.Popen([*PYTHON, MCP_MIN, "serve", "--stdio", path], cwd=HERE,
                                    env=_clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            try:
                proc.stdin.write((json.dumps(rpc(0, "initialize", init_params())) + "\n").encode())
                proc.stdin.close()
                out = []
                reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
                reader.start()
                reader.join(TIMEOUT)
                self.assertEqual(len(out), 1, "stdout still open after serving ended")
                self.assertIsNone(proc.poll())      # the thread keeps the process alive meanwhile
                self.assertEqual(json.loads(out[0])["id"], 0)
            finally:
                proc.kill()
                proc.wait()
                proc.stdout.close()

    @needs_trace
    def test_a_bare_trace_never_takes_the_target(self):
        # Regression: `serve --trace server.py` served the demo and appended the trace to server.py.
        source = "from mcp_min import Server\nserver = Server('named-server')\n"
        done, after = self.serve_target(source, "--stdio", "--trace")
        self.assertEqual(after, source)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["result"]["serverInfo"]["name"], "named-server")
        self.assertIn("S→C".encode(), done.stderr)     # traced on stderr

    @needs_trace
    def test_tracing_a_lone_surrogate_loses_no_answer(self):
        # Regression (issue 15): a lone surrogate made the trace writer raise; the answer was
        # lost and its slot kept, so after 256 of them the server was wedged.
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "trace.jsonl")
            done, _ = self.serve_target(
                "from mcp_min import Server\nserver = Server('odd')\n"
                "@server.tool()\ndef odd(s: str) -> str:\n    return s + '\\ud800'\n", f"--trace={trace}",
                lines=[rpc(0, "initialize", init_params()), note("notifications/initialized"),
                       *[call(i, "odd", {"s": "\ud800"}) for i in range(1, 301)]])
            with open(trace, encoding="utf-8") as f:
                records = [json.loads(line) for line in f]
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        self.assertEqual(sorted(m["id"] for m in answers), list(range(301)))
        self.assertEqual(tool_text(answers[-1]), "\ud800\ud800")
        self.assertEqual(len(records), 2 + 300 + 301)     # every frame in and out is traced


@runs_beside
@needs_cli
class HttpSubprocessTest(unittest.IsolatedAsyncioTestCase):
    """`python mcp_min.py serve --port 0`: a real server process on a real socket."""

    async def test_serve_port_zero(self):
        proc = subprocess.Popen([*PYTHON, MCP_MIN, "serve", "--port", "0"], cwd=HERE,
                                env=_clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        lines = queue.Queue()

        def read():
            for line in iter(proc.stderr.readline, b""):
                lines.put(line)
        threading.Thread(target=read, daemon=True).start()
        try:
            port = None
            deadline = time.monotonic() + TIMEOUT
            while port is None and time.monotonic() < deadline:
                try:
                    line = lines.get_nowait().decode()
                except queue.Empty:
                    await asyncio.sleep(0.02)
                    continue
                match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
                port = int(match.group(1)) if match else None
            self.assertIsNotNone(port, "the server did not say where it listens")
            client = HttpClient(port)
            sid = await client.initialize()
            response = await client.post(call(1, "getUsers"), sid)
            self.assertEqual([u["name"] for u in response.json()["result"]["structuredContent"]["result"]],
                             ["John", "Jane"])
            response = await client.post(rpc(2, "ping"), sid, headers={"Host": "evil.example.com"})
            self.assertEqual(response.status, 403)
        finally:
            proc.kill()
            proc.wait(TIMEOUT)
            proc.stderr.close()


@runs_beside
@needs_cli
class ClientCliTests(unittest.TestCase):
    """`python mcp_min.py client TARGET METHOD ARGS` as a user types it."""

    def run_cli(self, *args, timeout=30):
        return subprocess.run([*PYTHON, MCP_MIN, "client", *args], capture_output=True,
                              text=True, timeout=timeout, cwd=ROOT)

    def run_clis(self, *runs):
        """Each tuple of `runs` run as `run_cli(*run)`, side by side: their results, in order."""
        return side_by_side(self.run_cli, *runs)

    def test_stdio_target_and_key_value_arguments(self):
        server = f"{SERVE_CMD} serve --stdio"
        done, failed, unknown, nan = self.run_clis(
            (server, "tools/call", "getUser", "name=John"), (server, "tools/call", "getUser", "name=Nobody"),
            (server, "tools/call", "nope"), (server, "tools/call", "getUser", "name=NaN"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["structuredContent"],
                         {"name": "John", "email": "john@example.com"})
        self.assertEqual(failed.returncode, 1)
        self.assertTrue(json.loads(failed.stdout)["isError"])
        self.assertEqual(unknown.returncode, 1)
        self.assertIn("-32602: Unknown tool 'nope'", unknown.stderr)
        # key=value text that is no JSON to send stays text: NaN is not float('nan')
        self.assertEqual(nan.returncode, 1, nan.stderr)
        self.assertIn("No user named 'NaN'", json.loads(nan.stdout)["content"][0]["text"])

    def test_key_value_text_is_kept_where_the_schema_wants_text(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "z.py")
            with open(path, "w") as f:
                f.write("from typing import Optional\nfrom mcp_min import Server\nserver = Server('z')\n"
                        "@server.tool\ndef where(zip: Optional[str] = None, n: int = 0) -> str:\n"
                        "    return f'{zip!r} {n!r}'\n"
                        "@server.prompt\ndef both(a: str, b: str) -> str:\n    return a + '|' + b\n")
            server = f"{SERVE_CMD} serve {path}"
            done, prompt = self.run_clis((server, "tools/call", "where", "zip=10001", "n=3"),
                                         (server, "prompts/get", "both", '{"a": true, "b": "x"}'))
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(json.loads(done.stdout)["content"][0]["text"], "'10001' 3")
            done = prompt
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(json.loads(done.stdout)["messages"][0]["content"]["text"], "true|x")

    def test_trace_shows_the_exchange(self):
        server = f"{SERVE_CMD} serve --stdio"
        done, handshake = self.run_clis((server, "ping", "--trace"),
                                        (server, "ping", "--trace", "--protocol", "2025-11-25"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(trace_headers(done.stderr), [
            "C→S stdin  request #1 server/discover", "S→C stdout  response #1 (server/discover) ok",
            "C→S stdin  request #2 server/discover", "S→C stdout  response #2 (server/discover) ok"])
        self.assertIn('"method": "server/discover"', done.stderr)     # the JSON follows, indented
        done = handshake    # the handshake
        self.assertEqual(trace_headers(done.stderr), [
            "C→S stdin  request #1 initialize", "S→C stdout  response #1 (initialize) ok",
            "C→S stdin  notification notifications/initialized",
            "C→S stdin  request #2 ping", "S→C stdout  response #2 (ping) ok"])

    def test_trace_marks_the_clis_own_requests(self):
        server = f"{SERVE_CMD} serve --stdio"
        done = self.run_cli(server, "tools/call", "getUser", "name=John", "--trace")
        self.assertEqual(done.returncode, 0, done.stderr)
        headers = trace_headers(done.stderr)
        self.assertIn("C→S stdin  request #2 tools/list  [the CLI's own: it reads the tool's schema "
                      "to type k=v]", headers)
        self.assertIn("C→S stdin  request #3 tools/call getUser", headers)
        self.assertIn("S→C stdout  response #3 (tools/call) ok", headers)

    def test_trace_file_is_json_lines(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.jsonl")
            done = self.run_cli(f"{SERVE_CMD} serve", "tools/call", "nope",
                                f"--trace={path}")
            self.assertEqual(done.returncode, 1, done.stderr)
            with open(path, encoding="utf-8") as f:
                records = [json.loads(line) for line in f]
        self.assertEqual(records[0]["message"]["method"], "server/discover")
        self.assertEqual({r["dir"] for r in records}, {"C→S", "S→C"})
        self.assertTrue(all(set(r) >= {"t", "dir", "channel", "head", "kind"} for r in records))
        self.assertEqual({k: records[-2][k] for k in ("kind", "id", "method", "name")},
                         {"kind": "request", "id": 2, "method": "tools/call", "name": "nope"})
        self.assertEqual({k: records[-1][k] for k in ("kind", "id", "answers", "outcome")},
                         {"kind": "response", "id": 2, "answers": "tools/call", "outcome": "error -32602"})

    def test_command_runs_without_a_shell(self):
        with tempfile.TemporaryDirectory() as tmp:
            marker = os.path.join(tmp, "pwned")
            done = self.run_cli(f"{PYTHON_CMD} {MCP_MIN} serve '; touch {marker}'", "ping")
            self.assertFalse(os.path.exists(marker))
            self.assertNotEqual(done.returncode, 0)     # the odd TARGET is one literal argument

# A server whose every word would act on a terminal: OSC 52 writes the clipboard, OSC 0 retitles
# the window, CSI 2J (ESC [ or C1's 0x9b) clears the screen, U+202E reverses what follows.
_TERMINAL_ATTACKS = "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\x9b2J\u202e"
_ATTACKS_SHOWN = "?]52;c;cHduZWQ=??]0;pwned??[2J?2J?"     # as the CLI shows them: nothing to obey
# what a terminal obeys (C0 but a line's end, C1) or reorders a line with (the bidi controls)
_RAW_ON_A_TERMINAL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_HOSTILE_TO_TERMINALS = f'''
import json, sys
ATTACK = {_TERMINAL_ATTACKS!r}
def send(message):
    print(json.dumps(message), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        send({{"jsonrpc": "2.0", "id": message["id"], "result": {{
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {{"tools": {{}}, "logging": {{}}}}, "serverInfo": {{"name": "h", "version": "1"}}}}}})
    elif message["method"] == "tools/list":
        send({{"jsonrpc": "2.0", "method": "notifications/message", "params": {{"level": "info" + ATTACK,
              "data": "logged" + ATTACK}}}})
        send({{"jsonrpc": "2.0", "id": message["id"], "result": {{"tools": [{{"name": "tool" + ATTACK,
              "description": ATTACK + "\\x7f", "inputSchema": {{"type": "object"}}}}]}}}})
    else:
        send({{"jsonrpc": "2.0", "id": message["id"], "error": {{"code": -32602, "message": "no" + ATTACK}}}})
'''


@runs_beside
@needs_cli
class ClientCliTerminalTest(unittest.TestCase):
    """Issue 39 item 9: what a server sent reached the CLI's terminal raw (a log message's level
    and data, an error's message, a listing): a clipboard write, a new title, a cleared screen."""

    def run_cli(self, *args):
        return subprocess.run([*PYTHON, MCP_MIN, "client", *args, "--protocol", "2025-06-18"],
                              capture_output=True, text=True, timeout=30, cwd=ROOT)

    def test_a_servers_words_reach_the_terminal_shown_not_obeyed(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "hostile.py")
            with open(path, "w") as f:
                f.write(_HOSTILE_TO_TERMINALS)
            target = f"{PYTHON_CMD} {path}"
            listed, failed = side_by_side(self.run_cli, (target, "tools/list"), (target, "tools/call", "x"))
        self.assertEqual((listed.returncode, failed.returncode), (0, 1), listed.stderr + failed.stderr)
        for text in listed.stdout, listed.stderr, failed.stdout, failed.stderr:
            self.assertIsNone(_RAW_ON_A_TERMINAL.search(text), text)
        self.assertIn(f"[info{_ATTACKS_SHOWN}] logged{_ATTACKS_SHOWN}\n", listed.stderr)
        self.assertIn(f"error -32602: no{_ATTACKS_SHOWN}\n", failed.stderr)
        # stdout's JSON says the same as the server, in JSON's escapes
        [tool] = json.loads(listed.stdout)["tools"]
        self.assertEqual((tool["name"], tool["description"]), ("tool" + _TERMINAL_ATTACKS, _TERMINAL_ATTACKS + "\x7f"))


@needs_cli
class ClientCliFormTerminalTest(unittest.TestCase):
    """Issue 39 item 9, in this process: a form's field names, titles and descriptions, and
    mcp_min's own log (which may quote a server), as the CLI shows them."""

    def test_a_forms_fields_and_mcp_mins_own_log_are_shown_not_obeyed(self):
        params = {"message": "Who?" + _TERMINAL_ATTACKS, "requestedSchema": {"type": "object", "properties": {
            "name" + _TERMINAL_ATTACKS: {"type": "string"},
            "age": {"type": "integer", "title": "Age" + _TERMINAL_ATTACKS, "description": "in" + _TERMINAL_ATTACKS}}}}
        terminal = mock.Mock(isatty=lambda: True)
        with contextlib.redirect_stderr(io.StringIO()) as shown, mock.patch.object(sys, "stdin", terminal), \
                mock.patch("builtins.input", side_effect=["Ada", "36"]) as asked:
            typed = mcp_min._show_url(params)
        self.assertEqual(typed, {"action": "accept", "content": {"name" + _TERMINAL_ATTACKS: "Ada", "age": 36}})
        prompts = [ask.args[0] for ask in asked.call_args_list]
        self.assertEqual(prompts, [f"  name{_ATTACKS_SHOWN}: ", f"  Age{_ATTACKS_SHOWN} (in{_ATTACKS_SHOWN}): "])
        self.assertIsNone(_RAW_ON_A_TERMINAL.search(shown.getvalue()))
        record = logging.makeLogRecord({"msg": "could not answer the server's %s", "args": (_TERMINAL_ATTACKS,)})
        self.assertEqual(mcp_min._PrintableFormatter("%(message)s").format(record),
                         f"could not answer the server's {_ATTACKS_SHOWN}")


@needs_cli
class ClientRefusalCommandLineTest(ClientProcessCase):
    """What the CLI has no handler for; a form it fills in; a URL it shows."""

    async def test_what_the_cli_has_no_handler_for_it_declines_in_its_own_name(self):
        cli = await asyncio.create_subprocess_exec(     # stdin no terminal: no form to fill in
            *PYTHON, MCP_MIN, "client", f"{PYTHON_CMD} {shlex.quote(self.asking_server())}", "tools/call",
            "ask", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        _, cli_stderr = await asyncio.wait_for(cli.communicate(), TIMEOUT)
        self.assertEqual(cli.returncode, 1)
        self.assertIn("error -32602: This client declined the server's form elicitation", cli_stderr.decode())

    def test_the_cli_fills_in_a_form_on_a_terminal(self):
        params = {"message": "Who?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string"}, "age": {"type": "integer"}, "note": {"type": "string"}}}}
        terminal = mock.Mock(isatty=lambda: True)
        with contextlib.redirect_stderr(io.StringIO()) as shown, mock.patch.object(sys, "stdin", terminal):
            with mock.patch("builtins.input", side_effect=["007", "42", ""]):
                typed = mcp_min._show_url(params)
            with mock.patch("builtins.input", side_effect=["", "", ""]):
                nothing = mcp_min._show_url(params)
        self.assertEqual(typed, {"action": "accept", "content": {"name": "007", "age": 42}})  # text as typed
        self.assertEqual(nothing, {"action": "decline"})
        self.assertIn("the server asks: Who?", shown.getvalue())
        with contextlib.redirect_stderr(io.StringIO()), mock.patch("builtins.input") as asked, \
                mock.patch.object(sys, "stdin", mock.Mock(isatty=lambda: False)):
            self.assertEqual(mcp_min._show_url(params), {"action": "decline"})  # no terminal: no asking
        asked.assert_not_called()

    def test_the_cli_shows_a_url_whole_and_asks_before_saying_yes(self):
        err = io.StringIO()
        with mock.patch.object(sys, "stderr", err), mock.patch.object(sys, "stdin", io.StringIO("y\n")):
            answer = mcp_min._show_url({"message": "Pay\x1b[2K", "url": "https://evil.example/\rhttps://bank/"})
        self.assertEqual(answer, {"action": "decline"})     # not a terminal: nobody said yes
        self.assertIn("Pay?[2K", err.getvalue())
        self.assertIn("https://evil.example/?https://bank/", err.getvalue())
        args = types.SimpleNamespace(auth="machine", client_id="svc", client_secret="s", issuer=None, timeout=5)
        with self.assertRaisesRegex(ValueError, "--issuer"):    # a secret goes to one server only
            mcp_min._cli_auth(args)
        args.issuer = "https://as.example"
        self.assertEqual(mcp_min._cli_auth(args).issuer, "https://as.example")


if __name__ == "__main__":
    unittest.main()
