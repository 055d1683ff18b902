// The node lists (#/nodes?status=dead&queue=imports): filters, a search on id
// and title, paging with the server's cursor, and bulk actions on everything
// the filters select (POST /v1/nodes/bulk), each confirmed with the count it
// will touch.

import { api, serverNow } from './api.js';
import { act, showProblem } from './actions.js';
import { h, table, panel, nodeLink, fmtTime, ago, badge } from './dom.js';

export const STATUSES = ['queued', 'running', 'open', 'done', 'failed', 'dead', 'cancelled', 'expired'];
const PAGE = 50;
// The filters, as the list's query parameters and the bulk's filter object.
const TEXT = ['queue', 'type', 'label', 'holder', 'q'];
const TIMES = ['created_after', 'updated_after'];

// listHash is the address of a list with these filters.
export function listHash(filters) {
  const qs = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
  return `#/nodes${qs.size ? `?${qs}` : ''}`;
}

export function nodesPage(main, params) {
  const filters = Object.fromEntries([...params].filter(([k, v]) => v && (k === 'status' || TEXT.includes(k) || TIMES.includes(k))));
  const form = filterForm(filters);
  const list = panel('list', 'Nodes');
  const bulk = h('div', { class: 'actions bulk' });
  main.replaceChildren(h('p', { class: 'crumbs' }, h('a', { href: '#/' }, '← Overview')),
    h('div', { class: 'col' }, form, list));

  let alive = true;
  let pending = null;
  const cursors = ['']; // the cursor of each page shown so far; the last is this page's
  let said = null; // what the last bulk action did, shown above the list until the next
  const refresh = async () => {
    if (!alive) return;
    const qs = new URLSearchParams({ ...filters, limit: String(PAGE) });
    const cursor = cursors[cursors.length - 1];
    if (cursor) qs.set('cursor', cursor);
    try {
      const page = await api('GET', `/v1/nodes?${qs}`);
      if (alive) render(page);
    } catch (err) {
      list.replaceChildren(list.firstChild, h('p', { class: 'error' }, `${err.status || ''} ${err.message}`));
    }
  };

  function render(page) {
    const now = serverNow();
    const errorCol = !filters.status || ['failed', 'dead'].includes(filters.status);
    const rows = page.items.map((n) => h('tr', { dataset: { node: n.id } },
      h('td', {}, nodeLink(n.id)),
      h('td', { class: 'title' }, n.title || h('em', { class: 'dim' }, 'untitled')),
      h('td', {}, n.type),
      h('td', {}, n.queue ?? '—'),
      h('td', {}, badge(n.status)),
      h('td', { class: 'num' }, `${n.attempts}/${n.max_attempts}`),
      errorCol ? h('td', { class: 'error-text' }, n.error ?? '') : null,
      h('td', { title: fmtTime(n.updated_at) }, ago(n.updated_at, now))));
    const head = ['Node', 'Title', 'Type', 'Queue', 'Status', 'Attempts', errorCol ? 'Last error' : null, 'Updated'].filter(Boolean);
    const pager = h('div', { class: 'pager' },
      cursors.length > 1 ? h('button', { type: 'button', class: 'link', onclick: () => { cursors.pop(); refresh(); } }, '← Previous page') : null,
      h('span', { class: 'dim' }, `page ${cursors.length}`),
      page.next_cursor ? h('button', { type: 'button', class: 'link', onclick: () => { cursors.push(page.next_cursor); refresh(); } }, 'Next page →') : null);
    // A page reads a bounded number of nodes: an empty one with a cursor
    // means none matched among those read, not none at all.
    const empty = page.next_cursor ? 'No match among the nodes this page read; the next page searches on.' : 'No node matches these filters.';
    list.replaceChildren(list.firstChild, bulk, said,
      h('div', { class: 'scroll' }, table(head, rows, empty)), pager);
    drawBulk(page.items.length > 0 || !!page.next_cursor);
  }

  // Bulk actions act on every node the filters select, not only this page.
  function drawBulk(any) {
    const acts = [
      ['Requeue', 'requeue', 'Requeue', ''],
      ['Cancel', 'cancel', 'Cancel', 'warn'],
      ['Delete', 'delete', 'Delete', 'warn'],
    ];
    bulk.replaceChildren(h('span', { class: 'dim' }, 'Every node these filters select:'),
      ...acts.map(([label, action, verb, kind]) => {
        const b = h('button', { type: 'button', class: kind, disabled: !any, dataset: { bulk: action } }, `${label} all`);
        b.addEventListener('click', () => bulkAction(b, action, verb));
        return b;
      }));
  }

  async function bulkAction(b, action, verb) {
    const body = { action, filter: bulkFilter(filters), reason: `${action} from the dashboard` };
    let count;
    try {
      count = await api('POST', '/v1/nodes/bulk', { ...body, dry_run: true });
    } catch (err) {
      return showProblem(err, `${verb} all`);
    }
    const more = count.truncated ? ` (the first ${count.matched}; more match)` : '';
    const ok = await confirmDialog(`${verb} ${count.matched} node${count.matched === 1 ? '' : 's'}${more}?`,
      action === 'delete' ? 'Deleted nodes are gone; their edges are kept as history. Running nodes are skipped.'
        : action === 'cancel' ? 'Each node is cancelled with its descendants and dependents; holders lose their leases.'
          : 'Failed, dead and cancelled nodes go back to their queue with attempts reset; others are skipped.', `${verb} ${count.matched}`);
    if (!ok) return;
    await act(b, `${verb} all`, async () => {
      // Exactly the nodes counted: none that arrived since the count.
      const res = await api('POST', '/v1/nodes/bulk', { ...body, ids: count.selected });
      note(res);
    }, () => { cursors.length = 1; refresh(); });
  }

  function note(res) {
    const msg = `${res.action}: ${res.affected.length} changed`
      + (res.skipped.length ? `, ${res.skipped.length} skipped (no longer matching)` : '')
      + (res.failed.length ? `, ${res.failed.length} refused (${res.failed[0].id}: ${res.failed[0].detail})` : '');
    said = h('p', { class: 'note', role: 'status' }, msg);
  }

  return {
    refresh,
    stop() {
      alive = false;
      clearTimeout(pending);
    },
    onEvent() {
      clearTimeout(pending);
      pending = setTimeout(refresh, 500);
    },
  };
}

// filterForm edits the filters; submitting it goes to the list they address.
function filterForm(filters) {
  const field = (name, label, input) => h('label', {}, h('span', {}, label), input);
  const text = (name, placeholder) => h('input', { name, value: filters[name] ?? '', placeholder, autocomplete: 'off' });
  const status = h('select', { name: 'status' }, h('option', { value: '' }, 'any'),
    STATUSES.map((st) => h('option', { value: st, selected: filters.status === st }, st)));
  const when = (name) => h('input', { name, type: 'datetime-local', step: '1', value: filters[name] ? toLocal(filters[name]) : '' });
  const form = h('form', { id: 'filters', class: 'panel filters' },
    field('q', 'Search', text('q', 'id or title')),
    field('status', 'Status', status),
    field('queue', 'Queue', text('queue', 'any')),
    field('type', 'Type', text('type', 'any')),
    field('label', 'Label', text('label', 'any')),
    field('holder', 'Holder', text('holder', 'any')),
    field('created_after', 'Created after', when('created_after')),
    field('updated_after', 'Updated after', when('updated_after')),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Apply'),
      h('a', { href: '#/nodes', class: 'button link' }, 'Clear')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = {};
    for (const [k, v] of new FormData(form)) {
      if (!v) continue;
      next[k] = TIMES.includes(k) ? new Date(v).toISOString() : String(v).trim();
    }
    location.hash = listHash(next);
  });
  return form;
}

// bulkFilter is the bulk request's filter object of the list's filters.
function bulkFilter(filters) {
  return Object.fromEntries(Object.entries(filters).filter(([, v]) => v));
}

// toLocal turns an RFC 3339 instant into a datetime-local input's value.
function toLocal(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// confirmDialog asks in a modal dialog (the page's, so a test can answer it)
// and resolves to the operator's answer.
export function confirmDialog(question, detail, yes) {
  return new Promise((resolve) => {
    const dlg = h('dialog', { id: 'confirm', class: 'panel' },
      h('h2', {}, question), h('p', {}, detail),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'warn', dataset: { answer: 'yes' }, onclick: () => done(true) }, yes),
        h('button', { type: 'button', dataset: { answer: 'no' }, onclick: () => done(false) }, 'Keep them')));
    const done = (answer) => {
      dlg.close();
      dlg.remove();
      resolve(answer);
    };
    dlg.addEventListener('cancel', () => done(false));
    document.body.append(dlg);
    dlg.showModal();
  });
}
