// Opens N Chromium pages on the fleet's URL (through nginx) and prints one JSON line per
// change of each page's indicator (#connection-status data-state) or of its Host
// (#host-id data-host), until stdin closes. Used by go run ./e2e/fleet.
//   node e2e/fleet/pages.cjs http://127.0.0.1:8080/ 2 [user]
// With a user, each page's browser carries the cookie lifeline-user=<user> (bin/host -signouts).
const { chromium } = require('@playwright/test');

(async () => {
  const url = process.argv[2];
  const n = Number(process.argv[3] || 2);
  const user = process.argv[4] || '';
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = (o) => process.stdout.write(JSON.stringify({ t: Date.now(), ...o }) + '\n');
  for (let i = 0; i < n; i++) {
    const page = await browser.newPage();
    if (user) await page.context().addCookies([{ name: 'lifeline-user', value: user, url }]);
    await page.exposeFunction('reportFleet', (state, host) => out({ page: i, state, host }));
    page.on('pageerror', (err) => out({ page: i, error: String(err) }));
    await page.goto(url);
    await page.waitForSelector('#connection-status[data-state="connected"]', { timeout: 30000 });
    await page.waitForSelector('#host-id[data-host]', { timeout: 30000 });
    await page.evaluate(() => {
      const st = document.getElementById('connection-status');
      const host = document.getElementById('host-id');
      const report = () => window.reportFleet(st.dataset.state, host.dataset.host || '');
      new MutationObserver(report).observe(st, { attributes: true, attributeFilter: ['data-state'] });
      new MutationObserver(report).observe(host, { attributes: true, attributeFilter: ['data-host'] });
      report();
    });
  }
  out({ ready: true });
  process.stdin.on('end', async () => {
    await browser.close();
    process.exit(0);
  });
  process.stdin.resume();
})().catch((err) => {
  process.stdout.write(JSON.stringify({ fatal: String(err) }) + '\n');
  process.exit(1);
});
