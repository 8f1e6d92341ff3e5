package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sdkProtocolFront puts Helix's protocol-version rules in front of the go-sdk's
// stock StreamableHTTPHandler (http_transport: sdk), so that both implementations
// negotiate alike and serve both protocol eras on one endpoint:
//
//   - versions are checked as on every transport (versions.go): an unsupported
//     or malformed one in the Mcp-Protocol-Version header, in _meta or in
//     initialize's protocolVersion is refused with 400 and -32022 listing the
//     versions the server speaks (the go-sdk would serve some of them as legacy
//     requests, and answers others with plain text);
//   - a 2026-07-28 request goes to a second go-sdk handler, a stateless one: the
//     go-sdk's stateful handler refuses that protocol, its stateless one serves it
//     in full (server/discover, _meta, SEP-2243 headers). A 2026-07-28 request
//     that names a session is refused, as by Helix's own handler;
//   - every other request goes to the server's own handler (stateful, or the
//     stateless one for stateless: true), and its results lose the 2026-07-28
//     fields (LegacyResultWriter).
type sdkProtocolFront struct {
	sessions    http.Handler // the server's handler: stateful, or stateless for stateless: true
	sessionless http.Handler // the go-sdk's stateless handler, for 2026-07-28 requests
	stateless   bool
	maxBody     int64
	checks      *StreamableHandler // its version and header checks only; it serves nothing
}

// NewSDKProtocolFront returns the front of the go-sdk's handlers: sessions serves
// the server's legacy requests (and GET, DELETE), sessionless its 2026-07-28
// requests; on a stateless server both may be the same handler.
func NewSDKProtocolFront(sessions, sessionless http.Handler, o *Options) http.Handler {
	f := &sdkProtocolFront{sessions: sessions, sessionless: sessionless, stateless: o.Stateless, checks: &StreamableHandler{}}
	switch {
	case o.MaxRequestBodyBytes == 0:
		f.maxBody = defaultMaxBodyBytes
	case o.MaxRequestBodyBytes > 0:
		f.maxBody = o.MaxRequestBodyBytes
	}
	return f
}

func (f *sdkProtocolFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	versions := r.Header.Values(protocolVersionHeader)
	headerErr := checkVersionHeader(versions)
	if r.Method != http.MethodPost {
		if headerErr != nil {
			writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, headerErr)
			return
		}
		f.sessions.ServeHTTP(LegacyResultWriter{w}, r)
		return
	}
	// The body decides the era, so it is read here (bounded as the go-sdk bounds
	// it) and handed on.
	body := r.Body
	if f.maxBody > 0 {
		body = http.MaxBytesReader(w, r.Body, f.maxBody)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	var calls []*jsonrpc.Request
	if dec, err := decodeBody(data); err == nil {
		for _, m := range dec.msgs {
			if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
				calls = append(calls, req)
			}
		}
	}
	if headerErr != nil {
		id := jsonrpc.ID{}
		if len(calls) == 1 {
			id = calls[0].ID
		}
		writeJSONRPCError(w, http.StatusBadRequest, id, headerErr)
		return
	}
	version := ""
	if len(versions) > 0 {
		version = versions[0]
	}
	newEra := version >= statelessProtocol // a 2026-07-28 notification too
	for _, req := range calls {
		// As Helix's handler checks them (the go-sdk's stateless handler then
		// checks the Mcp-Param-* headers itself).
		var fields callFields
		isNew, e := f.checks.checkCall(r.Header, req, version, &fields)
		if e != nil {
			writeJSONRPCError(w, http.StatusBadRequest, req.ID, e)
			return
		}
		newEra = newEra || isNew
	}
	switch {
	case newEra && !f.stateless && r.Header.Get(sessionIDHeader) != "":
		refuseSessionOnNewEra(w, calls)
	case newEra:
		f.sessionless.ServeHTTP(w, r)
	default:
		// Anything that is not one request goes on to the go-sdk too, which
		// refuses it in its own way.
		f.sessions.ServeHTTP(LegacyResultWriter{w}, r)
	}
}
