"""mcp_min's resident memory stays flat: after requests it refuses, after many sessions.

    python3 .ci/bench/memory.py [REJECTED] [SESSIONS]      (10000 and 2000)
    PY=/path/to/python3 python3 .ci/bench/memory.py ...    (run mcp_min with that interpreter)
Starts `python3 -m mcp_min serve --port P` and reads its RSS (from /proc) at rest (after a
warm-up of each kind below), after REJECTED requests it refuses (a Host it does not serve: 403,
a connection each), then after SESSIONS Streamable HTTP sessions and as many legacy SSE
sessions, each initialized, one call, closed.
"""
import os, socket, sys
import harness

PY = os.environ.get("PY", "python3")
REJECTED = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
SESSIONS = int(sys.argv[2]) if len(sys.argv) > 2 else 2000


def refused(port, n):
    for _ in range(n):
        with socket.create_connection(("127.0.0.1", port), timeout=harness.TIMEOUT) as s:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 2\r\n\r\n{}")
            answer = b""
            while data := s.recv(65536):
                answer += data
            if not answer.startswith(b"HTTP/1.1 403"):
                raise harness.Failed(f"not refused: {answer[:200]!r}")


def sessions(port, n):
    for kind in (harness.StreamableHttp, harness.LegacySse):
        for _ in range(n):
            session = kind(port)
            session.initialize()
            session.call(1)
            session.close()


port = harness.free_port()
server = harness.Spawned(f"{PY} -m mcp_min serve --port {port}")
try:
    harness.listening(server, port)
    refused(port, 200)
    sessions(port, 200)
    rest = harness.rss_mb(server.proc.pid)
    refused(port, REJECTED)
    after_refused = harness.rss_mb(server.proc.pid)
    sessions(port, SESSIONS)
    after_sessions = harness.rss_mb(server.proc.pid)
except (harness.Failed, OSError, ValueError) as e:
    sys.exit(f"memory.py: {e}; stderr: {server.stderr() or '(empty)'}")
finally:
    server.stop()
print(f"{PY} -m mcp_min serve: {rest:.1f} MB at rest; {(after_refused - rest) * 1024:+.0f} KB after {REJECTED} "
      f"refused requests; {(after_sessions - after_refused) * 1024:+.0f} KB more after {SESSIONS} Streamable HTTP "
      f"and {SESSIONS} legacy SSE sessions")
