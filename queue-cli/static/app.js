// The dashboard's only script: it refreshes the parts of a page marked with data-refresh
// without reloading the page (but not while a field in them is being edited), asks before
// the forms marked with data-confirm are sent, and ticks the choice a field belongs to once
// something is typed into it (data-selects: a reschedule's delay selects "after"). Everything
// it puts into the page was rendered and escaped by the server.
'use strict';

(function () {
  function refresher(el) {
    const url = el.getAttribute('data-refresh');
    const every = Math.max(1000, Number(el.getAttribute('data-interval')) || 5000);
    const status = document.querySelector('[data-refresh-status]');
    let count = 0;

    function say(text) {
      if (status) status.textContent = text;
    }

    // Whether someone is typing into a field of the part (a queue's limit): replacing it would
    // throw their input away.
    function editing() {
      const active = document.activeElement;
      if (active && el.contains(active) && active.matches('input, select, textarea')) return true;
      return [...el.querySelectorAll('input:not([type=hidden])')]
        .some(function (i) { return i.value !== i.defaultValue; });
    }

    async function tick() {
      if (document.hidden || editing()) {
        if (!document.hidden) say('Not refreshed while a field is being edited.');
        setTimeout(tick, every);
        return;
      }
      try {
        const response = await fetch(url, {
          credentials: 'same-origin',
          cache: 'no-store',
          headers: { Accept: 'text/html' },
        });
        if (response.status === 401) {
          say('Logged out: reload the page to log in again.');
          return;
        }
        const type = response.headers.get('content-type') || '';
        if (type.startsWith('text/html')) {
          el.innerHTML = await response.text();
          count += 1;
          el.setAttribute('data-refreshed', String(count));
        }
        say(response.ok
          ? 'Refreshes every ' + every / 1000 + ' s.'
          : 'The last refresh failed (HTTP ' + response.status + '); trying again.');
      } catch (e) {
        say('The last refresh failed (' + e.message + '); trying again.');
      }
      setTimeout(tick, every);
    }

    setTimeout(tick, every);
  }

  function start() {
    document.querySelectorAll('[data-refresh]').forEach(refresher);
    document.addEventListener('submit', function (event) {
      const question = event.target.getAttribute('data-confirm');
      if (question && !window.confirm(question)) event.preventDefault();
    });
    document.addEventListener('input', function (event) {
      const id = event.target.getAttribute('data-selects');
      const choice = id && document.getElementById(id);
      if (choice && event.target.value.trim() !== '') choice.checked = true;
    });
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
