// Package crossencoder is the rag-rerank provider for a local cross-encoder: an
// ONNX export of a BERT-style model that reads a query and a passage together
// ([CLS] query [SEP] passage [SEP], token type ids 0 and 1) and outputs a
// relevance logit (ms-marco-MiniLM, bge-reranker and the like), run by ONNX
// Runtime with the model's tokenizer.json.
//
// The tokenizer, the runtime (loaded once per process, when the first model is
// opened) and the session are internal/rag/embed/onnx's, shared with the
// embedder.
package crossencoder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/arvenza/helix/internal/rag/embed/onnx"
)

// Defaults of [Config].
const (
	// DefaultMaxLength is the most tokens of a pair; cross-encoders are trained
	// on query and passage together within BERT's 512.
	DefaultMaxLength = 512
	DefaultBatchSize = 16
)

// Config configures a [Reranker].
type Config struct {
	ModelPath string // model.onnx; required
	// TokenizerPath is the tokenizer; empty: tokenizer.json beside the model.
	TokenizerPath string
	// LibraryPath is ONNX Runtime's shared library; empty: $HELIX_ONNXRUNTIME_LIB,
	// else the loader's search path.
	LibraryPath string
	// MaxLength is the most tokens of a pair, special tokens included; the
	// longer of query and passage is cut first. 0: DefaultMaxLength.
	MaxLength int
	// BatchSize is the most pairs per model run; 0: DefaultBatchSize.
	BatchSize int
}

// Reranker scores passages against a query with a cross-encoder. Safe for
// concurrent use; Close releases the model.
type Reranker struct {
	cfg   Config
	model string
	tok   *onnx.Tokenizer
	sess  *onnx.Session
}

// New loads the tokenizer, ONNX Runtime (once per process) and the model.
func New(cfg Config) (*Reranker, error) {
	if cfg.ModelPath == "" {
		return nil, errors.New("onnx reranker: model_path is required (the model.onnx of a cross-encoder)")
	}
	if cfg.TokenizerPath == "" {
		cfg.TokenizerPath = filepath.Join(filepath.Dir(cfg.ModelPath), "tokenizer.json")
	}
	if cfg.MaxLength == 0 {
		cfg.MaxLength = DefaultMaxLength
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BatchSize < 0 {
		return nil, fmt.Errorf("onnx reranker: batch_size %d: must be positive", cfg.BatchSize)
	}
	hash, err := onnx.FileHash(cfg.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("onnx reranker: model: %w", err)
	}
	r := &Reranker{cfg: cfg, model: "onnx:" + filepath.Base(cfg.ModelPath) + ":" + hash}
	if r.tok, err = onnx.LoadTokenizer(cfg.TokenizerPath, cfg.MaxLength); err != nil {
		return nil, err
	}
	if r.sess, err = onnx.OpenSession(cfg.LibraryPath, cfg.ModelPath); err != nil {
		return nil, err
	}
	return r, nil
}

// Name is "onnx:" + the model file's name + ":" + a short hash of its content.
func (r *Reranker) Name() string { return r.model }

// Close releases the model.
func (r *Reranker) Close() error { return r.sess.Close() }

// Score returns the model's logit for each (query, passage) pair, in order,
// BatchSize pairs per model run.
func (r *Reranker) Score(ctx context.Context, query string, passages []string) ([]float64, error) {
	out := make([]float64, 0, len(passages))
	for start := 0; start < len(passages); start += r.cfg.BatchSize {
		// A model run cannot be interrupted; between runs is where ctx is heard.
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		end := min(start+r.cfg.BatchSize, len(passages))
		scores, err := r.scoreBatch(query, passages[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, scores...)
	}
	return out, nil
}

type pair struct{ ids, types []int }

// encodeAll tokenizes the pairs on all cores: for a small model the tokenizer
// costs about as much as the run.
func (r *Reranker) encodeAll(query string, passages []string) ([]pair, error) {
	encs := make([]pair, len(passages))
	errs := make([]error, len(passages))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(passages), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(passages); i = int(next.Add(1)) - 1 {
				encs[i].ids, encs[i].types, errs[i] = r.tok.EncodePair(query, passages[i])
			}
		})
	}
	wg.Wait()
	return encs, errors.Join(errs...)
}

func (r *Reranker) scoreBatch(query string, passages []string) ([]float64, error) {
	encs, err := r.encodeAll(query, passages)
	if err != nil {
		return nil, err
	}
	seq := 1
	for _, e := range encs {
		seq = max(seq, len(e.ids))
	}
	// Padded to the batch's longest pair; the mask keeps padding out of the
	// attention, and id 0 is in every vocabulary.
	batch := len(passages)
	ids := make([]int64, batch*seq)
	mask := make([]int64, batch*seq)
	types := make([]int64, batch*seq)
	for i, e := range encs {
		for j, id := range e.ids {
			ids[i*seq+j] = int64(id)
			mask[i*seq+j] = 1
			types[i*seq+j] = int64(e.types[j])
		}
	}
	data, shape, err := r.sess.Run(batch, seq, ids, mask, types)
	if err != nil {
		return nil, err
	}
	return logits(data, shape, batch)
}

// logits reads one score per pair from the model's output: [batch] or
// [batch, 1] is the relevance logit; [batch, 2] (a two-class head) gives the
// second class's logit minus the first's, the log-odds of "relevant".
func logits(data []float32, shape []int64, batch int) ([]float64, error) {
	out := make([]float64, batch)
	switch {
	case len(shape) == 1 && shape[0] == int64(batch), len(shape) == 2 && shape[0] == int64(batch) && shape[1] == 1:
		if len(data) != batch {
			return nil, fmt.Errorf("onnx reranker: model output has %d values for shape %v", len(data), shape)
		}
		for i := range out {
			out[i] = float64(data[i])
		}
	case len(shape) == 2 && shape[0] == int64(batch) && shape[1] == 2:
		if len(data) != 2*batch {
			return nil, fmt.Errorf("onnx reranker: model output has %d values for shape %v", len(data), shape)
		}
		for i := range out {
			out[i] = float64(data[2*i+1]) - float64(data[2*i])
		}
	default:
		return nil, fmt.Errorf("onnx reranker: model output has shape %v; a cross-encoder outputs [batch %d, 1] (or [batch, 2]): is this a reranking model?", shape, batch)
	}
	for i, s := range out {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("onnx reranker: the model scored a passage %v (%d of the batch): the model is not fit to rerank", s, i+1)
		}
	}
	return out, nil
}
