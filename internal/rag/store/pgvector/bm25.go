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

// statsDelta is a change of the collection counts and document frequencies.
type statsDelta struct {
	chunks, length, titled, titleLength int64
	df                                  map[string]dfDelta
}

// dfDelta is a change of a term's document frequencies in the text and title.
type dfDelta struct{ text, title int64 }

func (d *statsDelta) add(c chunkTerms) {
	d.chunks++
	d.length += int64(c.text.length)
	if c.titled() {
		d.titled++
		d.titleLength += int64(c.title.length)
	}
	if d.df == nil {
		d.df = map[string]dfDelta{}
	}
	for t := range c.text.tf {
		x := d.df[cleanText(t)]
		x.text++
		d.df[cleanText(t)] = x
	}
	for t := range c.title.tf {
		x := d.df[cleanText(t)]
		x.title++
		d.df[cleanText(t)] = x
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
		// Document frequencies, per term and stats slot (the same slot as the
		// collection counts, so a Put's updates are rows of its slot only).
		`CREATE TABLE IF NOT EXISTS ` + s.dfT + ` (
			term text NOT NULL,
			slot integer NOT NULL,
			df bigint NOT NULL,
			title_df bigint NOT NULL,
			PRIMARY KEY (term, slot) INCLUDE (df, title_df))`,
		`CREATE TABLE IF NOT EXISTS ` + s.statsT + ` (
			slot integer PRIMARY KEY,
			chunks bigint NOT NULL,
			length bigint NOT NULL,
			titled bigint NOT NULL,
			title_length bigint NOT NULL)`,
	}
}

// removeChunks deletes the document's chunks and their terms and returns what
// they counted. The caller holds the document's row lock.
func (s *Store) removeChunks(ctx context.Context, tx pgx.Tx, docID string) (statsDelta, error) {
	var d statsDelta
	if s.bm25 {
		rows, err := tx.Query(ctx, `WITH gone AS (DELETE FROM `+s.termsT+` WHERE doc_id = $1 RETURNING term, tf, title_tf)
			SELECT term, count(*) FILTER (WHERE tf > 0), count(*) FILTER (WHERE title_tf > 0) FROM gone GROUP BY term`, docID)
		if err != nil {
			return d, err
		}
		d.df = map[string]dfDelta{}
		var term string
		var x dfDelta
		if _, err := pgx.ForEachRow(rows, []any{&term, &x.text, &x.title}, func() error {
			d.df[term] = x
			return nil
		}); err != nil {
			return d, err
		}
	}
	err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM `+s.chunksT+` WHERE doc_id = $1 RETURNING text_len, title_len)
		SELECT count(*), coalesce(sum(text_len), 0), count(*) FILTER (WHERE title_len > 0), coalesce(sum(title_len), 0) FROM gone`,
		docID).Scan(&d.chunks, &d.length, &d.titled, &d.titleLength)
	return d, err
}

// addStats adds (added − removed) to the document's stats slot.
func (s *Store) addStats(ctx context.Context, tx pgx.Tx, docID string, added, removed statsDelta) error {
	slot := statsSlot(docID)
	// The terms' net changes, in term order: concurrent writers of one slot
	// lock its rows in the same order, so they wait for one another but
	// never deadlock.
	terms := make([]string, 0, len(added.df)+len(removed.df))
	net := make(map[string]dfDelta, len(added.df)+len(removed.df))
	for t, x := range added.df {
		net[t] = x
	}
	for t, x := range removed.df {
		y := net[t]
		net[t] = dfDelta{y.text - x.text, y.title - x.title}
	}
	for t, x := range net {
		if x != (dfDelta{}) {
			terms = append(terms, t)
		}
	}
	slices.Sort(terms)
	if len(terms) > 0 {
		dfs, tdfs := make([]int64, len(terms)), make([]int64, len(terms))
		for i, t := range terms {
			dfs[i], tdfs[i] = net[t].text, net[t].title
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.dfT+` AS d (term, slot, df, title_df)
			SELECT term, $2, df, tdf FROM unnest($1::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS u(term, df, tdf, ord) ORDER BY ord
			ON CONFLICT (term, slot) DO UPDATE SET df = d.df + EXCLUDED.df, title_df = d.title_df + EXCLUDED.title_df`,
			terms, slot, dfs, tdfs); err != nil {
			return err
		}
	}
	d := [4]int64{added.chunks - removed.chunks, added.length - removed.length,
		added.titled - removed.titled, added.titleLength - removed.titleLength}
	if d == ([4]int64{}) {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+s.statsT+` AS s (slot, chunks, length, titled, title_length) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (slot) DO UPDATE SET chunks = s.chunks + EXCLUDED.chunks, length = s.length + EXCLUDED.length,
			titled = s.titled + EXCLUDED.titled, title_length = s.title_length + EXCLUDED.title_length`,
		slot, d[0], d[1], d[2], d[3])
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
	if _, err := tx.Exec(ctx, `DELETE FROM `+s.statsT+`; DELETE FROM `+s.dfT); err != nil {
		return total, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.dfT+` (term, slot, df, title_df)
		SELECT term, 0, count(*) FILTER (WHERE tf > 0), count(*) FILTER (WHERE title_tf > 0) FROM `+s.termsT+` GROUP BY term`); err != nil {
		return total, err
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+s.statsT+` (slot, chunks, length, titled, title_length)
		SELECT 0, count(*), coalesce(sum(text_len), 0), count(*) FILTER (WHERE title_len > 0), coalesce(sum(title_len), 0)
		FROM `+s.chunksT)
	return total, err
}
