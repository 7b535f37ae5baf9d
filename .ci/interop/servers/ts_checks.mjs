// TS SDK 1.x interop checks against mcp_min.py.
// usage: node ts_checks.mjs stdio | sse URL | http URL
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../../..");   // repo root (.ci/interop/servers/../../..)
const PEERS = process.env.MCP_PEERS || path.join(ROOT, ".peers");
const MAIN = path.join(ROOT, "mcp_min.py");
const SDK = path.join(PEERS, "node/node_modules/@modelcontextprotocol/sdk/dist/esm");
const { Client } = await import(`${SDK}/client/index.js`);
const { StdioClientTransport } = await import(`${SDK}/client/stdio.js`);
const { SSEClientTransport } = await import(`${SDK}/client/sse.js`);
const { StreamableHTTPClientTransport } = await import(`${SDK}/client/streamableHttp.js`);
const LOGDIR = process.env.INTEROP_LOGDIR || path.join(ROOT, ".peers", "logs", "interop-servers");
fs.mkdirSync(LOGDIR, { recursive: true });

const [kind, url] = process.argv.slice(2);
const C = { stdio: "ts StdioClientTransport", sse: "ts SSEClientTransport", http: "ts StreamableHTTPClientTransport" }[kind];
let failures = 0;
function report(name, ok, detail = "") {
  if (!ok) failures++;
  console.log(`${ok ? "PASS" : "FAIL"} [${C}] ${name}${detail ? " -- " + detail : ""}`);
}
const fmt = (e) => `${e?.constructor?.name}: ${e?.message}${e?.code !== undefined ? ` [code=${e.code}]` : ""}${e?.data ? ` data=${JSON.stringify(e.data)}` : ""}`;
const textOf = (r) => [...(r?.content || []).map((c) => c.text || ""), r?.structuredContent ? JSON.stringify(r.structuredContent) : ""].join("\n");
const withTimeout = (p, ms = 20000) => Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`timed out after ${ms / 1000}s`)), ms))]);
async function one(name, fn) {
  try { const d = await withTimeout(fn()); report(name, true, d || ""); }
  catch (e) { report(name, false, fmt(e)); }
}
const assert = (c, msg) => { if (!c) throw new Error("assertion: " + msg); };
const REQ_OPTS = { timeout: 20000 };

// HTTP tap via custom fetch
const seen = { sessionIds: [], deletes: [] };
const tapFetch = async (input, init) => {
  const r = await fetch(input, init);
  const sid = r.headers.get("mcp-session-id");
  if (sid && !seen.sessionIds.includes(sid)) seen.sessionIds.push(sid);
  if ((init?.method || "GET") === "DELETE") seen.deletes.push(r.status);
  return r;
};

let transport, wireLog;
if (kind === "stdio") {
  wireLog = path.join(LOGDIR, "ts-stdio.wire.log");
  fs.writeFileSync(wireLog, "");
  transport = new StdioClientTransport({ command: "python3", args: [path.join(HERE, "stdio_watch.py"), wireLog, "--", ...(process.env.INTEROP_SERVER_CMD ? ["sh", "-c", "exec " + process.env.INTEROP_SERVER_CMD] : ["python3", MAIN, "serve", "--stdio"])], stderr: "inherit" });
} else if (kind === "sse") {
  transport = new SSEClientTransport(new URL(url), { fetch: tapFetch });
} else {
  transport = new StreamableHTTPClientTransport(new URL(url), { fetch: tapFetch });
}
const client = new Client({ name: "interop-ts", version: "0" });
const t0 = Date.now();
try {
  await withTimeout(client.connect(transport));
  report("initialize", true, `${(Date.now() - t0) / 1000}s${transport.protocolVersion ? " proto=" + transport.protocolVersion : ""} server=${client.getServerVersion()?.name}`);
} catch (e) {
  report("initialize", false, fmt(e));
  await client.close().catch(() => {});
  process.exit(1);
}
const prefix = "t" + Math.random().toString(16).slice(2, 8);
const usable = async () => { const r = await client.callTool({ name: "getUsers", arguments: {} }, undefined, REQ_OPTS); assert(!r.isError && textOf(r).includes("John"), "getUsers after error: " + textOf(r)); };
await one("tools/list", async () => {
  const r = await client.listTools(); const names = r.tools.map((t) => t.name).sort();
  for (const n of ["getUsers", "addUser", "getUser", "deleteUser"]) assert(names.includes(n), names.join(","));
  return names.join(",");
});
await one("call getUsers", async () => {
  const r = await client.callTool({ name: "getUsers", arguments: {} }, undefined, REQ_OPTS); const t = textOf(r);
  assert(!r.isError && t.includes("John") && t.includes("jane@example.com"), t);
});
await one("addUser then getUsers", async () => {
  const n = prefix + "add";
  const r = await client.callTool({ name: "addUser", arguments: { name: n, email: `${n}@example.com` } }, undefined, REQ_OPTS);
  assert(!r.isError, textOf(r));
  const r2 = await client.callTool({ name: "getUsers", arguments: {} }, undefined, REQ_OPTS);
  assert(textOf(r2).includes(n), `${n} not in ${textOf(r2)}`);
});
await one("unknown tool -> error, usable", async () => {
  let how;
  try {
    const r = await client.callTool({ name: "noSuchTool", arguments: {} }, undefined, REQ_OPTS);
    assert(r.isError, "no error: " + textOf(r)); how = "isError result: " + textOf(r).slice(0, 80);
  } catch (e) { if (String(e.message).startsWith("assertion")) throw e; how = "threw " + fmt(e).slice(0, 120); }
  await usable(); return how + "; still usable";
});
await one("getUser missing arg -> isError, usable", async () => {
  const r = await client.callTool({ name: "getUser", arguments: {} }, undefined, REQ_OPTS);
  assert(r.isError, "expected isError, got " + textOf(r));
  await usable(); return JSON.stringify(textOf(r).slice(0, 80)) + "; still usable";
});
await one("ping", async () => { await client.ping(REQ_OPTS); });
await one("20 concurrent tools/call", async () => {
  const names = Array.from({ length: 20 }, (_, i) => `${prefix}c${i}`);
  const rs = await Promise.all(names.map((n) => client.callTool({ name: "addUser", arguments: { name: n, email: `${n}@example.com` } }, undefined, REQ_OPTS)));
  const bad = names.filter((n, i) => rs[i].isError || !textOf(rs[i]).includes(`Added ${n} <${n}@example.com>`));
  assert(bad.length === 0, `${bad.length} wrong: ${bad.slice(0, 3).map((n) => n + "=" + JSON.stringify(textOf(rs[names.indexOf(n)]))).join("; ")}`);
  return "20/20 own answers";
});

// ---- clean close ----
async function rawPost(u, body, headers = {}) {
  const r = await fetch(u, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25", ...headers }, body: JSON.stringify(body) });
  return [r.status, (await r.text()).slice(0, 100)];
}
const alive = (pid) => { try { return !/State:\s+Z/.test(fs.readFileSync(`/proc/${pid}/status`, "utf8")); } catch { return false; } };
if (kind === "stdio") {
  await client.close();
  const deadline = Date.now() + 8000; let pid, eof, exit;
  while (Date.now() < deadline) {
    const lines = fs.readFileSync(wireLog, "utf8").split("\n");
    for (const l of lines) { const p = l.split(" "); if (p[0] === "PID") pid = +p[1]; if (p[0] === "EOF") eof = +p[1]; if (p[0] === "EXIT") exit = [+p[1], +p[2]]; }
    if (pid && eof && (exit || !alive(pid))) break;
    if (pid && eof && Date.now() / 1000 > eof + 5) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!eof) report("clean close (server exits <=5s after stdin EOF)", false, "client never closed stdin");
  else if (exit) report("clean close (server exits <=5s after stdin EOF)", exit[1] - eof <= 5, `server exited rc=${exit[0]} ${(exit[1] - eof).toFixed(2)}s after stdin EOF`);
  else report("clean close (server exits <=5s after stdin EOF)", !alive(pid), alive(pid) ? "still alive >5s after EOF (killed)" : "exited");
  if (pid && alive(pid)) process.kill(pid, "SIGKILL");
} else if (kind === "sse") {
  const ep = transport._endpoint?.href;
  await client.close();
  let st, body;
  for (let i = 0; i < 40; i++) { [st, body] = await rawPost(ep, { jsonrpc: "2.0", id: 9, method: "ping" }); if (st === 404) break; await new Promise((r) => setTimeout(r, 100)); }
  report("clean close (stream closed -> session gone, 404)", st === 404, `POST to old endpoint ${ep} -> ${st} ${body}`);
} else if (process.env.INTEROP_STATELESS) {
  await client.close();
  console.log(`SKIP [${C}] clean close (stateless: no session; sid=${transport.sessionId})`);
} else {
  const sid = transport.sessionId;
  let termErr = "";
  try { await transport.terminateSession(); } catch (e) { termErr = " terminateSession threw " + fmt(e); }
  await client.close();
  const [st, body] = await rawPost(url, { jsonrpc: "2.0", id: 9, method: "tools/list" }, { "mcp-session-id": sid });
  report("clean close (DELETE, then 404)", seen.deletes.length > 0 && seen.deletes[0] < 300 && st === 404, `sid=${sid} DELETE status=${JSON.stringify(seen.deletes)}${termErr}; later POST -> ${st} ${body}`);
}
process.exit(failures ? 1 : 0);
