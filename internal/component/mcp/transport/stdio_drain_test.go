package transport

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestStdioDrainBookkeeping(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := NewStdioDrain(strings.NewReader(""), &out)
	// Requests split across reads, a batch, a notification (no id) and a null id.
	feed := []string{`{"jsonrpc":"2.0","id":"a","meth`, `od":"x"}` + "\n" + `[{"jsonrpc":"2.0","id":7,"method":"y"},{"jsonrpc":"2.0","method":"n"}]` + "\n" + `{"jsonrpc":"2.0","id":null,"method":"z"}` + "\n"}
	for _, f := range feed {
		d.mu.Lock()
		d.inTail = lines(d.inTail, []byte(f), func(line []byte) {
			for _, e := range envelopes(line) {
				if e.Method != "" && hasID(e) {
					d.pending[string(e.ID)] = true
				}
			}
		})
		d.mu.Unlock()
	}
	if len(d.pending) != 2 || !d.pending[`"a"`] || !d.pending[`7`] {
		t.Fatalf("pending %v", d.pending)
	}
	// A response written in two pieces, and a server request (has a method) that
	// must not count as an answer.
	_, _ = d.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":7,`))
	if len(d.pending) != 2 {
		t.Fatalf("answered too early: %v", d.pending)
	}
	_, _ = d.Write([]byte(`"result":{}}` + "\n"))
	if len(d.pending) != 1 || !d.pending[`"a"`] {
		t.Fatalf("pending after answer %v", d.pending)
	}
	// EOF waits for "a"; Stop releases it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = d.Read(make([]byte, 10))
	}()
	select {
	case <-done:
		t.Fatal("EOF delivered while a request is unanswered")
	case <-time.After(100 * time.Millisecond):
	}
	d.Stop()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("Stop did not release the waiting Read")
	}
}
