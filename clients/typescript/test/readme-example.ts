// The README's TypeScript snippet, type-checked by `npm run check` (and kept
// line for line equal to the README by client/readme_sync_test.go). Not run.
import { createTetherClient, unwrap, unwrapOptional } from "../src/index.js";

export async function readmeExample(): Promise<void> {
  const tether = createTetherClient({ baseUrl: process.env.TETHER_URL!, token: process.env.TETHER_TOKEN! });
  const claim = await unwrapOptional(tether.POST("/v1/queues/{queue}/claim", { params: { path: { queue: "default" } }, body: { wait_ms: 30000 } }));
  if (claim) { // undefined: nothing was ready within 30 s (204)
    const { lease, node } = claim;
    await unwrap(tether.POST("/v1/nodes/{id}/complete", { params: { path: { id: node.id } }, body: { fence: lease.fence, result: { ok: true } } }));
  }
}
