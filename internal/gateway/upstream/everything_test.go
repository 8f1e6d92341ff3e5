package upstream

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
)

// The reference server (server-everything, Node) as a stdio upstream: one
// process shared by concurrent callers, answering health pings; per-principal
// gives each principal a process of its own.
func TestServerEverythingStdioUpstream(t *testing.T) {
	node := testtools.Node(t)
	script := testtools.NPMBin(t, "mcp-server-everything")
	cfg := config.UpstreamConfig{ID: "everything", Command: node, Args: []string{script, "stdio"},
		Health: config.HealthConfig{Interval: 50 * time.Millisecond, Timeout: 5 * time.Second}}
	p := newPool(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("hello %d", i)
			out, err := callText(ctx, p, gateway.SessionKey{Downstream: fmt.Sprint("c", i%4)}, "echo", map[string]any{"message": want})
			if err != nil {
				t.Error(err)
				return
			}
			if out != "Echo: "+want {
				t.Errorf("echo answered %q, want %q", out, "Echo: "+want)
			}
		}()
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond) // health pings on the live process
	if st := p.Status(); st.Processes != 1 || !st.Healthy || st.LastError != "" {
		t.Errorf("status %+v, want one healthy process", st)
	}

	cfg.Sessions = config.SessionsPerPrincipal
	pp := newPool(t, cfg)
	for _, who := range []string{"alice", "bob", "alice"} {
		if _, err := callText(ctx, pp, gateway.SessionKey{Principal: who}, "echo", map[string]any{"message": who}); err != nil {
			t.Fatal(err)
		}
	}
	if n := pp.Status().Processes; n != 2 {
		t.Errorf("%d processes for two principals, want 2", n)
	}
}
