// What the scenarios read of the demo page, through any engine's tab: its indicator, its
// status, the states it took and the ticks it received. Every wait is bounded.
const { waitFor } = require('../tests/host');

// stateOf is the indicator's data-state.
function stateOf(tab) {
  return tab.evaluate(() => {
    const el = document.getElementById('connection-status');
    return el ? el.dataset.state : null;
  });
}

async function waitState(tab, state, timeout = 10_000) {
  let last = null;
  try {
    await waitFor(async () => (last = await stateOf(tab)) === state, { timeout, interval: 20, what: `data-state="${state}"` });
  } catch (e) {
    throw new Error(`${e.message} (the page shows ${JSON.stringify(last)})`);
  }
}

// waitPage waits for fn(arg) to be true in the page.
function waitPage(tab, fn, arg, { timeout = 10_000, what = 'a page condition' } = {}) {
  return waitFor(() => tab.evaluate(fn, arg), { timeout, interval: 20, what });
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
