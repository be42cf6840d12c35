'use strict';
// A herd of browsers through an outage, in Debian's Chromium: --browsers browser contexts
// (each one a browser as a user has it: a SharedWorker is per profile, so each context runs
// one hub) with --tabs tabs each of the Lifeline page at --url, which the harness serves
// through its fault proxy. --mode shared is the page's default; --mode in-page sets
// lifelineOptions.mode before any script of the page, as e2e/tests/fixtures.js does.
//
//   node herd.js --url http://127.0.0.1:P/ --browsers 50 --tabs 4 --mode shared --within 90000
//
// It prints one JSON line per phase on stdout, for the harness (which owns the proxy and the
// clock):
//   {"event":"ready","t":ms}           every tab is connected; the harness may cut the proxy
//   {"event":"down","t":ms}            every tab has left connected (the outage reached them)
//   {"event":"result", ...}            every tab is connected again, or --within ran out; the
//                                      tabs stay open until SIGUSR2 (or --hold ms), so that the
//                                      harness can read the Host's sessions first
// result: {"event":"result","t":ms,"opened":ms,"tabs":[{"browser":b,"tab":i,"states":[{t,state}…],
//   "final":{"state":…,"dom":…}}…],"errors":[…]}. Every t is ms since the epoch (Date.now(), the
// harness's clock). states are the tab's lifeline:state events as they came; final is
// lifeline.state().state and #connection-status[data-state] once every tab is back (or at
// the deadline), read after a settle of --settle ms so that a tab that flickers is seen.
//
// Every wait is bounded: opening the tabs by --open-within, leaving connected by --within,
// coming back by --within after that. A bound that runs out prints a result with the errors
// and exits 1; the harness reads what came.
const { chromium } = require('playwright-core');

const a = { browsers: '50', tabs: '4', mode: 'shared', within: '90000', 'open-within': '600000', settle: '1000', parallel: '4', hold: '30000' };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) a[argv[i].replace(/^--?/, '')] = argv[i + 1];
const B = Number(a.browsers);
const T = Number(a.tabs);
const within = Number(a.within);
const settle = Number(a.settle);

const extra = (process.env.BENCH_CHROMIUM_ARGS || '').split(/\s+/).filter(Boolean);
const launch = {
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    // 200 tabs in one headless browser: none of them is in front, and a background tab's
    // timers are throttled, which would be the throttling's figure, not the hub's.
    '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
    '--disable-backgrounding-occluded-windows', ...extra],
};

const inPage = `globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { mode: 'in-page' });`;
// Every lifeline:state of the tab goes to Node as it happens, stamped with the epoch clock.
const stateWatcher = `addEventListener('lifeline:state', (e) => {
  const s = e.detail && e.detail.state;
  if (typeof globalThis.__herdState === 'function') globalThis.__herdState(Date.now(), s);
});`;

// SIGUSR2: the harness is done with the tabs (installed first: its default would end Node and
// leave the browser behind).
let release;
const released = new Promise((resolve) => { release = resolve; });
process.on('SIGUSR2', () => release());

function emit(o) { process.stdout.write(JSON.stringify(o) + '\n'); }

// A tab: its states as they came, and the promises the phases wait on.
function newTab(b, i) {
  return { browser: b, tab: i, states: [], final: null, page: null, state: '' };
}

// until resolves once cond() holds (checked at every state event and every 100 ms), or
// rejects with what(), naming what is missing, after ms.
function until(cond, ms, what) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const iv = setInterval(() => {
      if (cond()) { clearInterval(iv); resolve(); } else if (Date.now() - t0 > ms) {
        clearInterval(iv);
        reject(new Error(what()));
      }
    }, 100);
  });
}

(async () => {
  const errors = [];
  const tabs = [];
  const contexts = [];
  const browser = await chromium.launch(launch);
  let code = 0;
  const t0 = Date.now();
  try {
    const openBrowser = async (b) => {
      const context = await browser.newContext();
      contexts.push(context);
      const mine = [];
      await context.exposeBinding('__herdState', ({ page }, t, state) => {
        const tab = mine.find((x) => x.page === page);
        if (!tab) return;
        tab.states.push({ t, state });
        tab.state = state;
      });
      if (a.mode === 'in-page') await context.addInitScript(inPage);
      await context.addInitScript(stateWatcher);
      for (let i = 0; i < T; i++) {
        const tab = newTab(b, i);
        tabs.push(tab);
        mine.push(tab);
        tab.page = await context.newPage();
        await tab.page.goto(a.url, { waitUntil: 'commit', timeout: 60000 });
        // Each tab joins a hub that is up (shared mode's usual case) rather than all racing
        // to start it: a user opens tabs one after another.
        await until(() => tab.state === 'connected', 60000, () => `browser ${b} tab ${i} not connected within 60 s (last state ${tab.state || 'none'})`);
      }
    };
    // A few browsers at a time: 200 pages at once would measure the machine's start-up.
    const next = { b: 0 };
    const worker = async () => {
      while (next.b < B) await openBrowser(next.b++);
    };
    const opening = Promise.all(Array.from({ length: Number(a.parallel) }, worker));
    await Promise.race([opening, new Promise((_, reject) => setTimeout(() => reject(new Error(`the ${B}×${T} tabs did not all open within ${a['open-within']} ms (${tabs.filter((t) => t.state === 'connected').length} connected)`)), Number(a['open-within'])))]);
    const notConnected = () => tabs.filter((t) => t.state !== 'connected').map((t) => `${t.browser}/${t.tab}:${t.state || 'none'}`);
    emit({ event: 'ready', t: Date.now(), opened: Date.now() - t0 });

    // The harness cuts the proxy now: every tab must leave connected, then come back.
    await until(() => tabs.every((t) => t.state !== 'connected'), within,
      () => `tabs still connected ${within} ms after ready (the outage did not reach them): ${notConnected().length === tabs.length ? 'all' : tabs.filter((t) => t.state === 'connected').map((t) => `${t.browser}/${t.tab}`).slice(0, 10).join(' ')}`);
    emit({ event: 'down', t: Date.now() });
    await until(() => tabs.every((t) => t.state === 'connected'), within,
      () => `tabs not connected again ${within} ms after the outage reached them: ${notConnected().slice(0, 10).join(' ')} (${notConnected().length} of ${tabs.length})`);
    await new Promise((resolve) => setTimeout(resolve, settle));
  } catch (e) {
    errors.push(e.message.split('\n')[0]);
    code = 1;
  }
  // What each tab shows now: its API's state and the DOM contract.
  await Promise.all(tabs.map(async (tab) => {
    if (!tab.page) return;
    try {
      tab.final = await tab.page.evaluate(() => ({
        state: globalThis.lifeline && typeof globalThis.lifeline.state === 'function' ? globalThis.lifeline.state().state : null,
        dom: (document.getElementById('connection-status') || { dataset: {} }).dataset.state || null,
      }), null, { timeout: 10000 });
    } catch (e) {
      errors.push(`browser ${tab.browser} tab ${tab.tab}: reading its state: ${e.message.split('\n')[0]}`);
    }
  }));
  emit({ event: 'result', t: Date.now(), tabs: tabs.map((t) => ({ browser: t.browser, tab: t.tab, states: t.states, final: t.final })), errors });
  // The tabs stay open until the harness has read the Host's session count (it sends SIGUSR2),
  // or --hold ms: closing them would end the sessions it counts.
  await Promise.race([released, new Promise((resolve) => setTimeout(resolve, Number(a.hold)))]);
  for (const c of contexts) await c.close().catch(() => {});
  await browser.close().catch(() => {});
  process.exit(code);
})().catch((e) => { console.error(e); process.exit(1); });
