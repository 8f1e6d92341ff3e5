package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// stdioDrainTimeout bounds how long the end of a stdio client's input is held back
// while its requests are still being answered.
const stdioDrainTimeout = 30 * time.Second

// StdioDrain sits between a stdio server's input/output and the go-sdk transport. The
// SDK closes the connection as soon as its input ends, dropping answers to requests
// still running; a client that writes its requests and closes its end of the pipe
// (`printf '…' | helix run f.yaml`, or a script) would get nothing. StdioDrain
// notes the id of every request read and every response written, and delivers the
// input's EOF only once each request has its answer (or stdioDrainTimeout passed,
// or the server is stopping).
type StdioDrain struct {
	in  io.Reader
	out io.Writer

	mu      sync.Mutex
	pending map[string]bool // request ids read and not yet answered
	changed chan struct{}   // closed and replaced whenever pending shrinks
	stop    chan struct{}   // closed when the server stops: give up waiting
	inTail  []byte          // unterminated last line read so far
	inSkip  bool            // the line being read is over maxLine: ignored up to its newline
	// maxLine is the transport's line limit (stdioMaxLine): a longer line is
	// refused there without an answer to its id, so the drain neither waits for
	// it nor keeps it.
	maxLine int
	outTail []byte // unterminated last line written so far
}

func NewStdioDrain(in io.Reader, out io.Writer) *StdioDrain {
	return &StdioDrain{in: in, out: out, pending: map[string]bool{}, changed: make(chan struct{}), stop: make(chan struct{}), maxLine: stdioMaxLine}
}

// rpcEnvelope is the part of a JSON-RPC message the drain needs.
type rpcEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// envelopes decodes a line holding one message or a batch; other text yields nothing.
func envelopes(line []byte) []rpcEnvelope {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		var batch []rpcEnvelope
		if json.Unmarshal(line, &batch) != nil {
			return nil
		}
		return batch
	}
	var one rpcEnvelope
	if json.Unmarshal(line, &one) != nil {
		return nil
	}
	return []rpcEnvelope{one}
}

func hasID(e rpcEnvelope) bool { return len(e.ID) > 0 && string(e.ID) != "null" }

// idKey is the form of an id both directions share: a request's `1.0` is
// answered as `1`.
func idKey(raw json.RawMessage) string {
	id, err := decodeID(raw)
	if err != nil || !id.IsValid() {
		return string(raw)
	}
	return string(encodeID(id))
}

// lines splits tail+p into complete lines and returns the new unterminated tail.
func lines(tail, p []byte, each func(line []byte)) []byte {
	buf := append(tail, p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return buf
		}
		each(buf[:i])
		buf = buf[i+1:]
	}
}

func (d *StdioDrain) Read(p []byte) (int, error) {
	n, err := d.in.Read(p)
	if n > 0 {
		d.mu.Lock()
		d.readLines(p[:n])
		d.mu.Unlock()
	}
	if err == io.EOF {
		d.waitAnswered()
	}
	return n, err
}

// readLines notes the requests of the complete input lines in p (d.mu held). A
// line longer than maxLine is dropped as it comes: the transport refuses it
// without answering its id, and the drain must not hold it in memory.
func (d *StdioDrain) readLines(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if d.inSkip {
			if i < 0 {
				return
			}
			d.inSkip, p = false, p[i+1:]
			continue
		}
		if i < 0 {
			if len(d.inTail)+len(p) > d.maxLine+1 {
				d.inTail, d.inSkip = nil, true
				return
			}
			// A copy, out of the caller's buffer.
			d.inTail = append(d.inTail, p...)
			return
		}
		line := p[:i]
		if len(d.inTail) > 0 {
			line = append(d.inTail, line...)
		}
		if len(line) <= d.maxLine {
			for _, e := range envelopes(line) {
				if e.Method != "" && hasID(e) {
					d.pending[idKey(e.ID)] = true
				}
			}
		}
		d.inTail, p = d.inTail[:0], p[i+1:]
		if cap(d.inTail) > 64<<10 {
			d.inTail = nil // a rare long line does not stay pinned
		}
	}
}

func (d *StdioDrain) Write(p []byte) (int, error) {
	n, err := d.out.Write(p)
	d.mu.Lock()
	d.outTail = lines(d.outTail, p[:n], func(line []byte) {
		for _, e := range envelopes(line) {
			if e.Method == "" && hasID(e) {
				d.answered(idKey(e.ID))
			}
		}
	})
	d.outTail = append([]byte(nil), d.outTail...)
	d.mu.Unlock()
	return n, err
}

// answered forgets a pending request id (d.mu held).
func (d *StdioDrain) answered(key string) {
	if d.pending[key] {
		delete(d.pending, key)
		close(d.changed)
		d.changed = make(chan struct{})
	}
}

// forgetLine forgets the requests of an input line the transport answered itself
// (stdio_conn.go: a refused line or batch).
func (d *StdioDrain) forgetLine(line []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range envelopes(line) {
		if hasID(e) {
			d.answered(idKey(e.ID))
		}
	}
}

// forgetID forgets a request the transport will not answer (it was cancelled).
func (d *StdioDrain) forgetID(raw json.RawMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answered(idKey(raw))
}

// waitAnswered blocks until no request is pending, the timeout passes, or the
// server stops.
func (d *StdioDrain) waitAnswered() {
	timeout := time.NewTimer(stdioDrainTimeout)
	defer timeout.Stop()
	for {
		d.mu.Lock()
		left, changed := len(d.pending), d.changed
		d.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			return
		case <-d.stop:
			return
		}
	}
}

// Stop releases a Read waiting at EOF; called when the server stops.
func (d *StdioDrain) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
}
