// What every engine's driver shares: the shape of a console line, a script made of a function
// and its argument, and the page side of the console recorder for a driver that has no console
// of its own to read.

// consoleType names a console message's level alike for every driver (Playwright says
// 'warning' where puppeteer says 'warn').
function consoleType(t) {
  return t === 'warning' ? 'warn' : t;
}

// source makes one script of fn and its argument, as Playwright's addInitScript(fn, arg) runs it.
function source(fn, arg) {
  return `(${fn})(${arg === undefined ? '' : JSON.stringify(arg)});`;
}

// recordConsole runs first in a page whose driver cannot read its console (WebKitGTK's classic
// WebDriver has no log endpoint): it keeps every console line and uncaught error of the tab in
// its sessionStorage, so that they outlive a reload or a navigation within the origin, as a
// driver's own console capture does.
function recordConsole() {
  const KEY = '__e2eConsole';
  const text = (v) => {
    if (v instanceof Error || typeof v === 'function' || v === undefined) return String(v);
    if (typeof v === 'string') return v;
    try { return JSON.stringify(v); } catch (_) { return String(v); }
  };
  const keep = (type, args) => {
    try {
      const list = JSON.parse(sessionStorage.getItem(KEY) || '[]');
      list.push({ type, text: Array.from(args, text).join(' ') });
      sessionStorage.setItem(KEY, JSON.stringify(list));
    } catch (_) { /* no storage: nothing to keep */ }
  };
  for (const type of ['log', 'info', 'warn', 'error', 'debug']) {
    const orig = console[type];
    console[type] = function (...args) {
      keep(type, args);
      return orig.apply(this, args);
    };
  }
  window.addEventListener('error', (e) => keep('pageerror', [e.message]));
  window.addEventListener('unhandledrejection', (e) => keep('pageerror', [e.reason]));
}

module.exports = { consoleType, source, recordConsole };
