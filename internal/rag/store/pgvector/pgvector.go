// Package pgvector is the rag-store "pgvector": a pipeline's chunks in PostgreSQL,
// with their vectors in a pgvector column (HNSW index, cosine distance) and the
// keyword side in SQL (a generated tsvector column with a GIN index).
//
// Each pipeline has its own tables, named after [Options.Table] (see [TableName]):
//
//	<table>_meta       one row: the embedding model, the vector dimension, the text search configuration
//	<table>_documents  id, content hash, updated_at
//	<table>_chunks     doc_id (FK, ON DELETE CASCADE), idx, id, content, title, offsets,
//	                   headings, metadata jsonb, embedding vector(dim),
//	                   tsv and title_tsv (generated)
//
// [Open] creates or upgrades them (idempotently, in one transaction, under an
// advisory lock so that replicas starting together do not race). Schema version 2
// added the chunk's title (its document's): a table of version 1 gets the title
// and title_tsv columns (ALTER TABLE … ADD COLUMN IF NOT EXISTS), its chunks'
// titles copied from their metadata's "title" (where the pipelines of version 1
// kept them), and its meta row says 2.
//
// The vector dimension: a vector(dim) column needs dim, which an embedder may only
// reveal with its first vectors. With [Options.Dimensions] 0 the embedding column is
// created as an untyped vector (all NULL); the first Put that brings vectors fixes
// the dimension in its own transaction (ALTER COLUMN TYPE vector(dim), the HNSW
// index, the meta row), under the same lock. One typed column and one plain index is
// simpler and faster to query than an untyped column with an expression index per
// dimension, and a table never holds two dimensions anyway: mixing models in one
// table is refused.
//
// Keyword ranking, with the english configuration (every pipeline's), is the
// embedded store's BM25 over Helix's own term tables (schema version 3, see
// bm25.go and bm25search.go). With another configuration it is PostgreSQL's
// ts_rank over the generated tsvector columns (no idf, below BM25 on benchmarks),
// the title's lexemes weighted A and the text's D (see SearchKeyword).
package pgvector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgv "github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/textproc"
)

// Options configure [Open].
type Options struct {
	// DSN is a libpq connection string or URL. Empty: $DATABASE_URL, and when that
	// is empty too, libpq's PG* environment variables (PGHOST, PGUSER, ...).
	DSN string
	// Pool, when set, is used instead of opening one from DSN (to share a pool
	// between pipelines); Close leaves it open. The store registers the vector
	// types on the pool's connections as it acquires them.
	Pool *pgxpool.Pool
	// Table is the base name of the pipeline's tables (required): at most
	// MaxTableLen bytes, any characters (it is always quoted). [TableName] derives
	// one from a pipeline id.
	Table string
	// Model is the embedder's Model() ("" when the pipeline has no embedder). A
	// table filled by another model is refused.
	Model string
	// Dimensions of the model's vectors; 0: fixed by the first Put with vectors.
	Dimensions int
	// TextSearchConfig is the PostgreSQL text search configuration of the keyword
	// side (stemming, stop words); "" means "english".
	TextSearchConfig string
	Logger           *slog.Logger
}

// MaxTableLen bounds Options.Table so that every derived name (the longest is
// <table>_chunks_embedding_idx) fits PostgreSQL's 63-byte identifiers: longer ones
// would be silently truncated and could collide.
const MaxTableLen = 63 - len("_chunks_embedding_idx")

// maxIndexedDims is the most dimensions an HNSW index on vector accepts; above it
// searches are exact (sequential).
const maxIndexedDims = 2000

// schemaVersion is recorded in the meta table: 1 had no title, 2 has the title
// and title_tsv columns, 3 the BM25 tables (bm25.go) and the chunks' field
// lengths.
const schemaVersion = 3

// migrationLockKey serialises every Helix rag migration on a server (they are short
// and rare): CREATE EXTENSION and CREATE TABLE IF NOT EXISTS race otherwise.
const migrationLockKey = "helix-rag-pgvector-migrations"

var safeConfigName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// TableName derives a table base name from a pipeline id: "helix_rag_" and the id
// lower-cased with every character outside [a-z0-9_] replaced by "_", plus a short
// hash of the id when that changed or truncated it (so distinct ids never share
// tables). The result is a plain identifier of at most MaxTableLen bytes.
func TableName(pipelineID string) string {
	const prefix = "helix_rag_"
	var b strings.Builder
	for _, r := range strings.ToLower(pipelineID) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == pipelineID && len(prefix)+len(name) <= MaxTableLen {
		return prefix + name
	}
	sum := sha256.Sum256([]byte(pipelineID))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if room := MaxTableLen - len(prefix) - len(suffix); len(name) > room {
		name = name[:room]
	}
	return prefix + name + suffix
}

// Store is a pipeline's pgvector store. Safe for concurrent use.
type Store struct {
	pool      *pgxpool.Pool
	ownsPool  bool
	logger    *slog.Logger
	redact    func(string) string
	table     string
	model     string
	config    string
	iterative bool // pgvector >= 0.8: hnsw.iterative_scan exists

	// Sanitised identifiers.
	metaT, docsT, chunksT, hnswIdx string
	termsT, statsT, dfT            string

	// bm25: keyword search ranks by BM25 over analyzer's terms (the english
	// configuration); otherwise by ts_rank over the text search configuration.
	bm25     bool
	analyzer textproc.Analyzer

	mu   sync.Mutex
	dims int // 0 until known

	closeOnce sync.Once
}

var _ rag.Store = (*Store)(nil)

type meta struct {
	model   string
	dims    int
	config  string
	version int
}

// Open connects (or uses Options.Pool), runs the migrations and checks that the
// tables were filled by the same model and dimension.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Table == "" {
		return nil, errors.New("pgvector store: the table name is required (derive one from the pipeline id with TableName)")
	}
	if len(o.Table) > MaxTableLen {
		return nil, fmt.Errorf("pgvector store: table name %q is %d bytes, more than %d (PostgreSQL would truncate the derived names): use TableName", o.Table, len(o.Table), MaxTableLen)
	}
	if !utf8.ValidString(o.Table) || strings.ContainsRune(o.Table, 0) {
		return nil, fmt.Errorf("pgvector store: table name %q is not valid UTF-8 text: use TableName", o.Table)
	}
	if o.Dimensions < 0 {
		return nil, fmt.Errorf("pgvector store: dimensions %d must not be negative", o.Dimensions)
	}
	if o.TextSearchConfig == "" {
		o.TextSearchConfig = "english"
	}
	if !safeConfigName.MatchString(o.TextSearchConfig) {
		return nil, fmt.Errorf("pgvector store: text search configuration %q is not a configuration name (e.g. english, simple, german)", o.TextSearchConfig)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Store{
		logger:  o.Logger,
		redact:  func(m string) string { return m },
		table:   o.Table,
		model:   o.Model,
		config:  o.TextSearchConfig,
		metaT:   pgx.Identifier{o.Table + "_meta"}.Sanitize(),
		docsT:   pgx.Identifier{o.Table + "_documents"}.Sanitize(),
		chunksT: pgx.Identifier{o.Table + "_chunks"}.Sanitize(),
		hnswIdx: pgx.Identifier{o.Table + "_chunks_embedding_idx"}.Sanitize(),
		termsT:  pgx.Identifier{o.Table + "_terms"}.Sanitize(),
		statsT:  pgx.Identifier{o.Table + "_bm25_stats"}.Sanitize(),
		dfT:     pgx.Identifier{o.Table + "_df"}.Sanitize(),
		bm25:    o.TextSearchConfig == bm25Config,
	}
	if s.bm25 {
		s.analyzer = textproc.English()
	}
	if o.Pool != nil {
		s.pool = o.Pool
		conn, err := o.Pool.Acquire(ctx)
		if err != nil {
			return nil, fmt.Errorf("pgvector store %q: connect: %w", o.Table, err)
		}
		err = s.migrate(ctx, conn.Conn(), o)
		conn.Release()
		if err != nil {
			return nil, err
		}
		return s, nil
	}

	dsn := o.DSN
	if dsn == "" {
		dsn = os.Getenv("DATABASE_URL")
	}
	s.redact = redactor(dsn, "")
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgvector store %q: connection settings: %s", o.Table, s.redact(err.Error()))
	}
	s.redact = redactor(dsn, cfg.ConnConfig.Password)
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "helix"
	}
	// The migrations run on a connection of their own: the pool's connections
	// register the vector types as they connect, which needs the extension the
	// migrations may create.
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("pgvector store %q: connect to %s: %s", o.Table, where(cfg), s.redact(err.Error()))
	}
	err = s.migrate(ctx, conn, o)
	_ = conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	cfg.AfterConnect = pgxvec.RegisterTypes
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgvector store %q: pool for %s: %s", o.Table, where(cfg), s.redact(err.Error()))
	}
	s.pool, s.ownsPool = pool, true
	return s, nil
}

func where(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// redactor returns a function that removes the password (as written in the DSN
// and as parsed) and the DSN itself from messages.
func redactor(dsn, password string) func(string) string {
	var secrets []string
	add := func(p string) {
		if p == "" {
			return
		}
		secrets = append(secrets, p, url.QueryEscape(p), url.PathEscape(p))
	}
	add(password)
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	// key=value form: password=secret or password='se cret'.
	if i := strings.Index(dsn, "password="); i >= 0 {
		v := dsn[i+len("password="):]
		if strings.HasPrefix(v, "'") {
			if j := strings.Index(v[1:], "'"); j >= 0 {
				add(v[1 : j+1])
			}
		} else if f := strings.Fields(v); len(f) > 0 {
			add(f[0])
		}
	}
	if dsn != "" && len(secrets) > 0 {
		secrets = append([]string{dsn}, secrets...)
	}
	return func(msg string) string {
		for _, sec := range secrets {
			if sec != "" {
				msg = strings.ReplaceAll(msg, sec, "***")
			}
		}
		return msg
	}
}

func (s *Store) errf(format string, err error, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &storeError{msg: fmt.Sprintf("pgvector store %q: %s: %s", s.table, msg, s.redact(err.Error())), err: err}
}

// storeError keeps the cause for errors.Is/As (context cancellation, pgconn
// errors) while its message is redacted.
type storeError struct {
	msg string
	err error
}

func (e *storeError) Error() string { return e.msg }
func (e *storeError) Unwrap() error { return e.err }

// migrate creates or completes the tables under the migration lock.
func (s *Store) migrate(ctx context.Context, conn *pgx.Conn, o Options) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return s.errf("begin the migrations", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", migrationLockKey); err != nil {
		return s.errf("take the migration lock", err)
	}
	version, err := s.ensureExtension(ctx, tx)
	if err != nil {
		return err
	}
	s.iterative = versionAtLeast(version, 0, 8)

	var exists bool
	if err := tx.QueryRow(ctx, "SELECT $1::text::regconfig IS NOT NULL", s.config).Scan(&exists); err != nil {
		return s.errf("text search configuration %q (see \\dF in psql for the available ones)", err, s.config)
	}

	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.metaT+` (
		singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
		model text NOT NULL,
		dimensions integer NOT NULL DEFAULT 0,
		text_search_config text NOT NULL,
		schema_version integer NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return s.errf("create the meta table", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.metaT+` (model, dimensions, text_search_config, schema_version)
		VALUES ($1, 0, $2, $3) ON CONFLICT DO NOTHING`, o.Model, s.config, schemaVersion); err != nil {
		return s.errf("record the model", err)
	}
	m, err := s.readMeta(ctx, tx, false)
	if err != nil {
		return err
	}
	if err := s.checkMeta(m, o); err != nil {
		return err
	}
	if m.version > schemaVersion {
		return fmt.Errorf("pgvector store %q has schema version %d, written by a newer Helix (this one knows up to %d): run that version, or %s",
			s.table, m.version, schemaVersion, s.reingestHint())
	}
	// The configuration is a checked name (safeConfigName) in a string literal: a
	// generated column's expression cannot take a parameter.
	cfgLit := "'" + s.config + "'::regconfig"
	// The title's lexemes have weight A (the content's keep the default, D), so
	// that ranking can weigh them apart from one tsvector.
	titleTSV := `title_tsv tsvector GENERATED ALWAYS AS (setweight(to_tsvector(` + cfgLit + `, title), 'A')) STORED`
	embeddingType := "vector"
	if m.dims > 0 {
		embeddingType = "vector(" + strconv.Itoa(m.dims) + ")"
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + s.docsT + ` (
			id text PRIMARY KEY,
			hash text NOT NULL,
			updated_at timestamptz NOT NULL DEFAULT now())`,
		`CREATE TABLE IF NOT EXISTS ` + s.chunksT + ` (
			doc_id text NOT NULL REFERENCES ` + s.docsT + ` (id) ON DELETE CASCADE,
			idx integer NOT NULL,
			id text NOT NULL,
			content text NOT NULL,
			title text NOT NULL DEFAULT '',
			start_offset integer NOT NULL,
			end_offset integer NOT NULL,
			headings text[] NOT NULL DEFAULT '{}',
			metadata jsonb NOT NULL DEFAULT '{}',
			embedding ` + embeddingType + ` NULL,
			tsv tsvector GENERATED ALWAYS AS (to_tsvector(` + cfgLit + `, content)) STORED,
			` + titleTSV + `,
			PRIMARY KEY (doc_id, idx))`,
		// Schema version 1 tables have neither: added (no-ops on a new table).
		`ALTER TABLE ` + s.chunksT + ` ADD COLUMN IF NOT EXISTS title text NOT NULL DEFAULT ''`,
		`ALTER TABLE ` + s.chunksT + ` ADD COLUMN IF NOT EXISTS ` + titleTSV,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{s.table + "_chunks_tsv_idx"}.Sanitize() + ` ON ` + s.chunksT + ` USING gin (tsv)`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{s.table + "_chunks_title_tsv_idx"}.Sanitize() + ` ON ` + s.chunksT + ` USING gin (title_tsv)`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{s.table + "_chunks_metadata_idx"}.Sanitize() + ` ON ` + s.chunksT + ` USING gin (metadata jsonb_path_ops)`,
	}
	stmts = append(stmts, s.bm25Tables()...)
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return s.errf("migrate", err)
		}
	}
	if m.version < 2 {
		// Version 1 chunks kept their document's title in the metadata only.
		tag, err := tx.Exec(ctx, `UPDATE `+s.chunksT+` SET title = metadata->>'title'
			WHERE title = '' AND jsonb_typeof(metadata->'title') = 'string' AND metadata->>'title' <> ''`)
		if err != nil {
			return s.errf("copy the chunks' titles from their metadata", err)
		}
		if m.version > 0 {
			s.logger.Info("rag pgvector store: upgraded to schema version 2 (chunk titles)", "table", s.table,
				"from_version", m.version, "titled_chunks", tag.RowsAffected())
		}
	}
	if m.version < 3 && s.bm25 {
		// Chunks of before BM25 have no terms: analysed here, in the
		// migration's transaction (a replica opening meanwhile waits on the lock).
		n, err := s.backfillTerms(ctx, tx)
		if err != nil {
			return s.errf("analyse the chunks for BM25 (schema version 3)", err)
		}
		if n > 0 {
			s.logger.Info("rag pgvector store: upgraded to schema version 3 (BM25 keyword ranking)", "table", s.table,
				"from_version", m.version, "chunks_analysed", n)
		}
	}
	if m.version < schemaVersion {
		if _, err := tx.Exec(ctx, "UPDATE "+s.metaT+" SET schema_version = $1", schemaVersion); err != nil {
			return s.errf("record the schema version", err)
		}
	}
	switch {
	case m.dims > 0:
		if err := s.createVectorIndex(ctx, tx, m.dims); err != nil {
			return err
		}
	case o.Dimensions > 0:
		if err := s.fixDimensions(ctx, tx, o.Dimensions); err != nil {
			return err
		}
		m.dims = o.Dimensions
	}
	if err := tx.Commit(ctx); err != nil {
		return s.errf("commit the migrations", err)
	}
	s.dims = m.dims
	s.logger.Info("rag pgvector store ready", "table", s.table, "model", s.model, "dimensions", m.dims,
		"text_search_config", s.config, "pgvector", version)
	return nil
}

// ensureExtension creates the vector extension unless it exists (creating it needs
// a privilege the application's role may lack) and returns its version.
func (s *Store) ensureExtension(ctx context.Context, tx pgx.Tx) (string, error) {
	var version string
	err := tx.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'vector'").Scan(&version)
	if err == nil {
		return version, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", s.errf("look for the vector extension", err)
	}
	if _, err := tx.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector"); err != nil {
		return "", s.errf("the pgvector extension is not enabled in this database and enabling it failed "+
			"(install pgvector on the server, then have a superuser or the database owner run CREATE EXTENSION vector)", err)
	}
	if err := tx.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'vector'").Scan(&version); err != nil {
		return "", s.errf("read the vector extension's version", err)
	}
	return version, nil
}

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func (s *Store) readMeta(ctx context.Context, tx pgx.Tx, forUpdate bool) (meta, error) {
	q := "SELECT model, dimensions, text_search_config, schema_version FROM " + s.metaT
	if forUpdate {
		q += " FOR UPDATE"
	}
	var m meta
	if err := tx.QueryRow(ctx, q).Scan(&m.model, &m.dims, &m.config, &m.version); err != nil {
		return meta{}, s.errf("read the meta table", err)
	}
	return m, nil
}

func (s *Store) reingestHint() string {
	return fmt.Sprintf("to re-ingest with the new settings, drop the old tables (DROP TABLE %s, %s, %s, %s, %s, %s) or give the pipeline a new id; the next start ingests every document again",
		s.termsT, s.dfT, s.statsT, s.chunksT, s.docsT, s.metaT)
}

func describeModel(m string) string {
	if m == "" {
		return "no embedder"
	}
	return "model " + strconv.Quote(m)
}

func (s *Store) checkMeta(m meta, o Options) error {
	if m.model != o.Model {
		return fmt.Errorf("pgvector store %q was filled with %s (%d dimensions) but the pipeline now embeds with %s: %s",
			s.table, describeModel(m.model), m.dims, describeModel(o.Model), s.reingestHint())
	}
	if o.Dimensions > 0 && m.dims > 0 && o.Dimensions != m.dims {
		return fmt.Errorf("pgvector store %q holds %d-dimension vectors of %s but the pipeline's are %d-dimension: %s",
			s.table, m.dims, describeModel(m.model), o.Dimensions, s.reingestHint())
	}
	if m.config != s.config {
		return fmt.Errorf("pgvector store %q indexes keywords with text search configuration %q, not %q: %s",
			s.table, m.config, s.config, s.reingestHint())
	}
	return nil
}

// fixDimensions types the embedding column as vector(dims), creates its index and
// records dims. The caller holds the migration lock (or the meta row lock) in tx.
func (s *Store) fixDimensions(ctx context.Context, tx pgx.Tx, dims int) error {
	d := strconv.Itoa(dims)
	if _, err := tx.Exec(ctx, "ALTER TABLE "+s.chunksT+" ALTER COLUMN embedding TYPE vector("+d+")"); err != nil {
		return s.errf("set the vector dimension to %d", err, dims)
	}
	if err := s.createVectorIndex(ctx, tx, dims); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "UPDATE "+s.metaT+" SET dimensions = $1", dims); err != nil {
		return s.errf("record the vector dimension", err)
	}
	s.logger.Info("rag pgvector store: vector dimension fixed", "table", s.table, "dimensions", dims)
	return nil
}

func (s *Store) createVectorIndex(ctx context.Context, tx pgx.Tx, dims int) error {
	if dims > maxIndexedDims {
		s.logger.Warn("rag pgvector store: vectors have more dimensions than an HNSW index takes; vector searches scan the table",
			"table", s.table, "dimensions", dims, "max_indexed", maxIndexedDims)
		return nil
	}
	if _, err := tx.Exec(ctx, "CREATE INDEX IF NOT EXISTS "+s.hnswIdx+" ON "+s.chunksT+" USING hnsw (embedding vector_cosine_ops)"); err != nil {
		return s.errf("create the HNSW index", err)
	}
	return nil
}

// acquire returns a pool connection with the vector types registered (a shared
// pool's connections were not made by Open's AfterConnect).
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, s.errf("connect", err)
	}
	if _, ok := conn.Conn().TypeMap().TypeForName("vector"); !ok {
		if err := pgxvec.RegisterTypes(ctx, conn.Conn()); err != nil {
			conn.Release()
			return nil, s.errf("register the vector type", err)
		}
	}
	return conn, nil
}

func (s *Store) cachedDims() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dims
}

func (s *Store) setDims(d int) {
	s.mu.Lock()
	s.dims = d
	s.mu.Unlock()
}

// Documents returns every stored document's content hash by id.
func (s *Store) Documents(ctx context.Context) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, "SELECT id, hash FROM "+s.docsT)
	if err != nil {
		return nil, s.errf("list documents", err)
	}
	out := map[string]string{}
	var id, hash string
	_, err = pgx.ForEachRow(rows, []any{&id, &hash}, func() error {
		out[id] = hash
		return nil
	})
	if err != nil {
		return nil, s.errf("list documents", err)
	}
	return out, nil
}

// Put replaces the document's chunks in one transaction.
func (s *Store) Put(ctx context.Context, docID, hash string, chunks []rag.Chunk, vectors [][]float32) error {
	if vectors != nil && len(vectors) != len(chunks) {
		return fmt.Errorf("pgvector store %q: document %q: %d vectors for %d chunks", s.table, docID, len(vectors), len(chunks))
	}
	dims := 0
	for i, v := range vectors {
		if i == 0 {
			dims = len(v)
			if dims == 0 {
				return fmt.Errorf("pgvector store %q: document %q: chunk 0 has an empty vector", s.table, docID)
			}
		} else if len(v) != dims {
			return fmt.Errorf("pgvector store %q: document %q: chunk %d's vector has %d dimensions, chunk 0's %d", s.table, docID, i, len(v), dims)
		}
	}
	for i, c := range chunks {
		if c.DocID != "" && c.DocID != docID {
			return fmt.Errorf("pgvector store %q: document %q: chunk %d belongs to document %q", s.table, docID, i, c.DocID)
		}
	}
	if known := s.cachedDims(); dims > 0 && known > 0 && dims != known {
		return fmt.Errorf("pgvector store %q: document %q has %d-dimension vectors but the store holds %d-dimension ones of %s: %s",
			s.table, docID, dims, known, describeModel(s.model), s.reingestHint())
	}
	// Analysed before the transaction, which then only writes.
	var analysed []chunkTerms
	var added statsDelta
	if s.bm25 {
		analysed = make([]chunkTerms, len(chunks))
		for i, c := range chunks {
			analysed[i] = chunkTerms{analyzeField(s.analyzer, cleanText(c.Text)), analyzeField(s.analyzer, cleanText(c.Title))}
			added.add(analysed[i])
		}
	}

	conn, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return s.errf("put document %q", err, docID)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	if dims > 0 && s.cachedDims() == 0 {
		if err := s.settleDimensions(ctx, tx, dims, docID); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.docsT+` (id, hash, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, updated_at = EXCLUDED.updated_at`, docID, hash); err != nil {
		return s.errf("put document %q", err, docID)
	}
	// The upsert above holds the document's row lock: a concurrent Put or
	// Delete of it waits, so the chunks removed here are the ones counted.
	removed, err := s.removeChunks(ctx, tx, docID)
	if err != nil {
		return s.errf("replace document %q's chunks", err, docID)
	}
	if len(chunks) > 0 {
		rows := make([][]any, len(chunks))
		idxs := make([]int, len(chunks))
		for i, c := range chunks {
			id := c.ID
			if id == "" {
				id = docID + "#" + strconv.Itoa(c.Index)
			}
			headings := make([]string, len(c.Headings))
			for j, h := range c.Headings {
				headings[j] = cleanText(h)
			}
			md, _ := cleanValue(c.Metadata).(map[string]any)
			if md == nil {
				md = map[string]any{}
			}
			var emb any
			if vectors != nil {
				emb = pgv.NewVector(vectors[i])
			}
			var textLen, titleLen any // NULL: not analysed (ts_rank tables)
			if s.bm25 {
				textLen, titleLen = analysed[i].text.length, int32(0)
				if analysed[i].titled() {
					titleLen = analysed[i].title.length
				}
			}
			idxs[i] = c.Index
			rows[i] = []any{docID, c.Index, cleanText(id), cleanText(c.Text), cleanText(c.Title), c.Start, c.End, headings, md, emb, textLen, titleLen}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{s.table + "_chunks"},
			[]string{"doc_id", "idx", "id", "content", "title", "start_offset", "end_offset", "headings", "metadata", "embedding", "text_len", "title_len"},
			pgx.CopyFromRows(rows))
		if err != nil {
			return s.errf("write document %q's chunks", err, docID)
		}
		if s.bm25 {
			if err := s.writeTerms(ctx, tx, docID, idxs, analysed); err != nil {
				return s.errf("write document %q's terms", err, docID)
			}
		}
	}
	if s.bm25 {
		if err := s.addStats(ctx, tx, docID, added, removed); err != nil {
			return s.errf("count document %q in the BM25 statistics", err, docID)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return s.errf("commit document %q", err, docID)
	}
	if dims > 0 && s.cachedDims() == 0 {
		s.setDims(dims)
	}
	return nil
}

// settleDimensions fixes the store's dimension at the first vectors, or checks
// them against what another replica fixed meanwhile.
func (s *Store) settleDimensions(ctx context.Context, tx pgx.Tx, dims int, docID string) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", migrationLockKey); err != nil {
		return s.errf("take the migration lock", err)
	}
	m, err := s.readMeta(ctx, tx, true)
	if err != nil {
		return err
	}
	switch {
	case m.dims == 0:
		return s.fixDimensions(ctx, tx, dims)
	case m.dims != dims:
		return fmt.Errorf("pgvector store %q: document %q has %d-dimension vectors but the store holds %d-dimension ones of %s: %s",
			s.table, docID, dims, m.dims, describeModel(m.model), s.reingestHint())
	}
	s.setDims(m.dims)
	return nil
}

// cleanText drops what PostgreSQL text cannot hold: NUL bytes and invalid UTF-8.
func cleanText(t string) string {
	if strings.IndexByte(t, 0) >= 0 {
		t = strings.ReplaceAll(t, "\x00", "")
	}
	if !utf8.ValidString(t) {
		t = strings.ToValidUTF8(t, "\uFFFD")
	}
	return t
}

func cleanValue(v any) any {
	switch x := v.(type) {
	case string:
		return cleanText(x)
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[cleanText(k)] = cleanValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cleanValue(e)
		}
		return out
	}
	return v
}

// Delete removes the document, its chunks and their terms, and takes them out
// of the BM25 statistics, in one transaction.
func (s *Store) Delete(ctx context.Context, docID string) error {
	if !s.bm25 {
		// The chunks go with the document (ON DELETE CASCADE).
		if _, err := s.pool.Exec(ctx, "DELETE FROM "+s.docsT+" WHERE id = $1", docID); err != nil {
			return s.errf("delete document %q", err, docID)
		}
		return nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.errf("delete document %q", err, docID)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The document's row lock first, as Put takes it: the chunks counted out
	// are the committed ones, and no concurrent Put of the document interleaves.
	tag, err := tx.Exec(ctx, "SELECT 1 FROM "+s.docsT+" WHERE id = $1 FOR UPDATE", docID)
	if err != nil {
		return s.errf("delete document %q", err, docID)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	removed, err := s.removeChunks(ctx, tx, docID)
	if err != nil {
		return s.errf("delete document %q's chunks", err, docID)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM "+s.docsT+" WHERE id = $1", docID); err != nil {
		return s.errf("delete document %q", err, docID)
	}
	if err := s.addStats(ctx, tx, docID, statsDelta{}, removed); err != nil {
		return s.errf("take document %q out of the BM25 statistics", err, docID)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.errf("commit the deletion of document %q", err, docID)
	}
	return nil
}

const chunkColumns = "c.id, c.doc_id, c.idx, c.content, c.title, c.start_offset, c.end_offset, c.headings, c.metadata"

// compileSearchFilter parses f and compiles it (see compileFilter), its
// parameters numbered from base+1; "" for the empty filter.
func (s *Store) compileSearchFilter(f rag.Filter, base int) (string, []any, error) {
	e, err := f.Parse()
	if err != nil {
		return "", nil, fmt.Errorf("pgvector store %q: %w", s.table, err)
	}
	if e == nil {
		return "", nil, nil
	}
	cond, args, err := compileFilter(e, base)
	if err != nil {
		return "", nil, fmt.Errorf("pgvector store %q: %w", s.table, err)
	}
	return cond, args, nil
}

// SearchVector returns the n chunks nearest to vector by cosine distance; the
// score is the cosine similarity.
func (s *Store) SearchVector(ctx context.Context, vector []float32, n int, f rag.Filter) ([]rag.Hit, error) {
	if n <= 0 {
		return nil, nil
	}
	dims := s.cachedDims()
	if dims == 0 {
		var err error
		if dims, err = s.reloadDims(ctx); err != nil {
			return nil, err
		}
		if dims == 0 {
			return nil, rag.ErrNoVectors
		}
	}
	if len(vector) != dims {
		return nil, fmt.Errorf("pgvector store %q: the query vector has %d dimensions, the store's vectors (%s) %d",
			s.table, len(vector), describeModel(s.model), dims)
	}
	filter, fargs, err := s.compileSearchFilter(f, 2)
	if err != nil {
		return nil, err
	}
	conn, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, s.errf("vector search", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The HNSW scan yields ef_search candidates before the filter and LIMIT apply:
	// at least n of them, or LIMIT n could return fewer than n rows (1000 is
	// pgvector's maximum). With a filter, pgvector 0.8's iterative scan keeps
	// scanning until n rows pass it; relaxed order is re-sorted below.
	if _, err := tx.Exec(ctx, "SELECT set_config('hnsw.ef_search', $1, true)", strconv.Itoa(min(max(40, n), 1000))); err != nil {
		return nil, s.errf("vector search", err)
	}
	if filter != "" && s.iterative {
		if _, err := tx.Exec(ctx, "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)"); err != nil {
			return nil, s.errf("vector search", err)
		}
	}
	cond := "c.embedding IS NOT NULL"
	args := []any{pgv.NewVector(vector), n}
	if filter != "" {
		cond += " AND " + filter
		args = append(args, fargs...)
	}
	q := `WITH nearest AS MATERIALIZED (
		SELECT ` + chunkColumns + `, c.embedding <=> $1 AS distance
		FROM ` + s.chunksT + ` c WHERE ` + cond + `
		ORDER BY c.embedding <=> $1 LIMIT $2)
	SELECT id, doc_id, idx, content, title, start_offset, end_offset, headings, metadata, 1 - distance
	FROM nearest ORDER BY distance, doc_id, idx`
	hits, err := s.queryHits(ctx, tx, q, args...)
	if err != nil {
		return nil, s.errf("vector search", err)
	}
	if len(hits) < n && filter != "" {
		// The index scan gave up before n chunks passed the filter (pgvector
		// before 0.8, or hnsw.max_scan_tuples reached): so few chunks match that
		// an exact search among them (through the metadata index) is cheap.
		if _, err := tx.Exec(ctx, `SELECT set_config('enable_indexscan', 'off', true),
			set_config('enable_bitmapscan', 'on', true), set_config('enable_seqscan', 'on', true)`); err != nil {
			return nil, s.errf("vector search", err)
		}
		if hits, err = s.queryHits(ctx, tx, q, args...); err != nil {
			return nil, s.errf("vector search", err)
		}
	}
	if len(hits) == 0 {
		var stored bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+s.chunksT+" WHERE embedding IS NOT NULL)").Scan(&stored); err != nil {
			return nil, s.errf("vector search", err)
		}
		if !stored {
			return nil, rag.ErrNoVectors
		}
	}
	return hits, nil
}

func (s *Store) reloadDims(ctx context.Context) (int, error) {
	var d int
	if err := s.pool.QueryRow(ctx, "SELECT dimensions FROM "+s.metaT).Scan(&d); err != nil {
		return 0, s.errf("read the meta table", err)
	}
	if d > 0 {
		s.setDims(d)
	}
	return d, nil
}

// SearchKeyword ranks the chunks containing any of the query's terms in their
// text or title: by BM25 with the english configuration (searchBM25), otherwise
// (after the text search configuration's stemming and stop words) by
// PostgreSQL's ts_rank, normalised by chunk length. The ranked
// tsvector is the title's lexemes (weight A) then the text's (weight D), a title
// match counting 2.5 times a text match (see rankWeights). A chunk without a
// title scores exactly as it did before titles.
func (s *Store) SearchKeyword(ctx context.Context, query string, n int, f rag.Filter) ([]rag.Hit, error) {
	if n <= 0 {
		return nil, nil
	}
	base := 3 // ts_rank's query: $1 to $3 below
	if s.bm25 {
		base = 0 // searchBM25's query of the filter's chunks
	}
	filter, fargs, err := s.compileSearchFilter(f, base)
	if err != nil {
		return nil, err
	}
	if s.bm25 {
		hits, err := s.searchBM25(ctx, cleanText(query), n, filter, fargs)
		if err != nil {
			return nil, s.errf("keyword search", err)
		}
		return hits, nil
	}
	// plainto_tsquery and websearch_to_tsquery AND every term: a natural-language
	// question then matches almost nothing. The query's lexemes are ORed instead,
	// each quoted as a tsquery literal (quotes and backslashes doubled), so no
	// character of the query is read as tsquery syntax.
	args := []any{s.config, cleanText(query), n}
	cond := "(c.tsv @@ q.query OR c.title_tsv @@ q.query)"
	if filter != "" {
		cond += " AND " + filter
		args = append(args, fargs...)
	}
	q := `WITH q AS MATERIALIZED (
		SELECT string_agg('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery AS query
		FROM unnest(to_tsvector($1::text::regconfig, $2::text)))
	SELECT ` + chunkColumns + `, ts_rank('` + rankWeights + `', c.title_tsv || c.tsv, q.query, 1) AS score
	FROM ` + s.chunksT + ` c, q WHERE q.query IS NOT NULL AND ` + cond + `
	ORDER BY score DESC, c.doc_id, c.idx LIMIT $3`
	hits, err := s.queryHits(ctx, s.pool, q, args...)
	if err != nil {
		return nil, s.errf("keyword search", err)
	}
	return hits, nil
}

// rankWeights are ts_rank's weights of D, C, B and A lexemes. The text's lexemes
// are D and keep ts_rank's default weight 0.1, so that untitled chunks keep
// their scores (and a min_score its meaning); the title's are A, at 0.25: 2.5
// times the text, the ratio of PostgreSQL's default weights of A (1.0) and B
// (0.4), the usual title/body pair. B and C are not used.
const rankWeights = "{0.1, 0.2, 0.4, 0.25}"

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) queryHits(ctx context.Context, db querier, q string, args ...any) ([]rag.Hit, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var hits []rag.Hit
	var h rag.Hit
	_, err = pgx.ForEachRow(rows, []any{&h.Chunk.ID, &h.Chunk.DocID, &h.Chunk.Index, &h.Chunk.Text, &h.Chunk.Title,
		&h.Chunk.Start, &h.Chunk.End, &h.Chunk.Headings, &h.Chunk.Metadata, &h.Score}, func() error {
		hits = append(hits, h)
		h = rag.Hit{}
		return nil
	})
	return hits, err
}

// Stats counts the stored documents and chunks.
func (s *Store) Stats(ctx context.Context) (rag.Stats, error) {
	var st rag.Stats
	err := s.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM "+s.docsT+"), (SELECT count(*) FROM "+s.chunksT+")").
		Scan(&st.Documents, &st.Chunks)
	if err != nil {
		return rag.Stats{}, s.errf("stats", err)
	}
	return st, nil
}

// Close closes the pool if Open opened it; a shared pool stays open.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.ownsPool {
			s.pool.Close()
		}
	})
	return nil
}
