package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Defaults of [PostgresOptions]. With them a replica killed while leading is
// replaced within about RetryInterval once PostgreSQL has noticed its connection
// closed (at once for a process that exits or is killed, as the kernel closes its
// socket), and a leader cut off from the database steps down within CheckInterval
// + CheckTimeout.
const (
	DefaultRetryInterval = time.Second
	DefaultCheckInterval = time.Second
	DefaultCheckTimeout  = 2 * time.Second
	// DefaultConnectTimeout bounds opening the lock's connection when the URL has no
	// connect_timeout.
	DefaultConnectTimeout = 10 * time.Second
)

// PostgresOptions tune a [Postgres] elector; zero values mean the defaults.
type PostgresOptions struct {
	// Name is the election's name: replicas with the same name on the same database
	// elect one leader. The lock key is derived from it ([LockKey]) unless LockID is
	// set. "" means "helix".
	Name string
	// LockID, when set, is the advisory lock key itself.
	LockID *int64
	// RetryInterval is the pause between two attempts to take the lock (or to
	// connect) while another replica leads or the database cannot be reached.
	RetryInterval time.Duration
	// CheckInterval is the pause between two checks of the leader's connection.
	CheckInterval time.Duration
	// CheckTimeout bounds one check, and one attempt to take the lock; a check that
	// does not answer in time ends the leadership.
	CheckTimeout time.Duration
	// Logger receives the election's logs; nil means slog.Default().
	Logger *slog.Logger
}

// LockKey derives the advisory lock key of an election name: the FNV-1a 64-bit
// hash of "helix/cluster/" + name, as PostgreSQL's bigint.
func LockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("helix/cluster/" + name))
	return int64(h.Sum64())
}

// Postgres is a [Leader] holding a PostgreSQL session-level advisory lock
// (pg_try_advisory_lock) on a connection of its own. A follower keeps that
// connection open and tries the lock every RetryInterval; the leader pings the
// connection every CheckInterval, and the first check that fails or takes longer
// than CheckTimeout ends its term at once and closes the connection, which makes
// PostgreSQL release the lock. A Postgres opens nothing until Campaign.
type Postgres struct {
	cfg   *pgx.ConnConfig
	shown string // the URL without its password, for logs
	name  string
	key   int64
	opts  PostgresOptions
	log   *slog.Logger

	leader   atomic.Bool
	terms    atomic.Uint64
	mu       sync.Mutex
	conn     *pgx.Conn               // the lock's connection; nil when closed
	term     context.CancelCauseFunc // cancels the running term
	watchEnd chan struct{}           // closed by Resign to stop the watchdog
	watched  chan struct{}           // closed when the watchdog returned
	rested   bool                    // Resign ran: wait one RetryInterval before the next attempt
	failing  bool                    // the last attempt failed
	warned   time.Time               // when a failure was last logged as a warning
}

// rewarn is how often a failure that goes on is logged as a warning again.
const rewarn = time.Minute

var _ Leader = (*Postgres)(nil)

// NewPostgres returns an elector on the database of rawURL (postgres:// or
// postgresql://, with libpq's parameters; parameters PostgreSQL knows as settings,
// such as tcp_keepalives_idle, are set on the lock's session). It checks the URL
// and connects to nothing; errors never show the password.
func NewPostgres(rawURL string, opts PostgresOptions) (*Postgres, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("the leader URL: %s", parseProblem(err))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.Name == "" {
		opts.Name = "helix"
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = DefaultRetryInterval
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = DefaultCheckTimeout
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		// Operators find the lock's session in pg_stat_activity by this name.
		cfg.RuntimeParams["application_name"] = "helix cluster " + opts.Name
	}
	key := LockKey(opts.Name)
	if opts.LockID != nil {
		key = *opts.LockID
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Postgres{cfg: cfg, shown: redact(rawURL), name: opts.Name, key: key, opts: opts,
		log: log.With("cluster", opts.Name)}, nil
}

// parseProblem is what pgx found wrong, without the connection string it quotes.
func parseProblem(err error) string {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if i := strings.Index(msg, "`: "); i >= 0 {
			return msg[i+3:]
		}
		return "it does not parse"
	}
	return msg
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// Key returns the advisory lock key.
func (p *Postgres) Key() int64 { return p.key }

// Name returns the election's name.
func (p *Postgres) Name() string { return p.name }

// IsLeader reports whether this replica holds the lock and its last check passed.
func (p *Postgres) IsLeader() bool { return p.leader.Load() }

// Terms counts the terms this elector has begun (the times it became leader).
func (p *Postgres) Terms() uint64 { return p.terms.Load() }

// Campaign tries the lock at once (after one RetryInterval when the previous term
// was resigned, so that others get their chance), then every RetryInterval, until
// it holds it or ctx ends. Connection failures are retried: the first of a series is
// logged as a warning (and again every minute while it lasts), the others at debug
// level, and the recovery at info level.
func (p *Postgres) Campaign(ctx context.Context) (context.Context, error) {
	p.mu.Lock()
	if p.term != nil {
		p.mu.Unlock()
		return nil, errors.New("cluster: Campaign while leading; Resign first")
	}
	rest := p.rested
	p.rested = false
	p.mu.Unlock()
	if rest {
		if err := sleep(ctx, p.opts.RetryInterval); err != nil {
			return nil, err
		}
	}
	for {
		term, err := p.try(ctx)
		if term != nil {
			return term, nil
		}
		if ctx.Err() != nil {
			p.closeConn()
			return nil, ctx.Err()
		}
		if err != nil {
			p.noteFailure(err)
		}
		if err := sleep(ctx, p.opts.RetryInterval); err != nil {
			p.closeConn()
			return nil, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (p *Postgres) noteFailure(err error) {
	p.mu.Lock()
	repeat := p.failing && time.Since(p.warned) < rewarn
	p.failing = true
	if !repeat {
		p.warned = time.Now()
	}
	p.mu.Unlock()
	if repeat {
		p.log.Debug("cluster: cannot take part in the leader election; retrying", "database", p.shown, "error", err)
		return
	}
	p.log.Warn("cluster: cannot take part in the leader election; retrying (this replica runs no singleton trigger meanwhile)",
		"database", p.shown, "retry_interval", p.opts.RetryInterval, "error", err)
}

// try makes one attempt: connect when needed, then pg_try_advisory_lock. It
// returns the term when the lock was granted, (nil, nil) when another session
// holds it, and an error (with the connection closed) when the database failed.
func (p *Postgres) try(ctx context.Context) (context.Context, error) {
	p.mu.Lock()
	conn := p.conn
	p.mu.Unlock()
	if conn == nil {
		c, err := pgx.ConnectConfig(ctx, p.cfg)
		if err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
		conn = c
		p.mu.Lock()
		p.conn = conn
		p.mu.Unlock()
	}
	qctx, cancel := context.WithTimeout(ctx, p.opts.CheckTimeout)
	defer cancel()
	var got bool
	if err := conn.QueryRow(qctx, "SELECT pg_try_advisory_lock($1)", p.key).Scan(&got); err != nil {
		p.closeConn()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("pg_try_advisory_lock: %w", err)
	}
	p.mu.Lock()
	if p.failing {
		p.log.Info("cluster: connected to the leader election again", "database", p.shown)
		p.failing = false
	}
	if !got {
		p.mu.Unlock()
		return nil, nil
	}
	term, cancelTerm := context.WithCancelCause(context.Background())
	p.term = cancelTerm
	p.watchEnd, p.watched = make(chan struct{}), make(chan struct{})
	p.leader.Store(true)
	p.terms.Add(1)
	go p.watch(conn, cancelTerm, p.watchEnd, p.watched)
	p.mu.Unlock()
	p.log.Info("cluster: this replica is now the leader", "lock_key", p.key, "database", p.shown)
	return term, nil
}

// watch checks the lock's connection every CheckInterval until end is closed; the
// first failed check ends the term and closes the connection.
func (p *Postgres) watch(conn *pgx.Conn, cancelTerm context.CancelCauseFunc, end <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(p.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-end:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.CheckTimeout)
		err := conn.Ping(ctx)
		cancel()
		if err == nil {
			continue
		}
		select {
		case <-end: // Resign closed the connection under the check
			return
		default:
		}
		p.leader.Store(false)
		cause := fmt.Errorf("%w: the lock's connection failed its check: %w", ErrLost, err)
		cancelTerm(cause)
		p.log.Warn("cluster: this replica lost the leadership", "error", err)
		// Closing the session releases the lock, should PostgreSQL still hold it.
		cctx, cancel := context.WithTimeout(context.Background(), p.opts.CheckTimeout)
		_ = conn.Close(cctx)
		cancel()
		return
	}
}

// Resign ends the term (if any) with ErrResigned, waits for the watchdog, and
// closes the lock's connection: PostgreSQL releases the lock when the session ends.
func (p *Postgres) Resign(ctx context.Context) error {
	p.mu.Lock()
	cancelTerm, end, watched := p.term, p.watchEnd, p.watched
	p.term, p.watchEnd, p.watched = nil, nil, nil
	wasLeader := p.leader.Swap(false)
	if cancelTerm != nil {
		p.rested = true
	}
	p.mu.Unlock()
	if cancelTerm != nil {
		close(end)
		<-watched
		cancelTerm(ErrResigned)
	}
	err := p.closeConnCtx(ctx)
	if wasLeader {
		p.log.Info("cluster: this replica resigned the leadership")
	}
	return err
}

func (p *Postgres) closeConn() { _ = p.closeConnCtx(context.Background()) }

func (p *Postgres) closeConnCtx(ctx context.Context) error {
	p.mu.Lock()
	conn := p.conn
	p.conn = nil
	p.mu.Unlock()
	if conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.CheckTimeout)
	defer cancel()
	return conn.Close(ctx)
}
