// End-to-end check of the TypeScript client against a running Tether server.
//
//   TETHER_URL=http://127.0.0.1:36725 TETHER_TOKEN=<dispatcher token> \
//   TETHER_TOKEN_2=<worker token, another identity> npm run e2e
//
// Creates a node, claims it, renews it with the fence, completes it and reads it
// back; with TETHER_TOKEN_2, checks that a second identity's claim of a held node
// is a TetherProblem with code "conflict". Then, through a proxy that answers 503
// (or 429) twice before passing a call on, checks the client's retries. Prints `N passed, M failed` and exits
// non-zero on any failure.
import { deepStrictEqual } from "node:assert/strict";
import { randomBytes } from "node:crypto";

import { type Schemas, TetherProblem, createTetherClient, unwrap, unwrapOptional } from "../src/index.js";
import { FaultProxy } from "./faultproxy.js";

const REQUEST_TIMEOUT_MS = 15_000;
const OVERALL_TIMEOUT_MS = 90_000;

const baseUrl = process.env.TETHER_URL;
const token = process.env.TETHER_TOKEN;
const token2 = process.env.TETHER_TOKEN_2;
if (!baseUrl || !token) {
  console.error("e2e: set TETHER_URL and TETHER_TOKEN (a dispatcher or admin token); TETHER_TOKEN_2 (a worker) is optional");
  process.exit(2);
}

setTimeout(() => {
  console.error(`e2e: gave up after ${OVERALL_TIMEOUT_MS} ms`);
  process.exit(1);
}, OVERALL_TIMEOUT_MS).unref();

// Every request gets a deadline, so a hung server fails the run instead of stalling it.
const timedFetch = (req: Request) => fetch(req, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
const head = createTetherClient({ baseUrl, token, fetch: timedFetch });

let passed = 0;
let failed = 0;
let skipped = 0;

async function check(name: string, fn: () => Promise<void>): Promise<void> {
  const t0 = performance.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Math.round(performance.now() - t0)} ms)`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function skip(name: string, why: string): void {
  skipped++;
  console.log(`skip ${name}: ${why}`);
}

function expect(cond: unknown, msg: string): asserts cond {
  if (!cond) throw new Error(msg);
}

/** Runs fn, which must throw a TetherProblem with this code; returns it. */
async function expectProblem(code: string, fn: () => Promise<unknown>): Promise<TetherProblem> {
  try {
    await fn();
  } catch (err) {
    expect(err instanceof TetherProblem, `want TetherProblem ${code}, got ${String(err)}`);
    expect(err.code === code, `want code ${code}, got ${err.code} (${err.message})`);
    return err;
  }
  throw new Error(`want TetherProblem ${code}, the call succeeded`);
}

const id = `ts-e2e-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
const result = { pr: 42, files: ["api.go", "api_test.go"], nested: { ok: true, n: null } };
let lease: Schemas["Lease"] | undefined;

function held(): Schemas["Lease"] {
  expect(lease, "no lease: the claim step failed");
  return lease;
}

console.log(`e2e: ${baseUrl}, node ${id}`);

await check("server is ready (GET /ready)", async () => {
  const res = await unwrap(head.GET("/ready"));
  expect(res !== undefined, "no body");
});

await check("create a node", async () => {
  const node = await unwrap(
    head.POST("/v1/nodes", {
      body: { id, type: "task", title: "TypeScript client e2e", queue: "ts-e2e", labels: ["e2e"] },
    }),
  );
  expect(node.id === id, `id ${node.id}`);
  expect(node.status === "queued", `status ${node.status}`);
  expect(node.ready, "not ready");
});

await check("a taken id is already_exists", async () => {
  await expectProblem("already_exists", () => unwrap(head.POST("/v1/nodes", { body: { id, type: "task" } })));
});

await check("claim it", async () => {
  const claim = await unwrap(
    head.POST("/v1/nodes/{id}/claim", { params: { path: { id } }, body: { ttl_ms: 60_000 } }),
  );
  expect(claim.ok && claim.status === "running", `status ${claim.status}`);
  expect(!claim.renewed, "a fresh claim says renewed");
  expect(claim.lease.node_id === id, `lease.node_id ${claim.lease.node_id}`);
  expect(claim.lease.fence > 0, `fence ${claim.lease.fence}`);
  expect(claim.lease.ttl_ms === 60_000, `ttl_ms ${claim.lease.ttl_ms}`);
  expect(claim.node.attempts === 1, `attempts ${claim.node.attempts}`);
  lease = claim.lease;
});

await check("renew it with the fence", async () => {
  const l = held();
  const renew = await unwrap(
    head.POST("/v1/nodes/{id}/renew", { params: { path: { id } }, body: { fence: l.fence } }),
  );
  expect(renew.ok && renew.status === "running", `status ${renew.status}`);
  expect(renew.lease.fence === l.fence, `fence ${renew.lease.fence}, want ${l.fence}`);
  expect(renew.lease.expires >= l.expires, `expires went back: ${renew.lease.expires} < ${l.expires}`);
  lease = renew.lease;
});

await check("a wrong fence is lease_lost", async () => {
  const l = held();
  const p = await expectProblem("lease_lost", () =>
    unwrap(head.POST("/v1/nodes/{id}/renew", { params: { path: { id } }, body: { fence: l.fence + 1 } })),
  );
  expect(p.status === 409, `status ${p.status}`);
});

if (token2) {
  const w2 = createTetherClient({ baseUrl, token: token2, fetch: timedFetch });
  await check("another identity's claim is a conflict naming the holder", async () => {
    const l = held();
    const p = await expectProblem("conflict", () =>
      unwrap(w2.POST("/v1/nodes/{id}/claim", { params: { path: { id } }, body: {} })),
    );
    expect(p.status === 409, `status ${p.status}`);
    expect(p.holder === l.by, `holder ${String(p.holder)}, want ${l.by}`);
    expect(typeof p.expires_at === "string" && !Number.isNaN(Date.parse(p.expires_at)), `expires_at ${String(p.expires_at)}`);
  });
} else {
  skip("another identity's claim is a conflict", "TETHER_TOKEN_2 (a worker token of another identity) is not set");
}

await check("complete it with a result", async () => {
  const l = held();
  const done = await unwrap(
    head.POST("/v1/nodes/{id}/complete", {
      params: { path: { id } },
      body: { fence: l.fence, result, usage: { tokens: 1200 } },
    }),
  );
  expect(done.ok && done.status === "done", `status ${done.status}`);
});

await check("read it back: done, with the result", async () => {
  const node = await unwrap(head.GET("/v1/nodes/{id}", { params: { path: { id } } }));
  expect(node.status === "done", `status ${node.status}`);
  expect(node.lease === null, "lease still set");
  deepStrictEqual(node.result, result);
  expect(node.usage["tokens"] === 1200, `usage ${JSON.stringify(node.usage)}`);
});

await check("a done node is not_claimable (terminal)", async () => {
  const p = await expectProblem("not_claimable", () =>
    unwrap(head.POST("/v1/nodes/{id}/claim", { params: { path: { id } } })),
  );
  expect(p.problem.reason === "terminal", `reason ${String(p.problem.reason)}`);
});

await check("a schedule: create, preview, trigger, runs, delete", async () => {
  const sid = `${id}-sched`;
  const s = await unwrap(
    head.POST("/v1/schedules", {
      body: { id: sid, cron: "0 9 * * 1-5", timezone: "Europe/Berlin", template: { type: "report", queue: "ts-e2e-sched" } },
    }),
  );
  expect(s.next_fires.length === 5, `next_fires ${s.next_fires.length}`);
  expect(s.overlap === "skip", `overlap ${s.overlap}`);
  const run = await unwrap(head.POST("/v1/schedules/{id}/trigger", { params: { path: { id: sid } } }));
  expect(run.trigger === "manual" && run.status === "queued", `run ${run.trigger} ${run.status}`);
  await expectProblem("conflict", () => unwrap(head.POST("/v1/schedules/{id}/trigger", { params: { path: { id: sid } } })));
  const runs = await unwrap(head.GET("/v1/schedules/{id}/runs", { params: { path: { id: sid } } }));
  expect(runs.items.length === 1 && runs.items[0]?.node_id === run.node_id, `runs ${JSON.stringify(runs.items)}`);
  await expectProblem("bad_request", () =>
    unwrap(head.PATCH("/v1/schedules/{id}", { params: { path: { id: sid } }, body: { cron: "61 * * * *" } })),
  );
  await unwrap(head.DELETE("/v1/schedules/{id}", { params: { path: { id: sid } } }));
});

await check("claim-next on an empty queue is undefined with unwrapOptional", async () => {
  const empty = await unwrapOptional(
    head.POST("/v1/queues/{queue}/claim", { params: { path: { queue: `${id}-empty` } }, body: { wait_ms: 0 } }),
  );
  expect(empty === undefined, `got ${JSON.stringify(empty)}`);
});

await check("complete claims the next node of a queue in the same call", async () => {
  const queue = `${id}-next`;
  for (const n of ["a", "b"]) {
    await unwrap(head.POST("/v1/nodes", { body: { id: `${id}-next-${n}`, type: "task", queue } }));
  }
  const first = await unwrap(head.POST("/v1/queues/{queue}/claim", { params: { path: { queue } }, body: { wait_ms: 0 } }));
  const done = await unwrap(
    head.POST("/v1/nodes/{id}/complete", {
      params: { path: { id: first.node.id } },
      body: { fence: first.lease.fence, next: { queue } },
    }),
  );
  expect(done.status === "done" && done.node.id === first.node.id, `completed ${done.node.id} ${done.status}`);
  const next = done.next;
  expect(next != null && next.status === "running" && next.node.id !== first.node.id, `next ${JSON.stringify(next)}`);
  const last = await unwrap(
    head.POST("/v1/nodes/{id}/complete", {
      params: { path: { id: next.node.id } },
      body: { fence: next.lease.fence, next: { queue } },
    }),
  );
  expect(last.next === null, `next after the last: ${JSON.stringify(last.next)}`);
});

await check("no path parameter changes the route", async () => {
  for (const id of [".", ".."]) {
    let err: unknown;
    try {
      await head.GET("/v1/nodes/{id}/events", { params: { path: { id } } });
    } catch (e) {
      err = e;
    }
    expect(err instanceof TypeError && /path parameter id/.test(err.message), `id ${JSON.stringify(id)} was sent: ${String(err)}`);
  }
  // "/" stays inside its segment: the route is the node's, which does not exist.
  const p = await expectProblem("bad_request", () => unwrap(head.GET("/v1/nodes/{id}/events", { params: { path: { id: "../events" } } })));
  expect(p.status === 400, `status ${p.status}`);
});

await check("a bad token is unauthorized", async () => {
  const anon = createTetherClient({ baseUrl, token: "not-a-token", fetch: timedFetch });
  const p = await expectProblem("unauthorized", () => unwrap(anon.GET("/v1/nodes/{id}", { params: { path: { id } } })));
  expect(p.status === 401, `status ${p.status}`);
});

const proxy = await new FaultProxy(baseUrl).start();
const fast = { baseDelayMs: 1, maxDelayMs: 10 };
const viaProxy = createTetherClient({ baseUrl: proxy.url, token, fetch: timedFetch, retry: fast });
const nodesOf = async (queue: string): Promise<string[]> =>
  (await unwrap(head.GET("/v1/nodes", { params: { query: { queue } } }))).items.map((n) => n.id);

for (const mode of ["refuse", "lose-answer"] as const) {
  await check(`retries: a create through two 503s (${mode}) creates one node`, async () => {
    const queue = `${id}-retry-${mode}`;
    proxy.failNext(2, 503, mode, "POST", "/v1/nodes");
    const node = await unwrap(viaProxy.POST("/v1/nodes", { body: { type: "task", queue } }));
    const keys = proxy.seen();
    expect(keys.length === 3 && keys[0] !== "" && keys.every((k) => k === keys[0]), `keys ${JSON.stringify(keys)}`);
    deepStrictEqual(await nodesOf(queue), [node.id]);
  });
}

await check("retries: off (retry: false), the 503 reaches the caller", async () => {
  const off = createTetherClient({ baseUrl: proxy.url, token, fetch: timedFetch, retry: false });
  const queue = `${id}-retry-off`;
  proxy.failNext(2, 503, "lose-answer", "POST", "/v1/nodes");
  const p = await expectProblem("unavailable", () => unwrap(off.POST("/v1/nodes", { body: { type: "task", queue } })));
  expect(p.status === 503, `status ${p.status}`);
  deepStrictEqual(proxy.seen(), [""]);
  expect((await nodesOf(queue)).length === 1, "the one try was applied");
});

await check("retries: claim and renew through lost answers; a complete is not repeated on 503, is on 429", async () => {
  const nid = `${id}-retry-claim`;
  await unwrap(head.POST("/v1/nodes", { body: { id: nid, type: "task", queue: `${id}-retry-claim` } }));
  proxy.failNext(2, 503, "lose-answer", "POST", `/v1/nodes/${nid}/claim`);
  const claim = await unwrap(viaProxy.POST("/v1/nodes/{id}/claim", { params: { path: { id: nid } }, body: { ttl_ms: 60_000 } }));
  expect(claim.renewed && claim.node.attempts === 1, `renewed ${claim.renewed}, attempts ${claim.node.attempts}`);
  const fence = claim.lease.fence;
  proxy.failNext(2, 503, "lose-answer", "POST", `/v1/nodes/${nid}/renew`);
  const renew = await unwrap(viaProxy.POST("/v1/nodes/{id}/renew", { params: { path: { id: nid } }, body: { fence } }));
  expect(renew.lease.fence === fence && proxy.seen().length === 3, `fence ${renew.lease.fence}, tries ${proxy.seen().length}`);
  proxy.failNext(1, 503, "refuse", "POST", `/v1/nodes/${nid}/complete`);
  await expectProblem("unavailable", () =>
    unwrap(viaProxy.POST("/v1/nodes/{id}/complete", { params: { path: { id: nid } }, body: { fence } })),
  );
  expect(proxy.seen().length === 1, `a complete answered 503 was tried ${proxy.seen().length} times`);
  proxy.failNext(2, 429, "refuse", "POST", `/v1/nodes/${nid}/complete`);
  const done = await unwrap(viaProxy.POST("/v1/nodes/{id}/complete", { params: { path: { id: nid } }, body: { fence } }));
  expect(done.status === "done" && proxy.seen().length === 3, `status ${done.status}, tries ${proxy.seen().length}`);
});

await check("retries: a claim-next through two lost answers claims one node", async () => {
  const queue = `${id}-retry-claim-next`;
  for (const n of ["a", "b", "c"]) {
    await unwrap(head.POST("/v1/nodes", { body: { id: `${queue}-${n}`, type: "task", queue } }));
  }
  proxy.failNext(2, 503, "lose-answer", "POST", `/v1/queues/${queue}/claim`);
  const claim = await unwrapOptional(viaProxy.POST("/v1/queues/{queue}/claim", { params: { path: { queue } }, body: { ttl_ms: 60_000 } }));
  const keys = proxy.seen();
  expect(keys.length === 3 && keys[0] !== "" && keys.every((k) => k === keys[0]), `keys ${JSON.stringify(keys)}`);
  expect(claim !== undefined && claim.node.attempts === 1, `claim ${JSON.stringify(claim)}`);
  const running = (await unwrap(head.GET("/v1/nodes", { params: { query: { queue, status: "running" } } }))).items.map((n) => n.id);
  deepStrictEqual(running, [claim?.node.id]);
});
proxy.close();

console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 ? 1 : 0);
