package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// positioned is an error like a Starlang one: Error() for the log has the YAML
// position, ClientMessage() for the caller does not.
type positioned struct{ pos, msg string }

func (e *positioned) Error() string         { return e.pos + ": " + e.msg }
func (e *positioned) ClientMessage() string { return e.msg }

// What a client receives never names files or YAML positions; the error itself (for
// logs) keeps them.
func TestClientMessageDropsPositions(t *testing.T) {
	fail := func(err error) engine.Processor {
		return engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return err })
	}
	named := func(name string, p engine.Processor) engine.Processor { return namedProc{name, p} }
	for _, tc := range []struct {
		name      string
		steps     []engine.Processor
		client    string
		logSubstr string
	}{
		{"starlang fail", []engine.Processor{named("cfg/server.yaml:63:9 transform", fail(&positioned{"cfg/server.yaml:65:11", "boom"}))}, "boom", "cfg/server.yaml:63:9 transform: cfg/server.yaml:65:11: boom"},
		{"plain error", []engine.Processor{named("cfg/server.yaml:63:9 target", fail(errors.New("no workflow is listening")))}, "no workflow is listening", "cfg/server.yaml:63:9 target: no workflow"},
		{"nested pipeline", []engine.Processor{named("helix.yaml:3:9 choice", engine.BuildPipeline([]engine.Processor{named("helix.yaml:7:13 transform", fail(fmt.Errorf("wrapped: %w", &positioned{"helix.yaml:8:1", "bad"})))}, nil, nil))}, "bad", "helix.yaml:7:13 transform"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := engine.BuildPipeline(tc.steps, nil, nil).Process(context.Background(), exchange.New(exchange.InOut))
			if got := exchange.ClientMessage(err); got != tc.client {
				t.Errorf("ClientMessage = %q, want %q", got, tc.client)
			}
			if !contains(err.Error(), tc.logSubstr) {
				t.Errorf("Error() = %q lost %q", err, tc.logSubstr)
			}
		})
	}
	if got := exchange.ClientMessage(nil); got != "" {
		t.Errorf("ClientMessage(nil) = %q", got)
	}
}

type namedProc struct {
	name string
	engine.Processor
}

func (n namedProc) Name() string { return n.name }

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
