package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// CallbackPath is the path of the loopback redirect URL.
const CallbackPath = "/callback"

// callbackResult is what the browser brought back to the loopback listener.
type callbackResult struct {
	code, state, iss string
	err              error
}

// callbackServer listens on 127.0.0.1 at a random port for the authorization
// server's redirect (the native-app pattern: no fixed port to clash, nothing
// reachable from other machines).
type callbackServer struct {
	redirectURL string
	results     chan callbackResult
	srv         *http.Server
	ln          net.Listener
}

func listenCallback() (*callbackServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oauth login: cannot listen on 127.0.0.1 for the browser's redirect: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	cb := &callbackServer{
		redirectURL: "http://127.0.0.1:" + strconv.Itoa(port) + CallbackPath,
		results:     make(chan callbackResult, 1),
		ln:          ln,
	}
	cb.srv = &http.Server{Handler: http.HandlerFunc(cb.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = cb.srv.Serve(ln) }()
	return cb, nil
}

func (cb *callbackServer) close() { _ = cb.srv.Close() }

// serve takes the first redirect that carries a code or an error. A request for
// another host name is refused: a web page could otherwise point a name it controls
// at 127.0.0.1 (DNS rebinding) and feed the listener a code of its choosing.
func (cb *callbackServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != CallbackPath {
		http.NotFound(w, r)
		return
	}
	if host, _, err := net.SplitHostPort(r.Host); err != nil || host != "127.0.0.1" {
		http.Error(w, "this listener only answers http://127.0.0.1 redirects", http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	var res callbackResult
	switch {
	case q.Get("error") != "":
		msg := q.Get("error")
		if d := q.Get("error_description"); d != "" {
			if len(d) > 200 {
				d = d[:200] + "…"
			}
			msg += ": " + d
		}
		res.err = errors.New("the authorization server refused: " + msg)
	case q.Get("code") != "":
		res = callbackResult{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
	default:
		http.Error(w, "no code or error in the redirect", http.StatusBadRequest)
		return
	}
	select {
	case cb.results <- res:
	default:
		http.Error(w, "this login already got its answer", http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if res.err != nil {
		fmt.Fprintln(w, "Helix: authorization failed. You can close this window.")
		return
	}
	fmt.Fprintln(w, "Helix: authorization complete. You can close this window.")
}
