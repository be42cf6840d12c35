// Shared mode (one socket per browser, not per tab) in every engine that has SharedWorker: every tab of an origin shares
// one Lifeline in a SharedWorker, and the Host's own session count is the witness. In an in-page
// run these are skipped, as they are about the shared hub; in an engine without SharedWorker
// they are skipped with that reason (the fallback is scenarios/connect.spec.js's).
const { test, expect, mode, waitFor, gapsIn } = require('./fixtures');
const { waitState, waitPage } = require('./page');

test.skip(mode === 'in-page', 'shared mode only: in-page, every tab has its own hub');

async function follow(tab) {
  await waitPage(tab, () => !!globalThis.lifeline, undefined, { what: 'globalThis.lifeline' });
  await tab.evaluate(() => {
    window.__ticks = [];
    // lag: how long after its publication the tick reached this tab (one machine, one clock).
    globalThis.lifeline.subscribe('ticks', (d) => window.__ticks.push(d.reset ? { reset: true, seq: d.seq } : { seq: d.seq, n: d.data.n, lag: Date.now() - d.data.at }));
  });
}
const got = (tab) => tab.evaluate(() => window.__ticks.slice());

// open opens n tabs of host in one session, connected; it skips the test where the engine has
// no SharedWorker.
async function open(browse, host, n) {
  const session = await browse.session();
  const tabs = [];
  for (let i = 0; i < n; i++) {
    const tab = await session.newTab();
    await tab.goto(host.url('/'));
    if (i === 0 && !(await tab.evaluate(() => typeof SharedWorker === 'function'))) {
      test.skip(true, `${browse.engine.name} has no SharedWorker: every page is in-page`);
    }
    tabs.push(tab);
  }
  for (const t of tabs) await waitState(t, 'connected');
  return { session, tabs };
}

test('five tabs share one session; tabs closing in any order never interrupt the others', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const { tabs } = await open(browse, host, 5);
  expect((await host.health()).sessions).toBe(1);
  const accepted = (await host.health()).accepted;
  for (const t of tabs) await follow(t);
  for (const t of tabs) {
    await t.evaluate(() => {
      window.__states = [];
      globalThis.lifeline.onState((s) => window.__states.push({ state: s.state, at: Date.now() }));
    });
  }
  await waitFor(async () => (await Promise.all(tabs.map(got))).every((l) => l.filter((d) => !d.reset).length >= 2), { what: 'ticks in every tab' });
  for (const i of [0, 3, 1]) { // close tabs 1, 4 and 2
    await tabs[i].close();
    const left = tabs.filter((t) => !t.closed);
    const before = await Promise.all(left.map(async (t) => (await got(t)).length));
    await waitFor(async () => (await Promise.all(left.map(got))).every((l, j) => l.length >= before[j] + 2), { what: 'ticks after a tab closed' });
  }
  // WebKit ends the hub's worker when one of several windows closes (web/lifeline.js,
  // watchHub): the tabs rejoin it and resume at their cursors. What each went through is
  // reported; what it got must be whole either way.
  let replaced = 0, away = 0, lag = 0, again = 0, livedOn = 0;
  for (const t of tabs.filter((t) => !t.closed)) {
    const list = await got(t);
    lag = Math.max(lag, ...list.filter((d) => !d.reset).map((d) => d.lag));
    expect(gapsIn(list)).toEqual([]);
    expect(list.filter((d) => d.reset).length).toBe(1); // its own baseline, once
    const lines = await t.console();
    const said = (start) => lines.filter((l) => l.text.startsWith(start)).length;
    const ended = said("lifeline: the browser ended the shared hub's worker");
    replaced = Math.max(replaced, ended);
    again += said('lifeline: the restarted shared hub did not answer this tab');
    livedOn += said("lifeline: the shared hub's worker lives on after all");
    const states = await t.evaluate(() => window.__states);
    for (let i = 1; i < states.length; i++) {
      if (states[i - 1].state !== 'connected') away = Math.max(away, states[i].at - states[i - 1].at);
    }
    if (ended === 0) expect(states.map((s) => s.state)).toEqual(['connected']);
  }
  const sockets = (await host.health()).accepted - accepted;
  console.log(`[${browse.engine.name}] three of five tabs closed: the hub's worker ended ${replaced} time(s), ${sockets} new socket(s), ${again} tab(s) joined the restarted hub again, ${livedOn} found it had lived on; the longest a tab was not connected: ${away} ms; the latest tick reached its tab ${lag} ms after its publication`);
  expect(sockets).toBeLessThanOrEqual(replaced); // one per worker that ended, none where none did
  expect((await host.health()).sessions).toBe(1);
});

test('Reconnect now in any tab acts on the shared connection; every tab shows the same state', async ({ browse, hosts }) => {
  const host = await hosts.start({ recovery: { initialDelayMs: 3000, maxDelayMs: 3000 } });
  const { tabs: [a, b] } = await open(browse, host, 2);
  const accepted = (await host.health()).accepted;
  await b.evaluate(() => { const el = document.getElementById('reconnect-now'); el.disabled = false; el.click(); });
  await waitFor(async () => (await host.health()).accepted === accepted + 1, { what: 'one new socket at the Host' });
  await waitFor(async () => (await a.evaluate(() => globalThis.lifeline.state().attempt)) === 2, { what: 'tab a told of attempt 2' });
  await host.fault('outage');
  await waitState(a, 'reconnecting');
  await waitState(b, 'reconnecting');
  const [sa, sb] = await Promise.all([a, b].map((t) => t.evaluate(() => globalThis.lifeline.state())));
  expect(sa.nextAttempt).toBe(sb.nextAttempt);
  expect(sa.attempt).toBe(sb.attempt);
  await host.fault('up');
  await a.evaluate(() => globalThis.lifeline.reconnectNow());
  await waitState(b, 'connected');
  expect((await host.health()).sessions).toBe(1);
});

test('offline in a tab suspends the shared hub; online resumes it', async ({ browse, hosts }, testInfo) => {
  const host = await hosts.start({});
  const { session, tabs: [a, b] } = await open(browse, host, 2);
  // The worker's own network is not cut by any driver's emulation: cut the Host too.
  const byBrowser = browse.engine.can.offline === 'browser';
  if (!byBrowser) testInfo.annotations.push({ type: 'done another way', description: `${browse.engine.name}: its driver cannot take the browser offline; the tabs are sent offline/online events` });
  const setOffline = async (offline) => {
    if (byBrowser) await session.setOffline(offline);
    else for (const t of [a, b]) await t.evaluate((o) => window.dispatchEvent(new Event(o ? 'offline' : 'online')), offline);
  };
  await setOffline(true);
  await host.fault('outage');
  await waitState(a, 'offline');
  await waitState(b, 'offline');
  const accepted = (await host.health()).accepted;
  await new Promise((r) => setTimeout(r, 3000)); // a window in which a dial would be seen
  expect((await host.health()).accepted).toBe(accepted); // no dial while offline
  await host.fault('up');
  const t0 = Date.now();
  await setOffline(false);
  await waitState(a, 'connected', 3000);
  await waitState(b, 'connected', 3000);
  expect(Date.now() - t0).toBeLessThan(2000);
});

// Where the engine lets a SharedWorker outlive its last tab (extendedLifetime: Chromium), a
// reload of the only tab finds the hub still connected. Where it does not (Firefox, WebKit),
// the page says so once and the reload is a fresh hub: one new socket, the old session closed
// at the Host, nothing left behind. The page's own detection must agree with the engine's.
test('a reload of the only tab keeps the hub where the engine lets it outlive its tab, else opens one new connection and says so once', async ({ browse, hosts }) => {
  test.setTimeout(60_000);
  const host = await hosts.start({});
  const { tabs: [a] } = await open(browse, host, 1);
  const lingers = browse.engine.can.hubOutlivesTabs;
  const said = async () => (await a.console()).filter((l) => l.text.startsWith('lifeline:') && /extendedLifetime/.test(l.text)).map((l) => l.text);
  expect(await said(), 'the console lines of Lifeline naming extendedLifetime').toHaveLength(lingers ? 0 : 1);
  const accepted = (await host.health()).accepted;
  await a.reload();
  await waitState(a, 'connected');
  if (lingers) {
    expect((await host.health()).accepted).toBe(accepted); // the same socket
  } else {
    await waitFor(async () => (await host.health()).sessions === 1, { timeout: 5000, what: "the ended hub's session closed" });
    expect((await host.health()).accepted).toBe(accepted + 1); // one new socket, no more
  }
  await a.close();
  await waitFor(async () => (await host.health()).sessions === 0, { timeout: 20_000, what: 'the session closed after the last tab left' });
});

test('a tab in the back-forward cache leaves the hub and rejoins when shown', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const { tabs: [a, b] } = await open(browse, host, 2);
  await follow(b);
  await a.goto(host.url('/settings-not-a-page'));
  await a.back();
  await waitState(a, 'connected', 3000);
  await follow(a);
  await waitFor(async () => (await got(a)).some((d) => !d.reset), { what: 'ticks in the tab that came back' });
  expect(gapsIn(await got(b))).toEqual([]);
  expect((await host.health()).sessions).toBe(1);
});

// muteableHubs wraps SharedWorker so that the test can make a hub fall silent for this tab, as
// a hub whose program hangs does (its worker still there, holding its lock: no error event, no
// message). window.__hubs lists every hub the page made, by name.
function muteableHubs() {
  const Real = globalThis.SharedWorker;
  if (typeof Real !== 'function') return;
  window.__hubs = [];
  globalThis.SharedWorker = function SharedWorker(url, opts) {
    const w = new Real(url, opts);
    const hub = { name: (opts && opts.name) || '', muted: false };
    window.__hubs.push(hub);
    const real = w.port;
    let handler = null;
    real.onmessage = (e) => { if (!hub.muted && handler) handler(e); };
    const port = {
      postMessage(m) { if (!hub.muted) real.postMessage(m); },
      set onmessage(f) { handler = f; },
      get onmessage() { return handler; },
      start() { real.start(); },
      close() { real.close(); },
    };
    return {
      port,
      set onerror(f) { w.onerror = f; },
      get onerror() { return w.onerror; },
    };
  };
}

test('a hub that ends without a word is noticed within two pings, and its tabs meet in one fresh hub', async ({ browse, hosts }) => {
  test.setTimeout(60_000);
  const host = await hosts.start({});
  const session = await browse.session();
  const tabs = [];
  for (let i = 0; i < 2; i++) {
    const tab = await session.newTab();
    await tab.addInitScript(muteableHubs);
    await tab.goto(host.url('/'));
    if (i === 0 && !(await tab.evaluate(() => typeof SharedWorker === 'function'))) {
      test.skip(true, `${browse.engine.name} has no SharedWorker: every page is in-page`);
    }
    tabs.push(tab);
  }
  for (const t of tabs) await waitState(t, 'connected');
  expect((await host.health()).sessions).toBe(1);
  // A ping round has been answered in each tab (the check judges only a hub that answered).
  await new Promise((r) => setTimeout(r, 10_500));
  for (const t of tabs) await follow(t);
  const silentAt = Date.now();
  for (const t of tabs) await t.evaluate(() => { window.__hubs[0].muted = true; });
  // The next round's ping goes unanswered; the one after judges: 10–20 s.
  for (const t of tabs) {
    await waitPage(t, () => window.__hubs.length === 2, undefined, { timeout: 25_000, what: 'a fresh hub' });
  }
  console.log(`[${browse.engine.name}] a silent hub noticed, and a fresh one made, ${Date.now() - silentAt} ms after it fell silent`);
  const names = await Promise.all(tabs.map((t) => t.evaluate(() => window.__hubs.map((h) => h.name))));
  expect(names[0][1]).not.toBe(names[0][0]);
  expect(names[1]).toEqual(names[0]); // one fresh hub for both
  for (const t of tabs) {
    await waitState(t, 'connected');
    const n = (await got(t)).length;
    await waitFor(async () => (await got(t)).length >= n + 2, { what: 'ticks from the fresh hub' });
    const lines = (await t.console()).filter((l) => l.type === 'error' && l.text.startsWith('lifeline: the shared hub stopped: it stopped answering'));
    expect(lines).toHaveLength(1);
  }
  // The silent hub still holds its session until it drops its silent tabs (wasm/scope.go);
  // the fresh one has one of its own, shared by both tabs.
  expect((await host.health()).sessions).toBe(2);
});
