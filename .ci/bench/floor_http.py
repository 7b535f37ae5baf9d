"""The stdlib floor over HTTP: floor_stdio.py's canned answers on one asyncio event loop.

The least a Python server can do for the bench, on both HTTP transports at once:
  POST /mcp (or any path)   Streamable HTTP: the answer as application/json (a notification: 202)
  GET /sse                  legacy HTTP+SSE: an `endpoint` event naming /messages?session=N;
  POST /messages?session=N  202, and the answer goes out on that stream as a `message` event
  DELETE                    200
HTTP/1.1 keep-alive, Content-Length bodies only, an asyncio.Protocol (no streams), 127.0.0.1.
    python3 .ci/bench/floor_http.py --port P
"""
import asyncio, itertools, sys
from floor_stdio import answer

STREAMS = {}                # legacy SSE: session number -> the transport of its GET stream
_numbers = itertools.count(1)


def response(status, body=b"", extra=b""):
    return b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        status, len(body), extra, body)


class Floor(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buf, self.stream = transport, b"", None

    def connection_lost(self, exc):
        STREAMS.pop(self.stream, None)

    def data_received(self, data):
        self.buf += data
        while (end := self.buf.find(b"\r\n\r\n")) >= 0:
            head = self.buf[:end]
            at = head.lower().find(b"\r\ncontent-length:")
            length = int(head[at + 17:].split(b"\r\n", 1)[0]) if at >= 0 else 0
            if len(self.buf) < end + 4 + length:
                return
            body, self.buf = self.buf[end + 4:end + 4 + length], self.buf[end + 4 + length:]
            self.transport.write(self.handle(*head.split(b" ", 2)[:2], body))

    def handle(self, method, target, body):
        path, _, query = target.partition(b"?")
        if method == b"GET" and path == b"/sse":
            self.stream = next(_numbers)
            STREAMS[self.stream] = self.transport
            return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                    b"Connection: close\r\n\r\nevent: endpoint\ndata: /messages?session=%d\n\n" % self.stream)
        if method == b"DELETE":
            return response(b"200 OK")
        if method != b"POST":
            return response(b"405 Method Not Allowed")
        reply = answer(body)
        if path == b"/messages":
            stream = STREAMS.get(int(query.partition(b"=")[2] or 0))
            if stream is None:
                return response(b"404 Not Found")
            if reply is not None:
                stream.write(b"event: message\ndata: %s\n\n" % reply)
            return response(b"202 Accepted")
        if reply is None:
            return response(b"202 Accepted")
        return response(b"200 OK", reply, b"Mcp-Session-Id: floor\r\n")


async def main(port):
    server = await asyncio.get_running_loop().create_server(Floor, "127.0.0.1", port)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[sys.argv.index("--port") + 1])))
