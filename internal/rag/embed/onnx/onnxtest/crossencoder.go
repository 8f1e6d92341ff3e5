package onnxtest

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// CrossEncoderModel returns an ONNX ModelProto scoring (query, passage) pairs as
// a cross-encoder does, by a function a test can compute: with E = Table(o),
// q the sum of E's rows over the query's tokens (token type 0, [CLS] and the
// first [SEP] included) and p the sum over the passage's (token type 1), the
// output "logits" [batch, 1] is q·p. Padding (attention mask 0) counts in
// neither. The score so depends on both texts and on the type ids being fed
// right, as a real cross-encoder's does.
func CrossEncoderModel(o ModelOptions) []byte {
	o = o.withDefaults()
	raw := make([]byte, 0, 4*o.Vocab*o.Dim)
	for _, row := range Table(o) {
		for _, x := range row {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
		}
	}
	const float, int64Type = 1, 7
	const attrInt = 2
	table := msg(varint(1, uint64(o.Vocab)), varint(1, uint64(o.Dim)), varint(2, float), str(8, "embedding_table"), bytesField(9, raw))
	axes := func(name string, v int64) []byte {
		return msg(varint(1, 1), varint(2, int64Type), str(8, name), bytesField(9, binary.LittleEndian.AppendUint64(nil, uint64(v))))
	}
	intAttr := func(name string, v int64) []byte {
		return field(5, msg(str(1, name), varint(3, uint64(v)), varint(20, attrInt)))
	}
	node := func(op, name string, ins []string, out string, attrs ...[]byte) []byte {
		var f [][]byte
		for _, in := range ins {
			f = append(f, str(1, in))
		}
		f = append(f, str(2, out), str(3, name), str(4, op))
		f = append(f, attrs...)
		return field(1, msg(f...))
	}
	graph := [][]byte{
		node("Gather", "lookup", []string{"embedding_table", "input_ids"}, "tok"),           // [b, s, d]
		node("Cast", "mask_f", []string{"attention_mask"}, "mask", intAttr("to", float)),    // [b, s]
		node("Cast", "type_f", []string{"token_type_ids"}, "types", intAttr("to", float)),   // [b, s]
		node("Mul", "passage_mask", []string{"mask", "types"}, "pmask"),                     // passage tokens
		node("Sub", "query_mask", []string{"mask", "pmask"}, "qmask"),                       // query tokens
		node("Unsqueeze", "pmask3", []string{"pmask", "axis2"}, "pmask3"),                   // [b, s, 1]
		node("Unsqueeze", "qmask3", []string{"qmask", "axis2"}, "qmask3"),                   // [b, s, 1]
		node("Mul", "ptok", []string{"tok", "pmask3"}, "ptok"),                              // [b, s, d]
		node("Mul", "qtok", []string{"tok", "qmask3"}, "qtok"),                              // [b, s, d]
		node("ReduceSum", "p", []string{"ptok", "axis1"}, "p", intAttr("keepdims", 0)),      // [b, d]
		node("ReduceSum", "q", []string{"qtok", "axis1"}, "q", intAttr("keepdims", 0)),      // [b, d]
		node("Mul", "pq", []string{"p", "q"}, "pq"),                                         // [b, d]
		node("ReduceSum", "dot", []string{"pq", "axis1"}, "logits", intAttr("keepdims", 1)), // [b, 1]
		str(2, "onnxtest-crossencoder"),
		field(5, table), field(5, axes("axis1", 1)), field(5, axes("axis2", 2)),
	}
	for _, in := range []string{"input_ids", "attention_mask", "token_type_ids"} {
		graph = append(graph, field(11, valueInfo(in, int64Type, dimParam("batch"), dimParam("seq"))))
	}
	graph = append(graph, field(12, valueInfo("logits", float, dimParam("batch"), dimValue(1))))
	return msg(
		varint(1, 8),                             // ir_version
		field(8, msg(str(1, ""), varint(2, 13))), // opset_import: default domain, opset 13
		field(7, msg(graph...)),
	)
}

// CrossEncoderScore is what CrossEncoderModel(o) outputs for one pair's token
// ids and type ids (no padding).
func CrossEncoderScore(o ModelOptions, ids, typeIDs []int) float64 {
	table := Table(o)
	dim := len(table[0])
	q, p := make([]float64, dim), make([]float64, dim)
	for i, id := range ids {
		into := q
		if typeIDs[i] == 1 {
			into = p
		}
		for k, x := range table[id] {
			into[k] += float64(x)
		}
	}
	var s float64
	for k := range q {
		s += q[k] * p[k]
	}
	return s
}

// WriteCrossEncoder writes CrossEncoderModel(o) as dir/model.onnx and returns its path.
func WriteCrossEncoder(t testing.TB, dir string, o ModelOptions) string {
	t.Helper()
	p := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(p, CrossEncoderModel(o), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
