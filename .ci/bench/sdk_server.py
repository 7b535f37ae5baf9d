"""mcp_min's demo user store on the official MCP Python SDK (mcp 2.x), for the bench.

The same four tools as `python3 -m mcp_min serve` (getUsers, addUser, getUser, deleteUser),
async like mcp_min's, over the same store (John and Jane), with the SDK's logging at WARNING.
    .peers/bin/python .ci/bench/sdk_server.py stdio
    .peers/bin/python .ci/bench/sdk_server.py http --port P     (Streamable HTTP at /mcp)
    .peers/bin/python .ci/bench/sdk_server.py sse --port P      (legacy HTTP+SSE at /sse)
The SDK, once: python3 -m venv .peers && .peers/bin/pip install "mcp==2.3.0"
"""
import sys

del sys.path[0]     # this folder: its http.py would stand in for the standard library's
from mcp.server.mcpserver import MCPServer  # noqa: E402

server = MCPServer("user-store", instructions="Tools manage a small in-memory user directory.",
                   log_level="WARNING")
users = {"John": "john@example.com", "Jane": "jane@example.com"}


@server.tool()
async def getUsers() -> list[dict]:
    """List every user with their email address."""
    return [{"name": n, "email": e} for n, e in users.items()]


@server.tool()
async def addUser(name: str, email: str) -> str:
    """Add a user to the directory."""
    if name in users:
        raise ValueError(f"A user named {name!r} already exists.")
    users[name] = email
    return f"Added {name} <{email}>."


@server.tool()
async def getUser(name: str) -> dict:
    """Look up one user by name."""
    if name not in users:
        raise ValueError(f"No user named {name!r}. Call getUsers to see who exists.")
    return {"name": name, "email": users[name]}


@server.tool()
async def deleteUser(name: str) -> str:
    """Remove a user from the directory."""
    if users.pop(name, None) is None:
        raise ValueError(f"No user named {name!r}.")
    return f"Deleted {name}."


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if kind == "stdio":
        server.run("stdio")
    else:
        port = int(sys.argv[sys.argv.index("--port") + 1])
        server.run("streamable-http" if kind == "http" else "sse", host="127.0.0.1", port=port)
