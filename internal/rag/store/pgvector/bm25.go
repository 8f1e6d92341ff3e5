package pgvector

// Okapi BM25 in SQL, over term statistics Helix keeps in its own tables.
//
// Why not an extension: Debian's PostgreSQL 15 packages hold no BM25 extension
// (postgresql-15-rum ranks like ts_rank, without idf; ParadeDB's pg_search and
// VectorChord-bm25 are not Debian packages), and a store that needs a
// non-packaged extension on the server is one most users cannot run. Why not
// PostgreSQL's text search: its stemmer and stop words are not the embedded
// store's, and ts_rank has no idf. So the chunks are analysed in Go with the
// same analyzer as the embedded store (textproc.English), and the ranking is
// the embedded store's, term for term:
//
//	<table>_terms       one row per (term, chunk): the term's count in the
//	                    chunk's text and title, and the chunk's two field
//	                    lengths (copied so that ranking reads this table only,
//	                    through its primary key (term, doc_id, idx) INCLUDE …,
//	                    an index-only scan per query term)
//	<table>_bm25_stats  the collection's counts (chunks, their total length,
//	                    titled chunks, their total title length) as a few
//	                    slot rows summed at query time
//
// The document frequencies are not stored: the query reads every posting of
// its terms anyway to score them, and counting them on the way costs nothing,
// while a df row per term would be a hot row every writer updates (the common
// terms are in every document). The collection counts are the one place every
// writer meets: they are spread over statsSlots rows (a document's slot is a
// hash of its id), each updated with row-locked increments in the Put's own
// transaction, so concurrent writers lose no update and seldom wait for one
// another; a query sums the slots.
//
// Everything is written in the transaction of the Put or Delete that changes
// the chunks, so the statistics always describe exactly the committed chunks.

import (
	"context"
	"hash/fnv"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/textproc"
)

// statsSlots is the number of collection-count rows: enough that concurrent
// writers rarely share one, few enough that summing them is free.
const statsSlots = 16

// BM25 parameters and the weight of a chunk's weaker field: the embedded
// store's defaults, so both stores rank alike.
const (
	bm25K1          = 1.2
	bm25B           = 0.75
	titleTieBreaker = 0.5
)

// bm25Config is the text search configuration whose tables are ranked by
// BM25 over textproc.English terms; other configurations keep PostgreSQL's
// text search and ts_rank (their language is not English).
const bm25Config = "english"

// fieldTerms is one field's analysis: each term's count and the field's length.
type fieldTerms struct {
	tf     map[string]int32
	length int32
}

func analyzeField(a textproc.Analyzer, text string) fieldTerms {
	toks := a.Tokens(text)
	f := fieldTerms{tf: make(map[string]int32, len(toks)), length: int32(min(len(toks), 1<<31-1))}
	for _, t := range toks {
		f.tf[t]++
	}
	return f
}

// chunkTerms is the rows a chunk adds to the terms table, its two lengths and
// whether it counts as titled (has title terms, as in the embedded store).
type chunkTerms struct {
	text, title fieldTerms
}

func (c chunkTerms) titled() bool { return len(c.title.tf) > 0 }

// rows appends the chunk's term rows (term, doc_id, idx, tf, title_tf, len,
// title_len). The terms are sorted so that a Put writes them in index order.
func (c chunkTerms) rows(docID string, idx int, out [][]any) [][]any {
	terms := make([]string, 0, len(c.text.tf)+len(c.title.tf))
	for t := range c.text.tf {
		terms = append(terms, t)
	}
	for t := range c.title.tf {
		if _, ok := c.text.tf[t]; !ok {
			terms = append(terms, t)
		}
	}
	slices.Sort(terms)
	titleLen := int32(0)
	if c.titled() {
		titleLen = c.title.length
	}
	for _, t := range terms {
		out = append(out, []any{cleanText(t), docID, int32(idx), c.text.tf[t], c.title.tf[t], c.text.length, titleLen})
	}
	return out
}

// statsDelta is a change of the collection counts.
type statsDelta struct {
	chunks, length, titled, titleLength int64
}

func (d *statsDelta) add(c chunkTerms) {
	d.chunks++
	d.length += int64(c.text.length)
	if c.titled() {
		d.titled++
		d.titleLength += int64(c.title.length)
	}
}

func statsSlot(docID string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(docID))
	return int32(h.Sum32() % statsSlots)
}

// bm25Tables returns the statements creating the BM25 tables (no-ops when they
// exist). Chunks of schema version 3 carry their field lengths (NULL before
// their terms are written: the upgrade fills them).
func (s *Store) bm25Tables() []string {
	return []string{
		`ALTER TABLE ` + s.chunksT + ` ADD COLUMN IF NOT EXISTS text_len integer`,
		`ALTER TABLE ` + s.chunksT + ` ADD COLUMN IF NOT EXISTS title_len integer`,
		`CREATE TABLE IF NOT EXISTS ` + s.termsT + ` (
			term text NOT NULL,
			doc_id text NOT NULL,
			idx integer NOT NULL,
			tf integer NOT NULL,
			title_tf integer NOT NULL,
			len integer NOT NULL,
			title_len integer NOT NULL,
			PRIMARY KEY (term, doc_id, idx) INCLUDE (tf, title_tf, len, title_len),
			FOREIGN KEY (doc_id, idx) REFERENCES ` + s.chunksT + ` (doc_id, idx) ON DELETE CASCADE)`,
		// The cascade from a chunk finds its terms through this index.
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{s.table + "_terms_chunk_idx"}.Sanitize() + ` ON ` + s.termsT + ` (doc_id, idx)`,
		`CREATE TABLE IF NOT EXISTS ` + s.statsT + ` (
			slot integer PRIMARY KEY,
			chunks bigint NOT NULL,
			length bigint NOT NULL,
			titled bigint NOT NULL,
			title_length bigint NOT NULL)`,
	}
}

// removeChunks deletes the document's chunks (their terms go by cascade) and
// returns what they counted. The caller holds the document's row lock.
func (s *Store) removeChunks(ctx context.Context, tx pgx.Tx, docID string) (statsDelta, error) {
	var d statsDelta
	err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM `+s.chunksT+` WHERE doc_id = $1 RETURNING text_len, title_len)
		SELECT count(*), coalesce(sum(text_len), 0), count(*) FILTER (WHERE title_len > 0), coalesce(sum(title_len), 0) FROM gone`,
		docID).Scan(&d.chunks, &d.length, &d.titled, &d.titleLength)
	return d, err
}

// addStats adds (added − removed) to the document's stats slot.
func (s *Store) addStats(ctx context.Context, tx pgx.Tx, docID string, added, removed statsDelta) error {
	d := statsDelta{added.chunks - removed.chunks, added.length - removed.length,
		added.titled - removed.titled, added.titleLength - removed.titleLength}
	if d == (statsDelta{}) {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+s.statsT+` AS s (slot, chunks, length, titled, title_length) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (slot) DO UPDATE SET chunks = s.chunks + EXCLUDED.chunks, length = s.length + EXCLUDED.length,
			titled = s.titled + EXCLUDED.titled, title_length = s.title_length + EXCLUDED.title_length`,
		statsSlot(docID), d.chunks, d.length, d.titled, d.titleLength)
	return err
}

// writeTerms copies the chunks' term rows.
func (s *Store) writeTerms(ctx context.Context, tx pgx.Tx, docID string, idx []int, analysed []chunkTerms) error {
	var rows [][]any
	for i, c := range analysed {
		rows = c.rows(docID, idx[i], rows)
	}
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{s.table + "_terms"},
		[]string{"term", "doc_id", "idx", "tf", "title_tf", "len", "title_len"}, pgx.CopyFromRows(rows))
	return err
}

// backfillBatch is how many chunks the upgrade analyses per round trip.
const backfillBatch = 2000

// backfillTerms analyses every chunk without terms (text_len NULL: written
// before schema version 3) and rebuilds the collection counts from the chunks.
// It runs in the migration's transaction: the upgrade is all or nothing.
func (s *Store) backfillTerms(ctx context.Context, tx pgx.Tx) (int, error) {
	total := 0
	for {
		rows, err := tx.Query(ctx, `SELECT doc_id, idx, content, title FROM `+s.chunksT+`
			WHERE text_len IS NULL ORDER BY doc_id, idx LIMIT $1`, backfillBatch)
		if err != nil {
			return total, err
		}
		type pending struct {
			doc   string
			idx   int
			terms chunkTerms
		}
		var batch []pending
		var doc, content, title string
		var idx int
		_, err = pgx.ForEachRow(rows, []any{&doc, &idx, &content, &title}, func() error {
			batch = append(batch, pending{doc, idx, chunkTerms{analyzeField(s.analyzer, content), analyzeField(s.analyzer, title)}})
			return nil
		})
		if err != nil {
			return total, err
		}
		if len(batch) == 0 {
			break
		}
		var termRows [][]any
		docs, idxs, lens, tlens := make([]string, len(batch)), make([]int32, len(batch)), make([]int32, len(batch)), make([]int32, len(batch))
		for i, p := range batch {
			termRows = p.terms.rows(p.doc, p.idx, termRows)
			docs[i], idxs[i], lens[i] = p.doc, int32(p.idx), p.terms.text.length
			if p.terms.titled() {
				tlens[i] = p.terms.title.length
			}
		}
		if len(termRows) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{s.table + "_terms"},
				[]string{"term", "doc_id", "idx", "tf", "title_tf", "len", "title_len"}, pgx.CopyFromRows(termRows)); err != nil {
				return total, err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE `+s.chunksT+` c SET text_len = u.len, title_len = u.tlen
			FROM unnest($1::text[], $2::int[], $3::int[], $4::int[]) AS u(doc_id, idx, len, tlen)
			WHERE c.doc_id = u.doc_id AND c.idx = u.idx`, docs, idxs, lens, tlens); err != nil {
			return total, err
		}
		total += len(batch)
		s.logger.Info("rag pgvector store: analysing chunks for BM25", "table", s.table, "chunks", total)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+s.statsT); err != nil {
		return total, err
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+s.statsT+` (slot, chunks, length, titled, title_length)
		SELECT 0, count(*), coalesce(sum(text_len), 0), count(*) FILTER (WHERE title_len > 0), coalesce(sum(title_len), 0)
		FROM `+s.chunksT)
	return total, err
}

// searchBM25 ranks by BM25 over the chunks' text and title fields exactly as
// the embedded store does (see embedded.Store.SearchKeyword):
//
//	bm25_f = Σ_t count_q(t) · ln(1 + (N_f − df_f + 0.5)/(df_f + 0.5)) · tf·(k1+1) / (tf + k1·(1 − b + b·len_f/avglen_f))
//	score  = max(text, title) + 0.5 · min(text, title)
//
// in one statement: the query terms' postings by the terms table's primary
// key, their document frequencies counted from those postings, the collection
// counts summed from the stats slots, the chunk's two field scores summed, the
// filter applied to the scored chunks before the limit (so a filter never
// empties the top n), and only the n best chunks' rows read.
func (s *Store) searchBM25(ctx context.Context, query string, n int, where func(args *[]any) string) ([]rag.Hit, error) {
	toks := s.analyzer.Tokens(query)
	if len(toks) == 0 {
		return nil, nil
	}
	terms := make([]string, len(toks))
	for i, t := range toks {
		terms[i] = cleanText(t)
	}
	args := []any{terms, n, bm25K1, bm25B, titleTieBreaker}
	filterJoin := ""
	if where != nil {
		cond := where(&args)
		filterJoin = ` JOIN ` + s.chunksT + ` c ON c.doc_id = sc.doc_id AND c.idx = sc.idx WHERE ` + cond
	}
	q := `WITH k AS (SELECT $3::float8 AS k1, $4::float8 AS b, $5::float8 AS tie),
	qt AS (
		SELECT term, count(*)::float8 AS cnt FROM unnest($1::text[]) AS t(term) GROUP BY term),
	st AS (
		SELECT coalesce(sum(chunks), 0)::float8 AS n, coalesce(sum(length), 0)::float8 AS len,
			coalesce(sum(titled), 0)::float8 AS tn, coalesce(sum(title_length), 0)::float8 AS tlen
		FROM ` + s.statsT + `),
	p AS MATERIALIZED (
		SELECT p.term, p.doc_id, p.idx, p.tf, p.title_tf, p.len, p.title_len, qt.cnt
		FROM ` + s.termsT + ` p JOIN qt ON p.term = qt.term),
	df AS (
		SELECT term, count(*) FILTER (WHERE tf > 0)::float8 AS df, count(*) FILTER (WHERE title_tf > 0)::float8 AS tdf
		FROM p GROUP BY term),
	w AS (
		SELECT df.term,
			CASE WHEN df.df > 0 THEN ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * (k.k1 + 1) END AS idf,
			CASE WHEN df.tdf > 0 THEN ln(1 + (st.tn - df.tdf + 0.5) / (df.tdf + 0.5)) * (k.k1 + 1) END AS tidf,
			CASE WHEN st.len > 0 THEN st.n / st.len ELSE 0 END AS inv,
			CASE WHEN st.tlen > 0 THEN st.tn / st.tlen ELSE 0 END AS tinv
		FROM df, st, k),
	sc AS (
		SELECT p.doc_id, p.idx,
			coalesce(sum(p.cnt * w.idf * p.tf / (p.tf + k.k1 * (1 - k.b + k.b * p.len * w.inv))) FILTER (WHERE p.tf > 0), 0) AS text,
			coalesce(sum(p.cnt * w.tidf * p.title_tf / (p.title_tf + k.k1 * (1 - k.b + k.b * p.title_len * w.tinv))) FILTER (WHERE p.title_tf > 0), 0) AS title
		FROM p JOIN w ON w.term = p.term, k GROUP BY p.doc_id, p.idx),
	top AS (
		SELECT sc.doc_id, sc.idx,
			CASE WHEN sc.title = 0 THEN sc.text ELSE greatest(sc.text, sc.title) + k.tie * least(sc.text, sc.title) END AS score
		FROM k, sc` + filterJoin + `
		ORDER BY score DESC, sc.doc_id, sc.idx LIMIT $2)
	SELECT ` + chunkColumns + `, top.score
	FROM top JOIN ` + s.chunksT + ` c ON c.doc_id = top.doc_id AND c.idx = top.idx
	ORDER BY top.score DESC, top.doc_id, top.idx`
	return s.queryHits(ctx, s.pool, q, args...)
}
