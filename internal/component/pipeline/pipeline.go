// Package pipeline implements pipeline://id: the implicit trigger of the RAG
// pipelines (entries of `pipelines:`) and the target that queries one on the
// caller's exchange (the body is the query, text or {query, top_k, filter}; the
// results become the body). The component itself is
// internal/component/implicit, shared with agent://; this package names the
// scheme and its spec.
package pipeline

import (
	"github.com/arvenza/helix/internal/component/implicit"
	"github.com/arvenza/helix/pkg/engine"
)

// Scheme is the component's scheme.
const Scheme = "pipeline"

// Component is the pipeline:// component of one engine context.
type Component = implicit.Component

// New returns the pipeline component bound to hc; it knows no pipeline until the
// application declares them.
func New(hc *engine.Context) *Component {
	return implicit.New(hc, implicit.Kind{
		Scheme: Scheme, Noun: "pipeline", Kind: engine.KindPipeline, Section: "pipelines:", Example: "doc-search",
		Instead: "query the pipeline with target: pipeline://%[1]s or a rag-retrieve step, or feed it with a rag-ingest step",
		Spec:    Spec,
	})
}
