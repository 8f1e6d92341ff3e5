package postgres

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arvenza/helix/internal/jsonnum"
	"github.com/arvenza/helix/pkg/exchange"
)

// Receipts make a durable run's statements happen once. When a step of a
// durable run reaches the producer (its context carries an idempotency key),
// the producer runs the operation and records a receipt — the key and what the
// operation left on the exchange — in one transaction in the target database. A
// run that does the step again after a crash finds the receipt and gets the
// recorded outcome without running the statements again; two executions at once
// (a replica taken for dead that is still running) cannot both commit, since the
// key is the table's primary key.

// receiptsTable is created in the target database on first use.
const receiptsTable = "helix_step_receipts"

const createReceipts = `CREATE TABLE IF NOT EXISTS ` + receiptsTable + ` (
	key text PRIMARY KEY,
	output text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
)`

// receipt is what an operation left on the exchange: the body when the
// operation answers rows, and the row-count and command-tag headers.
type receipt struct {
	HasBody  bool   `json:"has_body,omitempty"`
	Body     any    `json:"body,omitempty"`
	RowCount *int64 `json:"row_count,omitempty"`
	Tag      string `json:"command_tag,omitempty"`
}

// errReceiptTaken is the receipt insert losing to another execution of the same
// step that committed first.
var errReceiptTaken = errors.New("another execution of the step recorded its receipt first")

// processOnce runs the operation at most once per key (see above).
func (p *producer) processOnce(ctx context.Context, pool *pgxpool.Pool, ex *exchange.Exchange, key string) error {
	if err := p.ensureReceipts(ctx, pool); err != nil {
		return err
	}
	err := p.runWithReceipt(ctx, pool, ex, key)
	if errors.Is(err, errReceiptTaken) {
		// The other execution's transaction committed: answer with its outcome
		// (this one's statements were rolled back with the failed insert).
		err = p.runWithReceipt(ctx, pool, ex, key)
	}
	return err
}

// runWithReceipt answers from the receipt of key when there is one, and
// otherwise runs the operation and records its receipt in one transaction.
func (p *producer) runWithReceipt(ctx context.Context, pool *pgxpool.Pool, ex *exchange.Exchange, key string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return p.e.describe(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	var recorded string
	err = tx.QueryRow(ctx, "SELECT output FROM "+receiptsTable+" WHERE key = $1", key).Scan(&recorded)
	switch {
	case err == nil:
		return p.replay(ex, recorded)
	case !errors.Is(err, pgx.ErrNoRows):
		return p.e.describe(fmt.Errorf("read the receipt of %s: %w", receiptsTable, err))
	}
	if err := p.process(ctx, tx, ex); err != nil {
		return err
	}
	out, err := json.Marshal(p.receiptOf(ex))
	if err != nil {
		return fmt.Errorf("record the outcome in %s: %w", receiptsTable, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+receiptsTable+" (key, output) VALUES ($1, $2)", key, string(out)); err != nil {
		if isUniqueViolation(err) {
			return errReceiptTaken
		}
		return p.e.describe(fmt.Errorf("record the outcome in %s: %w", receiptsTable, err))
	}
	if err := tx.Commit(ctx); err != nil {
		// A commit whose answer was lost may have committed: the run doing the
		// step again finds the receipt then.
		return p.e.describe(fmt.Errorf("commit with the receipt: %w", err))
	}
	return nil
}

// answersRows reports whether the operation sets the body (to the rows it
// returns); otherwise it leaves the body as it was.
func (e *endpoint) answersRows() bool {
	return e.op == OpQuery || (e.op != OpExec && e.returning)
}

func (p *producer) receiptOf(ex *exchange.Exchange) receipt {
	m := ex.In()
	r := receipt{Tag: m.HeaderString(HeaderCommandTag)}
	if n, ok := m.Header(HeaderRowCount).(int64); ok {
		r.RowCount = &n
	}
	if p.e.answersRows() {
		r.HasBody, r.Body = true, tagBytes(m.Body())
	}
	return r
}

// replay puts a recorded outcome on the exchange, as the operation did.
func (p *producer) replay(ex *exchange.Exchange, recorded string) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(recorded)))
	dec.UseNumber()
	var r receipt
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("the receipt in %s is not Helix's (%v): was the table written by something else?", receiptsTable, err)
	}
	m := ex.In()
	if r.HasBody {
		body := untagBytes(r.Body)
		if err := jsonnum.Normalize(&body); err != nil {
			return fmt.Errorf("the receipt in %s: %w", receiptsTable, err)
		}
		m.SetBody(body)
	}
	if r.RowCount != nil {
		m.SetHeader(HeaderRowCount, *r.RowCount)
	}
	if r.Tag != "" {
		m.SetHeader(HeaderCommandTag, r.Tag)
	}
	return nil
}

// ensureReceipts creates the receipts table the first time this producer needs it.
func (p *producer) ensureReceipts(ctx context.Context, pool *pgxpool.Pool) error {
	p.mu.Lock()
	ready := p.receiptsReady
	p.mu.Unlock()
	if ready {
		return nil
	}
	_, err := pool.Exec(ctx, createReceipts)
	if isUniqueViolation(err) || isDuplicateTable(err) {
		// Another connection created it at the same moment (CREATE TABLE IF NOT
		// EXISTS is not safe against itself): it is there now.
		err = nil
	}
	if err != nil {
		return p.e.describe(fmt.Errorf("create the table %s for the receipts of durable steps (the database user needs CREATE on the schema, or create it beforehand): %w", receiptsTable, err))
	}
	p.mu.Lock()
	p.receiptsReady = true
	p.mu.Unlock()
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func isDuplicateTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P07"
}

// bytesTag marks a bytea value in a recorded body, which JSON has no type for.
const bytesTag = "\x00bytes"

func tagBytes(v any) any {
	switch x := v.(type) {
	case []byte:
		return map[string]any{bytesTag: base64.StdEncoding.EncodeToString(x)}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = tagBytes(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = tagBytes(e)
		}
		return out
	}
	return v
}

func untagBytes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x[bytesTag].(string); ok && len(x) == 1 {
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				return b
			}
		}
		for k, e := range x {
			x[k] = untagBytes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = untagBytes(e)
		}
	}
	return v
}
