// Package onnx is the rag-embed provider for a local sentence-embedding model:
// an ONNX export of a BERT-style encoder (all-MiniLM, bge, e5, gte …) run by
// ONNX Runtime, with the WordPiece tokenizer from the model's tokenizer.json.
//
// ONNX Runtime is a shared library loaded when the first Embedder is created,
// never before: a helix binary runs without it as long as no pipeline uses this
// provider. One process loads one library, shared by all embedders.
package onnx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
	"golang.org/x/text/unicode/norm"

	"github.com/arvenza/helix/internal/rag"
)

// Defaults of [Config].
const (
	DefaultMaxLength = 256
	DefaultBatchSize = 32
	// DefaultLibrary is found through the dynamic loader's search path
	// (LD_LIBRARY_PATH, ld.so.cache).
	DefaultLibrary = "libonnxruntime.so.1"
	// LibraryEnv names the environment variable with the library's path.
	LibraryEnv = "HELIX_ONNXRUNTIME_LIB"
)

// Config configures an [Embedder].
type Config struct {
	// ModelPath is the model file (model.onnx); required.
	ModelPath string
	// TokenizerPath is the tokenizer; empty: tokenizer.json beside the model.
	TokenizerPath string
	// LibraryPath is ONNX Runtime's shared library; empty: $HELIX_ONNXRUNTIME_LIB,
	// else libonnxruntime.so.1 from the loader's search path.
	LibraryPath string
	// MaxLength is the most tokens per text, [CLS] and [SEP] included; longer
	// texts are truncated. 0: 256.
	MaxLength int
	// BatchSize is the most texts per model run; 0: 32.
	BatchSize int
	// QueryPrefix and DocumentPrefix are prepended to queries and documents, for
	// models trained with them ("query: " and "passage: " for e5).
	QueryPrefix, DocumentPrefix string
	// Pooling turns token vectors into one: "mean" (the default; over the real
	// tokens, not the padding) or "cls" (the first token's vector).
	Pooling string
	// Normalize scales vectors to length 1; nil: true.
	Normalize *bool
}

// Embedder is a [rag.Embedder] running a local model. Safe for concurrent use;
// Close releases the model.
type Embedder struct {
	cfg       Config
	model     string
	tok       *tokenizer.Tokenizer
	normalize bool
	// stripAccents is done here rather than by the tokenizer: see loadTokenizer.
	stripAccents bool
	session      session
}

// session runs the model: ids, mask and type ids are [batch, seq] row-major; it
// returns the output tensor and its shape ([batch, seq, dim] token vectors, or
// [batch, dim] sentence vectors).
type session interface {
	run(batch, seq int, ids, mask, typeIDs []int64) (out []float32, shape []int64, err error)
	close() error
}

var _ rag.Embedder = (*Embedder)(nil)

// New loads the tokenizer, ONNX Runtime (once per process) and the model.
func New(cfg Config) (*Embedder, error) {
	if cfg.ModelPath == "" {
		return nil, errors.New("onnx: model_path is required (the model.onnx of a sentence-embedding model)")
	}
	if cfg.TokenizerPath == "" {
		cfg.TokenizerPath = filepath.Join(filepath.Dir(cfg.ModelPath), "tokenizer.json")
	}
	if cfg.LibraryPath == "" {
		cfg.LibraryPath = os.Getenv(LibraryEnv)
	}
	if cfg.MaxLength == 0 {
		cfg.MaxLength = DefaultMaxLength
	}
	if cfg.MaxLength < 2 {
		return nil, fmt.Errorf("onnx: max_length %d: must be at least 2 ([CLS] and [SEP])", cfg.MaxLength)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BatchSize < 0 {
		return nil, fmt.Errorf("onnx: batch_size %d: must be positive", cfg.BatchSize)
	}
	switch cfg.Pooling {
	case "":
		cfg.Pooling = "mean"
	case "mean", "cls":
	default:
		return nil, fmt.Errorf("onnx: pooling %q: want mean or cls", cfg.Pooling)
	}
	e := &Embedder{cfg: cfg, normalize: cfg.Normalize == nil || *cfg.Normalize}
	hash, err := fileHash(cfg.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("onnx: model: %w", err)
	}
	e.model = "onnx:" + filepath.Base(cfg.ModelPath) + ":" + hash
	if e.tok, e.stripAccents, err = loadTokenizer(cfg.TokenizerPath, cfg.MaxLength); err != nil {
		return nil, err
	}
	if e.session, err = openSession(cfg.LibraryPath, cfg.ModelPath); err != nil {
		return nil, err
	}
	return e, nil
}

// Model is "onnx:" + the model file's name + ":" + a short hash of its content,
// so a store notices a changed model even under the same name.
func (e *Embedder) Model() string { return e.model }

// Close releases the model; the embedder must not be used afterwards.
func (e *Embedder) Close() error {
	if e.session == nil {
		return nil
	}
	err := e.session.close()
	e.session = nil
	return err
}

// Embed returns one vector per text, in order, BatchSize texts per model run.
func (e *Embedder) Embed(ctx context.Context, texts []string, kind rag.EmbedKind) ([][]float32, error) {
	if e.session == nil {
		return nil, errors.New("onnx: the embedder is closed")
	}
	prefix := e.cfg.DocumentPrefix
	if kind == rag.EmbedQuery {
		prefix = e.cfg.QueryPrefix
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		// A model run cannot be interrupted; between runs is where ctx is heard.
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		end := min(start+e.cfg.BatchSize, len(texts))
		vecs, err := e.embedBatch(texts[start:end], prefix)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// encoding is a text's tokens as the model takes them.
type encoding struct{ ids, typeIDs []int }

// encode tokenizes a text: accents stripped if the tokenizer wants it, [CLS]
// and [SEP] added, truncated to MaxLength.
func (e *Embedder) encode(text string) (enc encoding, err error) {
	// The tokenizer library panics where it should return errors; a text must
	// not take the process down.
	defer func() {
		if r := recover(); r != nil {
			enc, err = encoding{}, fmt.Errorf("onnx: tokenizing a text of %d bytes: %v", len(text), r)
		}
	}()
	if e.stripAccents {
		text = stripAccents(text)
	}
	te, err := e.tok.EncodeSingle(text, true)
	if err != nil {
		return encoding{}, fmt.Errorf("onnx: tokenizing: %w", err)
	}
	ids, types := te.GetIds(), te.GetTypeIds()
	if len(ids) > e.cfg.MaxLength { // the tokenizer truncates; this guards a tokenizer that would not
		ids, types = ids[:e.cfg.MaxLength], types[:e.cfg.MaxLength]
	}
	return encoding{ids, types}, nil
}

// encodeAll tokenizes texts on all cores: the tokenizer costs about as much as
// a small model's run, and is safe for concurrent use.
func (e *Embedder) encodeAll(texts []string, prefix string) ([]encoding, error) {
	encs := make([]encoding, len(texts))
	errs := make([]error, len(texts))
	workers := min(len(texts), runtime.GOMAXPROCS(0))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(texts); i = int(next.Add(1)) - 1 {
				encs[i], errs[i] = e.encode(prefix + texts[i])
			}
		})
	}
	wg.Wait()
	return encs, errors.Join(errs...)
}

func (e *Embedder) embedBatch(texts []string, prefix string) ([][]float32, error) {
	encs, err := e.encodeAll(texts, prefix)
	if err != nil {
		return nil, err
	}
	seq := 1
	for _, enc := range encs {
		seq = max(seq, len(enc.ids))
	}
	// Pad to the batch's longest text; padding is masked out of the attention
	// and of the pooling, and its id (0) is in every vocabulary.
	batch := len(texts)
	ids := make([]int64, batch*seq)
	mask := make([]int64, batch*seq)
	types := make([]int64, batch*seq)
	for i, enc := range encs {
		for j, id := range enc.ids {
			ids[i*seq+j] = int64(id)
			mask[i*seq+j] = 1
			if j < len(enc.typeIDs) {
				types[i*seq+j] = int64(enc.typeIDs[j])
			}
		}
	}
	data, shape, err := e.session.run(batch, seq, ids, mask, types)
	if err != nil {
		return nil, err
	}
	return pool(data, shape, batch, seq, mask, e.cfg.Pooling, e.normalize)
}

// pool turns the model's output into one vector per text: token vectors
// [batch, seq, dim] are averaged over the mask (or the first is taken);
// sentence vectors [batch, dim] are taken as they are.
func pool(data []float32, shape []int64, batch, seq int, mask []int64, pooling string, normalize bool) ([][]float32, error) {
	out := make([][]float32, batch)
	switch {
	case len(shape) == 3 && shape[0] == int64(batch) && shape[1] == int64(seq) && shape[2] > 0:
		dim := int(shape[2])
		if len(data) != batch*seq*dim {
			return nil, fmt.Errorf("onnx: model output has %d values for shape %v", len(data), shape)
		}
		for b := range batch {
			v := make([]float32, dim)
			if pooling == "cls" {
				copy(v, data[b*seq*dim:b*seq*dim+dim])
			} else {
				n := 0
				for s := range seq {
					if mask[b*seq+s] == 0 {
						continue
					}
					n++
					row := data[(b*seq+s)*dim : (b*seq+s+1)*dim]
					for k, x := range row {
						v[k] += x
					}
				}
				for k := range v {
					v[k] /= float32(max(n, 1))
				}
			}
			out[b] = v
		}
	case len(shape) == 2 && shape[0] == int64(batch) && shape[1] > 0:
		dim := int(shape[1])
		if len(data) != batch*dim {
			return nil, fmt.Errorf("onnx: model output has %d values for shape %v", len(data), shape)
		}
		for b := range batch {
			out[b] = append([]float32(nil), data[b*dim:(b+1)*dim]...)
		}
	default:
		return nil, fmt.Errorf("onnx: model output has shape %v; want [batch %d, tokens %d, dim] or [batch %d, dim]", shape, batch, seq, batch)
	}
	if normalize {
		for _, v := range out {
			l2normalize(v)
		}
	}
	return out, nil
}

func l2normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}

// stripAccents removes combining marks after canonical decomposition: "Café"
// becomes "Cafe", as BERT's uncased tokenizers do.
func stripAccents(s string) string {
	isASCII := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			isASCII = false
			break
		}
	}
	if isASCII {
		return s
	}
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// loadTokenizer reads a tokenizer.json and reports whether accents are to be
// stripped before it sees a text. The tokenizer library reads the
// BertNormalizer's "strip_accents": null as false, while in Hugging Face's
// tokenizers null means "as lowercase": every uncased BERT model strips accents,
// and without this "Café" would be an unknown word instead of "cafe".
func loadTokenizer(path string, maxLength int) (tok *tokenizer.Tokenizer, strip bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("onnx: tokenizer: %w (tokenizer_path, default: tokenizer.json beside the model)", err)
	}
	var cfg struct {
		Normalizer map[string]any `json:"normalizer"`
		Model      map[string]any `json:"model"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, false, fmt.Errorf("onnx: tokenizer %s: %w", path, err)
	}
	if typ, _ := cfg.Model["type"].(string); typ != "WordPiece" {
		return nil, false, fmt.Errorf("onnx: tokenizer %s: model type %q; only WordPiece (BERT-style) tokenizers are supported", path, typ)
	}
	if n := cfg.Normalizer; n != nil && n["type"] == "BertNormalizer" && n["lowercase"] == true {
		if v, ok := n["strip_accents"]; !ok || v == nil {
			strip = true
		}
	}
	// The library asserts types throughout its reading of the file: a malformed
	// file panics in it rather than returning an error.
	defer func() {
		if r := recover(); r != nil {
			tok, strip, err = nil, false, fmt.Errorf("onnx: tokenizer %s: malformed tokenizer.json: %v", path, r)
		}
	}()
	tok, err = pretrained.FromReader(strings.NewReader(string(data)))
	if err != nil {
		return nil, false, fmt.Errorf("onnx: tokenizer %s: %w", path, err)
	}
	// Padding is done per batch by the embedder.
	tok.WithPadding(nil)
	tok.WithTruncation(&tokenizer.TruncationParams{MaxLength: maxLength, Strategy: tokenizer.LongestFirst})
	return tok, strip, nil
}

// fileHash is a short hash of a file's content.
func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
