package netguard

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestBudgetForSharesTheFileLimit(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  FileBudget
	}{
		{0, FileBudget{PerListen: DefaultMaxConnections, Management: DefaultMaxConnections}},
		{100, FileBudget{Limit: 100, Reserve: 64, Listeners: 36, PerListen: 18, Management: 16}},
		{1024, FileBudget{Limit: 1024, Reserve: 256, Listeners: 768, PerListen: 384, Management: 64}},
		{3000, FileBudget{Limit: 3000, Reserve: 750, Listeners: 2250, PerListen: 1125, Management: 187}},
		{1 << 20, FileBudget{Limit: 1 << 20, Reserve: 4096, Listeners: 1<<20 - 4096, PerListen: 4096, Management: 1024}},
	} {
		if got := budgetFor(tc.limit); got != tc.want {
			t.Errorf("budgetFor(%d) = %+v, want %+v", tc.limit, got, tc.want)
		}
	}
}

// TestProcessBudgetSpansListeners: connections of two listeners together stay
// within the process budget, and a closed one frees its slot.
func TestProcessBudgetSpansListeners(t *testing.T) {
	budget := int(processConns.Load()) + 3
	a, b := listenGuarded(t, budget), listenGuarded(t, budget)
	ca1, _ := a.dial(t), a.dial(t)
	b.dial(t)
	if c := b.dial(t); c != nil {
		t.Fatal("a fourth connection was accepted beyond the process budget of 3")
	}
	_ = ca1.Close()
	if c := b.dial(t); c == nil {
		t.Fatal("a connection was refused after another one closed")
	}
}

type guardedForTest struct {
	*Listener
	accepted chan net.Conn
}

func listenGuarded(t *testing.T, budget int, setup ...func(*Listener)) *guardedForTest {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &guardedForTest{Listener: newListener(raw, Limits{MaxConnectionsPerIP: -1}, 100, budget, t.Name(), nil),
		accepted: make(chan net.Conn, 16)}
	for _, f := range setup {
		f(g.Listener)
	}
	go func() {
		for {
			c, err := g.Accept()
			if err != nil {
				return
			}
			g.accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = g.Close()
		for {
			select {
			case c := <-g.accepted:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return g
}

// dial connects to g and returns the accepted server side, or nil when g
// refused the connection.
func (g *guardedForTest) dial(t *testing.T) net.Conn {
	t.Helper()
	refused := g.Refused()
	client, err := net.Dial("tcp", g.Addr().String())
	if errors.Is(err, syscall.ECONNRESET) {
		return nil // refused before connect returned
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-g.accepted:
			return c
		case <-deadline:
			t.Fatal("the connection was neither accepted nor refused within 5s")
		case <-time.After(time.Millisecond):
			if g.Refused() > refused {
				return nil
			}
		}
	}
}
