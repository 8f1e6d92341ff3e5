// Package postgres implements postgres://host:port/database: a target that runs SQL
// against PostgreSQL through a jackc/pgx v5 connection pool, and a trigger that polls a
// query (marking handled rows in one transaction per batch) or LISTENs to a channel.
//
// Options and headers are declared in spec.go ([Spec]); docs/postgres.md tells the
// story with the spec's examples and the security notes. Building an endpoint opens
// nothing: pools are created when the first producer or consumer of a server starts,
// shared by every endpoint with the same connection settings, and closed when the last
// one stops. Credentials (URI user info, user=/password=, PG* variables) never appear
// in errors or logs.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Component is the postgres:// component. It holds the pools its endpoints share;
// safe for concurrent use.
type Component struct {
	logger func() *slog.Logger

	mu    sync.Mutex
	pools map[string]*sharedPool
}

var _ component.Component = (*Component)(nil)

type sharedPool struct {
	pool *pgxpool.Pool
	refs int
}

// New returns a postgres component that logs to the logger logger() returns at that
// moment (slog.Default when logger is nil). It opens nothing.
func New(logger func() *slog.Logger) *Component {
	if logger == nil {
		logger = slog.Default
	}
	return &Component{logger: logger, pools: map[string]*sharedPool{}}
}

// settings are an endpoint's connection settings: what a pool is keyed by.
type settings struct {
	host, port, database string
	user, password       string
	sslmode              string
	maxConns             int32
	statementTimeout     time.Duration
	connectTimeout       time.Duration
}

func (s settings) key() string {
	return strings.Join([]string{s.host, s.port, s.database, s.user, s.password, s.sslmode,
		strconv.Itoa(int(s.maxConns)), s.statementTimeout.String(), s.connectTimeout.String()}, "\x00")
}

// connString is a libpq URL for pgxpool.ParseConfig; it holds the password and must
// never be printed.
func (s settings) connString() string {
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(s.host, s.port), Path: "/" + s.database}
	switch {
	case s.user != "" && s.password != "":
		u.User = url.UserPassword(s.user, s.password)
	case s.user != "":
		u.User = url.User(s.user)
	}
	q := url.Values{}
	q.Set("sslmode", s.sslmode)
	u.RawQuery = q.Encode()
	return u.String()
}

// where names the server for messages: host:port/database, never the credentials.
func (s settings) where() string {
	return net.JoinHostPort(s.host, s.port) + "/" + s.database
}

// acquirePool returns the pool for s, creating it (without connecting) when it is
// the first user; releasePool gives it back.
func (c *Component) acquirePool(s settings) (*pgxpool.Pool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := s.key()
	if sp, ok := c.pools[k]; ok {
		sp.refs++
		return sp.pool, nil
	}
	cfg, err := pgxpool.ParseConfig(s.connString())
	if err != nil {
		return nil, fmt.Errorf("connection settings for %s: %s", s.where(), redactErr(err, s))
	}
	cfg.MaxConns = s.maxConns
	cfg.ConnConfig.ConnectTimeout = s.connectTimeout
	if s.statementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(s.statementTimeout.Milliseconds(), 10)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "helix"
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		useNumericCodec(conn) // numeric.go: COPY's numbers without big.Int
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("pool for %s: %s", s.where(), redactErr(err, s))
	}
	c.pools[k] = &sharedPool{pool: pool, refs: 1}
	return pool, nil
}

func (c *Component) releasePool(s settings) {
	c.mu.Lock()
	k := s.key()
	sp, ok := c.pools[k]
	if !ok {
		c.mu.Unlock()
		return
	}
	sp.refs--
	if sp.refs > 0 {
		c.mu.Unlock()
		return
	}
	delete(c.pools, k)
	c.mu.Unlock()
	sp.pool.Close()
}

// uriOptions are the URI's options (see Spec).
type uriOptions struct {
	Operation        string        `option:"operation"`
	OperationGiven   bool          `option:"operation,given"`
	Query            string        `option:"query"`
	Table            string        `option:"table"`
	Where            string        `option:"where"`
	Returning        bool          `option:"returning"`
	InsertMode       string        `option:"insertMode"`
	AllowedColumns   string        `option:"allowedColumns"`
	AllowUnfiltered  bool          `option:"allowUnfiltered"`
	User             string        `option:"user"`
	UserGiven        bool          `option:"user,given"`
	Password         string        `option:"password"`
	PasswordGiven    bool          `option:"password,given"`
	SSLMode          string        `option:"sslmode"`
	MaxConns         int32         `option:"maxConns"` // pgxpool's type: a larger number is an error, not a wrap-around
	StatementTimeout time.Duration `option:"statementTimeout"`
	ConnectTimeout   time.Duration `option:"connectTimeout"`
	Delay            time.Duration `option:"delay"`
	MaxRows          int64         `option:"maxRows"`
	OnConsume        string        `option:"onConsume"`
	OnConsumeFailed  string        `option:"onConsumeFailed"`
	Channel          string        `option:"channel"`
}

var uriBinding = component.Bind[uriOptions](Spec)

// CreateEndpoint checks the URI and its options; it opens nothing.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	opts, err := uriBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	s, err := parseAddress(u, opts)
	if err != nil {
		return nil, err
	}
	e := &endpoint{c: c, raw: u.Raw, redacted: Spec.Redact(u.Raw), s: s,
		op: opts.Operation, query: opts.Query, table: opts.Table,
		where: opts.Where, returning: opts.Returning, copyMode: opts.InsertMode == "copy",
		delay: opts.Delay, maxRows: int(opts.MaxRows),
		allowUnfiltered: opts.AllowUnfiltered,
		onConsume:       opts.OnConsume, onConsumeFailed: opts.OnConsumeFailed, channel: opts.Channel}
	if cols := opts.AllowedColumns; cols != "" {
		e.allowed = map[string]bool{}
		for _, name := range strings.Split(cols, ",") {
			if name = strings.TrimSpace(name); name != "" {
				e.allowed[strings.ToLower(name)] = true
			}
		}
	}
	var problems []string
	if e.maxRows <= 0 {
		problems = append(problems, fmt.Sprintf("option maxRows=%d must be at least 1", e.maxRows))
	}
	if s.maxConns <= 0 {
		problems = append(problems, fmt.Sprintf("option maxConns=%d must be at least 1", s.maxConns))
	}
	switch e.op {
	case OpInsert, OpUpdate, OpDelete:
		if e.table == "" && opts.OperationGiven {
			problems = append(problems, fmt.Sprintf("operation=%s needs table= (the table to change)", e.op))
		}
		if (e.op == OpUpdate || e.op == OpDelete) && strings.TrimSpace(e.where) == "" && opts.OperationGiven {
			problems = append(problems, fmt.Sprintf("operation=%s needs where= (a condition with :name parameters from the body, or where=true for every row)", e.op))
		}
	}
	if e.table != "" {
		if e.tableIdent, err = parseTable(e.table); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for name, sql := range map[string]string{"query": e.query, "where": e.where, "onConsume": e.onConsume, "onConsumeFailed": e.onConsumeFailed} {
		if sql == "" {
			continue
		}
		if _, _, err := bindNamed(sql); err != nil {
			problems = append(problems, fmt.Sprintf("option %s: %v", name, err))
		}
	}
	if e.allowed != nil {
		problems = append(problems, e.guardConfiguredSQL()...)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return e, nil
}

// parseAddress reads host, port, database and credentials from the URI and options.
func parseAddress(u *uri.URI, opts uriOptions) (settings, error) {
	s := settings{sslmode: opts.SSLMode, maxConns: opts.MaxConns,
		statementTimeout: opts.StatementTimeout, connectTimeout: opts.ConnectTimeout}
	host := u.Host
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		info := host[:at]
		host = host[at+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		var err error
		if s.user, err = url.PathUnescape(user); err != nil {
			return s, fmt.Errorf("the user name in the URI is not valid URL escaping")
		}
		if hasPass {
			if s.password, err = url.PathUnescape(pass); err != nil {
				return s, fmt.Errorf("the password in the URI is not valid URL escaping (the value is secret and not shown)")
			}
		}
	}
	if opts.UserGiven {
		if s.user != "" {
			return s, fmt.Errorf("the user is given twice, in the URI and as user=; give it once")
		}
		s.user = opts.User
	}
	if opts.PasswordGiven {
		if s.password != "" {
			return s, fmt.Errorf("the password is given twice, in the URI and as password=; give it once")
		}
		s.password = opts.Password
	}
	if host == "" {
		return s, fmt.Errorf("postgres needs a server and a database: postgres://host:5432/database")
	}
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		h, p = strings.Trim(host, "[]"), "5432"
	}
	if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
		return s, fmt.Errorf("port %q is not a port number", p)
	}
	s.host, s.port = h, p
	s.database = strings.Trim(u.Path, "/")
	if s.database == "" {
		return s, fmt.Errorf("postgres needs a database name after the host: postgres://%s/database", net.JoinHostPort(h, p))
	}
	if strings.Contains(s.database, "/") {
		return s, fmt.Errorf("database name %q holds a slash; write postgres://host:port/database", s.database)
	}
	return s, nil
}

// parseTable splits schema.table and checks each part is a plain name (quoted by
// pgx.Identifier when the SQL is written).
func parseTable(t string) (pgx.Identifier, error) {
	parts := strings.Split(t, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("option table=%q: write table or schema.table", t)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("option table=%q: empty name", t)
		}
		if strings.ContainsAny(p, "\x00") {
			return nil, fmt.Errorf("option table=%q: invalid character", t)
		}
	}
	return pgx.Identifier(parts), nil
}

type endpoint struct {
	c        *Component
	raw      string
	redacted string
	s        settings

	op, query, table, where string
	tableIdent              pgx.Identifier
	returning, copyMode     bool
	allowed                 map[string]bool
	allowUnfiltered         bool

	delay                      time.Duration
	maxRows                    int
	onConsume, onConsumeFailed string
	channel                    string
}

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) {
	return &producer{e: e}, nil
}

func (e *endpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	if p == nil {
		return nil, errors.New("postgres: consumer needs a processor")
	}
	if err := e.CheckTrigger(); err != nil {
		return nil, err
	}
	return &consumer{e: e, p: p}, nil
}

// CheckTrigger reports what a trigger lacks; configuration validation calls it for
// trigger URIs ([component.TriggerChecker]).
func (e *endpoint) CheckTrigger() error {
	if e.channel == "" && e.query == "" {
		return fmt.Errorf("a postgres trigger needs query= (poll it, with onConsume= to mark rows) or channel= (LISTEN)")
	}
	return nil
}

// describe turns a pgx error into a message with the server, SQLSTATE and a hint,
// and without credentials.
func (e *endpoint) describe(err error) error {
	return describeErr(err, e.s)
}

// sqlError wraps a driver error: Error() is the cleaned message; Unwrap gives the
// original (so errors.Is(err, context.Canceled) holds).
type sqlError struct {
	msg string
	err error
}

func (e *sqlError) Error() string { return e.msg }
func (e *sqlError) Unwrap() error { return e.err }

// HTTPStatus classifies the failure by its SQLSTATE for callers that answer over
// HTTP (exchange.HTTPStatus): what the request's data did wrong is the caller's
// (409 when it clashes with rows already there, 422 when the database refuses its
// values), a statement timeout is 504 and an unreachable or lost database 503.
// 0 leaves the decision to the rest of the chain (a deadline is 504, anything
// else 500).
func (e *sqlError) HTTPStatus() int {
	var pgErr *pgconn.PgError
	if errors.As(e.err, &pgErr) {
		if copyRefused(pgErr) {
			return nethttp.StatusUnprocessableEntity // a value of the body, not a timeout
		}
		return statusOfSQLState(pgErr.Code)
	}
	var connErr *pgconn.ConnectError
	if errors.As(e.err, &connErr) && !exchange.IsTimeout(e.err) {
		return nethttp.StatusServiceUnavailable // refused, unknown host …: the database is not there
	}
	return 0
}

// copyRefused reports whether err is the server's answer to a COPY the client gave
// up (57014, like a cancellation): pgx does so when a row cannot be sent.
func copyRefused(err *pgconn.PgError) bool {
	return err.Code == "57014" && strings.HasPrefix(err.Message, "COPY from stdin failed")
}

func statusOfSQLState(code string) int {
	switch {
	case code == "23505", // unique_violation: the row exists already
		code == "23503",                  // foreign_key_violation: a referenced row is missing, or still referenced
		code == "40001", code == "40P01": // serialization failure, deadlock: try again
		return nethttp.StatusConflict
	case code == "23514", code == "23502", // check_violation, not_null_violation
		strings.HasPrefix(code, "22"): // data exceptions: 'abc' for an integer, a string too long …
		return nethttp.StatusUnprocessableEntity
	case code == "57014": // query_canceled: statementTimeout passed
		return nethttp.StatusGatewayTimeout
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "57P"): // connection lost, server shutting down
		return nethttp.StatusServiceUnavailable
	}
	return 0
}

func describeErr(err error, s settings) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sqlError{msg: fmt.Sprintf("postgres %s: %v", s.where(), err), err: err}
	}
	msg := redactErr(err, s)
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	hint := ""
	switch {
	case errors.As(err, &pgErr):
		switch {
		case pgErr.Code == "28P01" || pgErr.Code == "28000":
			hint = "check the user and password (URI user info, user=/password= or PGUSER/PGPASSWORD)"
		case pgErr.Code == "3D000":
			hint = "check the database name in the URI"
		case pgErr.Code == "42P01":
			hint = "check the table name"
		case copyRefused(pgErr):
			// The client gave up its COPY: a row it could not send, named in the message.
			hint = "a value of the body does not fit its column; fix it, or use insertMode=insert"
		case pgErr.Code == "57014":
			hint = "the statement ran longer than statementTimeout, or was cancelled"
		case strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P"):
			hint = "the connection was lost; the pool reconnects on the next exchange"
		}
	case errors.As(err, &connErr):
		switch {
		case strings.Contains(msg, "connection refused"):
			hint = "is PostgreSQL running and listening at " + net.JoinHostPort(s.host, s.port) + "?"
		case strings.Contains(msg, "timeout"):
			hint = "the server did not answer within connectTimeout"
		}
	}
	out := fmt.Sprintf("postgres %s: %s", s.where(), msg)
	if hint != "" {
		out += " (" + hint + ")"
	}
	return &sqlError{msg: out, err: err}
}

// redactErr returns err's message with the password removed, whatever the driver
// put in it.
func redactErr(err error, s settings) string {
	msg := err.Error()
	if s.password != "" {
		msg = strings.ReplaceAll(msg, s.password, "***")
		if esc := url.QueryEscape(s.password); esc != s.password {
			msg = strings.ReplaceAll(msg, esc, "***")
		}
		if esc := url.PathEscape(s.password); esc != s.password {
			msg = strings.ReplaceAll(msg, esc, "***")
		}
	}
	return msg
}
