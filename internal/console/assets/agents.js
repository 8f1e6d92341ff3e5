// Agents page: follows a run in progress. The server renders the transcript
// (html/template) and sends it whole as a "transcript" event; this script only
// puts it in place, and stops at "end". Without JavaScript the page shows the
// transcript as it was when loaded (reload for more).
"use strict";
(function () {
  var box = document.getElementById("transcript");
  if (!box || !box.dataset.live || typeof EventSource === "undefined") {
    return;
  }
  var src = new EventSource(box.dataset.live);
  src.addEventListener("transcript", function (e) {
    box.innerHTML = e.data;
  });
  src.addEventListener("end", function () {
    src.close();
    box.dataset.live = "";
  });
  src.onerror = function () {
    // The run is gone or the console stopped: stay with what is shown.
    src.close();
  };
})();
