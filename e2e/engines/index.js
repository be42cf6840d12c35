// The engines the end-to-end scenarios run in, each behind one interface:
//
//   engine.name, engine.can ({initScripts, offline: 'browser' | 'events',
//     proxyWebSockets: 'connect' | 'get': how a ws:// goes through an HTTP proxy,
//     hubOutlivesTabs: a SharedWorker asked for extendedLifetime outlives its last tab})
//   engine.launch(), engine.newSession({proxy}) → session, engine.close()
//     proxy: 'http://host:port', an HTTP proxy every request and WebSocket of the session
//     goes through, loopback included (a ws:// as a CONNECT tunnel)
//   session.newTab() → tab, session.setOffline(bool) (offline 'browser' only), session.close()
//   tab.addInitScript(fn, arg)   run fn(arg) before the page's own scripts, on every later load
//   tab.goto(url), tab.reload(), tab.back(), tab.close()
//   tab.evaluate(fn, arg)        fn(arg) in the page, its value (a Promise awaited)
//   tab.click(selector), tab.console() → [{type, text}], tab.screenshot(path)
//
// chromium: Debian's chromium through Playwright; firefox: firefox-esr through puppeteer-core
// over WebDriver BiDi; webkit: WebKitGTK's MiniBrowser through WebKitWebDriver under Xvfb.
const engines = {
  chromium: () => new (require('./chromium').Engine)(),
  firefox: () => new (require('./firefox').Engine)(),
  webkit: () => new (require('./webkit').Engine)(),
};

function engineFor(name) {
  if (!engines[name]) throw new Error(`no engine ${name} (engines: ${Object.keys(engines).join(', ')})`);
  return engines[name]();
}

module.exports = { engineFor, names: Object.keys(engines) };
