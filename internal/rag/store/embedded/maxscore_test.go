package embedded

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// exhaustive is the reference keyword evaluation: every posting of every query
// term scored into per-chunk accumulators (term at a time), the way the store
// ranked before MaxScore. The differential test holds the store to it.
func exhaustive(t *testing.T, s *Store, query string, n int, f rag.Filter) []rag.Hit {
	t.Helper()
	toks := slices.Clone(s.analyzer.Tokens(query))
	slices.Sort(toks)
	s.mu.RLock()
	defer s.mu.RUnlock()
	x := s.idx
	if len(toks) == 0 || n <= 0 || x.liveChunks == 0 {
		return nil
	}
	text := fieldStats{n: float64(x.liveChunks), invAvg: invAverage(x.liveLength, x.liveChunks)}
	title := fieldStats{n: float64(x.liveTitled), invAvg: invAverage(x.liveTitleLength, x.liveTitled)}
	accText := make([]float64, len(x.chunks))
	accTitle := make([]float64, len(x.chunks))
	seen := make([]bool, len(x.chunks))
	var touched []uint32
	add := func(acc []float64, p *postingList, df int32, count int, st fieldStats, isTitle bool) {
		l := x.newTermList(p, df, count, st, s.bm25, isTitle)
		for c := l.cur; !c.done; c.next() {
			if x.chunks[c.ord].dead {
				continue
			}
			acc[c.ord] += l.score(c.tf(), l.lengths(c.ord))
			if !seen[c.ord] {
				seen[c.ord] = true
				touched = append(touched, c.ord)
			}
		}
	}
	for i := 0; i < len(toks); {
		j := i
		for j < len(toks) && toks[j] == toks[i] {
			j++
		}
		if id, ok := x.termIDs[toks[i]]; ok {
			if df := x.df[id]; df > 0 {
				add(accText, &x.postings[id], df, j-i, text, false)
			}
			if df := x.tdf[id]; df > 0 && x.liveTitled > 0 {
				add(accTitle, &x.tpostings[id], df, j-i, title, true)
			}
		}
		i = j
	}
	top := topN{n: n}
	for _, ord := range touched {
		score := accText[ord]
		if x.liveTitled > 0 {
			score = combineFields(score, accTitle[ord])
		}
		if top.admits(score, ord) && (len(f) == 0 || f.Matches(x.metadata(ord))) {
			top.push(scored{ord, score})
		}
	}
	hits, err := top.hits(x)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestMaxScoreMatchesExhaustive compares the store's keyword results with the
// exhaustive evaluation on random corpora (skewed vocabularies, so that some
// terms fill many blocks; titles on some documents; replaced and deleted
// documents leaving tombstones in the postings) and random queries (repeated
// terms, unknown terms, filters, n from 1 to 40): the same chunks in the same
// order with the same scores, to the bit.
func TestMaxScoreMatchesExhaustive(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			vocab := 30 + rng.IntN(400)
			zipf := rand.NewZipf(rng, 1.05+rng.Float64(), 1, uint64(vocab-1))
			word := func() string { return fmt.Sprintf("w%d", zipf.Uint64()) }
			words := func(k int) string {
				ws := make([]string, k)
				for i := range ws {
					ws[i] = word()
				}
				return strings.Join(ws, " ")
			}
			s, _ := open(t, t.TempDir(), Options{NoSync: true})
			docs := 200 + rng.IntN(600)
			for d := range docs {
				id := fmt.Sprint("d", rng.IntN(docs)) // some ids repeat: replaced documents
				k := 1 + rng.IntN(4)
				title := ""
				if rng.IntN(3) == 0 {
					title = words(1 + rng.IntN(6))
				}
				cs := make([]rag.Chunk, k)
				for i := range cs {
					cs[i] = rag.Chunk{Index: i, Title: title, Text: words(1 + rng.IntN(60)), Metadata: map[string]any{"g": rng.IntN(3)}}
				}
				mustPut(t, s, id, fmt.Sprint(d), cs, nil)
				if rng.IntN(10) == 0 {
					if err := s.Delete(ctx, fmt.Sprint("d", rng.IntN(docs))); err != nil {
						t.Fatal(err)
					}
				}
			}
			for q := range 300 {
				query := words(1 + rng.IntN(8))
				if q%7 == 0 {
					query += " unknownterm " + word()
				}
				n := 1 + rng.IntN(40)
				var f rag.Filter
				if q%5 == 0 {
					f = rag.Filter{"g": rng.IntN(3)}
				}
				got, err := s.SearchKeyword(ctx, query, n, f)
				if err != nil {
					t.Fatal(err)
				}
				want := exhaustive(t, s, query, n, f)
				if len(got) != len(want) {
					t.Fatalf("query %q n=%d: %d hits, exhaustive %d", query, n, len(got), len(want))
				}
				for i := range got {
					if got[i].Chunk.ID != want[i].Chunk.ID || math.Float64bits(got[i].Score) != math.Float64bits(want[i].Score) {
						t.Fatalf("query %q n=%d, hit %d: %s %v, exhaustive %s %v", query, n, i, got[i].Chunk.ID, got[i].Score, want[i].Chunk.ID, want[i].Score)
					}
				}
			}
		})
	}
}

// TestCursorAdvanceSkipsBlocks walks a posting list of many blocks with
// advance and next and checks every landing against the plain postings.
func TestCursorAdvanceSkipsBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var p postingList
	var plain []posting
	ord := uint32(0)
	for range 5*postingBlock + 37 {
		ord += 1 + uint32(rng.IntN(300))
		tf := 1 + uint32(rng.IntN(1000))
		p.add(ord, tf, func(uint32) uint32 { return 10 })
		plain = append(plain, posting{ord, tf})
	}
	if p.len() != len(plain) || len(p.blocks) != 5 {
		t.Fatalf("%d postings in %d blocks, want %d in 5", p.len(), len(p.blocks), len(plain))
	}
	c := newCursor(&p, nil)
	for i := 0; i < len(plain); {
		if c.ord != plain[i].ord || c.tf() != plain[i].tf {
			t.Fatalf("at %d: cursor %d/%d, want %d/%d", i, c.ord, c.tf(), plain[i].ord, plain[i].tf)
		}
		if rng.IntN(2) == 0 {
			c.next()
			i++
			continue
		}
		target := plain[i].ord + uint32(rng.IntN(3000))
		c.advance(target)
		for i < len(plain) && plain[i].ord < target {
			i++
		}
		if i == len(plain) {
			if !c.done || c.ord != exhausted {
				t.Fatalf("advance(%d) past the end left the cursor at %d", target, c.ord)
			}
		}
	}
}
