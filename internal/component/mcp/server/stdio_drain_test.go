package server

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// A client that writes its requests and closes its end of the pipe at once
// (`printf '…' | helix run f.yaml`) still gets every answer, even from a slow tool.
func TestStdioAnswersRequestsReadBeforeEOF(t *testing.T) {
	t.Parallel()
	slow := &engine.Workflow{ID: "slow", FromURI: "direct://slow", Processors: []engine.Processor{
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
			ex.In().SetBody("done slowly")
			return nil
		}),
	}}
	hc := newTestContext(t, greetWorkflow(), slow)
	input := strings.Join([]string{
		initializeBody,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
	}, "\n") + "\n"
	outR, outW := io.Pipe()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&out, outR)
	}()
	comp := startContext(t, hc, Options{ID: "pipe", Transport: "stdio", Stdin: strings.NewReader(input), Stdout: outW})
	select {
	case <-comp.Done():
	case <-time.After(testTimeout):
		t.Fatal("server did not end after its input ended")
	}
	_ = outW.Close()
	<-copied
	got := out.String()
	for _, want := range []string{`"id":1`, `done slowly`, `Hello, Ada!`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
}
