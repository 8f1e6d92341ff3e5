package chunk

import (
	"context"
	"fmt"
	"math"
	"sort"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/rag"
)

// fixed cuts windows of Size units, each starting Size-Overlap units after the
// previous one.
func (c *chunker) fixed(ctx context.Context, s string, whole span) ([]span, error) {
	if c.cfg.Unit == Characters {
		return c.fixedRunes(ctx, s, whole)
	}
	size, overlap := c.cfg.Size, c.cfg.Overlap
	toks := tokens(s, whole)
	// sameWord reports whether tokens k and k+1 are pieces of one word
	// ("don" "'" "t"): a window boundary there is avoided when the window
	// can end at an earlier word boundary instead.
	sameWord := func(k int) bool {
		return toks[k].end == toks[k+1].start && !toks[k].cjk && !toks[k+1].cjk
	}
	var out []span
	prevEnd := -1 // the previous window's last token
	for i := 0; i < len(toks); {
		if len(out)%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		j := min(i+size, len(toks)) - 1
		if j+1 < len(toks) && sameWord(j) {
			k := j - 1
			for k >= i && sameWord(k) {
				k--
			}
			// Else one word longer than the room left: cut it between tokens
			// rather than end where the previous window ended.
			if k >= i && k > prevEnd {
				j = k
			}
		}
		out = append(out, span{toks[i].start, toks[j].end})
		prevEnd = j
		if j == len(toks)-1 {
			break
		}
		next := max(j+1-overlap, i+1)
		for next <= j && sameWord(next-1) {
			next++ // the overlap starts at a word's beginning
		}
		i = next
	}
	return out, nil
}

// fixedRunes is fixed in characters: windows on rune boundaries.
func (c *chunker) fixedRunes(ctx context.Context, s string, whole span) ([]span, error) {
	advance := func(from, runes int) int {
		for runes > 0 && from < whole.end {
			_, n := utf8.DecodeRuneInString(s[from:whole.end])
			from += n
			runes--
		}
		return from
	}
	var out []span
	for b := whole.start; b < whole.end; b = advance(b, c.cfg.Size-c.cfg.Overlap) {
		if len(out)%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		e := advance(b, c.cfg.Size)
		// Trimming can make windows nest: a window ending where the previous
		// one ends holds nothing new, one starting where it starts replaces it.
		w := trim(s, span{b, e})
		switch {
		case w.start == w.end || (len(out) > 0 && w.end <= out[len(out)-1].end):
		case len(out) > 0 && w.start == out[len(out)-1].start:
			out[len(out)-1] = w
		default:
			out = append(out, w)
		}
		if e >= whole.end {
			break
		}
	}
	return out, nil
}

// Levels of the recursive splitter, coarsest first.
const (
	levelParagraphs = iota
	levelSentences
	levelLines
	levelWords
	levelUnits
)

func (c *chunker) recursive(ctx context.Context, s string, whole span) ([]span, error) {
	var out []span
	if err := c.split(ctx, s, whole, levelParagraphs, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// pieces cuts sp at one level's boundaries.
func (c *chunker) pieces(s string, sp span, level int) []span {
	switch level {
	case levelParagraphs:
		return splitAtBlankLines(s, sp)
	case levelSentences:
		return sentences(s, sp)
	case levelLines:
		return splitAtLineBreaks(s, sp)
	case levelWords:
		return splitAtSpaces(s, sp)
	}
	if c.cfg.Unit == Characters {
		return splitRunes(s, sp)
	}
	toks := tokens(s, sp)
	out := make([]span, len(toks))
	for i, t := range toks {
		out[i] = t.span
	}
	return out
}

// split cuts sp at level's boundaries, merges the pieces that fit into chunks
// and cuts the pieces that do not fit at the next level.
func (c *chunker) split(ctx context.Context, s string, sp span, level int, out *[]span) error {
	if level <= levelSentences {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	var fitting []piece
	for _, p := range c.pieces(s, sp, level) {
		n := c.measure(s[p.start:p.end])
		if n <= c.cfg.Size || level == levelUnits {
			fitting = append(fitting, piece{p, n})
			continue
		}
		c.merge(s, fitting, out)
		fitting = fitting[:0]
		if err := c.split(ctx, s, p, level+1, out); err != nil {
			return err
		}
	}
	c.merge(s, fitting, out)
	return nil
}

type piece struct {
	span
	size int
}

// merge joins consecutive pieces into chunks of at most Size units; after
// emitting a chunk, its last pieces totalling at most Overlap units start the
// next one.
func (c *chunker) merge(s string, pieces []piece, out *[]span) {
	if len(pieces) == 0 {
		return
	}
	size, overlap := c.cfg.Size, c.cfg.Overlap
	// gap[i] is the size of the text between pieces i-1 and i.
	gap := make([]int, len(pieces))
	for i := 1; i < len(pieces); i++ {
		gap[i] = c.measure(s[pieces[i-1].end:pieces[i].start])
	}
	lo, total := 0, 0 // the window is pieces[lo:i], total its size
	for i, p := range pieces {
		if lo < i && total+gap[i]+p.size > size {
			*out = append(*out, span{pieces[lo].start, pieces[i-1].end})
			for lo < i && (total > overlap || total+gap[i]+p.size > size) {
				total -= pieces[lo].size
				if lo+1 < i {
					total -= gap[lo+1]
				}
				lo++
			}
		}
		if lo < i {
			total += gap[i]
		}
		total += p.size
	}
	*out = append(*out, span{pieces[lo].start, pieces[len(pieces)-1].end})
}

// semantic groups consecutive sentences whose embeddings stay close.
func (c *chunker) semantic(ctx context.Context, s string, whole span) ([]span, error) {
	sents := sentences(s, whole)
	var groups []span
	if len(sents) <= 1 {
		groups = sents
	} else {
		texts := make([]string, len(sents))
		for i, sp := range sents {
			texts[i] = s[sp.start:sp.end]
		}
		vecs := make([][]float32, 0, len(texts))
		for b := 0; b < len(texts); b += embedBatch {
			batch := texts[b:min(b+embedBatch, len(texts))]
			v, err := c.emb.Embed(ctx, batch, rag.EmbedDocument)
			if err != nil {
				return nil, fmt.Errorf("rag-chunk: embedding sentences for semantic chunking: %w", err)
			}
			if len(v) != len(batch) {
				return nil, fmt.Errorf("rag-chunk: the embedder (%s) returned %d vectors for %d sentences", c.emb.Model(), len(v), len(batch))
			}
			vecs = append(vecs, v...)
		}
		dist := make([]float64, len(sents)-1)
		for i := range dist {
			dist[i] = 1 - cosine(vecs[i], vecs[i+1])
		}
		threshold := percentile(dist, c.cfg.Percentile)
		first := 0
		for i, d := range dist {
			full := c.cfg.MaxSentences > 0 && i+1-first >= c.cfg.MaxSentences
			if d > threshold || full {
				groups = append(groups, span{sents[first].start, sents[i].end})
				first = i + 1
			}
		}
		groups = append(groups, span{sents[first].start, sents[len(sents)-1].end})
	}
	var out []span
	for _, g := range groups {
		if c.measure(s[g.start:g.end]) <= c.cfg.Size {
			out = append(out, g)
			continue
		}
		if err := c.split(ctx, s, g, levelParagraphs, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// cosine is the cosine similarity of a and b; 0 when either is zero or their
// lengths differ (nothing is known about their closeness).
func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	sim := dot / (math.Sqrt(na) * math.Sqrt(nb))
	if math.IsNaN(sim) {
		return 0
	}
	return sim
}

// percentile is the p-th percentile of xs with linear interpolation between
// the closest ranks (numpy's default, which semantic chunkers elsewhere use).
func percentile(xs []float64, p float64) float64 {
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := int(math.Ceil(rank))
	if hi >= len(sorted) {
		hi = len(sorted) - 1
	}
	return sorted[lo] + (sorted[hi]-sorted[lo])*(rank-float64(lo))
}
