package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/testtools"
)

const (
	testRetry = 100 * time.Millisecond
	testCheck = 100 * time.Millisecond
	testTimeo = 500 * time.Millisecond
)

func newTestElector(t *testing.T, url, name string, log *slog.Logger) *Postgres {
	t.Helper()
	p, err := NewPostgres(url, PostgresOptions{Name: name, RetryInterval: testRetry, CheckInterval: testCheck, CheckTimeout: testTimeo, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Resign(context.Background()) })
	return p
}

func TestNewPostgres(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"postgres://u:hunter2@db:notaport/x", "the leader URL: "},
		{"postgres://u:hunter2@db/x?sslmode=sometimes", "sslmode"},
		{"postgres://u:hunter2@db/x?connect_timeout=soon", "connect_timeout"},
	} {
		_, err := NewPostgres(tc.url, PostgresOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: err = %v, want it to mention %q and not the password", tc.url, err, tc.want)
		}
	}
	p, err := NewPostgres("postgresql://u:hunter2@db:5433/x?tcp_keepalives_idle=5", PostgresOptions{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if p.opts.RetryInterval != DefaultRetryInterval || p.opts.CheckInterval != DefaultCheckInterval || p.opts.CheckTimeout != DefaultCheckTimeout ||
		p.cfg.ConnectTimeout != DefaultConnectTimeout {
		t.Errorf("defaults: %+v, connect timeout %v", p.opts, p.cfg.ConnectTimeout)
	}
	if p.Key() != LockKey("orders") || LockKey("orders") == LockKey("orders2") {
		t.Error("lock keys are not derived from the name")
	}
	if p.cfg.RuntimeParams["application_name"] != "helix cluster orders" || p.cfg.RuntimeParams["tcp_keepalives_idle"] != "5" {
		t.Errorf("runtime params: %v", p.cfg.RuntimeParams)
	}
	if strings.Contains(p.shown, "hunter2") {
		t.Errorf("shown URL %s holds the password", p.shown)
	}
	id := int64(7)
	p, _ = NewPostgres("postgres://db/x?application_name=mine", PostgresOptions{LockID: &id})
	if p.Key() != 7 || p.Name() != "helix" || p.cfg.RuntimeParams["application_name"] != "mine" {
		t.Errorf("key %d name %s params %v", p.Key(), p.Name(), p.cfg.RuntimeParams)
	}
}

type campaignResult struct {
	i    int
	term context.Context
	at   time.Time // when Campaign returned
}

// campaignAll starts a Campaign for each elector; results arrive on the channel.
func campaignAll(ctx context.Context, es []*Postgres) chan campaignResult {
	ch := make(chan campaignResult, len(es))
	for i, e := range es {
		go func() {
			term, err := e.Campaign(ctx)
			if err == nil {
				ch <- campaignResult{i, term, time.Now()}
			}
		}()
	}
	return ch
}

func leaders(es []*Postgres) (n int) {
	for _, e := range es {
		if e.IsLeader() {
			n++
		}
	}
	return n
}

// awaitOne waits for one campaign to win and checks, for a while, that no other does.
func awaitOne(t *testing.T, ch <-chan campaignResult, es []*Postgres, within time.Duration) campaignResult {
	t.Helper()
	var won campaignResult
	select {
	case won = <-ch:
	case <-time.After(within):
		t.Fatalf("no replica became leader within %v", within)
	}
	select {
	case other := <-ch:
		t.Fatalf("replicas %d and %d both became leader", won.i, other.i)
	case <-time.After(5 * testRetry):
	}
	if n := leaders(es); n != 1 || !es[won.i].IsLeader() {
		t.Fatalf("%d leaders, want replica %d alone", n, won.i)
	}
	return won
}

func TestOneLeaderAndResign(t *testing.T) {
	url := testtools.PostgresURL(t)
	name := testtools.UniqueName("resign")
	es := []*Postgres{newTestElector(t, url, name, nil), newTestElector(t, url, name, nil), newTestElector(t, url, name, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := campaignAll(ctx, es)
	first := awaitOne(t, ch, es, 10*time.Second)
	if es[first.i].Terms() != 1 {
		t.Errorf("terms = %d", es[first.i].Terms())
	}
	if _, err := es[first.i].Campaign(ctx); err == nil {
		t.Error("Campaign while leading succeeded")
	}

	// Another election (another name) on the same database is independent.
	other := newTestElector(t, url, name+"_other", nil)
	octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
	defer ocancel()
	if _, err := other.Campaign(octx); err != nil {
		t.Fatalf("an election of another name: %v", err)
	}

	start := time.Now()
	if err := es[first.i].Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	if es[first.i].IsLeader() || first.term.Err() == nil || !errors.Is(context.Cause(first.term), ErrResigned) {
		t.Fatalf("after Resign: leader=%v cause=%v", es[first.i].IsLeader(), context.Cause(first.term))
	}
	second := awaitOne(t, ch, es, 5*time.Second)
	t.Logf("handover after Resign: %v", second.at.Sub(start))
	if second.i == first.i {
		t.Fatal("the resigned replica won again")
	}
	// The resigned replica campaigns again; it waits while the other leads.
	go func() {
		if term, err := es[first.i].Campaign(ctx); err == nil {
			ch <- campaignResult{first.i, term, time.Now()}
		}
	}()
	time.Sleep(5 * testRetry)
	if n := leaders(es); n != 1 {
		t.Fatalf("%d leaders", n)
	}
}

// pid finds the backend of an elector's session by its application_name.
func lockHolderPID(t *testing.T, url string, key int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid int64
	// A bigint key is split into classid (high 32 bits) and objid (low 32 bits), objsubid 1.
	err = conn.QueryRow(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND classid = (($1::bigint >> 32) & 4294967295)::bigint::oid AND objid = ($1::bigint & 4294967295)::bigint::oid`, key).Scan(&pid)
	if err != nil {
		t.Fatalf("lock holder: %v", err)
	}
	return pid
}

func TestTerminatedSessionEndsTheTerm(t *testing.T) {
	url := testtools.PostgresURL(t)
	name := testtools.UniqueName("kill")
	var logs testtools.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	es := []*Postgres{newTestElector(t, url, name, log), newTestElector(t, url, name, log), newTestElector(t, url, name, log)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := campaignAll(ctx, es)
	first := awaitOne(t, ch, es, 10*time.Second)

	pid := lockHolderPID(t, url, es[first.i].Key())
	start := time.Now()
	testtools.PostgresExec(t, url, "SELECT pg_terminate_backend("+itoa(pid)+")")
	select {
	case <-first.term.Done():
	case <-time.After(testCheck + testTimeo + 2*time.Second):
		t.Fatal("the term did not end after its session was terminated")
	}
	lost := time.Since(start)
	if !errors.Is(context.Cause(first.term), ErrLost) || es[first.i].IsLeader() {
		t.Fatalf("cause %v, leader %v", context.Cause(first.term), es[first.i].IsLeader())
	}
	_ = es[first.i].Resign(context.Background())
	second := awaitOne(t, ch, es, 5*time.Second)
	t.Logf("term ended %v after the session was killed; replica %d leads %v after it", lost, second.i, second.at.Sub(start))
	for _, want := range []string{"this replica is now the leader", "this replica lost the leadership", "cluster=" + name} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// proxy forwards TCP connections to the database; it can refuse new connections
// and freeze the open ones (no byte passes, nothing is closed), as a network
// partition does.
type proxy struct {
	ln       net.Listener
	upstream string
	refuse   atomic.Bool
	frozen   atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
}

func newProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, upstream: upstream}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.refuse.Load() {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go p.pipe(c, u)
			go p.pipe(u, c)
		}
	}()
	return p
}

func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.frozen.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			src.Close()
			return
		}
	}
}

func viaProxy(t *testing.T, url string, p *proxy) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(url, net.JoinHostPort(cfg.Host, itoa(int64(cfg.Port))), p.ln.Addr().String(), 1)
}

func TestUnreachableDatabaseIsRetried(t *testing.T) {
	url := testtools.PostgresURL(t)
	cfg, _ := pgx.ParseConfig(url)
	px := newProxy(t, net.JoinHostPort(cfg.Host, itoa(int64(cfg.Port))))
	px.refuse.Store(true)
	var logs testtools.SyncBuffer
	e := newTestElector(t, viaProxy(t, url, px), testtools.UniqueName("unreachable"), slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	won := make(chan context.Context, 1)
	go func() {
		if term, err := e.Campaign(ctx); err == nil {
			won <- term
		}
	}()
	time.Sleep(8 * testRetry)
	if e.IsLeader() {
		t.Fatal("leader without a database")
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "cannot take part in the leader election") < 3 {
		t.Fatalf("want one warning and repeats at debug level:\n%s", out)
	}
	px.refuse.Store(false)
	select {
	case <-won:
	case <-ctx.Done():
		t.Fatal("no leadership after the database came back")
	}
	if !strings.Contains(logs.String(), "connected to the leader election again") {
		t.Errorf("logs:\n%s", logs.String())
	}

	// Cancelling a campaign returns at once with ctx's error.
	_ = e.Resign(context.Background())
	px.refuse.Store(true)
	cctx, ccancel := context.WithCancel(context.Background())
	go func() { time.Sleep(3 * testRetry); ccancel() }()
	if _, err := e.Campaign(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled campaign: %v", err)
	}
}

// A leader cut off from the database (no byte passes, nothing is closed) steps
// down within CheckInterval + CheckTimeout.
func TestPartitionedLeaderStepsDown(t *testing.T) {
	url := testtools.PostgresURL(t)
	cfg, _ := pgx.ParseConfig(url)
	px := newProxy(t, net.JoinHostPort(cfg.Host, itoa(int64(cfg.Port))))
	e := newTestElector(t, viaProxy(t, url, px), testtools.UniqueName("partition"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	px.frozen.Store(true)
	select {
	case <-term.Done():
	case <-time.After(testCheck + testTimeo + 2*time.Second):
		t.Fatal("a partitioned leader kept its leadership")
	}
	took := time.Since(start)
	if took > testCheck+testTimeo+time.Second || !errors.Is(context.Cause(term), ErrLost) || e.IsLeader() {
		t.Fatalf("stepped down after %v, cause %v", took, context.Cause(term))
	}
	t.Logf("partitioned leader stepped down after %v (check_interval %v + check_timeout %v)", took, testCheck, testTimeo)
	px.frozen.Store(false)
}

// Server settings in the URL apply to the lock's session: PostgreSQL's own TCP
// keepalives make it drop a vanished replica's session, and its lock, sooner.
func TestURLSettingsReachTheSession(t *testing.T) {
	url := testtools.PostgresURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	e := newTestElector(t, url+sep+"tcp_keepalives_idle=7&tcp_keepalives_interval=3&tcp_keepalives_count=2", "x", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var idle, interval, count, app string
	if err := conn.QueryRow(ctx, "SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'), current_setting('tcp_keepalives_count'), current_setting('application_name')").
		Scan(&idle, &interval, &count, &app); err != nil {
		t.Fatal(err)
	}
	if idle != "7" || interval != "3" || count != "2" || app != "helix cluster x" {
		t.Fatalf("session settings: %s %s %s %q", idle, interval, count, app)
	}
}

func TestRun(t *testing.T) {
	url := testtools.PostgresURL(t)
	name := testtools.UniqueName("run")
	a, b := newTestElector(t, url, name, nil), newTestElector(t, url, name, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var leads atomic.Int32
	var failOnce atomic.Bool
	failOnce.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, a, testRetry, func(term context.Context) error {
			leads.Add(1)
			if failOnce.CompareAndSwap(true, false) {
				return errors.New("the work cannot start")
			}
			<-term.Done()
			return nil
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for leads.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if leads.Load() != 2 || !a.IsLeader() {
		t.Fatalf("leads = %d, leader %v: after its work failed to start, Run must resign and campaign again", leads.Load(), a.IsLeader())
	}
	// b cannot lead while Run holds the lock; once Run's ctx ends it can.
	bctx, bcancel := context.WithTimeout(context.Background(), 3*testRetry)
	if _, err := b.Campaign(bctx); err == nil {
		t.Fatal("b led while a held the lock")
	}
	bcancel()
	cancel()
	<-done
	if a.IsLeader() {
		t.Fatal("Run returned leading")
	}
	bctx, bcancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer bcancel()
	if _, err := b.Campaign(bctx); err != nil {
		t.Fatalf("b after Run ended: %v", err)
	}
}
