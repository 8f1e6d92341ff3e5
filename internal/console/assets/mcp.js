// Helix console, MCP page: the try-it form streams its call. Without this
// script the form posts and the page comes back with the whole transcript;
// with it, each JSON-RPC message (request, progress, log, response) appears
// as it happens. Text only: nothing from the server becomes HTML.
"use strict";
(function () {
  var form = document.getElementById("tryit");
  var section = document.getElementById("transcript");
  if (!form || !section || !window.fetch || !window.TextDecoder) { return; }
  var list = section.querySelector("ol.wire");
  var outcome = section.querySelector("p.outcome");
  var button = form.querySelector("button[type=submit]");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function addEvent(ev) {
    var li = el("li", "wire-" + ev.kind);
    var head = el("p");
    head.appendChild(el("strong", "", ev.dir + " " + ev.kind));
    if (ev.status) { head.appendChild(document.createTextNode(" (HTTP " + ev.status + ")")); }
    head.appendChild(document.createTextNode(" "));
    head.appendChild(el("span", "muted", "at " + ev.at));
    li.appendChild(head);
    if (ev.headers) { li.appendChild(el("pre", "headers", ev.headers)); }
    li.appendChild(el("pre", "", ev.text));
    list.appendChild(li);
  }

  function showOutcome(o) {
    outcome.textContent = "";
    outcome.appendChild(document.createTextNode("Status: "));
    outcome.appendChild(el("strong", "", o.Status));
    outcome.appendChild(document.createTextNode(" in " + (o.Elapsed / 1e6).toFixed(1) + "ms"));
    var old = section.querySelector("pre.result");
    if (old) { old.previousElementSibling.remove(); old.remove(); }
    if (o.Result) {
      var h = el("h3", "", "Result");
      var pre = el("pre", "result", o.Result);
      outcome.after(h, pre);
    }
  }

  function showError(msg) {
    outcome.textContent = "";
    outcome.appendChild(el("strong", "", "Error: " + msg));
  }

  // dispatch handles one server-sent event block.
  function dispatch(block) {
    var name = "message", data = [];
    block.split("\n").forEach(function (line) {
      if (line.indexOf("event:") === 0) { name = line.slice(6).trim(); }
      else if (line.indexOf("data:") === 0) { data.push(line.slice(5).replace(/^ /, "")); }
    });
    if (!data.length) { return; }
    var v = JSON.parse(data.join("\n"));
    if (name === "event") { addEvent(v); } else if (name === "outcome") { showOutcome(v); }
  }

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    section.hidden = false;
    list.textContent = "";
    outcome.textContent = "Calling…";
    button.disabled = true;
    var body = new URLSearchParams(new FormData(form));
    fetch(form.action, { method: "POST", body: body, credentials: "same-origin",
      headers: { "Accept": "text/event-stream" } })
      .then(function (resp) {
        var type = resp.headers.get("Content-Type") || "";
        if (type.indexOf("text/event-stream") !== 0) {
          return resp.text().then(function (t) {
            var msg = t;
            try { msg = JSON.parse(t).error || t; } catch (ignored) { /* plain text */ }
            showError(msg + " (HTTP " + resp.status + ")");
          });
        }
        var reader = resp.body.getReader(), dec = new TextDecoder(), buf = "";
        function pump() {
          return reader.read().then(function (r) {
            if (r.done) { if (buf.trim()) { dispatch(buf); } return; }
            buf += dec.decode(r.value, { stream: true });
            var i;
            while ((i = buf.indexOf("\n\n")) >= 0) {
              dispatch(buf.slice(0, i));
              buf = buf.slice(i + 2);
            }
            return pump();
          });
        }
        return pump();
      })
      .catch(function (err) { showError(String(err)); })
      .finally(function () { button.disabled = false; });
  });
})();
