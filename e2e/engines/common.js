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

// steady runs in the page and resolves once the element that selector names has kept its box
// over two frames in a row (at most 2 s), as Playwright's click waits for a stable element. A
// driver that aims a click and then presses (WebDriver's element click, puppeteer's) misses an
// element that moved in between: the press lands where the element was. A frame is an
// animation frame, or 50 ms where the page gets none (a tab in the background).
async function steady(selector) {
  const el = document.querySelector(selector);
  if (!el) return;
  const frame = () => new Promise((resolve) => { requestAnimationFrame(resolve); setTimeout(resolve, 50); });
  const box = () => { const r = el.getBoundingClientRect(); return `${r.x},${r.y},${r.width},${r.height}`; };
  const until = performance.now() + 2000;
  let last = box();
  for (let same = 0; same < 2 && performance.now() < until;) {
    await frame();
    const now = box();
    same = now === last ? same + 1 : 0;
    last = now;
  }
}

module.exports = { consoleType, source, recordConsole, steady };
