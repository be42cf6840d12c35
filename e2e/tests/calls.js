// The page's calls as the e2e suite makes and reads them, through anything with evaluate(fn,
// arg) (a Playwright page, or a tab of any engine: engines/index.js): a call made in the page,
// its outcome, and the Host's log of the runs of its handler ("demo: board call ran", with its
// call and key: cmd/host/demo.go).
const { expect } = require('@playwright/test');
const { waitFor } = require('./host');
const { waitPage } = require('../scenarios/page');

// runs counts the runs the Host logged of call with key ('' for unkeyed calls).
function runs(host, call, key) {
  const want = `msg="demo: board call ran" call=${call} key=${key === '' ? '""' : key}`;
  return host.logs.filter((l) => l.includes(want + ' ') || l.endsWith(want)).length;
}

// ranOnce waits for the Host's log of a run of call with key and checks there is one. (The log
// reaches this process through a pipe, which may come after the page has the reply.)
async function ranOnce(host, call, key) {
  await waitFor(() => runs(host, call, key) >= 1, { what: `a run of ${call} with key "${key}" in the Host's log` });
  expect(runs(host, call, key), `runs of ${call} with key "${key}"`).toBe(1);
}

// callIn makes a call in the page and returns its index; settled(page, i) waits for its outcome.
async function callIn(page, name, data, opts) {
  return page.evaluate(([name, data, opts]) => {
    window.__calls = window.__calls || [];
    const o = { state: 'pending' };
    window.__calls.push(o);
    // (A driver that speaks JSON sends an absent option as null: no options.)
    globalThis.lifeline.call(name, data, opts === null ? undefined : opts).then(
      (value) => Object.assign(o, { state: 'resolved', value, at: Date.now() }),
      (e) => Object.assign(o, { state: 'rejected', kind: e.kind, sent: e.sent, code: e.code, message: e.message, at: Date.now() }));
    return window.__calls.length - 1;
  }, [name, data, opts]);
}

// started waits for the Host's log of the first run of call with key, made in the page as
// call i. A call that ends before its handler ran fails the wait with its outcome, and a wait
// that times out says what the page and the Host were doing.
async function started(page, host, i, call, key) {
  try {
    await waitFor(async () => {
      if (runs(host, call, key) >= 1) return true;
      const o = await page.evaluate((i) => window.__calls[i], i);
      if (o.state !== 'pending') throw new Error(`call ${i} ended before its handler ran: ${JSON.stringify(o)}`);
      return false;
    }, { what: `the ${call} handler to start (key "${key}")` });
  } catch (e) {
    const seen = await page.evaluate(() => ({ state: globalThis.lifeline.state(), calls: window.__calls })).catch((err) => String(err));
    throw new Error(`${e.message}\nthe page: ${JSON.stringify(seen)}\nthe Host's last lines:\n${host.logs.slice(-40).join('\n')}`);
  }
  expect(runs(host, call, key)).toBe(1);
}

async function settled(page, i, timeout = 10_000) {
  return waitPage(page, (i) => {
    const o = window.__calls[i];
    return o.state !== 'pending' ? o : null;
  }, i, { timeout, what: `call ${i} to settle` });
}

module.exports = { runs, ranOnce, callIn, started, settled };
