package transport

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The go-sdk answers params of the wrong JSON type with its decoder's error, as an
// internal error (-32603) that names Go types and packages: `handling 'initialize':
// unmarshaling "…" into a *mcp.initializeParamsV2: json: cannot unmarshal "2025"
// into Go struct field mcp.initializeParamsV2.protocolVersion of type string`.
// A client can do nothing with that, and the server's implementation is none of its
// business; plainError rewords it as invalid params (-32602) naming the field and
// the JSON type it needs: `Invalid params of initialize: protocolVersion must be a
// string`.

var (
	goStructField = regexp.MustCompile(`Go struct field (\S+) of type (\S+)`)
	goValue       = regexp.MustCompile(`Go value of type (.+)$`)
	handlingWhat  = regexp.MustCompile(`^handling '([^']{1,100})'`)
)

// mentionsGoTypes tells whether msg is a decoding error worded with Go types.
func mentionsGoTypes(msg string) bool {
	return strings.Contains(msg, "Go struct field") || strings.Contains(msg, "Go value of type")
}

// plainError returns e reworded for the client when it names Go types (an
// internal error becomes invalid params; -32600 and -32700 keep their code);
// other errors are returned as they are.
func plainError(e *jsonrpc.Error) *jsonrpc.Error {
	if e == nil || !mentionsGoTypes(e.Message) {
		return e
	}
	of := ""
	if m := handlingWhat.FindStringSubmatch(e.Message); m != nil {
		of = " of " + m[1]
	}
	what := "a value has the wrong JSON type"
	if m := goStructField.FindStringSubmatch(e.Message); m != nil {
		what = fmt.Sprintf("%s must be %s", jsonFieldPath(m[1]), jsonKindOf(m[2]))
	} else if m := goValue.FindStringSubmatch(e.Message); m != nil {
		what = "the value must be " + jsonKindOf(m[1])
	}
	code, prefix := e.Code, "Invalid params"
	switch code {
	case jsonrpc.CodeInvalidRequest:
		prefix = "Invalid Request"
	case jsonrpc.CodeParseError:
		prefix = "Parse error"
	default:
		// The go-sdk's internal error for params it could not decode.
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: prefix + of + ": " + what}
}

// jsonFieldPath drops the package and struct type from a decoder's field path
// ("mcp.initializeParamsV2.capabilities.sampling" → "capabilities.sampling",
// "CallToolParamsRaw.name" → "name"): what is left are JSON field names.
func jsonFieldPath(p string) string {
	parts := strings.Split(p, ".")
	if len(parts) > 2 && (parts[0] == "mcp" || parts[0] == "jsonrpc" || parts[0] == "jsonrpc2") {
		parts = parts[1:]
	}
	if len(parts) > 1 {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}

// jsonKindOf names the JSON type that decodes into Go type t.
func jsonKindOf(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint") || strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case t == "interface" || strings.HasPrefix(t, "interface {"):
		return "a JSON value"
	}
	return "an object" // maps and structs
}
