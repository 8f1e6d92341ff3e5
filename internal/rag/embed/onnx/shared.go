package onnx

import (
	"errors"
	"fmt"
	"os"

	"github.com/sugarme/tokenizer"
)

// What other packages running BERT-style models through ONNX Runtime share with
// the embedder (the cross-encoder reranker of internal/rag/rerank): the
// tokenizer with its accent fix, the process's one runtime and a session. They
// are exported here rather than copied so that a fix to either reaches both.

// Tokenizer is a model's WordPiece tokenizer, read from its tokenizer.json, with
// accents stripped as Hugging Face's tokenizers would (see loadTokenizer). Safe
// for concurrent use.
type Tokenizer struct {
	tok       *tokenizer.Tokenizer
	strip     bool
	maxLength int
}

// LoadTokenizer reads a tokenizer.json; encodings are cut at maxLength tokens,
// special tokens included.
func LoadTokenizer(path string, maxLength int) (*Tokenizer, error) {
	if maxLength < 3 {
		return nil, fmt.Errorf("onnx: max_length %d: must be at least 3 ([CLS] and two [SEP])", maxLength)
	}
	tok, strip, err := loadTokenizer(path, maxLength)
	if err != nil {
		return nil, err
	}
	return &Tokenizer{tok: tok, strip: strip, maxLength: maxLength}, nil
}

// EncodePair tokenizes a pair as BERT does: [CLS] a [SEP] b [SEP], type ids 0
// for a's part and 1 for b's, the longer of the two cut first when the pair is
// over the tokenizer's maximum length.
func (t *Tokenizer) EncodePair(a, b string) (ids, typeIDs []int, err error) {
	// The tokenizer library panics where it should return errors; a text must
	// not take the process down.
	defer func() {
		if r := recover(); r != nil {
			ids, typeIDs, err = nil, nil, fmt.Errorf("onnx: tokenizing a pair of %d and %d bytes: %v", len(a), len(b), r)
		}
	}()
	if t.strip {
		a, b = stripAccents(a), stripAccents(b)
	}
	enc, err := t.tok.EncodePair(a, b, true)
	if err != nil {
		return nil, nil, fmt.Errorf("onnx: tokenizing: %w", err)
	}
	ids, typeIDs = enc.GetIds(), enc.GetTypeIds()
	if len(typeIDs) != len(ids) {
		return nil, nil, fmt.Errorf("onnx: the tokenizer gave %d type ids for %d tokens", len(typeIDs), len(ids))
	}
	if len(ids) > t.maxLength { // the tokenizer truncates; this guards one that would not
		ids, typeIDs = ids[:t.maxLength], typeIDs[:t.maxLength]
	}
	return ids, typeIDs, nil
}

// Session is a BERT-style model loaded into ONNX Runtime: inputs input_ids,
// attention_mask and token_type_ids, one float32 output. Run is safe for
// concurrent use.
type Session struct{ s session }

// OpenSession loads ONNX Runtime (once per process; libraryPath "" means
// $HELIX_ONNXRUNTIME_LIB, else the loader's search path) and the model.
func OpenSession(libraryPath, modelPath string) (*Session, error) {
	if libraryPath == "" {
		libraryPath = os.Getenv(LibraryEnv)
	}
	s, err := openSession(libraryPath, modelPath)
	if err != nil {
		return nil, err
	}
	return &Session{s: s}, nil
}

// Run runs the model on a batch: ids, mask and type ids are [batch, seq]
// row-major. It returns the model's output and its shape.
func (s *Session) Run(batch, seq int, ids, mask, typeIDs []int64) ([]float32, []int64, error) {
	if s.s == nil {
		return nil, nil, errors.New("onnx: the model is closed")
	}
	return s.s.run(batch, seq, ids, mask, typeIDs)
}

// Close releases the model; the session must not be used afterwards.
func (s *Session) Close() error {
	if s.s == nil {
		return nil
	}
	err := s.s.close()
	s.s = nil
	return err
}

// FileHash is a short hash of a file's content, to name a model by what it is.
func FileHash(path string) (string, error) { return fileHash(path) }
