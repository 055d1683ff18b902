// Three agents work a Tether server through its MCP endpoint (/mcp, streamable
// HTTP) with the official TypeScript MCP SDK client, as an LLM's host would:
//
//   - a planner (dispatcher) creates a parent with five children in a queue and
//     calls wait_for on the parent's children;
//   - worker A claims the first child with a short ttl_ms, reports progress,
//     and dies: its connection is dropped without completing, so its session
//     ends when idle (TETHER_MCP_SESSION_IDLE_MS), nothing renews the lease any
//     more, and the reaper puts the child back in the queue;
//   - worker B claims, reports progress, completes, fails one child once (it
//     is retried), and picks up A's child when it comes back.
//
// The planner's wait_for answers once all five have ended; the script then
// asserts the final graph (statuses, attempts, and who carried what through
// the assigned edges, read from the REST API) and prints a transcript of
// every tool call and answer.
//
// Environment: TETHER_URL, PLANNER_TOKEN (dispatcher), WORKER_A_TOKEN and
// WORKER_B_TOKEN (workers, subs worker-a and worker-b).
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.env.TETHER_URL;
const tokens = {
  planner: process.env.PLANNER_TOKEN,
  "worker-a": process.env.WORKER_A_TOKEN,
  "worker-b": process.env.WORKER_B_TOKEN,
};
for (const [who, tok] of Object.entries(tokens)) assert.ok(tok, `no token for ${who}`);
assert.ok(url, "TETHER_URL is not set");

const started = Date.now();
const elapsed = () => ((Date.now() - started) / 1000).toFixed(1).padStart(5);
const short = (v, n = 700) => {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s.length > n ? s.slice(0, n) + `… (${s.length} chars)` : s;
};

// agent connects one MCP client as who; call runs a tool, prints the call
// and its structured answer, and returns the answer (a tool error throws
// unless allowed).
async function agent(who) {
  const client = new Client({ name: `e2e-${who}`, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url + "/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${tokens[who]}` } },
  });
  await client.connect(transport);
  // Listing the tools caches their output schemas: from then on the SDK
  // checks every structured answer against its tool's schema.
  const { tools } = await client.listTools();
  console.log(`${elapsed()}s ${who}: connected, ${tools.length} tools (${tools.map((t) => t.name).join(", ")})`);
  const call = async (name, args = {}, { allowError = false, timeout = 60000 } = {}) => {
    console.log(`${elapsed()}s ${who} → ${name} ${JSON.stringify(args)}`);
    const res = await client.callTool({ name, arguments: args }, undefined, { timeout, resetTimeoutOnProgress: true });
    const answer = res.structuredContent;
    console.log(`${elapsed()}s ${who} ← ${res.isError ? "ERROR " : ""}${short(answer)}`);
    assert.ok(answer, `${name}: no structured answer`);
    assert.ok(res.content?.length > 0, `${name}: no text content`);
    if (res.isError && !allowError) throw new Error(`${who}: ${name} failed: ${JSON.stringify(answer)}`);
    return answer;
  };
  return { who, client, transport, call, tools };
}

// rest reads the API directly (the final graph), as the planner.
async function rest(path) {
  const res = await fetch(url + path, { headers: { Authorization: `Bearer ${tokens.planner}` } });
  const body = await res.text();
  assert.equal(res.status, 200, `GET ${path}: ${res.status} ${body}`);
  return JSON.parse(body);
}

const queue = `e2e-${Date.now().toString(36)}`;
const parent = `${queue}-plan`;
const children = [1, 2, 3, 4, 5].map((i) => `${queue}-part-${i}`);

// Each agent connects when it starts work: an idle session ends after
// TETHER_MCP_SESSION_IDLE_MS (short here, so that worker A's lapses soon).
const planner = await agent("planner");

// Every tool has annotations and an output schema; every parameter a description.
for (const t of planner.tools) {
  assert.ok(t.annotations, `${t.name}: no annotations`);
  for (const h of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
    assert.equal(typeof t.annotations[h], "boolean", `${t.name}: ${h}`);
  }
  assert.ok(t.outputSchema, `${t.name}: no output schema`);
  for (const [p, s] of Object.entries(t.inputSchema.properties ?? {})) {
    assert.ok(s.description, `${t.name}.${p}: no description`);
  }
}

// The planner fans out.
await planner.call("create_node", { id: parent, type: "plan", title: "Write the release notes" });
for (const [i, id] of children.entries()) {
  await planner.call("create_node", {
    id, type: "section", queue, parent, title: `Section ${i + 1}`,
    body: `Write section ${i + 1} of the release notes.`,
  });
}
const queues = await planner.call("list_queues");
assert.equal(queues.queues.find((q) => q.queue === queue)?.ready, 5);
const listed = await planner.call("list_nodes", { parent, status: "queued", limit: 3 });
assert.equal(listed.nodes.length, 3);
assert.ok(listed.next_cursor, "a first page of three has a cursor");

// The planner waits while the workers work.
const waited = planner.call("wait_for", { node_id: parent, children: true, max_wait_ms: 120000 }, { timeout: 150000 });

// Worker A claims the first child with a short lease, reports, and dies.
const workerA = await agent("worker-a");
const a = await workerA.call("claim_next", { queue, ttl_ms: 2000 });
assert.equal(a.claimed, true);
assert.equal(a.node.id, children[0]);
assert.equal(a.lease.kept, true);
await workerA.call("progress", { node_id: a.node.id, pct: 30, message: "drafting" });
console.log(`${elapsed()}s worker-a: dies (its connection is dropped; it never completes ${a.node.id})`);
await workerA.transport.close(); // no DELETE: the session ends when idle, as a crashed agent's does

// Worker B works until the planner's wait ends.
const workerB = await agent("worker-b");
let plannerDone = false;
waited.finally(() => (plannerDone = true));
const failedOnce = new Set();
while (!plannerDone) {
  const c = await workerB.call("claim_next", { queue, wait_ms: 2000 });
  if (!c.claimed) continue;
  const id = c.node.id;
  await workerB.call("progress", { node_id: id, pct: 50, message: `writing ${c.node.title}`, usage: { tokens: 120 } });
  if (id === children[2] && !failedOnce.has(id)) {
    failedOnce.add(id);
    const f = await workerB.call("fail", { node_id: id, error: "the model timed out", retry_in_ms: 0 });
    assert.equal(f.status, "queued", "retried while attempts remain");
    continue;
  }
  const done = await workerB.call("complete", { node_id: id, result: { words: 300 + id.length } });
  assert.equal(done.status, "done");
  assert.equal(done.already_done, false);
  if (id === children[1]) {
    const again = await workerB.call("complete", { node_id: id, result: { words: 300 } });
    assert.equal(again.already_done, true, "a second completion says it changed nothing");
  }
}

const final = await waited;
assert.equal(final.ended, true);
assert.equal(final.timed_out, false);
assert.deepEqual(final.counts, { done: 5 });

// The final graph, from the REST API.
console.log(`${elapsed()}s final graph:`);
const carriers = {};
for (const id of children) {
  const n = await rest(`/v1/nodes/${encodeURIComponent(id)}`);
  const edges = await rest(`/v1/nodes/${encodeURIComponent(id)}/edges?type=assigned&include_retired=true`);
  carriers[id] = edges.items.map((e) => `${e.to.replace(/^identity:/, "")}:${e.props?.outcome ?? "live"}`);
  console.log(`  ${id}  ${n.status}  attempts ${n.attempts}  carried by ${carriers[id].join(", ")}`);
  assert.equal(n.status, "done");
}
assert.deepEqual(carriers[children[0]], ["worker-a:expired", "worker-b:done"], "A's child came back to B");
assert.deepEqual(carriers[children[2]], ["worker-b:failed", "worker-b:done"], "the failed run was retried");
for (const id of [children[1], children[3], children[4]]) assert.deepEqual(carriers[id], ["worker-b:done"]);
const attempts = await Promise.all(children.map(async (id) => (await rest(`/v1/nodes/${encodeURIComponent(id)}`)).attempts));
assert.deepEqual(attempts, [2, 1, 2, 1, 1]);

await planner.client.close();
await workerB.client.close();
console.log(`${elapsed()}s ok: the planner's five children are done; worker-a's child came back to worker-b`);
