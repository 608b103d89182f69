// The jobs dashboard's live updates. Nothing here is needed for an action to work: without
// it, the pages show what they were rendered with.
(function () {
  "use strict";

  // Calls `fn` at most once per `ms`, the last call winning.
  function throttle(fn, ms) {
    var timer = null;
    return function () {
      if (timer) return;
      timer = setTimeout(function () { timer = null; fn(); }, ms);
    };
  }

  function getJson(path) {
    return fetch(path, { headers: { accept: "application/json" } }).then(function (r) {
      if (!r.ok) throw new Error(path + ": " + r.status);
      return r.json();
    });
  }

  // Listens to api/events (for `queue`, or every queue), calling `onEvent` with each event
  // and `onMissed` when some may have been missed.
  function listen(queue, onEvent, onMissed) {
    if (!window.EventSource) return;
    var url = "api/events" + (queue ? "?queue=" + encodeURIComponent(queue) : "");
    var source = new EventSource(url);
    source.addEventListener("job", function (e) { onEvent(JSON.parse(e.data)); });
    source.addEventListener("missed", onMissed);
  }

  function setText(el, text) {
    if (el && el.textContent !== text) el.textContent = text;
  }

  var number = new Intl.NumberFormat("en-US");

  // The overview: re-reads api/queues on events (throttled) and every few seconds.
  function overview(table) {
    var refresh = throttle(function () {
      getJson("api/queues").then(function (queues) {
        queues.forEach(function (q) {
          var row = table.querySelector('tr[data-queue="' + CSS.escape(q.name) + '"]');
          if (!row) return;
          Object.keys(q.counts).forEach(function (status) {
            var cell = row.querySelector('td[data-count="' + status + '"]');
            if (cell) setText(cell.querySelector("a") || cell, number.format(q.counts[status]));
          });
          setText(row.querySelector('td[data-count="finished_last_minute"]'), number.format(q.finished_last_minute));
          setText(row.querySelector('td[data-count="finished_last_hour"]'), number.format(q.finished_last_hour));
        });
      }).catch(function () {});
    }, 1000);
    listen(null, refresh, refresh);
    setInterval(refresh, 5000);
  }

  // Replaces `section` (the job's, or the workflow's) by the server's current rendering of it
  // (every field, the attempts and the actions the new status allows), without reloading the
  // page.
  function rerender(section) {
    return fetch(window.location.href, { headers: { accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(section.id);
        if (fresh) section.replaceChildren.apply(section, Array.from(fresh.childNodes));
      });
  }

  // A job's page: re-reads api/jobs/{id} on its events and, while it is active, every few
  // seconds; a new status re-renders the job, progress and attempts update in place.
  function job(section) {
    var id = section.getAttribute("data-job");
    var active = ["waiting", "scheduled", "pending", "running"];
    var refresh = throttle(function () {
      getJson("api/jobs/" + encodeURIComponent(id)).then(function (j) {
        var status = document.getElementById("job-status");
        if (status && status.textContent !== j.status) return rerender(section);
        setText(document.getElementById("job-progress"), j.progress + "%");
        var bar = section.querySelector("progress");
        if (bar) bar.value = j.progress;
        setText(document.getElementById("job-attempt"), j.attempt + " of " + j.max_attempts);
        if (j.result !== null && j.result !== undefined) {
          setText(document.getElementById("job-result"), JSON.stringify(j.result, null, 2));
        }
      }).catch(function () {});
    }, 300);
    listen(section.getAttribute("data-queue"), function (e) {
      if (e.id === id) refresh();
    }, refresh);
    setInterval(function () {
      var status = document.getElementById("job-status");
      if (status && active.indexOf(status.textContent) >= 0) refresh();
    }, 3000);
  }

  // A workflow's page: re-reads api/workflows/{id} on its steps' events and, while it runs,
  // every few seconds; a new state, or a step's new status, attempt or progress, re-renders
  // the workflow.
  function workflow(section) {
    var id = section.getAttribute("data-workflow");
    var ending = ["running", "compensating"];
    var shown = function (row, css) {
      var cell = row.querySelector(css);
      return cell ? cell.textContent.trim() : null;
    };
    var refresh = throttle(function () {
      getJson("api/workflows/" + encodeURIComponent(id)).then(function (w) {
        var state = document.getElementById("workflow-state");
        var stale = !state || state.textContent !== w.state;
        w.steps.forEach(function (step) {
          var j = step.job;
          var row = section.querySelector('tr[data-job="' + CSS.escape(j.id) + '"]');
          if (!row || shown(row, "td.status") !== j.status ||
              shown(row, "td.attempt") !== j.attempt + "/" + j.max_attempts ||
              shown(row, "td.progress") !== j.progress + "%") {
            stale = true;
          }
        });
        if (stale) return rerender(section);
      }).catch(function () {});
    }, 300);
    listen(null, function (e) {
      if (section.querySelector('tr[data-job="' + CSS.escape(e.id) + '"]')) refresh();
    }, refresh);
    setInterval(function () {
      var state = document.getElementById("workflow-state");
      if (state && ending.indexOf(state.textContent) >= 0) refresh();
    }, 2000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var queues = document.getElementById("queues");
    if (queues) overview(queues);
    var section = document.getElementById("job");
    if (section) job(section);
    var flow = document.getElementById("workflow");
    if (flow) workflow(flow);
  });
})();
