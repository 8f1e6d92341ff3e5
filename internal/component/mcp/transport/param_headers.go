package transport

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Custom headers (SEP-2243, protocol 2026-07-28): a tool marks an argument with
// "x-mcp-header": "Region" in its input schema, and a client's tools/call then
// mirrors that argument in the HTTP header Mcp-Param-Region, so that proxies and
// gateways can route on it without reading the body. The server checks that the
// header says what the body says, as the go-sdk's own handler does (its checks
// are unexported, so Helix's transport has its own, with the same rules):
//
//   - an argument present in the body (and not null) needs its header, and an
//     absent or null one must have none;
//   - a value "=?base64?…?=" is standard Base64 with padding, decoded before the
//     comparison; a value without both the prefix and the suffix is literal;
//   - strings compare exactly, booleans as true/false, integers by value.
//
// Anything else is refused with 400 and HeaderMismatch (-32020) naming the header.

const (
	paramHeaderPrefix = "Mcp-Param-"
	base64Prefix      = "=?base64?"
	base64Suffix      = "?="
	// maxSafeInteger bounds the integers a header may carry (SEP-2243 follows
	// JavaScript numbers).
	maxSafeInteger = 1<<53 - 1
)

// ParamHeader binds one argument of a tool (a path into its arguments object) to
// the header Mcp-Param-<Header>.
type ParamHeader struct {
	Path   []string
	Header string
}

// schemaProperty is what ParamHeaders reads of an input schema.
type schemaProperty struct {
	Type       json.RawMessage           `json:"type"`
	XMCPHeader json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]schemaProperty `json:"properties"`
}

// ParamHeaders returns the x-mcp-header bindings of a tool's input schema, in a
// stable order, or an error saying which property is wrong and why: the
// annotation must be a non-empty HTTP token, on a property of type string,
// integer or boolean, unique among the tool's (case-insensitively). The go-sdk
// refuses to serve a tool whose annotations break these rules.
func ParamHeaders(inputSchema json.RawMessage) ([]ParamHeader, error) {
	var root schemaProperty
	if len(inputSchema) == 0 || json.Unmarshal(inputSchema, &root) != nil {
		return nil, nil // not an object: the schema's own checks report it
	}
	var out []ParamHeader
	seen := map[string]string{}
	if err := collectParamHeaders(root.Properties, nil, seen, &out); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return strings.Join(out[i].Path, ".") < strings.Join(out[j].Path, ".") })
	return out, nil
}

func collectParamHeaders(props map[string]schemaProperty, prefix []string, seen map[string]string, out *[]ParamHeader) error {
	for name, prop := range props {
		path := append(append([]string(nil), prefix...), name)
		where := strings.Join(path, ".")
		if prop.XMCPHeader != nil {
			var header, typ string
			if json.Unmarshal(prop.XMCPHeader, &header) != nil || header == "" {
				return fmt.Errorf("input schema property %q: x-mcp-header must be a non-empty string (the suffix of its Mcp-Param- header)", where)
			}
			if i := strings.IndexFunc(header, func(c rune) bool { return !isTokenChar(c) }); i >= 0 {
				return fmt.Errorf("input schema property %q: x-mcp-header %q has %q, which an HTTP header name cannot contain (letters, digits and !#$%%&'*+-.^_`|~ only)",
					where, header, header[i:i+1])
			}
			_ = json.Unmarshal(prop.Type, &typ)
			if typ != "string" && typ != "integer" && typ != "boolean" {
				return fmt.Errorf("input schema property %q: x-mcp-header needs \"type\": string, integer or boolean (a header carries one value), not %s",
					where, strings.TrimSpace(string(prop.Type)))
			}
			if other, dup := seen[strings.ToLower(header)]; dup {
				return fmt.Errorf("input schema properties %q and %q: both use x-mcp-header %q (header names ignore case); give each its own", other, where, header)
			}
			seen[strings.ToLower(header)] = where
			*out = append(*out, ParamHeader{Path: path, Header: header})
		}
		if err := collectParamHeaders(prop.Properties, path, seen, out); err != nil {
			return err
		}
	}
	return nil
}

// isTokenChar: tchar of RFC 9110.
func isTokenChar(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

// checkParamHeaders checks the Mcp-Param-* headers of a 2026-07-28 tools/call
// against its arguments (params is the request's params); nil when they agree.
func checkParamHeaders(hdr http.Header, params json.RawMessage, bindings []ParamHeader) *jsonrpc.Error {
	if len(bindings) == 0 {
		return nil
	}
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil // the session answers malformed params
	}
	for _, b := range bindings {
		name := paramHeaderPrefix + b.Header
		values := hdr.Values(name)
		arg, present := argumentAt(p.Arguments, b.Path)
		where := strings.Join(b.Path, ".")
		if !present {
			if len(values) > 0 {
				return headerMismatch("%s header is set, but argument %q is absent or null; send the header only with the argument", name, where)
			}
			continue
		}
		if len(values) == 0 {
			return headerMismatch("missing %s header: argument %q is in the body, and this tool's input schema asks for it in the header too", name, where)
		}
		if len(values) > 1 {
			return headerMismatch("%s header is sent %d times; send it once", name, len(values))
		}
		got, ok := decodeParamHeader(strings.TrimSpace(values[0]))
		if !ok {
			return headerMismatch("%s header is not valid Base64 (=?base64?…?= needs the standard alphabet with its = padding)", name)
		}
		if !sameValue(got, arg) {
			return headerMismatch("%s header does not match argument %q of the body", name, where)
		}
	}
	return nil
}

func headerMismatch(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: sdk.CodeHeaderMismatch, Message: fmt.Sprintf(format, args...)}
}

// argumentAt is the raw value at path in args; false when absent or null.
func argumentAt(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := args[path[0]]
	for _, part := range path[1:] {
		var obj map[string]json.RawMessage
		if !ok || json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[part]
	}
	if !ok || strings.TrimSpace(string(cur)) == "null" {
		return nil, false
	}
	return cur, true
}

// decodeParamHeader decodes a =?base64?…?= value; other values are literal.
func decodeParamHeader(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, base64Prefix)
	if ok {
		inner, ok = strings.CutSuffix(inner, base64Suffix)
	}
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	return string(b), err == nil
}

// sameValue compares a header's (decoded) value with the body's argument: a
// string exactly, a boolean as true/false, an integer by value. Other JSON (an
// object, a fraction) cannot travel in a header and never matches.
func sameValue(header string, arg json.RawMessage) bool {
	var v any
	if json.Unmarshal(arg, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case string:
		return header == v
	case bool:
		return header == strconv.FormatBool(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > maxSafeInteger {
			return false
		}
		n, err := strconv.ParseFloat(header, 64)
		return err == nil && n == v
	}
	return false
}
