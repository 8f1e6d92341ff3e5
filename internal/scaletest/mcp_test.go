package scaletest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// The load balancer's health checks in the tests; docs/scaling.md reports what
// the tests measure with them.
const (
	checkInterval = 200 * time.Millisecond
	checkFall     = 2
	// settle bounds the time after a kill in which calls may still fail: HAProxy
	// takes checkFall failed checks (about checkFall × checkInterval) to take the
	// dead replica out of rotation; the rest is slack for a loaded machine. Calls
	// routed to the dead replica meanwhile are redispatched, so in practice none
	// fails; the test asserts the bound, and logs what it saw.
	settle = checkFall*checkInterval + 1600*time.Millisecond
	// callTimeout is the longest a call may take before the test calls it a hang.
	callTimeout = 10 * time.Second
)

// mcpReplicaYAML is the configuration every replica runs: one MCP server
// (stateless or not) whose tool "work" forwards its arguments, with the replica's
// name in the header X-Replica, to the test's work service and answers with
// the service's reply.
const mcpReplicaYAML = `helix:
  name: scale-mcp
  management:
    addr: ${env:HELIX_TEST_MGMT}
mcps:
  - id: tools
    addr: 127.0.0.1:${env:HELIX_TEST_MCP}
    stateless: %[1]t
workflows:
  - id: work
    description: Asks the test's work service, naming this replica
    trigger: direct://work
    steps:
      - set-header: {name: X-Replica, constant: "${env:HELIX_TEST_REPLICA}"}
      - to: %[2]s/work
`

// workService is the backend the tool calls: it records which replica ran which
// token, answers {"token", "replica"} after a short delay (so that calls are in
// flight when a replica is killed), and holds the calls of one replica until
// their connection goes away, when told to. Safe for concurrent use.
type workService struct {
	*httptest.Server
	delay time.Duration

	mu   sync.Mutex
	ran  map[string][]string // token → replicas that ran it
	held map[string][]string // replica → tokens held now
	hold string              // replica whose calls are held
}

func newWorkService(t *testing.T, delay time.Duration) *workService {
	w := &workService{delay: delay, ran: map[string][]string{}, held: map[string][]string{}}
	w.Server = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.Close)
	return w
}

func (w *workService) serve(rw http.ResponseWriter, r *http.Request) {
	var args struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Token == "" {
		http.Error(rw, "want {\"token\": …}", http.StatusBadRequest)
		return
	}
	replica := r.Header.Get("X-Replica")
	w.mu.Lock()
	w.ran[args.Token] = append(w.ran[args.Token], replica)
	held := w.hold == replica
	if held {
		w.held[replica] = append(w.held[replica], args.Token)
	}
	w.mu.Unlock()
	if held {
		<-r.Context().Done() // the replica is killed while it waits for us
		return
	}
	select {
	case <-time.After(w.delay):
	case <-r.Context().Done():
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(map[string]string{"token": args.Token, "replica": replica})
}

// holdCalls makes the calls that replica sends from now on wait until their
// connection closes.
func (w *workService) holdCalls(replica string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hold = replica
}

func (w *workService) heldTokens(replica string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.held[replica])
}

func (w *workService) ranBy(token string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ran[token])
}

// mcpReplica is a replica with the port of its MCP server.
type mcpReplica struct {
	*testtools.Replica
	mcp int
}

// startMCPReplicas starts n replicas of mcpReplicaYAML and waits until they are
// ready.
func startMCPReplicas(t *testing.T, n int, stateless bool, work *workService) []*mcpReplica {
	t.Helper()
	file := writeFile(t, "helix.yaml", fmt.Sprintf(mcpReplicaYAML, stateless, work.URL))
	var out []*mcpReplica
	var all []*testtools.Replica
	for i := range n {
		port := testtools.FreePort(t)
		r := &mcpReplica{Replica: testtools.StartReplica(t, "r"+strconv.Itoa(i+1), []string{file}, "HELIX_TEST_MCP="+strconv.Itoa(port)), mcp: port}
		out = append(out, r)
		all = append(all, r.Replica)
	}
	testtools.WaitReady(t, 90*time.Second, all...)
	return out
}

// balancer starts HAProxy over the replicas' MCP ports, checking their
// management /readyz.
func balancer(t *testing.T, replicas []*mcpReplica, stickOn string) *testtools.HAProxy {
	t.Helper()
	opts := testtools.HAProxyOptions{CheckInterval: checkInterval, Fall: checkFall, StickOnHeader: stickOn}
	for _, r := range replicas {
		_, mgmtPort, _ := net.SplitHostPort(r.Mgmt)
		port, _ := strconv.Atoi(mgmtPort)
		opts.Servers = append(opts.Servers, testtools.HAProxyServer{Name: r.Name, Addr: "127.0.0.1:" + strconv.Itoa(r.mcp), CheckPort: port})
	}
	return testtools.StartHAProxy(t, opts)
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// connect opens an MCP session through the load balancer at protocol version
// (empty: the go-sdk's latest, 2026-07-28, which a stateless server speaks
// without initialize), over hc (nil: http.DefaultClient).
func connect(ctx context.Context, lb *testtools.HAProxy, version string, hc *http.Client) (*sdk.ClientSession, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "scaletest", Version: "1"}, nil)
	// MaxRetries -1: the client never re-sends anything on its own.
	transport := &sdk.StreamableClientTransport{Endpoint: "http://" + lb.Addr + "/mcp", MaxRetries: -1, HTTPClient: hc}
	return client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: version})
}

// call is one tools/call of the load, as the client saw it.
type call struct {
	token        string
	start, end   time.Time
	err          error
	replica      string // who answered, from the answer
	wrongAnswer  string // set when the answer is not the one for token
	protocol     string
	reconnecting bool // the call is a failed attempt to open a new session
}

// callWork calls the tool with token and checks that the answer is the one for
// token; it returns the call as seen.
func callWork(ctx context.Context, cs *sdk.ClientSession, token string) call {
	c := call{token: token, start: time.Now(), protocol: cs.InitializeResult().ProtocolVersion}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "work", Arguments: map[string]any{"token": token}})
	c.end = time.Now()
	switch {
	case err != nil:
		c.err = err
	case res.IsError || len(res.Content) != 1:
		c.err = fmt.Errorf("tool error: %s", contentText(res))
	default:
		var answer struct{ Token, Replica string }
		text := contentText(res)
		if json.Unmarshal([]byte(text), &answer) != nil || answer.Token != token || answer.Replica == "" {
			c.wrongAnswer = text
		}
		c.replica = answer.Replica
	}
	return c
}

func contentText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "")
}

// load runs clients that call the tool one call after the other until ctx ends;
// a client whose call failed opens a new session, as an MCP client would. Odd
// clients speak 2026-07-28 (no initialize), even ones 2025-11-25 (initialize
// without a session id on a stateless server).
type load struct {
	mu    sync.Mutex
	calls []call
	wg    sync.WaitGroup
}

func startLoad(ctx context.Context, lb *testtools.HAProxy, clients int) *load {
	l := &load{}
	for i := range clients {
		version := "2025-11-25"
		if i%2 == 1 {
			version = "2026-07-28"
		}
		l.wg.Go(func() {
			// A connection pool of its own, as separate client processes have.
			hc := &http.Client{Transport: &http.Transport{}}
			defer hc.CloseIdleConnections()
			var cs *sdk.ClientSession
			defer func() {
				if cs != nil {
					_ = cs.Close()
				}
			}()
			for n := 0; ctx.Err() == nil; n++ {
				if cs == nil {
					start := time.Now()
					var err error
					if cs, err = connect(ctx, lb, version, hc); err != nil {
						if ctx.Err() == nil {
							l.add(call{token: fmt.Sprintf("c%d-connect-%d", i, n), start: start, end: time.Now(), err: err, protocol: version, reconnecting: true})
							time.Sleep(100 * time.Millisecond) // not a busy loop when nothing answers
						}
						continue
					}
					// The go-sdk falls back to initialize (2025-11-25) when its
					// server/discover fails in any way, a broken connection too: a
					// degraded connect, counted as a failure.
					if got := cs.InitializeResult().ProtocolVersion; got != version {
						l.add(call{token: fmt.Sprintf("c%d-connect-%d", i, n), start: start, end: time.Now(), protocol: version, reconnecting: true,
							err: fmt.Errorf("asked for protocol %s, got %s", version, got)})
						_ = cs.Close()
						cs = nil
						continue
					}
				}
				c := callWork(ctx, cs, fmt.Sprintf("c%d-%d", i, n))
				if ctx.Err() != nil && c.err != nil {
					return // the load ended under this call
				}
				l.add(c)
				if c.err != nil {
					_ = cs.Close()
					cs = nil
				}
			}
		})
	}
	return l
}

func (l *load) add(c call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

func (l *load) snapshot() []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// waitFor waits until cond holds for the calls so far; when it does not within
// the deadline the test fails with a summary of the calls (what failed, how).
func (l *load) waitFor(t *testing.T, within time.Duration, what string, cond func([]call) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond(l.snapshot()) {
		if time.Now().After(deadline) {
			calls := l.snapshot()
			errs := map[string]int{}
			for _, c := range calls {
				if c.err != nil {
					errs[c.err.Error()]++
				}
			}
			t.Fatalf("%s: not within %v; %d calls, answered per replica %v, errors %v", what, within, len(calls), servedBy(calls, time.Time{}), errs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// servedBy counts the successful calls per replica that started after since.
func servedBy(calls []call, since time.Time) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		if c.err == nil && c.wrongAnswer == "" && !c.start.Before(since) {
			out[c.replica]++
		}
	}
	return out
}

// TestStatelessReplicasBehindHAProxy: three helix processes serve one stateless
// MCP server behind HAProxy (round robin, health checks on /readyz, retries only
// of connections that could not be made). Six go-sdk clients, half of them at
// protocol 2026-07-28, call a tool continuously; one replica is killed with
// SIGKILL while calls wait in it. Those calls fail at once with an error and are
// not run again elsewhere; every call started after a bounded settle time
// succeeds, answered by the two others; no call gets a wrong answer or hangs.
func TestStatelessReplicasBehindHAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three helix processes and HAProxy")
	}
	work := newWorkService(t, 20*time.Millisecond)
	replicas := startMCPReplicas(t, 3, true, work)
	lb := balancer(t, replicas, "")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	l := startLoad(ctx, lb, 6)
	defer l.wg.Wait()
	defer stop()

	begin := time.Now()
	l.waitFor(t, 60*time.Second, "every replica answers calls", func(calls []call) bool {
		s := servedBy(calls, begin)
		return s["r1"] >= 10 && s["r2"] >= 10 && s["r3"] >= 10
	})
	victim := replicas[1]
	work.holdCalls(victim.Name)
	testtools.WaitFor(t, 30*time.Second, "calls waiting in "+victim.Name, func() bool { return len(work.heldTokens(victim.Name)) >= 2 })
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kill := time.Now()
	inFlight := work.heldTokens(victim.Name) // no more arrive: the process is gone
	_ = victim.Wait()

	var down time.Duration
	testtools.WaitFor(t, 30*time.Second, "HAProxy takes "+victim.Name+" out of rotation", func() bool {
		if strings.Contains(lb.Logs.String(), "replicas/"+victim.Name+" is DOWN") {
			down = time.Since(kill)
			return true
		}
		return false
	})
	// Calls go on well past the settle time, so that enough start after it.
	l.waitFor(t, 60*time.Second, "calls after the settle time", func(calls []call) bool {
		s := servedBy(calls, kill.Add(settle))
		return time.Since(kill) > settle+time.Second && s["r1"] >= 20 && s["r3"] >= 20
	})
	stop()
	l.wg.Wait()
	calls := l.snapshot()

	byToken := map[string]call{}
	var failed, failedAfterKill, failedAfterSettle []call
	var firstOK time.Duration = -1
	for _, c := range calls {
		byToken[c.token] = c
		if c.wrongAnswer != "" {
			t.Errorf("call %s (%s) got a wrong answer: %s", c.token, c.protocol, c.wrongAnswer)
		}
		if c.end.Sub(c.start) >= callTimeout {
			t.Errorf("call %s hung for %v: %v", c.token, c.end.Sub(c.start), c.err)
		}
		if c.err == nil {
			if c.start.After(kill) {
				if c.replica == victim.Name {
					t.Errorf("call %s started %v after the kill was answered by the killed %s", c.token, c.start.Sub(kill), victim.Name)
				}
				if d := c.end.Sub(kill); firstOK < 0 || d < firstOK {
					firstOK = d
				}
			}
			continue
		}
		failed = append(failed, c)
		if c.start.After(kill) {
			failedAfterKill = append(failedAfterKill, c)
		}
		if c.start.After(kill.Add(settle)) {
			failedAfterSettle = append(failedAfterSettle, c)
		}
	}
	// The calls that were in the killed replica fail, promptly, and are not sent
	// to another replica: a tools/call that may have run is never run twice.
	var inFlightFailedIn time.Duration
	for _, token := range inFlight {
		c, ok := byToken[token]
		switch {
		case !ok:
			t.Errorf("call %s, in flight on %s at the kill, has no outcome", token, victim.Name)
		case c.err == nil:
			t.Errorf("call %s, in flight on %s at the kill, succeeded (answered by %s): it was sent again", token, victim.Name, c.replica)
		default:
			inFlightFailedIn = max(inFlightFailedIn, c.end.Sub(kill))
			t.Logf("in flight on %s at the kill: %s failed after %v: %v", victim.Name, token, c.end.Sub(kill).Round(time.Millisecond), c.err)
		}
		if ran := work.ranBy(token); len(ran) != 1 || ran[0] != victim.Name {
			t.Errorf("call %s ran on %v; want only on %s, where it was when the replica died", token, ran, victim.Name)
		}
	}
	for _, c := range failedAfterSettle {
		t.Errorf("call %s (%s) started %v after the kill (settle time %v) failed: %v", c.token, c.protocol, c.start.Sub(kill).Round(time.Millisecond), settle, c.err)
	}
	for _, c := range failedAfterKill {
		t.Logf("started %v after the kill, failed: %s (%s, reconnecting %v): %v", c.start.Sub(kill).Round(time.Millisecond), c.token, c.protocol, c.reconnecting, c.err)
	}
	after := servedBy(calls, kill)
	if after["r1"] == 0 || after["r3"] == 0 {
		t.Errorf("calls answered after the kill, per replica: %v; want both survivors", after)
	}
	protocols := map[string]int{}
	for _, c := range calls {
		protocols[c.protocol]++
	}
	t.Logf("%d calls (%v by protocol), %d failed: %d in flight on %s at the kill (failed within %v), %d started after the kill; "+
		"first call after the kill answered %v after it; HAProxy marked %s DOWN %v after the kill (checks every %v, fall %d); answered after the kill: %v",
		len(calls), protocols, len(failed), len(inFlight), victim.Name, inFlightFailedIn.Round(time.Millisecond), len(failedAfterKill),
		firstOK.Round(time.Millisecond), victim.Name, down.Round(time.Millisecond), checkInterval, checkFall, after)
	if len(failed) < len(inFlight) {
		t.Errorf("%d calls failed, fewer than the %d in flight on the killed replica", len(failed), len(inFlight))
	}
}

// session is an MCP session of the sticky test and the replica that served it.
type session struct {
	cs      *sdk.ClientSession
	replica string
}

// openSessions opens n sessions through lb at once and makes calls calls on
// each, concurrently, with tokens starting with round. It returns the sessions
// and the errors met (connecting or calling; a session whose calls were
// answered by more than one replica is an error too), and fails the test on a
// wrong answer.
func openSessions(t *testing.T, round string, lb *testtools.HAProxy, n, calls int, work *workService) ([]*session, []error) {
	t.Helper()
	sessions := make([]*session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// 2025-11-25: a session (the go-sdk client's default, 2026-07-28,
			// is served by a default server without one).
			cs, err := connect(context.Background(), lb, "2025-11-25", nil)
			if err != nil {
				errs[i] = fmt.Errorf("session %d: connect: %w", i, err)
				return
			}
			s := &session{cs: cs}
			sessions[i] = s
			t.Cleanup(func() { _ = cs.Close() })
			for k := range calls {
				c := callWork(context.Background(), cs, fmt.Sprintf("%s-s%d-%d", round, i, k))
				if c.wrongAnswer != "" {
					t.Errorf("session %d: wrong answer %s", i, c.wrongAnswer)
				}
				if c.err != nil {
					errs[i] = fmt.Errorf("session %d: call %d: %w", i, k, c.err)
					return
				}
				if ran := work.ranBy(c.token); len(ran) != 1 || ran[0] != c.replica {
					t.Errorf("call %s ran on %v, answered by %s", c.token, ran, c.replica)
				}
				if s.replica == "" {
					s.replica = c.replica
				} else if s.replica != c.replica {
					errs[i] = fmt.Errorf("session %d: call %d answered by %s, earlier ones by %s", i, k, c.replica, s.replica)
					return
				}
			}
		})
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	return sessions, failed
}

// TestStatefulSessionsStickyOnMcpSessionId: three helix processes serve one
// stateful MCP server (sessions live in the process that opened them). Behind
// HAProxy with a stick table that learns each session's server from the
// Mcp-Session-Id of the initialize response, every session's requests reach its
// own replica and all calls succeed; behind plain round robin they do not (the
// control). When a replica dies, its sessions fail with an error and a new
// session, opened through the balancer, works on a survivor.
func TestStatefulSessionsStickyOnMcpSessionId(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three helix processes and HAProxy")
	}
	work := newWorkService(t, 0)
	replicas := startMCPReplicas(t, 3, false, work)
	sticky := balancer(t, replicas, "Mcp-Session-Id")
	plain := balancer(t, replicas, "")

	sessions, errs := openSessions(t, "sticky", sticky, 6, 10, work)
	for _, err := range errs {
		t.Errorf("sticky: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	perReplica := map[string][]int{}
	for i, s := range sessions {
		perReplica[s.replica] = append(perReplica[s.replica], i)
	}
	if len(perReplica) < 2 {
		t.Errorf("sessions per replica: %v; want them spread", perReplica)
	}
	_, errs = openSessions(t, "plain", plain, 6, 10, work)
	if len(errs) == 0 {
		t.Fatal("round robin without stickiness: every session worked; the control should have failed")
	}
	t.Logf("sticky: 6 sessions × 10 calls succeeded, sessions per replica %v; round robin without a stick table: %d of 6 sessions failed, e.g. %v", perReplica, len(errs), errs[0])

	// The replica of session 0 dies with its sessions.
	victim := sessions[0].replica
	for _, r := range replicas {
		if r.Name == victim {
			if err := r.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = r.Wait()
		}
	}
	c := callWork(context.Background(), sessions[0].cs, "after-kill-lost")
	if c.err == nil {
		t.Fatalf("a call on a session of the killed %s succeeded (answered by %s)", victim, c.replica)
	}
	t.Logf("a session of the killed replica: the call failed after %v: %v", c.end.Sub(c.start).Round(time.Millisecond), c.err)
	for i, s := range sessions {
		if s.replica == victim {
			continue
		}
		if c := callWork(context.Background(), s.cs, fmt.Sprintf("after-kill-s%d", i)); c.err != nil || c.replica != s.replica {
			t.Errorf("session %d on the surviving %s after the kill: %v (answered by %q)", i, s.replica, c.err, c.replica)
		}
	}
	fresh, errs := openSessions(t, "fresh", sticky, 1, 5, work)
	if len(errs) > 0 || fresh[0].replica == victim {
		t.Errorf("a new session after the kill: %v, served by %s", errs, fresh[0].replica)
	}
}
