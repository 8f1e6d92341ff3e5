package transport

import (
	"bytes"
	"io"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sdkProtocolFront puts Helix's protocol-version rules in front of the go-sdk's
// stock StreamableHTTPHandler (http_transport: sdk), so that both implementations
// negotiate alike:
//
//   - an Mcp-Protocol-Version that names no version the server speaks is refused
//     with 400 and -32022 listing the versions it does speak (the go-sdk would
//     answer "needs a stateless server" or serve it);
//   - results of sessions before 2026-07-28 lose that version's fields
//     (LegacyResultWriter);
//   - a stateful server refuses 2026-07-28 requests with -32022 listing the
//     earlier versions. The go-sdk's handler answers server/discover at
//     2026-07-28 on a stateful server, which commits clients that probe with it
//     (mcp-go's default client) to a version the session then refuses for every
//     other request; refused, they fall back to initialize.
type sdkProtocolFront struct {
	next    http.Handler
	h       *StreamableHandler // for its refusals; never serves
	maxBody int64
}

func NewSDKProtocolFront(next http.Handler, o *Options) http.Handler {
	f := &sdkProtocolFront{next: next, h: &StreamableHandler{stateless: o.Stateless}}
	switch {
	case o.MaxRequestBodyBytes == 0:
		f.maxBody = defaultMaxBodyBytes
	case o.MaxRequestBodyBytes > 0:
		f.maxBody = o.MaxRequestBodyBytes
	}
	return f
}

func (f *sdkProtocolFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	version := r.Header.Get(protocolVersionHeader)
	if !f.h.stateless || version < statelessProtocol {
		// Sessions of earlier versions get results without 2026-07-28 fields
		// (a stateful server serves no later version).
		w = LegacyResultWriter{w}
	}
	if version == "" {
		f.next.ServeHTTP(w, r)
		return
	}
	if !slices.Contains(knownProtocolVersions, version) {
		f.h.refuseUnknownProtocol(w, version, f.h.peekRequestID(w, r))
		return
	}
	if f.h.stateless || version < statelessProtocol || r.Method != http.MethodPost {
		f.next.ServeHTTP(w, r)
		return
	}
	// A 2026-07-28 POST to a stateful server: answered with the request's id, so
	// the body is read; anything that is not one request goes on to the go-sdk,
	// which refuses it in its own way.
	body := r.Body
	if f.maxBody > 0 {
		body = http.MaxBytesReader(w, r.Body, f.maxBody)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if dec, err := decodeBody(data); err == nil && !dec.batch {
		if req, ok := dec.msgs[0].(*jsonrpc.Request); ok && req.IsCall() {
			f.h.refuseStatelessProtocol(w, req, version)
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	f.next.ServeHTTP(w, r)
}
