// The tenant at a glance: live leases, queues, workers, schedules and the
// newest events.

import { api, enc, serverNow } from './api.js';
import { button, showProblem } from './actions.js';
import { h, table, panel, nodeLink, countdown, fmtTime, ago, badge } from './dom.js';

const STATUSES = ['queued', 'running', 'open', 'done', 'failed', 'dead', 'cancelled'];

export function overview(main, recent) {
  const leases = panel('leases', 'Live leases');
  const queues = panel('queues', 'Queues');
  const workers = panel('workers', 'Workers');
  const schedules = panel('schedules', 'Schedules');
  const events = panel('events', 'Recent events');
  main.replaceChildren(h('div', { class: 'grid' },
    h('div', { class: 'col' }, leases, queues, workers, schedules),
    h('div', { class: 'col side' }, events)));

  let pending = null;
  let alive = true; // until stop: a page left behind makes no request
  let drawing = null;
  const opened = new Set(); // schedules whose next fires are shown
  const refresh = async () => {
    if (!alive) return;
    const loads = [
      [leases, () => api('GET', '/v1/leases?limit=1000').then(renderLeases)],
      [queues, () => api('GET', '/v1/queues').then(renderQueues)],
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

  function renderLeases(list) {
    const rows = list.items.map((l) => h('tr', { dataset: { node: l.node_id } },
      h('td', {}, nodeLink(l.node_id)),
      h('td', {}, l.by),
      h('td', { class: 'mono' }, l.session ?? '—'),
      h('td', { class: 'num fence' }, String(l.fence)),
      h('td', { class: 'num' }, countdown(l.expires)),
      h('td', {}, button('Release', `Release ${l.node_id}`, () => api('POST', `/v1/nodes/${enc(l.node_id)}/release`,
        { reason: 'released from the dashboard', fence: l.fence }), refresh,
      { confirmText: `Release ${l.by}'s lease on ${l.node_id}?`, kind: 'warn' }))));
    return [table(['Node', 'Holder', 'Session', 'Fence', 'Expires in', ''], rows, 'Nothing is running.'), more(list)];
  }

  function renderQueues(list) {
    const rows = list.items.map((q) => h('tr', { dataset: { queue: q.queue } },
      h('td', {}, q.queue),
      h('td', {}, q.paused ? badge('paused') : badge('active')),
      h('td', { class: 'num' }, String(q.ready)),
      ...STATUSES.map((st) => h('td', { class: `num ${q.counts[st] ? '' : 'zero'}` }, String(q.counts[st] ?? 0))),
      h('td', { class: 'num' }, q.max_running ? String(q.max_running) : '—'),
      h('td', {}, q.paused
        ? button('Resume', `Resume ${q.queue}`, () => api('POST', `/v1/queues/${enc(q.queue)}/resume`), refresh, { kind: 'resume' })
        : button('Pause', `Pause ${q.queue}`, () => api('POST', `/v1/queues/${enc(q.queue)}/pause`), refresh, { kind: 'pause' }))));
    return table(['Queue', 'State', 'Ready', ...STATUSES, 'Max running', ''], rows, 'No queues yet.');
  }

  function renderWorkers(list) {
    const now = serverNow();
    const rows = list.items.map((w) => h('tr', {},
      h('td', {}, w.by),
      h('td', { class: 'mono' }, w.worker),
      h('td', {}, w.stale ? badge('stale') : badge(w.status)),
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
      return [h('tr', {},
        h('td', {}, sc.id),
        h('td', { class: 'mono' }, sc.cron ?? `at ${fmtTime(sc.at)}`),
        h('td', {}, sc.timezone),
        h('td', {}, sc.enabled ? badge('enabled', 'active') : badge('paused')),
        next,
        h('td', {}, show)), detail];
    });
    return [table(['Schedule', 'When', 'Time zone', 'State', 'Next fire', ''], rows.flat(), 'No schedules.'), more(list)];
  }

  function renderEvents() {
    const rows = recent.map((ev) => h('li', { class: `ev ${ev.type}` },
      h('span', { class: 'seq' }, `#${ev.seq}`),
      h('span', { class: 'type' }, ev.type),
      nodeLink(ev.node_id),
      h('span', { class: 'by' }, ev.by),
      h('time', { title: ev.at }, new Date(ev.at).toLocaleTimeString(undefined, { hour12: false }))));
    fill(events, rows.length ? h('ol', { class: 'events' }, rows) : h('p', { class: 'empty' }, 'Waiting for events…'));
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

function fill(p, content) {
  p.replaceChildren(p.firstChild, ...[content].flat().filter((c) => c !== null));
}

function more(list) {
  return list.next_cursor ? h('p', { class: 'empty' }, 'Showing the first page only.') : null;
}
