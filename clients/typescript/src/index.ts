// A thin typed client for the Tether HTTP API.
//
// The types in ./schema.ts are generated from openapi.yaml by
// openapi-typescript (`npm run generate`); the runtime is openapi-fetch. This file
// only adds the bearer token and turns problem+json answers into TetherProblem.
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
}

/** Makes an openapi-fetch client for a Tether server, authenticated with `token`. */
export function createTetherClient(opts: TetherClientOptions): TetherClient {
  return createClient<paths>({
    baseUrl: opts.baseUrl,
    headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
    pathSerializer: onePathSegmentEach,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
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
