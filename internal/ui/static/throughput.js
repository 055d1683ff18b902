// Throughput per queue (#/throughput): created, completed and failed per
// minute over the last hour, and the claims flow control held back, from what the server counts as writes commit
// (GET /v1/queues/{queue}/throughput), one chart a queue.

import { api, enc } from './api.js';
import { h, s, panel } from './dom.js';
import { listHash } from './nodes.js';

const SERIES = [['created', 'Created'], ['completed', 'Completed'], ['failed', 'Failed'], ['throttled', 'Throttled']];
const W = 600;
const H = 140;
const PAD = { left: 36, right: 8, top: 8, bottom: 20 };

export function throughputPage(main) {
  const body = panel('throughput', 'Throughput, last hour (per minute)');
  main.replaceChildren(h('p', { class: 'crumbs' }, h('a', { href: '#/' }, '← Overview')), h('div', { class: 'col' }, body));
  let alive = true;
  let pending = null;

  const refresh = async () => {
    if (!alive) return;
    try {
      const queues = await api('GET', '/v1/queues');
      const charts = await Promise.all(queues.items.map(async (q) => {
        const t = await api('GET', `/v1/queues/${enc(q.queue)}/throughput`);
        return chart(q.queue, t);
      }));
      if (!alive) return;
      body.replaceChildren(body.firstChild, legend(),
        charts.length ? h('div', { class: 'charts' }, charts) : h('p', { class: 'empty' }, 'No queues yet.'));
    } catch (err) {
      body.replaceChildren(body.firstChild, h('p', { class: 'error' }, `${err.status || ''} ${err.message}`));
    }
  };

  return {
    refresh,
    stop() {
      alive = false;
      clearTimeout(pending);
    },
    onEvent() {
      clearTimeout(pending);
      pending = setTimeout(refresh, 1000);
    },
  };
}

function legend() {
  return h('p', { class: 'legend' }, SERIES.map(([k, label]) => h('span', { class: `key ${k}` }, label)));
}

// chart draws one queue's hour: a line per series over 60 minutes, and the
// hour's totals beside its name.
function chart(queue, t) {
  const totals = Object.fromEntries(SERIES.map(([k]) => [k, t.minutes.reduce((n, m) => n + m[k], 0)]));
  const top = Math.max(1, ...t.minutes.flatMap((m) => SERIES.map(([k]) => m[k])));
  const x = (i) => PAD.left + (i * (W - PAD.left - PAD.right)) / (t.minutes.length - 1);
  const y = (v) => H - PAD.bottom - (v * (H - PAD.top - PAD.bottom)) / top;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': `${queue}: last hour` },
    s('line', { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: 'axis' }),
    s('text', { x: PAD.left - 4, y: y(top) + 4, class: 'tick', 'text-anchor': 'end' }, String(top)),
    s('text', { x: PAD.left - 4, y: y(0), class: 'tick', 'text-anchor': 'end' }, '0'),
    s('text', { x: PAD.left, y: H - 4, class: 'tick' }, '−60 min'),
    s('text', { x: W - PAD.right, y: H - 4, class: 'tick', 'text-anchor': 'end' }, 'now'),
    ...SERIES.map(([k]) => s('polyline', {
      class: `series ${k}`,
      points: t.minutes.map((m, i) => `${x(i).toFixed(1)},${y(m[k]).toFixed(1)}`).join(' '),
    })));
  return h('figure', { class: 'queue-chart', dataset: { queue } },
    h('figcaption', {}, h('a', { href: listHash({ queue }) }, queue),
      t.shared ? h('span', { class: 'dim', title: 'past the cardinality cap: counted with other queues' }, ' (shared)') : null,
      h('span', { class: 'totals' }, SERIES.map(([k, label]) => h('span', { class: `key ${k}`, dataset: { total: k } }, `${totals[k]} ${label.toLowerCase()}`)))),
    svg);
}
