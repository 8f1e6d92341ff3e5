// Package onnxtest makes a tiny sentence-embedding model for tests: an ONNX
// graph that looks up each token's vector in a random (seeded) table, and a
// BERT-style tokenizer.json (WordPiece, uncased, strip_accents null) for it. No
// model can be downloaded in tests; the mechanics (tokenizing, batching,
// padding, pooling, normalising) are the same as with a real one.
package onnxtest

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// Words is the default vocabulary after the special tokens.
var Words = []string{
	"the", "a", "cafe", "coffee", "tea", "is", "good", "bad", "hot", "cold",
	"cup", "of", "and", "query", "passage", ":", ".", ",", "!", "?",
	"##s", "##ing", "##ed", "search", "document", "long", "text", "word",
}

// Special tokens and their ids, as in BERT vocabularies.
const (
	PadID = 0
	UnkID = 1
	ClsID = 2
	SepID = 3
)

// ModelOptions shape the generated model.
type ModelOptions struct {
	// Vocab is the number of rows of the embedding table: at least the
	// tokenizer's vocabulary size (4 + len(Words) by default).
	Vocab int
	// Dim is the vector size; 0: 8.
	Dim  int
	Seed uint64
	// Inputs are the graph's inputs, input_ids first; nil: input_ids,
	// attention_mask, token_type_ids (only input_ids is used; the others must be
	// fed all the same, as for a BERT model).
	Inputs []string
	// Output is the output's name; empty: last_hidden_state.
	Output string
}

func (o ModelOptions) withDefaults() ModelOptions {
	if o.Vocab == 0 {
		o.Vocab = 4 + len(Words)
	}
	if o.Dim == 0 {
		o.Dim = 8
	}
	if o.Inputs == nil {
		o.Inputs = []string{"input_ids", "attention_mask", "token_type_ids"}
	}
	if o.Output == "" {
		o.Output = "last_hidden_state"
	}
	return o
}

// Table returns the model's embedding table: row i is token i's vector, what
// the model outputs for it at any position.
func Table(o ModelOptions) [][]float32 {
	o = o.withDefaults()
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	table := make([][]float32, o.Vocab)
	for i := range table {
		table[i] = make([]float32, o.Dim)
		for j := range table[i] {
			table[i][j] = float32(rng.NormFloat64())
		}
	}
	return table
}

// Model returns the encoded ONNX ModelProto: Gather(Table(o), input_ids) →
// Output with shape [batch, seq, dim].
func Model(o ModelOptions) []byte {
	o = o.withDefaults()
	raw := make([]byte, 0, 4*o.Vocab*o.Dim)
	for _, row := range Table(o) {
		for _, x := range row {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
		}
	}
	const float, int64Type = 1, 7
	table := msg(
		varint(1, uint64(o.Vocab)), varint(1, uint64(o.Dim)), // dims
		varint(2, float), // data_type
		str(8, "embedding_table"),
		bytesField(9, raw), // raw_data
	)
	node := msg(str(1, "embedding_table"), str(1, o.Inputs[0]), str(2, o.Output), str(3, "lookup"), str(4, "Gather"))
	var graph [][]byte
	graph = append(graph, field(1, node), str(2, "onnxtest"), field(5, table))
	for _, in := range o.Inputs {
		graph = append(graph, field(11, valueInfo(in, int64Type, dimParam("batch"), dimParam("seq"))))
	}
	graph = append(graph, field(12, valueInfo(o.Output, float, dimParam("batch"), dimParam("seq"), dimValue(o.Dim))))
	return msg(
		varint(1, 8),                             // ir_version
		field(8, msg(str(1, ""), varint(2, 13))), // opset_import: default domain, opset 13
		field(7, msg(graph...)),
	)
}

// WriteModel writes Model(o) as dir/model.onnx and returns its path.
func WriteModel(t testing.TB, dir string, o ModelOptions) string {
	t.Helper()
	p := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(p, Model(o), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Tokenizer returns a BERT-style tokenizer.json for [PAD] [UNK] [CLS] [SEP]
// and words (nil: [Words]), ids in that order: BertNormalizer (lowercase,
// strip_accents null, as bert-base-uncased has it), BertPreTokenizer,
// WordPiece, and a TemplateProcessing post-processor adding [CLS] … [SEP].
func Tokenizer(words []string) []byte {
	if words == nil {
		words = Words
	}
	special := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]"}
	vocab := map[string]int{}
	var added []map[string]any
	for i, s := range special {
		vocab[s] = i
		added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	for i, w := range words {
		vocab[w] = len(special) + i
	}
	tok := func(id string, typ int) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": typ}}
	}
	seq := func(id string, typ int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typ}}
	}
	cfg := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer": map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
			"strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0)},
			// As bert-base-uncased: the second [SEP] is of the pair's second part.
			"pair": []any{tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0), seq("B", 1), tok("[SEP]", 1)},
			"special_tokens": map[string]any{
				"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{ClsID}, "tokens": []string{"[CLS]"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{SepID}, "tokens": []string{"[SEP]"}},
			},
		},
		"decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": vocab},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		panic(err) // maps of strings and numbers always marshal
	}
	return b
}

// WriteTokenizer writes Tokenizer(words) as dir/tokenizer.json and returns its path.
func WriteTokenizer(t testing.TB, dir string, words []string) string {
	t.Helper()
	p := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(p, Tokenizer(words), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Protocol buffers wire format, just what ModelProto needs.

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func tag(num, wireType int) []byte { return appendVarint(nil, uint64(num)<<3|uint64(wireType)) }

func varint(num int, v uint64) []byte { return appendVarint(tag(num, 0), v) }

func bytesField(num int, v []byte) []byte {
	return append(appendVarint(tag(num, 2), uint64(len(v))), v...)
}

func str(num int, s string) []byte { return bytesField(num, []byte(s)) }

func field(num int, m []byte) []byte { return bytesField(num, m) }

func msg(fields ...[]byte) []byte {
	var b []byte
	for _, f := range fields {
		b = append(b, f...)
	}
	return b
}

// valueInfo is a ValueInfoProto of a tensor: name, TypeProto{tensor_type{elem_type, shape}}.
func valueInfo(name string, elemType uint64, dims ...[]byte) []byte {
	var shape [][]byte
	for _, d := range dims {
		shape = append(shape, field(1, d))
	}
	tensor := msg(varint(1, elemType), field(2, msg(shape...)))
	return msg(str(1, name), field(2, msg(field(1, tensor))))
}

func dimParam(name string) []byte { return str(2, name) }

func dimValue(v int) []byte { return varint(1, uint64(v)) }
