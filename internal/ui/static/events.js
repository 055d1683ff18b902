// The tenant's live event stream, read with fetch() and a streaming body
// reader: EventSource cannot send an Authorization header, and a token in
// the URL would end up in access logs and history.

import { authHeaders, readProblem } from './api.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// streamEvents calls onEvent with each event as it commits and onState with
// 'connecting', 'live' or the problem that ended a try; it reconnects from
// the last seq it saw until signal aborts. A 401 ends it (onAuth).
export async function streamEvents({ onEvent, onState, onAuth, signal }) {
  let after = 0;
  while (!signal.aborted) {
    try {
      onState('connecting');
      const res = await fetch(`/v1/events?after=${after}&limit=1000`, {
        headers: authHeaders({ Accept: 'text/event-stream' }),
        cache: 'no-store',
        signal,
      });
      if (!res.ok) {
        const p = await readProblem(res);
        if (p.status === 401) return onAuth(p);
        // Behind the retention horizon: carry on from the oldest kept.
        if (p.status === 410 && p.doc.oldest_seq) after = p.doc.oldest_seq - 1;
        throw p;
      }
      onState('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replaceAll('\r\n', '\n');
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const data = buf.slice(0, i).split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).replace(/^ /, ''))
            .join('\n');
          buf = buf.slice(i + 2);
          if (!data) continue; // a keep-alive comment
          const ev = JSON.parse(data);
          after = ev.seq;
          onEvent(ev);
        }
      }
      onState(new Error('the stream ended'));
    } catch (err) {
      if (signal.aborted) return;
      onState(err);
    }
    await sleep(2000);
  }
}
