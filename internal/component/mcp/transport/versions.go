package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version negotiation, the same on every transport (Streamable HTTP of both
// implementations, SSE, stdio). A request names its protocol version in up to
// three places, and each is checked before the go-sdk sees the request:
//
//   - the Mcp-Protocol-Version header (HTTP): a version the server speaks, else
//     400 and UnsupportedProtocolVersionError (-32022); present but empty counts
//     as unsupported, absent means "assume 2025-03-26" as the spec says;
//   - _meta["io.modelcontextprotocol/protocolVersion"] (2026-07-28 requests): a
//     string naming a version the server speaks, else -32022. The go-sdk would
//     take a non-string or an older date for "no 2026-07-28 request" and serve
//     it as a legacy one;
//   - initialize's protocolVersion (legacy handshake): a string shaped like a
//     revision (YYYY-MM-DD), else -32022. A well-formed date the server does not
//     speak is negotiated as the 2025-11-25 lifecycle prescribes (the answer
//     names the newest legacy version); "", null, 42 or "42" name no version
//     at all, where the go-sdk would negotiate ("") or answer with a decoding
//     error (42).
//
// Every -32022 carries sdk.UnsupportedProtocolVersionData: the versions the
// server speaks (those server/discover lists) and the requested value.

// revisionShape is the form of an MCP revision: a date.
var revisionShape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// protocolVersionKey is what both places in a body that name a version contain;
// bodies without it skip the check's decoding.
var protocolVersionKey = []byte("protocolVersion")

// unsupportedVersion is the -32022 error for requested (what data.requested
// echoes), shown in the message as shown, found at where ("the
// Mcp-Protocol-Version header").
func unsupportedVersion(requested, shown, where string) *jsonrpc.Error {
	// A version is a few bytes; a client that sends megabytes there gets the
	// start back, not an echo of all of it.
	data, _ := json.Marshal(sdk.UnsupportedProtocolVersionData{Supported: knownProtocolVersions, Requested: cut(requested, 128)})
	shown = cut(shown, 40) // the message only has to point at it
	return &jsonrpc.Error{Code: sdk.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("unsupported protocol version %s in %s; send one of: %s", shown, where,
			strings.Join(knownProtocolVersions, ", ")),
		Data: data}
}

// checkVersionHeader checks the Mcp-Protocol-Version header values of an HTTP
// request (nil: no header).
func checkVersionHeader(values []string) *jsonrpc.Error {
	if len(values) == 0 || slices.Contains(knownProtocolVersions, values[0]) {
		return nil
	}
	return unsupportedVersion(values[0], strconv.Quote(values[0]), "the "+protocolVersionHeader+" header")
}

// requestEra tells whether req is a 2026-07-28 request by its _meta (the era of
// a request without an HTTP header: SSE, stdio) and checks the versions it names
// in its body (see above), reading its params once; e is nil when it names none
// or only versions the server speaks. Notifications are not checked: the go-sdk
// ignores their _meta version.
func requestEra(req *jsonrpc.Request) (newEra bool, e *jsonrpc.Error) {
	// protocolVersionKey is part of sdk.MetaKeyProtocolVersion too: params without
	// it name no version, old or new.
	if !req.IsCall() || req.Method != "initialize" && !bytes.Contains(req.Params, protocolVersionKey) {
		return false, nil
	}
	f := readCallFields(req)
	newEra = f.metaVersionText() >= statelessProtocol
	return newEra, f.checkVersions(req, newEra)
}

// checkVersions checks the versions f, the fields of req, name. An initialize
// of the 2026-07-28 era (newEra) is not a handshake but a removed method, which
// the session answers with -32601.
func (f *callFields) checkVersions(req *jsonrpc.Request, newEra bool) *jsonrpc.Error {
	if !req.IsCall() || !f.object {
		return nil // not an object: the go-sdk answers with invalid params
	}
	if raw := f.metaVersion; raw != nil {
		if v, ok := stringField(raw); !ok || !slices.Contains(knownProtocolVersions, v) {
			return unsupportedVersion(requestedText(raw), shownJSON(raw), "_meta "+sdk.MetaKeyProtocolVersion)
		}
	}
	if req.Method == "initialize" && !newEra {
		if v, ok := stringField(f.protocolVersion); !ok || !revisionShape.MatchString(v) {
			return unsupportedVersion(requestedText(f.protocolVersion), shownJSON(f.protocolVersion),
				"initialize's protocolVersion (it must be a string naming a revision, YYYY-MM-DD)")
		}
	}
	return nil
}

// requestedText is what error.data.requested echoes: a JSON string's value,
// other JSON as it was sent ("" when absent).
func requestedText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// cut shortens s to at most n bytes, on a character boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// shownJSON is a body field as the message shows it: as sent, "(none)" when absent.
func shownJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	return string(bytes.TrimSpace(raw))
}

// isNewEra tells whether req is a 2026-07-28 request: its _meta names that
// version (or a later one). Only such requests are served without a session.
func isNewEra(req *jsonrpc.Request) bool {
	if !req.IsCall() || !bytes.Contains(req.Params, []byte(sdk.MetaKeyProtocolVersion)) {
		return false
	}
	f := readCallFields(req)
	return f.metaVersionText() >= statelessProtocol
}
