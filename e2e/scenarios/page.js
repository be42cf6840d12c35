// What the scenarios read of the demo page, through any engine's tab: its indicator, its
// status, the states it took and the ticks it received. Every wait is bounded.

// stateOf is the indicator's data-state.
function stateOf(tab) {
  return tab.evaluate(() => {
    const el = document.getElementById('connection-status');
    return el ? el.dataset.state : null;
  });
}

async function waitState(tab, state, timeout = 10_000) {
  try {
    await waitPage(tab, (s) => {
      const el = document.getElementById('connection-status');
      return !!el && el.dataset.state === s;
    }, state, { timeout, what: `data-state="${state}"` });
  } catch (e) {
    let last = null;
    try {
      last = await stateOf(tab);
    } catch {
      // between two documents: the wait's own error says enough
    }
    throw new Error(`${e.message} (the page shows ${JSON.stringify(last)})`);
  }
}

// waitPage waits for fn(arg) to be true in the page, and resolves with its value. The page
// checks every 10 ms, for up to a second per round trip: each round trip of a driver costs the
// browser, the driver and this process 5-10 ms of CPU (7-9 ms measured, bench machine, Chromium
// and WebKitGTK), so a wait that asked from here every 20 ms kept a third of a core busy for
// each tab that waited, and eight lanes of them took both cores from what they measured. A
// round trip that fails (the page navigating) is tried again; one that never answers (a frozen
// page) is not waited for past the timeout.
async function waitPage(tab, fn, arg, { timeout = 10_000, what = 'a page condition' } = {}) {
  const poll = polled(fn);
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    let timer;
    try {
      const v = await Promise.race([
        tab.evaluate(poll, [arg, Math.min(1000, left)]),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('the page did not answer')), left + 1000); }),
      ]);
      if (v) return v;
    } catch (e) {
      last = e;
      await new Promise((r) => setTimeout(r, 20));
    } finally {
      clearTimeout(timer);
    }
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? ': ' + last.message : ''}`);
}

// polled is fn as a function the page runs: it checks fn(arg) every 10 ms until it is true or
// ms have passed, and returns its last value. (Built here, from fn's source, because a driver
// sends the page a function's text: the page runs no code it was not sent, even under a CSP.)
const polls = new Map();
function polled(fn) {
  const src = String(fn);
  if (!polls.has(src)) {
    // eslint-disable-next-line no-new-func
    polls.set(src, new Function(`return async function pagePoll([arg, ms]) {
  const f = (${src});
  const end = Date.now() + ms;
  for (;;) {
    const v = await f(arg);
    if (v || Date.now() >= end) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
}`)());
  }
  return polls.get(src);
}

const status = (tab) => tab.evaluate(() => globalThis.lifeline.state());
const attr = (tab, selector, name) => tab.evaluate(([s, n]) => document.querySelector(s).getAttribute(n), [selector, name]);
const text = (tab, selector) => tab.evaluate((s) => document.querySelector(s).textContent, selector);

// recordStates keeps every data-state the indicator takes, from the first paint on.
function recordStates(tab) {
  return tab.addInitScript(() => {
    window.__states = [];
    const start = () => {
      const el = document.getElementById('connection-status');
      if (!el) return;
      const push = () => {
        const s = el.dataset.state;
        if (window.__states[window.__states.length - 1] !== s) window.__states.push(s);
      };
      push();
      new MutationObserver(push).observe(el, { attributes: true, attributeFilter: ['data-state'] });
    };
    document.addEventListener('DOMContentLoaded', start);
  });
}
const states = (tab) => tab.evaluate(() => window.__states.slice());

// recordStatuses keeps every lifeline:state the page is told, with when the controller changed.
function recordStatuses(tab) {
  return tab.addInitScript(() => {
    window.__statuses = [];
    window.addEventListener('lifeline:state', (e) => window.__statuses.push(e.detail));
  });
}
const statuses = (tab) => tab.evaluate(() => window.__statuses.slice());

// collectTicks subscribes to the ticks stream and keeps every delivery.
async function collectTicks(tab) {
  await waitPage(tab, () => !!(globalThis.lifeline && globalThis.lifeline.subscribe), undefined, { what: 'globalThis.lifeline' });
  await tab.evaluate(() => {
    window.__ticks = [];
    globalThis.lifeline.subscribe('ticks', (d) => window.__ticks.push(d.reset ? { reset: true, seq: d.seq, epoch: d.epoch } : { seq: d.seq, n: d.data.n }));
  });
}
const ticks = (tab) => tab.evaluate(() => window.__ticks.slice());
const events = async (tab) => (await ticks(tab)).filter((d) => !d.reset).length;

// inPage tells whether the page runs its own hub: the runner (Go's wasm_exec.js) is loaded in
// the page only then.
const inPage = (tab) => tab.evaluate(() => typeof globalThis.Go === 'function');

// collapse folds the runs of connecting/reconnecting of an outage into one 'retrying'.
function collapse(list) {
  const out = [];
  for (const s of list) {
    const k = s === 'connecting' || s === 'reconnecting' ? 'retrying' : s;
    if (out[out.length - 1] !== k) out.push(k);
  }
  return out;
}

// lifelineErrors is the console.error lines of Lifeline in a tab.
async function lifelineErrors(tab) {
  return (await tab.console()).filter((l) => l.type === 'error' && l.text.startsWith('lifeline:')).map((l) => l.text);
}

module.exports = {
  stateOf, waitState, waitPage, status, attr, text, recordStates, states, recordStatuses, statuses,
  collectTicks, ticks, events, inPage, collapse, lifelineErrors,
};
