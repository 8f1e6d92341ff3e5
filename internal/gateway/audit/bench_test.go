package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// BenchmarkRecord is what recording costs a call: the record's preparation
// (arguments setting, credentials hidden, JSON) and the queue.
func BenchmarkRecord(b *testing.B) {
	for _, setting := range []string{ArgumentsDigest, ArgumentsRedacted} {
		b.Run(setting, func(b *testing.B) {
			st := newFakeStore()
			o := fastOptions(b.TempDir())
			o.QueueSize = 1 << 16
			a, err := New(fakeEngine(st), "gw", &config.AuditConfig{Sink: "fake://x", Arguments: setting}, o)
			if err != nil {
				b.Fatal(err)
			}
			ctx := gateway.WithPrincipal(context.Background(), &gateway.Principal{Name: "alice", Token: "a-token-of-some-length-0123456789"})
			args := json.RawMessage(`{"owner":"arvenza","repo":"helix","title":"Gateway mode","labels":["mcp","gateway"],"draft":false}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				a.Record(ctx, &gateway.Record{ID: fmt.Sprint(i), Principal: "alice", Upstream: "github", Method: gateway.MethodCallTool,
					Name: "github.create_issue", Arguments: args, Outcome: gateway.OutcomeOK, LatencyMS: 1.25})
			}
			b.StopTimer()
			_ = a.Close(context.Background())
		})
	}
}
