// Helix console, workflow page: refreshes the graph's counts from the page's
// JSON endpoint (data-counts-url) every two seconds. The page is complete
// without it; it only keeps the numbers live.
"use strict";
(function () {
  var graph = document.getElementById("graph");
  if (!graph || !graph.dataset.countsUrl) { return; }
  var url = graph.dataset.countsUrl;
  var total = document.getElementById("wf-counts");

  function set(el, c) {
    if (el.tagName.toLowerCase() === "a") {
      el.setAttribute("aria-label", el.dataset.what + ", " + c.text);
      var t = el.querySelector("text.count");
      if (t) {
        t.textContent = c.text;
        t.setAttribute("fill", c.errors > 0 ? "#cf222e" : "#57606a");
      }
      var r = el.querySelector("rect");
      if (r && c.errors > 0) { r.setAttribute("stroke", "#cf222e"); }
      return;
    }
    el.textContent = c.text;
  }

  function apply(data) {
    document.querySelectorAll("[data-exchange]").forEach(function (el) { set(el, data.exchange); });
    if (total) { total.textContent = data.exchange.text; }
    document.querySelectorAll("[data-top]").forEach(function (el) {
      var c = data.steps[Number(el.dataset.top)];
      if (c) { set(el, c); }
    });
    // Nested steps (branches, a split's steps), by node number.
    var nested = data.nested || {};
    document.querySelectorAll("[data-nested]").forEach(function (el) {
      var c = nested[el.dataset.nested];
      if (c) { set(el, c); }
    });
  }

  var failures = 0;
  function poll() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.json(); })
      .then(function (data) { failures = 0; apply(data); schedule(2000); })
      .catch(function () {
        // Counts stop updating; the page still shows the last ones. Back off
        // instead of hammering a console that is going away.
        failures++;
        if (total) { total.textContent = total.textContent.replace(/ \(live counts paused\)$/, "") + " (live counts paused)"; }
        schedule(Math.min(30000, 2000 * Math.pow(2, failures)));
      });
  }
  function schedule(ms) {
    setTimeout(function () {
      if (document.hidden) { schedule(ms); return; }
      poll();
    }, ms);
  }
  schedule(2000);
})();
