// Helix console, Exchanges page: the live feed. The list is complete without
// this script (the server renders the latest exchanges); with it, exchanges
// that end from now on and match the page's filters are added at the top as
// they arrive, through server-sent events. Rows are built with textContent,
// never from HTML, and the list stays at most data-limit rows long.
"use strict";
(function () {
  var state = document.getElementById("feed-state");
  var rows = document.getElementById("exchange-rows");
  var table = document.getElementById("exchanges");
  if (!state || !rows || !table || !window.EventSource || !window.helix || !window.helix.sse) {
    return;
  }
  var feed = state.getAttribute("data-feed");
  if (!feed) {
    return;
  }
  var limit = parseInt(table.getAttribute("data-limit"), 10) || 100;
  var shown = document.getElementById("exchange-shown");
  var total = document.getElementById("exchange-total");
  var missed = 0;

  function say(text) {
    state.textContent = text;
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) {
      td.className = cls;
    }
    tr.appendChild(td);
    return td;
  }

  function add(x) {
    var empty = rows.querySelector("tr.empty");
    if (empty) {
      empty.remove();
    }
    if (rows.querySelector('tr[data-id="' + CSS.escape(x.id) + '"]')) {
      return;
    }
    var tr = document.createElement("tr");
    tr.setAttribute("data-id", x.id);
    tr.className = "new";
    var first = cell(tr, "");
    var a = document.createElement("a");
    a.href = x.url;
    a.textContent = "#" + x.id;
    first.appendChild(a);
    if (x.replay) {
      first.appendChild(document.createTextNode(" (replay)"));
    }
    cell(tr, x.start);
    cell(tr, x.workflow);
    cell(tr, x.status, x.status === "failed" ? "bad" : "good");
    if (x.principal) {
      cell(tr, x.principal);
    } else {
      cell(tr, "none", "muted");
    }
    cell(tr, x.duration, "num");
    cell(tr, x.error || "");
    rows.insertBefore(tr, rows.firstChild);
    while (rows.children.length > limit) {
      rows.removeChild(rows.lastChild);
    }
    if (shown) {
      shown.textContent = String(rows.children.length);
    }
    if (total) {
      total.textContent = String((parseInt(total.textContent, 10) || 0) + 1);
    }
  }

  // helix.sse (console.js) reconnects with backoff and keeps the frame's
  // live indicator in words.
  var feedHandle = window.helix.sse(feed, function (name, data) {
    if (name === "ready") {
      say(missed > 0 ? "Live feed: on (" + missed + " exchanges missed while the page fell behind; reload to see them)." : "Live feed: on.");
    } else if (name === "exchange" && data && typeof data === "object") {
      add(data);
    } else if (name === "missed" && data && typeof data.count === "number") {
      missed += data.count;
      say("Live feed: on; " + missed + " exchanges were missed because the page fell behind (reload to see them).");
    }
  });
  feedHandle.on("ready").on("exchange").on("missed");
  window.addEventListener("pagehide", function () { feedHandle.close(); });
})();
