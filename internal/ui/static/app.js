// The dashboard: a sign-in form, the tenant overview (#/), the node lists
// (#/nodes?filters), a node's page (#/node/<id>) and the queues' throughput
// (#/throughput), kept current by the live event stream and a slow poll.

import { api, token, serverNow, Problem, UNAUTHORIZED } from './api.js';
import { showProblem } from './actions.js';
import { streamEvents } from './events.js';
import { h, fmtLeft } from './dom.js';
import { overview } from './overview.js';
import { nodePage } from './node.js';
import { nodesPage } from './nodes.js';
import { throughputPage } from './throughput.js';

const main = document.getElementById('main');
const streamPill = document.getElementById('stream');

let view = null; // the page shown: {refresh(), onEvent(ev), stop()}
let stream = null; // AbortController of the event stream
const recent = []; // the newest events, newest first
const RECENT = 100;

function signIn(message) {
  showProblem(null);
  stream?.abort();
  stream = null;
  view?.stop();
  view = null;
  recent.length = 0; // the next token may be another tenant's
  token.clear();
  for (const id of ['goto', 'signout', 'nav']) document.getElementById(id).hidden = true;
  document.getElementById('who').textContent = '';
  streamPill.textContent = '';
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', placeholder: 'JWT or API key', required: true });
  const form = h('form', { id: 'signin', class: 'panel' },
    h('h2', {}, 'Sign in'),
    h('p', {}, 'Paste a token or API key of this tenant. It stays in this tab (sessionStorage) and is sent only in the Authorization header. A reader sees everything; pausing queues, cancelling, requeueing and releasing need a dispatcher or admin.'),
    message ? h('p', { class: 'error' }, message) : null,
    input, h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    token.set(input.value.trim());
    start();
  });
  main.replaceChildren(form);
  input.focus();
}

async function start() {
  let tenant;
  try {
    tenant = await api('GET', '/v1/tenant');
  } catch (err) {
    return signIn(err instanceof Problem ? `${err.status}: ${err.message}` : String(err));
  }
  document.getElementById('who').textContent = `tenant ${tenant.id}`;
  for (const id of ['goto', 'signout', 'nav']) document.getElementById(id).hidden = false;
  stream = new AbortController();
  streamEvents({
    signal: stream.signal,
    onAuth: (p) => signIn(`${p.status}: ${p.message}`),
    onState: (st) => {
      streamPill.className = `pill ${typeof st === 'string' ? st : 'down'}`;
      streamPill.textContent = typeof st === 'string' ? `events ${st}` : 'events reconnecting';
      streamPill.title = typeof st === 'string' ? 'The live event stream' : st.message;
    },
    onEvent: (ev) => {
      recent.unshift(ev);
      if (recent.length > RECENT) recent.length = RECENT;
      view?.onEvent(ev);
    },
  });
  route();
}

function route() {
  if (!token.get() || !stream) return;
  const node = location.hash.match(/^#\/node\/(.+)$/);
  const list = location.hash.match(/^#\/nodes(?:\?(.*))?$/);
  view?.stop();
  if (node) view = nodePage(main, decodeURIComponent(node[1]));
  else if (list) view = nodesPage(main, new URLSearchParams(list[1] ?? ''));
  else if (location.hash === '#/throughput') view = throughputPage(main);
  else view = overview(main, recent);
  const here = list ? '#/nodes' : node ? '' : location.hash === '#/throughput' ? '#/throughput' : '#/';
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('here', a.getAttribute('href') === here);
  view.refresh();
}

// One clock moves every countdown on the page.
function tick() {
  const now = serverNow();
  for (const el of document.querySelectorAll('[data-expires]')) {
    const left = Number(el.dataset.expires) - now;
    el.textContent = fmtLeft(left);
    el.classList.toggle('low', left < 10000);
  }
}
setInterval(tick, 100);
// The slow poll catches what is not an event: renewals, heartbeats.
setInterval(() => view?.refresh(), 5000);

window.addEventListener('hashchange', route);
// A token that stops working (revoked, expired) sends the operator back to
// sign in, saying why.
window.addEventListener(UNAUTHORIZED, (e) => {
  if (stream) signIn(`${e.detail.status}: ${e.detail.message}`);
});
document.getElementById('signout').addEventListener('click', () => signIn());
document.getElementById('goto').addEventListener('submit', (e) => {
  e.preventDefault();
  const id = document.getElementById('goto-id').value.trim();
  if (id) location.hash = `#/node/${encodeURIComponent(id)}`;
});

if (token.get()) start();
else signIn();
