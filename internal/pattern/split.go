package pattern

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// DefaultMaxSplitElements is the most elements a split accepts when
// SplitOptions.MaxElements is 0. Beyond it the split fails before running anything:
// a body that is far larger than a workflow was written for should be refused, not
// turned into that many exchanges.
const DefaultMaxSplitElements = 10000

// Headers of the split pattern. Index and size are set on each element's exchange
// (Camel's CamelSplitIndex and CamelSplitSize); failed is set on the exchange after a
// split that went on past failed elements (see [SplitOptions.ContinueOnError]).
const (
	// HeaderSplitIndex is the 0-based index of the element an exchange carries.
	HeaderSplitIndex = "HelixSplitIndex"
	// HeaderSplitSize is the number of elements of the split.
	HeaderSplitSize = "HelixSplitSize"
	// HeaderSplitFailed lists the elements that failed, in index order, as
	// {"index": i, "error": "message"} maps; absent when none failed.
	HeaderSplitFailed = "HelixSplitFailed"
)

// ErrTooManyElements is wrapped by the error of a split whose input has more
// elements than its limit (SplitOptions.MaxElements).
var ErrTooManyElements = errors.New("too many elements")

// Splitter computes the elements of a split from the exchange, which it must not
// change. limit is the most elements the split accepts: a splitter that produces its
// elements (lines, chunks) returns an error wrapping [ErrTooManyElements] as soon as
// it knows there are more, instead of building them all; a longer result is refused
// by the split anyway. [SplitBody], [SplitLines], [SplitChunks] and [SplitValue] are
// the splitters Helix's YAML uses.
type Splitter func(ctx context.Context, ex *exchange.Exchange, limit int) ([]any, error)

// SplitOptions configure [NewSplit]. The zero value splits sequentially, stops at the
// first failed element, accepts at most [DefaultMaxSplitElements] elements and
// replaces the body with the list of the elements' results.
type SplitOptions struct {
	// Parallel processes elements concurrently; otherwise one after the other, in order.
	Parallel bool
	// MaxConcurrency bounds the elements processed at once by a parallel split; 0
	// means [MaxParallelBranches]. Setting it without Parallel is an error.
	MaxConcurrency int
	// ContinueOnError processes every element even when some fail (YAML:
	// stop_on_error: false). Failed elements get nil as their result and are listed
	// in header HelixSplitFailed; the split itself succeeds. Without it the first
	// failure cancels the elements still running, starts no more and fails the split
	// with an [*ElementError].
	ContinueOnError bool
	// MaxElements is the most elements the split accepts; 0 means
	// [DefaultMaxSplitElements]. More is an error wrapping [ErrTooManyElements].
	MaxElements int
	// KeepOriginal leaves the body as it was before the split: the results are
	// discarded (Camel's splitter without an aggregation strategy). For splits whose
	// steps only have effects, such as sending each record somewhere.
	KeepOriginal bool
	// Aggregate, when set, replaces collecting: it is called once with the exchange
	// (its original body, headers and variables, HelixSplitFailed already set) and
	// the results in input order, and sets what it wants on ex. It runs on the
	// caller's goroutine. It cannot be combined with KeepOriginal.
	Aggregate func(ctx context.Context, ex *exchange.Exchange, results []any) error
}

// ElementError is the failure of one element of a split: "split[3]: …".
type ElementError struct {
	Index int
	Err   error
}

func (e *ElementError) Error() string { return fmt.Sprintf("split[%d]: %v", e.Index, e.Err) }

func (e *ElementError) Unwrap() error { return e.Err }

// ClientMessage keeps the element's index in what the caller (an MCP client, an HTTP
// caller) is told, in front of the element error's own client message.
func (e *ElementError) ClientMessage() string {
	return fmt.Sprintf("split[%d]: %s", e.Index, exchange.ClientMessage(e.Err))
}

// Split is the splitter (Camel's Splitter): it computes a list of elements from the
// exchange (by a [Splitter]), runs the steps once per element, each time on a copy of
// the exchange whose body is the element, and then replaces the body with the list of
// the elements' reply bodies, in input order whatever the order they finished in
// (or keeps the original body, or aggregates; see [SplitOptions]).
//
// Isolation: each element's exchange has its own deep copy of the headers and
// variables, plus headers HelixSplitIndex and HelixSplitSize; what the steps set
// there is seen neither by other elements nor by the exchange after the split.
//
// Cancellation: cancelling the exchange's context cancels every running element,
// starts no more and fails the split at once. Elements run on goroutines owned by
// the Split (at most MaxConcurrency, one when sequential); an element still running
// when its split has returned is cancelled, and Stop waits for it.
//
// A Split is safe for concurrent use; each Process call has its own goroutines.
type Split struct {
	hc          *engine.Context
	by          Splitter
	steps       engine.Processor
	opts        SplitOptions
	concurrency int
	maxElements int
	name        string

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
	stopCtx context.Context // cancelled by Stop: ends elements still running
	cancel  context.CancelFunc
}

var (
	_ engine.Processor  = (*Split)(nil)
	_ engine.Services   = (*Split)(nil)
	_ engine.Named      = (*Split)(nil)
	_ component.Service = (*Split)(nil)
)

// NewSplit returns a split of the elements by computes, running steps (chained as a
// pipeline, without error handler) on each. hc gives the logger and may be nil.
// It starts no goroutine; options that contradict each other are an error.
func NewSplit(hc *engine.Context, by Splitter, opts SplitOptions, steps ...engine.Processor) (*Split, error) {
	var errs []error
	if by == nil {
		errs = append(errs, errors.New("split: needs a splitter, e.g. pattern.SplitBody()"))
	}
	if opts.MaxConcurrency < 0 {
		errs = append(errs, fmt.Errorf("split: max concurrency must be at least 1, got %d", opts.MaxConcurrency))
	}
	if opts.MaxConcurrency > 0 && !opts.Parallel {
		errs = append(errs, errors.New("split: a max concurrency only applies to a parallel split: set Parallel too"))
	}
	if opts.MaxElements < 0 {
		errs = append(errs, fmt.Errorf("split: max elements must be at least 1, got %d", opts.MaxElements))
	}
	if opts.KeepOriginal && opts.Aggregate != nil {
		errs = append(errs, errors.New("split: keep the original body or aggregate the results, not both"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Split{hc: hc, by: by, steps: engine.NestedPipeline(hc, steps), opts: opts, name: "split",
		concurrency: 1, maxElements: opts.MaxElements}
	if opts.Parallel {
		s.concurrency = opts.MaxConcurrency
		if s.concurrency == 0 {
			s.concurrency = MaxParallelBranches
		}
	}
	if s.maxElements == 0 {
		s.maxElements = DefaultMaxSplitElements
	}
	s.stopCtx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// WithName sets the step name used in logs and dead letter headers.
func (s *Split) WithName(name string) *Split { s.name = name; return s }

// Name returns the step name.
func (s *Split) Name() string { return s.name }

// Children lets the engine find and start services nested in the steps.
func (s *Split) Children() []engine.Processor { return []engine.Processor{s.steps} }

// Start is a no-op: the steps' own services are started through Children.
func (s *Split) Start(context.Context) error { return nil }

// Stop cancels elements still running and waits for them until ctx is done. Process
// fails after Stop.
func (s *Split) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: elements did not finish after cancellation: %w", s.name, ctx.Err())
	}
}

// Process splits the body, runs the steps on every element and aggregates.
func (s *Split) Process(ctx context.Context, ex *exchange.Exchange) error {
	elems, err := s.by(ctx, ex, s.maxElements)
	if err != nil {
		return fmt.Errorf("split: %w", err)
	}
	if len(elems) > s.maxElements {
		return fmt.Errorf("split: %w", tooMany(fmt.Sprintf("%d elements", len(elems)), s.maxElements))
	}
	results := make([]any, len(elems))
	var failed []splitResult
	if len(elems) > 0 {
		if failed, err = s.run(ctx, ex, elems, results); err != nil {
			return err
		}
	}
	var failures, indexes []any
	for _, f := range failed {
		failures = append(failures, map[string]any{"index": f.index, "error": (&ElementError{Index: f.index, Err: f.err}).Error()})
		indexes = append(indexes, f.index)
	}
	if len(failed) > 0 {
		logger(s.hc).Warn("split elements failed; went on without them (stop_on_error is false)",
			"step", s.name, "exchange", ex.ID(), "failed", indexes, "elements", len(elems))
	}
	msg := ex.In()
	// nil removes a header left by an earlier split in the same workflow.
	msg.SetHeader(HeaderSplitFailed, nilIfEmpty(failures))
	switch {
	case s.opts.KeepOriginal:
	case s.opts.Aggregate != nil:
		if err := s.opts.Aggregate(ctx, ex, results); err != nil {
			return fmt.Errorf("split: aggregate: %w", err)
		}
	default:
		msg.SetBody(results)
	}
	return nil
}

type splitJob struct {
	index int
	ex    *exchange.Exchange
}

type splitResult struct {
	index int
	body  any
	err   error
}

// run processes the elements and fills results; it returns the failures of a split
// that goes on past them, in index order.
func (s *Split) run(ctx context.Context, ex *exchange.Exchange, elems, results []any) ([]splitResult, error) {
	n := len(elems)
	workers := min(s.concurrency, n)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel() // on early return, elements still running are cancelled, not waited for
	stopCancel := context.AfterFunc(s.stopCtx, cancel)
	defer stopCancel()

	// Unbuffered: an element's exchange is handed over only when a worker is free,
	// so at most `workers` copies exist at once. A worker's result fits in resCh
	// while the split reads them; once the split stops reading (its context is
	// done) a worker drops its result instead of waiting (startWorkers).
	jobs := make(chan splitJob)
	resCh := make(chan splitResult, workers)
	if err := s.startWorkers(ectx, workers, jobs, resCh); err != nil {
		return nil, err
	}
	defer close(jobs)

	var failed []splitResult
	// interrupts are the elements' engine.Interrupts (a question for the MCP
	// client, a durable run's wait): the other elements still run, so that their
	// questions are asked in the same answer (a durable run parks on all their
	// waits at once), and then they end the split whatever stop_on_error says.
	var interrupts []error
	next, finished := 0, 0
	var job splitJob
	prepared := false
	for finished < n {
		// Checked first: once the caller is gone, elements fail because of it, and
		// the split must report the cancellation, not those failures.
		if err := s.interrupted(ctx, finished, n); err != nil {
			return nil, err
		}
		var send chan<- splitJob
		if next < n {
			if !prepared {
				// Copies are made here, on the caller's goroutine, which owns ex.
				job = splitJob{index: next, ex: elementExchange(ex, elems[next], next, n)}
				prepared = true
			}
			send = jobs
		}
		select {
		case send <- job:
			next++
			prepared = false
		case r := <-resCh:
			finished++
			if r.err == nil {
				results[r.index] = r.body
				continue
			}
			if err := s.interrupted(ctx, finished-1, n); err != nil {
				return nil, err
			}
			if engine.IsInterrupt(r.err) {
				interrupts = append(interrupts, &ElementError{Index: r.index, Err: r.err})
				continue
			}
			if !s.opts.ContinueOnError {
				return nil, &ElementError{Index: r.index, Err: r.err}
			}
			failed = append(failed, r)
		case <-ctx.Done():
		case <-s.stopCtx.Done():
		}
	}
	if len(interrupts) > 0 {
		// In element order, so that the first is the same whoever finished first.
		sort.Slice(interrupts, func(i, j int) bool {
			return interrupts[i].(*ElementError).Index < interrupts[j].(*ElementError).Index
		})
		if len(interrupts) == 1 {
			return nil, interrupts[0]
		}
		return nil, errors.Join(interrupts...)
	}
	sort.Slice(failed, func(i, j int) bool { return failed[i].index < failed[j].index })
	return failed, nil
}

// interrupted returns the error of a split whose caller cancelled it or whose Split
// was stopped, if either happened.
func (s *Split) interrupted(ctx context.Context, done, n int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("split: cancelled with %d of %d elements done: %w", done, n, err)
	}
	if s.stopCtx.Err() != nil {
		return errors.New("split: stopped: Helix is shutting down")
	}
	return nil
}

// startWorkers starts the goroutines that process elements; they end when jobs is
// closed.
func (s *Split) startWorkers(ctx context.Context, workers int, jobs <-chan splitJob, resCh chan<- splitResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("split: stopped: Helix is shutting down")
	}
	s.wg.Add(workers)
	for range workers {
		go func() {
			defer s.wg.Done()
			for j := range jobs {
				err := ctx.Err()
				if err == nil {
					err = runBranch(ctx, nil, j.index, s.steps, j.ex) // s.steps traces its own steps
				}
				// Once ctx is done the split has returned or is returning
				// without reading more results (it checks the cancellation
				// first); a worker handed one more element just before
				// must not block on a full resCh, or Stop would wait for it
				// for ever.
				select {
				case resCh <- splitResult{index: j.index, body: j.ex.In().Body(), err: err}:
				case <-ctx.Done():
				}
			}
		}()
	}
	return nil
}

// elementExchange is the copy of ex that element i of n runs on.
func elementExchange(ex *exchange.Exchange, elem any, i, n int) *exchange.Exchange {
	e := ex.CopyWithBody(elem)
	msg := e.In()
	msg.SetHeader(HeaderSplitIndex, i)
	msg.SetHeader(HeaderSplitSize, n)
	msg.SetHeader(HeaderSplitFailed, nil) // an enclosing or earlier split's, not this one's
	return e
}

func tooMany(what string, limit int) error {
	return fmt.Errorf("%w: %s, more than the limit of %d (max_elements): raise the limit if the workflow is meant for inputs this large, or cut the input into smaller batches before it reaches the split",
		ErrTooManyElements, what, limit)
}

// SplitBody splits a list body: []any, or any other Go slice or array (except
// []byte, which is text). Anything else is an error that says what the body is.
func SplitBody() Splitter {
	return func(_ context.Context, ex *exchange.Exchange, limit int) ([]any, error) {
		list, err := asList(ex.In().Body(), "the body", limit)
		if err != nil && !errors.Is(err, ErrTooManyElements) {
			err = fmt.Errorf("%w; to split text, split it by lines or into chunks (YAML: lines: true, chunk_size: N), or compute the list with a starlang expression", err)
		}
		return list, err
	}
}

// SplitValue splits the list that value computes from the exchange (the YAML
// `starlang:` expression of a split). value must not change the exchange.
func SplitValue(value func(ctx context.Context, ex *exchange.Exchange) (any, error)) Splitter {
	return func(ctx context.Context, ex *exchange.Exchange, limit int) ([]any, error) {
		v, err := value(ctx, ex)
		if err != nil {
			return nil, err
		}
		return asList(v, "the expression's value", limit)
	}
}

// SplitLines splits a text body (string or []byte) into its lines, without their
// line ending ("\n" or "\r\n"). A final line ending does not start an empty last
// line; empty lines elsewhere are elements too, so that index i is line i+1. The
// elements are strings; an empty body has no elements.
func SplitLines() Splitter {
	return func(_ context.Context, ex *exchange.Exchange, limit int) ([]any, error) {
		text, err := bodyText(ex, "lines")
		if err != nil {
			return nil, err
		}
		if text == "" {
			return []any{}, nil
		}
		text = strings.TrimSuffix(text, "\n") // "\n" alone is one empty line
		n := strings.Count(text, "\n") + 1
		if n > limit {
			return nil, tooMany(fmt.Sprintf("the body has %d lines", n), limit)
		}
		out := make([]any, 0, n)
		for line := range strings.SplitSeq(text, "\n") {
			out = append(out, strings.TrimSuffix(line, "\r"))
		}
		return out, nil
	}
}

// SplitChunks splits a text body into chunks of at most size bytes: a []byte body
// into []byte chunks of exactly size bytes (the last may be shorter), a string body
// into string chunks cut between characters, never inside a UTF-8 sequence (a chunk
// is shorter than size rather than split a character; a character longer than size
// is a chunk of its own).
func SplitChunks(size int) Splitter {
	return func(_ context.Context, ex *exchange.Exchange, limit int) ([]any, error) {
		if size < 1 {
			return nil, fmt.Errorf("chunk size must be at least 1 byte, got %d", size)
		}
		if b, ok := ex.In().Body().([]byte); ok {
			n := len(b) / size
			if len(b)%size != 0 {
				n++
			}
			if n > limit {
				return nil, tooMany(fmt.Sprintf("the body of %d bytes makes %d chunks of %d bytes", len(b), n, size), limit)
			}
			out := make([]any, 0, n)
			for len(b) > 0 {
				k := min(size, len(b))
				out = append(out, b[:k:k])
				b = b[k:]
			}
			return out, nil
		}
		text, err := bodyText(ex, "chunks")
		if err != nil {
			return nil, err
		}
		var out []any
		total := len(text)
		for len(text) > 0 {
			if len(out) == limit {
				return nil, tooMany(fmt.Sprintf("the body of %d bytes makes more than %d chunks of %d bytes", total, limit, size), limit)
			}
			k := min(size, len(text))
			for k < len(text) && k > 0 && !utf8.RuneStart(text[k]) {
				k--
			}
			if k == 0 { // one character longer than size
				_, k = utf8.DecodeRuneInString(text)
			}
			out = append(out, text[:k])
			text = text[k:]
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	}
}

// bodyText returns a string or []byte body as text.
func bodyText(ex *exchange.Exchange, how string) (string, error) {
	switch b := ex.In().Body().(type) {
	case string:
		return b, nil
	case []byte:
		return string(b), nil
	case json.RawMessage:
		return string(b), nil
	default:
		return "", fmt.Errorf("splitting by %s needs a text body (a string or bytes), but the body is %s; to split a list, leave out lines and chunk_size", how, describeValue(b))
	}
}

// asList returns v as a list: []any as is, other slices and arrays converted.
func asList(v any, what string, limit int) ([]any, error) {
	switch t := v.(type) {
	case []any:
		return t, nil
	case []byte, json.RawMessage, string, nil:
		return nil, fmt.Errorf("%s is %s, not a list", what, describeValue(v))
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, fmt.Errorf("%s is %s, not a list", what, describeValue(v))
	}
	if rv.Len() > limit {
		return nil, tooMany(fmt.Sprintf("%s has %d elements", what, rv.Len()), limit)
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, nil
}

// describeValue names the kind of a body for error messages, without its content
// (which may be large or confidential).
func describeValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "empty (null)"
	case string:
		return fmt.Sprintf("a string (%d bytes)", len(t))
	case []byte:
		return fmt.Sprintf("bytes (%d)", len(t))
	case json.RawMessage:
		return fmt.Sprintf("raw JSON (%d bytes)", len(t))
	case bool:
		return "a boolean"
	case map[string]any:
		return "a map (an object)"
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Len() == 1 {
			return "a list (1 element)"
		}
		return fmt.Sprintf("a list (%d elements)", rv.Len())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "a map (an object)"
	}
	return fmt.Sprintf("a %T", v)
}
