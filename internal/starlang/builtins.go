package starlang

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/arvenza/helix/pkg/exchange"
	starmath "go.starlark.net/lib/math"
	startime "go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// FailError is returned by [Script.Eval] when the script calls fail(msg). Steps treat
// it as the pipeline's failure message: Error returns exactly the message the script
// gave, with no position or prefix, because it is meant for the caller (an MCP client
// sees it as the tool's error text).
type FailError struct {
	Msg string // the message passed to fail
	Pos string // where fail was called, mapped to the YAML file: "helix.yaml:16:17"
}

func (e *FailError) Error() string { return e.Msg }

// ClientMessage is the message for the caller: the message passed to fail.
func (e *FailError) ClientMessage() string { return e.Msg }

// fixed holds the builtins every evaluation shares. They keep no state of their own:
// the exchange being evaluated reaches them through the thread (see evalState), so
// one set serves all concurrent evaluations.
var fixed = starlark.StringDict{
	"write":  starlark.NewBuiltin("write", builtinWrite),
	"fail":   starlark.NewBuiltin("fail", builtinFail),
	"sizeOf": starlark.NewBuiltin("sizeOf", builtinSizeOf),
	"sum":    starlark.NewBuiltin("sum", builtinSum),
	"header": starlark.NewBuiltin("header", builtinHeader),
	// progress and log report to the caller through the context's reporter (see
	// package report); without one they do nothing.
	"progress": starlark.NewBuiltin("progress", builtinProgress),
	"log":      starlark.NewBuiltin("log", builtinLog),
	"json":     jsonModule,
	// content builds tool answers beyond text and JSON (content.go).
	"content": contentModule,
	"time":    startime.Module,
	"math":    starmath.Module,
}

// dataNames are the predeclared names whose values come from the exchange.
var dataNames = []string{"payload", "body", "headers", "variables", "response_code"}

// isReserved reports whether name is predeclared by Starlang or Starlark itself; an
// exchange variable with such a name is only reachable through `variables`.
func isReserved(name string) bool {
	if _, ok := fixed[name]; ok {
		return true
	}
	for _, d := range dataNames {
		if d == name {
			return true
		}
	}
	return starlark.Universe.Has(name)
}

const stateKey = "helix.starlang.state"

// evalState is the per-evaluation state the builtins reach through the thread.
type evalState struct {
	script  *Script
	ctx     context.Context // the evaluation's context: progress and log report through it
	ex      *exchange.Exchange
	written bool
	used    int64 // bytes charged against script.maxMemory

	input     starlark.Value // the payload as given, for checkOutput
	inputText int64          // its text size, measured before the script runs (-1: unknown)

	// The evaluation's thread and how it ended, kept here so that run's hooks are
	// plain functions rather than closures allocated per run.
	thread    starlark.Thread
	stepLimit bool        // written and read on the evaluating goroutine only: the interpreter calls OnMaxSteps synchronously
	cancelled atomic.Bool // set by the context's AfterFunc, on another goroutine
}

func stateOf(thread *starlark.Thread) (*evalState, error) {
	st, ok := thread.Local(stateKey).(*evalState)
	if !ok {
		return nil, fmt.Errorf("starlang builtin called outside Script.Eval")
	}
	return st, nil
}

// callerPos is the position of the Starlark code calling the current builtin,
// directly or through other builtins (print is called through its guard).
func callerPos(thread *starlark.Thread) syntax.Position {
	for depth := 1; depth < thread.CallStackDepth(); depth++ {
		if p := thread.CallFrame(depth).Pos; p.IsValid() && p.Line >= 1 {
			return p
		}
	}
	return syntax.Position{}
}

// write(value, content_type="application/json") replaces the exchange body with
// value and sets Content-Type; content_type=None leaves the header unchanged.
func builtinWrite(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var value starlark.Value
	var ct starlark.Value = starlark.String("application/json")
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "value", &value, "content_type?", &ct); err != nil {
		return nil, err
	}
	st, err := stateOf(thread)
	if err != nil {
		return nil, err
	}
	var contentType string
	switch t := ct.(type) {
	case starlark.String:
		contentType = string(t)
	case starlark.NoneType:
	default:
		return nil, fmt.Errorf("%s: content_type must be a string or None, not %s", b.Name(), ct.Type())
	}
	if err := st.checkOutput(value, "the written body"); err != nil {
		return nil, err
	}
	v, err := FromStarlark(value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	st.ex.In().SetBody(v)
	if contentType != "" {
		st.ex.In().SetHeader(exchange.HeaderContentType, contentType)
	}
	st.written = true
	return starlark.None, nil
}

// fail(*args, sep=" ") stops the script with a *FailError. Like Starlark's own fail,
// strings are joined unquoted and other values in their Starlark form.
func builtinFail(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	sep := " "
	if err := starlark.UnpackArgs(b.Name(), nil, kwargs, "sep?", &sep); err != nil {
		return nil, err
	}
	var msg strings.Builder
	for i, v := range args {
		if i > 0 {
			msg.WriteString(sep)
		}
		if s, ok := starlark.AsString(v); ok {
			msg.WriteString(s)
		} else {
			msg.WriteString(v.String())
		}
	}
	fe := &FailError{Msg: msg.String()}
	if st, err := stateOf(thread); err == nil {
		fe.Pos = st.script.position(callerPos(thread))
	}
	return nil, fe
}

// sizeOf(x) is len(x) that also accepts None (0), so scripts can size optional fields.
func builtinSizeOf(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
		return nil, err
	}
	if x == starlark.None {
		return starlark.MakeInt(0), nil
	}
	if n := starlark.Len(x); n >= 0 {
		return starlark.MakeInt(n), nil
	}
	return nil, fmt.Errorf("%s: got %s, want string, bytes, list, tuple, dict, set or None", b.Name(), x.Type())
}

// sum(iterable, start=0) adds numbers (ints and floats, mixed as Starlark's + does).
func builtinSum(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var it starlark.Iterable
	var acc starlark.Value = starlark.MakeInt(0)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "iterable", &it, "start?", &acc); err != nil {
		return nil, err
	}
	if !isNumber(acc) {
		return nil, fmt.Errorf("%s: start is %s, want int or float", b.Name(), acc.Type())
	}
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for i := 0; iter.Next(&x); i++ {
		if !isNumber(x) {
			return nil, fmt.Errorf("%s: element %d is %s, want int or float", b.Name(), i, x.Type())
		}
		var err error
		if acc, err = starlark.Binary(syntax.PLUS, acc, x); err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
	}
	return acc, nil
}

func isNumber(v starlark.Value) bool {
	switch v.(type) {
	case starlark.Int, starlark.Float:
		return true
	}
	return false
}

// header(name) returns an in-message header, or None. The exact name is tried first,
// then a case-insensitive match, because HTTP header names arrive in whatever case
// the client used.
func builtinHeader(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &name); err != nil {
		return nil, err
	}
	st, err := stateOf(thread)
	if err != nil {
		return nil, err
	}
	v, ok := lookupHeader(st.ex.In().Headers(), name)
	if !ok {
		return starlark.None, nil
	}
	x, err := ToStarlark(v)
	if err != nil {
		return nil, fmt.Errorf("%s: header %q: %w", b.Name(), name, err)
	}
	return x, nil
}

func lookupHeader(h map[string]any, name string) (any, bool) {
	if v, ok := h[name]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// responseCode converts the HelixHttpResponseCode header, which components may set
// as any integer type or as text, into an int; anything else is None.
func responseCode(h map[string]any) starlark.Value {
	v, ok := lookupHeader(h, exchange.HeaderHTTPResponseCode)
	if !ok {
		return starlark.None
	}
	switch t := v.(type) {
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil {
			return starlark.None
		}
		return starlark.MakeInt(n)
	case float64:
		if t != float64(int64(t)) {
			return starlark.None
		}
		return starlark.MakeInt64(int64(t))
	}
	x, err := ToStarlark(v)
	if err != nil {
		return starlark.None
	}
	if _, ok := x.(starlark.Int); !ok {
		return starlark.None
	}
	return x
}
