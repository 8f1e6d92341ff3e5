package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// Size limit of the server's answers (Config.MaxResponseBytes, the maxResponseBytes
// option). Answers are counted as they are read, so an oversized one is never held in
// memory: the reader fails as soon as the count passes the limit, and the SDK gives up
// on the response (or, for a stream, on the connection).
//
//   - A Streamable HTTP POST response (JSON, or the event stream of one call) counts
//     as a whole: it carries one call's answer and its notifications.
//   - A session-long stream (the SSE transport's GET stream, a stdio server's stdout)
//     counts each answer separately: an SSE event ends at an empty line, a stdio
//     message at a newline.

// ResponseTooLargeError is a call whose answer was larger than maxResponseBytes.
type ResponseTooLargeError struct {
	Server string // the server's URL or command line
	Limit  int64
}

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the answer of %s is larger than maxResponseBytes=%d bytes and was not read to its end; raise the target's maxResponseBytes option if such answers are expected", e.Server, e.Limit)
}

// limitedReader fails with a *ResponseTooLargeError once more than limit bytes
// were read since the start or, with delim set, since the end of the last answer.
// The error is recorded in tracker (the call whose response this is) or stream (a
// session-long stream), when set, so that the call reports it.
type limitedReader struct {
	r       io.Reader
	limit   int64
	n       int64
	delim   func(p []byte) int // index just after the last answer's end in p, or -1; nil: count everything
	server  string
	err     *ResponseTooLargeError
	tracker *callTracker
	stream  *streamLimit
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	if l.delim == nil {
		l.n += int64(n)
	} else if end := l.delim(p[:n]); end >= 0 {
		l.n = int64(n - end) // what follows the last complete answer
	} else {
		l.n += int64(n)
	}
	if l.n > l.limit {
		l.err = &ResponseTooLargeError{Server: l.server, Limit: l.limit}
		if l.tracker != nil {
			l.tracker.setTooLarge(l.err)
		}
		if l.stream != nil {
			l.stream.exceeded(l.err)
		}
		return 0, l.err
	}
	return n, err
}

// lineEnd is the delimiter of stdio messages: each ends with a newline.
func lineEnd(p []byte) int {
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		return i + 1
	}
	return -1
}

// eventEnd tracks the delimiter of SSE events: an empty line ("\n\n", or with
// "\r\n" line ends). It keeps whether the previous chunk ended a line, since the two
// newlines may arrive in different reads.
type eventEnd struct{ atLineStart bool }

func (e *eventEnd) find(p []byte) int {
	end := -1
	for i, ch := range p {
		switch ch {
		case '\n':
			if e.atLineStart {
				end = i + 1
			}
			e.atLineStart = true
		case '\r':
		default:
			e.atLineStart = false
		}
	}
	return end
}

// limitedBody is an HTTP response body read through a limitedReader.
type limitedBody struct {
	limitedReader
	io.Closer
}

// limitBody limits resp's body to limit bytes: in all for the response to a POST
// (whose call's tracker, if any, records a refusal), per SSE event for a GET (the
// SSE transport's session-long stream; stream records a refusal).
func limitBody(body io.ReadCloser, post bool, limit int64, server string, tracker *callTracker, stream *streamLimit) io.ReadCloser {
	lb := &limitedBody{limitedReader: limitedReader{r: body, limit: limit, server: server}, Closer: body}
	if post {
		lb.tracker = tracker
	} else {
		lb.delim = (&eventEnd{atLineStart: true}).find
		lb.stream = stream
	}
	return lb
}

// streamLimit remembers the last answer a session-long stream refused, for the
// calls that fail because the stream ended with it (their own requests carry no
// trace of it).
type streamLimit struct {
	last atomic.Pointer[ResponseTooLargeError]
}

func (s *streamLimit) exceeded(e *ResponseTooLargeError) { s.last.Store(e) }
func (s *streamLimit) reset()                            { s.last.Store(nil) }

// explain returns err with the too-large answer that caused it, when there was one.
func (s *streamLimit) explain(err error) error {
	if e := s.last.Load(); e != nil && !errors.As(err, new(*ResponseTooLargeError)) {
		return fmt.Errorf("%w (%v)", e, err)
	}
	return err
}
