// A reverse proxy in front of the e2e server that fails the next requests of
// one method and path with a status (and Retry-After: 0), then passes every
// request through: a server that answers 503 twice and then succeeds. The Go
// twin is clienttest.FaultProxy.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** refuse: answer without passing the request on; lose-answer: pass it on, then answer in the server's place. */
export type FaultMode = "refuse" | "lose-answer";

const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"]);

export class FaultProxy {
  url = "";
  private server: Server;
  private method = "";
  private path = "";
  private status = 0;
  private mode: FaultMode = "refuse";
  private fails = 0;
  private keys: string[] = [];

  constructor(private readonly target: string) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        res.writeHead(502).end(String(err));
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }

  failNext(n: number, status: number, mode: FaultMode, method: string, path: string): void {
    Object.assign(this, { fails: n, status, mode, method, path, keys: [] });
  }

  /** The Idempotency-Key ("" when absent) of every request to the failing path since failNext. */
  seen(): string[] {
    return [...this.keys];
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const path = (req.url ?? "/").split("?")[0];
    let fail = false;
    if (req.method === this.method && path === this.path) {
      this.keys.push(String(req.headers["idempotency-key"] ?? ""));
      fail = this.fails > 0;
      if (fail) this.fails--;
    }
    if (!fail || this.mode === "lose-answer") {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (!HOP.has(k) && typeof v === "string") headers[k] = v;
      }
      const upstream = await fetch(this.target + (req.url ?? "/"), {
        method: req.method ?? "GET",
        headers,
        ...(body.length > 0 ? { body } : {}),
      });
      const answer = Buffer.from(await upstream.arrayBuffer());
      if (!fail) {
        const out: Record<string, string> = {};
        upstream.headers.forEach((v, k) => {
          if (!HOP.has(k)) out[k] = v;
        });
        res.writeHead(upstream.status, { ...out, "content-length": String(answer.length) }).end(answer);
        return;
      }
    }
    const code = this.status === 429 ? "rate_limited" : "unavailable";
    res
      .writeHead(this.status, { "retry-after": "0", "content-type": "application/problem+json" })
      .end(JSON.stringify({ type: `urn:tether:problem:${code}`, title: "injected", status: this.status, code }));
  }
}
