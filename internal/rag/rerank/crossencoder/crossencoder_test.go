//go:build cgo

package crossencoder

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag/embed/onnx/onnxtest"
	"github.com/arvenza/helix/internal/testtools"
)

func newTestReranker(t testing.TB, mo onnxtest.ModelOptions, cfg Config) *Reranker {
	t.Helper()
	dir := t.TempDir()
	cfg.ModelPath = onnxtest.WriteCrossEncoder(t, dir, mo)
	onnxtest.WriteTokenizer(t, dir, nil)
	cfg.LibraryPath = testtools.ONNXRuntimeLib(t)
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// vocabID is a word's id in onnxtest's tokenizer.
func vocabID(t *testing.T, w string) int {
	t.Helper()
	switch w {
	case "[CLS]":
		return onnxtest.ClsID
	case "[SEP]":
		return onnxtest.SepID
	}
	i := slices.Index(onnxtest.Words, w)
	if i < 0 {
		t.Fatalf("%q is not in the test vocabulary", w)
	}
	return 4 + i
}

// pairIDs is what a BERT tokenizer makes of a pair of texts written in the test
// vocabulary's whole words (lower case, no accents): [CLS] q [SEP] p [SEP].
func pairIDs(t *testing.T, q, p string) (ids, types []int) {
	ids = append(ids, vocabID(t, "[CLS]"))
	for _, w := range strings.Fields(q) {
		ids = append(ids, vocabID(t, w))
	}
	ids = append(ids, vocabID(t, "[SEP]"))
	types = make([]int, len(ids))
	for _, w := range strings.Fields(p) {
		ids, types = append(ids, vocabID(t, w)), append(types, 1)
	}
	return append(ids, vocabID(t, "[SEP]")), append(types, 1)
}

func TestTokenizesPairsAsBERT(t *testing.T) {
	t.Parallel()
	r := newTestReranker(t, onnxtest.ModelOptions{Seed: 1}, Config{})
	// "Café" is "cafe" only after NFD and accent stripping, which the tokenizer
	// library does not do for strip_accents: null.
	ids, types, err := r.tok.EncodePair("Café TEA", "hot coffee")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs, wantTypes := pairIDs(t, "cafe tea", "hot coffee")
	if !slices.Equal(ids, wantIDs) || !slices.Equal(types, wantTypes) {
		t.Errorf("ids %v types %v, want %v %v", ids, types, wantIDs, wantTypes)
	}
}

func TestScoresAreTheModelsAndOrderFollows(t *testing.T) {
	t.Parallel()
	mo := onnxtest.ModelOptions{Dim: 16, Seed: 7}
	// A batch size of 2 with passages of different lengths: the pairs are split
	// over runs and padded, and neither may change a score.
	r := newTestReranker(t, mo, Config{BatchSize: 2})
	query := "hot coffee"
	passages := []string{
		"a cup of tea",
		"the coffee is hot",
		"cold",
		"a good cup of coffee and a bad cup of tea",
		"tea is good",
	}
	got, err := r.Score(context.Background(), query, passages)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(passages) {
		t.Fatalf("%d scores for %d passages", len(got), len(passages))
	}
	want := make([]float64, len(passages))
	for i, p := range passages {
		ids, types := pairIDs(t, query, p)
		want[i] = onnxtest.CrossEncoderScore(mo, ids, types)
		if math.Abs(got[i]-want[i]) > 1e-3*math.Max(1, math.Abs(want[i])) {
			t.Errorf("passage %d (%q) scored %v, the model's function gives %v", i, p, got[i], want[i])
		}
	}
	order := func(s []float64) []int {
		idx := []int{0, 1, 2, 3, 4}
		sort.SliceStable(idx, func(a, b int) bool { return s[idx[a]] > s[idx[b]] })
		return idx
	}
	if !slices.Equal(order(got), order(want)) {
		t.Errorf("order %v, want %v", order(got), order(want))
	}
	// The query is read with the passage: another query scores the same passages
	// otherwise.
	other, err := r.Score(context.Background(), "cold tea", passages)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(other, got) {
		t.Error("a different query gave the same scores")
	}
}

func TestLongPairsAreCut(t *testing.T) {
	t.Parallel()
	mo := onnxtest.ModelOptions{Seed: 3}
	r := newTestReranker(t, mo, Config{MaxLength: 12})
	long := strings.Repeat("long text ", 200)
	ids, types, err := r.tok.EncodePair("hot tea", long)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 12 || len(types) != 12 {
		t.Fatalf("%d ids, %d types; want 12", len(ids), len(types))
	}
	// The longer text (the passage) is cut; the query is whole.
	wantIDs, _ := pairIDs(t, "hot tea", "long")
	if !slices.Equal(ids[:5], wantIDs[:5]) || ids[11] != onnxtest.SepID {
		t.Errorf("ids %v", ids)
	}
	if _, err := r.Score(context.Background(), "hot tea", []string{long, long + long}); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesWhatIsNotACrossEncoder(t *testing.T) {
	t.Parallel()
	lib := testtools.ONNXRuntimeLib(t)
	dir := t.TempDir()
	// The embedding test model outputs token vectors, not one logit per pair.
	model := onnxtest.WriteModel(t, dir, onnxtest.ModelOptions{})
	onnxtest.WriteTokenizer(t, dir, nil)
	r, err := New(Config{ModelPath: model, LibraryPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Score(context.Background(), "tea", []string{"hot tea"})
	if err == nil || !strings.Contains(err.Error(), "is this a reranking model") {
		t.Errorf("err = %v", err)
	}
	if _, err := New(Config{ModelPath: dir + "/missing.onnx", LibraryPath: lib}); err == nil {
		t.Error("a missing model was opened")
	}
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	r := newTestReranker(t, onnxtest.ModelOptions{Seed: 4}, Config{BatchSize: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Score(ctx, "tea", []string{"hot tea", "cold tea"}); err == nil {
		t.Error("a cancelled context scored")
	}
}

func TestLogitsShapes(t *testing.T) {
	t.Parallel()
	if got, err := logits([]float32{1, 3, 2, 0}, []int64{2, 2}, 2); err != nil || !slices.Equal(got, []float64{2, -2}) {
		t.Errorf("two-class: %v %v", got, err)
	}
	if got, err := logits([]float32{1, 2}, []int64{2}, 2); err != nil || !slices.Equal(got, []float64{1, 2}) {
		t.Errorf("[batch]: %v %v", got, err)
	}
	if _, err := logits([]float32{float32(math.NaN())}, []int64{1, 1}, 1); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := logits([]float32{1, 2, 3}, []int64{1, 3}, 1); err == nil {
		t.Error("[1, 3] accepted")
	}
}

// BenchmarkScore is the cost of reranking per candidate: ns/op is per
// candidate (b.N candidates in batches of the default size), with a short
// query and passages of about 100 tokens.
func BenchmarkScore(b *testing.B) {
	mo := onnxtest.ModelOptions{Dim: 384, Seed: 5}
	r := newTestReranker(b, mo, Config{})
	passage := strings.Repeat("a good cup of hot coffee and a bad cup of cold tea . ", 8)
	passages := make([]string, 50)
	for i := range passages {
		passages[i] = passage
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(passages) {
		n := min(len(passages), b.N-done)
		if _, err := r.Score(ctx, "how hot is the coffee", passages[:n]); err != nil {
			b.Fatal(err)
		}
	}
}
