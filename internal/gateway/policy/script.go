package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.starlark.net/starlark"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/exchange"
)

// A guard script is a Starlang script run on a call's arguments (the argument
// guard, which sees args) or on its result (the output guard, which sees result).
// Both see tool (the served name) and principal (a dict of name, roles and
// scopes; never the token), and may call reject(msg) to refuse the call with
// msg, and redact(value, pattern, replacement="***") to mask what a regular
// expression matches in every string inside value. What the script leaves in
// args or result (reassigned or changed in place) goes on.
//
// The names reach the script as exchange variables of an empty exchange, the
// way enrich steps hand variables to later scripts: Starlang then gives the
// script the step limit, memory budget and cancellation of every other script.
type guardScript struct {
	script *starlang.Script
	// value is the name of what the script inspects: "args" or "result".
	value string
}

// The names a guard script may read besides its value and Starlang's own.
var guardNames = []string{"tool", "principal", "reject", "redact"}

// compileGuard compiles the script src of a policy's arguments: (value "args")
// or result: (value "result") key, written at pos. A name the script reads that
// no guard provides is an error at its own position.
func compileGuard(src string, pos config.Pos, value string, opts *starlang.Options) (*guardScript, error) {
	s, err := starlang.Compile(pos.File, pos.Line, pos.Col, src, opts)
	if err != nil {
		return nil, err
	}
	known := append([]string{value}, guardNames...)
	for _, use := range s.Reads() {
		if !slices.Contains(known, use.Name) {
			return nil, fmt.Errorf("%s: undefined: %s (a policy's %s guard sees %s)", use.Pos, use.Name, value, strings.Join(known, ", "))
		}
	}
	return &guardScript{script: s, value: value}, nil
}

// guardRefusal is the outcome of a guard that refused: the script's message
// (reject or fail), or nil message for a script that failed otherwise.
type guardRefusal struct {
	msg string
	err error // the script's error, for the log
}

// run evaluates the guard on raw (the arguments or the result, as JSON) and
// returns what the script left in its value, as JSON; raw itself when the
// script changed nothing, so that an untouched call is relayed byte for byte.
func (g *guardScript) run(ctx context.Context, tool string, p *gateway.Principal, raw json.RawMessage) (json.RawMessage, *guardRefusal) {
	var in any = json.RawMessage(raw)
	if len(raw) == 0 || string(raw) == "null" {
		in = map[string]any{}
	}
	value, err := starlang.ToStarlark(in)
	if err != nil {
		return nil, &guardRefusal{err: fmt.Errorf("%s does not decode: %w", g.value, err)}
	}
	before, err := starlang.FromStarlark(value)
	if err != nil {
		return nil, &guardRefusal{err: err}
	}
	ex := exchange.New(exchange.InOut)
	ex.SetVariable(g.value, value)
	ex.SetVariable("tool", tool)
	ex.SetVariable("principal", principalDict(p))
	ex.SetVariable("reject", rejectBuiltin)
	ex.SetVariable("redact", redactBuiltin)
	res, err := g.script.Eval(ctx, ex)
	if err != nil {
		var fe *starlang.FailError
		if errors.As(err, &fe) {
			return nil, &guardRefusal{msg: fe.Msg, err: err}
		}
		return nil, &guardRefusal{err: err}
	}
	after := before
	if v, ok := res.Globals[g.value]; ok {
		after = v
	} else if after, err = starlang.FromStarlark(value); err != nil { // changed in place, or not
		return nil, &guardRefusal{err: err}
	}
	if g.value == "result" {
		if _, ok := after.(map[string]any); !ok {
			return nil, &guardRefusal{err: fmt.Errorf("the output guard left result a %T; it must stay a dict (content, structuredContent, isError)", after)}
		}
	}
	if reflect.DeepEqual(before, after) {
		return raw, nil
	}
	out, err := json.Marshal(after)
	if err != nil {
		return nil, &guardRefusal{err: fmt.Errorf("%s after the guard does not encode as JSON: %w", g.value, err)}
	}
	return out, nil
}

// principalDict is what a script sees of p: its name, roles and scopes. The ID
// and the token stay out of scripts (and so out of anything they print).
func principalDict(p *gateway.Principal) *starlark.Dict {
	d := starlark.NewDict(3)
	strs := func(xs []string) *starlark.List {
		l := make([]starlark.Value, len(xs))
		for i, x := range xs {
			l[i] = starlark.String(x)
		}
		return starlark.NewList(l)
	}
	var name string
	var roles, scopes []string
	if p != nil {
		name, roles, scopes = p.Name, p.Roles, p.Scopes
	}
	_ = d.SetKey(starlark.String("name"), starlark.String(name))
	_ = d.SetKey(starlark.String("roles"), strs(roles))
	_ = d.SetKey(starlark.String("scopes"), strs(scopes))
	return d
}

// reject(msg) refuses the call; msg is what the client is told.
var rejectBuiltin = starlark.NewBuiltin("reject", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var msg string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &msg); err != nil {
		return nil, err
	}
	return nil, &starlang.FailError{Msg: cut(msg, maxRejectMessage)}
})

// maxRejectMessage bounds what reject tells a client: a message, not a payload.
const maxRejectMessage = 1024

// Bounds of redact: a replacement is a mask, not text; a pattern that matches
// the empty string would put the replacement between every two characters.
const (
	maxReplacement   = 64
	maxRedactNesting = 64
	maxPatterns      = 256
)

// patterns caches the compiled patterns of redact (scripts name a few, as
// literals); past maxPatterns a pattern is compiled on every use instead.
var patterns = struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}{m: map[string]*regexp.Regexp{}}

func pattern(src string) (*regexp.Regexp, error) {
	patterns.Lock()
	re, ok := patterns.m[src]
	patterns.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("redact: pattern %q: %v", cut(src, 100), err)
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("redact: pattern %q matches the empty string; it must match what to mask", cut(src, 100))
	}
	patterns.Lock()
	if len(patterns.m) < maxPatterns {
		patterns.m[src] = re
	}
	patterns.Unlock()
	return re, nil
}

// redact(value, pattern, replacement="***") returns value with every match of
// pattern (Go regular expression syntax, RE2) replaced in every string inside
// it: dict values, list and tuple elements, at any depth. Dict keys and
// non-strings are kept. The replacement may name groups ($1, ${name}).
var redactBuiltin = starlark.NewBuiltin("redact", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var value starlark.Value
	var pat string
	replacement := "***"
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "value", &value, "pattern", &pat, "replacement?", &replacement); err != nil {
		return nil, err
	}
	if len(replacement) > maxReplacement {
		return nil, fmt.Errorf("redact: the replacement is %d bytes; at most %d", len(replacement), maxReplacement)
	}
	re, err := pattern(pat)
	if err != nil {
		return nil, err
	}
	return redactValue(value, re, replacement, 0)
})

func redactValue(v starlark.Value, re *regexp.Regexp, repl string, depth int) (starlark.Value, error) {
	if depth > maxRedactNesting {
		return nil, fmt.Errorf("redact: the value nests deeper than %d levels", maxRedactNesting)
	}
	switch t := v.(type) {
	case starlark.String:
		return starlark.String(re.ReplaceAllString(string(t), repl)), nil
	case *starlark.Dict:
		out := starlark.NewDict(t.Len())
		for _, item := range t.Items() {
			x, err := redactValue(item[1], re, repl, depth+1)
			if err != nil {
				return nil, err
			}
			if err := out.SetKey(item[0], x); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *starlark.List:
		elems := make([]starlark.Value, t.Len())
		for i := range elems {
			x, err := redactValue(t.Index(i), re, repl, depth+1)
			if err != nil {
				return nil, err
			}
			elems[i] = x
		}
		return starlark.NewList(elems), nil
	case starlark.Tuple:
		elems := make(starlark.Tuple, len(t))
		for i := range t {
			x, err := redactValue(t[i], re, repl, depth+1)
			if err != nil {
				return nil, err
			}
			elems[i] = x
		}
		return elems, nil
	}
	return v, nil
}

// cut shortens s to at most n bytes (on a rune boundary), marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
