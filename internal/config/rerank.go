package config

import (
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
)

// The rag-rerank step: as the last step of a pipeline (its queries are
// reranked) and as a workflow step after rag-retrieve (internal/rag/ragstep
// adds the workflow's keys to [RerankStepShape]). One declaration, one decoder
// ([RerankFromValues]) for both.

// RAGRerank is the rag-rerank step kind.
const RAGRerank = "rag-rerank"

// Rerank enums and defaults.
var (
	RerankProviders = []string{"onnx", "http"}
	RerankFormats   = []string{"cohere", "jina", "tei"}
	RerankOnError   = []string{"fail", "keep-order"}
)

const (
	DefaultRerankCandidates = 50
	// MaxRerankCandidates bounds the passages one query sends through the
	// model: each costs a model run (or part of a request).
	MaxRerankCandidates  = 1000
	DefaultRerankOnError = "fail"
)

// RerankConfig is a rag-rerank step.
type RerankConfig struct {
	Provider string // onnx | http
	// onnx
	ModelPath     string
	TokenizerPath string
	LibraryPath   string
	MaxLength     int // 0: the provider's
	// http
	URL     string
	Format  string // cohere | jina | tei
	Model   string
	APIKey  string
	Timeout time.Duration // 0: the provider's
	// Retries is how many times a failed request is retried; nil: the
	// provider's default.
	Retries *int
	// both
	BatchSize  int // 0: the provider's
	Candidates int
	// TopK is how many reranked passages a workflow step keeps (0 in a
	// pipeline, where the query's top_k is).
	TopK    int
	OnError string // fail | keep-order
	Pos     Pos
}

var ragRerankShape = Shape{Type: TypeObject, What: "a rag-rerank step",
	Description: "Reorders the best candidates of a retrieval with a model that reads the query and each passage together (a cross-encoder): onnx (a local model) or http (a rerank endpoint). A passage's score becomes the reranker's.",
	Keys: []Key{
		{Name: "provider", Required: true, Shape: Shape{Type: TypeString, What: "rerank provider", Enum: RerankProviders,
			Description: "onnx (a cross-encoder run locally by ONNX Runtime) or http (an endpoint speaking Cohere's, Jina's or TEI's rerank format)."}},
		{Name: "candidates", Shape: Shape{Type: TypeInt, Min: Bound(1), Max: Bound(MaxRerankCandidates), Default: DefaultRerankCandidates,
			Description: "How many of the retrieval's best passages are reranked (each costs a model run); the others are dropped."}},
		{Name: "on_error", Shape: Shape{Type: TypeString, What: "rerank on_error", Enum: RerankOnError, Default: DefaultRerankOnError,
			Description: "fail (the query fails with the reranker's error) or keep-order (the retrieval's order is kept and the error logged)."}},
		{Name: "batch_size", Shape: Shape{Type: TypeInt, Min: Bound(1), Description: "Passages per model run (onnx, default 16) or per request (http, default 32)."}},
		{Name: "model_path", Shape: str("onnx: the cross-encoder's model file (model.onnx).")},
		{Name: "tokenizer_path", Shape: str("onnx: the tokenizer.json. Default: tokenizer.json next to model_path.")},
		{Name: "library_path", Shape: str("onnx: the ONNX Runtime shared library (libonnxruntime.so.1). Default: HELIX_ONNXRUNTIME_LIB, else the loader's search path.")},
		{Name: "max_length", Shape: Shape{Type: TypeInt, Min: Bound(3), Max: Bound(8192),
			Description: "onnx: the most tokens of a query and passage together; the longer is cut first. Default 512."}},
		{Name: "url", Shape: str("http: the rerank endpoint's full URL (such as https://api.cohere.com/v2/rerank or http://localhost:8080/rerank).")},
		{Name: "format", Shape: Shape{Type: TypeString, What: "rerank format", Enum: RerankFormats, Default: "cohere",
			Description: "http: the wire format: cohere and jina ({model, query, documents, top_n} → {results: [{index, relevance_score}]}) or tei ({query, texts} → [{index, score}])."}},
		{Name: "model", Shape: str("http: the model to ask for (cohere, jina); TEI serves one and takes none.")},
		{Name: "api_key", Shape: str("http: sent as Authorization: Bearer; write it as ${env:NAME}.")},
		{Name: "timeout", Shape: Shape{Type: TypeDuration, Description: "http: bound of each request. Default 30s."}},
		{Name: "retries", Shape: Shape{Type: TypeInt, Min: Bound(0), Max: Bound(10),
			Description: "http: retries of a request answered 429 or 5xx, or not answered, with a growing wait (or what Retry-After asks, at most 30s). Default 3."}},
	}}

// RerankStepShape returns the shape of a rag-rerank step's reranker keys.
// Callers must not modify the shapes it holds.
func RerankStepShape() Shape { return ragRerankShape }

// RerankFromValues reads a rag-rerank step decoded with [RerankStepShape] (or
// a shape extending it), checking what the shape cannot: the keys of the other
// provider, the model file, the URL.
// at (and path) is the step's key, where an empty step is reported.
func RerankFromValues(d *Decoder, s *Values, at *yaml.Node, path string) *RerankConfig {
	rc := &RerankConfig{Pos: d.Pos(at), Candidates: DefaultRerankCandidates, OnError: DefaultRerankOnError}
	if s == nil {
		d.Errorf(at, path, "rag-rerank needs a provider").Hint = "write rag-rerank: {provider: onnx, model_path: …} or {provider: http, url: …}"
		return rc
	}
	rc.Provider, rc.Candidates, rc.OnError, rc.BatchSize = s.String("provider"), s.Int("candidates"), s.String("on_error"), s.Int("batch_size")
	rc.ModelPath, rc.TokenizerPath, rc.LibraryPath, rc.MaxLength = s.String("model_path"), s.String("tokenizer_path"), s.String("library_path"), s.Int("max_length")
	rc.URL, rc.Format, rc.Model, rc.APIKey, rc.Timeout = s.String("url"), s.String("format"), s.String("model"), s.String("api_key"), s.Duration("timeout")
	if s.Has("retries") {
		n := s.Int("retries")
		rc.Retries = &n
	}
	onlyFor := func(provider string, keys ...string) {
		for _, k := range keys {
			if s.Has(k) && rc.Provider != provider && slices.Contains(RerankProviders, rc.Provider) {
				d.Errorf(s.NodeOf(k), s.PathOf(k), "%s is only for provider %s", k, provider).Hint = "this step has provider " + rc.Provider + "; remove " + k
			}
		}
	}
	onlyFor("onnx", "model_path", "tokenizer_path", "library_path", "max_length")
	onlyFor("http", "url", "format", "model", "api_key", "timeout", "retries")
	switch rc.Provider {
	case "onnx":
		if rc.ModelPath == "" {
			d.Errorf(s.Node, s.Path, "provider onnx needs model_path (the model.onnx of a cross-encoder)").Hint =
				"export a reranking model (such as cross-encoder/ms-marco-MiniLM-L-6-v2) to ONNX and point model_path at its model.onnx"
			break
		}
		if st, err := os.Stat(rc.ModelPath); err != nil || st.IsDir() {
			d.Errorf(s.NodeOf("model_path"), s.PathOf("model_path"), "model_path %q is not a readable file", rc.ModelPath).Hint =
				"point model_path at the cross-encoder's model.onnx"
			break
		}
		if rc.TokenizerPath == "" {
			rc.TokenizerPath = filepath.Join(filepath.Dir(rc.ModelPath), "tokenizer.json")
		}
		if _, err := os.Stat(rc.TokenizerPath); err != nil {
			at, p := s.NodeOf("tokenizer_path"), s.PathOf("tokenizer_path")
			if at == nil {
				at, p = s.NodeOf("model_path"), s.PathOf("model_path")
			}
			d.Errorf(at, p, "tokenizer %q is not a readable file", rc.TokenizerPath).Hint = "set tokenizer_path to the model's tokenizer.json"
		}
	case "http":
		if rc.URL == "" {
			d.Errorf(s.Node, s.Path, "provider http needs url (the rerank endpoint)").Hint = "for example url: http://localhost:8080/rerank with format: tei"
		} else {
			checkHTTPURL(d, s.NodeOf("url"), s.PathOf("url"), "url", rc.URL)
		}
		if rc.Format == "" {
			rc.Format = "cohere"
		}
	}
	return rc
}
