"""The client side of the official MCP conformance suite, as a client API example.

The suite starts a mock server and runs ``conformance_client.py URL`` with the
scenario's name in $MCP_CONFORMANCE_SCENARIO; we must do what it asks and exit 0.

    npx -y -p node@22 -p @modelcontextprotocol/conformance@0.1.16 -- conformance client \
        --command "python3 examples/conformance_client.py" --scenario initialize

(the suite needs Node.js 22, which npx fetches; `... conformance list` names the scenarios).
"""
import asyncio
import json
import os
import sys

try:
    import mcp_min
except ImportError:     # run from a checkout: mcp_min.py is one folder up
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import mcp_min

from mcp_min import Client, McpError


async def follow(url):
    """The 'browser' for the suite's sign-ins: its authorization server approves at once and
    redirects; we take that redirect to our own loopback listener, as a browser would."""
    response = await mcp_min._http(url, "GET", {})
    response.close()
    location = response.headers.get("location")
    assert response.status in (302, 303) and location, "no redirect from the authorization endpoint"
    (await mcp_min._http(location, "GET", {})).close()


async def issuer_of(url):
    """The authorization server the MCP server at `url` names. A client secret goes to one
    authorization server only, named beforehand (OAuth's issuer=); the suite names it nowhere
    else, and plays both servers, so here we take the MCP server's word for it."""
    base = url.split("/mcp")[0]
    for where in (f"{base}/.well-known/oauth-protected-resource/mcp",
                  f"{base}/.well-known/oauth-protected-resource"):
        status, metadata = await mcp_min._fetch_json(where)
        if status == 200 and metadata.get("authorization_servers"):
            return metadata["authorization_servers"][0]
    return None


def oauth(scenario, context, issuer):
    """Sign in as the auth/* scenarios expect: pre-registered credentials when the suite
    gives some, our Client ID Metadata Document URL, nothing written to disk."""
    return mcp_min.OAuth(client_id=context.get("client_id"), client_secret=context.get("client_secret"),
                         issuer=issuer,
                         client_metadata_url="https://conformance-test.local/client-metadata.json",
                         grant="client_credentials" if "client-credentials" in scenario
                         else "authorization_code",
                         browser=follow, store=None, client_name="mcp_min-conformance")


def accept_defaults(params):
    """Answer an elicitation by accepting every field's default value."""
    properties = params.get("requestedSchema", {}).get("properties", {})
    content = {name: field["default"] for name, field in properties.items() if "default" in field}
    return {"action": "accept", "content": content}


async def main(url, scenario):
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    issuer = context.get("issuer") or context.get("client_secret") and await issuer_of(url)
    auth = oauth(scenario, context, issuer or None) if scenario.startswith("auth/") else None
    async with Client(url, name="mcp_min-conformance", elicitation=accept_defaults, auth=auth) as client:
        if scenario == "initialize":
            await client.list_tools()
        elif scenario == "tools_call":
            tools = {t["name"] for t in await client.list_tools()}
            result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
            assert "add_numbers" in tools and not result.get("isError"), result
        elif scenario == "elicitation-sep1034-client-defaults":
            tools = [t["name"] for t in await client.list_tools()]
            # The server elicits while the tool runs; accept_defaults answers it.
            await client.call_tool(next(n for n in tools if "elicit" in n) if tools else "test")
        elif scenario == "json-schema-2020-12-preservation":
            # The tool's schema goes back as it came: nothing in it is parsed away.
            tools = {t["name"]: t for t in await client.list_tools()}
            await client.call_tool("json_schema_echo",
                                   {"schema": tools["json_schema_2020_12_tool"]["inputSchema"]})
        elif scenario in ("sep-2322-client-request-state", "http-custom-headers",
                          "http-invalid-tool-headers"):
            # Call what the suite names, else every tool listed (tools/list also tells
            # which arguments go in Mcp-Param-* headers, and drops badly marked tools).
            tools = await client.list_tools()
            calls = context.get("toolCalls") or [{"name": t["name"]} for t in tools]
            await asyncio.gather(*[client.call_tool(c["name"], c.get("arguments")) for c in calls])
        elif scenario == "sse-retry":
            tools = [t["name"] for t in await client.list_tools()]
            # The server drops the call's stream after a priming event; the client
            # resumes it with GET + Last-Event-ID after the advertised retry delay.
            await client.call_tool(tools[0])
        elif scenario == "sep-2640-client-no-prefetch":
            await client.list_skills()      # lists the skills; reads none of their files
        elif scenario.startswith("sep-2640-client-verify-"):
            # The server tampers with SKILL.md: loading checks it against the listing
            # (size, sha256, front matter) and refuses; the skill's other files are never read.
            skill = (await client.list_skills())[0]
            try:
                await client.load_skill(skill)
            except McpError as e:
                print(e.message, file=sys.stderr)
            else:
                for listed in skill["resources"]:
                    await client.read_skill_file(skill, listed["uri"])
        elif scenario.startswith("auth/"):
            # Signed in on the first 401; a tool call may ask for more scope (403, step-up).
            tools = await client.list_tools()
            if tools:
                await client.call_tool(tools[0]["name"], {})
        else:
            await client.list_tools()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))
