#!/usr/bin/env python3
"""A server for oauth_checks.py: `whoami` tells what ctx.auth holds; `admin_only` needs scope admin (step-up).
usage: python3 oauth_app.py --port P --auth-server URL --scope mcp   (any `serve` options)"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from mcp_min import Context, Server  # noqa: E402

app = Server("oauth-app")


@app.tool()
def whoami(ctx: Context) -> dict:
    """Who the caller's token says they are."""
    return {"subject": ctx.auth.subject, "scopes": sorted(ctx.auth.scopes), "client_id": ctx.auth.client_id}


@app.tool(scopes="admin")
def admin_only() -> str:
    """Needs the admin scope."""
    return "admin ok"


if __name__ == "__main__":
    sys.exit(app.run())
