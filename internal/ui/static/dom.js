import { serverNow } from './api.js';

// h builds an element: h('td', {class: 'x'}, 'text', child). Text is always
// set as text, never parsed as HTML.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  el.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

// table renders rows under a header, or a line saying there are none.
export function table(head, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  return h('table', {}, h('thead', {}, h('tr', {}, head.map((c) => h('th', {}, c)))), h('tbody', {}, rows));
}

export function panel(id, title, ...body) {
  return h('section', { id, class: 'panel' }, h('h2', {}, title), ...body);
}

export const nodeLink = (id) => h('a', { href: `#/node/${encodeURIComponent(id)}` }, id);

// countdown is a span showing the time left until expires (Unix ms, on the
// server's clock), which the page's clock tick keeps moving.
export function countdown(expires, kind = '') {
  const left = expires - serverNow();
  return h('span', { class: `countdown ${kind}${left < 10000 ? ' low' : ''}`, dataset: { expires: String(expires) } }, fmtLeft(left));
}

export function fmtLeft(ms) {
  if (ms <= 0) return 'expired';
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function ago(iso, now) {
  const ms = now - Date.parse(iso);
  if (Math.abs(ms) < 1000) return 'now';
  return ms < 0 ? `in ${fmtLeft(-ms)}` : `${fmtLeft(ms)} ago`;
}

export const badge = (text, kind = text) => h('span', { class: `badge ${kind}` }, text);
