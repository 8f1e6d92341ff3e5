// Package ragsynth generates synthetic RAG corpora of any size for benchmarks and
// scale tests: documents of Zipf-distributed words with realistic lengths, each in
// a topic cluster whose 384-dimensional (by default) vectors lie around the
// cluster's centroid, and queries drawn from the same distributions.
//
// Everything is a pure function of the seed and an index: Document(i), Vector(i)
// and Query(i) need no state but the generator, so a benchmark can stream a
// million documents without holding them, regenerate document i to check it, and
// two packages (the store's own benchmarks, bench/rag's scale mode) measure the
// same corpus from the same seed.
package ragsynth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/arvenza/helix/internal/rag"
)

// Config shapes a corpus. The zero value of a field means its default.
type Config struct {
	// Seed makes the corpus: the same seed and config give the same corpus.
	Seed uint64
	// Vocabulary is the number of distinct words; default 50,000.
	Vocabulary int
	// ZipfS is the Zipf exponent of word frequencies (> 1); default 1.07, close
	// to English text's.
	ZipfS float64
	// MeanWords is the mean length of a document's text in words (log-normal,
	// so most are near it and a few much longer); default 150, about a
	// 200-token chunk or a short abstract.
	MeanWords int
	// Clusters is the number of topics; default 256. A document's topic biases
	// its words towards the topic's own vocabulary and places its vector near
	// the topic's centroid, so keyword and vector search agree as they do on
	// real text.
	Clusters int
	// Dim is the vectors' dimension; default 384 (MiniLM, bge-small).
	Dim int
	// Tenants is the number of distinct values of the "tenant" metadata field;
	// default 8.
	Tenants int
}

// topicShare is the share of a document's words drawn from its topic's own
// vocabulary rather than the language's.
const topicShare = 0.3

// topicWords is the size of each topic's own vocabulary.
const topicWords = 2000

// Generator makes documents, vectors and queries of one corpus. Safe for
// concurrent use (it is read-only after New).
type Generator struct {
	cfg       Config
	words     []string
	centroids [][]float32
}

// New returns the generator of the corpus cfg describes.
func New(cfg Config) *Generator {
	if cfg.Vocabulary <= 0 {
		cfg.Vocabulary = 50_000
	}
	if !(cfg.ZipfS > 1) {
		cfg.ZipfS = 1.07
	}
	if cfg.MeanWords <= 0 {
		cfg.MeanWords = 150
	}
	if cfg.Clusters <= 0 {
		cfg.Clusters = 256
	}
	if cfg.Dim <= 0 {
		cfg.Dim = 384
	}
	if cfg.Tenants <= 0 {
		cfg.Tenants = 8
	}
	g := &Generator{cfg: cfg, words: make([]string, cfg.Vocabulary), centroids: make([][]float32, cfg.Clusters)}
	for i := range g.words {
		g.words[i] = word(i)
	}
	for c := range g.centroids {
		r := g.rng(streamCentroid, uint64(c))
		v := make([]float32, cfg.Dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		normalize(v)
		g.centroids[c] = v
	}
	return g
}

// Config returns the generator's configuration with defaults applied.
func (g *Generator) Config() Config { return g.cfg }

// Independent random streams per purpose, so that adding one never changes
// another's values.
const (
	streamDocument uint64 = iota + 1
	streamVector
	streamQuery
	streamCentroid
)

func (g *Generator) rng(stream, i uint64) *rand.Rand {
	return rand.New(rand.NewPCG(g.cfg.Seed^stream<<56, i))
}

// Cluster returns document i's topic.
func (g *Generator) Cluster(i int) int {
	// A multiplicative hash, not i % Clusters: consecutive documents (one
	// ingest batch) span every topic, as a real collection's do.
	return int((uint64(i) * 0x9E3779B97F4A7C15 >> 32) % uint64(g.cfg.Clusters))
}

// DocID returns document i's id.
func DocID(i int) string { return fmt.Sprintf("synth-%08d", i) }

// Document returns document i: a title of a few words, a text of Zipf words and
// metadata "cluster" (its topic, a number) and "tenant" ("t0"…).
func (g *Generator) Document(i int) rag.Document {
	r := g.rng(streamDocument, uint64(i))
	c := g.Cluster(i)
	z := rand.NewZipf(r, g.cfg.ZipfS, 1, uint64(g.cfg.Vocabulary-1))
	zt := rand.NewZipf(r, g.cfg.ZipfS, 1, topicWords-1)
	pick := func() string {
		if r.Float64() < topicShare {
			return g.words[g.topicWord(c, int(zt.Uint64()))]
		}
		return g.words[z.Uint64()]
	}
	var title strings.Builder
	for k := range 3 + r.IntN(6) {
		if k > 0 {
			title.WriteByte(' ')
		}
		title.WriteString(pick())
	}
	// Log-normal lengths with the configured mean (sigma 0.5: most texts
	// within half to twice the mean), at least 8 words.
	const sigma = 0.5
	n := int(math.Exp(math.Log(float64(g.cfg.MeanWords)) - sigma*sigma/2 + sigma*r.NormFloat64()))
	n = max(8, min(n, 8*g.cfg.MeanWords))
	var text strings.Builder
	text.Grow(n * 8)
	for k := range n {
		if k > 0 {
			if k%15 == 0 {
				text.WriteString(". ")
			} else {
				text.WriteByte(' ')
			}
		}
		text.WriteString(pick())
	}
	text.WriteByte('.')
	return rag.Document{
		ID:       DocID(i),
		Source:   "ragsynth",
		Title:    title.String(),
		Text:     text.String(),
		Metadata: map[string]any{"cluster": c, "tenant": fmt.Sprintf("t%d", i%g.cfg.Tenants)},
	}
}

// Chunks returns document i as the one chunk a store holds of it (the synthetic
// texts are chunk-sized), with the metadata a pipeline gives chunks.
func (g *Generator) Chunks(i int) []rag.Chunk {
	d := g.Document(i)
	md := map[string]any{"source": d.Source, "title": d.Title}
	for k, v := range d.Metadata {
		md[k] = v
	}
	return []rag.Chunk{{ID: d.ID + "#0", DocID: d.ID, Text: d.Text, Title: d.Title, End: len(d.Text), Metadata: md}}
}

// Vector returns document i's vector: its topic's centroid plus noise,
// normalised (cosine about 0.7 to the centroid).
func (g *Generator) Vector(i int) []float32 {
	return g.near(g.Cluster(i), g.rng(streamVector, uint64(i)))
}

// Query is a synthetic query: keywords and a vector of one topic.
type Query struct {
	Text    string
	Vector  []float32
	Cluster int
}

// Query returns query i: two to four words, mostly of one topic's vocabulary
// (a question about that topic), and a vector near the topic's centroid.
func (g *Generator) Query(i int) Query {
	r := g.rng(streamQuery, uint64(i))
	c := r.IntN(g.cfg.Clusters)
	zt := rand.NewZipf(r, g.cfg.ZipfS, 1, topicWords-1)
	// Mid-frequency words of the language: the very top ranks are stop-word
	// like and would make every query match everything.
	zg := rand.NewZipf(r, g.cfg.ZipfS, 1, uint64(g.cfg.Vocabulary-1))
	n := 2 + r.IntN(3)
	words := make([]string, n)
	for k := range words {
		if k == n-1 && n > 2 {
			words[k] = g.words[min(int(zg.Uint64())+50, g.cfg.Vocabulary-1)]
		} else {
			words[k] = g.words[g.topicWord(c, int(zt.Uint64()))]
		}
	}
	return Query{Text: strings.Join(words, " "), Vector: g.near(c, r), Cluster: c}
}

// topicWord maps rank k of topic c's vocabulary to a word: each topic owns a
// stretch of the language's less common words.
func (g *Generator) topicWord(c, k int) int {
	base := 1000 // the commonest words belong to no topic
	return base + (c*topicWords+k)%max(1, g.cfg.Vocabulary-base)
}

func (g *Generator) near(c int, r *rand.Rand) []float32 {
	v := make([]float32, g.cfg.Dim)
	noise := 1 / math.Sqrt(float64(g.cfg.Dim))
	for j := range v {
		v[j] = g.centroids[c][j] + float32(noise*r.NormFloat64())
	}
	normalize(v)
	return v
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(s))
	for j := range v {
		v[j] *= inv
	}
}

// syllables make pronounceable, distinct words: word i is i written in base
// len(syllables), so no two ranks share a word.
var syllables = []string{"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "da", "fe", "gu", "ha", "jo", "pe", "ri", "zu",
	"bar", "kel", "mon", "tis", "dor", "fen", "gal", "hum", "lin", "pas", "rok", "sul", "tam", "vor", "wen", "yat"}

func word(i int) string {
	var b strings.Builder
	n := i
	for {
		b.WriteString(syllables[n%len(syllables)])
		n /= len(syllables)
		if n == 0 {
			break
		}
	}
	// Two syllables at least: one-syllable words ("to", "mi") collide with
	// English stop words the analyzer drops.
	if i < len(syllables) {
		b.WriteString("x")
	}
	return b.String()
}
