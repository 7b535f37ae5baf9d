"""The user store from the packet capture, as you would write your own server.

Users live in a SQLite database, so they survive restarts.

    python3 examples/user_store.py                 # stdio (for VS Code, Claude Desktop)
    python3 examples/user_store.py --port 8080     # HTTP: /mcp and legacy /sse
    python3 examples/user_store.py --db users.db   # default: $USER_STORE_DB, else users.db
                                                   # next to this file
    python3 mcp_min.py serve examples/user_store.py   # the same, as a TARGET
"""
import argparse
import os
import sqlite3
import sys
import threading
from typing import Annotated, TypedDict

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))     # a checkout: mcp_min.py is one folder up

from mcp_min import INVALID_PARAMS, McpError, Server

DEFAULT_DB = os.environ.get("USER_STORE_DB") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "users.db")

server = Server("user-store", instructions="Tools manage a small user directory.")


class User(TypedDict):
    name: str
    email: str


class Store:
    """One SQLite connection shared by the tool threads (sync tools run in threads)."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.lock = threading.Lock()
        with self.lock, self.db:
            self.db.execute("CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, email TEXT NOT NULL)")
            if not self.db.execute("SELECT 1 FROM users").fetchone():
                # OR IGNORE: processes sharing the file (examples/deploy.py) may all find it empty
                self.db.executemany("INSERT OR IGNORE INTO users VALUES (?, ?)",
                                    [("John", "john@example.com"), ("Jane", "jane@example.com")])

    def query(self, sql, *args):
        with self.lock, self.db:
            return self.db.execute(sql, args).fetchall()


store = None


def db():
    global store
    if store is None:
        store = Store(DEFAULT_DB)
    return store


@server.tool(annotations={"readOnlyHint": True})
def getUsers() -> list[User]:
    """List every user with their email address."""
    return [{"name": n, "email": e} for n, e in db().query("SELECT name, email FROM users ORDER BY rowid")]


@server.tool()
def addUser(name: Annotated[str, "The user's name"],
            email: Annotated[str, "An email address, like ada@example.com"]) -> str:
    """Add a user to the directory."""
    name, email = name.strip(), email.strip()
    local, at, domain = email.partition("@")
    if not local or not at or "." not in domain or " " in email:
        raise McpError(INVALID_PARAMS, f"{email!r} is not an email address (like ada@example.com).")
    if db().query("SELECT 1 FROM users WHERE name = ?", name):
        raise McpError(INVALID_PARAMS, f"A user named {name!r} already exists.")
    db().query("INSERT INTO users VALUES (?, ?)", name, email)
    return f"Added {name} <{email}>."


@server.tool(annotations={"readOnlyHint": True})
def getUser(name: str) -> User:
    """Look up one user by name."""
    rows = db().query("SELECT name, email FROM users WHERE name = ?", name)
    if not rows:
        raise McpError(INVALID_PARAMS, f"No user named {name!r}. Call getUsers to see who exists.")
    return {"name": rows[0][0], "email": rows[0][1]}


@server.tool(annotations={"destructiveHint": True, "idempotentHint": True})
def deleteUser(name: str) -> str:
    """Remove a user from the directory."""
    if not db().query("SELECT 1 FROM users WHERE name = ?", name):
        raise McpError(INVALID_PARAMS, f"No user named {name!r}.")
    db().query("DELETE FROM users WHERE name = ?", name)
    return f"Deleted {name}."


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        usage="%(prog)s [--db PATH] [serve's options: --stdio, --port PORT, --trace ...]",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False)
    parser.add_argument("--db", metavar="PATH", default=DEFAULT_DB,
                        help="the SQLite file the users live in (default: $USER_STORE_DB, else users.db "
                             "next to this file; here %(default)s)")
    options, rest = parser.parse_known_args()
    if "-h" in rest or "--help" in rest:
        parser.print_help()
        print("\nEvery other option is serve's, as server.run() reads them:\n")
    DEFAULT_DB = options.db
    sys.exit(server.run(rest))     # --help: serve's options, then exit
