package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arvenza/helix/internal/jsonnum"
	"github.com/arvenza/helix/internal/runloop"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// DefaultStopTimeout bounds Stop when its context has no deadline.
const DefaultStopTimeout = 30 * time.Second

// consumer is a polling or LISTEN trigger. It owns one goroutine between Start and
// Stop; exchanges are handled one at a time, in the order the rows or notifications
// arrive.
//
// Polling: each batch is one transaction: the query's rows (at most maxRows) are
// handed to the workflow one by one, onConsume runs for each row the workflow handled
// (onConsumeFailed for each it did not), and the transaction commits at the end of
// the batch. A batch that does not commit (Helix killed, connection lost, onConsume
// failing) marks nothing, so its rows come again: delivery is at least once, and the
// duplicates after a crash are at most the rows of the batch in flight. Stop lets the
// exchange in flight finish, commits the rows handled so far and stops.
//
// LISTEN: one connection of the pool LISTENs; each NOTIFY becomes an InOnly exchange.
// PostgreSQL keeps no notifications for a listener that is not connected, so
// notifications sent while the connection is down (it is re-opened every delay) are
// lost: LISTEN is at most once. Use polling when every event matters.
type consumer struct {
	e *endpoint
	p component.Processor

	mu       sync.Mutex
	started  bool
	released bool // Stop gave the pool back
	pool     *pgxpool.Pool
	loop     runloop.Loop
}

func (c *consumer) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return fmt.Errorf("%s: consumer already started", c.e.redacted)
	}
	pool, err := c.e.c.acquirePool(c.e.s)
	if err != nil {
		return err
	}
	c.started = true
	c.pool = pool
	if c.e.channel != "" {
		// The first LISTEN happens before Start returns, so a notification sent after
		// a successful start reaches the workflow. When the database is not there yet,
		// the trigger starts anyway and keeps trying every delay.
		conn, err := c.listen(ctx)
		if err != nil {
			c.e.c.logger().Warn("postgres LISTEN failed; retrying", "uri", c.e.redacted, "error", err)
		}
		c.loop.Start(func(workCtx context.Context, stop <-chan struct{}) { c.runListen(workCtx, stop, conn) })
		return nil
	}
	c.loop.Start(c.runPoll)
	return nil
}

// Stop stops polling or listening, lets the exchange in flight finish (and commits
// the batch's marks), and gives the pool back. When ctx ends first (or
// DefaultStopTimeout passes without a deadline) the work in flight is cancelled:
// its batch is rolled back.
func (c *consumer) Stop(ctx context.Context) error {
	// Start holds mu until its loop runs: a Stop that comes during a Start stops
	// that loop, and the first Stop after a Start gives the pool back.
	c.mu.Lock()
	release := c.started && !c.released
	c.released = c.released || release
	c.mu.Unlock()
	err := c.loop.Stop(ctx, DefaultStopTimeout, 5*time.Second)
	if release {
		c.e.c.releasePool(c.e.s)
	}
	if err != nil {
		return fmt.Errorf("stop %s: %w", c.e.redacted, err)
	}
	return nil
}

// stopping reports whether stop is closed.
func stopping(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// wait sleeps d or until stop; it reports whether to go on.
func wait(stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

func (c *consumer) runPoll(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, err := c.pollOnce(ctx, stop)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.e.c.logger().Warn("postgres poll failed; retrying after delay", "uri", c.e.redacted, "error", err)
		}
		if err != nil || n < c.e.maxRows {
			if !wait(stop, c.e.delay) {
				return
			}
		}
	}
}

// polledRow is one row of a poll: its JSON-natural map for the exchange and the
// driver's values for binding onConsume parameters without conversion loss.
type polledRow struct {
	body map[string]any
	raw  map[string]any
}

// pollOnce runs one batch in one transaction and returns how many rows it read.
func (c *consumer) pollOnce(ctx context.Context, stop <-chan struct{}) (int, error) {
	e := c.e
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return 0, e.describe(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	rows, err := tx.Query(ctx, e.query)
	if err != nil {
		return 0, e.describe(err)
	}
	var batch []polledRow
	fields := rows.FieldDescriptions()
	for rows.Next() && len(batch) < e.maxRows {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return 0, e.describe(err)
		}
		raw := make(map[string]any, len(fields))
		for i, f := range fields {
			raw[f.Name] = vals[i]
		}
		batch = append(batch, polledRow{body: rowMap(fields, vals), raw: raw})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, e.describe(err)
	}
	if len(batch) == 0 {
		return 0, nil
	}
	for _, r := range batch {
		select {
		case <-stop:
			// Stop: commit what was handled; the rest comes again next time.
			return len(batch), commit(ctx, tx, e)
		default:
		}
		ex := exchange.NewWithBody(exchange.InOnly, r.body)
		perr := c.p.Process(ctx, ex)
		if perr == nil {
			perr = ex.Exception()
		}
		if ctx.Err() != nil {
			return len(batch), ctx.Err()
		}
		stmt := e.onConsume
		if perr != nil {
			// The engine logged the failure (once, rate-limited); this adds the trigger.
			c.e.c.logger().Debug("postgres polled row failed in the workflow", "uri", e.redacted, "error", perr)
			stmt = e.onConsumeFailed
		}
		if stmt == "" {
			continue
		}
		sql, args, err := bindRow(stmt, r.raw)
		if err != nil {
			return len(batch), err
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return len(batch), e.describe(err)
		}
	}
	return len(batch), commit(ctx, tx, e)
}

func commit(ctx context.Context, tx pgx.Tx, e *endpoint) error {
	if err := tx.Commit(ctx); err != nil {
		return e.describe(err)
	}
	return nil
}

// bindRow binds the :column parameters of stmt from a polled row.
func bindRow(stmt string, row map[string]any) (string, []any, error) {
	sql, names, err := bindNamed(stmt)
	if err != nil {
		return "", nil, err
	}
	args := make([]any, len(names))
	for i, n := range names {
		v, ok := row[n]
		if !ok {
			keys := make(map[string]any, len(row))
			for k := range row {
				keys[k] = nil
			}
			return "", nil, fmt.Errorf("onConsume uses :%s but the polled row has no such column (columns: %s)", n, keyList(keys))
		}
		args[i] = v
	}
	return sql, args, nil
}

// listen takes a connection out of the pool and LISTENs on it.
func (c *consumer) listen(ctx context.Context) (*pgx.Conn, error) {
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, c.e.describe(err)
	}
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{c.e.channel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, c.e.describe(err)
	}
	return conn, nil
}

func (c *consumer) runListen(workCtx context.Context, stop <-chan struct{}, conn *pgx.Conn) {
	// waitCtx ends when Stop is called: waiting for the next notification stops at
	// once, while the exchange in flight keeps workCtx.
	waitCtx, cancelWait := context.WithCancel(workCtx)
	defer cancelWait()
	go func() {
		select {
		case <-stop:
			cancelWait()
		case <-waitCtx.Done():
		}
	}()
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	for {
		if conn == nil {
			if !wait(stop, c.e.delay) {
				return
			}
			var err error
			if conn, err = c.listen(waitCtx); err != nil {
				if waitCtx.Err() != nil {
					return
				}
				c.e.c.logger().Warn("postgres LISTEN failed; retrying", "uri", c.e.redacted, "error", err)
				continue
			}
		}
		n, err := conn.WaitForNotification(waitCtx)
		if err != nil {
			_ = conn.Close(context.Background())
			conn = nil
			if waitCtx.Err() != nil {
				return
			}
			c.e.c.logger().Warn("postgres LISTEN connection lost; reconnecting", "uri", c.e.redacted, "error", c.e.describe(err))
			continue
		}
		if stopping(stop) {
			return
		}
		ex := exchange.NewWithBody(exchange.InOnly, notifyBody(n.Payload))
		ex.In().SetHeader(HeaderChannel, n.Channel)
		ex.In().SetHeader(HeaderNotifyPID, int64(n.PID))
		perr := c.p.Process(workCtx, ex)
		if perr == nil {
			perr = ex.Exception()
		}
		if perr != nil && !errors.Is(perr, context.Canceled) {
			// The engine logged the failure (once, rate-limited); this adds the channel.
			c.e.c.logger().Debug("postgres notification failed in the workflow", "uri", c.e.redacted, "channel", n.Channel, "error", perr)
		}
	}
}

// notifyBody decodes a JSON payload (object, array, number, true/false/null or a
// quoted string) with integers as int64; anything else, a number beyond a 64-bit
// float included, is the text as it came.
func notifyBody(payload string) any {
	t := strings.TrimSpace(payload)
	if t == "" {
		return payload
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return payload
	}
	if jsonnum.Normalize(&v) != nil {
		return payload
	}
	return v
}
