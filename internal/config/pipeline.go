package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Pipelines are declared once, as Shapes (pipelineShape and the shapes of its four
// steps): decoding goes through [Decoder.Decode] (unknown keys with did-you-mean,
// types, enums, bounds) and `helix schema` documents the same declaration. What a
// shape cannot say — the steps' order, each at most once, one kind per item, the
// source URI — is checked by hand on the decoded values.

// Pipeline step kinds, in the order a pipeline's steps must follow.
const (
	RAGChunk    = "rag-chunk"
	RAGEmbed    = "rag-embed"
	RAGStore    = "rag-store"
	RAGRetrieve = "rag-retrieve"
)

// PipelineStepKinds are the kinds of a pipeline's steps, in their required order.
var PipelineStepKinds = []string{RAGChunk, RAGEmbed, RAGStore, RAGRetrieve, RAGRerank}

// Pipeline enums.
var (
	ChunkStrategies    = []string{"fixed", "recursive", "semantic"}
	ChunkUnits         = []string{"tokens", "characters"}
	EmbedProviders     = []string{"openai", "onnx"}
	RAGStores          = []string{"embedded", "pgvector"}
	RetrieveStrategies = []string{"vector", "keyword", "hybrid"}
	PipelineOutputs    = []string{"text", "json"}
)

// Defaults of a pipeline's steps when absent.
const (
	DefaultChunkStrategy    = "recursive"
	DefaultChunkSize        = 512
	DefaultChunkOverlap     = 64
	DefaultChunkUnit        = "tokens"
	DefaultRAGStore         = "embedded"
	DefaultRetrieveStrategy = "hybrid"
	DefaultRetrieveTopK     = 5
	// DefaultRetrieveMaxTopK and DefaultRetrieveMaxResultBytes bound what one
	// query may ask for and get back (rag.DefaultMaxTopK and
	// rag.DefaultMaxResultBytes).
	DefaultRetrieveMaxTopK        = 100
	DefaultRetrieveMaxResultBytes = 1 << 20
	DefaultPipelineOutput         = "text"
	// DefaultDataDir is where Helix keeps what it stores on disk when helix.data_dir
	// is not set.
	DefaultDataDir = ".helix"
)

// PipelineConfig is one entry of `pipelines:` (RAG ingestion and retrieval). The
// steps are decoded into their own fields, defaults applied: Chunk always holds
// the chunker to use, Embed is nil without a rag-embed step.
type PipelineConfig struct {
	ID          string
	Description string
	// Source is nil for a pipeline fed only by rag-ingest steps.
	Source   *PipelineSource
	Chunk    ChunkConfig
	Embed    *EmbedConfig
	Store    StoreConfig
	Retrieve RetrieveConfig
	// Rerank is nil without a rag-rerank step.
	Rerank *RerankConfig
	Output string // text | json
	Pos    Pos
	Path   string
}

// PipelineSource is a pipeline's `source:`: a directory of files.
type PipelineSource struct {
	URI string // as written (file://DIR?…)
	// Dir is the directory the files are read from (relative to the working
	// directory when not absolute).
	Dir        string
	Include    []string // glob patterns of the files read; empty: every supported file
	Exclude    []string
	TextField  string // .json/.jsonl: the field holding the text
	TitleField string // .json/.jsonl: the field holding the title
	Pos        Pos
}

// ChunkConfig is a pipeline's rag-chunk step.
type ChunkConfig struct {
	Strategy   string // fixed | recursive | semantic
	Size       int
	Overlap    int    // 0: none
	Unit       string // tokens | characters
	Percentile float64
	Pos        Pos
}

// EmbedConfig is a pipeline's rag-embed step.
type EmbedConfig struct {
	Provider       string // openai | onnx
	Model          string
	APIKey         string
	BaseURL        string
	Dimensions     int
	BatchSize      int
	ModelPath      string
	TokenizerPath  string
	LibraryPath    string
	QueryPrefix    string
	DocumentPrefix string
	Pos            Pos
}

// StoreConfig is a pipeline's rag-store step.
type StoreConfig struct {
	Store string // embedded | pgvector
	// Path is the embedded store's directory ("" until the application fills in
	// its default, <data_dir>/rag/<id>).
	Path  string
	DSN   string // pgvector; "" means DATABASE_URL or the PG* variables
	Table string
	Pos   Pos
}

// RetrieveConfig is a pipeline's rag-retrieve step.
type RetrieveConfig struct {
	Strategy   string // vector | keyword | hybrid
	TopK       int
	MinScore   float64
	Candidates int
	// MaxTopK is the largest top_k a query may ask for (a larger one is an
	// error); MaxResultBytes bounds a query's results in bytes.
	MaxTopK        int
	MaxResultBytes int
	// Filter is the pipeline's own metadata filter as written (placeholders
	// unresolved; checked by DecodeFilter, read by rag.Filter): every query is
	// ANDed with it, so a caller's filter narrows it and never widens it.
	// nil: none.
	Filter map[string]any
	Pos    Pos
}

var (
	ragChunkShape = Shape{Type: TypeObject, What: "a rag-chunk step", Description: "How documents are cut into chunks. Default: recursive, 512 tokens, 64 overlap.", Keys: []Key{
		{Name: "strategy", Shape: Shape{Type: TypeString, What: "chunk strategy", Enum: ChunkStrategies, Default: DefaultChunkStrategy,
			Description: "fixed (size and overlap), recursive (paragraph, sentence, word boundaries) or semantic (breaks where the meaning changes; needs rag-embed)."}},
		{Name: "size", Shape: Shape{Type: TypeInt, Min: Bound(1), Default: DefaultChunkSize, Description: "Most units of one chunk."}},
		{Name: "overlap", Shape: Shape{Type: TypeInt, Min: Bound(0), Default: DefaultChunkOverlap, Description: "Units repeated from the end of the previous chunk."}},
		{Name: "unit", Shape: Shape{Type: TypeString, What: "chunk unit", Enum: ChunkUnits, Default: DefaultChunkUnit, Description: "What size and overlap count: tokens or characters."}},
		{Name: "percentile", Shape: Shape{Type: TypeNumber, Min: Bound(0), Max: Bound(100), Description: "semantic: a break falls where the distance between consecutive sentences is above this percentile. Default: the chunker's (95)."}},
	}}
	ragEmbedShape = Shape{Type: TypeObject, What: "a rag-embed step", Description: "The embedding model: openai (any OpenAI-compatible embeddings API) or onnx (a local model). Without it, retrieval is by keyword.", Keys: []Key{
		{Name: "provider", Required: true, Shape: Shape{Type: TypeString, What: "embedding provider", Enum: EmbedProviders,
			Description: "openai (the embeddings API; with base_url any compatible server) or onnx (a sentence-embedding model run locally)."}},
		{Name: "model", Shape: str("openai: the model. Default text-embedding-3-small (or OPENAI_EMBEDDING_MODEL).")},
		{Name: "api_key", Shape: str("openai: the API key; write it as ${env:NAME}. Default OPENAI_API_KEY.")},
		{Name: "base_url", Shape: str("openai: the API's base URL (Ollama, vLLM, TEI, LiteLLM …). Default OpenAI's (or OPENAI_BASE_URL).")},
		{Name: "dimensions", Shape: Shape{Type: TypeInt, Min: Bound(1), Description: "openai: the vector size asked of models that can shorten their vectors."}},
		{Name: "batch_size", Shape: Shape{Type: TypeInt, Min: Bound(1), Description: "Texts embedded per request. Default: the provider's."}},
		{Name: "model_path", Shape: str("onnx: the model file (model.onnx).")},
		{Name: "tokenizer_path", Shape: str("onnx: the tokenizer.json. Default: tokenizer.json next to model_path.")},
		{Name: "library_path", Shape: str("onnx: the ONNX Runtime shared library (libonnxruntime.so.1). Default: HELIX_ONNXRUNTIME_LIB, else the loader's search path.")},
		{Name: "query_prefix", Shape: str("Text put before each query, for models trained with instructions (such as \"query: \").")},
		{Name: "document_prefix", Shape: str("Text put before each document chunk (such as \"passage: \").")},
	}}
	ragStoreShape = Shape{Type: TypeObject, What: "a rag-store step", Description: "Where chunks, vectors and the keyword index are kept. Default: embedded.", Keys: []Key{
		{Name: "store", Shape: Shape{Type: TypeString, What: "store", Enum: RAGStores, Default: DefaultRAGStore,
			Description: "embedded (on disk under the data directory, no service needed) or pgvector (PostgreSQL with the pgvector extension)."}},
		{Name: "path", Shape: str("embedded: the store's directory. Default <helix.data_dir>/rag/<pipeline id>.")},
		{Name: "dsn", Shape: str("pgvector: the PostgreSQL URL (postgres://user:pass@host:5432/db); write secrets as ${env:NAME}. Default DATABASE_URL, else the PG* variables.")},
		{Name: "table", Shape: str("pgvector: the base name of the pipeline's tables. Default helix_rag_ and the pipeline id lower-cased, other characters than a-z, 0-9 and _ as _; when that changes the id or is too long, cut and ended with _ and 8 hex digits of the id's hash.")},
	}}
	ragRetrieveShape = Shape{Type: TypeObject, What: "a rag-retrieve step", Description: "How queries find chunks. Default: hybrid, top 5.", Keys: []Key{
		{Name: "strategy", Shape: Shape{Type: TypeString, What: "retrieval strategy", Enum: RetrieveStrategies, Default: DefaultRetrieveStrategy,
			Description: "vector (needs rag-embed), keyword (BM25) or hybrid (both, fused by reciprocal rank; keyword alone without rag-embed)."}},
		{Name: "top_k", Shape: Shape{Type: TypeInt, Min: Bound(1), Default: DefaultRetrieveTopK, Description: "Chunks returned per query (a query's top_k wins)."}},
		{Name: "min_score", Shape: Shape{Type: TypeNumber, Description: "Drop chunks scoring below this (in the strategy's scale)."}},
		{Name: "candidates", Shape: Shape{Type: TypeInt, Min: Bound(1), Description: "hybrid: hits each arm contributes to the fusion. Default max(100, top_k)."}},
		{Name: "max_top_k", Shape: Shape{Type: TypeInt, Min: Bound(1), Default: DefaultRetrieveMaxTopK,
			Description: "The largest top_k a query may ask for: a larger one is refused with an error that names this limit."}},
		{Name: "max_result_bytes", Shape: Shape{Type: TypeInt, Min: Bound(1), Default: DefaultRetrieveMaxResultBytes,
			Description: "Bytes a query's results may hold (texts, titles, headings, metadata): the passage that crosses it is cut, with a note, and the rest left out."}},
		{Name: "filter", Shape: Shape{Type: TypeMap,
			Description: "A metadata filter every query is ANDed with ({tenant: \"${principal.claims.tenant}\"}): a caller's filter narrows it, never widens it. Operators $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $not; ${…} placeholders resolved per query, and one that is empty fails the query."}},
	}}

	pipelineStepShape = Shape{Type: TypeObject, What: "a pipeline step",
		Description: "One step of a pipeline, in this order, each at most once: rag-chunk, rag-embed, rag-store, rag-retrieve, rag-rerank.",
		Keys: []Key{
			{Name: RAGChunk, Shape: ragChunkShape},
			{Name: RAGEmbed, Shape: ragEmbedShape},
			{Name: RAGStore, Shape: ragStoreShape},
			{Name: RAGRetrieve, Shape: ragRetrieveShape},
			{Name: RAGRerank, Shape: ragRerankShape},
		}}

	pipelineSourceShape = Shape{What: "a pipeline source",
		Description: "Where the documents come from: file://DIR (options as a query: ?include=*.md&exclude=drafts/*&text_field=body&title_field=name) or {uri, include, exclude, text_field, title_field}. Without it, only rag-ingest steps feed the pipeline.",
		AnyOf: []*Shape{{Type: TypeURI, URIScheme: "file", URIOptions: sourceOptions}, {Type: TypeObject, Keys: []Key{
			{Name: "uri", Required: true, Shape: Shape{Type: TypeURI, URIScheme: "file", URIOptions: sourceOptions,
				Description: "file://DIR: the directory, read recursively."}},
			{Name: "include", Shape: strList("Only the files whose path (relative to the directory) matches one of these globs (** crosses directories).")},
			{Name: "exclude", Shape: strList("Leave out the files whose path matches one of these globs.")},
			{Name: "text_field", Shape: str(".json and .jsonl files: the field holding the text. Default text.")},
			{Name: "title_field", Shape: str(".json and .jsonl files: the field holding the title (searched as a field of its own, shown with the results). Default title.")},
		}}}}

	pipelineShape = Shape{Type: TypeObject, What: "a pipeline", Keys: []Key{
		{Name: "id", Required: true, Shape: str("The pipeline's id, unique among workflows, tools, agents and pipelines; its MCP tool name and pipeline://id.")},
		{Name: "description", Shape: str("What the pipeline finds; its MCP tool description.")},
		{Name: "source", Shape: pipelineSourceShape},
		{Name: "steps", Shape: Shape{Type: TypeList, Items: &pipelineStepShape,
			Description: "rag-chunk, rag-embed, rag-store, rag-retrieve, rag-rerank, in this order, each optional and at most once."}},
		{Name: "output", Shape: Shape{Type: TypeString, What: "pipeline output", Enum: PipelineOutputs, Default: DefaultPipelineOutput,
			Description: "text (numbered sources with their text, for citing) or json (chunks with scores and metadata)."}},
	}}
)

// PipelineShape returns the declared shape of a `pipelines:` entry. Callers must
// not modify the shapes it holds.
func PipelineShape() Shape { return pipelineShape }

// PipelineStepShape returns the declared shape of the rag-* steps of a pipeline
// (kind is one of [PipelineStepKinds]), nil for another kind.
func PipelineStepShape(kind string) *Shape {
	if k := pipelineStepShape.Key(kind); k != nil {
		return &k.Shape
	}
	return nil
}

// RetrieveStepShape returns the shape of the rag-retrieve *workflow* step's
// retrieval keys (strategy, top_k, min_score, candidates), for internal/step.
func RetrieveStepShape() Shape { return ragRetrieveShape }

func decodePipeline(d *Decoder, n *yaml.Node, path string) (PipelineConfig, bool) {
	v := d.Decode(n, path, "a pipeline", &pipelineShape)
	if d.desc != nil {
		// The source is a URI or a mapping: describe both.
		return PipelineConfig{}, false
	}
	pl := PipelineConfig{Pos: d.Pos(v.Node), Path: path, ID: v.String("id"), Description: v.String("description"),
		Output: v.String("output")}
	if !isMapping(v.Node) {
		return pl, false
	}
	if idn := v.NodeOf("id"); pl.ID == "" && idn != nil && idn.Kind == yaml.ScalarNode && !IsNull(idn) {
		d.Errorf(idn, v.PathOf("id"), "a pipeline's id must not be empty")
	}
	if pl.Output == "" {
		pl.Output = DefaultPipelineOutput
	}
	if sn := v.NodeOf("source"); sn != nil && !IsNull(sn) {
		pl.Source = decodePipelineSource(d, sn, v.PathOf("source"))
	}
	pl.Chunk = ChunkConfig{Strategy: DefaultChunkStrategy, Size: DefaultChunkSize, Overlap: DefaultChunkOverlap, Unit: DefaultChunkUnit, Pos: pl.Pos}
	pl.Store = StoreConfig{Store: DefaultRAGStore, Pos: pl.Pos}
	pl.Retrieve = RetrieveConfig{Strategy: DefaultRetrieveStrategy, TopK: DefaultRetrieveTopK,
		MaxTopK: DefaultRetrieveMaxTopK, MaxResultBytes: DefaultRetrieveMaxResultBytes, Pos: pl.Pos}
	decodePipelineSteps(d, &pl, v)
	return pl, pl.ID != ""
}

// decodePipelineSteps reads the steps (decoded by the shape) into pl, checking
// what the shape cannot: one kind per item, the order, no repeats.
func decodePipelineSteps(d *Decoder, pl *PipelineConfig, v *Values) {
	items, _ := v.Get("steps").valueList()
	last := -1
	seen := map[string]string{}
	var semanticAt *yaml.Node
	var semanticPath string
	for i, it := range items {
		sv, ok := it.(*Values)
		ip := IndexPath(v.PathOf("steps"), i)
		if !ok || !isMapping(sv.Node) {
			continue // the shape reported it
		}
		var kinds []string
		for _, k := range PipelineStepKinds {
			if sv.Has(k) {
				kinds = append(kinds, k)
			}
		}
		if len(sv.Node.Content) != 2 {
			if len(sv.Node.Content) == 0 {
				d.Errorf(sv.Node, ip, "a pipeline step must be a mapping with exactly one key, the step kind").Hint =
					"use " + orList(PipelineStepKinds)
			} else if len(kinds) > 1 {
				d.Errorf(sv.Node, ip, "a pipeline step has one kind; this item has %s", strings.Join(kinds, " and ")).Hint =
					"write each as its own list item: - " + kinds[0] + ": {…}"
			}
			continue
		}
		if len(kinds) != 1 {
			continue // an unknown kind: the shape reported it with a did-you-mean
		}
		kind := kinds[0]
		kn := sv.Node.Content[0]
		if first, dup := seen[kind]; dup {
			d.Errorf(kn, ip, "%s appears twice in the pipeline's steps (first at %s)", kind, first).Hint = "a pipeline has at most one step of each kind"
			continue
		}
		seen[kind] = d.Pos(kn).String()
		idx := indexOf(PipelineStepKinds, kind)
		if idx < last {
			d.Errorf(kn, ip, "%s must come before %s", kind, PipelineStepKinds[last]).Hint =
				"a pipeline's steps go in this order: " + strings.Join(PipelineStepKinds, ", ")
		}
		last = max(last, idx)
		s := sv.Object(kind)
		pos := d.Pos(kn)
		switch kind {
		case RAGChunk:
			c := &pl.Chunk
			c.Pos = pos
			if s != nil {
				c.Strategy, c.Size, c.Unit = s.String("strategy"), s.Int("size"), s.String("unit")
				// Unwritten, the overlap follows the size (an eighth, at most the
				// default), so that a small size alone is valid; written 0 means none.
				c.Overlap = min(DefaultChunkOverlap, c.Size/8)
				if s.Has("overlap") {
					c.Overlap = s.Int("overlap")
				}
				c.Percentile = s.Float("percentile")
				if c.Overlap >= c.Size && c.Size > 0 {
					d.Errorf(s.NodeOf("overlap"), s.PathOf("overlap"), "overlap %d must be smaller than size %d", c.Overlap, c.Size)
				}
				if s.Has("percentile") && c.Strategy != "semantic" {
					d.Warn(s.NodeOf("percentile"), s.PathOf("percentile"), "percentile only applies to strategy semantic; it is ignored")
				}
				if c.Strategy == "semantic" {
					semanticAt, semanticPath = kn, ip
					if k := s.NodeOf("strategy"); k != nil {
						semanticAt, semanticPath = k, s.PathOf("strategy")
					}
				}
			}
		case RAGEmbed:
			pl.Embed = embedFromValues(d, s, pos)
		case RAGStore:
			st := &pl.Store
			st.Pos = pos
			if s != nil {
				st.Store, st.Path, st.DSN, st.Table = s.String("store"), s.String("path"), s.String("dsn"), s.String("table")
				checkStore(d, s, st)
			}
		case RAGRerank:
			pl.Rerank = RerankFromValues(d, s, kn, ip)
		case RAGRetrieve:
			r := &pl.Retrieve
			r.Pos = pos
			if s != nil {
				r.Strategy, r.TopK, r.MinScore, r.Candidates = s.String("strategy"), s.Int("top_k"), s.Float("min_score"), s.Int("candidates")
				r.MaxTopK, r.MaxResultBytes = s.Int("max_top_k"), s.Int("max_result_bytes")
				r.Filter = DecodeFilter(d, s.NodeOf("filter"), s.PathOf("filter"))
				if r.TopK > r.MaxTopK {
					at, p := s.NodeOf("top_k"), s.PathOf("top_k")
					d.Errorf(at, p, "top_k %d is more than max_top_k %d", r.TopK, r.MaxTopK).Hint = "lower top_k, or raise max_top_k"
				}
			}
			if r.Strategy == "vector" && !seenKind(seen, RAGEmbed) {
				at, p := kn, ip
				if s != nil && s.NodeOf("strategy") != nil {
					at, p = s.NodeOf("strategy"), s.PathOf("strategy")
				}
				d.Errorf(at, p, "strategy vector needs a rag-embed step").Hint = "add - rag-embed: {provider: openai} before rag-store, or use strategy keyword or hybrid"
			}
		}
	}
	if semanticAt != nil && pl.Embed == nil {
		d.Errorf(semanticAt, semanticPath, "chunk strategy semantic needs a rag-embed step").Hint =
			"add - rag-embed: {provider: openai|onnx}, or use strategy recursive or fixed"
	}
	if pl.Embed == nil && pl.Retrieve.Strategy == "hybrid" {
		d.Warn(v.Node, v.Path, "pipeline %q has no rag-embed step: its hybrid retrieval falls back to keyword (BM25)", pl.ID).Hint =
			"add - rag-embed: {provider: openai|onnx} for vector search, or write rag-retrieve: {strategy: keyword}"
	}
}

func seenKind(seen map[string]string, k string) bool { _, ok := seen[k]; return ok }

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func (v *Value) valueList() ([]any, bool) {
	if v == nil {
		return nil, false
	}
	l, ok := v.V.([]any)
	return l, ok
}

func embedFromValues(d *Decoder, s *Values, pos Pos) *EmbedConfig {
	e := &EmbedConfig{Pos: pos}
	if s == nil {
		return e
	}
	e.Provider, e.Model, e.APIKey, e.BaseURL = s.String("provider"), s.String("model"), s.String("api_key"), s.String("base_url")
	e.Dimensions, e.BatchSize = s.Int("dimensions"), s.Int("batch_size")
	e.ModelPath, e.TokenizerPath, e.LibraryPath = s.String("model_path"), s.String("tokenizer_path"), s.String("library_path")
	e.QueryPrefix, e.DocumentPrefix = s.String("query_prefix"), s.String("document_prefix")
	if e.BaseURL != "" {
		checkHTTPURL(d, s.NodeOf("base_url"), s.PathOf("base_url"), "base_url", e.BaseURL)
	}
	onlyFor := func(provider string, keys ...string) {
		for _, k := range keys {
			if s.Has(k) && e.Provider != provider && e.Provider != "" {
				d.Errorf(s.NodeOf(k), s.PathOf(k), "%s is only for provider %s", k, provider).Hint =
					fmt.Sprintf("this step has provider %s; remove %s", e.Provider, k)
			}
		}
	}
	onlyFor("openai", "model", "api_key", "base_url", "dimensions")
	onlyFor("onnx", "model_path", "tokenizer_path", "library_path")
	if e.Provider == "onnx" {
		modelOK := false
		if e.ModelPath == "" {
			d.Errorf(s.Node, s.Path, "provider onnx needs model_path (the model.onnx file)")
		} else if st, err := os.Stat(e.ModelPath); err != nil || st.IsDir() {
			d.Errorf(s.NodeOf("model_path"), s.PathOf("model_path"), "model_path %q is not a readable file", e.ModelPath).Hint =
				"download the model (an ONNX sentence-embedding model such as all-MiniLM-L6-v2) and point model_path at its model.onnx"
		} else {
			modelOK = true
		}
		if e.TokenizerPath == "" && e.ModelPath != "" {
			e.TokenizerPath = filepath.Join(filepath.Dir(e.ModelPath), "tokenizer.json")
		}
		if e.TokenizerPath != "" && modelOK {
			if _, err := os.Stat(e.TokenizerPath); err != nil {
				at, p := s.NodeOf("tokenizer_path"), s.PathOf("tokenizer_path")
				if at == nil {
					at, p = s.NodeOf("model_path"), s.PathOf("model_path")
				}
				d.Errorf(at, p, "tokenizer %q is not a readable file", e.TokenizerPath).Hint = "set tokenizer_path to the model's tokenizer.json"
			}
		}
	}
	return e
}

func checkStore(d *Decoder, s *Values, st *StoreConfig) {
	if st.Store != "pgvector" {
		for _, k := range []string{"dsn", "table"} {
			if s.Has(k) {
				d.Errorf(s.NodeOf(k), s.PathOf(k), "%s is only for store pgvector", k).Hint = "remove it, or set store: pgvector"
			}
		}
	}
	if st.Store == "pgvector" {
		if s.Has("path") {
			d.Errorf(s.NodeOf("path"), s.PathOf("path"), "path is only for store embedded").Hint = "pgvector keeps its data in the table; remove path"
		}
		// What a connection string and a table name must look like is the pgvector
		// store's knowledge (internal/rag/store/pgvector registers the checks).
		if st.DSN != "" {
			d.checkValue(s.NodeOf("dsn"), s.PathOf("dsn"), CheckPgvectorDSN, st.DSN)
		}
		if st.Table != "" {
			d.checkValue(s.NodeOf("table"), s.PathOf("table"), CheckPgvectorTable, st.Table)
		}
	}
}

// decodePipelineSource reads a source: file://DIR?include=…, or a mapping.
func decodePipelineSource(d *Decoder, n *yaml.Node, path string) *PipelineSource {
	n = d.Resolve(n)
	src := &PipelineSource{Pos: d.Pos(n)}
	uriNode, uriPath := n, path
	// at locates an error about one of the source's keys: the key in a mapping,
	// else the URI (whose query holds the options).
	at := func(string) (*yaml.Node, string) { return uriNode, uriPath }
	if isMapping(n) {
		sv := d.Decode(n, path, "a pipeline source", pipelineSourceShape.AnyOf[1])
		uriNode, uriPath = sv.NodeOf("uri"), sv.PathOf("uri")
		src.URI = sv.String("uri")
		src.Include, src.Exclude, src.TextField = stringList(sv, "include"), stringList(sv, "exclude"), sv.String("text_field")
		src.TitleField = sv.String("title_field")
		if uriNode == nil {
			return nil
		}
		at = func(k string) (*yaml.Node, string) {
			if n := sv.NodeOf(k); n != nil {
				return n, sv.PathOf(k)
			}
			return uriNode, uriPath
		}
	} else {
		if n.Kind != yaml.ScalarNode {
			d.Errorf(n, path, "a pipeline source is a URI (file://DIR) or a mapping {uri, include, exclude, text_field, title_field}, not %s", describe(n))
			return nil
		}
		src.URI = d.String(n, path)
	}
	src.Pos = d.Pos(uriNode)
	u, err := url.Parse(src.URI)
	if err != nil || u.Scheme != "file" {
		e := d.Errorf(uriNode, uriPath, "pipeline source %q is not a file:// URI", src.URI)
		e.Hint = "write source: file://./docs (a directory); to feed a pipeline from other endpoints, use a rag-ingest step in a workflow"
		return nil
	}
	src.Dir = u.Host + u.Path
	if u.Opaque != "" {
		src.Dir = u.Opaque
	}
	if src.Dir == "" {
		d.Errorf(uriNode, uriPath, "pipeline source %q names no directory", src.URI).Hint = "for example file://./docs or file:///srv/docs"
		return nil
	}
	q := u.Query()
	for k, vals := range q {
		switch k {
		case "include":
			src.Include = append(src.Include, splitList(vals)...)
		case "exclude":
			src.Exclude = append(src.Exclude, splitList(vals)...)
		case "text_field":
			src.TextField = vals[len(vals)-1]
		case "title_field":
			src.TitleField = vals[len(vals)-1]
		default:
			d.Errorf(uriNode, uriPath, "unknown source option %q", k).Hint =
				hintOr(DidYouMean(k, sourceOptions), "use "+orList(sourceOptions))
		}
	}
	checkSourceFields(d, src, at)
	for _, list := range [][]string{src.Include, src.Exclude} {
		for _, p := range list {
			if _, err := filepath.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil {
				d.Errorf(uriNode, uriPath, "glob %q is malformed: %v", p, err)
			}
		}
	}
	return src
}

// sourceOptions are the options of a file:// source's query.
var sourceOptions = []string{"include", "exclude", "text_field", "title_field"}

// checkSourceFields refuses a title_field that names the text's field; at gives
// the node (and path) an error about key points at.
func checkSourceFields(d *Decoder, src *PipelineSource, at func(key string) (*yaml.Node, string)) {
	text, title := src.TextField, src.TitleField
	if text == "" {
		text = "text"
	}
	if title == "" {
		title = "title"
	}
	if text == title {
		key := "title_field"
		if src.TitleField == "" {
			key = "text_field" // only text_field was written: it took the title's field
		}
		n, p := at(key)
		d.Errorf(n, p, "text_field and title_field both name the field %q", text).Hint =
			"a record's text and its title come from different fields: set title_field to the field holding the title"
	}
}

// splitList splits comma-separated query values.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// StorePath is the embedded store's directory of the pipeline: its rag-store path,
// else <dataDir>/rag/<id> (dataDir "" means [DefaultDataDir]).
func (p PipelineConfig) StorePath(dataDir string) string {
	if p.Store.Path != "" {
		return p.Store.Path
	}
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	return filepath.Join(dataDir, "rag", p.ID)
}
