package onnx

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag/embed/onnx/onnxtest"
)

// These tests need no ONNX Runtime: they cover what happens before the model runs.

func tokenizerOnly(t *testing.T, maxLength int) *Embedder {
	t.Helper()
	p := onnxtest.WriteTokenizer(t, t.TempDir(), nil)
	tok, strip, err := loadTokenizer(p, maxLength)
	if err != nil {
		t.Fatal(err)
	}
	return &Embedder{cfg: Config{MaxLength: maxLength}, tok: tok, stripAccents: strip}
}

func id(word string) int { return 4 + slices.Index(onnxtest.Words, word) }

func TestTokenizerBertStyle(t *testing.T) {
	e := tokenizerOnly(t, 256)
	enc, err := e.encode("The coffee is HOT!")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{onnxtest.ClsID, id("the"), id("coffee"), id("is"), id("hot"), id("!"), onnxtest.SepID}
	if !slices.Equal(enc.ids, want) {
		t.Errorf("ids %v, want %v", enc.ids, want)
	}
	// WordPiece continuation and unknown words.
	enc, _ = e.encode("cups zebra")
	want = []int{onnxtest.ClsID, id("cup"), id("##s"), onnxtest.UnkID, onnxtest.SepID}
	if !slices.Equal(enc.ids, want) {
		t.Errorf("ids %v, want %v", enc.ids, want)
	}
}

func TestAccentsStrippedWhenLowercasing(t *testing.T) {
	e := tokenizerOnly(t, 256)
	if !e.stripAccents {
		t.Fatal("strip_accents null with lowercase true must strip accents")
	}
	plain, _ := e.encode("cafe")
	for _, s := range []string{"Café", "CAFÉ", "cafe\u0301" /* decomposed */, "Cafè"} {
		enc, err := e.encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(enc.ids, plain.ids) {
			t.Errorf("%q → %v, want %v (as cafe)", s, enc.ids, plain.ids)
		}
	}
	if plain.ids[1] != id("cafe") {
		t.Errorf("cafe → %v", plain.ids)
	}
}

func TestAccentsKeptWhenConfigured(t *testing.T) {
	dir := t.TempDir()
	p := onnxtest.WriteTokenizer(t, dir, nil)
	data, _ := os.ReadFile(p)
	data = []byte(strings.Replace(string(data), `"strip_accents": null`, `"strip_accents": false`, 1))
	os.WriteFile(p, data, 0o644)
	_, strip, err := loadTokenizer(p, 16)
	if err != nil || strip {
		t.Errorf("strip_accents false: strip=%v err=%v", strip, err)
	}
}

func TestTruncation(t *testing.T) {
	e := tokenizerOnly(t, 5)
	enc, err := e.encode("the cafe is good and the tea is hot")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{onnxtest.ClsID, id("the"), id("cafe"), id("is"), onnxtest.SepID}
	if !slices.Equal(enc.ids, want) {
		t.Errorf("ids %v, want %v ([CLS] 3 words [SEP])", enc.ids, want)
	}
}

func TestStripAccents(t *testing.T) {
	for in, want := range map[string]string{"Café": "Cafe", "naïve Ångström": "naive Angstrom", "plain": "plain", "日本": "日本"} {
		if got := stripAccents(in); got != want {
			t.Errorf("stripAccents(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBadTokenizerFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	for name, c := range map[string]struct{ path, want string }{
		"missing":     {filepath.Join(dir, "nope.json"), "no such file"},
		"not json":    {write("a.json", "{not json"), "tokenizer"},
		"bpe":         {write("b.json", `{"model":{"type":"BPE","vocab":{}}}`), "only WordPiece"},
		"wrong types": {write("c.json", `{"model":{"type":"WordPiece","vocab":5},"normalizer":{"type":"BertNormalizer"}}`), "malformed tokenizer.json"},
		"bad processor": {write("d.json", `{"model":{"type":"WordPiece","vocab":{"a":0}},"post_processor":{"type":"TemplateProcessing","single":"x"}}`),
			"malformed tokenizer.json"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := loadTokenizer(c.path, 16)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "onnx: tokenizer") {
				t.Errorf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.onnx")
	os.WriteFile(model, onnxtest.Model(onnxtest.ModelOptions{}), 0o644)
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"no model":      {Config{}, "model_path is required"},
		"missing model": {Config{ModelPath: filepath.Join(dir, "missing.onnx")}, "missing.onnx"},
		"pooling":       {Config{ModelPath: model, Pooling: "max"}, `pooling "max"`},
		"max length":    {Config{ModelPath: model, MaxLength: 1}, "max_length 1"},
		"no tokenizer":  {Config{ModelPath: model}, "tokenizer.json"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestPool(t *testing.T) {
	// batch 1, seq 3 (last is padding), dim 2
	data := []float32{1, 0, 3, 4, 100, 100}
	mask := []int64{1, 1, 0}
	got, err := pool(data, []int64{1, 3, 2}, 1, 3, mask, "mean", false)
	if err != nil || !slices.Equal(got[0], []float32{2, 2}) {
		t.Errorf("mean: %v %v", got, err)
	}
	got, _ = pool(data, []int64{1, 3, 2}, 1, 3, mask, "cls", false)
	if !slices.Equal(got[0], []float32{1, 0}) {
		t.Errorf("cls: %v", got)
	}
	got, _ = pool([]float32{3, 4}, []int64{1, 2}, 1, 3, mask, "mean", true)
	if !slices.Equal(got[0], []float32{0.6, 0.8}) {
		t.Errorf("sentence vectors, normalised: %v", got)
	}
	if _, err := pool(data, []int64{2, 3, 1}, 1, 3, mask, "mean", false); err == nil {
		t.Error("wrong shape accepted")
	}
	if _, err := pool(data[:5], []int64{1, 3, 2}, 1, 3, mask, "mean", false); err == nil {
		t.Error("short data accepted")
	}
}
