package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
)

// Every record reaches the sink once, with the server and defaults filled in.
func TestRecordsReachTheSink(t *testing.T) {
	st := newFakeStore()
	a := newFake(t, st, t.TempDir(), Options{})
	for i := range 20 {
		a.Record(context.Background(), rec(fmt.Sprint("r", i), "alice"))
	}
	a.Record(context.Background(), &gateway.Record{Method: gateway.MethodCallTool, Name: "x", Outcome: gateway.OutcomeDenied})
	closeWithin(t, a, 5*time.Second)
	distinct, total := st.count()
	if distinct != 21 || total != 21 {
		t.Fatalf("sink got %d records (%d writes of them), want 21 once each", distinct, total)
	}
	var last gateway.Record
	if err := json.Unmarshal([]byte(st.order[len(st.order)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last.ID == "" || last.Server != "gw" || last.Principal != "anonymous" || last.Time.IsZero() {
		t.Errorf("a bare record was not completed: %+v", last)
	}
	if !st.closed {
		t.Error("Close did not close the sink")
	}
}

// The arguments setting decides what a record keeps of the arguments.
func TestArgumentsSettings(t *testing.T) {
	raw := json.RawMessage(`{"title":"héllo","n":3,"tags":["a","bc"],"nested":{"ssn":"123-45-6789"},"ok":true}`)
	sum := sha256.Sum256(raw)
	digest := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		setting, wantArgs, wantDigest string
	}{
		{"", "", digest},
		{ArgumentsDigest, "", digest},
		{ArgumentsNone, "", ""},
		{ArgumentsFull, string(raw), digest},
		{ArgumentsRedacted, `{"n":3,"nested":{"ssn":"[11 chars]"},"ok":true,"tags":["[1 chars]","[2 chars]"],"title":"[5 chars]"}`, digest},
	} {
		t.Run("setting="+tc.setting, func(t *testing.T) {
			st := newFakeStore()
			a, err := New(fakeEngine(st), "gw", &config.AuditConfig{Sink: "fake://x", Arguments: tc.setting}, fastOptions(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			a.Record(context.Background(), &gateway.Record{ID: "1", Method: gateway.MethodCallTool, Name: "t", Outcome: "ok", Arguments: raw})
			closeWithin(t, a, 5*time.Second)
			var got gateway.Record
			if err := json.Unmarshal([]byte(st.order[0]), &got); err != nil {
				t.Fatal(err)
			}
			if string(got.Arguments) != tc.wantArgs || got.ArgumentsDigest != tc.wantDigest {
				t.Errorf("arguments %s digest %q; want %s digest %q", got.Arguments, got.ArgumentsDigest, tc.wantArgs, tc.wantDigest)
			}
			if tc.setting == ArgumentsRedacted && strings.Contains(st.order[0], "6789") {
				t.Errorf("redacted record shows a value: %s", st.order[0])
			}
		})
	}
}

// Arguments that are not JSON, or nested deeper than JSON decoders go, still
// give a record (never a panic, never a lost record).
func TestArgumentsThatAreNotJSON(t *testing.T) {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	for _, setting := range []string{ArgumentsFull, ArgumentsRedacted, ArgumentsDigest} {
		for _, raw := range []string{`{"a":`, "\xff\xfe", deep} {
			st := newFakeStore()
			a, err := New(fakeEngine(st), "gw", &config.AuditConfig{Sink: "fake://x", Arguments: setting}, fastOptions(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			a.Record(context.Background(), &gateway.Record{ID: "1", Outcome: "ok", Arguments: json.RawMessage(raw)})
			closeWithin(t, a, 5*time.Second)
			if st.has("1") != 1 {
				t.Fatalf("%s: a record with arguments %.20q was not written", setting, raw)
			}
			if !json.Valid([]byte(st.order[0])) {
				t.Fatalf("%s: record is not JSON: %.200s", setting, st.order[0])
			}
		}
	}
}

// The caller's token never reaches a record, whether in full arguments or in
// an error message, and neither does a bearer credential.
func TestNoTokenInARecord(t *testing.T) {
	st := newFakeStore()
	a, err := New(fakeEngine(st), "gw", &config.AuditConfig{Sink: "fake://x", Arguments: ArgumentsFull}, fastOptions(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	const token = "eyJhbGciOi.caller-token.sig"
	ctx := gateway.WithPrincipal(context.Background(), &gateway.Principal{ID: "sub:alice", Name: "alice", Token: token})
	a.Record(ctx, &gateway.Record{ID: "1", Principal: "alice", Outcome: gateway.OutcomeError,
		Arguments: json.RawMessage(`{"echo":"` + token + `","header":"Bearer other-secret-value"}`),
		Error:     "upstream said: invalid token " + token + " (Authorization: Bearer other-secret-value)"})
	closeWithin(t, a, 5*time.Second)
	got := st.order[0]
	for _, secret := range []string{token, "other-secret-value"} {
		if strings.Contains(got, secret) {
			t.Errorf("record holds %q: %s", secret, got)
		}
	}
	if !strings.Contains(got, "[redacted]") {
		t.Errorf("record does not say what was hidden: %s", got)
	}
}

// The log sink writes one structured line per record.
func TestLogSinkWritesOneLinePerRecord(t *testing.T) {
	var buf testtools.SyncBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	a, err := New(nil, "gw", &config.AuditConfig{Sink: "log"}, Options{DataDir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	a.Record(context.Background(), rec("one", "alice"))
	a.Record(context.Background(), rec("two", "bob"))
	closeWithin(t, a, 5*time.Second)
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON log line: %s", l)
		}
		if m["msg"] == "audit" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d audit lines, want 2:\n%s", len(lines), buf.String())
	}
	if lines[0]["id"] != "one" || lines[1]["principal"] != "bob" || lines[0]["name"] != "github.create_issue" || lines[0]["arguments_digest"] == nil {
		t.Errorf("lines lack the record's fields: %v", lines)
	}
}

// A sink that is down is retried until it takes the records; none is lost or
// written twice, and the retries are counted.
func TestSinkDownIsRetried(t *testing.T) {
	st := newFakeStore()
	st.setDown(true)
	m := NewMetrics()
	o := fastOptions(t.TempDir())
	o.Metrics = m
	var logs testtools.SyncBuffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	a := newFake(t, st, "", o)
	for i := range 10 {
		a.Record(context.Background(), rec(fmt.Sprint("r", i), "alice"))
	}
	testtools.Eventually(t, "the sink refused a few writes", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.writes >= 3
	})
	st.setDown(false)
	closeWithin(t, a, 5*time.Second)
	if distinct, total := st.count(); distinct != 10 || total != 10 {
		t.Fatalf("sink has %d records (%d in all), want 10 once each", distinct, total)
	}
	if got := counterValue(t, m.retried.WithLabelValues("gw", "fake")); got < 3 {
		t.Errorf("retried = %v, want at least 3", got)
	}
	if got := counterValue(t, m.written.WithLabelValues("gw", "fake")); got != 10 {
		t.Errorf("written = %v, want 10", got)
	}
	if n := strings.Count(logs.String(), "audit sink refuses records"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "sekret-token") {
		t.Errorf("a credential in the sink's error reached the log:\n%s", logs.String())
	}
}

// A shutdown while the sink is down spools what it did not take; the next
// start delivers the spool first and removes it.
func TestShutdownWithSinkDownSpoolsAndNextStartDelivers(t *testing.T) {
	dir := t.TempDir()
	down := newFakeStore()
	down.setDown(true)
	a := newFake(t, down, dir, Options{})
	for i := range 30 {
		a.Record(context.Background(), rec(fmt.Sprint("r", i), []string{"alice", "bob"}[i%2]))
	}
	closeWithin(t, a, 100*time.Millisecond)
	// A record after Close is spooled too.
	a.Record(context.Background(), rec("late", "alice"))
	spoolPath := filepath.Join(dir, "audit", "gw.spool")
	b, err := os.ReadFile(spoolPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 31 {
		t.Fatalf("spool holds %d records, want 31", n)
	}
	if _, total := down.count(); total != 0 {
		t.Fatalf("the sink that was down holds %d records", total)
	}

	up := newFakeStore()
	b2 := newFake(t, up, dir, Options{})
	testtools.Eventually(t, "the spool is delivered", func() bool { d, _ := up.count(); return d == 31 })
	closeWithin(t, b2, 5*time.Second)
	if d, total := up.count(); d != 31 || total != 31 {
		t.Fatalf("after restart the sink has %d records (%d in all), want 31 once each", d, total)
	}
	for _, p := range []string{spoolPath, spoolPath + ".sending"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after its records were delivered (%v)", p, err)
		}
	}
}

// A .sending file left by a crash mid-delivery is delivered at the next start;
// a torn last line (a write cut by the crash) is skipped.
func TestSpoolLeftByACrashIsDelivered(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "audit"), 0o700); err != nil {
		t.Fatal(err)
	}
	text := `{"id":"a","outcome":"ok"}` + "\n" + `{"id":"b","outcome":"ok"}` + "\n" + `{"id":"c","out`
	if err := os.WriteFile(filepath.Join(dir, "audit", "gw.spool.sending"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit", "gw.spool"), []byte(`{"id":"d","outcome":"ok"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := newFakeStore()
	a := newFake(t, st, dir, Options{})
	testtools.Eventually(t, "both spool files are delivered", func() bool { d, _ := st.count(); return d == 3 })
	closeWithin(t, a, 5*time.Second)
	for _, id := range []string{"a", "b", "d"} {
		if st.has(id) != 1 {
			t.Errorf("record %s written %d times, want once", id, st.has(id))
		}
	}
}

// When the queue is full, Record waits briefly and then spools: the call is
// not held for the sink, and the spooled records are delivered in the same run.
func TestFullQueueSpoolsAndNothingIsDropped(t *testing.T) {
	st := newFakeStore()
	st.held = make(chan struct{})
	m := NewMetrics()
	o := fastOptions(t.TempDir())
	o.QueueSize, o.BatchSize, o.EnqueueWait, o.Metrics = 2, 2, time.Millisecond, m
	a := newFake(t, st, "", o)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				a.Record(context.Background(), rec(fmt.Sprintf("g%d-%d", g, i), "alice"))
			}
		}()
	}
	wg.Wait() // Record returned 100 times while the sink held every write
	if w := a.waits.Load(); w > 8 {
		t.Errorf("%d calls waited for room in the full queue; once it is known full, calls spool at once", w)
	}
	if got := counterValue(t, m.spooled.WithLabelValues("gw", "fake")); got < 90 {
		t.Fatalf("spooled = %v with a held sink and a queue of 2, want most of 100", got)
	}
	st.mu.Lock()
	close(st.held)
	st.held = nil
	st.mu.Unlock()
	testtools.Eventually(t, "every record is delivered", func() bool { d, _ := st.count(); return d == 100 })
	closeWithin(t, a, 5*time.Second)
	if d, total := st.count(); d != 100 || total != 100 {
		t.Fatalf("sink has %d records (%d in all), want 100 once each", d, total)
	}
}

// Records sent while Close runs are each either delivered or spooled.
func TestRecordRacingClose(t *testing.T) {
	dir := t.TempDir()
	st := newFakeStore()
	o := fastOptions(dir)
	o.QueueSize, o.EnqueueWait = 8, time.Millisecond
	a := newFake(t, st, dir, o)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				a.Record(context.Background(), rec(fmt.Sprintf("g%d-%d", g, i), "bob"))
			}
		}()
	}
	time.Sleep(time.Millisecond)
	closeWithin(t, a, 5*time.Second)
	wg.Wait()
	spooled := 0
	if b, err := os.ReadFile(filepath.Join(dir, "audit", "gw.spool")); err == nil {
		spooled = bytes.Count(b, []byte("\n"))
	}
	d, total := st.count()
	if d+spooled != 400 || total != d {
		t.Fatalf("delivered %d (%d writes) + spooled %d, want 400 records once each", d, total, spooled)
	}
}

// Bad settings are refused with where and what to write.
func TestBadConfiguration(t *testing.T) {
	pos := config.Pos{File: "helix.yaml", Line: 12, Col: 7}
	hc := fakeEngine(newFakeStore())
	for _, tc := range []struct {
		cfg  config.AuditConfig
		want string
	}{
		{config.AuditConfig{Sink: "log", Arguments: "some"}, `helix.yaml:12:7: audit.arguments: "some" is not a setting; write digest, redacted, full or none`},
		{config.AuditConfig{Sink: "nosuch://x"}, "helix.yaml:12:7: audit.sink: no component for nosuch://"},
		{config.AuditConfig{Sink: "plain://x"}, "helix.yaml:12:7: audit.sink: the plain:// component cannot keep audit records"},
		{config.AuditConfig{Sink: "not a uri"}, "helix.yaml:12:7: audit.sink: invalid endpoint URI"},
		{config.AuditConfig{Sink: "nosuch://user:hunter2hunter2@db/x?password=hunter3hunter3%zz"}, "helix.yaml:12:7: audit.sink: invalid endpoint URI"},
	} {
		tc.cfg.Pos = pos
		verr := Validate(hc, &tc.cfg)
		_, err := New(hc, "gw", &tc.cfg, fastOptions(t.TempDir()))
		if verr == nil || err == nil || verr.Error() != err.Error() {
			t.Errorf("Validate says %v, New says %v", verr, err)
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to start %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter") {
			t.Errorf("the error shows a password: %v", err)
		}
	}
	if _, err := New(hc, "gw", nil, Options{}); err == nil {
		t.Error("nil configuration accepted")
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A record stays small enough for any sink: megabytes of arguments become a
// note (the digest still covers them), a long error is cut — after the
// credentials in it are hidden, so that no cut leaves a part of one.
func TestHugeArgumentsAndErrorsAreBounded(t *testing.T) {
	const token = "tok-0123456789abcdef0123456789"
	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 5<<20) + `"}`)
	for _, setting := range []string{ArgumentsFull, ArgumentsRedacted} {
		st := newFakeStore()
		a, err := New(fakeEngine(st), "gw", &config.AuditConfig{Sink: "fake://x", Arguments: setting}, fastOptions(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		ctx := gateway.WithPrincipal(context.Background(), &gateway.Principal{Token: token})
		// The token straddles the point where the error is cut.
		errText := strings.Repeat("e", maxErrorBytes-10) + token + strings.Repeat("z", 100<<10)
		a.Record(ctx, &gateway.Record{ID: "1", Outcome: gateway.OutcomeError, Arguments: big, Error: errText})
		closeWithin(t, a, 5*time.Second)
		got := st.order[0]
		if len(got) > 2*maxArgumentsBytes {
			t.Errorf("%s: record of %d bytes", setting, len(got))
		}
		if strings.Contains(got, token[:8]) {
			t.Errorf("%s: a part of the token is in the record", setting)
		}
		var r gateway.Record
		if err := json.Unmarshal([]byte(got), &r); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(big)
		if r.ArgumentsDigest != hex.EncodeToString(sum[:]) || !strings.Contains(string(r.Arguments), "more than") {
			t.Errorf("%s: arguments %.100s digest %s", setting, r.Arguments, r.ArgumentsDigest)
		}
		if !strings.Contains(r.Error, "bytes more)") {
			t.Errorf("%s: long error not cut: %d bytes", setting, len(r.Error))
		}
	}
}

// A write that does not honour its context (a hung file system) does not hold
// Close: after a grace period Close spools the write's records and the queue.
func TestCloseSpoolsAWriteThatHangs(t *testing.T) {
	dir := t.TempDir()
	st := newFakeStore()
	st.held = make(chan struct{})
	st.ignoreCtx = true
	defer close(st.held)
	o := fastOptions(dir)
	o.stuckGrace = 50 * time.Millisecond
	a := newFake(t, st, dir, o)
	for i := range 20 {
		a.Record(context.Background(), rec(fmt.Sprint("r", i), "alice"))
	}
	testtools.Eventually(t, "a write is under way", func() bool {
		a.inflightMu.Lock()
		defer a.inflightMu.Unlock()
		return a.inflight != nil
	})
	start := time.Now()
	closeWithin(t, a, 50*time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	b, err := os.ReadFile(filepath.Join(dir, "audit", "gw.spool"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r gateway.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		seen[r.ID] = true
	}
	if len(seen) != 20 {
		t.Errorf("spool holds %d of the 20 records", len(seen))
	}
}

// Two auditors of one server (the old one of a reloaded configuration still
// closing): what the old one spools, the new one delivers in the same run.
func TestSpoolOfAnOldAuditorIsDelivered(t *testing.T) {
	dir := t.TempDir()
	up := newFakeStore()
	fresh := newFake(t, up, dir, Options{})
	down := newFakeStore()
	down.setDown(true)
	old := newFake(t, down, dir, Options{})
	for i := range 10 {
		old.Record(context.Background(), rec(fmt.Sprint("old", i), "alice"))
	}
	closeWithin(t, old, 50*time.Millisecond)
	fresh.Record(context.Background(), rec("new", "bob")) // wakes the writer
	testtools.Eventually(t, "the old auditor's spool is delivered", func() bool { d, _ := up.count(); return d == 11 })
	closeWithin(t, fresh, 5*time.Second)
}

// A log whose level hides info lines drops the log sink's lines: that is the
// operator's choice, not a failure of the sink. The records count written, none
// is retried or spooled, Close does not wait on them, and Helix warns once that
// the level hides them.
func TestLogSinkWritesWhateverTheLogLevel(t *testing.T) {
	dir := t.TempDir()
	var buf testtools.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o := fastOptions(dir)
	o.Logger = logger
	a, err := New(nil, "gw", &config.AuditConfig{Sink: "log"}, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		a.Record(context.Background(), rec(fmt.Sprint(i), "alice"))
	}
	testtools.Eventually(t, "the records counted written", func() bool { return a.Totals().Written == 3 })
	// A Close whose context has already ended spools whatever is still
	// queued or being retried: nothing must be.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.Totals(); got != (Totals{Written: 3}) {
		t.Errorf("totals = %+v, want 3 written, none retried or spooled", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "audit", "gw.spool")); err == nil {
		t.Error("records were spooled")
	}
	// The level hides info lines, not the audit trail: all three are there.
	if n := strings.Count(buf.String(), "msg=audit"); n != 3 {
		t.Errorf("%d audit lines under a warn-level log, want 3:\n%s", n, buf.String())
	}
	if strings.Contains(buf.String(), "refuses records") {
		t.Errorf("the sink was retried:\n%s", buf.String())
	}
}
