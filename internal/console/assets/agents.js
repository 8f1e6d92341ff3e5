// Agents page: follows a run in progress. The server renders the transcript
// (html/template) and sends it whole as a "transcript" event; this script only
// puts it in place, and stops at "end". Without JavaScript the page shows the
// transcript as it was when loaded (reload for more).
"use strict";
(function () {
  var box = document.getElementById("transcript");
  if (!box || !box.dataset.agentsLive) {
    return;
  }
  var url = box.dataset.agentsLive;
  var stream = null;
  function onEvent(name, data) {
    if (name === "transcript") {
      box.innerHTML = data;
    } else if (name === "end") {
      box.dataset.agentsLive = "";
      stream.close();
    }
  }
  if (window.helix && window.helix.sse) {
    // The frame's helper: reconnects with backoff and keeps the live
    // indicator in words.
    stream = window.helix.sse(url, onEvent).on("transcript").on("end");
    return;
  }
  if (typeof EventSource === "undefined") {
    return;
  }
  var es = new EventSource(url);
  stream = es;
  es.addEventListener("transcript", function (e) { onEvent("transcript", e.data); });
  es.addEventListener("end", function (e) { onEvent("end", e.data); });
  es.onerror = function () { es.close(); };
})();
