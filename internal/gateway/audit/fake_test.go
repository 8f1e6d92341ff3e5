package audit

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/recordstore"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/uri"
)

// fakeStore keeps what it is given, or fails while down, or blocks while held.
type fakeStore struct {
	mu   sync.Mutex
	down bool
	held chan struct{} // non-nil: Write waits for it to close (or ctx)
	// ignoreCtx: a held Write waits for held alone, as a hung system call would.
	ignoreCtx bool
	writes    int
	records   map[string]int // id → times written
	order     []string
	closed    bool
}

func newFakeStore() *fakeStore { return &fakeStore{records: map[string]int{}} }

func (s *fakeStore) setDown(v bool) {
	s.mu.Lock()
	s.down = v
	s.mu.Unlock()
}

func (s *fakeStore) Write(ctx context.Context, recs []recordstore.Record) error {
	s.mu.Lock()
	held, ignoreCtx := s.held, s.ignoreCtx
	s.mu.Unlock()
	if held != nil && ignoreCtx {
		<-held
	} else if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.down {
		return errors.New("sink down: Bearer sekret-token-that-must-not-show")
	}
	for _, r := range recs {
		var head struct{ ID string }
		if err := json.Unmarshal(r.JSON, &head); err != nil || head.ID != r.ID {
			return errors.New("record JSON does not carry its id")
		}
		s.records[r.ID]++
		s.order = append(s.order, string(r.JSON))
	}
	return nil
}

func (s *fakeStore) Close(context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func (s *fakeStore) count() (distinct, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.records {
		distinct++
		total += n
	}
	return
}

func (s *fakeStore) has(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[id]
}

// fakeComponent is a component with the record-store trait, opening st.
type fakeComponent struct{ st *fakeStore }

func (fakeComponent) CreateEndpoint(*uri.URI) (component.Endpoint, error) {
	return nil, errors.New("not an endpoint")
}

func (c fakeComponent) OpenRecordStore(*uri.URI, recordstore.Options) (recordstore.Store, error) {
	return c.st, nil
}

// noTrait is a component without the trait.
type noTrait struct{}

func (noTrait) CreateEndpoint(*uri.URI) (component.Endpoint, error) { return nil, errors.New("no") }

func fakeEngine(st *fakeStore) *engine.Context {
	hc := engine.NewContext("audit-test")
	hc.AddComponent("fake", fakeComponent{st: st})
	hc.AddComponent("plain", noTrait{})
	return hc
}

func fastOptions(dir string) Options {
	return Options{DataDir: dir, RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond, WriteTimeout: time.Second,
		Logger: slog.New(slog.DiscardHandler)}
}

func newFake(t *testing.T, st *fakeStore, dir string, o Options) *Auditor {
	t.Helper()
	if o.DataDir == "" {
		o = fastOptions(dir)
	}
	a, err := New(fakeEngine(st), "gw", &config.AuditConfig{Sink: "fake://audit"}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	return a
}

func rec(id, principal string) *gateway.Record {
	return &gateway.Record{ID: id, Principal: principal, Method: gateway.MethodCallTool, Name: "github.create_issue",
		Outcome: gateway.OutcomeOK, Arguments: json.RawMessage(`{"title":"hello"}`), LatencyMS: 1.5}
}

func closeWithin(t *testing.T, a *Auditor, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
