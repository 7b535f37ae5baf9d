#!/usr/bin/env python3
"""The Python SDK's OAuth client (mcp.client.auth.OAuthClientProvider) signs in to mcp_min.py as a
resource server (serve --auth-server): RFC 9728 discovery from the 401, registration, authorization
code + PKCE through a headless redirect handler, the token (aud = our resource) introspected by
mcp_min, then Streamable HTTP and legacy SSE calls, and a step-up on 403 insufficient_scope.
The authorization server is test_mcp_min.AuthorizationServer, in this process.
usage: oauth_checks.py PORT      (run by run_all.sh; SKIP lines without the SDK)"""
import os, sys, urllib.error, urllib.request
from urllib.parse import parse_qs, urlsplit
from common import HttpServer, ROOT, report

C = "py OAuthClientProvider"
try:
    import anyio
    from mcp import ClientSession
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
except ImportError as e:
    print(f"SKIP [{C}] the Python SDK is not installed here ({e})")
    sys.exit(0)
sys.path.insert(0, ROOT)
from test_mcp_min import AuthorizationServer  # noqa: E402


class Memory:
    def __init__(self):
        self.tokens = self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


def provider(url, redirects):
    """Headless: the 'browser' is urllib, which reads the code off the authorization server's redirect."""
    async def redirect_handler(authorize_url):
        try:
            urllib.request.build_opener(NoRedirect).open(authorize_url, timeout=5)
            raise RuntimeError("the authorization endpoint did not redirect")
        except urllib.error.HTTPError as e:
            redirects.append(parse_qs(urlsplit(e.headers["Location"]).query))

    async def callback_handler():
        q = redirects[-1]
        return AuthorizationCodeResult(code=q["code"][0], state=q.get("state", [None])[0])
    metadata = OAuthClientMetadata(client_name="mcp_min interop", redirect_uris=["http://127.0.0.1:9/callback"],
                                   grant_types=["authorization_code"], response_types=["code"],
                                   token_endpoint_auth_method="client_secret_post")
    return OAuthClientProvider(url, metadata, Memory(), redirect_handler, callback_handler)


async def checks(base, issuer):
    resource = base + "/mcp"
    req = urllib.request.Request(resource, data=b"{}", method="POST", headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=5)
        report(C, "401 without a token", False, "it was accepted")
    except urllib.error.HTTPError as e:
        challenge = e.headers.get("WWW-Authenticate", "")
        report(C, "401 without a token names resource_metadata", e.code == 401 and
               f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in challenge, challenge)
    redirects = []
    auth = provider(resource, redirects)
    with anyio.fail_after(30):
        async with create_mcp_http_client(auth=auth) as hc, streamable_http_client(resource, http_client=hc) \
                as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            report(C, "signed in (registration, authorize + PKCE, token) and initialized", len(redirects) == 1,
                   f"{len(redirects)} authorization(s)")
            tools = {t.name for t in (await s.list_tools()).tools}
            report(C, "tools/list", {"whoami", "admin_only"} <= tools, str(sorted(tools)))
            who = (await s.call_tool("whoami", {})).structured_content
            report(C, "ctx.auth seen by a tool", who and who["subject"] == "interop-user"
                   and who["scopes"] == ["mcp"], str(who))
            auds = {c["aud"] for c in AS.tokens.values()}
            report(C, "the token names our resource (RFC 8707)", auds == {resource}, str(auds))
            result = await s.call_tool("admin_only", {})
            text = result.content[0].text if result.content else ""
            report(C, "step-up on 403 insufficient_scope, then the call succeeds",
                   text == "admin ok" and len(redirects) == 2
                   and "admin" in parse_qs(urlsplit(AS.last_authorize or "").query).get("scope", [""])[0],
                   f"{text!r}, {len(redirects)} authorization(s)")


async def legacy(base, issuer):
    """The SDK wants the resource to be the URL it calls or a prefix of it (RFC 8707 allows a
    broader one): for /sse beside /mcp, the server names its origin with --resource."""
    with anyio.fail_after(30):
        async with sse_client(base + "/sse", auth=provider(base + "/sse", [])) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            who = (await s.call_tool("whoami", {})).structured_content
            report(C, "legacy /sse signed in (serve --resource ORIGIN)", who and who["subject"] == "interop-user",
                   str(who))


def main():
    global AS
    port = int(sys.argv[1])
    AS = AuthorizationServer().start()
    AS.last_authorize = None
    get = AS._get

    def spy(h):     # the scope each authorization asked, for the step-up check
        AS.last_authorize = h.path if h.path.startswith("/authorize") else AS.last_authorize
        get(h)
    AS._get = spy
    os.environ["MCP_AUTH_CLIENT"] = ":".join(AuthorizationServer.CLIENT)     # introspection credentials
    base, logs = f"http://127.0.0.1:{port}", []
    try:
        for flow, extra in ((checks, []), (legacy, ["--resource", base])):
            server = HttpServer(port, ["--auth-server", AS.issuer, "--scope", "mcp", *extra],
                                name=f"py-oauth-{flow.__name__}",
                                app=os.path.join(ROOT, ".ci", "interop", "servers", "oauth_app.py"))
            logs.append(server.log)
            try:
                anyio.run(flow, base, AS.issuer)
            except Exception as e:
                report(C, flow.__name__, False, f"{type(e).__name__}: {e}"[:300])
            finally:
                server.stop()
    finally:
        AS.stop()
    log = "".join(open(name, encoding="utf-8", errors="replace").read() for name in logs)
    leaked = [t for t in AS.tokens if t in log]
    report(C, "no token in the server's trace and log", not leaked and "Bearer ***" in log, f"{len(leaked)} leaked")
    print(f"(server traces: {' '.join(logs)})")


if __name__ == "__main__":
    main()
