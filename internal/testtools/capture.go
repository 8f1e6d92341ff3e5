package testtools

import (
	"bytes"
	"context"
	"sync"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// SyncBuffer is a bytes.Buffer safe for the concurrent writes of running code (a
// logger, a command's output) and the reads of a test.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Recorder is a workflow processor that keeps a copy of every exchange it receives
// (a stub target or dead-letter workflow in tests). Safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	got []*exchange.Exchange
}

func (r *Recorder) Process(_ context.Context, ex *exchange.Exchange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, ex.Copy())
	return nil
}

// All returns the recorded exchanges in arrival order.
func (r *Recorder) All() []*exchange.Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*exchange.Exchange(nil), r.got...)
}

// EchoWorkflow is the workflow the MCP benchmarks and load smoke tests expose as the
// tool "echo": it answers with its "text" argument.
func EchoWorkflow() *engine.Workflow {
	return &engine.Workflow{
		ID:          "echo",
		Description: "Returns its text argument",
		FromURI:     "direct://echo",
		Processors: []engine.Processor{engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			m, _ := ex.In().Body().(map[string]any)
			ex.In().SetBody(m["text"])
			return nil
		})},
	}
}
