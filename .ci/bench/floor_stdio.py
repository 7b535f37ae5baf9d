"""The stdlib floor over stdio: the least a Python MCP server can do for the bench's call.

One JSON-RPC message a line in. A request gets its answer out at once, canned: initialize
a fixed reply (tools only), tools/call getUser the user's record (serialised once, at start),
ping {}, anything else "method not found". No sessions, no schemas, no checks past that.
The ratio mcp_min / floor is what mcp_min's protocol work costs; the rest is Python's.
    python3 .ci/bench/floor_stdio.py          (floor_http.py serves the same answers on HTTP)
"""
import json, sys

USERS = {"John": "john@example.com", "Jane": "jane@example.com"}


def _user(name, email):
    record = {"name": name, "email": email}
    return json.dumps({"content": [{"type": "text", "text": json.dumps(record)}], "structuredContent": record},
                      separators=(",", ":")).encode()


GET_USER = {name: _user(name, email) for name, email in USERS.items()}
NO_USER = b'{"content":[{"type":"text","text":"No such user."}],"isError":true}'
SERVER = b'"capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"0"}'


def answer(data):
    """The bytes answering one message (None for a notification)."""
    try:
        msg = json.loads(data)
    except ValueError:
        return b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
    if not isinstance(msg, dict) or "id" not in msg:
        return None
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "tools/call" and params.get("name") == "getUser":
        result = GET_USER.get((params.get("arguments") or {}).get("name"), NO_USER)
    elif method == "initialize":
        result = b'{"protocolVersion":%s,%s}' % (json.dumps(params.get("protocolVersion")).encode(), SERVER)
    elif method == "ping":
        result = b"{}"
    else:
        return b'{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}' % (
            json.dumps(msg["id"]).encode())
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(msg["id"]).encode(), result)


if __name__ == "__main__":
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if line.strip() and (reply := answer(line)) is not None:
            out.write(reply + b"\n")
            out.flush()
