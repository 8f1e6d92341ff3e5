package workflowtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// mock is one mocks: entry while its case runs: it answers in place of the
// endpoint and records the body of every call.
type mock struct {
	cfg config.MockConfig

	mu    sync.Mutex
	calls []any // the bodies received, as plain data
}

// exact reports whether the mock names one URI (a path or options): otherwise it
// stands for every URI of its scheme and host.
func (m *mock) exact() bool { return m.cfg.Parsed.Path != "" || len(m.cfg.Parsed.Params) > 0 }

func (m *mock) matches(u *uri.URI) bool {
	if m.exact() {
		return u.Normalized() == m.cfg.Parsed.Normalized()
	}
	return u.Scheme == m.cfg.Parsed.Scheme && strings.EqualFold(u.Host, m.cfg.Parsed.Host)
}

// mocks are the mocks of one case; they implement the engine's producer override.
type mocks []*mock

func newMocks(cfgs []config.MockConfig) mocks {
	out := make(mocks, 0, len(cfgs))
	for _, c := range cfgs {
		out = append(out, &mock{cfg: c})
	}
	return out
}

// producerFor returns the producer of the mock that claims u: an exact URI before
// a scheme and host, and the first one written among equals.
func (ms mocks) producerFor(u *uri.URI) (component.Producer, bool) {
	for _, exact := range []bool{true, false} {
		for _, m := range ms {
			if m.exact() == exact && m.matches(u) {
				return mockProducer{m: m}, true
			}
		}
	}
	return nil, false
}

type mockProducer struct {
	component.NopService
	m *mock
}

func (p mockProducer) Process(ctx context.Context, ex *exchange.Exchange) error {
	m := p.m
	m.mu.Lock()
	m.calls = append(m.calls, plain(exchange.DeepCopy(ex.In().Body()), true))
	m.mu.Unlock()
	if m.cfg.Delay > 0 {
		t := time.NewTimer(m.cfg.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	if m.cfg.HasError {
		return errors.New(m.cfg.Error)
	}
	if m.cfg.Reply.HasBody {
		ex.In().SetBody(exchange.DeepCopy(m.cfg.Reply.Body))
	}
	for name, v := range m.cfg.Reply.Headers {
		ex.In().SetHeader(name, v)
	}
	return nil
}

// check returns the mock's unmet expectations.
func (m *mock) check() []string {
	m.mu.Lock()
	calls := append([]any(nil), m.calls...)
	m.mu.Unlock()
	at := fmt.Sprintf("mock %s (%s)", m.cfg.URI, m.cfg.Pos)
	var out []string
	if m.cfg.Calls != nil && len(calls) != *m.cfg.Calls {
		out = append(out, fmt.Sprintf("%s: called %s, want %d", at, times(len(calls)), *m.cfg.Calls))
	}
	if m.cfg.HasReceived {
		if len(calls) == 0 {
			out = append(out, fmt.Sprintf("%s: never called, want a call with body %s", at, show(m.cfg.Received)))
		}
		want := plain(m.cfg.Received, true)
		for i, body := range calls {
			for _, d := range differences("body", body, want, true) {
				out = append(out, fmt.Sprintf("%s: call %d: %s", at, i+1, d))
			}
		}
	}
	return out
}

func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}
