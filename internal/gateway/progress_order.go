package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Progress order. An upstream sends a call's progress notifications before
// its response, on the same stream, but the go-sdk client hands the response
// to the caller as soon as it is read while notifications wait their turn on
// a separate handler goroutine: the call can return, and the gateway answer
// the client, before the last notifications were relayed (they were then
// dropped, their call being over). So the gateway counts, as the HTTP body
// of an upstream's answer goes by, the progress notifications carrying each
// of its tokens, and a call returns only once as many were relayed.

// progressCount is, per gateway progress token, the notifications seen on
// the wire and the ones relayed.
type progressCount struct {
	mu      sync.Mutex
	seen    map[string]int
	relayed map[string]int
	changed chan struct{} // closed and replaced whenever relayed grows
}

// progressDrainBound is how long a call waits for notifications seen but not
// yet relayed: the go-sdk drops a notification it cannot decode without
// calling the handler, and such a one must not hold the answer up for long.
const progressDrainBound = 2 * time.Second

func (p *progressCount) init() {
	p.seen = map[string]int{}
	p.relayed = map[string]int{}
	p.changed = make(chan struct{})
}

func (p *progressCount) saw(tok string) {
	p.mu.Lock()
	p.seen[tok]++
	p.mu.Unlock()
}

func (p *progressCount) done(tok string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, counted := p.seen[tok]; !counted {
		return // not read from an HTTP stream (stdio), or its call is over
	}
	p.relayed[tok]++
	close(p.changed)
	p.changed = make(chan struct{})
}

// drain waits until every notification of tok seen so far was relayed (or
// ctx ends, or the bound passes), then forgets tok.
func (p *progressCount) drain(ctx context.Context, tok string) {
	timer := time.NewTimer(progressDrainBound)
	defer timer.Stop()
	for {
		p.mu.Lock()
		pending := p.relayed[tok] < p.seen[tok]
		ch := p.changed
		if !pending {
			delete(p.seen, tok)
			delete(p.relayed, tok)
		}
		p.mu.Unlock()
		if !pending {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			p.forget(tok)
			return
		case <-timer.C:
			p.forget(tok)
			return
		}
	}
}

func (p *progressCount) forget(tok string) {
	p.mu.Lock()
	delete(p.seen, tok)
	delete(p.relayed, tok)
	p.mu.Unlock()
}

// countingClient is hc with its answers' event streams watched for the
// progress notifications of the gateway's tokens (prefix).
func (p *progressCount) countingClient(hc *http.Client, prefix string) *http.Client {
	if hc == nil {
		return nil
	}
	c := *hc
	c.Transport = &progressWatch{base: hc.Transport, count: p, prefix: prefix}
	return &c
}

type progressWatch struct {
	base   http.RoundTripper
	count  *progressCount
	prefix string
}

func (w *progressWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	base := w.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err != nil || resp.Body == nil || fastRelayed(r.Context()) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = &eventWatch{ReadCloser: resp.Body, w: w}
	return resp, nil
}

// eventWatch passes an event stream through unchanged, counting each
// progress notification of the gateway's tokens when the bytes that end its
// event are read (before the client can read anything after it).
type eventWatch struct {
	io.ReadCloser
	w    *progressWatch
	line []byte // the current line so far
	data []byte // the current event's data
}

// maxWatchedLine bounds what is kept of one line: a progress notification is
// small, a longer line (a large result) is passed on without being kept.
const maxWatchedLine = 64 << 10

func (e *eventWatch) Read(b []byte) (int, error) {
	n, err := e.ReadCloser.Read(b)
	for _, c := range b[:n] {
		if c != '\n' {
			if len(e.line) <= maxWatchedLine {
				e.line = append(e.line, c)
			}
			continue
		}
		e.endLine()
	}
	return n, err
}

func (e *eventWatch) endLine() {
	line := bytes.TrimSuffix(e.line, []byte("\r"))
	e.line = e.line[:0]
	switch {
	case len(line) > maxWatchedLine:
		e.data = e.data[:0]
	case len(line) == 0:
		e.event()
		e.data = e.data[:0]
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
		if len(e.data) > 0 {
			e.data = append(e.data, '\n')
		}
		e.data = append(e.data, d...)
	}
}

func (e *eventWatch) event() {
	if !bytes.Contains(e.data, []byte(`notifications/progress`)) {
		return
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			ProgressToken any `json:"progressToken"`
		} `json:"params"`
	}
	if json.Unmarshal(e.data, &msg) != nil || msg.Method != "notifications/progress" {
		return
	}
	if tok, ok := msg.Params.ProgressToken.(string); ok && strings.HasPrefix(tok, e.w.prefix) {
		e.w.count.saw(tok)
	}
}
