// A node's page: its fields, props and lease, the operator's actions on it,
// its graph neighbourhood, every attempt's error, its carrier history, its
// event timeline and its comments.

import { api, enc } from './api.js';
import { button } from './actions.js';
import { h, table, panel, nodeLink, countdown, fmtTime, badge } from './dom.js';
import { graph } from './graph.js';

const TERMINAL = new Set(['done', 'failed', 'dead', 'cancelled', 'expired']);

export function nodePage(main, id) {
  const head = panel('node', id);
  const hood = panel('subgraph', 'Neighbourhood');
  const attempts = panel('attempts', 'Attempts');
  const carriers = panel('carriers', 'Carrier history');
  const timeline = panel('timeline', 'Events');
  const comments = panel('comments', 'Comments');
  main.replaceChildren(h('p', { class: 'crumbs' }, h('a', { href: '#/' }, '← Overview')),
    h('div', { class: 'col' }, head, hood, attempts, carriers, h('div', { class: 'grid even' }, timeline, comments)));

  let pending = null;
  let alive = true; // until stop: a page left behind makes no request
  const refresh = async () => {
    if (!alive) return;
    const parts = [
      [head, () => api('GET', `/v1/nodes/${enc(id)}`).then(renderNode)],
      [hood, () => api('GET', `/v1/nodes/${enc(id)}/subgraph?depth=2`).then((g) => graph(g, id))],
      [carriers, () => api('GET', `/v1/nodes/${enc(id)}/edges?dir=out&type=assigned&include_retired=true&limit=1000`).then(renderCarriers)],
      [timeline, () => api('GET', `/v1/nodes/${enc(id)}/events?limit=1000`).then((evs) => {
        // One read serves both: the attempts are the timeline's failures.
        attempts.replaceChildren(attempts.firstChild, renderAttempts(evs.items));
        return renderTimeline(evs.items);
      })],
      [comments, () => api('GET', `/v1/nodes/${enc(id)}/comments?limit=1000`).then(renderComments)],
    ];
    await Promise.all(parts.map(async ([p, load]) => {
      try {
        p.replaceChildren(p.firstChild, ...[await load()].flat().filter((c) => c !== null));
      } catch (err) {
        p.replaceChildren(p.firstChild, h('p', { class: 'error' }, `${err.status || ''} ${err.message}`));
      }
    }));
  };

  function renderNode(n) {
    const l = n.lease;
    const field = (k, v) => [h('dt', {}, k), h('dd', {}, v ?? '—')];
    const actions = h('div', { class: 'actions' },
      !TERMINAL.has(n.status) ? button('Cancel', `Cancel ${id}`, () => api('POST', `/v1/nodes/${enc(id)}/cancel`,
        { reason: 'cancelled from the dashboard' }), refresh, { confirmText: `Cancel ${id} and its descendants and dependents?`, kind: 'warn' }) : null,
      ['failed', 'dead', 'cancelled', 'expired'].includes(n.status) ? button('Requeue', `Requeue ${id}`, () => api('POST', `/v1/nodes/${enc(id)}/requeue`,
        { reason: 'requeued from the dashboard' }), refresh, { confirmText: `Requeue ${id} with attempts reset?` }) : null,
      l ? button('Release lease', `Release ${id}`, () => api('POST', `/v1/nodes/${enc(id)}/release`,
        { reason: 'released from the dashboard', fence: l.fence }), refresh, { confirmText: `Release ${l.by}'s lease on ${id}?`, kind: 'warn' }) : null);
    return [
      h('p', { class: 'title' }, badge(n.status), ' ', n.title || h('em', {}, 'untitled'), ' ', h('span', { class: 'dim' }, n.type)),
      h('dl', {},
        field('Queue', n.queue), field('Priority', String(n.priority)), field('Attempts', `${n.attempts} of ${n.max_attempts}`),
        field('Ready', n.ready ? 'yes' : `no${n.blocked_by.length ? ` (blocked by ${n.blocked_by.join(', ')})` : ''}`),
        field('Target', n.target), field('Labels', n.labels.join(', ') || null),
        field('Lease', l ? [l.by, ` · fence ${l.fence} · expires in `, countdown(l.expires)] : null),
        field('Progress', n.progress ? `${n.progress.pct ?? ''}${n.progress.pct != null ? '% ' : ''}${n.progress.message ?? ''}` : null),
        field('Error', n.error), field('Result', n.result == null ? null : h('code', {}, JSON.stringify(n.result))),
        field('Created', `${fmtTime(n.created_at)} by ${n.created_by}`), field('Updated', fmtTime(n.updated_at)),
        field('Version', String(n.version))),
      n.body ? h('pre', { class: 'body' }, n.body) : null,
      Object.keys(n.props ?? {}).length ? h('div', { class: 'props' }, h('h3', {}, 'Props'),
        h('pre', { class: 'json' }, JSON.stringify(n.props, null, 2))) : null,
      actions,
    ];
  }

  function renderCarriers(list) {
    const rows = list.items.map((e) => h('tr', {},
      h('td', {}, nodeLink(e.to)),
      h('td', { class: 'num' }, String(e.props.fence ?? '—')),
      h('td', { class: 'mono' }, e.props.session ?? '—'),
      h('td', {}, fmtTime(e.created_at)),
      h('td', {}, e.retired_at ? fmtTime(e.retired_at) : badge('live', 'running')),
      h('td', {}, e.props.outcome ? badge(e.props.outcome) : '—')));
    return h('div', { class: 'scroll' }, table(['Carrier', 'Fence', 'Session', 'Claimed', 'Ended', 'Outcome'], rows, 'Nobody has carried this node.'));
  }

  // renderAttempts lists every failed attempt with its error, oldest first
  // (a `failed` event names the attempt, its holder and its error).
  function renderAttempts(events) {
    const died = new Set(events.filter((ev) => ev.type === 'dead').map((ev) => ev.seq));
    const then = (ev) => {
      if (died.has(ev.seq + 1)) return 'dead: no attempts left';
      if (ev.data?.requeue === false) return 'failed: no retry';
      return ev.data?.run_at ? `retry at ${fmtTime(ev.data.run_at)}` : 'retry';
    };
    const rows = events.filter((ev) => ev.type === 'failed').map((ev) => h('tr', {},
      h('td', { class: 'num' }, String(ev.data?.attempt ?? '—')),
      h('td', {}, ev.data?.holder ?? ev.by),
      h('td', {}, fmtTime(ev.at)),
      h('td', {}, then(ev)),
      h('td', { class: 'error-text' }, ev.data?.error ?? '')));
    return h('div', { class: 'scroll' }, table(['Attempt', 'Holder', 'Failed at', 'Then', 'Error'], rows, 'No attempt has failed.'));
  }

  function renderTimeline(events) {
    if (events.length === 0) return h('p', { class: 'empty' }, 'No events.');
    return h('ol', { class: 'events timeline' }, events.map((ev) => h('li', { class: `ev ${ev.type}` },
      h('span', { class: 'seq' }, `#${ev.seq}`),
      h('span', { class: 'type' }, ev.type),
      h('span', { class: 'by' }, ev.by),
      h('time', { title: ev.at }, fmtTime(ev.at)),
      summary(ev) ? h('span', { class: 'data' }, summary(ev)) : null)));
  }

  // summary is the one line of an event's data worth showing in a timeline.
  function summary(ev) {
    const d = ev.data ?? {};
    if (d.error) return d.error;
    if (d.reason) return d.reason;
    if (d.to && d.type) return `${d.type} → ${d.to}`;
    if (d.fence != null && ev.type === 'claimed') return `fence ${d.fence}`;
    return '';
  }

  function renderComments(list) {
    if (list.items.length === 0) return h('p', { class: 'empty' }, 'No comments.');
    return h('ol', { class: 'comments' }, list.items.map((c) => h('li', {},
      h('div', { class: 'meta' }, h('strong', {}, c.by), ' · ', fmtTime(c.created_at)),
      h('div', { class: 'text' }, c.body))));
  }

  return {
    refresh,
    stop() {
      alive = false;
      clearTimeout(pending);
    },
    onEvent(ev) {
      if (ev.node_id !== id && ev.data?.to !== id) return;
      clearTimeout(pending);
      pending = setTimeout(refresh, 300);
    },
  };
}
