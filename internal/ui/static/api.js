// The dashboard's one way to the server: every request carries the
// operator's token in the Authorization header, never in a URL.

const KEY = 'tether.token';

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (v) => sessionStorage.setItem(KEY, v),
  clear: () => sessionStorage.removeItem(KEY),
};

// Problem is a refused request: the API's problem document and status.
export class Problem extends Error {
  constructor(status, doc) {
    super(doc.detail || doc.title || `HTTP ${status}`);
    this.status = status;
    this.doc = doc;
  }
}

// Lease expiries are the server's instants: count down on its clock. The
// Date header has a one-second grain, so a smaller skew is left alone.
let skew = 0;
export const serverNow = () => Date.now() + skew;
function noteDate(res) {
  const d = Date.parse(res.headers.get('Date') || '');
  if (!Number.isNaN(d)) skew = Math.abs(d - Date.now()) > 2000 ? d - Date.now() : 0;
}

export function authHeaders(extra = {}) {
  return { Authorization: `Bearer ${token.get()}`, ...extra };
}

export async function readProblem(res) {
  const text = await res.text();
  try {
    return new Problem(res.status, JSON.parse(text));
  } catch {
    return new Problem(res.status, { title: res.statusText, detail: text.trim() });
  }
}

// api sends one request and returns its JSON (null for 204), or throws a
// Problem.
export async function api(method, path, body) {
  const init = { method, headers: authHeaders(), cache: 'no-store' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  noteDate(res);
  if (!res.ok) {
    const p = await readProblem(res);
    if (p.status === 401) window.dispatchEvent(new CustomEvent(UNAUTHORIZED, { detail: p }));
    throw p;
  }
  if (res.status === 204) return null;
  return res.json();
}

export const enc = encodeURIComponent;

// UNAUTHORIZED is the window event a 401 answer raises (detail: the Problem).
export const UNAUTHORIZED = 'tether:unauthorized';
