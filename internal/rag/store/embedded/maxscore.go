package embedded

import (
	"context"
	"math"
	"slices"

	"github.com/arvenza/helix/internal/rag"
)

// A keyword query is evaluated document at a time with MaxScore (Turtle and
// Flood): each (query term, field) posting list has an upper bound on what it
// can add to a chunk's score. Once the top n are full, the lists whose bounds
// together cannot lift a chunk above the n-th score are "non-essential": only
// the chunks of the other lists are candidates, and a non-essential list is
// consulted (by skipping to the candidate, whole blocks at a time) only while
// the candidate could still make it. Common terms, whose bounds are low, are
// thus mostly skipped rather than read posting by posting.
//
// The results are the exhaustive evaluation's, score for score: a candidate's
// score is summed in the query's term order, text then title, exactly as the
// exhaustive sum was; the bounds only decide what need not be scored, and they
// carry a slack far above floating-point rounding so that rounding never prunes
// a chunk that belongs in the top n.

// boundSlack inflates bounds against rounding: a bound is computed by the same
// operations as a score (a handful of float64 roundings, each under 1.2e-16
// relative), so 1e-9 is ample and still prunes as well.
const boundSlack = 1e-9

// termList is one query term's posting list in one field, with its BM25
// weight and its bound.
type termList struct {
	cur     *cursor
	weight  float64 // count · idf · (k1+1)
	k1, b   float64
	st      fieldStats
	title   bool
	lengths func(uint32) uint32
	ub      float64 // the most it adds to any chunk's field score
	contrib float64 // what it added to the current candidate (0: nothing)
}

func (x *index) newTermList(p *postingList, df int32, count int, st fieldStats, bm BM25, title bool) *termList {
	l := &termList{
		cur:    newCursor(p, nil),
		weight: float64(count) * math.Log(1+(st.n-float64(df)+0.5)/(float64(df)+0.5)) * (bm.K1 + 1),
		k1:     bm.K1, b: bm.B, st: st, title: title, lengths: x.textLen,
	}
	if title {
		l.lengths = x.titleLen
	}
	// The bound: the best (tf, length) pair of each block (its greatest tf with
	// its shortest length, which no posting of the block beats), and the tail's
	// postings themselves.
	for _, m := range p.blocks {
		l.ub = max(l.ub, l.score(m.maxTF, m.minLen))
	}
	for _, q := range p.tail {
		l.ub = max(l.ub, l.score(q.tf, l.lengths(q.ord)))
	}
	l.ub *= 1 + boundSlack
	return l
}

// score is BM25's contribution of this term and field to a chunk with tf
// occurrences in a field of length terms: the expression of the exhaustive
// evaluation, to the bit.
func (l *termList) score(tf32, length uint32) float64 {
	tf := float64(tf32)
	norm := l.k1 * (1 - l.b + l.b*float64(length)*l.st.invAvg)
	return l.weight * tf / (tf + norm)
}

// maxScore puts the best chunks for lists (in query term order, text before
// title) into top, skipping chunks match rejects (nil: none).
func (x *index) maxScore(ctx context.Context, lists []*termList, top *topN, match *rag.Expr) error {
	var meta metaCache // the filter's decoded metadata
	if len(lists) == 0 {
		return nil
	}
	// byBound orders the lists by bound; prefix[i] bounds what lists
	// byBound[0..i] add together (a chunk's score, the best field plus half
	// the other, is never more than the sum of its lists' contributions).
	byBound := slices.Clone(lists)
	slices.SortStableFunc(byBound, func(a, b *termList) int {
		switch {
		case a.ub < b.ub:
			return -1
		case a.ub > b.ub:
			return 1
		}
		return 0
	})
	prefix := make([]float64, len(byBound))
	sum := 0.0
	for i, l := range byBound {
		sum += l.ub
		prefix[i] = sum * (1 + boundSlack)
	}
	// essential is the first list that must be read in full: the lists before
	// it cannot, on their own, lift a chunk into the full top n.
	essential := 0
	threshold := math.Inf(-1)
	full := func() bool { return len(top.heap) == top.n }
	for steps := 0; ; steps++ {
		if steps&8191 == 8191 && ctx.Err() != nil {
			return ctx.Err()
		}
		if full() {
			threshold = top.heap[0].score
			for essential < len(byBound) && prefix[essential] <= threshold {
				essential++
			}
			if essential == len(byBound) {
				return nil // no chunk left can beat the n-th
			}
		}
		cand := exhausted
		for _, l := range byBound[essential:] {
			cand = min(cand, l.cur.ord)
		}
		if cand == exhausted {
			return nil
		}
		e := &x.chunks[cand]
		partial := 0.0
		for _, l := range byBound[essential:] {
			l.contrib = 0
			if l.cur.ord == cand {
				if !e.dead {
					l.contrib = l.score(l.cur.tf(), l.lengths(cand))
					partial += l.contrib
				}
				l.cur.next()
			}
		}
		if e.dead {
			continue
		}
		pruned := false
		for i := essential - 1; i >= 0; i-- {
			l := byBound[i]
			l.contrib = 0
			if pruned {
				continue
			}
			// A chunk entering a full top n must score above the n-th: later
			// chunks lose ties to earlier ones.
			if full() && partial*(1+boundSlack)+prefix[i] <= threshold {
				pruned = true
				continue
			}
			l.cur.advance(cand)
			if l.cur.ord == cand {
				l.contrib = l.score(l.cur.tf(), l.lengths(cand))
				partial += l.contrib
			}
		}
		if pruned {
			continue
		}
		// The exact score, summed in the exhaustive evaluation's order.
		var textScore, titleScore float64
		for _, l := range lists {
			if l.title {
				titleScore += l.contrib
			} else {
				textScore += l.contrib
			}
		}
		score := textScore
		if x.liveTitled > 0 {
			score = combineFields(textScore, titleScore)
		}
		if !top.admits(score, cand) {
			continue
		}
		if match != nil && !match.Matches(x.metadataVia(cand, &meta)) {
			continue
		}
		top.push(scored{cand, score})
	}
}
