package log_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	helixlog "github.com/arvenza/helix/internal/component/log"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chanHandler is a slog.Handler that turns every record into a componenttest.Message:
// the outside world of log:// is the log.
type chanHandler struct {
	ch chan componenttest.Message
}

func (h chanHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h chanHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h chanHandler) WithGroup(string) slog.Handler            { return h }
func (h chanHandler) Handle(_ context.Context, r slog.Record) error {
	m := componenttest.Message{Headers: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "body":
			m.Body = a.Value.String()
		case "headers":
			var hs map[string]any
			if err := json.Unmarshal([]byte(a.Value.String()), &hs); err == nil {
				for k, v := range hs {
					m.Headers[k] = exchange.Stringify(v)
				}
			}
		}
		return true
	})
	h.ch <- m
	return nil
}

func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{Producer: true, Headers: true},
		Setup: func(t *testing.T) *componenttest.Fixture {
			ch := make(chan componenttest.Message, 256)
			logger := slog.New(chanHandler{ch: ch})
			return &componenttest.Fixture{
				Component: helixlog.New(func() *slog.Logger { return logger }),
				URI:       "log://conformance?showHeaders=true",
				Listen:    func() <-chan componenttest.Message { return ch },
			}
		},
	})
}

func TestLogOutput(t *testing.T) {
	tests := []struct {
		name    string
		uri     string
		prepare func(ex *exchange.Exchange)
		want    []string
		notWant []string
	}{
		{"info by default", "log://orders", nil, []string{"level=INFO", "logger=orders", "body=hello"}, []string{"headers="}},
		{"level and headers", "log://orders?level=warn&showHeaders=true", func(ex *exchange.Exchange) {
			ex.In().SetHeader("X-Id", "7")
		}, []string{"level=WARN", `X-Id`, `headers=`}, nil},
		{"debug is logged at debug", "log://d?level=debug", nil, []string{"level=DEBUG"}, nil},
		{"exception and failure header", "log://errors?level=error", func(ex *exchange.Exchange) {
			ex.SetException(errors.New("kaput"))
			ex.In().SetHeader(exchange.HeaderExceptionMessage, "step 2 failed")
		}, []string{"level=ERROR", "exception=kaput", `error="step 2 failed"`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf testtools.SyncBuffer
			logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			comp := helixlog.New(func() *slog.Logger { return logger })
			u, err := uri.Parse(tc.uri)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := comp.CreateEndpoint(u)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ep.CreateProducer()
			if err != nil {
				t.Fatal(err)
			}
			ex := exchange.NewWithBody(exchange.InOut, "hello")
			if tc.prepare != nil {
				tc.prepare(ex)
			}
			if err := p.Process(context.Background(), ex); err != nil {
				t.Fatal(err)
			}
			if ex.In().Body() != "hello" {
				t.Fatalf("log changed the body to %v", ex.In().Body())
			}
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("log output %q lacks %q", out, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("log output %q should not contain %q", out, w)
				}
			}
		})
	}
}

func TestLogBadOptions(t *testing.T) {
	for _, raw := range []string{"log://x?level=loud", "log://x?showHeaders=maybe"} {
		u, _ := uri.Parse(raw)
		if _, err := helixlog.New(nil).CreateEndpoint(u); err == nil {
			t.Errorf("%s: want an error", raw)
		}
	}
}
