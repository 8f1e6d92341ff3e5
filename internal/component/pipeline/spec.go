package pipeline

import "github.com/arvenza/helix/pkg/component"

// Spec is the pipeline:// component's description.
var Spec = &component.Spec{
	Scheme:    "pipeline",
	Summary:   "a pipelines: entry (RAG retrieval), queried with the exchange's body",
	Direction: component.Both,
	Syntax:    "pipeline://id",
	Description: `Every entry under pipelines: has the implicit trigger pipeline://id, through which MCP
servers, agents and rag-retrieve steps query it; a workflow cannot use pipeline:// as its
trigger. As a target, pipeline://id queries the pipeline with the caller's exchange: the body
is the query (text, or a JSON object {query, top_k, filter}) and the results become the body,
in the pipeline's output: text (numbered sources with their text, to cite) or json ({query,
results: [{rank, score, text, source, doc_id, chunk_id, headings, metadata}]}). To add
documents to a pipeline, use a rag-ingest step.`,
	Path: []component.PathPart{
		{Name: "id", Required: true, Description: "the id of the pipelines: entry"},
	},
	Examples: []component.Example{
		{URI: "pipeline://doc-search", Description: "query the pipeline doc-search with the body as the query"},
	},
	Since: "0.1",
}
