//go:build cgo

package onnx

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/embed/onnx/onnxtest"
	"github.com/arvenza/helix/internal/testtools"
)

// newTestEmbedder writes a generated model and tokenizer and loads them with the
// ONNX Runtime library of the test tools (skipping when there is none).
func newTestEmbedder(t *testing.T, mo onnxtest.ModelOptions, cfg Config) *Embedder {
	t.Helper()
	lib := testtools.ONNXRuntimeLib(t)
	dir := t.TempDir()
	cfg.ModelPath = onnxtest.WriteModel(t, dir, mo)
	onnxtest.WriteTokenizer(t, dir, nil)
	cfg.LibraryPath = lib
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// expected is the model's vector for text by construction: the mean (or the
// first) of its tokens' rows in the embedding table, normalised.
func expected(t *testing.T, e *Embedder, mo onnxtest.ModelOptions, text string, cls, normalize bool) []float32 {
	t.Helper()
	enc, err := e.encode(text)
	if err != nil {
		t.Fatal(err)
	}
	table := onnxtest.Table(mo)
	v := make([]float32, len(table[0]))
	ids := enc.ids
	if cls {
		ids = ids[:1]
	}
	for _, id := range ids {
		for k, x := range table[id] {
			v[k] += x / float32(len(ids))
		}
	}
	if normalize {
		l2normalize(v)
	}
	return v
}

func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-5 {
			return false
		}
	}
	return true
}

func norm2(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestEmbedMeanPoolingNormalised(t *testing.T) {
	mo := onnxtest.ModelOptions{Dim: 16, Seed: 1}
	e := newTestEmbedder(t, mo, Config{})
	if !regexp.MustCompile(`^onnx:model\.onnx:[0-9a-f]{12}$`).MatchString(e.Model()) {
		t.Errorf("Model() = %q", e.Model())
	}
	texts := []string{"the coffee is hot", "tea", "a good cup of coffee, and a bad cup of tea!", ""}
	got, err := e.Embed(context.Background(), texts, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(got), len(texts))
	}
	for i, v := range got {
		if len(v) != 16 {
			t.Fatalf("vector %d has %d dimensions, want 16", i, len(v))
		}
		if n := norm2(v); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d has length %v", i, n)
		}
		if want := expected(t, e, mo, texts[i], false, true); !near(v, want) {
			t.Errorf("vector %d (%q) = %v, want %v", i, texts[i], v, want)
		}
	}
}

func TestPaddingIgnored(t *testing.T) {
	e := newTestEmbedder(t, onnxtest.ModelOptions{Seed: 2}, Config{})
	ctx := context.Background()
	alone, err := e.Embed(ctx, []string{"hot tea"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := e.Embed(ctx, []string{"the long text of a long document is a long text", "hot tea"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	if !near(alone[0], batch[1]) {
		t.Errorf("padding changed the vector:\nalone    %v\nin batch %v", alone[0], batch[1])
	}
}

func TestBatchesSplit(t *testing.T) {
	mo := onnxtest.ModelOptions{Seed: 3}
	e := newTestEmbedder(t, mo, Config{BatchSize: 2})
	texts := []string{"a", "the cup", "coffee and tea", "good", "cold cold cold"}
	got, err := e.Embed(context.Background(), texts, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if want := expected(t, e, mo, texts[i], false, true); !near(v, want) {
			t.Errorf("vector %d (%q) is not its own", i, texts[i])
		}
	}
}

func TestAccentedTextsEmbedAlike(t *testing.T) {
	e := newTestEmbedder(t, onnxtest.ModelOptions{Seed: 4}, Config{})
	got, err := e.Embed(context.Background(), []string{"Café", "cafe"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	if !near(got[0], got[1]) {
		t.Errorf("Café and cafe embed differently: %v vs %v", got[0], got[1])
	}
}

func TestQueryPrefix(t *testing.T) {
	e := newTestEmbedder(t, onnxtest.ModelOptions{Seed: 5}, Config{QueryPrefix: "query: ", DocumentPrefix: "passage: "})
	ctx := context.Background()
	q, err := e.Embed(ctx, []string{"hot coffee"}, rag.EmbedQuery)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Embed(ctx, []string{"hot coffee"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	if near(q[0], d[0]) {
		t.Error("query and document prefixes made no difference")
	}
	noDocPrefix := *e
	noDocPrefix.cfg.DocumentPrefix = ""
	plain, err := noDocPrefix.Embed(ctx, []string{"query: hot coffee"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	if !near(q[0], plain[0]) {
		t.Error("the query prefix is not simply prepended")
	}
}

func TestTruncatedAtMaxLength(t *testing.T) {
	mo := onnxtest.ModelOptions{Seed: 6}
	e := newTestEmbedder(t, mo, Config{MaxLength: 4})
	got, err := e.Embed(context.Background(), []string{"hot tea is good", "hot tea and coffee", "hot"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	// Both keep [CLS] hot tea [SEP].
	if !near(got[0], got[1]) {
		t.Error("texts equal in their first two words differ after truncation to 4 tokens")
	}
	if near(got[0], got[2]) {
		t.Error("truncated too much")
	}
}

func TestCLSPoolingAndNoNormalize(t *testing.T) {
	mo := onnxtest.ModelOptions{Seed: 7}
	no := false
	e := newTestEmbedder(t, mo, Config{Pooling: "cls", Normalize: &no})
	got, err := e.Embed(context.Background(), []string{"good tea", "bad coffee"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	want := expected(t, e, mo, "good tea", true, false)
	if !near(got[0], want) || !near(got[1], want) {
		t.Errorf("cls pooling: %v, want the [CLS] row %v for every text", got, want)
	}
	if math.Abs(norm2(got[0])-1) < 1e-3 {
		t.Error("vector normalised although normalize is false")
	}
}

func TestModelInputsAsDeclared(t *testing.T) {
	// A model taking only input_ids (DistilBERT-style) must be fed only that:
	// ONNX Runtime rejects unknown inputs.
	mo := onnxtest.ModelOptions{Seed: 8, Inputs: []string{"input_ids"}, Output: "token_embeddings"}
	e := newTestEmbedder(t, mo, Config{})
	got, err := e.Embed(context.Background(), []string{"hot tea"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	if want := expected(t, e, mo, "hot tea", false, true); !near(got[0], want) {
		t.Errorf("got %v, want %v", got[0], want)
	}
}

func TestModelWithoutInputIDs(t *testing.T) {
	lib := testtools.ONNXRuntimeLib(t)
	dir := t.TempDir()
	p := onnxtest.WriteModel(t, dir, onnxtest.ModelOptions{Inputs: []string{"pixels"}})
	onnxtest.WriteTokenizer(t, dir, nil)
	_, err := New(Config{ModelPath: p, LibraryPath: lib})
	if err == nil || !strings.Contains(err.Error(), `input "pixels"`) {
		t.Errorf("err = %v", err)
	}
}

func TestNotAModel(t *testing.T) {
	lib := testtools.ONNXRuntimeLib(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "model.onnx")
	os.WriteFile(p, []byte("this is not protobuf"), 0o644)
	onnxtest.WriteTokenizer(t, dir, nil)
	_, err := New(Config{ModelPath: p, LibraryPath: lib})
	if err == nil || !strings.Contains(err.Error(), "onnx: model "+p) {
		t.Errorf("err = %v", err)
	}
}

func TestConcurrentEmbed(t *testing.T) {
	mo := onnxtest.ModelOptions{Seed: 9}
	e := newTestEmbedder(t, mo, Config{BatchSize: 3})
	texts := []string{"the cafe", "hot tea is good", "a cup", "coffee", "cold coffee is bad", "search the document"}
	want, err := e.Embed(context.Background(), texts, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 5 {
				got, err := e.Embed(context.Background(), texts[g%3:], rag.EmbedDocument)
				if err != nil {
					t.Error(err)
					return
				}
				for i, v := range got {
					if !near(v, want[g%3+i]) {
						t.Errorf("goroutine %d: vector %d differs", g, i)
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestCancelledAndClosed(t *testing.T) {
	e := newTestEmbedder(t, onnxtest.ModelOptions{}, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"tea"}, rag.EmbedDocument); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"tea"}, rag.EmbedDocument); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("closed: err = %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestMissingLibrary runs in a child process: the runtime is loaded once per
// process, and this one may have loaded the real library already.
func TestMissingLibrary(t *testing.T) {
	if os.Getenv("HELIX_ONNX_MISSING_LIB_CHILD") == "1" {
		missingLibraryChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingLibrary$", "-test.v")
	cmd.Env = append(os.Environ(), "HELIX_ONNX_MISSING_LIB_CHILD=1", "HELIX_ONNX_RETRY_LIB="+os.Getenv(testtools.EnvONNXRuntimeLib))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestMissingLibrary") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func missingLibraryChild(t *testing.T) {
	dir := t.TempDir()
	model := onnxtest.WriteModel(t, dir, onnxtest.ModelOptions{})
	onnxtest.WriteTokenizer(t, dir, nil)
	missing := filepath.Join(dir, "no", "libonnxruntime.so.1")
	// From the config, then from the environment.
	_, err := New(Config{ModelPath: model, LibraryPath: missing})
	want := "onnx: cannot load ONNX Runtime from " + missing
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "set library_path or HELIX_ONNXRUNTIME_LIB") {
		t.Errorf("err = %v, want %q", err, want)
	}
	// A file that is not a shared library.
	junk := filepath.Join(dir, "libjunk.so")
	os.WriteFile(junk, []byte("not ELF"), 0o644)
	_, err = New(Config{ModelPath: model, LibraryPath: junk})
	if err == nil || !strings.Contains(err.Error(), "onnx: cannot load ONNX Runtime from "+junk) {
		t.Errorf("err = %v", err)
	}
	t.Setenv(LibraryEnv, missing+".env")
	_, err = New(Config{ModelPath: model})
	if err == nil || !strings.Contains(err.Error(), missing+".env") {
		t.Errorf("err = %v, want the path from %s", err, LibraryEnv)
	}
	// A failed load can be retried with the right library.
	if lib := os.Getenv("HELIX_ONNX_RETRY_LIB"); lib != "" {
		e, err := New(Config{ModelPath: model, LibraryPath: lib})
		if err != nil {
			t.Fatalf("retry with the library: %v", err)
		}
		e.Close()
	}
}

// BenchmarkEmbed measures Helix's side of local embedding (tokenizing, padding,
// tensors, pooling) with a model that does almost nothing: per text.
func BenchmarkEmbed(b *testing.B) {
	lib := testtools.ONNXRuntimeLib(b)
	dir := b.TempDir()
	model := onnxtest.WriteModel(b, dir, onnxtest.ModelOptions{Dim: 384})
	onnxtest.WriteTokenizer(b, dir, nil)
	e, err := New(Config{ModelPath: model, LibraryPath: lib})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	texts := make([]string, 256)
	for i := range texts {
		texts[i] = strings.Repeat("the hot coffee is good and the cold tea is bad. ", 1+i%8)
	}
	for b.Loop() {
		if _, err := e.Embed(context.Background(), texts, rag.EmbedDocument); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(texts)), "ns/text")
}
