package starlang

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/arvenza/helix/pkg/exchange"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// DefaultMaxSteps is the step limit used when Options.MaxSteps is 0. A step is one
// Starlark bytecode instruction; a million is far beyond any data-shaping script
// and stops an endless loop within a fraction of a second.
const DefaultMaxSteps = 1_000_000

// ErrStepLimit is wrapped by the error of an evaluation that ran out of steps.
var ErrStepLimit = errors.New("starlang: step limit exceeded")

// Options tunes compilation. A nil *Options means defaults.
type Options struct {
	MaxSteps     uint64 // execution steps per evaluation; 0 means DefaultMaxSteps
	MaxMemory    int64  // allocation budget per evaluation in bytes; 0 means DefaultMaxMemory
	MaxCallDepth int    // nested function calls; 0 means DefaultMaxCallDepth
}

// Error is a compile or runtime error of a script, located in the YAML file. Error()
// is "Pos: Msg"; Err is the underlying cause (a go.starlark.net error, ErrStepLimit,
// or the context's error), reachable with errors.Is and errors.As.
type Error struct {
	Pos string // "helix.yaml:14:13"
	Msg string
	Err error
}

func (e *Error) Error() string { return e.Pos + ": " + e.Msg }

// ClientMessage is the error without its position, for whoever sent the exchange (an
// MCP client, an HTTP caller): file names and YAML positions are for the log only.
func (e *Error) ClientMessage() string { return e.Msg }
func (e *Error) Unwrap() error         { return e.Err }

// Script is a compiled Starlang script. It is immutable: one Script may be evaluated
// by any number of goroutines at once.
type Script struct {
	file      string
	line, col int
	start     string // "file:line:col" of the script's start, formatted once: every run names it
	src       string
	prog      *starlark.Program
	maxSteps  uint64
	maxMemory int64
	maxDepth  int
	hasExpr   bool       // the last statement is an expression, captured as valueName
	seeded    []string   // predeclared names the script assigns at top level
	free      []freeName // names that must be exchange variables
	globalSet []string   // names the script assigns at top level, for suggestions
	builtins  []string   // names of fixed (builtins, guards) the program reads
	// dataRead are the exchange-data names (dataNames) the program reads or seeds:
	// headers, variables and response_code are only built for a script that can see
	// them (most transforms read the payload only).
	dataRead map[string]bool
	// direct is the script as a data expression evaluated without the interpreter
	// (direct.go), nil when it is not one; directSteps bounds its step count.
	direct      dataExpr
	directSteps uint64
	// pure: the script is one expression without calls, so it cannot change the
	// payload in place nor assign globals; EvalValue then skips converting them.
	pure bool
}

// freeName is a name the script reads but neither defines nor gets from Starlang.
type freeName struct {
	name string
	pos  syntax.Position
}

// Synthetic names start with '$', which no Starlark identifier can contain, so a
// script can neither read nor clobber them.
const valueName = "$value"

func seedName(name string) string { return "$" + name }

var fileOptions = &syntax.FileOptions{
	Set:             true,
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
	Recursion:       true,
}

// Compile parses and compiles src once, at load time. file, line and col locate the
// script's first character in the YAML file (line is the line of the first script
// line, col its column); every error position is mapped through them. Because YAML
// block scalars (`starlang: |`) strip the same indentation from every line, col is
// added to the columns of all lines, not just the first.
//
// Compile reports syntax errors and load statements. Names that are not defined
// anywhere are not compile errors: they may be exchange variables, which are only
// known when the script runs (see [Script.Eval]).
func Compile(file string, line, col int, src string, opts *Options) (*Script, error) {
	if file == "" {
		file = "<starlang>"
	}
	s := &Script{file: file, line: max(line, 1), col: max(col, 1), src: src,
		maxSteps: DefaultMaxSteps, maxMemory: DefaultMaxMemory, maxDepth: DefaultMaxCallDepth}
	s.start = fmt.Sprintf("%s:%d:%d", s.file, s.line, s.col)
	if opts != nil && opts.MaxSteps > 0 {
		s.maxSteps = opts.MaxSteps
	}
	if opts != nil && opts.MaxMemory > 0 {
		s.maxMemory = opts.MaxMemory
	}
	if opts != nil && opts.MaxCallDepth > 0 {
		s.maxDepth = opts.MaxCallDepth
	}
	code := rewriteConcat(src)

	// First pass: learn which names the script assigns at top level, so that those
	// shadowing a predeclared name can be seeded with it in the second pass.
	f, err := fileOptions.Parse(file, code, 0)
	if err != nil {
		return nil, s.compileError(err)
	}
	for _, stmt := range f.Stmts {
		if l, ok := stmt.(*syntax.LoadStmt); ok {
			return nil, &Error{Pos: s.position(l.Load), Msg: "load statements are not supported: a Starlang script cannot import other files"}
		}
	}
	if err := resolve.File(f, isPredeclared, starlark.Universe.Has); err != nil {
		return nil, s.compileError(err)
	}
	s.pure = isPureExpression(f)
	if direct, nodes := compileDirect(f); direct != nil && directMaxSteps(nodes) < s.maxSteps {
		s.direct, s.directSteps = direct, directMaxSteps(nodes)
	}
	for _, b := range f.Module.(*resolve.Module).Globals {
		name := b.First.Name
		s.globalSet = append(s.globalSet, name)
		if isReserved(name) {
			s.seeded = append(s.seeded, name)
		}
	}

	// Second pass on a fresh tree (resolving mutates it): seed, capture the value of
	// the last expression, compile.
	f, err = fileOptions.Parse(file, code, 0)
	if err != nil {
		return nil, s.compileError(err)
	}
	if n := len(f.Stmts); n > 0 {
		if es, ok := f.Stmts[n-1].(*syntax.ExprStmt); ok {
			start, _ := es.X.Span()
			f.Stmts[n-1] = &syntax.AssignStmt{
				OpPos: start,
				Op:    syntax.EQ,
				LHS:   &syntax.Ident{NamePos: start, Name: valueName},
				RHS:   es.X,
			}
			s.hasExpr = true
		}
	}
	if len(s.seeded) > 0 {
		pos := syntax.MakePosition(&s.file, 1, 1)
		seeds := make([]syntax.Stmt, 0, len(s.seeded)+len(f.Stmts))
		for _, name := range s.seeded {
			seeds = append(seeds, &syntax.AssignStmt{
				OpPos: pos,
				Op:    syntax.EQ,
				LHS:   &syntax.Ident{NamePos: pos, Name: name},
				RHS:   &syntax.Ident{NamePos: pos, Name: seedName(name)},
			})
		}
		f.Stmts = append(seeds, f.Stmts...)
	}
	instrument(f)
	s.prog, err = starlark.FileProgram(f, isPredeclared)
	if err != nil {
		return nil, s.compileError(err)
	}
	seen := map[string]bool{}
	s.dataRead = map[string]bool{}
	for _, name := range s.seeded {
		s.dataRead[name] = true // its seed reads the predeclared value
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		id, ok := n.(*syntax.Ident)
		if !ok || seen[id.Name] {
			return true
		}
		if _, builtin := fixed[id.Name]; builtin {
			if b, ok := id.Binding.(*resolve.Binding); ok && b.Scope == resolve.Predeclared {
				seen[id.Name] = true
				s.builtins = append(s.builtins, id.Name)
			}
			return true
		}
		if strings.HasPrefix(id.Name, "$") {
			return true
		}
		if isReserved(id.Name) {
			if b, ok := id.Binding.(*resolve.Binding); ok && b.Scope == resolve.Predeclared {
				s.dataRead[id.Name] = true
			}
			return true
		}
		if b, ok := id.Binding.(*resolve.Binding); ok && b.Scope == resolve.Predeclared {
			seen[id.Name] = true
			s.free = append(s.free, freeName{name: id.Name, pos: id.NamePos})
		}
		return true
	})
	return s, nil
}

// isPredeclared tells the resolver which names are not Starlark universals: every
// Starlang builtin (including our fail, which replaces Starlark's), and every other
// name, because any name may turn out to be an exchange variable.
func isPredeclared(name string) bool {
	if _, ok := fixed[name]; ok {
		return true
	}
	return !starlark.Universe.Has(name)
}

// Source returns the script as written (before `++` is rewritten).
func (s *Script) Source() string { return s.src }

// Variables returns, in order of first use, the names the script reads without
// defining them, which Eval looks up as exchange variables. A config linter can check
// that an earlier step (enrich) sets each of them.
func (s *Script) Variables() []string {
	names := make([]string, len(s.free))
	for i, fn := range s.free {
		names[i] = fn.name
	}
	return names
}

// NameUse is a name a script reads without defining it, and where it first does
// (mapped to the YAML file: "helix.yaml:14:13").
type NameUse struct {
	Name string
	Pos  string
}

// Reads returns, in order of first use, the names the script reads without defining
// them (see [Script.Variables]) with their positions, so that a loader can report a
// name that no step defines where it is written, before anything runs.
func (s *Script) Reads() []NameUse {
	out := make([]NameUse, len(s.free))
	for i, fn := range s.free {
		out[i] = NameUse{Name: fn.name, Pos: s.position(fn.pos)}
	}
	return out
}

// Assigns returns the names the script assigns at top level: for an enrich step, the
// exchange variables it may set.
func (s *Script) Assigns() []string { return append([]string(nil), s.globalSet...) }

// Predeclared returns the names every script can read without defining them:
// Starlang's builtins, the exchange's data (payload, headers …) and Starlark's
// universe. Loaders use it to suggest a name for a misspelt one.
func Predeclared() []string {
	names := append([]string{}, dataNames...)
	for name := range fixed {
		if !strings.HasPrefix(name, "$") {
			names = append(names, name)
		}
	}
	for _, name := range starlark.Universe.Keys() {
		if _, dup := fixed[name]; !dup {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Result is what one evaluation produced. Steps decide what to use: typically the
// body is left alone when Written, replaced by Value when HasValue, and otherwise
// replaced by Payload (which carries in-place mutations).
type Result struct {
	Value    any            // Go value of the last expression (nil if None / no expression)
	HasValue bool           // last statement was an expression whose value is not None
	Globals  map[string]any // top-level assignments made by the script (Go values), for enrich
	Written  bool           // write() was called
	Payload  any            // Go value of `payload` after evaluation (reflects in-place mutation)
}

// outcome is an evaluation's raw Starlark state, converted only as far as the caller needs.
type outcome struct {
	st      *evalState
	pre     starlark.StringDict
	globals starlark.StringDict
	value   starlark.Value
	written bool
}

// Eval runs the script against ex on a fresh thread. It reads ex's body, headers and
// variables, and write() changes ex's body and Content-Type; the caller must own ex
// for the duration. Eval returns a *FailError when the script calls fail, and an
// *Error for anything else (undefined names, runtime errors, the step limit,
// cancellation by ctx).
func (s *Script) Eval(ctx context.Context, ex *exchange.Exchange) (*Result, error) {
	return s.eval(ctx, ex, true)
}

// EvalValue runs the script like Eval for a caller that uses its value and Written
// only (transform, set-body, split): when the script is one expression without calls
// it cannot change the payload or assign globals, so Result.Payload and
// Result.Globals are left nil instead of being converted back to Go values. For any
// other script it is Eval.
func (s *Script) EvalValue(ctx context.Context, ex *exchange.Exchange) (*Result, error) {
	return s.eval(ctx, ex, !s.pure)
}

func (s *Script) eval(ctx context.Context, ex *exchange.Exchange, full bool) (*Result, error) {
	if s.direct != nil && ex != nil {
		body := ex.In().Body()
		if v, ok := s.evalDirect(ctx, body); ok {
			res := &Result{Value: v, HasValue: v != nil}
			if full {
				// The unchanged body after the interpreter's round trip; plainBody
				// made sure it converts.
				res.Globals = map[string]any{}
				res.Payload, _ = fromBody(body)
			}
			return res, nil
		}
	}
	out, err := s.run(ctx, ex)
	if err != nil {
		return nil, err
	}
	res := &Result{Written: out.written}
	if out.value != starlark.None {
		if err := out.st.checkOutput(out.value, "the script's value"); err != nil {
			return nil, s.outputError(err)
		}
		if res.Value, err = FromStarlark(out.value); err != nil {
			return nil, &Error{Pos: s.position(syntax.Position{}), Msg: "script value: " + err.Error(), Err: err}
		}
		res.HasValue = true
	}
	if full {
		res.Globals = map[string]any{}
		for name, v := range out.globals {
			if strings.HasPrefix(name, "$") || v == nil || !isData(v) {
				continue
			}
			if seed, ok := out.pre[seedName(name)]; ok && sameValue(v, seed) {
				continue // a seeded name the script did not actually reassign
			}
			g, err := FromStarlark(v)
			if err != nil {
				return nil, &Error{Pos: s.position(syntax.Position{}), Msg: fmt.Sprintf("global %s: %v", name, err), Err: err}
			}
			res.Globals[name] = g
		}
	}
	payload := out.pre["payload"]
	if g, ok := out.globals["payload"]; ok && g != nil {
		payload = g
	}
	if err := out.st.checkOutput(payload, "the payload"); err != nil {
		return nil, s.outputError(err)
	}
	if !full {
		return res, nil
	}
	if res.Payload, err = FromStarlark(payload); err != nil {
		return nil, &Error{Pos: s.position(syntax.Position{}), Msg: "payload: " + err.Error(), Err: err}
	}
	return res, nil
}

// isPureExpression reports whether f is a single expression with no calls: it can
// neither change a value in place nor define globals.
func isPureExpression(f *syntax.File) bool {
	if len(f.Stmts) != 1 {
		return false
	}
	if _, ok := f.Stmts[0].(*syntax.ExprStmt); !ok {
		return false
	}
	pure := true
	syntax.Walk(f, func(n syntax.Node) bool {
		if _, call := n.(*syntax.CallExpr); call {
			pure = false
		}
		return pure
	})
	return pure
}

// EvalBool runs the script like Eval and reports the Starlark truth of its value, for
// choice conditions: a script without a final expression, or whose value is None, is
// false.
func (s *Script) EvalBool(ctx context.Context, ex *exchange.Exchange) (bool, error) {
	out, err := s.run(ctx, ex)
	if err != nil {
		return false, err
	}
	return bool(out.value.Truth()), nil
}

func (s *Script) run(ctx context.Context, ex *exchange.Exchange) (*outcome, error) {
	if ex == nil {
		return nil, &Error{Pos: s.position(syntax.Position{}), Msg: "no exchange to evaluate the script against"}
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Pos: s.position(syntax.Position{}), Msg: "script not run: " + err.Error(), Err: err}
	}
	pre, err := s.predeclared(ex)
	if err != nil {
		return nil, err
	}
	// The input's size is measured before the script can change it in place: what the
	// evaluation hands back may exceed it by the budget only (see checkOutput).
	st := &evalState{script: s, ctx: ctx, ex: ex, input: pre["payload"]}
	st.inputText, _, _, _ = estimateText(st.input, math.MaxInt64/4)
	thread := &st.thread
	thread.Name = s.start
	thread.Print = printToLog
	thread.SetLocal(stateKey, st)
	thread.SetMaxExecutionSteps(s.maxSteps)
	thread.OnMaxSteps = stopAtStepLimit
	stop := func() bool { return false }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, st.cancel)
	}
	globals, err := s.prog.Init(thread, pre)
	stop()
	if err != nil {
		return nil, s.runtimeError(ctx, err, st.stepLimit, st.cancelled.Load())
	}
	out := &outcome{st: st, pre: pre, globals: globals, value: starlark.None, written: st.written}
	if v, ok := globals[valueName]; ok && v != nil && s.hasExpr {
		out.value = v
	}
	return out, nil
}

// printToLog is the threads' print: a log line at the script's position.
func printToLog(t *starlark.Thread, msg string) {
	st, err := stateOf(t)
	if err != nil {
		return
	}
	slog.InfoContext(st.ctx, "starlang print", "pos", st.script.position(callerPos(t)), "msg", msg)
}

// stopAtStepLimit is the threads' OnMaxSteps.
func stopAtStepLimit(t *starlark.Thread) {
	if st, err := stateOf(t); err == nil {
		st.stepLimit = true
	}
	t.Cancel("step limit reached")
}

// cancel stops the evaluation when its context ends.
func (st *evalState) cancel() {
	st.cancelled.Store(true)
	st.thread.Cancel("context done")
}

// predeclared builds the names a script sees, from the exchange.
func (s *Script) predeclared(ex *exchange.Exchange) (starlark.StringDict, error) {
	in := ex.In()
	pre := make(starlark.StringDict, len(s.builtins)+len(dataNames)+len(s.free)+len(s.seeded))
	for _, k := range s.builtins {
		pre[k] = fixed[k]
	}
	start := s.position(syntax.Position{})
	ct, _ := lookupHeader(in.Headers(), exchange.HeaderContentType)
	payload, err := bodyToStarlark(in.Body(), exchange.Stringify(ct))
	if err != nil {
		return nil, &Error{Pos: start, Msg: "cannot give the body to the script as payload: " + err.Error(), Err: err}
	}
	pre["payload"] = payload
	pre["body"] = payload
	if s.dataRead["headers"] {
		headers, err := ToStarlark(in.Headers())
		if err != nil {
			return nil, &Error{Pos: start, Msg: "cannot give the headers to the script: " + err.Error(), Err: err}
		}
		pre["headers"] = newHeaderDict(headers.(*starlark.Dict))
	}
	if s.dataRead["response_code"] {
		pre["response_code"] = responseCode(in.Headers())
	}
	if !s.dataRead["variables"] && len(s.free) == 0 {
		return s.seed(pre), nil
	}
	vars := ex.Variables()
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	varDict := starlark.NewDict(len(vars))
	for _, name := range names {
		x, err := ToStarlark(vars[name])
		if err != nil {
			return nil, &Error{Pos: start, Msg: fmt.Sprintf("cannot give variable %q to the script: %v", name, err), Err: err}
		}
		if err := varDict.SetKey(starlark.String(name), x); err != nil {
			return nil, &Error{Pos: start, Msg: err.Error(), Err: err}
		}
	}
	pre["variables"] = varDict
	for _, fn := range s.free {
		x, found, err := varDict.Get(starlark.String(fn.name))
		if err != nil || !found {
			return nil, s.undefined(fn, names)
		}
		pre[fn.name] = x
	}
	return s.seed(pre), nil
}

// seed gives each predeclared name the script assigns at top level its seed, the
// value the name had before the script ran (see Compile).
func (s *Script) seed(pre starlark.StringDict) starlark.StringDict {
	for _, name := range s.seeded {
		if v, ok := pre[name]; ok {
			pre[seedName(name)] = v
		} else if v, ok := fixed[name]; ok {
			pre[seedName(name)] = v
		} else {
			pre[seedName(name)] = starlark.Universe[name]
		}
	}
	return pre
}

func (s *Script) undefined(fn freeName, variables []string) error {
	msg := fmt.Sprintf("undefined: %s (not a builtin, not assigned by the script, and the exchange has no variable %q", fn.name, fn.name)
	candidates := append(append([]string{}, variables...), s.globalSet...)
	candidates = append(candidates, dataNames...)
	for name := range fixed {
		candidates = append(candidates, name)
	}
	candidates = append(candidates, starlark.Universe.Keys()...)
	if near := nearest(fn.name, candidates); near != "" {
		msg += fmt.Sprintf("; did you mean %s?", near)
	}
	return &Error{Pos: s.position(fn.pos), Msg: msg + ")"}
}

// runtimeError maps an interpreter error to the YAML file.
func (s *Script) runtimeError(ctx context.Context, err error, stepLimit, cancelled bool) error {
	var pos syntax.Position
	msg := err.Error()
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		msg = ee.Msg
		// The innermost frame is the builtin that failed, which has no position;
		// report the innermost Starlark code instead.
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if p := ee.CallStack[i].Pos; s.inScript(p) {
				pos = p
				break
			}
		}
	}
	var fe *FailError
	if errors.As(err, &fe) {
		if fe.Pos == "" {
			fe.Pos = s.position(pos)
		}
		return fe
	}
	at := s.position(pos)
	switch {
	case stepLimit:
		return &Error{Pos: at, Msg: fmt.Sprintf("script stopped after %d execution steps (an endless loop?)", s.maxSteps), Err: ErrStepLimit}
	case cancelled && ctx.Err() != nil:
		return &Error{Pos: at, Msg: "script stopped: " + ctx.Err().Error(), Err: ctx.Err()}
	}
	return &Error{Pos: at, Msg: msg, Err: err}
}

// outputError reports a limit hit by the value an evaluation returns.
func (s *Script) outputError(err error) error {
	return &Error{Pos: s.position(syntax.Position{}), Msg: err.Error(), Err: err}
}

func (s *Script) compileError(err error) error {
	var se syntax.Error
	if errors.As(err, &se) && s.inScript(se.Pos) {
		p := explainSyntaxError(s.src, lexPos{int(se.Pos.Line), int(se.Pos.Col)}, se.Msg, s.lineCol)
		file := s.file
		return &Error{Pos: s.position(syntax.MakePosition(&file, int32(p.at.line), int32(p.at.col))), Msg: p.msg, Err: err}
	}
	if errors.As(err, &se) {
		return &Error{Pos: s.position(se.Pos), Msg: se.Msg, Err: err}
	}
	var list resolve.ErrorList
	if errors.As(err, &list) {
		errs := make([]error, len(list))
		for i, e := range list {
			errs[i] = &Error{Pos: s.position(e.Pos), Msg: e.Msg, Err: e}
		}
		return errors.Join(errs...)
	}
	return &Error{Pos: s.position(syntax.Position{}), Msg: err.Error(), Err: err}
}

// position maps a position in the script to the YAML file. Script line N is YAML line
// line+N-1; columns are shifted by col-1 on every line (see Compile). An unknown
// position is the script's start.
func (s *Script) position(p syntax.Position) string {
	if !s.inScript(p) {
		return s.start
	}
	line := s.line + int(p.Line) - 1
	if p.Col <= 0 {
		return fmt.Sprintf("%s:%d", s.file, line)
	}
	return fmt.Sprintf("%s:%d:%d", s.file, line, s.col+int(p.Col)-1)
}

// lineCol renders script position p as its "line:col" in the YAML file.
func (s *Script) lineCol(p lexPos) string {
	return fmt.Sprintf("%d:%d", s.line+p.line-1, s.col+p.col-1)
}

// inScript reports whether p is a position in this script, rather than unknown or
// inside a builtin (go.starlark.net gives builtin frames the file "<builtin>", line 0).
func (s *Script) inScript(p syntax.Position) bool {
	return p.IsValid() && p.Line >= 1 && p.Filename() == s.file
}

// sameValue reports whether a and b are the same Starlark value without risking the
// run-time panic of comparing uncomparable dynamic types with ==.
func sameValue(a, b starlark.Value) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && a == b
}

// nearest returns the candidate closest to name by edit distance, if close enough to
// be a plausible typo.
func nearest(name string, candidates []string) string {
	best, bestDist := "", max(1, len(name)/3)+1
	for _, c := range candidates {
		if c == name || strings.HasPrefix(c, "$") {
			continue
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
