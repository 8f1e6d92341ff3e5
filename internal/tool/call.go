package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"

	"github.com/arvenza/helix/internal/jsonnum"
	"github.com/arvenza/helix/internal/plainjson"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Call runs t with its arguments as JSON (absent or null: no arguments): it decodes
// them (integral numbers become int64), validates them (Validate), invokes the tool
// and shapes its result (Structured checked against OutputSchema, and mirrored as
// JSON text when the tool gave no content).
//
// Every failure — arguments that are not a JSON object or break the schema, an
// error or panic of Invoke, a result that breaks the output schema — is a Result
// with IsError set and a message that may be shown to the caller
// (exchange.ClientMessage: no file positions, no step names). cause is the error
// behind such a result, with every detail, for the caller's log; it is nil when
// the call succeeded or the tool itself reported the failure.
func (t *Tool) Call(ctx context.Context, rawArgs json.RawMessage) (res Result, cause error) {
	// The arguments, the failure and the result's shape are handled in functions
	// of their own, writing into res: this frame stays on the stack for the
	// whole call, which a connection's goroutine keeps at the size its deepest
	// request took it to.
	args, ok := t.arguments(rawArgs, &res)
	if !ok {
		return res, nil
	}
	if cause = t.invoke(ctx, args, &res); cause != nil {
		failed(&res, cause)
		return res, cause
	}
	t.shapeInto(&res)
	return res, nil
}

// arguments decodes and validates a call's arguments; when they are not
// valid, it writes the error result into res and returns false.
//
//go:noinline
func (t *Tool) arguments(rawArgs json.RawMessage, res *Result) (map[string]any, bool) {
	args, err := DecodeArguments(rawArgs)
	if err != nil {
		*res = ErrorResult(err.Error())
		return nil, false
	}
	if t.Validate != nil {
		args, err = safeValidate(t.Validate, args)
		if err != nil {
			*res = ErrorResult(fmt.Sprintf("invalid arguments for tool %s: %v", t.Name, err))
			return nil, false
		}
		if args == nil {
			args = map[string]any{}
		}
	}
	return args, true
}

// failed makes res the result of a call that failed with cause.
//
//go:noinline
func failed(res *Result, cause error) { *res = ErrorResult(exchange.ClientMessage(cause)) }

// shapeInto is shape applied to res in place.
//
//go:noinline
func (t *Tool) shapeInto(res *Result) { *res = t.shape(*res) }

func (t *Tool) invoke(ctx context.Context, args map[string]any, res *Result) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &engine.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	*res, err = t.Invoke(ctx, args)
	return err
}

// safeValidate runs a user-supplied validator; a panic in it is reported like any
// invalid input instead of taking the caller down.
func safeValidate(v func(map[string]any) (map[string]any, error), args map[string]any) (out map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("input validation panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return v(args)
}

// shape checks a successful result against the output schema. A tool with an
// output schema answers with Structured, as plain JSON values checked against it,
// and with its JSON text as content when it gave none, so that a client that
// validates (as the MCP TypeScript SDK does) never sees a mismatch it cannot explain.
func (t *Tool) shape(res Result) Result {
	if res.IsError || (t.outSchema == nil && res.Structured == nil) {
		return res
	}
	if res.Structured == nil {
		return ErrorResult(fmt.Sprintf("tool %s declares an output schema but gave no structured result", t.Name))
	}
	structured, err := plainJSON(res.Structured)
	if err != nil {
		return ErrorResult(fmt.Sprintf("tool %s declares an output schema but its reply is not JSON: %v", t.Name, err))
	}
	if t.outSchema != nil && (t.outQuick == nil || !t.outQuick.valid(structured)) {
		if err := t.outSchema.Validate(structured); err != nil {
			return ErrorResult(fmt.Sprintf("tool %s: reply does not match its output schema: %v", t.Name, err))
		}
	}
	res.Structured = structured
	if len(res.Content) == 0 {
		text, err := marshalText(structured)
		if err != nil {
			return ErrorResult(fmt.Sprintf("tool %s: %v", t.Name, err))
		}
		res.Content = []Content{Text(text)}
	}
	return res
}

// jsonBufs are the buffers of marshalText.
var jsonBufs = sync.Pool{New: func() any { return new([]byte) }}

// marshalText is v as JSON text without HTML escaping (<, > and & as themselves: the
// text copy of a result is read by a model, not put into HTML), keys sorted as
// json.Marshal sorts them; without reflection and allocations for plain JSON values
// (plainjson.AppendUnescaped).
func marshalText(v any) (string, error) {
	bp := jsonBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 { // a rare huge result does not stay pinned
			jsonBufs.Put(bp)
		}
	}()
	text, ok := plainjson.AppendUnescaped((*bp)[:0], v)
	*bp = text
	if ok {
		return string(text), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// plainJSON returns v as a plain JSON value (maps, slices, float64 …): strings and
// bytes holding JSON are decoded, other values are round-tripped through
// encoding/json so that schema validation sees what the caller will.
func plainJSON(v any) (any, error) {
	if isPlainJSON(v, 0) {
		// What the round trip would give back, value for value: skip it. (A Starlang
		// step's dict reply is of this kind, once per call.)
		return v, nil
	}
	var data []byte
	switch b := v.(type) {
	case string:
		data = []byte(b)
	case []byte:
		data = b
	case json.RawMessage:
		data = b
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%.80q: %w", string(data), err)
	}
	return out, nil
}

// maxPlainDepth bounds isPlainJSON's walk; deeper values take the round trip,
// whose decoder has limits of its own.
const maxPlainDepth = 64

// isPlainJSON reports whether encoding v with encoding/json and decoding the text
// into an any gives v back unchanged: nil, booleans, finite float64s, valid UTF-8
// strings, and maps (string keys of valid UTF-8) and slices of such values. Strings
// are not plain at the top level: plainJSON decodes them as JSON text.
func isPlainJSON(v any, depth int) bool {
	if depth > maxPlainDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		return depth > 0 && utf8.ValidString(x)
	case map[string]any:
		if x == nil {
			return false // encodes as null, decodes as nil, not as this typed nil
		}
		for k, e := range x {
			if !utf8.ValidString(k) || !isPlainJSON(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isPlainJSON(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// DecodeArguments turns a call's JSON arguments into the map a tool is invoked
// with. Integral numbers become int64 (not float64) so that steps can use them as
// counts and indexes; absent or null arguments give an empty map.
func DecodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		if _, tooLarge := errors.AsType[*jsonnum.RangeError](err); tooLarge {
			return nil, err
		}
		return nil, fmt.Errorf("tool arguments are not valid JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tool arguments must be a JSON object, got %s", jsonKind(v))
	}
	return m, nil
}

// BodyArguments turns an exchange body into tool arguments: a JSON object in any of
// the body's usual shapes (a decoded map, JSON text as a string or bytes); nil is no
// arguments. tool:// targets and workflows that declare input: read bodies with it.
func BodyArguments(body any) (map[string]any, error) {
	var text []byte
	switch b := body.(type) {
	case map[string]any:
		return b, nil
	case nil:
		return map[string]any{}, nil
	case string:
		text = []byte(b)
	case []byte:
		text = b
	case json.RawMessage:
		text = b
	case []any, int64, float64, int, bool:
		return nil, notAnObject(fmt.Sprintf("the input must be a JSON object, got %s", jsonKind(body)))
	default:
		return nil, fmt.Errorf("the input must be a JSON object, got %T", body)
	}
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(text)
	if err != nil {
		return nil, notAnObject("the input must be a JSON object; it is not valid JSON: " + err.Error())
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, notAnObject(fmt.Sprintf("the input must be a JSON object, got %s", jsonKind(v)))
	}
	return m, nil
}

// notAnObject is the caller's input that is no JSON object: invalid input (422 over
// HTTP), with the problem at the whole input.
func notAnObject(msg string) error {
	return &InvalidInputError{Msg: msg, Problems: []InputProblem{{Path: "", Message: msg}}}
}

// decodeJSON decodes one JSON value with integral numbers as int64 and other
// numbers as float64. It uses the parser the go-sdk and Helix's MCP transport
// decode messages with (segmentio/encoding), which reads integers straight into
// int64, and allocates far less than an encoding/json Decoder on every tool call.
func decodeJSON(data []byte) (any, error) {
	var v any
	rest, err := segjson.Parse(data, &v, segjson.UseInt64|segjson.UseNumber)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("invalid character %q after top-level value", rest[0])
	}
	// Integers beyond int64 and all other numbers are json.Numbers still; a number
	// beyond float64's range is refused, with where it is.
	if err := jsonnum.Normalize(&v); err != nil {
		return nil, fmt.Errorf("invalid arguments: %w", err)
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case int, int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}
