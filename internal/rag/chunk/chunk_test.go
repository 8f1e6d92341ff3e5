package chunk

import (
	"context"
	"encoding/json"
	"flag"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/rag"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// bagOfWords is a deterministic fake embedder: each word (lower case) adds 1 to
// one of 64 dimensions chosen by its hash, so sentences sharing words are close.
type bagOfWords struct {
	mu    sync.Mutex
	calls int
}

func (e *bagOfWords) Embed(_ context.Context, texts []string, kind rag.EmbedKind) ([][]float32, error) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !isWordRune(r) && !isCJK(r) }) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%64]++
		}
		out[i] = v
	}
	return out, nil
}

func (e *bagOfWords) Model() string { return "test:bag-of-words" }

type goldenChunk struct {
	ID       string   `json:"id"`
	Start    int      `json:"start"`
	End      int      `json:"end"`
	Headings []string `json:"headings,omitempty"`
	Text     string   `json:"text"`
}

var goldenConfigs = map[string]Config{
	"fixed-tokens":         {Strategy: Fixed, Size: 24, Overlap: 6},
	"fixed-characters":     {Strategy: Fixed, Size: 80, Overlap: 16, Unit: Characters},
	"recursive-tokens":     {Strategy: Recursive, Size: 24, Overlap: 6},
	"recursive-characters": {Strategy: Recursive, Size: 80, Overlap: 16, Unit: Characters},
	"semantic-tokens":      {Strategy: Semantic, Size: 48, Overlap: 6, Percentile: 70},
}

func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.*")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		if ext := filepath.Ext(in); ext != ".md" && ext != ".txt" {
			continue
		}
		raw, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for name, cfg := range goldenConfigs {
			golden := strings.TrimSuffix(in, filepath.Ext(in)) + "." + name + ".golden"
			t.Run(filepath.Base(golden), func(t *testing.T) {
				c, err := New(cfg, &bagOfWords{})
				if err != nil {
					t.Fatal(err)
				}
				doc := rag.Document{ID: filepath.Base(in), Text: text}
				chunks, err := c.Chunk(context.Background(), doc)
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, c.(*chunker), text, chunks)
				got := make([]goldenChunk, len(chunks))
				for i, ch := range chunks {
					got[i] = goldenChunk{ch.ID, ch.Start, ch.End, ch.Headings, ch.Text}
				}
				b, _ := json.MarshalIndent(got, "", "  ")
				b = append(b, '\n')
				if *update {
					if err := os.WriteFile(golden, b, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./internal/rag/chunk -update to create it)", err)
				}
				if string(want) != string(b) {
					t.Errorf("chunks differ from %s (run with -update after checking the change):\n%s", golden, b)
				}
			})
		}
	}
}

// checkInvariants checks what every chunking must satisfy: exact offsets,
// trimmed non-empty text, ids in order, sizes within Size, the whole text
// covered in order with only whitespace between chunks, and overlaps within
// Overlap.
func checkInvariants(t *testing.T, c *chunker, text string, chunks []rag.Chunk) {
	t.Helper()
	whole := trim(text, span{0, len(text)})
	if whole.start == whole.end {
		if len(chunks) != 0 {
			t.Fatalf("whitespace-only text gave %d chunks", len(chunks))
		}
		return
	}
	if len(chunks) == 0 {
		t.Fatalf("no chunks for %q", text)
	}
	for i, ch := range chunks {
		if ch.Index != i || ch.ID != ch.DocID+"#"+itoa(i) {
			t.Fatalf("chunk %d has index %d id %q", i, ch.Index, ch.ID)
		}
		if ch.Start < 0 || ch.End > len(text) || ch.Start >= ch.End || text[ch.Start:ch.End] != ch.Text {
			t.Fatalf("chunk %d: offsets [%d:%d] do not give its text %q", i, ch.Start, ch.End, ch.Text)
		}
		if trim(text, span{ch.Start, ch.End}) != (span{ch.Start, ch.End}) {
			t.Fatalf("chunk %d is not trimmed: %q", i, ch.Text)
		}
		if n := c.measure(ch.Text); n > c.cfg.Size {
			t.Fatalf("chunk %d has %d %s, more than size %d: %q", i, n, c.cfg.Unit, c.cfg.Size, ch.Text)
		}
		if i == 0 {
			if ch.Start != whole.start {
				t.Fatalf("first chunk starts at %d, text at %d", ch.Start, whole.start)
			}
			continue
		}
		prev := chunks[i-1]
		if ch.Start <= prev.Start || ch.End <= prev.End {
			t.Fatalf("chunk %d [%d:%d] does not follow chunk %d [%d:%d]", i, ch.Start, ch.End, i-1, prev.Start, prev.End)
		}
		if ch.Start > prev.End {
			if gap := text[prev.End:ch.Start]; strings.TrimSpace(gap) != "" && trim(text, span{prev.End, ch.Start}).start != ch.Start {
				t.Fatalf("text %q between chunks %d and %d is in no chunk", gap, i-1, i)
			}
		} else if n := c.measure(text[ch.Start:prev.End]); n > c.cfg.Overlap {
			t.Fatalf("chunks %d and %d overlap by %d %s, more than %d", i-1, i, n, c.cfg.Unit, c.cfg.Overlap)
		}
	}
	if last := chunks[len(chunks)-1]; last.End != whole.end {
		t.Fatalf("last chunk ends at %d, text at %d", last.End, whole.end)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestPropertiesRandomText(t *testing.T) {
	words := []string{"alpha", "beta.", "Gamma", "don't", "3.14", "e.g.", "東京", "は", "👍🏽", "\n", "\n\n", "—", "x", "Dr.", "supercalifragilisticexpialidocious", "  ", "é", "\r\n", "?", "# Head\n"}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		var sb strings.Builder
		for range rng.IntN(120) {
			sb.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(3) > 0 {
				sb.WriteByte(' ')
			}
		}
		text := sb.String()
		size := 1 + rng.IntN(30)
		cfg := Config{
			Strategy: []string{Fixed, Recursive, Semantic}[round%3],
			Size:     size,
			Overlap:  []int{NoOverlap, rng.IntN(size) + 0}[rng.IntN(2)],
			Unit:     []string{Tokens, Characters}[rng.IntN(2)],
		}
		if cfg.Overlap == 0 {
			cfg.Overlap = NoOverlap
		}
		c, err := New(cfg, &bagOfWords{})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := c.Chunk(context.Background(), rag.Document{ID: "d", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		t.Run("", func(t *testing.T) { checkInvariants(t, c.(*chunker), text, chunks) })
		if t.Failed() {
			t.Fatalf("config %+v text %q", cfg, text)
		}
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("Hello world. This is a test.\n\nSecond paragraph!", uint8(0), uint8(5), uint8(2), false)
	f.Add("# T\n\n東京は日本の首都です。👨‍👩‍👧 e\u0301\r\n\r\nok", uint8(1), uint8(3), uint8(1), true)
	f.Add("\xff\xfe bad utf8 \xc3", uint8(2), uint8(1), uint8(0), false)
	f.Fuzz(func(t *testing.T, text string, strategy, size, overlap uint8, chars bool) {
		cfg := Config{Strategy: []string{Fixed, Recursive, Semantic}[int(strategy)%3], Size: int(size)%40 + 1, Unit: Tokens}
		cfg.Overlap = int(overlap) % cfg.Size
		if cfg.Overlap == 0 {
			cfg.Overlap = NoOverlap
		}
		if chars {
			cfg.Unit = Characters
		}
		c, err := New(cfg, &bagOfWords{})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := c.Chunk(context.Background(), rag.Document{ID: "d", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, c.(*chunker), text, chunks)
	})
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		emb  rag.Embedder
		want string
	}{
		{Config{Strategy: "sliding"}, nil, "write strategy: fixed, recursive or semantic"},
		{Config{Unit: "bytes"}, nil, "write unit: tokens or characters"},
		{Config{Size: -1}, nil, "write a positive size"},
		{Config{Size: 100, Overlap: 100}, nil, "overlap 100 must be smaller than size 100"},
		{Config{Overlap: -5}, nil, "overlap -5 is negative"},
		{Config{Percentile: 120}, nil, "write a percentile between 0 and 100"},
		{Config{MaxSentences: -1}, nil, "max_sentences -1 is negative"},
		{Config{Strategy: Semantic}, nil, "semantic chunking needs an embedder (a rag-embed step)"},
	} {
		_, err := New(tc.cfg, tc.emb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	c, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.(*chunker).cfg; got != (Config{Strategy: Recursive, Size: 512, Overlap: 64, Unit: Tokens, Percentile: 95}) {
		t.Errorf("defaults = %+v", got)
	}
	c, _ = New(Config{Size: 100}, nil)
	if got := c.(*chunker).cfg.Overlap; got != 12 {
		t.Errorf("default overlap for size 100 = %d, want 12", got)
	}
}

func TestSentences(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Hello world. This is fine.", []string{"Hello world.", "This is fine."}},
		{"See e.g. the docs. Then go.", []string{"See e.g. the docs.", "Then go."}},
		{"Dr. Who met Mr. Smith. Fig. 3 shows it.", []string{"Dr. Who met Mr. Smith.", "Fig. 3 shows it."}},
		{"Smith et al. Showed it. Pi is 3.14 exactly. Yes!", []string{"Smith et al. Showed it.", "Pi is 3.14 exactly.", "Yes!"}},
		{"It was lowercase. then it continues.", []string{"It was lowercase. then it continues."}},
		{`He said "Stop." "Why?" she asked.`, []string{`He said "Stop."`, `"Why?" she asked.`}},
		{"Wait... What?! 42 is the answer.", []string{"Wait...", "What?!", "42 is the answer."}},
		{"One line\nwrapped here.\n\nNew paragraph", []string{"One line\nwrapped here.", "New paragraph"}},
		{"# Title\nText under it.\n- item one\n- item two", []string{"# Title", "Text under it.", "- item one", "- item two"}},
		{"J. R. R. Tolkien wrote it. Done.", []string{"J. R. R. Tolkien wrote it.", "Done."}},
		{"東京です。大阪です！本当？はい", []string{"東京です。", "大阪です！", "本当？", "はい"}},
		{"Line one.\r\n\r\nLine two.", []string{"Line one.", "Line two."}},
	} {
		var got []string
		for _, sp := range sentences(tc.in, span{0, len(tc.in)}) {
			got = append(got, tc.in[sp.start:sp.end])
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("sentences(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
		}
	}
}

func TestTokens(t *testing.T) {
	for in, want := range map[string]int{
		"":                      0,
		"hello world":           2,
		"don't":                 3,
		"東京は":                   3,
		"👍🏽":                    1,
		"👨‍👩‍👧":                 1,
		"e\u0301t\u00e9":        1,
		"3.14":                  3,
		"a,b":                   3,
		"\xff\xfe":              2,
		"   \t\n":               0,
		"naïve café, coöperate": 4,
	} {
		if got := countTokens(in); got != want {
			t.Errorf("countTokens(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestHeadings(t *testing.T) {
	text := "---\ntitle: x\n---\n# A\n\ntext\n\n## B ##\n\n```\n# code\n```\n\nC\n===\n\nD\n---\n\n### E\n"
	var got [][]string
	for _, h := range outline(text) {
		got = append(got, h.outline)
	}
	want := [][]string{{"A"}, {"A", "B"}, {"C"}, {"C", "D"}, {"C", "D", "E"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("outline = %q, want %q", got, want)
	}
}

func TestChunkMetadataAndEmpty(t *testing.T) {
	c, _ := New(Config{Size: 4, Overlap: NoOverlap}, nil)
	doc := rag.Document{ID: "a/b.md", Source: "file://docs/a/b.md", Title: "B", Text: "# Head\n\none two three four five", Metadata: map[string]any{"lang": "en"}}
	chunks, err := c.Chunk(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 3 {
		t.Fatalf("got %d chunks: %+v", len(chunks), chunks)
	}
	want := map[string]any{"lang": "en", "source": "file://docs/a/b.md", "title": "B", "headings": []any{"Head"}}
	if !reflect.DeepEqual(chunks[1].Metadata, want) || chunks[1].ID != "a/b.md#1" || !reflect.DeepEqual(chunks[1].Headings, []string{"Head"}) {
		t.Errorf("chunk 1 = %+v", chunks[1])
	}
	for i, ch := range chunks {
		if ch.Title != "B" {
			t.Errorf("chunk %d has title %q, want the document's %q", i, ch.Title, "B")
		}
	}
	chunks[0].Metadata["x"] = 1
	if _, ok := doc.Metadata["x"]; ok {
		t.Error("a chunk's metadata aliases the document's")
	}
	for _, text := range []string{"", " \n\t\r\n "} {
		if chunks, err := c.Chunk(context.Background(), rag.Document{ID: "e", Text: text}); err != nil || len(chunks) != 0 {
			t.Errorf("Chunk(%q) = %v, %v; want no chunks", text, chunks, err)
		}
	}
}

func TestFixedKeepsWordsWhole(t *testing.T) {
	c, _ := New(Config{Strategy: Fixed, Size: 4, Overlap: 1}, nil)
	text := "we don't split words inside, ever. 東京は日本"
	chunks, _ := c.Chunk(context.Background(), rag.Document{ID: "d", Text: text})
	for _, ch := range chunks {
		if ch.Start > 0 {
			before, _ := utf8.DecodeLastRuneInString(text[:ch.Start])
			first, _ := utf8.DecodeRuneInString(ch.Text)
			if isWordRune(before) && isWordRune(first) || before == '\'' || first == '\'' {
				t.Errorf("chunk %q starts inside a word", ch.Text)
			}
		}
		if ch.End < len(text) {
			after, _ := utf8.DecodeRuneInString(text[ch.End:])
			last, _ := utf8.DecodeLastRuneInString(ch.Text)
			if isWordRune(after) && isWordRune(last) || after == '\'' || last == '\'' {
				t.Errorf("chunk %q ends inside a word", ch.Text)
			}
		}
	}
}

func TestSemanticBreaksAtTopicChange(t *testing.T) {
	emb := &bagOfWords{}
	c, _ := New(Config{Strategy: Semantic, Size: 200, Percentile: 50}, emb)
	text := "Cats purr. Cats purr loudly. Cats purr softly. Rockets launch fast. Rockets launch high. Rockets launch today."
	chunks, err := c.Chunk(context.Background(), rag.Document{ID: "d", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range chunks {
		got = append(got, ch.Text)
	}
	want := []string{"Cats purr. Cats purr loudly. Cats purr softly.", "Rockets launch fast. Rockets launch high. Rockets launch today."}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("semantic chunks = %q, want %q", got, want)
	}
	if emb.calls != 1 {
		t.Errorf("%d Embed calls for 6 sentences, want 1 batch", emb.calls)
	}
	c, _ = New(Config{Strategy: Semantic, Size: 200, Percentile: 100, MaxSentences: 2}, emb)
	chunks, _ = c.Chunk(context.Background(), rag.Document{ID: "d", Text: text})
	if len(chunks) != 3 {
		t.Errorf("max_sentences 2 gave %d chunks, want 3", len(chunks))
	}
}

type failingEmbedder struct{}

func (failingEmbedder) Embed(context.Context, []string, rag.EmbedKind) ([][]float32, error) {
	return [][]float32{{1}}, nil
}
func (failingEmbedder) Model() string { return "test:short" }

func TestSemanticEmbedderMismatch(t *testing.T) {
	c, _ := New(Config{Strategy: Semantic}, failingEmbedder{})
	_, err := c.Chunk(context.Background(), rag.Document{ID: "d", Text: "One here. Two here. Three here."})
	if err == nil || !strings.Contains(err.Error(), "returned 1 vectors for 3 sentences") {
		t.Errorf("err = %v", err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, _ := New(Config{}, nil)
	if _, err := c.Chunk(ctx, rag.Document{ID: "d", Text: "text"}); err == nil {
		t.Error("a canceled context gave no error")
	}
}
