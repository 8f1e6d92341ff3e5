package pgvector

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/rag"
)

// searchBM25 ranks by BM25 over the chunks' text and title fields exactly as
// the embedded store does (see embedded.Store.SearchKeyword):
//
//	bm25_f = Σ_t count_q(t) · ln(1 + (N_f − df_f + 0.5)/(df_f + 0.5)) · tf·(k1+1) / (tf + k1·(1 − b + b·len_f/avglen_f))
//	score  = max(text, title) + 0.5 · min(text, title)
//
// Scoring every posting of every query term in SQL costs microseconds a row
// (a term in most chunks is most of the table), so the scoring is done here,
// in Go, with MaxScore pruning: a term's contribution to a chunk is below
// its weight count·idf·(k1+1), so once the n-th best partial score over the
// rarest terms read so far beats what the remaining (common, low-idf) terms
// could add at most, no chunk outside the candidates can reach the top n; the
// common terms are then read only for the candidates that still could (by the
// terms table's primary key), not their whole posting lists. The result is
// the exhaustive ranking's, not an approximation.
//
// Everything is read in one read-only repeatable-read transaction: the
// statistics, the postings and the chunks are one snapshot. A filter selects
// the chunks that may compete before any is ranked, so it never empties the
// top n.
func (s *Store) searchBM25(ctx context.Context, query string, n int, filter string, filterArgs []any) ([]rag.Hit, error) {
	toks := s.analyzer.Tokens(query)
	if len(toks) == 0 {
		return nil, nil
	}
	counts := map[string]int{}
	for _, t := range toks {
		counts[cleanText(t)]++
	}
	terms := make([]string, 0, len(counts))
	for t := range counts {
		terms = append(terms, t)
	}
	slices.Sort(terms)

	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	var st struct{ n, length, titled, titleLength float64 }
	if err := tx.QueryRow(ctx, `SELECT coalesce(sum(chunks), 0)::float8, coalesce(sum(length), 0)::float8,
		coalesce(sum(titled), 0)::float8, coalesce(sum(title_length), 0)::float8 FROM `+s.statsT).
		Scan(&st.n, &st.length, &st.titled, &st.titleLength); err != nil {
		return nil, err
	}
	if st.n == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT term, sum(df)::float8, sum(title_df)::float8 FROM `+s.dfT+`
		WHERE term = ANY($1) GROUP BY term`, terms)
	if err != nil {
		return nil, err
	}
	type queryTerm struct {
		term            string
		weight, tweight float64 // count·idf·(k1+1) per field; 0: not in the field
		bound           float64 // combined upper bound of the term's contribution
		rows            float64 // its postings (at most df + title df)
	}
	var qts []queryTerm
	var term string
	var df, tdf float64
	if _, err := pgx.ForEachRow(rows, []any{&term, &df, &tdf}, func() error {
		qt := queryTerm{term: term, rows: df + tdf}
		c := float64(counts[term])
		if df > 0 {
			qt.weight = c * math.Log(1+(st.n-df+0.5)/(df+0.5)) * (bm25K1 + 1)
		}
		if tdf > 0 && st.titled > 0 {
			qt.tweight = c * math.Log(1+(st.titled-tdf+0.5)/(tdf+0.5)) * (bm25K1 + 1)
		}
		if qt.weight > 0 || qt.tweight > 0 {
			qt.bound = combineFields(qt.weight, qt.tweight)
			qts = append(qts, qt)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if len(qts) == 0 {
		return nil, nil
	}
	// Highest bound (rarest) first; ties by term, for a fixed order.
	slices.SortFunc(qts, func(a, b queryTerm) int {
		if c := cmp.Compare(b.bound, a.bound); c != 0 {
			return c
		}
		return cmp.Compare(a.term, b.term)
	})
	inv, tinv := 0.0, 0.0
	if st.length > 0 {
		inv = st.n / st.length
	}
	if st.titleLength > 0 {
		tinv = st.titled / st.titleLength
	}
	// contribution is a term's BM25 in one field of a chunk.
	contribution := func(weight float64, tf, length int32, inv float64) float64 {
		if tf <= 0 || weight == 0 {
			return 0
		}
		f := float64(tf)
		return weight * f / (f + bm25K1*(1-bm25B+bm25B*float64(length)*inv))
	}

	type key struct {
		doc string
		idx int32
	}
	type cand struct {
		key         key
		text, title float64
	}
	// Sized for the rarest term's postings (most queries stop after it), so
	// that the map does not grow step by step; the candidates themselves come
	// from slabs rather than one allocation each.
	cands := make(map[key]*cand, int(min(qts[0].rows, 1<<16)))
	var slab []cand
	// The chunks a filter lets through are read once (through the metadata
	// index), not joined to every batch of postings: the join read the
	// chunks' wide rows again for each batch.
	var allowed map[key]struct{}
	if filter != "" {
		rows, err := tx.Query(ctx, `SELECT c.doc_id, c.idx FROM `+s.chunksT+` c WHERE `+filter, filterArgs...)
		if err != nil {
			return nil, err
		}
		allowed = map[key]struct{}{}
		var k key
		if _, err := pgx.ForEachRow(rows, []any{&k.doc, &k.idx}, func() error {
			allowed[k] = struct{}{}
			return nil
		}); err != nil {
			return nil, err
		}
		if len(allowed) == 0 {
			return nil, nil
		}
	}
	args := []any{nil}
	var p struct {
		term                string
		doc                 string
		idx, tf, ttf, l, tl int32
	}
	add := func(qt *queryTerm) {
		k := key{p.doc, p.idx}
		if allowed != nil {
			if _, ok := allowed[k]; !ok {
				return
			}
		}
		c := cands[k]
		if c == nil {
			if len(slab) == cap(slab) {
				slab = make([]cand, 0, 1024)
			}
			slab = append(slab, cand{key: k})
			c = &slab[len(slab)-1]
			cands[k] = c
		}
		c.text += contribution(qt.weight, p.tf, p.l, inv)
		c.title += contribution(qt.tweight, p.ttf, p.tl, tinv)
	}

	// Read the terms' whole posting lists, rarest first, until the rest
	// cannot lift a chunk outside the candidates into the top n.
	read := 0
	var restText, restTitle float64
	for _, qt := range qts {
		restText += qt.weight
		restTitle += qt.tweight
	}
	byTerm := make(map[string]*queryTerm, len(qts))
	for i := range qts {
		byTerm[qts[i].term] = &qts[i]
	}
	var top []*cand
	// Terms are read in batches of 1, 1, 2, 4, …: a long query (thousands of
	// terms) costs a few round trips, a short one stops at the first term that
	// is enough.
	for batch := 1; read < len(qts); batch = max(batch, read) {
		end := min(read+batch, len(qts))
		names := make([]string, 0, end-read)
		for i := read; i < end; i++ {
			names = append(names, qts[i].term)
			restText -= qts[i].weight
			restTitle -= qts[i].tweight
		}
		args[0] = names
		rows, err := tx.Query(ctx, `SELECT p.term, p.doc_id, p.idx, p.tf, p.title_tf, p.len, p.title_len FROM `+s.termsT+` p WHERE p.term = ANY($1)`, args...)
		if err != nil {
			return nil, err
		}
		if _, err := pgx.ForEachRow(rows, []any{&p.term, &p.doc, &p.idx, &p.tf, &p.ttf, &p.l, &p.tl}, func() error {
			add(byTerm[p.term])
			return nil
		}); err != nil {
			return nil, err
		}
		read = end
		if read == len(qts) || len(cands) < n {
			continue
		}
		// θ ≤ the n-th best final score: partial scores only grow.
		theta := nthBest(cands, n, func(c *cand) float64 { return combineFields(c.text, c.title) })
		if combineFields(max(restText, 0), max(restTitle, 0)) < theta {
			// Candidates that could still reach θ get the remaining terms.
			top = top[:0]
			for _, c := range cands {
				if combineFields(c.text+restText, c.title+restTitle) >= theta {
					top = append(top, c)
				}
			}
			// Probing each contender's remaining terms by key costs more
			// a row than reading posting lists: only worth it when there are
			// far fewer probes than postings left.
			var left float64
			for i := read; i < len(qts); i++ {
				left += qts[i].rows
			}
			if float64(len(top)*(len(qts)-read))*probeCost < left {
				prunedSearches.Add(1)
				break
			}
			top = top[:0]
		}
	}
	if read < len(qts) && len(top) > 0 {
		rest := make([]string, 0, len(qts)-read)
		for i := read; i < len(qts); i++ {
			rest = append(rest, qts[i].term)
		}
		docs, idxs := make([]string, len(top)), make([]int32, len(top))
		for i, c := range top {
			docs[i], idxs[i] = c.key.doc, c.key.idx
		}
		rows, err := tx.Query(ctx, `SELECT p.term, p.doc_id, p.idx, p.tf, p.title_tf, p.len, p.title_len
			FROM unnest($2::text[], $3::int[]) AS k(doc_id, idx)
			CROSS JOIN unnest($1::text[]) AS t(term)
			JOIN `+s.termsT+` p ON p.term = t.term AND p.doc_id = k.doc_id AND p.idx = k.idx`, rest, docs, idxs)
		if err != nil {
			return nil, err
		}
		if _, err := pgx.ForEachRow(rows, []any{&p.term, &p.doc, &p.idx, &p.tf, &p.ttf, &p.l, &p.tl}, func() error {
			add(byTerm[p.term])
			return nil
		}); err != nil {
			return nil, err
		}
		// Only the completed candidates compete.
		cands = make(map[key]*cand, len(top))
		for _, c := range top {
			cands[c.key] = c
		}
	}
	score := func(c *cand) float64 { return combineFields(c.text, c.title) }
	// Best first: score descending, then doc_id and index ascending.
	better := func(a, b *cand) int {
		if c := cmp.Compare(score(b), score(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.key.doc, b.key.doc); c != 0 {
			return c
		}
		return cmp.Compare(a.key.idx, b.key.idx)
	}
	best := topK(cands, n, better)
	if len(best) == 0 {
		return nil, nil
	}
	docs, idxs, scores := make([]string, len(best)), make([]int32, len(best)), make([]float64, len(best))
	for i, c := range best {
		docs[i], idxs[i], scores[i] = c.key.doc, c.key.idx, score(c)
	}
	hits, err := s.queryHits(ctx, tx, `SELECT `+chunkColumns+`, k.score
		FROM unnest($1::text[], $2::int[], $3::float8[]) WITH ORDINALITY AS k(doc_id, idx, score, ord)
		JOIN `+s.chunksT+` c ON c.doc_id = k.doc_id AND c.idx = k.idx ORDER BY k.ord`, docs, idxs, scores)
	if err != nil {
		return nil, err
	}
	return hits, tx.Commit(ctx)
}

// probeCost is what reading a posting by key costs in postings read in a
// posting list's order (an index descent against a step along a leaf).
const probeCost = 4

// prunedSearches counts the searches that stopped reading posting lists early
// (tests check that the pruning is exercised).
var prunedSearches atomic.Int64

// nthBest returns the n-th highest score among the candidates (len(m) ≥ n),
// keeping the n best scores in a min-heap.
func nthBest[K comparable, V any](m map[K]V, n int, score func(V) float64) float64 {
	h := make([]float64, 0, n)
	for _, v := range m {
		x := score(v)
		switch {
		case len(h) < n:
			h = append(h, x)
			for i := len(h) - 1; i > 0 && h[(i-1)/2] > h[i]; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case x > h[0]:
			h[0] = x
			siftDown(h, func(a, b float64) bool { return a < b })
		}
	}
	return h[0]
}

// topK returns the k first of m's values in order (cmp < 0: a before b),
// through a heap of k with the worst at the root.
func topK[K comparable, V any](m map[K]V, k int, order func(a, b V) int) []V {
	h := make([]V, 0, min(k, len(m)))
	worse := func(a, b V) bool { return order(a, b) > 0 }
	for _, v := range m {
		switch {
		case len(h) < k:
			h = append(h, v)
			for i := len(h) - 1; i > 0 && worse(h[i], h[(i-1)/2]); i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case order(v, h[0]) < 0:
			h[0] = v
			siftDown(h, worse)
		}
	}
	slices.SortFunc(h, order)
	return h
}

// siftDown restores the heap property from the root; first(a, b): a belongs
// above b.
func siftDown[V any](h []V, first func(a, b V) bool) {
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && first(h[l], h[m]) {
			m = l
		}
		if r < len(h) && first(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// combineFields is a chunk's keyword score from its fields' BM25 scores: the
// best plus titleTieBreaker × the other, the text's alone without a title
// score (as the embedded store combines them).
func combineFields(text, title float64) float64 {
	if title == 0 {
		return text
	}
	return max(text, title) + titleTieBreaker*min(text, title)
}
