// Package chunk cuts documents into the chunks a RAG pipeline embeds and
// indexes, with three strategies:
//
//   - fixed: windows of Size units, Overlap units shared by neighbours;
//   - recursive: paragraphs, then lines, sentences, words and finally single
//     units, merged back up to Size with Overlap carried across (the semantics
//     of LangChain's RecursiveCharacterTextSplitter, with Size in the configured
//     unit);
//   - semantic: sentences grouped where the embedding distance between
//     consecutive sentences stays below a percentile of all such distances,
//     groups larger than Size cut by the recursive splitter.
//
// Sizes are in tokens or characters. Characters are runes, not bytes. Tokens
// approximate what a subword tokenizer would produce without needing its
// vocabulary: a run of letters and digits is one token, every CJK character is
// one, every other visible character (punctuation, a symbol, an emoji with its
// modifiers) is one, and whitespace is none. English prose comes out close to
// a BPE tokenizer's count (long rare words count less, punctuation the same),
// which is what a chunk size is about: staying within an embedding model's
// input with room to spare.
//
// Every chunk's Text is exactly doc.Text[Start:End], trimmed of surrounding
// whitespace; whitespace-only chunks are dropped.
package chunk

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/rag"
)

// Strategies.
const (
	Fixed     = "fixed"
	Recursive = "recursive"
	Semantic  = "semantic"
)

// Units.
const (
	Tokens     = "tokens"
	Characters = "characters"
)

// Defaults.
const (
	DefaultSize       = 512
	DefaultOverlap    = 64
	DefaultPercentile = 95.0
)

// NoOverlap as Config.Overlap asks for chunks that share nothing (0 means the
// default overlap).
const NoOverlap = -1

// Config configures a chunker. The zero value is the recursive strategy with
// 512-token chunks overlapping by 64 tokens.
type Config struct {
	// Strategy is fixed, recursive or semantic; "" means recursive.
	Strategy string
	// Size is a chunk's largest size in Unit; 0 means 512.
	Size int
	// Overlap is how much of a chunk the next one repeats, in Unit, smaller
	// than Size. 0 means the default: 64, or Size/8 when Size is below 512 so
	// that a small Size alone is a valid configuration. NoOverlap means none.
	Overlap int
	// Unit is tokens or characters; "" means tokens.
	Unit string
	// Percentile is the semantic strategy's breakpoint threshold: a sentence
	// starts a new chunk when its embedding distance to the previous sentence
	// exceeds this percentile of all such distances in the document. 0 means 95.
	Percentile float64
	// MaxSentences caps a semantic chunk's sentences; 0 means no cap.
	MaxSentences int
}

// embedBatch is how many sentences go into one Embed call: few calls for a
// document, none too large for an embeddings API's request limit.
const embedBatch = 256

// New returns a chunker for cfg. emb is needed by the semantic strategy only.
func New(cfg Config, emb rag.Embedder) (rag.Chunker, error) {
	c := &chunker{cfg: cfg, emb: emb}
	switch c.cfg.Strategy {
	case "":
		c.cfg.Strategy = Recursive
	case Fixed, Recursive, Semantic:
	default:
		return nil, fmt.Errorf("rag-chunk: unknown strategy %q: write strategy: fixed, recursive or semantic", cfg.Strategy)
	}
	switch c.cfg.Unit {
	case "":
		c.cfg.Unit = Tokens
	case Tokens, Characters:
	default:
		return nil, fmt.Errorf("rag-chunk: unknown unit %q: write unit: tokens or characters", cfg.Unit)
	}
	switch {
	case c.cfg.Size < 0:
		return nil, fmt.Errorf("rag-chunk: size %d is negative: write a positive size (in %s), or leave it out for %d", cfg.Size, c.cfg.Unit, DefaultSize)
	case c.cfg.Size == 0:
		c.cfg.Size = DefaultSize
	}
	switch {
	case c.cfg.Overlap == NoOverlap:
		c.cfg.Overlap = 0
	case c.cfg.Overlap < 0:
		return nil, fmt.Errorf("rag-chunk: overlap %d is negative: write an overlap between 0 and size-1 (%d)", cfg.Overlap, c.cfg.Size-1)
	case c.cfg.Overlap == 0:
		c.cfg.Overlap = min(DefaultOverlap, c.cfg.Size/8)
	case c.cfg.Overlap >= c.cfg.Size:
		return nil, fmt.Errorf("rag-chunk: overlap %d must be smaller than size %d: lower overlap or raise size", cfg.Overlap, c.cfg.Size)
	}
	switch {
	case c.cfg.Percentile == 0:
		c.cfg.Percentile = DefaultPercentile
	case c.cfg.Percentile < 0 || c.cfg.Percentile > 100 || c.cfg.Percentile != c.cfg.Percentile:
		return nil, fmt.Errorf("rag-chunk: percentile %v is out of range: write a percentile between 0 and 100 (default %v)", cfg.Percentile, DefaultPercentile)
	}
	if c.cfg.MaxSentences < 0 {
		return nil, fmt.Errorf("rag-chunk: max_sentences %d is negative: write a positive number, or leave it out for no cap", cfg.MaxSentences)
	}
	if c.cfg.Strategy == Semantic && emb == nil {
		return nil, fmt.Errorf("rag-chunk: semantic chunking needs an embedder (a rag-embed step)")
	}
	return c, nil
}

type chunker struct {
	cfg Config
	emb rag.Embedder
}

// measure returns the size of s in the configured unit.
func (c *chunker) measure(s string) int {
	if c.cfg.Unit == Characters {
		return utf8.RuneCountInString(s)
	}
	return countTokens(s)
}

// Chunk implements rag.Chunker.
func (c *chunker) Chunk(ctx context.Context, doc rag.Document) ([]rag.Chunk, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	whole := trim(doc.Text, span{0, len(doc.Text)})
	if whole.start == whole.end {
		return nil, nil
	}
	var spans []span
	var err error
	switch c.cfg.Strategy {
	case Fixed:
		spans, err = c.fixed(ctx, doc.Text, whole)
	case Semantic:
		spans, err = c.semantic(ctx, doc.Text, whole)
	default:
		spans, err = c.recursive(ctx, doc.Text, whole)
	}
	if err != nil {
		return nil, err
	}
	return c.assemble(doc, spans), nil
}

// assemble turns spans into chunks with their ids, headings and metadata.
func (c *chunker) assemble(doc rag.Document, spans []span) []rag.Chunk {
	hs := outline(doc.Text)
	out := make([]rag.Chunk, 0, len(spans))
	for _, sp := range spans {
		sp = trim(doc.Text, sp)
		if sp.start == sp.end {
			continue
		}
		i := len(out)
		md := make(map[string]any, len(doc.Metadata)+2)
		for k, v := range doc.Metadata {
			md[k] = v
		}
		md["source"] = doc.Source
		md["title"] = doc.Title
		var headings []string
		if o := headingsAt(hs, sp.start); len(o) > 0 {
			headings = append([]string(nil), o...)
			// As metadata too, so that a filter can select a section:
			// {headings: "Install"} matches any of them.
			hl := make([]any, len(o))
			for i, h := range o {
				hl[i] = h
			}
			md["headings"] = hl
		}
		out = append(out, rag.Chunk{
			ID:       doc.ID + "#" + strconv.Itoa(i),
			DocID:    doc.ID,
			Index:    i,
			Text:     doc.Text[sp.start:sp.end],
			Title:    doc.Title,
			Start:    sp.start,
			End:      sp.end,
			Headings: headings,
			Metadata: md,
		})
	}
	return out
}
