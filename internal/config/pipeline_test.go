package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// specPipeline is §1's pipeline YAML as printed.
const specPipeline = `
workflows:
  - id: lookup-order
    description: "Look up an order by ID"
    trigger:
      uri: direct://lookup-order
    steps:
      - target: postgres://db:5432/orders?operation=query

pipelines:
  - id: doc-search
    source: file://./docs
    steps:
      - rag-chunk:
          strategy: semantic
      - rag-embed:
          provider: openai
      - rag-store:
          store: pgvector
      - rag-retrieve:
          strategy: hybrid
          top_k: 5
    output: text

mcps:
  - id: backend-tools
    addr: "0.0.0.0:3100"
    expose: [lookup-order, doc-search]
`

func TestPipelineSpecExample(t *testing.T) {
	cfg, errs := load(t, specPipeline)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(cfg.Pipelines) != 1 {
		t.Fatalf("pipelines = %d", len(cfg.Pipelines))
	}
	p := cfg.Pipelines[0]
	if p.ID != "doc-search" || p.Source == nil || p.Source.Dir != "./docs" || p.Output != "text" {
		t.Errorf("pipeline = %+v, source %+v", p, p.Source)
	}
	if p.Chunk.Strategy != "semantic" || p.Chunk.Size != DefaultChunkSize || p.Chunk.Unit != "tokens" {
		t.Errorf("chunk = %+v", p.Chunk)
	}
	if p.Embed == nil || p.Embed.Provider != "openai" {
		t.Errorf("embed = %+v", p.Embed)
	}
	if p.Store.Store != "pgvector" {
		t.Errorf("store = %+v", p.Store)
	}
	if p.Retrieve.Strategy != "hybrid" || p.Retrieve.TopK != 5 {
		t.Errorf("retrieve = %+v", p.Retrieve)
	}
	for _, w := range cfg.Warnings {
		if strings.Contains(w.Msg, "pipeline") {
			t.Errorf("unexpected warning: %v", w)
		}
	}
}

func TestPipelineDefaults(t *testing.T) {
	cfg, errs := load(t, `
pipelines:
  - id: notes
    source: {uri: "file://notes", include: ["**/*.md"], exclude: [drafts/*], text_field: body, title_field: name}
`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := cfg.Pipelines[0]
	if p.Chunk != (ChunkConfig{Strategy: "recursive", Size: 512, Overlap: 64, Unit: "tokens", Pos: p.Pos}) {
		t.Errorf("chunk = %+v", p.Chunk)
	}
	if p.Embed != nil || p.Store.Store != "embedded" || p.Retrieve.Strategy != "hybrid" || p.Retrieve.TopK != 5 || p.Output != "text" {
		t.Errorf("pipeline = %+v", p)
	}
	if p.Source.Dir != "notes" || p.Source.TextField != "body" || p.Source.TitleField != "name" || len(p.Source.Include) != 1 || p.Source.Exclude[0] != "drafts/*" {
		t.Errorf("source = %+v", p.Source)
	}
	if got := p.StorePath(""); got != filepath.Join(".helix", "rag", "notes") {
		t.Errorf("store path = %q", got)
	}
	var warned bool
	for _, w := range cfg.Warnings {
		if strings.Contains(w.Msg, "falls back to keyword") && w.Pos.Line == 3 {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no keyword fallback warning in %v", cfg.Warnings)
	}
}

func TestPipelineSourceQuery(t *testing.T) {
	cfg, errs := load(t, `
helix: {data_dir: /var/lib/helix}
pipelines:
  - id: kb
    source: "file:///srv/kb?include=*.md,*.txt&exclude=old/*&text_field=content&title_field=headline"
    steps:
      - rag-retrieve: {strategy: keyword}
`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s := cfg.Pipelines[0].Source
	if s.Dir != "/srv/kb" || len(s.Include) != 2 || s.Exclude[0] != "old/*" || s.TextField != "content" || s.TitleField != "headline" {
		t.Errorf("source = %+v", s)
	}
	if got := cfg.Pipelines[0].StorePath(cfg.Helix.DataDir); got != "/var/lib/helix/rag/kb" {
		t.Errorf("store path = %q", got)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
}

func TestPipelineErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"unknown step kind", `
pipelines:
  - id: p
    steps:
      - rag-chunks: {size: 100}
`, []string{`helix.yaml:5:9: pipelines[0].steps[0]: unknown key "rag-chunks" in a pipeline step (did you mean "rag-chunk"?)`}},
		{"wrong order", `
pipelines:
  - id: p
    steps:
      - rag-store: {store: embedded}
      - rag-chunk: {size: 100, overlap: 10}
`, []string{`helix.yaml:6:9: pipelines[0].steps[1]: rag-chunk must come before rag-store (a pipeline's steps go in this order: rag-chunk, rag-embed, rag-store, rag-retrieve, rag-rerank)`}},
		{"duplicate", `
pipelines:
  - id: p
    steps:
      - rag-chunk: {size: 100, overlap: 10}
      - rag-chunk: {size: 200, overlap: 10}
`, []string{`helix.yaml:6:9: pipelines[0].steps[1]: rag-chunk appears twice in the pipeline's steps (first at helix.yaml:5:9) (a pipeline has at most one step of each kind)`}},
		{"unknown key", `
pipelines:
  - id: p
    steps:
      - rag-retrieve: {strategy: keyword, topk: 3}
`, []string{`helix.yaml:5:43: pipelines[0].steps[0].rag-retrieve: unknown key "topk" in a rag-retrieve step (did you mean "top_k"?)`}},
		{"bad enum", `
pipelines:
  - id: p
    steps:
      - rag-store: {store: pgvektor}
`, []string{`helix.yaml:5:28: pipelines[0].steps[0].rag-store.store: unknown store "pgvektor" (did you mean "pgvector"?)`}},
		{"two kinds in one item", `
pipelines:
  - id: p
    steps:
      - rag-chunk: {size: 100, overlap: 10}
        rag-store: {}
`, []string{`helix.yaml:5:9: pipelines[0].steps[0]: a pipeline step has one kind; this item has rag-chunk and rag-store (write each as its own list item: - rag-chunk: {…})`}},
		{"semantic without embedder", `
pipelines:
  - id: p
    steps:
      - rag-chunk: {strategy: semantic}
      - rag-retrieve: {strategy: keyword}
`, []string{`helix.yaml:5:31: pipelines[0].steps[0].rag-chunk.strategy: chunk strategy semantic needs a rag-embed step (add - rag-embed: {provider: openai|onnx}, or use strategy recursive or fixed)`}},
		{"vector without embedder", `
pipelines:
  - id: p
    steps:
      - rag-retrieve: {strategy: vector}
`, []string{`helix.yaml:5:34: pipelines[0].steps[0].rag-retrieve.strategy: strategy vector needs a rag-embed step (add - rag-embed: {provider: openai} before rag-store, or use strategy keyword or hybrid)`}},
		{"overlap not below size", `
pipelines:
  - id: p
    steps:
      - rag-chunk: {size: 10, overlap: 10}
`, []string{`helix.yaml:5:40: pipelines[0].steps[0].rag-chunk.overlap: overlap 10 must be smaller than size 10`}},
		{"source not file", `
pipelines:
  - id: p
    source: http://example.com/docs
`, []string{`helix.yaml:4:13: pipelines[0].source: pipeline source "http://example.com/docs" is not a file:// URI (write source: file://./docs (a directory); to feed a pipeline from other endpoints, use a rag-ingest step in a workflow)`}},
		{"source option typo", `
pipelines:
  - id: p
    source: file://docs?includ=*.md
`, []string{`helix.yaml:4:13: pipelines[0].source: unknown source option "includ" (did you mean "include"?)`}},
		{"source option typo, title", `
pipelines:
  - id: p
    source: file://docs?titel_field=name
`, []string{`helix.yaml:4:13: pipelines[0].source: unknown source option "titel_field" (did you mean "title_field"?)`}},
		{"source key typo, title", `
pipelines:
  - id: p
    source: {uri: "file://docs", title_feld: name}
`, []string{`helix.yaml:4:34: pipelines[0].source: unknown key "title_feld" in a pipeline source (did you mean "title_field"?)`}},
		{"title and text from one field", `
pipelines:
  - id: p
    source: {uri: "file://docs", text_field: body, title_field: body}
`, []string{`helix.yaml:4:65: pipelines[0].source.title_field: text_field and title_field both name the field "body" (a record's text and its title come from different fields: set title_field to the field holding the title)`}},
		{"text from the title's default field", `
pipelines:
  - id: p
    source: {uri: "file://docs", text_field: title}
`, []string{`helix.yaml:4:46: pipelines[0].source.text_field: text_field and title_field both name the field "title" (a record's text and its title come from different fields: set title_field to the field holding the title)`}},
		{"title and text from one field, query", `
pipelines:
  - id: p
    source: file://docs?title_field=text
`, []string{`helix.yaml:4:13: pipelines[0].source: text_field and title_field both name the field "text" (a record's text and its title come from different fields: set title_field to the field holding the title)`}},
		{"onnx without model file", `
pipelines:
  - id: p
    steps:
      - rag-embed: {provider: onnx, model_path: /nonexistent/model.onnx}
`, []string{`helix.yaml:5:49: pipelines[0].steps[0].rag-embed.model_path: model_path "/nonexistent/model.onnx" is not a readable file (download the model (an ONNX sentence-embedding model such as all-MiniLM-L6-v2) and point model_path at its model.onnx)`}},
		{"openai key on onnx", `
pipelines:
  - id: p
    steps:
      - rag-embed: {provider: openai, model_path: m.onnx}
`, []string{`helix.yaml:5:51: pipelines[0].steps[0].rag-embed.model_path: model_path is only for provider onnx (this step has provider openai; remove model_path)`}},
		{"bad output", `
pipelines:
  - id: p
    output: jsn
`, []string{`helix.yaml:4:13: pipelines[0].output: unknown pipeline output "jsn" (did you mean "json"?)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := load(t, tc.src)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestPipelineSchemaDocumentsSteps(t *testing.T) {
	b, err := FileSchema(SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"rag-chunk"`, `"pgvector"`, `"top_k"`, `"text_field"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema lacks %s", want)
		}
	}
	_ = errors.New
}

func TestPipelineRetrieveLimits(t *testing.T) {
	cfg, errs := load(t, `
pipelines:
  - id: a
  - id: b
    steps:
      - rag-retrieve: {top_k: 500, max_top_k: 1000, max_result_bytes: 4096}
`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if r := cfg.Pipelines[0].Retrieve; r.MaxTopK != DefaultRetrieveMaxTopK || r.MaxResultBytes != DefaultRetrieveMaxResultBytes {
		t.Errorf("defaults: %+v", r)
	}
	if r := cfg.Pipelines[1].Retrieve; r.TopK != 500 || r.MaxTopK != 1000 || r.MaxResultBytes != 4096 {
		t.Errorf("set: %+v", r)
	}
	_, errs = load(t, `
pipelines:
  - id: c
    steps:
      - rag-retrieve: {top_k: 200}
`)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "top_k 200 is more than max_top_k 100") {
		t.Errorf("top_k above max_top_k: %v", errs)
	}
}
