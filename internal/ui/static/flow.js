// Flow control at a glance: the tenant's limits on concurrency keys (running
// against the limit, start rates, throttled claims), its usage budgets
// (spent against the limit in the current window) and each queue's own
// flow settings.

import { h, table, fmtTime, countdown } from './dom.js';

// meter is "used / of" with a bar filled to the share, red when full. The
// width is set through the CSSOM: the page's CSP refuses style attributes.
function meter(used, of) {
  const share = of > 0 ? Math.min(used / of, 1) : 0;
  const fill = h('span', { class: 'fill' });
  fill.style.width = `${Math.round(share * 100)}%`;
  return h('span', { class: `meter${share >= 1 ? ' full' : ''}`, title: `${used} of ${of}` },
    h('span', { class: 'bar' }, fill),
    h('span', { class: 'num' }, `${fmtNumber(used)} / ${fmtNumber(of)}`));
}

const fmtNumber = (n) => (Number.isInteger(n) ? String(n) : n.toFixed(2));

export const fmtRate = (r) => (r ? `${fmtNumber(r.per_second)}/s, burst ${r.burst}` : '—');

// limitsTable shows GET /v1/limits: a row per key or prefix.
export function limitsTable(list) {
  const rows = list.items.map((l) => h('tr', { dataset: { key: l.key } },
    h('td', { class: 'mono' }, l.key),
    h('td', { class: 'running' }, l.max_running ? meter(l.running ?? 0, l.max_running) : String(l.running ?? 0)),
    h('td', { class: 'rate' }, fmtRate(l.rate)),
    h('td', { class: 'num throttled' }, String(l.throttled ?? 0))));
  return table(['Key', 'Running / limit', 'Start rate', 'Throttled claims'], rows, 'No limits: claims are held back by nothing but each queue\'s own settings.');
}

// budgetsTable shows GET /v1/budgets: a row per key.
export function budgetsTable(list) {
  const rows = list.items.map((b) => h('tr', { dataset: { budget: b.key } },
    h('td', { class: 'mono' }, b.key),
    h('td', {}, b.usage),
    h('td', { class: 'spent' }, meter(b.spent, b.limit)),
    h('td', { title: `${fmtTime(b.window_start)} – ${fmtTime(b.window_end)}` }, countdown(Date.parse(b.window_end), 'soft')),
    h('td', {}, b.exhausted ? h('span', { class: 'badge exhausted' }, 'exhausted') : h('span', { class: 'badge active' }, 'open'))));
  return table(['Key', 'Usage', 'Spent / limit', 'Window rolls over in', 'State'], rows, 'No budgets.');
}

// queueFlow sums up a queue's own flow settings for its row.
export function queueFlow(q) {
  const parts = [];
  if (q.max_running_per_key) parts.push(`${q.max_running_per_key} per key`);
  if (q.fair) parts.push('fair');
  if (q.rate) parts.push(fmtRate(q.rate));
  if (q.age_priority_every_ms) parts.push(`ages every ${Math.round(q.age_priority_every_ms / 1000)}s`);
  return parts.length ? parts.join(' · ') : '—';
}
