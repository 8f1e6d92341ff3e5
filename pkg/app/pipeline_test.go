package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/rag/pipeline/pipelinetest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// docsDir writes a small documentation tree.
func docsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"install.md":     "# Install\n\nDownload the tarball and run ./install.sh as root. Then reboot the server.\n",
		"billing.md":     "# Billing\n\nInvoices are emailed on the first day of each month.\n",
		"guide/kafka.md": "# Kafka\n\nConsumers commit their offsets after each batch.\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func waitIngest(t *testing.T, a *app.App, id string) {
	t.Helper()
	p, ok := a.Pipeline(id)
	if !ok {
		t.Fatalf("no pipeline %s", id)
	}
	select {
	case <-p.IngestDone():
	case <-time.After(testtools.StartupBound):
		t.Fatalf("pipeline %s: ingest did not finish", id)
	}
}

func buildStart(t *testing.T, yaml string, opts app.Options) *app.App {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return startBuilt(t, a)
}

// Helix's own parts, no service at all: the embedded store, no embedder (hybrid
// falls back to keyword), a background ingest of a directory; an MCP client gets
// numbered, cited passages, and json from a json pipeline.
func TestPipelineOverMCPWithoutAnyService(t *testing.T) {
	t.Parallel()
	docs, data := docsDir(t), t.TempDir()
	a := buildStart(t, `
helix: {data_dir: "`+data+`"}
pipelines:
  - id: doc-search
    description: "Search the product documentation"
    source: file://`+docs+`
    steps:
      - rag-store: {store: embedded}
      - rag-retrieve: {strategy: hybrid, top_k: 2}
    output: text
  - id: doc-json
    source: {uri: "file://`+docs+`", include: ["**/*.md"]}
    output: json
mcps:
  - id: kb
    addr: "127.0.0.1:0"
    expose: [doc-search, doc-json]
`, quiet)
	waitIngest(t, a, "doc-search")
	waitIngest(t, a, "doc-json")
	cs := mcpSession(t, a, "kb")
	tools, err := cs.ListTools(callCtx(t), nil)
	if err != nil || len(tools.Tools) != 2 {
		t.Fatalf("tools %+v, %v", tools, err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "doc-search" {
			b, _ := json.Marshal(tl.InputSchema)
			if !strings.Contains(string(b), `"query"`) || !strings.Contains(string(b), `"top_k"`) || tl.Description != "Search the product documentation" {
				t.Errorf("tool %s: %s %q", tl.Name, b, tl.Description)
			}
		}
	}
	res, err := cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "doc-search", Arguments: map[string]any{"query": "how do I install it and reboot"}})
	if err != nil || res.IsError {
		t.Fatalf("doc-search: %v %+v", err, res)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !strings.HasPrefix(text, "[1] install.md (Install)\n") || !strings.Contains(text, "install.sh") {
		t.Errorf("answer:\n%s", text)
	}
	res, err = cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "doc-json", Arguments: map[string]any{"query": "kafka offsets", "top_k": 1}})
	if err != nil || res.IsError {
		t.Fatalf("doc-json: %v %+v", err, res)
	}
	var out struct {
		Query   string
		Results []struct {
			Rank     int
			Source   string
			DocID    string `json:"doc_id"`
			Text     string
			Headings []string
		}
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	if out.Query != "kafka offsets" || len(out.Results) != 1 || out.Results[0].DocID != "file:guide/kafka.md" || out.Results[0].Rank != 1 {
		t.Errorf("json = %+v", out)
	}
	// An empty query is the caller's mistake, answered as a tool error.
	res, err = cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "doc-search", Arguments: map[string]any{"query": " "}})
	if err != nil || !res.IsError {
		t.Errorf("empty query: %v %+v", err, res)
	}

	resp, err := http.Get("http://" + a.ManagementAddr() + management.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`helix_rag_documents_ingested_total{pipeline="doc-search"} 3`,
		`helix_rag_chunks{pipeline="doc-search"} 3`,
		`helix_rag_ingest_errors_total{pipeline="doc-search"} 0`,
		`helix_rag_queries_total{pipeline="doc-search"} 2`,
		`helix_rag_queries_total{pipeline="doc-json"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	m := a.Manifest()
	if len(m.Pipelines) != 2 || m.Pipelines[0].ID != "doc-search" || m.Pipelines[0].Retrieval != "keyword" || !m.Pipelines[0].Ingest.Done ||
		m.Pipelines[0].Ingest.Ingested != 3 || m.Pipelines[0].Store != "embedded" {
		t.Errorf("manifest pipelines = %+v", m.Pipelines)
	}
	if _, err := os.Stat(filepath.Join(data, "rag", "doc-search")); err != nil {
		t.Errorf("store directory: %v", err)
	}
}

// A pipeline:// target and the rag-retrieve step query a pipeline from a
// workflow; a rag-ingest step feeds it, and what it put is found.
func TestPipelineFromWorkflows(t *testing.T) {
	t.Parallel()
	kit := pipelinetest.New()
	opts := quiet
	opts.RAGParts = kit.Parts()
	a := buildStart(t, `
pipelines:
  - id: tickets
workflows:
  - id: add-ticket
    trigger: direct://add-ticket
    steps:
      - rag-ingest: {pipeline: tickets, id: "ticket-${header.Ticket}", source: "helpdesk"}
  - id: ask
    trigger: direct://ask
    steps:
      - target: pipeline://tickets
  - id: ask-json
    trigger: direct://ask-json
    steps:
      - rag-retrieve: {pipeline: tickets, top_k: 1, filter: {team: ops}}
`, opts)
	ctx := callCtx(t)
	send := func(uri string, body any, headers map[string]any) *exchange.Exchange {
		t.Helper()
		ex := exchange.NewWithBody(exchange.InOut, body)
		for k, v := range headers {
			ex.In().SetHeader(k, v)
		}
		if err := a.Context().Send(ctx, uri, ex); err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		return ex
	}
	ex := send("direct://add-ticket", "The printer on floor 3 is on fire.", map[string]any{"Ticket": "7"})
	if got, _ := json.Marshal(ex.In().Body()); string(got) != `{"chunks":1,"ingested":1,"skipped":0}` {
		t.Errorf("rag-ingest body = %s", got)
	}
	send("direct://add-ticket", map[string]any{"id": "ticket-8", "text": "The ops printer needs toner.", "team": "ops"}, nil)
	ex = send("direct://add-ticket", "The printer on floor 3 is on fire.", map[string]any{"Ticket": "7"})
	if got, _ := json.Marshal(ex.In().Body()); string(got) != `{"chunks":0,"ingested":0,"skipped":1}` {
		t.Errorf("re-ingest body = %s", got)
	}

	ex = send("direct://ask", "printer fire", nil)
	if got := exchange.Stringify(ex.In().Body()); !strings.HasPrefix(got, "[1] helpdesk\nThe printer on floor 3 is on fire.") {
		t.Errorf("pipeline:// answer:\n%s", got)
	}
	ex = send("direct://ask-json", map[string]any{"query": "printer"}, nil)
	b, _ := json.Marshal(ex.In().Body())
	var out struct {
		Results []struct {
			DocID string `json:"doc_id"`
		}
	}
	_ = json.Unmarshal(b, &out)
	if len(out.Results) != 1 || out.Results[0].DocID != "ticket-8" {
		t.Errorf("rag-retrieve (filter team=ops) = %s", b)
	}
	if kit.Puts.Load() != 2 {
		t.Errorf("%d store writes, want 2 (the unchanged ticket is skipped)", kit.Puts.Load())
	}
}

// Restarting the application re-ingests only what changed: unchanged files are
// skipped (no embedding, no write), a changed one replaced, a deleted one removed.
func TestPipelineIncrementalAcrossRestarts(t *testing.T) {
	t.Parallel()
	docs, data := docsDir(t), t.TempDir()
	kit := pipelinetest.New()
	opts := quiet
	opts.RAGParts = kit.Parts()
	yaml := `
helix: {data_dir: "` + data + `"}
pipelines:
  - id: docs
    source: file://` + docs + `
    steps:
      - rag-embed: {provider: openai, model: fake}
`
	run := func() {
		cfg, err := config.LoadBytes("helix.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		a, err := app.Build(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitIngest(t, a, "docs")
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if kit.EmbedCalls.Load() != 3 || kit.Puts.Load() != 3 {
		t.Fatalf("first run: %d embeds, %d puts", kit.EmbedCalls.Load(), kit.Puts.Load())
	}
	if err := os.WriteFile(filepath.Join(docs, "billing.md"), []byte("# Billing\n\nInvoices are emailed weekly.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(docs, "guide", "kafka.md")); err != nil {
		t.Fatal(err)
	}
	run()
	if e, p := kit.EmbedCalls.Load(), kit.Puts.Load(); e != 4 || p != 4 {
		t.Errorf("second run: %d embeds, %d puts in all; want 4 and 4 (only the changed file)", e, p)
	}
	st := kit.Store(filepath.Join(data, "rag", "docs"))
	got, _ := st.Documents(context.Background())
	if _, ok := got["file:guide/kafka.md"]; ok || len(got) != 2 {
		t.Errorf("stored documents = %v", got)
	}
}

// fakeEmbeddings is an OpenAI-compatible embeddings endpoint (the real wire
// format): it counts the texts embedded.
func fakeEmbeddings(t *testing.T, texts *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		var req struct {
			Input          []string `json:"input"`
			Model          string   `json:"model"`
			EncodingFormat string   `json:"encoding_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		texts.Add(int64(len(req.Input)))
		emb := &pipelinetest.Embedder{}
		vecs, _ := emb.Embed(r.Context(), req.Input, 0)
		data := make([]map[string]any, len(vecs))
		for i, v := range vecs {
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
			"usage": map[string]any{"prompt_tokens": 1, "total_tokens": 1}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// specPipelineYAML is §1 "MCP Server Exposing Routes and Pipelines" as printed.
const specPipelineYAML = `
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

// §1's pipeline as printed validates (pgvector is only reached at Start); with
// store: embedded it runs against an OpenAI-compatible embeddings server, and an
// MCP client of backend-tools gets cited passages.
func TestSpecPipelineExample(t *testing.T) {
	spec := specPipelineYAML
	cfg, err := config.LoadBytes("spec.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Validate(cfg); err != nil {
		t.Fatalf("§1 as printed: %v", err)
	}

	var texts atomic.Int64
	srv := fakeEmbeddings(t, &texts)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	docs, data := docsDir(t), t.TempDir()
	runnable := strings.NewReplacer("store: pgvector", "store: embedded", "file://./docs", "file://"+docs,
		`addr: "0.0.0.0:3100"`, `addr: "127.0.0.1:0"`).Replace(spec) + "\nhelix: {data_dir: \"" + data + "\"}\n"
	a := buildStart(t, runnable, quiet)
	waitIngest(t, a, "doc-search")
	if p, _ := a.Pipeline("doc-search"); p.Progress().Ingested != 3 || p.Progress().Errors != 0 {
		t.Fatalf("ingest = %+v", p.Progress())
	}
	cs := mcpSession(t, a, "backend-tools")
	res, err := cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "doc-search", Arguments: map[string]any{"query": "reboot the server after install"}})
	if err != nil || res.IsError {
		t.Fatalf("doc-search: %v %+v", err, res)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.HasPrefix(text, "[1] ") || !strings.Contains(text, "install.sh") {
		t.Errorf("answer:\n%s", text)
	}
	if texts.Load() == 0 {
		t.Error("the embeddings server was never called")
	}
}

func TestPipelineBuildErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, want string }{
		{"chunk step in a workflow", `
workflows:
  - id: w
    trigger: direct://w
    steps:
      - rag-chunk: {size: 100}
`, "helix.yaml:6:9: workflows[0].steps[0]: rag-chunk is only valid in the steps of a pipelines: entry"},
		{"unknown pipeline", `
pipelines:
  - id: doc-search
workflows:
  - id: w
    trigger: direct://w
    steps:
      - rag-retrieve: {pipeline: doc-serch}
`, `helix.yaml:8:34: workflows[0].steps[0].pipeline: no pipeline with id "doc-serch" (did you mean "doc-search"?)`},
		{"pipeline trigger", `
pipelines:
  - id: p
workflows:
  - id: w
    trigger: pipeline://p
`, "implicit trigger of the pipeline p"},
		{"unknown target", `
pipelines:
  - id: p
workflows:
  - id: w
    trigger: direct://w
    steps:
      - target: pipeline://q
`, `no pipeline with id "q"`},
		{"vector step without embedder", `
pipelines:
  - id: p
workflows:
  - id: w
    trigger: direct://w
    steps:
      - rag-retrieve: {pipeline: p, strategy: vector}
`, `pipeline "p" has no rag-embed step`},
		{"shared store", `
pipelines:
  - id: a
    steps:
      - rag-store: {path: /tmp/kb}
  - id: b
    steps:
      - rag-store: {path: /tmp/kb/}
`, `helix.yaml:8:9: pipelines[1]: pipeline "b" uses the embedded store /tmp/kb, like pipeline "a" (two pipelines cannot share a store: give each its own path (embedded) or table (pgvector))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := loadErrors(t, tc.src)
			if !strings.Contains(errs.Error(), tc.want) {
				t.Errorf("errors:\n%v\nwant %q", errs, tc.want)
			}
		})
	}
}

// §1's pipeline as printed, on PostgreSQL with pgvector (DATABASE_URL, as the
// YAML names no dsn) and an OpenAI-compatible embeddings server: semantic
// chunks, embeddings and the keyword side in SQL; an MCP client gets cited
// passages. A restart re-embeds nothing.
func TestSpecPipelineOnPgvector(t *testing.T) {
	db := testtools.PostgresDatabase(t)
	t.Setenv("DATABASE_URL", db)
	var texts atomic.Int64
	srv := fakeEmbeddings(t, &texts)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	docs := docsDir(t)
	yaml := strings.NewReplacer("file://./docs", "file://"+docs, `addr: "0.0.0.0:3100"`, `addr: "127.0.0.1:0"`).Replace(specPipelineYAML)
	start := func() *app.App {
		cfg, err := config.LoadBytes("spec.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		a, err := app.Build(cfg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitIngest(t, a, "doc-search")
		return a
	}
	a := start()
	if p, _ := a.Pipeline("doc-search"); p.Progress().Ingested != 3 || p.Progress().Errors != 0 {
		t.Fatalf("ingest = %+v", p.Progress())
	}
	cs := mcpSession(t, a, "backend-tools")
	res, err := cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "doc-search", Arguments: map[string]any{"query": "reboot the server after install"}})
	if err != nil || res.IsError {
		t.Fatalf("doc-search: %v %+v", err, res)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.HasPrefix(text, "[1] install.md") || !strings.Contains(text, "install.sh") {
		t.Errorf("answer:\n%s", text)
	}
	_ = cs.Close()
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	embedded := texts.Load()
	a = start()
	defer a.Stop(context.Background())
	if p, _ := a.Pipeline("doc-search"); p.Progress().Skipped != 3 || p.Progress().Ingested != 0 {
		t.Errorf("restart ingest = %+v", p.Progress())
	}
	if texts.Load() != embedded {
		t.Errorf("the restart embedded %d texts", texts.Load()-embedded)
	}
}

// An agent calls a pipeline as a tool (type: pipeline, or by id alone; the model sees
// doc_search, a name its API accepts), and a tools:
// entry answers from a rag-retrieve step: the model reads numbered passages and
// cites them.
func TestPipelineAsAgentTool(t *testing.T) {
	t.Parallel()
	docs, data := docsDir(t), t.TempDir()
	fake := agenttest.NewOpenAIFunc(t, func(req agenttest.Request) agenttest.Reply {
		if len(req.ToolResults) == 0 {
			if !slices.Contains(req.Tools, "doc_search") || !slices.Contains(req.Tools, "search_kb") {
				t.Errorf("tools offered: %v", req.Tools)
			}
			return agenttest.Reply{Calls: []agenttest.Call{
				{ID: "c1", Name: "doc_search", Args: `{"query":"install reboot","top_k":1}`},
				{ID: "c2", Name: "search_kb", Args: `{"question":"invoices"}`},
			}}
		}
		return agenttest.Reply{Text: req.ToolResults[0].Text + "||" + req.ToolResults[1].Text}
	})
	a := buildStart(t, agentYAML(`
helix: {data_dir: "`+data+`"}
pipelines:
  - id: doc-search
    source: file://`+docs+`
tools:
  - id: search_kb
    description: "Search the knowledge base"
    input:
      question: {type: string, required: true}
    output:
      results: {type: array}
      query: {type: string}
    steps:
      - rag-retrieve: {pipeline: doc-search, query: "${body.question}", top_k: 1}
agents:
  - id: helper
    model: {provider: openai, model: gpt-4o, api_key: k, base_url: FAKE_URL}
    tools: [{name: doc-search, type: pipeline}, search_kb]
`, fake), quiet)
	waitIngest(t, a, "doc-search")
	ex := exchange.NewWithBody(exchange.InOut, "How do I install?")
	if err := a.Context().Send(callCtx(t), "agent://helper", ex); err != nil {
		t.Fatal(err)
	}
	answer := exchange.Stringify(ex.In().Body())
	parts := strings.SplitN(answer, "||", 2)
	if len(parts) != 2 || !strings.HasPrefix(parts[0], "[1] install.md") || !strings.Contains(parts[1], `"doc_id":"file:billing.md"`) {
		t.Errorf("answer:\n%s", answer)
	}
}

// type: pipeline on an id that is a workflow is refused, naming what it is.
func TestAgentPipelineToolTypeChecked(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAI(t)
	_, err := buildYAML(t, agentYAML(`
workflows:
  - id: lookup
    trigger: direct://lookup
    steps:
      - set-body: "x"
agents:
  - id: support
    model: {provider: openai, model: gpt-4o, api_key: k, base_url: FAKE_URL}
    tools:
      - {name: lookup, type: pipeline}
`, fake))
	if err == nil || !strings.Contains(err.Error(), `tool "lookup" is a workflow, not a pipeline`) {
		t.Fatalf("err = %v", err)
	}
}
