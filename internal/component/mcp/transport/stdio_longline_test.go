package transport

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestStdioDrainIgnoresOverlongLine: the transport refuses a line over the limit
// without answering its id, so the drain must not wait for that id at EOF (it
// held the input's EOF for stdioDrainTimeout, 30 s), nor keep the line in memory.
func TestStdioDrainIgnoresOverlongLine(t *testing.T) {
	t.Parallel()
	long := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"pad":"` + strings.Repeat("x", 200) + `"}}` + "\n"
	for name, chunk := range map[string]int{"one read": len(long), "small reads": 7} {
		t.Run(name, func(t *testing.T) {
			d := NewStdioDrain(&chunkReader{data: []byte(long), n: chunk}, io.Discard)
			d.maxLine = 64
			done := make(chan struct{})
			go func() {
				defer close(done)
				buf := make([]byte, 4096)
				for {
					if _, err := d.Read(buf); err != nil {
						return
					}
					if len(d.inTail) > d.maxLine+1 {
						t.Errorf("the drain holds %d bytes of an over-long line", len(d.inTail))
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				d.Stop()
				<-done
				t.Fatalf("EOF held back for the refused over-long line (pending %v)", d.pending)
			}
			if len(d.pending) != 0 {
				t.Fatalf("pending %v", d.pending)
			}
		})
	}
	// A normal line after an over-long one is still tracked.
	d := NewStdioDrain(strings.NewReader(long+`{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n"), io.Discard)
	d.maxLine = 64
	_, _ = d.Read(make([]byte, 4096))
	if !d.pending["3"] || len(d.pending) != 1 {
		t.Fatalf("pending %v", d.pending)
	}
}

// chunkReader returns data n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(r.n, len(p), len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}
