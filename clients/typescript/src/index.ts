// A thin typed client for the Tether HTTP API.
//
// The types in ./schema.ts are generated from openapi.yaml by
// openapi-typescript (`npm run generate`); the runtime is openapi-fetch. This file
// adds the bearer token, the retries of calls that are safe to repeat, and turns
// problem+json answers into TetherProblem.
import createClient, { type Client, defaultPathSerializer } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

/** The openapi-fetch client for Tether's paths: `client.POST("/v1/nodes/{id}/claim", ...)`. */
export type TetherClient = Client<paths>;
export type Schemas = components["schemas"];
export type Problem = Schemas["Problem"];
export type ProblemCode = Schemas["ProblemCode"];

export interface TetherClientOptions {
  /** The server's root URL, e.g. http://127.0.0.1:36725 (no /v1). */
  baseUrl: string;
  /** A JWT, API key or static token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** A fetch to use instead of globalThis.fetch (tests, proxies, timeouts). */
  fetch?: (input: Request) => Promise<Response>;
  /**
   * How the client sends again a call that failed for a reason that may pass (a
   * 429, a 503, a connection error), when that is safe (see the README's table).
   * Omitted: the defaults of RetryPolicy. `false` turns retries off.
   */
  retry?: RetryPolicy | false;
}

/** Makes an openapi-fetch client for a Tether server, authenticated with `token`. */
export function createTetherClient(opts: TetherClientOptions): TetherClient {
  const inner = opts.fetch ?? ((req: Request) => globalThis.fetch(req));
  return createClient<paths>({
    baseUrl: opts.baseUrl,
    headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
    pathSerializer: onePathSegmentEach,
    fetch: opts.retry === false ? inner : retryingFetch(inner, opts.baseUrl, opts.retry ?? {}),
  });
}

/**
 * How often a call is tried, and the waits between tries: the Go client's
 * RetryPolicy. Waits double from baseDelayMs up to maxDelayMs, each drawn from
 * the upper half of its span; the server's Retry-After counts when longer,
 * capped at maxDelayMs too.
 */
export interface RetryPolicy {
  /** Tries of one call, the first included (default 4; 1 turns retries off). */
  maxAttempts?: number;
  /** The wait before the first retry (default 200). */
  baseDelayMs?: number;
  /** The cap of every wait, Retry-After included (default 5000). */
  maxDelayMs?: number;
}

/** What a retry may assume of a call. */
type CallKind = "once" | "repeatable" | "keyed";

/**
 * A fetch that sends a call again, at most maxAttempts times in all: after a 429
 * (the server refused before acting) or a connection never made, whatever the
 * call; after a 503 or a connection lost during the call, only when the call is
 * safe to repeat: reads, renewals, claims of a node by id (re-claiming one's own
 * lease renews it), releases that carry a fence, worker heartbeats, message
 * acknowledgements, and creates and claims of a queue's next nodes, which it
 * sends with an Idempotency-Key of its own making (unless the caller set one) so
 * that the server answers a repeat with what the first try did. An aborted request
 * is never sent again.
 */
export function retryingFetch(
  fetch: (input: Request) => Promise<Response>,
  baseUrl: string,
  policy: RetryPolicy = {},
): (input: Request) => Promise<Response> {
  const maxAttempts = policy.maxAttempts ?? 4;
  const baseDelay = policy.baseDelayMs ?? 200;
  const maxDelay = policy.maxDelayMs ?? Math.max(5000, baseDelay);
  const base = new URL(baseUrl).pathname.replace(/\/+$/, "");
  return async (request: Request): Promise<Response> => {
    if (maxAttempts <= 1) {
      return fetch(request);
    }
    const kind = await callKind(request, base);
    if (kind === "keyed" && !request.headers.has("Idempotency-Key")) {
      request = new Request(request, { headers: withHeader(request.headers, "Idempotency-Key", newIdempotencyKey()) });
    }
    const repeatable = kind !== "once";
    let backoff = baseDelay;
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= maxAttempts;
      let wait: number;
      try {
        const response = await fetch(last ? request : request.clone());
        const again = response.status === 429 || (response.status === 503 && repeatable);
        if (last || !again) {
          return response;
        }
        wait = retryAfterMs(response);
        await response.body?.cancel();
      } catch (err) {
        if (last || request.signal.aborted || !(notSent(err) || (repeatable && isNetworkError(err)))) {
          throw err;
        }
        wait = 0;
      }
      const jittered = backoff / 2 + Math.random() * (backoff / 2);
      backoff = Math.min(2 * backoff, maxDelay);
      await sleep(Math.max(jittered, Math.min(wait, maxDelay)), request.signal);
    }
  };
}

async function callKind(request: Request, base: string): Promise<CallKind> {
  if (["GET", "HEAD", "OPTIONS"].includes(request.method)) {
    return "repeatable";
  }
  const path = new URL(request.url).pathname;
  if (request.method !== "POST" || !path.startsWith(`${base}/`)) {
    return "once";
  }
  const seg = path.slice(base.length + 1).split("/");
  const [v1, kind, id, verb] = seg;
  if (v1 !== "v1") {
    return "once";
  }
  if ((seg.length === 2 && kind === "nodes") || (seg.length === 3 && kind === "nodes" && id === "batch")) {
    return "keyed";
  }
  if (seg.length === 4 && kind === "queues" && (verb === "claim" || verb === "claims")) {
    return "keyed";
  }
  if (seg.length === 4 && kind === "nodes" && (verb === "renew" || verb === "claim")) {
    return "repeatable";
  }
  if (seg.length === 4 && kind === "nodes" && verb === "release") {
    return (await hasFence(request)) ? "repeatable" : "once";
  }
  if ((seg.length === 3 && kind === "workers" && id === "heartbeat") || (seg.length === 4 && kind === "inbox" && verb === "ack")) {
    return "repeatable";
  }
  return "once";
}

async function hasFence(request: Request): Promise<boolean> {
  try {
    const body: unknown = JSON.parse(await request.clone().text());
    return typeof body === "object" && body !== null && typeof (body as { fence?: unknown }).fence === "number";
  } catch {
    return false;
  }
}

/** Node's fetch (undici) fails a request with a TypeError whose cause has the socket's error code. */
function errorCode(err: unknown): string | undefined {
  const cause = (err as { cause?: { code?: unknown } } | undefined)?.cause;
  return typeof cause?.code === "string" ? cause.code : undefined;
}

/** The error codes of a connection that was never made: nothing was sent. */
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

function notSent(err: unknown): boolean {
  const code = errorCode(err);
  return code !== undefined && NOT_SENT.has(code);
}

function isNetworkError(err: unknown): boolean {
  return err instanceof TypeError && errorCode(err) !== undefined;
}

/** The wait a Retry-After asks for (delta seconds or an HTTP date), in ms; 0 without one. */
function retryAfterMs(response: Response): number {
  const v = response.headers.get("Retry-After")?.trim();
  if (!v) {
    return 0;
  }
  if (/^\d+$/.test(v)) {
    return Number(v) * 1000;
  }
  const at = Date.parse(v);
  return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}

function withHeader(headers: Headers, name: string, value: string): Headers {
  const h = new Headers(headers);
  h.set(name, value);
  return h;
}

function newIdempotencyKey(): string {
  return `tether-ts-${globalThis.crypto.randomUUID()}`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const done = (): void => {
      signal.removeEventListener("abort", abort);
      resolve();
    };
    const abort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", abort, { once: true });
  });
}

/** The path parameter values that cannot be sent as one segment of a URL's path. */
const NOT_A_SEGMENT = new Set(["", ".", ".."]);

/**
 * Puts each path parameter in its own segment, so that no id changes the route.
 * openapi-fetch's serializer escapes `/` (encodeURIComponent); "." and ".." stay as
 * they are, and every URL parser (fetch's too, even for `%2E`) resolves them as dot
 * segments: the events of node ".." would be GET /v1/events. No id the server gives
 * or accepts is "", "." or "..", so such a value is refused here, before any request.
 */
export function onePathSegmentEach(pathname: string, pathParams: Record<string, unknown>): string {
  for (const [name, value] of Object.entries(pathParams ?? {})) {
    if (typeof value === "string" && NOT_A_SEGMENT.has(value)) {
      throw new TypeError(`the path parameter ${name} may not be ${JSON.stringify(value)}: it would change the route`);
    }
  }
  return defaultPathSerializer(pathname, pathParams);
}

/** An RFC 9457 problem answer from Tether; switch on `code`. */
export class TetherProblem extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly detail: string | undefined;
  /** `conflict`, `lease_lost`: the current lease holder (null when none). */
  readonly holder: string | null | undefined;
  /** `conflict`: the holder's lease expiry. */
  readonly expires_at: string | undefined;
  /** The whole problem document, with every extension member. */
  readonly problem: Problem;

  constructor(problem: Problem) {
    super(`${problem.status} ${problem.code}: ${problem.detail ?? problem.title}`);
    this.name = "TetherProblem";
    this.problem = problem;
    this.code = problem.code;
    this.status = problem.status;
    this.detail = problem.detail;
    this.holder = problem.holder;
    this.expires_at = problem.expires_at;
  }
}

/** True for a value that looks like a Tether problem document. */
export function isProblem(v: unknown): v is Problem {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as Problem).code === "string" &&
    typeof (v as Problem).status === "number"
  );
}

/** What every openapi-fetch call resolves to. */
export interface FetchResult<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/**
 * Returns the data of a successful answer; throws a TetherProblem for a
 * problem+json answer, and a plain Error for any other failure.
 *
 *   const claim = await unwrap(client.POST("/v1/nodes/{id}/claim", { params: { path: { id } } }));
 *
 * For a call that may answer 204 with no body (claim-next and the claims of a
 * queue with nothing ready), use unwrapOptional, whose type says so: openapi-fetch
 * types only the bodies, so unwrap's D cannot show the empty answer.
 */
export async function unwrap<D>(call: FetchResult<D> | Promise<FetchResult<D>>): Promise<D> {
  const { data, error, response } = await call;
  if (response.ok) {
    return data as D;
  }
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("application/problem+json") && isProblem(error)) {
    throw new TetherProblem(error);
  }
  const text = typeof error === "string" ? error : JSON.stringify(error);
  throw new Error(`${response.status} ${response.statusText}: ${text}`);
}

/**
 * unwrap for a call that may succeed with no body (204: claim-next when nothing
 * was ready): resolves to undefined then, and the type says so.
 *
 *   const claim = await unwrapOptional(client.POST("/v1/queues/{queue}/claim", { params: { path: { queue } }, body: { wait_ms: 30000 } }));
 *   if (claim) { ... claim.lease.fence ... }
 */
export async function unwrapOptional<D>(call: FetchResult<D> | Promise<FetchResult<D>>): Promise<D | undefined> {
  const res = await call;
  if (res.response.status === 204) {
    return undefined;
  }
  return unwrap(res);
}
