package starlang

import (
	"fmt"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// universeGuards replace the Starlark builtins whose result can be far larger than
// their arguments' own storage (text forms count shared values once per
// appearance; list(range(n)) materializes a lazy range). Each charges the budget,
// then calls the original, so behaviour and error messages are Starlark's.
var universeGuards = starlark.StringDict{}

func init() {
	text := func(thread *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) error {
		for _, a := range args {
			if _, ok := a.(starlark.String); ok && len(args) == 1 {
				continue // str("text") is the string itself
			}
			if err := chargeText(thread, a, 1); err != nil {
				return err
			}
		}
		return nil
	}
	// Builtins that build a collection charge what they built. The collection comes
	// from one that exists already (and was charged) or from a range, which guardRange
	// bounds, so the allocation before the charge is bounded too.
	for _, name := range []string{"str", "repr", "print"} {
		universeGuards[name] = guardBuiltin(starlark.Universe[name].(*starlark.Builtin), text, false)
	}
	for _, name := range []string{"list", "tuple", "sorted", "set", "dict", "enumerate", "reversed", "zip", "bytes"} {
		universeGuards[name] = collectGuard(starlark.Universe[name].(*starlark.Builtin))
	}
	universeGuards["range"] = starlark.NewBuiltin("range", guardRange)
	for name, on := range guardedMethods {
		if on {
			guards["$m."+name] = methodGuard(name)
		}
	}
	for _, set := range []starlark.StringDict{guards, universeGuards} {
		for name, v := range set {
			fixed[name] = v
		}
	}
}

// guardBuiltin wraps orig: pre charges before the call; when pre is nil the result's
// own size is charged after it.
func guardBuiltin(orig *starlark.Builtin, pre func(*starlark.Thread, starlark.Tuple, []starlark.Tuple) error, post bool) *starlark.Builtin {
	return starlark.NewBuiltin(orig.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if pre != nil {
			if err := pre(thread, args, kwargs); err != nil {
				return nil, err
			}
		}
		res, err := starlark.Call(thread, orig, args, kwargs)
		if err != nil {
			return nil, err
		}
		if post {
			if err := chargeThread(thread, shallowCost(res)); err != nil {
				return nil, err
			}
		}
		return res, nil
	})
}

// slotsPerElement is what one element of each collection builtin's result costs, in
// slots: zip builds a tuple per row besides the list, enumerate a pair, set and dict
// a hash table entry.
var slotsPerElement = map[string]int64{
	"list": 1, "tuple": 1, "sorted": 1, "reversed": 1, "set": 3, "dict": 4, "enumerate": 3, "bytes": 1,
}

// collectGuard wraps a builtin that builds a collection from its arguments. When
// their lengths are known (lists, ranges, dicts …) the result's size is charged
// before it is built, so that zip(*[l] * 1000) is refused rather than allocated;
// otherwise (lazy iterables) what was built is charged after.
func collectGuard(orig *starlark.Builtin) *starlark.Builtin {
	name := orig.Name()
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		known := true
		var rows int64 = -1
		for _, a := range args {
			n := int64(starlark.Len(a))
			if n < 0 {
				known = false
				break
			}
			if rows < 0 || (name == "zip" && n < rows) {
				rows = n
			} else if name != "zip" {
				rows = max(rows, n)
			}
		}
		if known && rows > 0 {
			per := slotsPerElement[name] * slot
			if name == "zip" {
				per = slot * int64(len(args)+1)
			}
			if name == "bytes" {
				per = 1
			}
			if err := chargeThread(thread, satMul(rows, per)); err != nil {
				return nil, err
			}
		}
		res, err := starlark.Call(thread, orig, args, kwargs)
		if err != nil {
			return nil, err
		}
		if !known {
			if err := chargeThread(thread, shallowCost(res)); err != nil {
				return nil, err
			}
		}
		return res, nil
	})
}

// guardRange is range, refusing ranges longer than the step limit: a loop over one
// would run out of steps anyway, and a builtin iterating over it (max, sum,
// list.extend, sorted …) would run for hours without ever reaching the step check.
func guardRange(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	r, err := starlark.Call(thread, starlark.Universe["range"], args, kwargs)
	if err != nil {
		return nil, err
	}
	st := limitsOf(thread)
	if n := starlark.Len(r); n >= 0 && uint64(n) > st.script.maxSteps {
		return nil, &limitError{kind: ErrStepLimit, msg: fmt.Sprintf(
			"%s has %d elements, more than the %d execution steps a script may take: it could never be iterated", r, n, st.script.maxSteps)}
	}
	return r, nil
}

// jsonModule is go.starlark.net's json module with decode bounded in nesting (its
// decoder recurses once per level, so a deep document exhausts the goroutine stack,
// which is fatal) and every function charging the memory budget.
var jsonModule = &starlarkstruct.Module{
	Name: "json",
	Members: starlark.StringDict{
		"encode":        jsonGuard("encode", chargeEncode(false)),
		"encode_indent": jsonGuard("encode_indent", chargeEncode(true)),
		"decode":        jsonGuard("decode", checkDecode),
		"indent":        jsonGuard("indent", chargeIndent),
	},
}

func jsonGuard(name string, pre func(*starlark.Thread, starlark.Tuple, []starlark.Tuple) error) *starlark.Builtin {
	orig := starjson.Module.Members[name].(*starlark.Builtin)
	return starlark.NewBuiltin(orig.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := pre(thread, args, kwargs); err != nil {
			return nil, err
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

// indentWidth is the extra text json.indent and encode_indent write per value.
func indentWidth(kwargs []starlark.Tuple) int64 {
	var n int64 = 1 // the newline
	for _, kv := range kwargs {
		if s, ok := kv[1].(starlark.String); ok {
			n += int64(len(s))
		}
	}
	return n
}

func chargeEncode(indented bool) func(*starlark.Thread, starlark.Tuple, []starlark.Tuple) error {
	return func(thread *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) error {
		if len(args) == 0 {
			return nil // the original reports the missing argument
		}
		st := limitsOf(thread)
		n, nodes, depth, err := estimateText(args[0], st.script.maxMemory)
		if err != nil {
			return err
		}
		if indented {
			n = satAdd(n, satMul(nodes, satMul(indentWidth(kwargs)+1, int64(depth+1))))
		}
		return st.charge(n)
	}
}

func chargeIndent(thread *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) error {
	if len(args) == 0 {
		return nil
	}
	s, ok := args[0].(starlark.String)
	if !ok {
		return nil
	}
	depth, values, _ := jsonNesting(string(s))
	return chargeThread(thread, satAdd(int64(len(s)), satMul(values, satMul(indentWidth(kwargs), int64(depth+1)))))
}

func checkDecode(thread *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) error {
	var text string
	switch {
	case len(args) > 0:
		s, ok := starlark.AsString(args[0])
		if !ok {
			return nil
		}
		text = s
	default:
		for _, kv := range kwargs {
			if k, _ := starlark.AsString(kv[0]); k == "x" {
				text, _ = starlark.AsString(kv[1])
			}
		}
	}
	if depth, _, at := jsonNesting(text); depth > DefaultMaxNesting {
		return &limitError{kind: ErrNesting, msg: fmt.Sprintf(
			"json.decode: the document is nested deeper than %d levels (at byte %d), the limit for Starlang values", DefaultMaxNesting, at)}
	}
	// A decoded value takes a few times the space of its text.
	return chargeThread(thread, 4*int64(len(text)))
}

// jsonNesting scans JSON text without decoding it: the deepest nesting of arrays and
// objects (strings skipped), the number of values (roughly: openings and commas),
// and the byte offset where the nesting first went past DefaultMaxNesting.
func jsonNesting(s string) (maxDepth int, values int64, at int) {
	depth := 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			values++
			if depth > maxDepth {
				maxDepth = depth
				if depth == DefaultMaxNesting+1 {
					at = i
				}
			}
		case ']', '}':
			depth--
		case ',':
			values++
		}
	}
	return maxDepth, values + 1, at
}
