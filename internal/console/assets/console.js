// Helix console: a small amount of plain JavaScript; every page works without it,
// except the live parts (feeds, the try-it form).
"use strict";
