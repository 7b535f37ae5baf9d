"""The user store as an MCP App: getUsers shows its users in a table, in the host's chat, and the
table adds a user by calling addUser through the host (MCP Apps, SEP-1865).

    python3 examples/user_table_app.py --port 8080     # HTTP: /mcp; a host that supports MCP Apps
    python3 examples/user_table_app.py                 # stdio
    python3 examples/user_table_app.py --db users.db   # as examples/user_store.py

The tools are examples/user_store.py's own, linked here to a page: getUsers to the table (its
structured result is what the page lists), addUser left as it is (the model and the page may
call it), deleteUser for the model only (the host refuses it to the page). The page is plain
HTML and JavaScript that talks to the host by hand, as the spec allows: JSON-RPC over
postMessage (ui/initialize, ui/notifications/tool-result, tools/call). It loads nothing and
connects nowhere: its CSP says so, and the host enforces it.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]     # user_store beside it, mcp_min.py one folder up

import user_store   # noqa: E402  (after the path above)
from mcp_min import Server  # noqa: E402

TABLE = "ui://users/table"

server = Server("user-table", instructions="getUsers shows the users in a table where the user "
                                           "can add one.")
server.tool(ui=TABLE, annotations={"readOnlyHint": True})(user_store.getUsers)
server.tool()(user_store.addUser)
server.tool(visibility=["model"], annotations={"destructiveHint": True})(user_store.deleteUser)

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Users</title>
<style>
  body { font: 14px/1.4 var(--font-sans, system-ui, sans-serif); margin: 12px;
         color: var(--color-text-primary, #1f2328); }
  table { border-collapse: collapse; width: 100%; margin-bottom: 10px; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #d0d7de; }
  form { display: flex; gap: 6px; }
  input { flex: 1; padding: 4px; }
  #status { min-height: 1.4em; color: #57606a; }
  #status.error { color: #cf222e; }
</style>
</head>
<body>
<table><thead><tr><th>Name</th><th>Email</th></tr></thead><tbody id="users"></tbody></table>
<form id="add">
  <input name="name" placeholder="Name" required>
  <input name="email" type="email" placeholder="ada@example.com" required>
  <button>Add user</button>
</form>
<p id="status">Waiting for the users...</p>
<script>
// JSON-RPC with the host over postMessage: requests by id, notifications by method.
let nextId = 1;
const pending = new Map();
function send(message) { window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*"); }
function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
window.addEventListener("message", (event) => {
  const m = event.data;
  if (event.source !== window.parent || !m || m.jsonrpc !== "2.0") return;
  if (m.method === undefined) {           // an answer to one of ours
    const waiting = pending.get(m.id);
    pending.delete(m.id);
    if (waiting && m.error) waiting.reject(new Error(m.error.message));
    else if (waiting) waiting.resolve(m.result);
  } else if (m.method === "ui/notifications/tool-result") {
    show(m.params);
  } else if (m.method === "ui/notifications/tool-cancelled") {
    say("The host did not show the users: " + (m.params && m.params.reason), true);
  } else if (m.id !== undefined) {          // ui/resource-teardown, or one we do not know
    const known = m.method === "ui/resource-teardown";
    send(known ? { id: m.id, result: {} }
               : { id: m.id, error: { code: -32601, message: "Method not found" } });
  }
});

function say(text, error) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = error ? "error" : "";
}

// A CallToolResult: its structuredContent for the table, its text if it failed.
function show(result) {
  if (result.isError) {
    say((result.content || []).map((block) => block.text).join(" "), true);
    return;
  }
  const users = (result.structuredContent || {}).result || [];
  const rows = users.map((user) => {
    const row = document.createElement("tr");
    for (const value of [user.name, user.email]) {
      row.appendChild(document.createElement("td")).textContent = value;
    }
    return row;
  });
  document.getElementById("users").replaceChildren(...rows);
  say(users.length + (users.length === 1 ? " user" : " users"));
}

async function call(name, args) {
  const result = await request("tools/call", { name, arguments: args });
  if (result.isError) throw new Error((result.content || []).map((b) => b.text).join(" "));
  return result;
}

document.getElementById("add").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  try {
    say("Adding...");
    await call("addUser", { name: form.name.value, email: form.email.value });
    form.reset();
    show(await call("getUsers", {}));
  } catch (error) {
    say(error.message, true);
  }
});

new ResizeObserver(() => {
  const { scrollWidth: width, scrollHeight: height } = document.documentElement;
  send({ method: "ui/notifications/size-changed", params: { width, height } });
}).observe(document.documentElement);

request("ui/initialize", {
  protocolVersion: "2026-01-26",
  appInfo: { name: "user-table", version: "1.0.0" },
  appCapabilities: {},
}).then(() => send({ method: "ui/notifications/initialized", params: {} }),
        (error) => say("The host refused the page: " + error.message, true));
</script>
</body>
</html>
"""

# No outside origin: the page loads nothing and fetches nothing (the host's CSP holds it to that).
server.app(TABLE, PAGE, name="User table", description="The users, and a form to add one.",
           csp={"connectDomains": [], "resourceDomains": []}, prefers_border=True)


if __name__ == "__main__":
    if "--db" in sys.argv:      # examples/user_store.py's option, then serve's
        at = sys.argv.index("--db")
        user_store.DEFAULT_DB = sys.argv[at + 1]
        del sys.argv[at:at + 2]
    server.run()
