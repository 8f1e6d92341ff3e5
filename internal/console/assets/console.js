// Helix console: a small amount of plain JavaScript; every page works without it,
// except the live parts (feeds, the try-it form). Pages use the helpers on
// window.helix:
//
//   helix.sse(url, onEvent)        an EventSource that reconnects with backoff;
//                                  onEvent(name, data) gets each event (data parsed
//                                  as JSON when it is JSON); returns {close()}
//   helix.poll(url, ms, onData)    fetches JSON every ms while the tab is visible;
//                                  returns {stop()}
//   helix.fmt.num(n), .dur(ms), .bytes(n), .time(date)
//   helix.live(state)              sets the frame's live indicator: "live",
//                                  "connecting", "paused" or "offline" (a word,
//                                  never only a colour)
//   helix.post(url, body)          a same-origin POST (form-encoded object or
//                                  FormData) that resolves to the Response
"use strict";
(function () {
  var helix = window.helix = window.helix || {};

  helix.live = function (state) {
    var el = document.getElementById("live");
    if (!el) return;
    el.textContent = state;
    el.setAttribute("data-state", state);
  };

  helix.fmt = {
    num: function (n) {
      if (typeof n !== "number" || !isFinite(n)) return String(n);
      return n.toLocaleString("en-US", { maximumFractionDigits: 1 });
    },
    dur: function (ms) {
      if (typeof ms !== "number") return String(ms);
      if (ms < 1) return Math.round(ms * 1000) + "µs";
      if (ms < 1000) return (Math.round(ms * 10) / 10) + "ms";
      return (Math.round(ms / 10) / 100) + "s";
    },
    bytes: function (n) {
      if (n < 1024) return n + " B";
      var u = ["KiB", "MiB", "GiB", "TiB"], i = -1;
      do { n /= 1024; i++; } while (n >= 1024 && i < u.length - 1);
      return n.toFixed(1) + " " + u[i];
    },
    time: function (d) {
      d = d instanceof Date ? d : new Date(d);
      return isNaN(d) ? "" : d.toLocaleTimeString();
    }
  };

  helix.post = function (url, body) {
    var data = body;
    if (body && !(body instanceof FormData) && typeof body === "object") {
      data = new URLSearchParams(body);
    }
    return fetch(url, { method: "POST", body: data, credentials: "same-origin", headers: { "Accept": "application/json" } });
  };

  helix.sse = function (url, onEvent) {
    var es = null, closed = false, delay = 500, timer = null;
    function connect() {
      if (closed) return;
      helix.live("connecting");
      es = new EventSource(url, { withCredentials: true });
      es.onopen = function () { delay = 500; helix.live("live"); };
      es.onmessage = function (e) { deliver("message", e.data); };
      es.onerror = function () {
        es.close();
        if (closed) return;
        helix.live("offline");
        timer = setTimeout(connect, delay);
        delay = Math.min(delay * 2, 15000);
      };
      // Named events: pages call addEventListener through the returned handle.
      for (var i = 0; i < names.length; i++) listen(names[i]);
    }
    var names = [];
    function listen(name) { es.addEventListener(name, function (e) { deliver(name, e.data); }); }
    function deliver(name, raw) {
      var data = raw;
      try { data = JSON.parse(raw); } catch (_) { /* plain text */ }
      onEvent(name, data);
    }
    connect();
    return {
      on: function (name) { names.push(name); if (es) listen(name); return this; },
      close: function () { closed = true; clearTimeout(timer); if (es) es.close(); helix.live("paused"); }
    };
  };

  helix.poll = function (url, ms, onData) {
    var stopped = false, timer = null;
    function tick() {
      if (stopped) return;
      if (document.hidden) { helix.live("paused"); timer = setTimeout(tick, ms); return; }
      fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) {
          if (r.status === 401) { helix.live("signed out"); stopped = true; return null; }
          if (!r.ok) throw new Error("HTTP " + r.status);
          return r.json();
        })
        .then(function (d) { if (d) { helix.live("live"); onData(d); } })
        .catch(function () { helix.live("offline"); })
        .then(function () { if (!stopped) timer = setTimeout(tick, ms); });
    }
    timer = setTimeout(tick, ms);
    return { stop: function () { stopped = true; clearTimeout(timer); } };
  };

  // Tables whose container names a JSON endpoint (data-live="url") refresh
  // every 2 s: rows carry data-key, cells data-col; the JSON is
  // {sections: [{rows: [{key, <col>: value…}]}]}. Rows that appear or vanish
  // show on the next full load (the page says so).
  function liveTables() {
    var boxes = document.querySelectorAll("[data-live]");
    Array.prototype.forEach.call(boxes, function (box) {
      var url = box.getAttribute("data-live");
      if (!url) return;
      helix.live("live");
      helix.poll(url, 2000, function (d) {
        (d.sections || []).forEach(function (s) {
          (s.rows || []).forEach(function (row) {
            var tr = box.querySelector('tr[data-key="' + cssEscape(row.key) + '"]');
            if (!tr) return;
            Array.prototype.forEach.call(tr.querySelectorAll("[data-col]"), function (td) {
              var v = row[td.getAttribute("data-col")];
              if (v !== undefined && String(v) !== td.textContent) td.textContent = String(v);
            });
          });
        });
      });
    });
  }

  function cssEscape(s) {
    return window.CSS && CSS.escape ? CSS.escape(s) : String(s).replace(/["\\]/g, "\\$&");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", liveTables);
  } else {
    liveTables();
  }
})();
