package engine

import (
	"sync"
	"testing"
	"time"
)

// Work that starts while Wait is already waiting (an MCP call arriving during the
// drain) extends the wait instead of tripping WaitGroup's reuse check.
func TestActivityAddDuringWait(t *testing.T) {
	var a activity
	a.Add(1)
	waited := make(chan struct{})
	go func() { a.Wait(); close(waited) }()
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.Add(1)
			a.Done()
		}()
	}
	wg.Wait()
	select {
	case <-waited:
		t.Fatal("Wait returned while work was still counted")
	case <-time.After(20 * time.Millisecond):
	}
	a.Done()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("Wait did not return at zero")
	}
	a.Wait() // zero: returns at once
}
