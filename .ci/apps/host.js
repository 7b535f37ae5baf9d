// A host of MCP Apps for .ci/apps/check.py, built (esbuild) from the official packages: the
// TypeScript SDK's Client over Streamable HTTP to our server, and ext-apps' AppBridge to each
// page, rendered in a sandboxed iframe under the CSP its _meta.ui.csp declares (the spec's
// formula). What a host decides, it decides here: the model's tool list leaves out app-only
// tools; a page may call only tools whose visibility has "app"; a result bigger than
// MAX_RESULT_BYTES is not given to a page (ui/notifications/tool-cancelled says why).
// Each step's verdict goes to the page (#verdict) and, as JSON, to POST /verdict.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  AppBridge, PostMessageTransport, RESOURCE_MIME_TYPE, getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const MAX_RESULT_BYTES = 100000;
const EXTENSION = "io.modelcontextprotocol/ui";
const verdicts = [];
const params = new URLSearchParams(location.search);

function check(ok, text) {
  verdicts.push([Boolean(ok), text]);
  const line = document.createElement("div");
  line.textContent = (ok ? "ok   " : "FAIL ") + text;
  line.className = ok ? "ok" : "fail";
  document.getElementById("verdict").appendChild(line);
}

function visibility(tool) {
  return tool._meta?.ui?.visibility ?? ["model", "app"];
}

// The spec's CSP from a page's _meta.ui.csp ("CSP Construction from Metadata").
function policy(csp) {
  const list = (key, none) => (csp?.[key]?.length ? csp[key].join(" ") : none);
  const res = list("resourceDomains", "");
  return [
    "default-src 'none'", `script-src 'self' 'unsafe-inline' ${res}`,
    `style-src 'self' 'unsafe-inline' ${res}`, `connect-src 'self' ${list("connectDomains", "")}`,
    `img-src 'self' data: ${res}`, `font-src 'self' ${res}`, `media-src 'self' data: ${res}`,
    `frame-src ${list("frameDomains", "'none'")}`, "object-src 'none'",
    `base-uri ${list("baseUriDomains", "'self'")}`,
  ].join("; ");
}

function escapeAttribute(text) {
  return text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

// One tool call shown as its page: read the page, frame it, hand it the input and the result.
// Resolves with what the page logged (notifications/message), or with the error that stopped it.
async function show(client, tools, name, args, script) {
  const box = document.createElement("section");
  box.innerHTML = `<h2></h2><p class="error"></p>`;
  box.querySelector("h2").textContent = `${name}(${JSON.stringify(args)})`;
  document.getElementById("apps").appendChild(box);
  const tool = tools.find((t) => t.name === name);
  const uri = getToolUiResourceUri(tool);
  let page;
  try {
    [page] = (await client.readResource({ uri })).contents;
    if (page.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri} is ${page.mimeType}`);
  } catch (error) {
    box.querySelector(".error").textContent = `Cannot show ${uri}: ${error.message}`;
    return { error: error.message };
  }
  const ui = page._meta?.ui ?? {};
  const meta = `<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(policy(ui.csp))}">`;
  const html = page.text.replace(/<head>/i, `<head>${meta}`).replace(/<\/body>/i, `${script}</body>`);
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts allow-forms");    // no allow-same-origin
  iframe.style.border = ui.prefersBorder === false ? "none" : "1px solid #8c959f";
  box.appendChild(iframe);
  const bridge = new AppBridge(client, { name: "mcp_min check host", version: "1.0.0" },
                               { serverTools: {}, serverResources: {}, logging: {} });
  const logged = new Promise((resolve) => { bridge.onloggingmessage = (p) => resolve(p.data); });
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = `${height + 4}px`; };
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  // The host's rule, over the bridge's default (which forwards any call): the page's own tools.
  bridge.oncalltool = async (call) => {
    const called = tools.find((t) => t.name === call.name);
    if (!called || !visibility(called).includes("app")) {
      throw new Error(`the host does not let this page call ${call.name}`);
    }
    return client.callTool(call);
  };
  iframe.srcdoc = html;
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  const result = await client.callTool({ name, arguments: args });
  const size = JSON.stringify(result).length;
  if (size > MAX_RESULT_BYTES) {
    const reason = `the result is ${size} bytes, more than the ${MAX_RESULT_BYTES} this host gives a page`;
    box.querySelector(".error").textContent = reason;
    await bridge.sendToolCancelled({ reason });
  } else {
    await bridge.sendToolResult(result);
  }
  return logged;
}

// What the user does in the page, for the check: added after the page's own script.
const DRIVER = `<script>
function rows() { return [...document.querySelectorAll("#users tr")].map((r) => r.textContent); }
function until(test) { return new Promise((ok) => { const t = setInterval(() => {
  if (test()) { clearInterval(t); ok(); } }, 20); }); }
function log(data) { send({ method: "notifications/message", params: { level: "info", data } }); }
const status = () => document.getElementById("status");
const violations = [];
document.addEventListener("securitypolicyviolation", (e) => violations.push(e.violatedDirective));
if (window.SCENARIO === "add") {
  until(() => rows().length).then(async () => {
    const form = document.getElementById("add");
    form.name.value = "Ada"; form.email.value = "ada@example.com";
    form.requestSubmit();
    await until(() => rows().some((r) => r.startsWith("Ada")));
    let denied = "";
    try { await request("tools/call", { name: "deleteUser", arguments: { name: "John" } }); }
    catch (error) { denied = error.message; }
    let fetched = "not blocked";     // the page declared no connectDomains: the CSP forbids this
    try { await fetch("https://example.com/"); } catch (error) { fetched = "blocked"; }
    // the violation's event is queued as a task of its own: it may follow the rejection
    await Promise.race([until(() => violations.length), new Promise((ok) => setTimeout(ok, 5000))]);
    log({ rows: rows(), status: status().textContent, denied, fetched, violations });
  });
} else {
  until(() => status().className === "error").then(() => log({ rows: rows(), status: status().textContent }));
}
</script>`;

function scenario(name) {
  return `<script>window.SCENARIO = ${JSON.stringify(name)};</script>${DRIVER}`;
}

async function main() {
  const client = new Client({ name: "mcp_min check host", version: "1.0.0" },
                            { capabilities: { extensions: { [EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(params.get("mcp"))));
  const declared = client.getServerCapabilities()?.extensions?.[EXTENSION];
  check(declared?.mimeTypes?.includes(RESOURCE_MIME_TYPE),
        `the server declares ${EXTENSION}: ${JSON.stringify(declared)}`);
  const { tools } = await client.listTools();
  const forModel = tools.filter((t) => visibility(t).includes("model")).map((t) => t.name);
  const forApp = tools.filter((t) => visibility(t).includes("app")).map((t) => t.name);
  check(!forModel.includes("appOnly") && forApp.includes("appOnly") && !forApp.includes("deleteUser"),
        `the model's tools: ${forModel.join(", ")}; the page's: ${forApp.join(", ")}`);
  check(getToolUiResourceUri(tools.find((t) => t.name === "getUsers")) === "ui://users/table",
        "getUsers shows ui://users/table");

  const added = await show(client, tools, "getUsers", {}, scenario("add"));
  check(added.rows?.some((r) => r.startsWith("John")) && added.rows?.some((r) => r.startsWith("Ada")),
        `the page listed the users, added Ada through the host, and lists her: ${JSON.stringify(added.rows)}`);
  check(added.fetched === "blocked" && added.violations?.join() === "connect-src",
        `the page runs under its CSP: a fetch elsewhere ${added.fetched} (${added.violations})`);
  check(/does not let this page call deleteUser/.test(added.denied ?? ""),
        `a tool the host does not allow the page is refused: ${added.denied}`);

  const missing = await show(client, tools, "showGone", {}, scenario("error"));
  check(/not found/i.test(missing.error ?? ""), `a page whose resource is missing: ${missing.error}`);

  const big = await show(client, tools, "bigTable", {}, scenario("error"));
  check(/more than the 100000/.test(big.status ?? "") && (big.rows ?? []).length === 0,
        `a result too big for the page: the page says "${big.status}"`);

  const { structuredContent } = await client.callTool({ name: "getUsers", arguments: {} });
  const names = structuredContent.result.map((u) => u.name);
  check(names.join() === "John,Jane,Ada", `afterwards, the server's users: ${names.join(", ")}`);
  await client.close();
}

main().catch((error) => check(false, `the host stopped: ${error.stack || error}`)).finally(() => {
  document.title = "done";
  return fetch("/verdict", { method: "POST", body: JSON.stringify(verdicts) });
});
