// graph draws a subgraph around the node `center`: nodes in columns by
// their distance from it, those reached along an edge's direction to the
// right, against it to the left; retired edges dashed.

import { h, s } from './dom.js';

const W = 170, H = 38, GX = 96, GY = 18;

export function graph(g, center) {
  if (g.nodes.length === 0) return h('p', { class: 'empty' }, 'No node.');
  const col = new Map([[center, 0]]);
  const queue = [center];
  while (queue.length) {
    const at = queue.shift();
    const c = col.get(at);
    for (const e of g.edges) {
      const [other, dir] = e.from === at ? [e.to, 1] : e.to === at ? [e.from, -1] : [null, 0];
      if (other === null || col.has(other)) continue;
      col.set(other, c === 0 ? dir : c + Math.sign(c));
      queue.push(other);
    }
  }
  for (const n of g.nodes) if (!col.has(n.id)) col.set(n.id, 0);

  const byCol = new Map();
  for (const n of g.nodes) {
    const c = col.get(n.id);
    if (!byCol.has(c)) byCol.set(c, []);
    byCol.get(c).push(n);
  }
  const cols = [...byCol.keys()].sort((a, b) => a - b);
  const tallest = Math.max(...[...byCol.values()].map((ns) => ns.length));
  const height = tallest * (H + GY) + GY;
  const pos = new Map();
  cols.forEach((c, i) => {
    const ns = byCol.get(c).sort((a, b) => a.id.localeCompare(b.id));
    const top = (height - ns.length * (H + GY) + GY) / 2;
    ns.forEach((n, j) => pos.set(n.id, { x: GX / 2 + i * (W + GX), y: top + j * (H + GY) }));
  });
  const width = cols.length * (W + GX);

  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': `The graph around ${center}` },
    s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))));
  for (const e of g.edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const [x1, x2] = a.x < b.x ? [a.x + W, b.x] : a.x > b.x ? [a.x, b.x + W] : [a.x + W / 2, b.x + W / 2];
    const [y1, y2] = a.x === b.x ? (a.y < b.y ? [a.y + H, b.y] : [a.y, b.y + H]) : [a.y + H / 2, b.y + H / 2];
    svg.append(s('line', { x1, y1, x2, y2, class: `edge ${e.type}${e.retired_at ? ' retired' : ''}`, 'marker-end': 'url(#arrow)' }),
      s('text', { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, class: 'edge-label' }, e.type));
  }
  for (const n of g.nodes) {
    const p = pos.get(n.id);
    const label = n.id.length > 22 ? `${n.id.slice(0, 21)}…` : n.id;
    const a = s('a', { href: `#/node/${encodeURIComponent(n.id)}` },
      s('title', {}, `${n.id} (${n.type}, ${n.status})`),
      s('rect', { x: p.x, y: p.y, width: W, height: H, rx: 6, class: `box ${n.status}${n.id === center ? ' center' : ''}` }),
      s('text', { x: p.x + 10, y: p.y + 16, class: 'node-id' }, label),
      s('text', { x: p.x + 10, y: p.y + 30, class: 'node-meta' }, `${n.type} · ${n.status}`));
    svg.append(a);
  }
  return h('div', { class: 'graph' }, svg);
}
