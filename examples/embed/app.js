// The page's own code: it subscribes to its user's private stream through the JS API the
// Host plugin injected (globalThis.lifeline), and shows the last ten events. It is a file of
// the application's origin, not inline, since the page's Content-Security-Policy runs no inline
// script but Lifeline's boot, by its hash (main.go, page).
const user = document.body.dataset.user;
const list = document.getElementById('events');
const note = document.getElementById('note');

function show(d) {
  if ('error' in d) { // the subscription ended: denied by the Host, or the page stopped
    // A denial shows the Host's Authorize in its own words (d.reason); d.error is the
    // full message, for developers.
    note.textContent = d.denied ? 'Not allowed: ' + d.reason : 'Ended: ' + d.error;
    return;
  }
  if (d.reset) { // a fresh start of the stream: nothing before this point will come
    note.textContent = 'Live from event ' + (d.seq + 1);
    return;
  }
  const li = document.createElement('li');
  li.textContent = d.data.text;
  li.dataset.seq = d.seq;
  list.prepend(li);
  while (list.children.length > 10) list.lastElementChild.remove();
}

// The memo is saved with a call, with a fresh key per save: should the connection drop
// before the reply, Lifeline sends it again once connected, and the app saves it once. A
// save made while not connected waits, and goes once the page is.
function saveMemo() {
  const status = document.getElementById('memo-status');
  const key = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
  status.textContent = 'Saving…';
  delete status.dataset.version;
  delete status.dataset.kind;
  lifeline.call('memo.save', { user, text: document.getElementById('memo-text').value }, { key }).then((m) => {
    status.textContent = 'Saved (version ' + m.version + ')';
    status.dataset.version = m.version;
  }, (e) => { // e.kind says what happened, e.sent whether it had gone out
    status.textContent = 'Not saved: ' + e.message;
    status.dataset.kind = e.kind;
  });
}

function start() {
  if (user) {
    lifeline.subscribe('user.' + user, show);
    document.getElementById('memo-save').addEventListener('click', saveMemo);
  } else {
    note.textContent = 'Sign in to see your events.';
  }
}
// The API exists as soon as the injected script has run, which may be before or after
// this one: use it at once if it is there, else when it says it is ready.
if (globalThis.lifeline) start();
else window.addEventListener('lifeline:ready', start, { once: true });
