// Package allsteps lists the packages that define step kinds outside
// internal/step, one import each, so that a program importing it (pkg/app) has
// every step kind, while internal/step itself depends on no module. A module's
// step kinds register themselves with step.Define in the init of their package;
// adding them to Helix is one line here.
package allsteps

import (
	_ "github.com/arvenza/helix/internal/rag/ragstep" // rag-retrieve, rag-ingest, rag-chunk, rag-embed, rag-store
)
