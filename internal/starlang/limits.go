package starlang

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Limits. A script's input comes from callers (tool arguments, request bodies), so
// nothing a caller sends may make one evaluation take the process down: not a deep
// JSON document (the decoder recurses, and a goroutine stack overflow is fatal, not a
// panic), not a repeat count ("x" * n), not a recursion depth.
const (
	// DefaultMaxNesting bounds the nesting of values: JSON given to json.decode, Go
	// bodies converted for the script, and values the script converts to text.
	DefaultMaxNesting = 1000
	// DefaultMaxMemory is the allocation budget of one evaluation when
	// Options.MaxMemory is 0 (helix.starlang_max_memory).
	DefaultMaxMemory = 64 << 20
	// DefaultMaxCallDepth bounds the Starlark call stack (recursion).
	DefaultMaxCallDepth = 1000
)

var (
	// ErrNesting is wrapped by errors about values nested deeper than DefaultMaxNesting.
	ErrNesting = errors.New("starlang: value nested too deeply")
	// ErrMemoryLimit is wrapped by the error of an evaluation that ran out of its
	// allocation budget.
	ErrMemoryLimit = errors.New("starlang: memory budget exceeded")
	// ErrCallDepth is wrapped by the error of an evaluation that recursed too deeply.
	ErrCallDepth = errors.New("starlang: call depth limit exceeded")
)

// limitError is a limit's message for the script's author and the kind of limit
// (one of the Err* sentinels) for errors.Is.
type limitError struct {
	msg  string
	kind error
}

func (e *limitError) Error() string { return e.msg }
func (e *limitError) Unwrap() error { return e.kind }

func nestingError(what string) error {
	return &limitError{kind: ErrNesting, msg: fmt.Sprintf("%s is nested deeper than %d levels, the limit for Starlang values", what, DefaultMaxNesting)}
}

// FormatBytes writes a byte count the way the documentation and the YAML do: "64 MiB".
func FormatBytes(n int64) string {
	const kib, mib, gib, tib = 1 << 10, 1 << 20, 1 << 30, 1 << 40
	switch {
	case n >= tib:
		return fmt.Sprintf("%.1f TiB", float64(n)/tib)
	case n >= gib && n%gib == 0:
		return fmt.Sprintf("%d GiB", n/gib)
	case n >= gib:
		return fmt.Sprintf("%.1f GiB", float64(n)/gib)
	case n >= mib && n%mib == 0:
		return fmt.Sprintf("%d MiB", n/mib)
	case n >= mib:
		return fmt.Sprintf("%.1f MiB", float64(n)/mib)
	case n >= kib && n%kib == 0:
		return fmt.Sprintf("%d KiB", n/kib)
	}
	return fmt.Sprintf("%d bytes", n)
}

// charge counts n more bytes against the evaluation's budget. The budget is
// cumulative: every value an operation creates counts, whether or not it is still
// referenced, because Starlark gives no way to know what was freed. Only operations
// that can allocate in proportion to their operands (repetition, concatenation,
// formatting, join, replace, conversion to text, list construction, json) are
// counted; the constant-size allocations of every other step are bounded by the step
// limit.
func (st *evalState) charge(n int64) error {
	if n <= 0 {
		return nil
	}
	limit := st.script.maxMemory
	if n > limit || st.used > limit-n {
		return &limitError{kind: ErrMemoryLimit, msg: fmt.Sprintf(
			"memory budget exceeded: this operation would bring the script's allocations to %s, over the limit of %s per evaluation (raise helix.starlang_max_memory if the script really needs it)",
			FormatBytes(satAdd(st.used, n)), FormatBytes(limit))}
	}
	st.used += n
	return nil
}

func chargeThread(thread *starlark.Thread, n int64) error {
	return limitsOf(thread).charge(n)
}

// defaultLimits serves threads that are not running a Script (tests evaluating with
// the builtins directly): default limits, and a budget no one can exhaust.
var defaultLimits = &Script{start: ":0:0", maxSteps: DefaultMaxSteps, maxMemory: math.MaxInt64, maxDepth: DefaultMaxCallDepth}

// limitsOf returns the evaluation state of thread, or a fresh unlimited one.
func limitsOf(thread *starlark.Thread) *evalState {
	if st, err := stateOf(thread); err == nil {
		return st
	}
	return &evalState{script: defaultLimits, inputText: -1}
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// slot is what one element costs in a list, tuple or dict: a Starlark value is an
// interface (two words).
const slot = 16

// seqCost is the cost of copying a string, bytes, list or tuple.
func seqCost(v starlark.Value) (int64, bool) {
	switch t := v.(type) {
	case starlark.String:
		return int64(len(t)), true
	case starlark.Bytes:
		return int64(len(t)), true
	case *starlark.List:
		return slot * int64(t.Len()), true
	case starlark.Tuple:
		return slot * int64(len(t)), true
	}
	return 0, false
}

// shallowCost estimates the memory of a value just created by a builtin (its own
// storage, not that of the elements it shares with its operands).
func shallowCost(v starlark.Value) int64 {
	switch t := v.(type) {
	case starlark.String, starlark.Bytes, *starlark.List, starlark.Tuple:
		n, _ := seqCost(t)
		return n
	case *starlark.Dict:
		return 4 * slot * int64(t.Len())
	case *starlark.Set:
		return 3 * slot * int64(t.Len())
	case starlark.Int:
		return intCost(t)
	}
	return 0
}

// intCost is the size of a big integer; small ones cost nothing.
func intCost(i starlark.Int) int64 {
	if _, ok := i.Int64(); ok {
		return 0
	}
	return int64(i.BigInt().BitLen()/8 + 1)
}

func intBits(i starlark.Int) int64 {
	if v, ok := i.Int64(); ok {
		if v < 0 {
			v = -v
		}
		var n int64
		for v != 0 {
			n++
			v >>= 1
		}
		return n
	}
	return int64(i.BigInt().BitLen())
}

// textBound estimates the length of the text form of v (str, repr, json.encode, %s),
// counting shared values each time they appear, as the text does. It stops once the
// estimate passes limit, so its cost is bounded by limit. A value nested deeper than
// DefaultMaxNesting is an error.
type textBound struct {
	limit int64
	n     int64
	nodes int64
	depth int
	deep  bool
	path  []starlark.Value // the containers being walked, to spot cycles
}

func estimateText(v starlark.Value, limit int64) (n, nodes int64, maxDepth int, err error) {
	w := &textBound{limit: limit}
	w.walk(v, 0)
	if w.deep {
		return w.n, w.nodes, w.depth, nestingError("the value")
	}
	return w.n, w.nodes, w.depth, nil
}

func (w *textBound) walk(v starlark.Value, depth int) {
	if w.n > w.limit || w.deep {
		return
	}
	if depth > DefaultMaxNesting {
		w.deep = true
		return
	}
	w.depth = max(w.depth, depth)
	w.nodes++
	switch t := v.(type) {
	case starlark.String:
		w.n += int64(len(t)) + 2
	case starlark.Bytes:
		w.n += int64(len(t)) + 3
	case starlark.Int:
		w.n += intBits(t)*3/10 + 2
	case starlark.Float:
		w.n += 24
	case starlark.Bool, starlark.NoneType:
		w.n += 5
	case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set, *headerDict:
		if _, isTuple := t.(starlark.Tuple); !isTuple {
			for _, p := range w.path {
				if p == t {
					w.n += 5 // the cycle is written as [...]
					return
				}
			}
			w.path = append(w.path, t)
			defer func() { w.path = w.path[:len(w.path)-1] }()
		}
		w.n += 2
		if m, ok := t.(starlark.IterableMapping); ok {
			for _, item := range m.Items() {
				w.walk(item[0], depth+1)
				w.walk(item[1], depth+1)
				w.n += 4
				if w.n > w.limit || w.deep {
					return
				}
			}
			return
		}
		iter := t.(starlark.Iterable).Iterate()
		defer iter.Done()
		var x starlark.Value
		for iter.Next(&x) {
			w.walk(x, depth+1)
			w.n += 2
			if w.n > w.limit || w.deep {
				return
			}
		}
	case interface{ textSize() int64 }: // content values (content.go)
		w.n += t.textSize()
	default:
		w.n += 32
	}
}

// chargeText charges the text form of v: an upper bound on str(v), computed without
// building it.
func chargeText(thread *starlark.Thread, v starlark.Value, times int64) error {
	st := limitsOf(thread)
	n, _, _, err := estimateText(v, st.script.maxMemory)
	if err != nil {
		return err
	}
	return st.charge(satMul(n, max(times, 1)))
}

// checkOutput bounds what an evaluation hands back (its value, the payload, a
// written body): its text form may exceed the input's only by the budget. Shared
// values count each time they appear, as they will when the body is serialized, so
// `[big] * 1000` cannot turn a small allocation into a huge reply.
func (st *evalState) checkOutput(v starlark.Value, what string) error {
	limit := st.script.maxMemory
	n, _, _, err := estimateText(v, limit)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n <= limit {
		return nil
	}
	if st.inputText < 0 {
		return &limitError{kind: ErrMemoryLimit, msg: fmt.Sprintf(
			"memory budget exceeded: %s would be larger than %s, the limit per evaluation (raise helix.starlang_max_memory if the script really needs it)", what, FormatBytes(limit))}
	}
	if n, _, _, _ = estimateText(v, satAdd(limit, st.inputText)); n <= satAdd(limit, st.inputText) {
		return nil
	}
	return &limitError{kind: ErrMemoryLimit, msg: fmt.Sprintf(
		"memory budget exceeded: %s would be larger than the input by more than %s, the limit per evaluation (raise helix.starlang_max_memory if the script really needs it)",
		what, FormatBytes(limit))}
}

// instrument rewrites a parsed script so that the operations that can allocate
// without bound go through guard builtins that charge the budget first, and so that
// every function checks the call depth on entry:
//
//	x + y, x * y, x % y, x | y, x << y   →  $add(x, y) …
//	x += y (x a name, or a[i] / a.f with plain operands)  →  x = $iadd(x, y) …
//	s.join(xs) and the other methods in guardedMethods   →  $m.join(s, xs)
//	def f(): body                        →  def f(): $enter(); body
//	lambda: e                            →  lambda: $enter() or e
//
// Names starting with '$' cannot be written in Starlark, so scripts cannot reach or
// shadow the guards.
func instrument(f *syntax.File) {
	in := &instrumenter{}
	f.Stmts = in.stmts(f.Stmts)
}

// instrumenter numbers the temporaries that augmented assignments to computed
// targets need ($lhs1, $lhs2 …).
type instrumenter struct{ temps int }

var binaryGuards = map[syntax.Token]string{
	syntax.PLUS:    "$add",
	syntax.STAR:    "$mul",
	syntax.PERCENT: "$mod",
	syntax.PIPE:    "$or",
	syntax.LTLT:    "$shl",
}

var augmentedGuards = map[syntax.Token]string{
	syntax.PLUS_EQ:    "$iadd",
	syntax.STAR_EQ:    "$mul",
	syntax.PERCENT_EQ: "$mod",
	syntax.PIPE_EQ:    "$ior",
	syntax.LTLT_EQ:    "$shl",
}

// guardedMethods are the methods of built-in types whose result can be much larger
// than one step's worth: they are called through $m.<name>.
var guardedMethods = map[string]bool{
	"join": true, "replace": true, "format": true, "extend": true, "split": true,
	"rsplit": true, "splitlines": true, "items": true, "keys": true, "values": true,
	"update": true, "union": true,
}

func guardCall(name string, pos syntax.Position, end syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{
		Fn:     &syntax.Ident{NamePos: pos, Name: name},
		Lparen: pos,
		Args:   args,
		Rparen: end,
	}
}

func (in *instrumenter) stmts(list []syntax.Stmt) []syntax.Stmt {
	out := list[:0:0]
	for _, s := range list {
		out = append(out, in.stmt(s)...)
	}
	return out
}

func (in *instrumenter) stmt(s syntax.Stmt) []syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.RHS = expr(s.RHS)
		if guard, ok := augmentedGuards[s.Op]; ok {
			return in.augmented(s, guard)
		}
		s.LHS = expr(s.LHS)
	case *syntax.ExprStmt:
		s.X = expr(s.X)
	case *syntax.IfStmt:
		s.Cond = expr(s.Cond)
		s.True = in.stmts(s.True)
		s.False = in.stmts(s.False)
	case *syntax.ForStmt:
		s.X = expr(s.X)
		s.Body = in.stmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = expr(s.Cond)
		s.Body = in.stmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = expr(s.Result)
		}
	case *syntax.DefStmt:
		for i, p := range s.Params {
			s.Params[i] = expr(p)
		}
		enter := &syntax.ExprStmt{X: guardCall("$enter", s.Def, s.Def)}
		s.Body = append([]syntax.Stmt{enter}, in.stmts(s.Body)...)
	}
	return []syntax.Stmt{s}
}

// augmented rewrites `target op= y` as `target = guard(target, y)`. A target whose
// operands are computed (a[f()] += y) first gets them into temporaries, so that they
// are evaluated once and in Starlark's order: operands, the current value, y.
func (in *instrumenter) augmented(s *syntax.AssignStmt, guard string) []syntax.Stmt {
	_, end := s.RHS.Span()
	lhs := s.LHS
	for {
		p, ok := lhs.(*syntax.ParenExpr)
		if !ok {
			break
		}
		lhs = p.X
	}
	var pre []syntax.Stmt
	if _, pure := clonePure(lhs); !pure {
		temp := func(e syntax.Expr) *syntax.Ident {
			in.temps++
			name := fmt.Sprintf("$lhs%d", in.temps)
			pre = append(pre, &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ,
				LHS: &syntax.Ident{NamePos: s.OpPos, Name: name}, RHS: expr(e)})
			return &syntax.Ident{NamePos: s.OpPos, Name: name}
		}
		switch t := lhs.(type) {
		case *syntax.IndexExpr:
			lhs = &syntax.IndexExpr{X: temp(t.X), Lbrack: t.Lbrack, Y: temp(t.Y), Rbrack: t.Rbrack}
		case *syntax.DotExpr:
			lhs = &syntax.DotExpr{X: temp(t.X), Dot: t.Dot, NamePos: t.NamePos, Name: t.Name}
		default:
			// Not an assignable target: leave it to the resolver's error.
			s.LHS = expr(s.LHS)
			return []syntax.Stmt{s}
		}
	}
	read, _ := clonePure(lhs)
	return append(pre, &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: lhs,
		RHS: guardCall(guard, s.OpPos, end, read, s.RHS)})
}

// clonePure returns a copy of an assignment target whose evaluation has no side
// effects (names, literals, attribute and index expressions of those), so that
// `a[i] += y` can become `a[i] = $iadd(a[i], y)` without evaluating anything twice
// that could tell.
func clonePure(e syntax.Expr) (syntax.Expr, bool) {
	switch e := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: e.NamePos, Name: e.Name}, true
	case *syntax.Literal:
		c := *e
		return &c, true
	case *syntax.ParenExpr:
		x, ok := clonePure(e.X)
		return &syntax.ParenExpr{Lparen: e.Lparen, X: x, Rparen: e.Rparen}, ok
	case *syntax.DotExpr:
		x, ok := clonePure(e.X)
		return &syntax.DotExpr{X: x, Dot: e.Dot, NamePos: e.NamePos, Name: &syntax.Ident{NamePos: e.Name.NamePos, Name: e.Name.Name}}, ok
	case *syntax.IndexExpr:
		x, ok1 := clonePure(e.X)
		y, ok2 := clonePure(e.Y)
		return &syntax.IndexExpr{X: x, Lbrack: e.Lbrack, Y: y, Rbrack: e.Rbrack}, ok1 && ok2
	}
	return nil, false
}

func exprs(list []syntax.Expr) {
	for i, e := range list {
		list[i] = expr(e)
	}
}

func isNumberLiteral(e syntax.Expr) bool {
	l, ok := e.(*syntax.Literal)
	return ok && (l.Token == syntax.INT || l.Token == syntax.FLOAT)
}

func expr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X = expr(e.X)
		e.Y = expr(e.Y)
		guard, ok := binaryGuards[e.Op]
		if !ok {
			return e
		}
		// Adding a number, or formatting one, cannot allocate more than a number.
		if (e.Op == syntax.PLUS && (isNumberLiteral(e.X) || isNumberLiteral(e.Y))) || (e.Op == syntax.PERCENT && isNumberLiteral(e.X)) {
			return e
		}
		_, end := e.Span()
		return guardCall(guard, e.OpPos, end, e.X, e.Y)
	case *syntax.CallExpr:
		e.Fn = expr(e.Fn)
		exprs(e.Args)
		if dot, ok := e.Fn.(*syntax.DotExpr); ok && guardedMethods[dot.Name.Name] {
			return &syntax.CallExpr{
				Fn:     &syntax.Ident{NamePos: dot.Name.NamePos, Name: "$m." + dot.Name.Name},
				Lparen: e.Lparen,
				Args:   append([]syntax.Expr{dot.X}, e.Args...),
				Rparen: e.Rparen,
			}
		}
	case *syntax.Comprehension:
		e.Body = expr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.X = expr(c.X)
			case *syntax.IfClause:
				c.Cond = expr(c.Cond)
			}
		}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = expr(e.Cond), expr(e.True), expr(e.False)
	case *syntax.DictExpr:
		for _, entry := range e.List {
			if de, ok := entry.(*syntax.DictEntry); ok {
				de.Key, de.Value = expr(de.Key), expr(de.Value)
			}
		}
	case *syntax.DictEntry:
		e.Key, e.Value = expr(e.Key), expr(e.Value)
	case *syntax.ListExpr:
		exprs(e.List)
	case *syntax.TupleExpr:
		exprs(e.List)
	case *syntax.ParenExpr:
		e.X = expr(e.X)
	case *syntax.DotExpr:
		e.X = expr(e.X)
	case *syntax.IndexExpr:
		e.X, e.Y = expr(e.X), expr(e.Y)
	case *syntax.SliceExpr:
		e.X = expr(e.X)
		if e.Lo != nil {
			e.Lo = expr(e.Lo)
		}
		if e.Hi != nil {
			e.Hi = expr(e.Hi)
		}
		if e.Step != nil {
			e.Step = expr(e.Step)
		}
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = expr(e.X)
		}
	case *syntax.LambdaExpr:
		for i, p := range e.Params {
			e.Params[i] = expr(p)
		}
		e.Body = &syntax.BinaryExpr{OpPos: e.Lambda, Op: syntax.OR, X: guardCall("$enter", e.Lambda, e.Lambda), Y: expr(e.Body)}
	}
	return e
}

// guards are the builtins instrument calls. They charge the budget before doing
// what the operator or method does.
var guards = starlark.StringDict{
	"$add":   starlark.NewBuiltin("+", guardAdd),
	"$mul":   starlark.NewBuiltin("*", guardMul),
	"$mod":   starlark.NewBuiltin("%", guardMod),
	"$or":    starlark.NewBuiltin("|", guardOr),
	"$shl":   starlark.NewBuiltin("<<", guardShl),
	"$iadd":  starlark.NewBuiltin("+=", guardIAdd),
	"$ior":   starlark.NewBuiltin("|=", guardIOr),
	"$enter": starlark.NewBuiltin("call", guardEnter),
}

func binaryArgs(args starlark.Tuple) (x, y starlark.Value) { return args[0], args[1] }

func guardAdd(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := binaryArgs(args)
	if err := chargeThread(thread, addCost(x, y)); err != nil {
		return nil, err
	}
	return starlark.Binary(syntax.PLUS, x, y)
}

func addCost(x, y starlark.Value) int64 {
	if a, ok := seqCost(x); ok {
		b, _ := seqCost(y)
		return satAdd(a, b)
	}
	if xi, ok := x.(starlark.Int); ok {
		if yi, ok := y.(starlark.Int); ok {
			return max(intCost(xi), intCost(yi))
		}
	}
	return 0
}

func guardMul(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := binaryArgs(args)
	if xi, ok := x.(starlark.Int); ok {
		if yi, ok := y.(starlark.Int); ok {
			if err := checkIntBits(intBits(xi) + intBits(yi)); err != nil {
				return nil, err
			}
		}
	}
	if err := chargeThread(thread, mulCost(x, y)); err != nil {
		return nil, err
	}
	return starlark.Binary(syntax.STAR, x, y)
}

func mulCost(x, y starlark.Value) int64 {
	xi, xInt := x.(starlark.Int)
	yi, yInt := y.(starlark.Int)
	switch {
	case xInt && yInt:
		return intResultCost(intBits(xi) + intBits(yi))
	case yInt:
		return repeatCost(x, yi)
	case xInt:
		return repeatCost(y, xi)
	}
	return 0
}

// MaxIntBits bounds the integers a script can compute. Arithmetic on huge integers
// is slow long before it is big (multiplying costs more than in proportion to the
// digits; BENCHMARKS.md, "Figures behind limits"), and no data-shaping script needs
// more than a few hundred digits.
const MaxIntBits = 1 << 16

// intResultCost is the cost of an integer result of the given size: nothing for
// machine-sized ones, its bytes up to MaxIntBits, and over the whole budget beyond.
func intResultCost(bits int64) int64 {
	switch {
	case bits <= 63:
		return 0
	}
	return bits/8 + 1
}

// checkIntBits refuses an integer result larger than MaxIntBits.
func checkIntBits(bits int64) error {
	if bits <= MaxIntBits {
		return nil
	}
	return &limitError{kind: ErrMemoryLimit, msg: fmt.Sprintf(
		"integer too large: the result would have about %d bits, more than the %d-bit limit for Starlang integers", bits, MaxIntBits)}
}

func repeatCost(seq starlark.Value, n starlark.Int) int64 {
	size, ok := seqCost(seq)
	if !ok || size == 0 {
		return 0
	}
	count, ok := n.Int64()
	if !ok {
		if n.Sign() < 0 {
			return 0
		}
		return math.MaxInt64
	}
	return satMul(size, count)
}

func guardMod(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := binaryArgs(args)
	if format, ok := x.(starlark.String); ok {
		if err := chargeFormat(thread, string(format), strings.Count(string(format), "%"), y); err != nil {
			return nil, err
		}
	}
	return starlark.Binary(syntax.PERCENT, x, y)
}

// chargeFormat charges a formatting operation: the format's text plus, for each of
// its n conversions, the largest argument's text form.
func chargeFormat(thread *starlark.Thread, format string, n int, args ...starlark.Value) error {
	st := limitsOf(thread)
	var largest int64
	for _, a := range args {
		if t, ok := a.(starlark.Tuple); ok && len(args) == 1 {
			for _, e := range t {
				size, _, _, err := estimateText(e, st.script.maxMemory)
				if err != nil {
					return err
				}
				largest = max(largest, size)
			}
			continue
		}
		size, _, _, err := estimateText(a, st.script.maxMemory)
		if err != nil {
			return err
		}
		largest = max(largest, size)
	}
	return st.charge(satAdd(int64(len(format)), satMul(int64(n), largest)))
}

func guardOr(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := binaryArgs(args)
	if err := chargeThread(thread, satAdd(shallowCost(x), shallowCost(y))); err != nil {
		return nil, err
	}
	return starlark.Binary(syntax.PIPE, x, y)
}

func guardShl(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := binaryArgs(args)
	if xi, ok := x.(starlark.Int); ok {
		if n, ok := y.(starlark.Int); ok {
			if shift, ok := n.Int64(); ok && shift > 0 && shift < 1<<20 {
				if err := checkIntBits(intBits(xi) + shift); err != nil {
					return nil, err
				}
				if err := chargeThread(thread, intResultCost(intBits(xi)+shift)); err != nil {
					return nil, err
				}
			}
		}
	}
	return starlark.Binary(syntax.LTLT, x, y)
}

// guardIAdd is x += y: a list is extended in place (other names for it see the new
// elements), anything else is x + y, as in Starlark.
func guardIAdd(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, y := binaryArgs(args)
	list, ok := x.(*starlark.List)
	if !ok {
		return guardAdd(thread, b, args, kwargs)
	}
	it, ok := y.(starlark.Iterable)
	if !ok {
		return guardAdd(thread, b, args, kwargs)
	}
	var elems []starlark.Value
	if n := starlark.Len(y); n >= 0 {
		if err := chargeThread(thread, slot*int64(n)); err != nil {
			return nil, err
		}
		elems = make([]starlark.Value, 0, n)
	}
	// Collect first: y may be the list itself (l += l).
	iter := it.Iterate()
	var e starlark.Value
	for iter.Next(&e) {
		elems = append(elems, e)
		if starlark.Len(y) < 0 && len(elems)%1024 == 0 {
			if err := chargeThread(thread, slot*1024); err != nil {
				iter.Done()
				return nil, err
			}
		}
	}
	iter.Done()
	for _, e := range elems {
		if err := list.Append(e); err != nil {
			return nil, fmt.Errorf("cannot apply += to %s: %w", list.Type(), err)
		}
	}
	return list, nil
}

// guardIOr is x |= y: a dict is updated in place, anything else is x | y.
func guardIOr(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, y := binaryArgs(args)
	xd, ok1 := x.(*starlark.Dict)
	yd, ok2 := y.(*starlark.Dict)
	if !ok1 || !ok2 {
		return guardOr(thread, b, args, kwargs)
	}
	if err := chargeThread(thread, shallowCost(yd)); err != nil {
		return nil, err
	}
	for _, item := range yd.Items() {
		if err := xd.SetKey(item[0], item[1]); err != nil {
			return nil, fmt.Errorf("cannot apply |= to dict: %w", err)
		}
	}
	return xd, nil
}

// guardEnter runs first in every function: recursion deeper than the limit is an
// error instead of a stack that grows until the process dies.
func guardEnter(thread *starlark.Thread, _ *starlark.Builtin, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	st := limitsOf(thread)
	// The frames are the module, the functions, and this builtin.
	if depth := thread.CallStackDepth() - 2; depth > st.script.maxDepth {
		return nil, &limitError{kind: ErrCallDepth, msg: fmt.Sprintf(
			"too much recursion: more than %d nested function calls (the Starlang call depth limit)", st.script.maxDepth)}
	}
	return starlark.None, nil
}

// methodGuard calls recv.name(args…) after charging what the call may allocate.
func methodGuard(name string) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		recv, rest := args[0], args[1:]
		ha, ok := recv.(starlark.HasAttrs)
		var fn starlark.Value
		var err error
		if ok {
			fn, err = ha.Attr(name)
		}
		if err != nil {
			return nil, err
		}
		if fn == nil {
			return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
		}
		pre, err := methodPreCost(thread, recv, name, rest, kwargs)
		if err != nil {
			return nil, err
		}
		if err := chargeThread(thread, pre); err != nil {
			return nil, err
		}
		before := starlark.Len(recv)
		res, err := starlark.Call(thread, fn, rest, kwargs)
		if err != nil {
			return nil, err
		}
		switch {
		case pre > 0:
			// Charged in advance.
		case name == "extend" || name == "update":
			err = chargeThread(thread, 4*slot*int64(max(starlark.Len(recv)-before, 0)))
		default:
			err = chargeThread(thread, shallowCost(res))
		}
		if err != nil {
			return nil, err
		}
		return res, nil
	})
}

func methodPreCost(thread *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
	s, isString := recv.(starlark.String)
	switch {
	case name == "join" && isString && len(args) == 1:
		it, ok := args[0].(starlark.Iterable)
		if !ok {
			return 0, nil
		}
		var n int64 = 0
		iter := it.Iterate()
		defer iter.Done()
		var e starlark.Value
		for i := 0; iter.Next(&e); i++ {
			if es, ok := e.(starlark.String); ok {
				n = satAdd(n, int64(len(es)))
			}
			if i > 0 {
				n = satAdd(n, int64(len(s)))
			}
		}
		return max(n, 1), nil
	case name == "replace" && isString && len(args) >= 2:
		old, ok1 := args[0].(starlark.String)
		repl, ok2 := args[1].(starlark.String)
		if !ok1 || !ok2 {
			return 0, nil
		}
		count := int64(strings.Count(string(s), string(old)))
		grow := max(int64(len(repl))-int64(len(old)), 0)
		return max(satAdd(int64(len(s)), satMul(count, grow)), 1), nil
	case name == "format" && isString:
		values := make([]starlark.Value, 0, len(args)+len(kwargs))
		values = append(values, args...)
		for _, kv := range kwargs {
			values = append(values, kv[1])
		}
		st := limitsOf(thread)
		var largest int64
		for _, v := range values {
			n, _, _, err := estimateText(v, st.script.maxMemory)
			if err != nil {
				return 0, err
			}
			largest = max(largest, n)
		}
		return max(satAdd(int64(len(s)), satMul(int64(strings.Count(string(s), "{")), largest)), 1), nil
	case name == "extend" && len(args) == 1:
		if n := starlark.Len(args[0]); n > 0 {
			return slot * int64(n), nil
		}
	}
	return 0, nil
}
