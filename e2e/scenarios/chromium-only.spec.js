// The Chromium-only specs (tests/), named in every other engine's run with the reason they do
// not run there, so that nothing is missing silently. Each needs what only Chromium's driver
// reaches here; what of their promises every engine can show runs in scenarios/.
// (playwright.config.js runs this file in the firefox and webkit projects only.)
const { test } = require('./fixtures');

const chromiumOnly = [
  ['tests/lifecycle.spec.js', 'pages frozen over a half-open link, a probe on a healthy link, a hidden page\'s dials', 'freezes the page\'s JavaScript with the debugger over DevTools (CDP); no BiDi or WebKitWebDriver command freezes a page'],
  ['tests/shared.spec.js', 'a crash of the shared hub recovers every tab', 'breaks the SharedWorker through DevTools; no other driver here reaches a SharedWorker'],
  ['tests/calls.spec.js', 'a crash of the shared hub with calls in flight (2)', 'breaks the SharedWorker through DevTools; no other driver here reaches a SharedWorker'],
  ['tests/calls.spec.js', 'the embedding example\'s keyed call', 'part of the embedding example\'s suite, below'],
  ['tests/embed.spec.js', 'the embedding example (examples/embed)', 'request interception (page.route), DevTools network events and cookies of Playwright\'s context; WebKitWebDriver intercepts nothing'],
  ['tests/access.spec.js', 'a sign-out everywhere ends five tabs and a second browser of the user', 'runs the embedding example (hosts.startEmbed of tests/fixtures.js), which the engine-neutral fixtures do not start yet; nothing in it needs Chromium: a port to scenarios/ is to do'],
  ['tests/indicator.spec.js', 'what the indicator says to a person and to a screen reader', 'the accessibility tree over DevTools and Playwright\'s ARIA snapshots'],
  ['tests/presence.spec.js', 'presence in the browser (issue 34)', 'not engine-neutral yet: it names each browser\'s user by Playwright\'s context cookies (engines/ has no cookie command; document.cookie in an init script would do); it landed after the engines suite'],
  ['tests/lifeline.spec.js', 'the localized presentation and its pictures', 'the pictures of the indicator come from one engine; its labels in every engine are read by scenarios/connect.spec.js and faults.spec.js'],
];

for (const [file, what, why] of chromiumOnly) {
  test.skip(`chromium only: ${file}: ${what} (${why})`, async () => {});
}
