package pgvector

import (
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/testtools"
)

// TestKeywordSearchWeighsTitles is about the ts_rank ranking of the
// configurations other than english (which rank by BM25: see bm25_test.go).
func TestKeywordSearchWeighsTitles(t *testing.T) {
	u := testDB(t)
	table := uniqueTable(t, u)
	s := open(t, Options{DSN: u, Table: table, TextSearchConfig: "simple"})
	ctx := ctxT(t)
	put := func(doc, title, text string) {
		t.Helper()
		c := chunk(doc, 0, text, map[string]any{"title": title})
		c.Title = title
		if err := s.Put(ctx, doc, "h", []rag.Chunk{c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	put("roses", "Pruning roses", "Cut above an outward-facing bud in late winter.")
	put("tools", "", "Pruning shears and roses of every colour for sale.")
	put("soil", "Soil", "Compost improves clay.")

	// A title-only match is found, and the title comes back with the chunk.
	hits, err := s.SearchKeyword(ctx, "pruning", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); len(got) != 2 || got[0] != "roses#0" || hits[0].Chunk.Title != "Pruning roses" || hits[1].Chunk.Title != "" {
		t.Fatalf("pruning: %v %+v, want roses#0 (title match) before tools#0", got, hits)
	}
	if hits, _ = s.SearchKeyword(ctx, "soil", 10, nil); len(hits) != 1 || hits[0].Chunk.ID != "soil#0" {
		t.Fatalf("title-only match: %+v", hits)
	}
	// An untitled chunk scores what ts_rank gave it before titles existed.
	hits, _ = s.SearchKeyword(ctx, "roses shears", 10, nil)
	var old float64
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT ts_rank(tsv, to_tsquery('simple', 'roses | shears'), 1) FROM `+
		pgx.Identifier{table + "_chunks"}.Sanitize()+` WHERE doc_id = 'tools'`).Scan(&old); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range hits {
		if h.Chunk.ID == "tools#0" {
			found = true
			if math.Abs(h.Score-old) > 1e-6 {
				t.Errorf("untitled chunk scored %v, %v without the title weighting", h.Score, old)
			}
		}
	}
	if !found {
		t.Fatalf("roses shears: %+v", hits)
	}
	// Vector-less chunks still come back whole from the vector side's columns.
	all, err := s.queryHits(ctx, s.pool, "SELECT "+chunkColumns+", 0::float8 FROM "+s.chunksT+" c WHERE c.doc_id = 'roses'")
	if err != nil || len(all) != 1 || all[0].Chunk.Title != "Pruning roses" || all[0].Chunk.Text != "Cut above an outward-facing bud in late winter." {
		t.Fatalf("read back: %+v, %v", all, err)
	}
}

// TestUpgradeFromSchemaVersion1 creates the tables exactly as the previous version
// did (no title columns, schema version 1) and opens them.
func TestUpgradeFromSchemaVersion1(t *testing.T) {
	u := testDB(t)
	table := uniqueTable(t, u)
	meta, docs, chunks := pgx.Identifier{table + "_meta"}.Sanitize(), pgx.Identifier{table + "_documents"}.Sanitize(), pgx.Identifier{table + "_chunks"}.Sanitize()
	testtools.PostgresExec(t, u, `CREATE TABLE `+meta+` (
		singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
		model text NOT NULL,
		dimensions integer NOT NULL DEFAULT 0,
		text_search_config text NOT NULL,
		schema_version integer NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now());
	INSERT INTO `+meta+` (model, dimensions, text_search_config, schema_version) VALUES ('', 0, 'english', 1);
	CREATE TABLE `+docs+` (id text PRIMARY KEY, hash text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
	CREATE TABLE `+chunks+` (
		doc_id text NOT NULL REFERENCES `+docs+` (id) ON DELETE CASCADE,
		idx integer NOT NULL,
		id text NOT NULL,
		content text NOT NULL,
		start_offset integer NOT NULL,
		end_offset integer NOT NULL,
		headings text[] NOT NULL DEFAULT '{}',
		metadata jsonb NOT NULL DEFAULT '{}',
		embedding vector NULL,
		tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
		PRIMARY KEY (doc_id, idx));
	CREATE INDEX `+pgx.Identifier{table + "_chunks_tsv_idx"}.Sanitize()+` ON `+chunks+` USING gin (tsv);
	INSERT INTO `+docs+` (id, hash) VALUES ('guide.md', 'h1'), ('notes.txt', 'h2');
	INSERT INTO `+chunks+` (doc_id, idx, id, content, start_offset, end_offset, metadata) VALUES
		('guide.md', 0, 'guide.md#0', 'Water the plants every morning.', 0, 31, '{"title": "Helix gardening guide", "source": "docs/guide.md"}'),
		('notes.txt', 0, 'notes.txt#0', 'Compost notes.', 0, 14, '{"title": "", "source": "docs/notes.txt"}')`)

	for range 2 { // the second Open finds the upgraded tables
		s := open(t, Options{DSN: u, Table: table})
		ctx := ctxT(t)
		if docs, err := s.Documents(ctx); err != nil || docs["guide.md"] != "h1" || docs["notes.txt"] != "h2" {
			t.Fatalf("documents after the upgrade: %v, %v", docs, err)
		}
		// "helix" is only in guide.md's title, copied from its metadata.
		hits, err := s.SearchKeyword(ctx, "helix", 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Chunk.ID != "guide.md#0" || hits[0].Chunk.Title != "Helix gardening guide" {
			t.Fatalf("helix: %+v", hits)
		}
		if hits, _ = s.SearchKeyword(ctx, "compost", 10, nil); len(hits) != 1 || hits[0].Chunk.Title != "" {
			t.Fatalf("compost: %+v", hits)
		}
		m, err := readMetaOf(t, s)
		if err != nil || m.version != schemaVersion {
			t.Fatalf("meta after the upgrade: %+v, %v", m, err)
		}
		// New documents go in with their titles.
		c := chunk("new.md", 0, "Cut above a bud.", nil)
		c.Title = "Pruning roses"
		if err := s.Put(ctx, "new.md", "h3", []rag.Chunk{c}, nil); err != nil {
			t.Fatal(err)
		}
		if hits, _ = s.SearchKeyword(ctx, "roses", 10, nil); len(hits) != 1 || hits[0].Chunk.Title != "Pruning roses" {
			t.Fatalf("roses: %+v", hits)
		}
		s.Close()
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	u := testDB(t)
	table := uniqueTable(t, u)
	s := open(t, Options{DSN: u, Table: table})
	s.Close()
	testtools.PostgresExec(t, u, "UPDATE "+pgx.Identifier{table + "_meta"}.Sanitize()+" SET schema_version = 99")
	_, err := Open(ctxT(t), Options{DSN: u, Table: table, Logger: quietLogger})
	if err == nil || !strings.Contains(err.Error(), "schema version 99, written by a newer Helix") {
		t.Fatalf("Open = %v", err)
	}
}

func readMetaOf(t *testing.T, s *Store) (meta, error) {
	ctx := ctxT(t)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return meta{}, err
	}
	defer tx.Rollback(ctx)
	return s.readMeta(ctx, tx, false)
}
