// Type-checked by `make test` (scripts/test.sh: tsc -p web/tsconfig.json): every part of the API in
// lifeline.d.ts used as an embedder would, and misuse the declarations must refuse. Never run.

// Options are set before the injected script runs: in an inline script in the head.
globalThis.lifelineOptions = { recovery: { slowAfterMs: 2000, deadlineMs: 10000, initialDelayMs: 250, maxDelayMs: 8000, factor: 2, jitter: 0.5, stableAfterMs: 5000 } };
window.lifelineOptions = { endpoint: '/_lifeline/events', upgradeAfterMs: 30000 };
globalThis.lifelineOptions = undefined;

// A stream's own types: what the app publishes, and the baseline it sets.
interface Tick { n: number; at: number }
interface Counter { n: number }

function start(): void {
  const s: Lifeline.Status = lifeline.state();
  const states: Lifeline.State[] = [s.state];
  const kind: Lifeline.Kind = s.kind;
  if (s.state === 'unauthorized' && s.reason) console.log('signed out:', s.reason);
  const facts: [boolean, number, number, number, string, number, number | undefined] =
    [s.slow, s.attempt, s.failures, s.nextAttempt, s.error, s.retryAfter, s.at];
  console.log(states, kind, facts);
  const carrier: Lifeline.Carrier = s.carrier;
  if (s.blocked && carrier !== 'websocket') console.log('this network does not carry WebSockets; on', carrier);

  const remove: Lifeline.Remove = lifeline.onState((st) => {
    if (st.state === 'reconnecting' || st.state === 'unauthorized') {
      console.log('next attempt in', st.nextAttempt - Date.now(), 'ms');
    }
    if (st.state === 'connecting' && st.slow) console.log('the Host is slow');
    if (st.kind === 'busy') console.log('asked to wait', st.retryAfter, 'ms');
  });
  remove();
  remove(); // a second call does nothing

  const unsubscribe = lifeline.subscribe<Tick, Counter>('ticks', (m) => {
    if ('error' in m) {
      const end: Lifeline.End = m;
      console.log(end.stream, end.denied ? 'denied: ' + end.reason : 'ended: ' + end.error);
      return;
    }
    if (m.reset) {
      const reset: Lifeline.Reset<Counter> = m;
      console.log('start over at', reset.seq, 'in', reset.epoch, 'from', reset.baseline?.n ?? 0);
      return;
    }
    const ev: Lifeline.Event<Tick> = m;
    console.log(ev.stream, ev.seq, ev.data.n + 1, new Date(ev.data.at));
  });
  unsubscribe();

  // Without type arguments the data is unknown: it must be checked before use.
  lifeline.subscribe('user.alice', (m) => {
    if (!('error' in m) && !m.reset && typeof m.data === 'object' && m.data !== null) console.log(m.data);
  });

  // Who is on a stream, with the app's metadata typed.
  interface Profile { name: string }
  const leave: Lifeline.Remove = lifeline.presence<Profile>('doc.42', (p) => {
    if ('error' in p) {
      console.log('presence ended:', p.denied ? p.reason : p.error);
      return;
    }
    if (p.reason !== '') console.log('no presence here:', p.reason);
    const names: string[] = p.members.map((m: Lifeline.Member<Profile>) => (m.meta ? m.meta.name : m.id) + (m.count > 1 ? ' ×' + m.count : ''));
    console.log(names.join(', '), p.beyond > 0 ? 'and ' + p.beyond + ' more' : '', p.total, p.limit);
    for (const m of p.joined) console.log(m.id, 'joined');
    for (const m of p.updated) console.log(m.id, 'now has', m.count, 'sessions');
    for (const id of p.left) console.log(id, 'left');
  });
  leave();
  // @ts-expect-error a presence handler is told Presence or End, not events
  lifeline.presence('doc.42', (p: Lifeline.Event) => console.log(p));
  // A token for the renewal of a credential that expires, from the app's own sign-in code.
  const stopRenewing: Lifeline.Remove = lifeline.onRenew(() => fetch('/token').then((r) => r.text()));
  stopRenewing();
  lifeline.onRenew(() => 'a-token-at-hand');

  lifeline.reconnectNow();
  lifeline.stop();
  lifeline.start();
  window.lifeline.reconnectNow();

  // A keyed call: sent again after an outage, run once by the Host; its reply typed.
  interface Saved { id: string; version: number }
  lifeline
    .call<Saved>('doc.save', { id: 'd1', text: 'hi' }, { key: 'd1:v7', timeoutMs: 10000 })
    .then((saved) => console.log(saved.id, saved.version))
    .catch((e: Lifeline.CallError) => {
      const kinds: Lifeline.CallErrorKind[] = [e.kind];
      if (e.kind === 'busy') console.log('try again in', e.retryAfter, 'ms');
      else if (e.kind === 'identity-changed') console.log('made as the user before: not sent as this one');
      else if (e.kind === 'not-run') console.log('it never ran: safe to make again');
      else if (!e.sent) console.log('never sent: safe to make again', kinds);
      else console.log('sent, outcome unknown:', e.message, e.code);
    });
  void lifeline.call('chat.post');
}

if (globalThis.lifeline) start();
else window.addEventListener('lifeline:ready', start, { once: true });

window.addEventListener('lifeline:ready', (e) => {
  const nothing: null = e.detail;
  console.log(nothing);
});
window.addEventListener('lifeline:state', (e) => {
  const st: Lifeline.Status = e.detail;
  const shown: Lifeline.IndicatorState = st.state === 'connecting' && st.slow ? 'slow' : st.state === 'idle' ? 'connecting' : st.state;
  document.getElementById('connection-status')?.setAttribute('data-state', shown);
});

// ---- misuse the declarations must refuse

// @ts-expect-error a handler must be a function
lifeline.onState(42);
// @ts-expect-error a handler must be a function
lifeline.subscribe('ticks', 'show');
// @ts-expect-error a stream name is a string, not a number
lifeline.subscribe(42, () => {});
// @ts-expect-error subscribe needs a handler
lifeline.subscribe('ticks');
// @ts-expect-error a call's name is a string
void lifeline.call(7, {});
// @ts-expect-error a call's key is a string
void lifeline.call('x', {}, { key: 1 });
// @ts-expect-error there is no such option
void lifeline.call('x', {}, { retries: 3 });
// @ts-expect-error there is no such state
if (lifeline.state().state === 'connnected') console.log('never');
// @ts-expect-error the status is read-only
lifeline.state().state = 'connected';
// @ts-expect-error an unknown option (the resolver would refuse it too)
globalThis.lifelineOptions = { modes: 'shared' };
// @ts-expect-error a mode is shared or in-page
globalThis.lifelineOptions = { mode: 'worker' };
globalThis.lifelineOptions = { mode: 'in-page' };
// @ts-expect-error timings are numbers of milliseconds
globalThis.lifelineOptions = { recovery: { deadlineMs: '15s' } };
// @ts-expect-error an unknown recovery field
globalThis.lifelineOptions = { recovery: { deadline: 15000 } };
window.addEventListener('lifeline:state', (e) => {
  // @ts-expect-error the detail is a status, which has no such field
  console.log(e.detail.connected);
});
lifeline.subscribe<Tick>('ticks', (m) => {
  // @ts-expect-error an end carries no data: narrow with 'error' in m first
  console.log(m.data);
  if (!('error' in m) && !m.reset) {
    // @ts-expect-error the data is a Tick
    console.log(m.data.text);
  }
});
// @ts-expect-error the API has no such call
lifeline.reconnect();
// @ts-expect-error a renewer gives a token, a string
lifeline.onRenew(() => Promise.resolve(42));
