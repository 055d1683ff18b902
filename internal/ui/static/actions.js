// Operator actions and how their refusals are shown.

import { Problem } from './api.js';
import { h } from './dom.js';

const box = () => document.getElementById('problem');

// showProblem puts a refused request's problem where the operator sees it
// (null hides it).
export function showProblem(err, what) {
  const el = box();
  el.replaceChildren();
  el.hidden = !err;
  if (!err) return;
  const d = err instanceof Problem ? err.doc : {};
  el.append(
    what ? `${what}: ` : null,
    h('strong', {}, err instanceof Problem ? `${err.status} ${d.code || d.title || ''}` : 'Error'),
    ' ', err.message,
    h('button', { class: 'close', title: 'Dismiss', onclick: () => showProblem(null) }, '×'),
  );
}

// act runs an operator action, then refresh; a refusal shows the problem's
// detail. The button is disabled while the request is out.
export async function act(button, what, fn, refresh) {
  button.disabled = true;
  try {
    await fn();
    showProblem(null);
  } catch (err) {
    showProblem(err, what);
  } finally {
    button.disabled = false;
  }
  refresh();
}

// button makes an action button for the action `what` (as the operator
// reads it: "Pause builds"); confirmText, when given, is asked first.
export function button(label, what, fn, refresh, { confirmText, kind } = {}) {
  const b = h('button', { class: kind || '', type: 'button', dataset: { action: label } }, label);
  b.addEventListener('click', () => {
    if (confirmText && !window.confirm(confirmText)) return;
    act(b, what, fn, refresh);
  });
  return b;
}
