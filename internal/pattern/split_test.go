package pattern_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// newSplit builds a split and stops it (waiting for its goroutines) at the end of
// the test.
func newSplit(t *testing.T, by pattern.Splitter, opts pattern.SplitOptions, steps ...engine.Processor) *pattern.Split {
	t.Helper()
	s, err := pattern.NewSplit(engine.NewContext("t"), by, opts, steps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return s
}

// upper replaces a string body with its upper case.
var upper = fn(func(_ context.Context, ex *exchange.Exchange) error {
	ex.In().SetBody(strings.ToUpper(ex.In().Body().(string)))
	return nil
})

// failOn fails the element whose body is bad.
func failOn(bad string) engine.Processor {
	return fn(func(_ context.Context, ex *exchange.Exchange) error {
		if ex.In().Body() == bad {
			return fmt.Errorf("cannot take %q", bad)
		}
		return nil
	})
}

func process(t *testing.T, s *pattern.Split, body any) (*exchange.Exchange, error) {
	t.Helper()
	ex := exchange.NewWithBody(exchange.InOut, body)
	return ex, s.Process(context.Background(), ex)
}

func TestSplitCollectsInInputOrder(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: parallel}, upper)
			ex, err := process(t, s, []any{"a", "b", "c"})
			if err != nil {
				t.Fatal(err)
			}
			if want := []any{"A", "B", "C"}; !reflect.DeepEqual(ex.In().Body(), want) {
				t.Errorf("body = %#v, want %#v", ex.In().Body(), want)
			}
		})
	}
}

// Element 0 can only finish after element 2 has: the results arrive in reverse
// order (and the split only completes if the elements really run concurrently), yet
// the list is in input order.
func TestSplitParallelKeepsInputOrder(t *testing.T) {
	gates := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	step := fn(func(ctx context.Context, ex *exchange.Exchange) error {
		i := ex.In().Header(pattern.HeaderSplitIndex).(int)
		if i < 2 {
			select {
			case <-gates[i+1]:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		ex.In().SetBody(fmt.Sprintf("done %d", i))
		close(gates[i])
		return nil
	})
	s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true}, step)
	ex, err := process(t, s, []any{"x", "y", "z"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"done 0", "done 1", "done 2"}; !reflect.DeepEqual(ex.In().Body(), want) {
		t.Errorf("body = %#v, want %#v", ex.In().Body(), want)
	}
}

func TestSplitSequentialRunsInOrderOnIsolatedCopies(t *testing.T) {
	var mu sync.Mutex
	var order []int
	var sizes []any
	step := fn(func(_ context.Context, ex *exchange.Exchange) error {
		msg := ex.In()
		mu.Lock()
		order = append(order, msg.Header(pattern.HeaderSplitIndex).(int))
		sizes = append(sizes, msg.Header(pattern.HeaderSplitSize))
		mu.Unlock()
		// Nothing an earlier element set is visible here.
		if msg.Header("Seen") != nil || ex.Variable("seen") != nil {
			return errors.New("saw another element's header or variable")
		}
		if msg.Header("Keep") != "yes" || ex.Variable("keep") != "v" {
			return errors.New("the original headers and variables must be copied into each element")
		}
		msg.SetHeader("Seen", true)
		ex.SetVariable("seen", true)
		msg.Body().(map[string]any)["touched"] = true // must not reach the original body
		return nil
	})
	s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{}, step)
	orig := []any{map[string]any{"id": 1}, map[string]any{"id": 2}, map[string]any{"id": 3}}
	ex := exchange.NewWithBody(exchange.InOut, orig)
	ex.In().SetHeader("Keep", "yes")
	ex.SetVariable("keep", "v")
	if err := s.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(order, []int{0, 1, 2}) {
		t.Errorf("order = %v, want [0 1 2]", order)
	}
	if !reflect.DeepEqual(sizes, []any{3, 3, 3}) {
		t.Errorf("HelixSplitSize = %v, want 3 each time", sizes)
	}
	if _, touched := orig[0].(map[string]any)["touched"]; touched {
		t.Error("an element changed the original body")
	}
	for _, h := range []string{"Seen", pattern.HeaderSplitIndex, pattern.HeaderSplitSize, pattern.HeaderSplitFailed} {
		if v := ex.In().Header(h); v != nil {
			t.Errorf("header %s = %v leaked into the exchange after the split", h, v)
		}
	}
	if ex.Variable("seen") != nil {
		t.Error("an element's variable leaked into the exchange after the split")
	}
	if ex.In().Header("Keep") != "yes" {
		t.Error("the original headers must be kept")
	}
	want := []any{map[string]any{"id": 1, "touched": true}, map[string]any{"id": 2, "touched": true}, map[string]any{"id": 3, "touched": true}}
	if !reflect.DeepEqual(ex.In().Body(), want) {
		t.Errorf("body = %#v, want %#v", ex.In().Body(), want)
	}
}

func TestSplitMaxConcurrency(t *testing.T) {
	const bound = 3
	var active, peak atomic.Int32
	reached := make(chan struct{})
	var once sync.Once
	step := fn(func(ctx context.Context, _ *exchange.Exchange) error {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == bound {
			once.Do(func() { close(reached) })
		}
		// Hold the first elements until the bound is reached, so the test shows both
		// that the split does run `bound` elements at once and never more.
		select {
		case <-reached:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("the concurrency bound was never reached")
		}
		// A moment for a split that ignores its bound to start more elements.
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true, MaxConcurrency: bound}, step)
	elems := make([]any, 20)
	ex, err := process(t, s, elems)
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p != bound {
		t.Errorf("peak concurrency = %d, want %d", p, bound)
	}
	if n := len(ex.In().Body().([]any)); n != 20 {
		t.Errorf("%d results, want 20", n)
	}
}

func TestSplitStopOnError(t *testing.T) {
	t.Run("sequential: no element after the failed one runs", func(t *testing.T) {
		var ran []any
		var mu sync.Mutex
		record := fn(func(_ context.Context, ex *exchange.Exchange) error {
			mu.Lock()
			ran = append(ran, ex.In().Body())
			mu.Unlock()
			return nil
		})
		s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{}, record, failOn("c"))
		ex, err := process(t, s, []any{"a", "b", "c", "d", "e"})
		var ee *pattern.ElementError
		if !errors.As(err, &ee) || ee.Index != 2 {
			t.Fatalf("err = %v, want an ElementError for index 2", err)
		}
		if want := `split[2]: cannot take "c"`; err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
		if !reflect.DeepEqual(ran, []any{"a", "b", "c"}) {
			t.Errorf("ran %v, want a b c only", ran)
		}
		if !reflect.DeepEqual(ex.In().Body(), []any{"a", "b", "c", "d", "e"}) {
			t.Errorf("a failed split must leave the body alone, got %v", ex.In().Body())
		}
	})
	t.Run("parallel: the failure cancels the running elements", func(t *testing.T) {
		var waiting, cancelled atomic.Int32
		allWaiting := make(chan struct{})
		step := fn(func(ctx context.Context, ex *exchange.Exchange) error {
			if ex.In().Body() == "bad" {
				// Fail once the three other elements the bound allows are running.
				select {
				case <-allWaiting:
				case <-ctx.Done():
				}
				return errors.New("bad element")
			}
			if waiting.Add(1) == 3 {
				close(allWaiting)
			}
			<-ctx.Done()
			cancelled.Add(1)
			return ctx.Err()
		})
		s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true, MaxConcurrency: 4}, step)
		_, err := process(t, s, []any{"wait", "wait", "bad", "wait", "never", "never"})
		if err == nil || err.Error() != "split[2]: bad element" {
			t.Fatalf("err = %v, want split[2]: bad element", err)
		}
		eventually(t, "the three running elements to be cancelled", func() bool { return cancelled.Load() == 3 })
		if n := waiting.Load(); n != 3 {
			t.Errorf("%d elements started besides the failed one, want 3: none may start after the failure", n)
		}
	})
}

func TestSplitContinueOnError(t *testing.T) {
	s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true, ContinueOnError: true}, failOn("b"), failOn("d"), upper)
	ex := exchange.NewWithBody(exchange.InOut, []any{"a", "b", "c", "d"})
	if err := s.Process(context.Background(), ex); err != nil {
		t.Fatalf("a split that goes on must not fail: %v", err)
	}
	if want := []any{"A", nil, "C", nil}; !reflect.DeepEqual(ex.In().Body(), want) {
		t.Errorf("body = %#v, want %#v (nil where an element failed)", ex.In().Body(), want)
	}
	wantFailed := []any{
		map[string]any{"index": 1, "error": `split[1]: cannot take "b"`},
		map[string]any{"index": 3, "error": `split[3]: cannot take "d"`},
	}
	if got := ex.In().Header(pattern.HeaderSplitFailed); !reflect.DeepEqual(got, wantFailed) {
		t.Errorf("HelixSplitFailed = %#v, want %#v", got, wantFailed)
	}

	// A later split without failures removes the header, and elements never see it.
	var sawHeader atomic.Bool
	peek := fn(func(_ context.Context, ex *exchange.Exchange) error {
		if ex.In().Header(pattern.HeaderSplitFailed) != nil {
			sawHeader.Store(true)
		}
		return nil
	})
	again := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{ContinueOnError: true}, peek)
	ex.In().SetBody([]any{"x"})
	if err := again.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if v := ex.In().Header(pattern.HeaderSplitFailed); v != nil {
		t.Errorf("HelixSplitFailed = %v after a split without failures, want none", v)
	}
	if sawHeader.Load() {
		t.Error("an element saw the HelixSplitFailed of an earlier split")
	}
}

func TestSplitNested(t *testing.T) {
	inner := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true}, upper, failOn("BAD"))
	outer := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true}, inner)
	ex, err := process(t, outer, []any{[]any{"a", "b"}, []any{}, []any{"c"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{[]any{"A", "B"}, []any{}, []any{"C"}}; !reflect.DeepEqual(ex.In().Body(), want) {
		t.Errorf("body = %#v, want %#v", ex.In().Body(), want)
	}
	_, err = process(t, outer, []any{[]any{"a"}, []any{"b", "c", "bad"}})
	// The inner split runs in the outer's pipeline, which names it ("split" here, its
	// position in YAML).
	if err == nil || err.Error() != `split[1]: split: split[2]: cannot take "BAD"` {
		t.Errorf("err = %v, want the outer and the inner index", err)
	}
}

func TestSplitEmptyList(t *testing.T) {
	var ran atomic.Int32
	count := fn(func(context.Context, *exchange.Exchange) error { ran.Add(1); return nil })
	for _, body := range []any{[]any{}, []string{}} {
		s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true}, count)
		ex, err := process(t, s, body)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := ex.In().Body().([]any); !ok || len(got) != 0 {
			t.Errorf("body = %#v, want an empty list", ex.In().Body())
		}
	}
	if ran.Load() != 0 {
		t.Errorf("steps ran %d times for empty lists", ran.Load())
	}
}

func TestSplitBodyKinds(t *testing.T) {
	cases := []struct {
		name    string
		by      pattern.Splitter
		body    any
		want    []any
		wantErr string
	}{
		{name: "typed slice", by: pattern.SplitBody(), body: []string{"x", "y"}, want: []any{"x", "y"}},
		{name: "array", by: pattern.SplitBody(), body: [2]int{1, 2}, want: []any{1, 2}},
		{name: "string is not a list", by: pattern.SplitBody(), body: "a,b",
			wantErr: "split: the body is a string (3 bytes), not a list; to split text, split it by lines or into chunks (YAML: lines: true, chunk_size: N)"},
		{name: "map is not a list", by: pattern.SplitBody(), body: map[string]any{"items": []any{1}}, wantErr: "the body is a map (an object), not a list"},
		{name: "nil is not a list", by: pattern.SplitBody(), body: nil, wantErr: "the body is empty (null), not a list"},
		{name: "bytes are not a list", by: pattern.SplitBody(), body: []byte("ab"), wantErr: "the body is bytes (2), not a list"},
		{name: "number is not a list", by: pattern.SplitBody(), body: 42, wantErr: "the body is a number, not a list"},
		{name: "lines", by: pattern.SplitLines(), body: "a\r\nb\n\nc\n", want: []any{"a", "b", "", "c"}},
		{name: "lines of bytes", by: pattern.SplitLines(), body: []byte("one\ntwo"), want: []any{"one", "two"}},
		{name: "lines of empty text", by: pattern.SplitLines(), body: "", want: []any{}},
		{name: "lines of a list", by: pattern.SplitLines(), body: []any{"a"},
			wantErr: "splitting by lines needs a text body (a string or bytes), but the body is a list (1 element)"},
		{name: "a lone line ending is one empty line", by: pattern.SplitLines(), body: "\n", want: []any{""}},
		{name: "lines without a final line ending", by: pattern.SplitLines(), body: "a\n\nb", want: []any{"a", "", "b"}},
		{name: "string chunks keep characters whole", by: pattern.SplitChunks(2), body: "aébcd", want: []any{"a", "é", "bc", "d"}},
		{name: "a character longer than the chunk", by: pattern.SplitChunks(1), body: "aé", want: []any{"a", "é"}},
		{name: "byte chunks", by: pattern.SplitChunks(2), body: []byte("abcde"), want: []any{[]byte("ab"), []byte("cd"), []byte("e")}},
		{name: "chunks of empty text", by: pattern.SplitChunks(2), body: "", want: []any{}},
		{name: "chunk size 0", by: pattern.SplitChunks(0), body: "abc", wantErr: "chunk size must be at least 1 byte, got 0"},
		{name: "value", by: pattern.SplitValue(func(_ context.Context, ex *exchange.Exchange) (any, error) {
			return ex.In().Body().(map[string]any)["items"], nil
		}), body: map[string]any{"items": []any{"p", "q"}}, want: []any{"p", "q"}},
		{name: "value is not a list", by: pattern.SplitValue(func(context.Context, *exchange.Exchange) (any, error) {
			return map[string]any{}, nil
		}), body: "x", wantErr: "split: the expression's value is a map (an object), not a list"},
		{name: "value fails", by: pattern.SplitValue(func(context.Context, *exchange.Exchange) (any, error) {
			return nil, errors.New("no items")
		}), body: "x", wantErr: "split: no items"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSplit(t, tc.by, pattern.SplitOptions{})
			ex, err := process(t, s, tc.body)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ex.In().Body(), tc.want) {
				t.Errorf("body = %#v, want %#v", ex.In().Body(), tc.want)
			}
		})
	}
}

func TestSplitMaxElements(t *testing.T) {
	var ran atomic.Int32
	count := fn(func(context.Context, *exchange.Exchange) error { ran.Add(1); return nil })
	cases := []struct {
		name string
		by   pattern.Splitter
		body any
		want string
	}{
		{"list", pattern.SplitBody(), []any{1, 2, 3}, "split: too many elements: 3 elements, more than the limit of 2 (max_elements)"},
		{"typed slice", pattern.SplitBody(), []int{1, 2, 3}, "the body has 3 elements, more than the limit of 2"},
		{"lines", pattern.SplitLines(), "a\nb\nc\n", "the body has 3 lines, more than the limit of 2"},
		{"byte chunks", pattern.SplitChunks(1), []byte("abc"), "the body of 3 bytes makes 3 chunks of 1 bytes, more than the limit of 2"},
		{"string chunks", pattern.SplitChunks(1), "abc", "the body of 3 bytes makes more than 2 chunks of 1 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSplit(t, tc.by, pattern.SplitOptions{MaxElements: 2}, count)
			_, err := process(t, s, tc.body)
			if !errors.Is(err, pattern.ErrTooManyElements) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrTooManyElements with %q", err, tc.want)
			}
		})
	}
	if ran.Load() != 0 {
		t.Errorf("steps ran %d times, want none: a split over the limit must not start", ran.Load())
	}
	// At the limit is fine; the default limit applies to the zero value.
	s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{MaxElements: 2}, count)
	if _, err := process(t, s, []any{1, 2}); err != nil {
		t.Errorf("two elements with a limit of 2: %v", err)
	}
	s = newSplit(t, pattern.SplitBody(), pattern.SplitOptions{}, count)
	if _, err := process(t, s, make([]any, pattern.DefaultMaxSplitElements+1)); !errors.Is(err, pattern.ErrTooManyElements) {
		t.Errorf("err = %v, want the default limit", err)
	}
}

func TestSplitCancelledExchange(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			var started, returned atomic.Int32
			step := fn(func(ctx context.Context, _ *exchange.Exchange) error {
				started.Add(1)
				<-ctx.Done()
				returned.Add(1)
				return ctx.Err()
			})
			s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: parallel, MaxConcurrency: map[bool]int{true: 2}[parallel], ContinueOnError: true}, step)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Process(ctx, exchange.NewWithBody(exchange.InOut, make([]any, 10))) }()
			want := int32(1)
			if parallel {
				want = 2
			}
			eventually(t, "the first elements to start", func() bool { return started.Load() == want })
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "split: cancelled with 0 of 10 elements done") {
					t.Errorf("err = %v, want the cancellation", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the split did not return after cancellation")
			}
			eventually(t, "the running elements to return", func() bool { return returned.Load() == want })
			if n := started.Load(); n != want {
				t.Errorf("%d elements started, want %d: no element may start after cancellation", n, want)
			}
		})
	}
}

func TestSplitStop(t *testing.T) {
	var returned atomic.Int32
	started := make(chan struct{}, 1)
	step := fn(func(ctx context.Context, _ *exchange.Exchange) error {
		started <- struct{}{}
		<-ctx.Done()
		returned.Add(1)
		return ctx.Err()
	})
	s, err := pattern.NewSplit(nil, pattern.SplitBody(), pattern.SplitOptions{}, step)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Process(context.Background(), exchange.NewWithBody(exchange.InOut, []any{1, 2})) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "split: stopped") {
		t.Errorf("err = %v, want stopped", err)
	}
	if returned.Load() != 1 {
		t.Errorf("Stop returned before the running element did")
	}
	if err := s.Process(context.Background(), exchange.NewWithBody(exchange.InOut, []any{1})); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("Process after Stop: err = %v, want stopped", err)
	}
}

func TestSplitPanicIsElementError(t *testing.T) {
	boom := fn(func(_ context.Context, ex *exchange.Exchange) error {
		if ex.In().Body() == "b" {
			panic("kaboom")
		}
		return nil
	})
	s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true}, boom)
	_, err := process(t, s, []any{"a", "b"})
	if !engine.IsPanic(err) || !strings.HasPrefix(err.Error(), "split[1]: ") {
		t.Errorf("err = %v, want a panic error of element 1", err)
	}
}

func TestSplitResultOptions(t *testing.T) {
	t.Run("keep original", func(t *testing.T) {
		var seen atomic.Int32
		s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{KeepOriginal: true},
			fn(func(_ context.Context, ex *exchange.Exchange) error {
				seen.Add(1)
				ex.In().SetBody("changed")
				return nil
			}))
		ex, err := process(t, s, []any{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ex.In().Body(), []any{"a", "b"}) || seen.Load() != 2 {
			t.Errorf("body = %v after %d elements, want the original after 2", ex.In().Body(), seen.Load())
		}
	})
	t.Run("aggregate", func(t *testing.T) {
		sum := func(_ context.Context, ex *exchange.Exchange, results []any) error {
			total := 0
			for _, r := range results {
				total += r.(int)
			}
			ex.In().SetBody(map[string]any{"total": total, "of": len(ex.In().Body().([]any))})
			return nil
		}
		double := fn(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody(ex.In().Body().(int) * 2)
			return nil
		})
		s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true, Aggregate: sum}, double)
		ex, err := process(t, s, []any{1, 2, 3})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]any{"total": 12, "of": 3}; !reflect.DeepEqual(ex.In().Body(), want) {
			t.Errorf("body = %v, want %v", ex.In().Body(), want)
		}
	})
	t.Run("aggregate fails", func(t *testing.T) {
		s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Aggregate: func(context.Context, *exchange.Exchange, []any) error {
			return errors.New("cannot sum")
		}})
		if _, err := process(t, s, []any{1}); err == nil || err.Error() != "split: aggregate: cannot sum" {
			t.Errorf("err = %v", err)
		}
	})
}

func TestNewSplitOptionErrors(t *testing.T) {
	cases := []struct {
		name string
		by   pattern.Splitter
		opts pattern.SplitOptions
		want string
	}{
		{"no splitter", nil, pattern.SplitOptions{}, "needs a splitter"},
		{"negative concurrency", pattern.SplitBody(), pattern.SplitOptions{Parallel: true, MaxConcurrency: -1}, "max concurrency must be at least 1, got -1"},
		{"concurrency without parallel", pattern.SplitBody(), pattern.SplitOptions{MaxConcurrency: 4}, "only applies to a parallel split"},
		{"negative max elements", pattern.SplitBody(), pattern.SplitOptions{MaxElements: -5}, "max elements must be at least 1, got -5"},
		{"keep original and aggregate", pattern.SplitBody(), pattern.SplitOptions{KeepOriginal: true,
			Aggregate: func(context.Context, *exchange.Exchange, []any) error { return nil }}, "not both"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pattern.NewSplit(nil, tc.by, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSplitClientMessageKeepsIndex(t *testing.T) {
	inner := clientErr{msg: "internal detail", client: "email is required"}
	err := &pattern.ElementError{Index: 4, Err: fmt.Errorf("helix.yaml:3:5 transform: %w", inner)}
	if got := exchange.ClientMessage(fmt.Errorf("wrapped: %w", err)); got != "split[4]: email is required" {
		t.Errorf("client message = %q", got)
	}
}

type clientErr struct{ msg, client string }

func (e clientErr) Error() string         { return e.msg }
func (e clientErr) ClientMessage() string { return e.client }

// A split in a workflow: its steps' services are started through Children, and the
// engine's pipeline names the failing element.
func TestSplitInWorkflow(t *testing.T) {
	s, err := pattern.NewSplit(nil, pattern.SplitBody(), pattern.SplitOptions{Parallel: true}, upper)
	if err != nil {
		t.Fatal(err)
	}
	hc := newStarted(t, &engine.Workflow{ID: "w", FromURI: "direct://w", Processors: []engine.Processor{s.WithName("my split")}})
	ex := exchange.NewWithBody(exchange.InOut, []any{"a", "b"})
	if err := hc.Run(context.Background(), "w", ex); err != nil {
		t.Fatal(err)
	}
	if want := []any{"A", "B"}; !reflect.DeepEqual(ex.In().Body(), want) {
		t.Errorf("body = %#v, want %#v", ex.In().Body(), want)
	}
	ex = exchange.NewWithBody(exchange.InOut, []any{"a", 7})
	err = hc.Run(context.Background(), "w", ex)
	var se *engine.StepError
	if !errors.As(err, &se) || se.Step != "my split" || !strings.Contains(err.Error(), "my split: split[1]: step panicked") {
		t.Errorf("err = %v, want the step name and element 1", err)
	}
}
