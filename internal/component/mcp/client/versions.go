package client

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol versions.
//
// The go-sdk client opens a session with server/discover (protocol 2026-07-28 and
// later, sessionless) and falls back to the initialize handshake of the older
// protocols on any error of server/discover. An error that is the answer of an
// older server (a JSON-RPC error, a 400 or 404 for a request without a session)
// should lead to initialize; a momentary failure (no answer, a reset connection, a
// 5xx, 408 or 429) says nothing about the server's era: falling back then would open
// a legacy session with a modern server, or fail with initialize's error instead of
// the real one. So the connect's tracker remembers a momentary failure of
// server/discover and refuses to send the initialize that would follow
// (discoverRoundTrip); the connect then fails like any other, with the real cause,
// and a later call tries again (with the Conn's backoff).

// protocolModern is the first protocol version of the sessionless era (requests
// carry their version and the client's identity in _meta; server/discover replaces
// initialize).
const protocolModern = "2026-07-28"

// ProtocolVersions are the versions a Config may pin (ProtocolVersion, the
// protocolVersion option, helix mcp --protocol-version): the go-sdk's, newest first.
var ProtocolVersions = sdk.SupportedProtocolVersions()

// checkProtocolVersion reports a pinned version the client cannot speak.
func checkProtocolVersion(v string) error {
	if v == "" || slices.Contains(ProtocolVersions, v) {
		return nil
	}
	return fmt.Errorf("mcp client: protocol version %q is not one the client speaks (use one of %s, or leave it out for the newest the server speaks)",
		v, strings.Join(ProtocolVersions, ", "))
}

// checkPinnedEra refuses a session of an older protocol when the Config pins the
// sessionless one: the go-sdk falls back to initialize when server/discover fails,
// and a pin says the caller wants no fallback.
func (c *Conn) checkPinnedEra(s *sdk.ClientSession) error {
	if c.cfg.ProtocolVersion < protocolModern {
		return nil
	}
	got := ""
	if init := s.InitializeResult(); init != nil {
		got = init.ProtocolVersion
	}
	if got >= protocolModern {
		return nil
	}
	return fmt.Errorf("the server does not speak protocol %s (server/discover failed; it answered initialize with %s): protocol version %s is pinned, so the older protocol is not used; leave the pin out to accept it",
		c.cfg.ProtocolVersion, got, c.cfg.ProtocolVersion)
}

// Method names of the two handshakes.
const (
	methodDiscover   = "server/discover"
	methodInitialize = "initialize"
)

// DiscoverFailedError is a connect that stopped after a momentary failure of
// server/discover instead of falling back to initialize.
type DiscoverFailedError struct {
	Endpoint string
	Status   int   // HTTP status of the answer; 0: no answer
	Err      error // the transport's error when there was no answer
}

func (e *DiscoverFailedError) Error() string {
	var what string
	if e.Status != 0 {
		what = fmt.Sprintf("answered HTTP %d %s", e.Status, http.StatusText(e.Status))
	} else {
		what = fmt.Sprintf("got no answer (%v)", e.Err)
	}
	return fmt.Sprintf("%s at %s %s: a momentary failure, not the answer of an older server, so the client did not fall back to initialize; the next call tries again",
		methodDiscover, e.Endpoint, what)
}

func (e *DiscoverFailedError) Unwrap() error { return e.Err }

// momentaryStatus reports whether an HTTP status says the server could not answer
// now, rather than that it does not speak the request's protocol.
func momentaryStatus(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// discoverRoundTrip sends a request of a connect attempt tracked by t: it records
// the status of every answer (path fallback, 404 hint), the momentary failure of a
// server/discover, and refuses the initialize that would follow one.
func (t *callTracker) discoverRoundTrip(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	var method string
	if req.Method == http.MethodPost {
		head, _ := peekRequest(req)
		method = head.method
	}
	if method == methodInitialize {
		if de := t.discoverFailure(); de != nil {
			return nil, de
		}
	}
	resp, err := base.RoundTrip(req)
	if err == nil {
		t.setStatus(resp.StatusCode)
	}
	if method == methodDiscover {
		switch {
		case err != nil:
			t.setDiscoverFailure(&DiscoverFailedError{Endpoint: req.URL.Redacted(), Err: err})
		case momentaryStatus(resp.StatusCode):
			t.setDiscoverFailure(&DiscoverFailedError{Endpoint: req.URL.Redacted(), Status: resp.StatusCode})
		default:
			// An answer: a later discover (the SDK retries once with a version the
			// server named) or the fallback to initialize may go ahead.
			t.setDiscoverFailure(nil)
		}
	}
	return resp, err
}

func (t *callTracker) setDiscoverFailure(e *DiscoverFailedError) {
	t.mu.Lock()
	t.discoverFailed = e
	t.mu.Unlock()
}

// discoverFailure is the momentary failure of the connect's last server/discover,
// or nil.
func (t *callTracker) discoverFailure() *DiscoverFailedError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.discoverFailed
}

// IsDiscoverFailure reports whether err is a connect that stopped after a momentary
// failure of server/discover.
func IsDiscoverFailure(err error) bool {
	var de *DiscoverFailedError
	return errors.As(err, &de)
}
