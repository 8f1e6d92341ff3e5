package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arvenza/helix/internal/recordstore"
	"github.com/arvenza/helix/pkg/uri"
)

var _ recordstore.Opener = (*Component)(nil)

// DefaultRecordTable is the table of a record store whose URI has no table=.
const DefaultRecordTable = "helix_audit"

// OpenRecordStore opens a table of records (an audit trail) at the database of
// u, table= naming it (DefaultRecordTable otherwise); connection options are the
// endpoint's (sslmode=, user=, password=, connectTimeout= …). The table is
// created on first use: the id as primary key, a few columns to query by, and
// the whole record as jsonb. A batch is one INSERT … ON CONFLICT (id) DO NOTHING
// statement, so a record written again after a lost commit is stored once.
func (c *Component) OpenRecordStore(u *uri.URI, _ recordstore.Options) (recordstore.Store, error) {
	q := *u
	q.Params = cloneValues(u.Params)
	if q.Params.Get("table") == "" {
		q.Params.Set("table", DefaultRecordTable)
	}
	for _, k := range []string{"operation", "query", "where", "returning", "insertMode", "allowedColumns", "onConsume", "onConsumeFailed", "channel", "delay"} {
		if q.Params.Has(k) {
			return nil, fmt.Errorf("%s: option %s does not apply to a table of records", Spec.Redact(u.Raw), k)
		}
	}
	ep, err := c.CreateEndpoint(&q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Spec.Redact(u.Raw), err)
	}
	e := ep.(*endpoint)
	return &recordTable{e: e, table: e.tableIdent.Sanitize()}, nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// recordTable writes records to one table through the component's pool.
type recordTable struct {
	e     *endpoint
	table string // quoted

	mu      sync.Mutex
	pool    *pgxpool.Pool
	created bool
}

func (t *recordTable) Write(ctx context.Context, recs []recordstore.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pool == nil {
		pool, err := t.e.c.acquirePool(t.e.s)
		if err != nil {
			return fmt.Errorf("postgres %s: %w", t.e.redacted, err)
		}
		t.pool = pool
	}
	if !t.created {
		if _, err := t.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+t.table+` (
	id text PRIMARY KEY,
	time timestamptz NOT NULL,
	server text NOT NULL,
	principal text NOT NULL,
	upstream text,
	method text NOT NULL,
	name text NOT NULL,
	outcome text NOT NULL,
	record jsonb NOT NULL)`); err != nil {
			return t.e.describe(err)
		}
		t.created = true
	}
	// One statement: the batch is committed whole or not at all.
	batch := make([]json.RawMessage, len(recs))
	for i, r := range recs {
		batch[i] = r.JSON
	}
	arg, err := json.Marshal(batch)
	if err != nil {
		return fmt.Errorf("postgres %s: a record is not JSON: %w", t.e.redacted, err)
	}
	_, err = t.pool.Exec(ctx, `INSERT INTO `+t.table+` (id, time, server, principal, upstream, method, name, outcome, record)
SELECT r->>'id', CAST(r->>'time' AS timestamptz), COALESCE(r->>'server', ''), COALESCE(r->>'principal', ''),
	r->>'upstream', COALESCE(r->>'method', ''), COALESCE(r->>'name', ''), COALESCE(r->>'outcome', ''), r
FROM jsonb_array_elements(CAST($1 AS jsonb)) AS r
ON CONFLICT (id) DO NOTHING`, string(arg))
	if err != nil {
		return t.e.describe(err)
	}
	return nil
}

func (t *recordTable) Close(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pool != nil {
		t.pool = nil
		t.e.c.releasePool(t.e.s)
	}
	return nil
}
