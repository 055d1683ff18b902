// The tenant at a glance: live leases, queues, limits and budgets, workers,
// schedules and the newest events.

import { api, enc, serverNow } from './api.js';
import { button, showProblem } from './actions.js';
import { h, table, panel, nodeLink, countdown, fmtTime, ago, badge } from './dom.js';
import { STATUSES, listHash } from './nodes.js';
import { limitsTable, budgetsTable, queueFlow } from './flow.js';

// Internal identity nodes (the far end of assigned edges) are not work: their
// events stay out of the recent list unless the operator asks for them.
const isIdentity = (id) => id.startsWith('identity:');

export function overview(main, recent) {
  const leases = panel('leases', 'Live leases');
  const queues = panel('queues', 'Queues');
  const limits = panel('limits', 'Limits');
  const budgets = panel('budgets', 'Budgets');
  const workers = panel('workers', 'Workers');
  const schedules = panel('schedules', 'Schedules');
  const events = panel('events', 'Recent events');
  let showIdentity = false;
  const identityToggle = h('label', { class: 'toggle' }, h('input', {
    type: 'checkbox', id: 'show-identity',
    onchange: (e) => { showIdentity = e.target.checked; renderEvents(); },
  }), ' identity nodes');
  main.replaceChildren(h('div', { class: 'grid' },
    h('div', { class: 'col' }, leases, queues, limits, budgets, workers, schedules),
    h('div', { class: 'col side' }, events)));

  let pending = null;
  let alive = true; // until stop: a page left behind makes no request
  let drawing = null;
  const opened = new Set(); // schedules whose next fires are shown
  const refresh = async () => {
    if (!alive) return;
    const loads = [
      [leases, () => api('GET', '/v1/nodes?status=running&limit=1000').then(renderLeases)],
      [queues, () => api('GET', '/v1/queues?limit=1000').then(renderQueues)],
      [limits, () => api('GET', '/v1/limits?limit=1000').then((l) => [h('div', { class: 'scroll' }, limitsTable(l)), more(l)])],
      [budgets, () => api('GET', '/v1/budgets?limit=1000').then((b) => [h('div', { class: 'scroll' }, budgetsTable(b)), more(b)])],
      [workers, () => api('GET', '/v1/workers?limit=1000').then(renderWorkers)],
      [schedules, () => api('GET', '/v1/schedules?limit=1000').then(renderSchedules)],
    ];
    await Promise.all(loads.map(async ([p, load]) => {
      try {
        fill(p, await load());
      } catch (err) {
        fill(p, h('p', { class: 'error' }, `${err.status || ''} ${err.message}`));
      }
    }));
    renderEvents();
  };

  // The running nodes, each with its lease: the rows name the node's title
  // and queue, not only its id.
  function renderLeases(list) {
    const rows = list.items.filter((n) => n.lease).map((n) => {
      const l = n.lease;
      return h('tr', { dataset: { node: n.id } },
        h('td', {}, nodeLink(n.id)),
        h('td', { class: 'title' }, n.title || h('em', { class: 'dim' }, 'untitled')),
        h('td', {}, n.queue ?? '—'),
        h('td', {}, l.by),
        h('td', { class: 'mono' }, l.session ?? '—'),
        h('td', { class: 'num fence' }, String(l.fence)),
        h('td', { class: 'num' }, countdown(l.expires)),
        h('td', {}, button('Release', `Release ${n.id}`, () => api('POST', `/v1/nodes/${enc(n.id)}/release`,
          { reason: 'released from the dashboard', fence: l.fence }), refresh,
        { confirmText: `Release ${l.by}'s lease on ${n.id}?`, kind: 'warn' })));
    });
    return [h('div', { class: 'scroll' }, table(['Node', 'Title', 'Queue', 'Holder', 'Session', 'Fence', 'Expires in', ''], rows, 'Nothing is running.')), more(list)];
  }

  function renderQueues(list) {
    const rows = list.items.map((q) => h('tr', { dataset: { queue: q.queue } },
      h('td', {}, h('a', { href: listHash({ queue: q.queue }) }, q.queue)),
      h('td', {}, q.paused ? badge('paused') : badge('active')),
      h('td', { class: 'num' }, String(q.ready)),
      ...STATUSES.map((st) => h('td', { class: `num ${q.counts[st] ? '' : 'zero'}` },
        q.counts[st] ? h('a', { href: listHash({ queue: q.queue, status: st }), title: `${st} nodes of ${q.queue}` }, String(q.counts[st])) : '0')),
      h('td', { class: 'num' }, q.max_running ? String(q.max_running) : '—'),
      h('td', { class: 'flow' }, queueFlow(q)),
      h('td', {}, q.paused
        ? button('Resume', `Resume ${q.queue}`, () => api('POST', `/v1/queues/${enc(q.queue)}/resume`), refresh, { kind: 'resume' })
        : button('Pause', `Pause ${q.queue}`, () => api('POST', `/v1/queues/${enc(q.queue)}/pause`), refresh, { kind: 'pause' }))));
    return [h('div', { class: 'scroll' }, table(['Queue', 'State', 'Ready', ...STATUSES, 'Max running', 'Flow control', ''], rows, 'No queues yet.')), more(list)];
  }

  function renderWorkers(list) {
    const now = serverNow();
    const rows = list.items.map((w) => h('tr', {},
      h('td', {}, w.by),
      h('td', { class: 'mono' }, w.worker),
      h('td', {}, badge(w.state)),
      h('td', {}, w.node ? nodeLink(w.node) : '—'),
      h('td', { title: fmtTime(w.last_seen_at) }, ago(w.last_seen_at, now))));
    return [table(['Identity', 'Worker', 'Status', 'Node', 'Last seen'], rows, 'No worker has sent a heartbeat.'), more(list)];
  }

  function renderSchedules(list) {
    const rows = list.items.map((sc) => {
      const next = h('td', {}, sc.next_fire_at ? [fmtTime(sc.next_fire_at), ' (in ', countdown(Date.parse(sc.next_fire_at), 'soft'), ')'] : '—');
      const detail = h('tr', { class: 'detail', hidden: true }, h('td', { colspan: 6 }));
      const show = h('button', { type: 'button', class: 'link' }, 'next fires');
      const load = async () => {
        try {
          const full = await api('GET', `/v1/schedules/${enc(sc.id)}`);
          detail.firstChild.replaceChildren(full.next_fires.length
            ? h('ol', {}, full.next_fires.map((f) => h('li', {}, fmtTime(f))))
            : 'No fire ahead.');
          detail.hidden = false;
          opened.add(sc.id);
        } catch (err) {
          opened.delete(sc.id);
          showProblem(err);
        }
      };
      show.addEventListener('click', () => {
        if (detail.hidden) {
          // Opened from the click on: a redraw while the fires load shows
          // them in the new row.
          opened.add(sc.id);
          return load();
        }
        detail.hidden = true;
        opened.delete(sc.id);
      });
      if (opened.has(sc.id)) load();
      const last = h('td', { class: 'last-run' }, sc.last_run_seq ? '…' : '—');
      if (sc.last_run_seq) lastRun(sc.id, last);
      const at = `/v1/schedules/${enc(sc.id)}`;
      return [h('tr', { dataset: { schedule: sc.id } },
        h('td', {}, sc.id),
        h('td', { class: 'mono' }, sc.cron ?? `at ${fmtTime(sc.at)}`),
        h('td', {}, sc.timezone),
        h('td', {}, sc.enabled ? badge('enabled', 'active') : badge('paused')),
        next,
        last,
        h('td', { class: 'buttons' },
          sc.enabled
            ? button('Pause', `Pause schedule ${sc.id}`, () => api('POST', `${at}/pause`, {}), refresh, { kind: 'pause' })
            : button('Resume', `Resume schedule ${sc.id}`, () => api('POST', `${at}/resume`, {}), refresh, { kind: 'resume' }),
          button('Trigger', `Trigger schedule ${sc.id}`, () => api('POST', `${at}/trigger`, {}), refresh,
            { confirmText: `Run schedule ${sc.id} now?` }),
          show)), detail];
    });
    return [h('div', { class: 'scroll' }, table(['Schedule', 'When', 'Time zone', 'State', 'Next fire', 'Last run', ''], rows.flat(), 'No schedules.')), more(list)];
  }

  // lastRun fills cell with the outcome of the schedule's newest run.
  async function lastRun(id, cell) {
    try {
      const runs = await api('GET', `/v1/schedules/${enc(id)}/runs?limit=1`);
      const r = runs.items[0];
      cell.replaceChildren(r ? h('span', { title: r.error ?? '' }, badge(r.status), ' ', r.node_id ? nodeLink(r.node_id) : '', ' ', h('span', { class: 'dim' }, ago(r.fired_at, serverNow()))) : '—');
    } catch (err) {
      cell.replaceChildren(h('span', { class: 'error' }, `${err.status || ''}`));
    }
  }

  function renderEvents() {
    const shown = showIdentity ? recent : recent.filter((ev) => !isIdentity(ev.node_id));
    const rows = shown.map((ev) => h('li', { class: `ev ${ev.type}` },
      h('span', { class: 'seq' }, `#${ev.seq}`),
      h('span', { class: 'type' }, ev.type),
      nodeLink(ev.node_id),
      h('span', { class: 'by' }, ev.by),
      h('time', { title: ev.at }, new Date(ev.at).toLocaleTimeString(undefined, { hour12: false }))));
    fill(events, identityToggle, rows.length ? h('ol', { class: 'events' }, rows) : h('p', { class: 'empty' }, 'Waiting for events…'));
  }

  return {
    refresh,
    stop() {
      alive = false;
      clearTimeout(pending);
    },
    onEvent() {
      drawing ??= setTimeout(() => {
        drawing = null;
        renderEvents();
      }, 50);
      // Many events come at once: refresh the tables once they settle.
      clearTimeout(pending);
      pending = setTimeout(refresh, 300);
    },
  };
}

function fill(p, ...content) {
  p.replaceChildren(p.firstChild, ...content.flat().filter((c) => c !== null));
}

function more(list) {
  return list.next_cursor ? h('p', { class: 'empty' }, 'Showing the first page only.') : null;
}
