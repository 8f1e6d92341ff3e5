package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPipelineRerankDecoded(t *testing.T) {
	t.Setenv("RERANK_TEST_KEY", "k-123")
	cfg, errs := load(t, `
pipelines:
  - id: p
    steps:
      - rag-retrieve: {top_k: 3}
      - rag-rerank:
          provider: http
          url: http://127.0.0.1:8080/rerank
          format: tei
          api_key: ${env:RERANK_TEST_KEY}
          timeout: 2s
          retries: 0
          candidates: 20
          on_error: keep-order
`)
	if errs != nil {
		t.Fatal(errs)
	}
	r := cfg.Pipelines[0].Rerank
	if r == nil {
		t.Fatal("no Rerank")
	}
	if r.Provider != "http" || r.URL != "http://127.0.0.1:8080/rerank" || r.Format != "tei" || r.APIKey != "k-123" ||
		r.Timeout != 2*time.Second || r.Retries == nil || *r.Retries != 0 || r.Candidates != 20 || r.OnError != "keep-order" {
		t.Errorf("%+v", r)
	}
	if r.Pos.Line != 6 {
		t.Errorf("pos %v", r.Pos)
	}
	// Defaults.
	cfg, errs = load(t, `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http, url: "https://api.example.com/v2/rerank"}
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if r := cfg.Pipelines[0].Rerank; r.Candidates != DefaultRerankCandidates || r.OnError != "fail" || r.Format != "cohere" || r.Retries != nil {
		t.Errorf("defaults %+v", r)
	}
	if cfg, _ := load(t, "pipelines:\n  - id: p\n"); cfg.Pipelines[0].Rerank != nil {
		t.Error("a pipeline without rag-rerank has a reranker")
	}
}

func TestPipelineRerankOnnxTokenizerDefault(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.onnx")
	os.WriteFile(model, []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644)
	cfg, errs := load(t, "pipelines:\n  - id: p\n    steps:\n      - rag-rerank: {provider: onnx, model_path: "+model+"}\n")
	if errs != nil {
		t.Fatal(errs)
	}
	if r := cfg.Pipelines[0].Rerank; r.TokenizerPath != filepath.Join(dir, "tokenizer.json") {
		t.Errorf("tokenizer %q", r.TokenizerPath)
	}
}

func TestPipelineRerankErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"after retrieve", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http, url: "http://x/rerank"}
      - rag-retrieve: {top_k: 3}
`, `helix.yaml:6:9: pipelines[0].steps[1]: rag-retrieve must come before rag-rerank`},
		{"no provider", `
pipelines:
  - id: p
    steps:
      - rag-rerank:
`, `helix.yaml:5:20: pipelines[0].steps[0].rag-rerank: a rag-rerank step is missing required key "provider"`},
		{"provider typo", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: htp, url: "http://x"}
`, `helix.yaml:5:32: pipelines[0].steps[0].rag-rerank.provider: unknown rerank provider "htp" (did you mean "http"?)`},
		{"http without url", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http}
`, `helix.yaml:5:21: pipelines[0].steps[0].rag-rerank: provider http needs url (the rerank endpoint)`},
		{"url not http", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http, url: "ftp://x/rerank"}
`, `helix.yaml:5:43: pipelines[0].steps[0].rag-rerank.url: url "ftp://x/rerank" is not an http:// or https:// URL`},
		{"onnx key on http", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http, url: "http://x", model_path: m.onnx}
`, `helix.yaml:5:67: pipelines[0].steps[0].rag-rerank.model_path: model_path is only for provider onnx (this step has provider http; remove model_path)`},
		{"onnx without model file", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: onnx, model_path: /nonexistent/model.onnx}
`, `helix.yaml:5:50: pipelines[0].steps[0].rag-rerank.model_path: model_path "/nonexistent/model.onnx" is not a readable file`},
		{"candidates bound", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http, url: "http://x", candidates: 100000}
`, `pipelines[0].steps[0].rag-rerank.candidates`},
		{"on_error typo", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http, url: "http://x", on_error: keep}
`, `rerank on_error "keep"`},
		{"top_k is the query's in a pipeline", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http, url: "http://x", top_k: 3}
`, `unknown key "top_k"`},
		{"twice", `
pipelines:
  - id: p
    steps:
      - rag-rerank: {provider: http, url: "http://x"}
      - rag-rerank: {provider: http, url: "http://x"}
`, `rag-rerank appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := load(t, tc.src)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("errors:\n%s\nwant one with:\n%s", strings.Join(got, "\n"), tc.want)
			}
		})
	}
}
