package netguard

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestStackReservedOncePerConnection: the guard grows the serving goroutine's
// stack before the first request of each connection, and not again for that
// connection's later requests (they run on the same goroutine).
func TestStackReservedOncePerConnection(t *testing.T) {
	var calls atomic.Int64
	prev := reserveHandlerStack
	reserveHandlerStack = func() { calls.Add(1); prev() }
	t.Cleanup(func() { reserveHandlerStack = prev })

	ln, err := Listen(context.Background(), "127.0.0.1:0", "test server")
	if err != nil {
		t.Fatal(err)
	}
	var seen []int64 // the reserves counted when each request's handler ran
	seenCh := make(chan int64, 16)
	serveHandler(t, ln, Limits{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		seenCh <- calls.Load()
		_, _ = io.WriteString(w, "ok")
	}))
	url := "http://" + ln.Addr().String() + "/"
	for conn := range 2 {
		// One client per connection: its keep-alive connection carries 3 requests.
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		for range 3 {
			if got, err := post(c, url); err != nil || got != "ok" {
				t.Fatalf("connection %d: %q, %v", conn, got, err)
			}
			seen = append(seen, <-seenCh)
		}
		c.CloseIdleConnections()
	}
	want := []int64{1, 1, 1, 2, 2, 2}
	if len(seen) != len(want) {
		t.Fatalf("requests seen %v", seen)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("stack reserves seen by the 6 requests on 2 connections: %v, want %v (once per connection, before its first request)", seen, want)
		}
	}
}

// TestStackReserveHoldsADeepHandler: after reserveStack, a call chain as deep as
// the MCP handler's runs without the runtime moving the stack again; without
// it, the same chain moves it (so the test can tell). A stack that moves is seen
// as a local variable whose address changed.
func TestStackReserveHoldsADeepHandler(t *testing.T) {
	// A handler's depth below the guard, in frames of deepFrame bytes: what
	// the reserve is meant to cover, with room to spare below the target.
	const depth = (stackReserveFrame + stackReserveFrame/2) / deepFrame
	run := func(reserve bool) (moved bool) {
		done := make(chan bool)
		go func() {
			var marker byte
			if reserve {
				_ = reserveStack(0)
			}
			grown := uintptr(unsafe.Pointer(&marker))
			_ = deep(depth)
			done <- uintptr(unsafe.Pointer(&marker)) != grown
		}()
		return <-done
	}
	if !run(false) {
		t.Skip("this runtime starts goroutines with a stack deep enough already: nothing to tell apart")
	}
	if run(true) {
		t.Fatal("the stack moved during a handler-deep call after reserveStack: the reserve is too small")
	}
}

// TestStackReserveIsNoLargerThanNeeded: the reserve grows the stack to 8 KiB,
// not beyond: a chain deeper than 8 KiB still moves it. A connection's goroutine
// keeps the stack the reserve gave it for the connection's life, so a larger
// reserve is memory on every idle keep-alive connection.
func TestStackReserveIsNoLargerThanNeeded(t *testing.T) {
	const depth = (9 << 10) / deepFrame // 9 KiB: more than an 8 KiB stack holds
	done := make(chan bool)
	go func() {
		var marker byte
		_ = reserveStack(0)
		grown := uintptr(unsafe.Pointer(&marker))
		_ = deep(depth)
		done <- uintptr(unsafe.Pointer(&marker)) != grown
	}()
	if !<-done {
		t.Fatal("a 9 KiB call chain after reserveStack did not move the stack: the reserve grew it beyond 8 KiB")
	}
}

const deepFrame = 512

//go:noinline
func deep(n int) byte {
	var frame [deepFrame - 64]byte
	if n <= 0 {
		return frame[n&7]
	}
	return deep(n-1) + frame[n&7]
}

// TestStackReserveNeedsTheSharedConn: a connection without the shared socket's
// bookkeeping (a server not opened through Listen) is served as before.
func TestStackReserveNeedsTheSharedConn(t *testing.T) {
	var calls atomic.Int64
	prev := reserveHandlerStack
	reserveHandlerStack = func() { calls.Add(1); prev() }
	t.Cleanup(func() { reserveHandlerStack = prev })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveAnswer(t, ln, "ok")
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	if got, err := post(c, "http://"+ln.Addr().String()+"/"); err != nil || !strings.Contains(got, "ok") {
		t.Fatalf("%q, %v", got, err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("reserved %d times for a connection the guard cannot follow", n)
	}
}
