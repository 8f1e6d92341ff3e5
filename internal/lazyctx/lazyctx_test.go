package lazyctx

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

type (
	otherKey struct{}
	idKey    struct{}
)

// A Context answers, after any sequence of events and questions, as
// context.WithCancel (with context.WithValue around it for WithCancelValue) does.
func TestLikeWithCancel(t *testing.T) {
	const (
		parentCancel = iota
		end
		askErr
		askDone
		askCause
		derive
		askDerived
		ops
	)
	names := []string{"parentCancel", "end", "err", "done", "cause", "derive", "derived"}
	parents := []string{"background", "cancellable", "deadline", "done"}
	var seqs [][]int
	var gen func(seq []int)
	gen = func(seq []int) {
		seqs = append(seqs, append([]int(nil), seq...))
		if len(seq) == 5 {
			return
		}
		for op := range ops {
			seen := false
			for _, o := range seq {
				seen = seen || (o == op && (op == parentCancel || op == end || op == derive))
			}
			if !seen {
				gen(append(seq, op))
			}
		}
	}
	gen(nil)
	cause := errors.New("the caller's cause")
	deadline := time.Now().Add(time.Hour)
	remaining := regexp.MustCompile(`\[[^]]*\]`) // in a deadline context's name
	for _, withValue := range []bool{false, true} {
		for _, pk := range parents {
			for _, seq := range seqs {
				run := func(useRC bool) []string {
					base := context.WithValue(context.Background(), otherKey{}, "v")
					var parent context.Context = base
					var cancelParent func()
					switch pk {
					case "cancellable":
						p, c := context.WithCancelCause(base)
						parent, cancelParent = p, func() { c(cause) }
					case "deadline":
						p, c := context.WithDeadline(base, deadline)
						parent, cancelParent = p, c
					case "done":
						p, c := context.WithCancel(base)
						c()
						parent, cancelParent = p, c
					}
					var ctx context.Context
					var endRun func()
					switch {
					case useRC && withValue:
						rc := WithCancelValue(parent, idKey{}, "wf")
						ctx, endRun = rc, rc.Cancel
					case useRC:
						rc := WithCancel(parent)
						ctx, endRun = rc, rc.Cancel
					case withValue:
						inner, c := context.WithCancel(parent)
						ctx, endRun = context.WithValue(inner, idKey{}, "wf"), c
					default:
						inner, c := context.WithCancel(parent)
						ctx, endRun = inner, c
					}
					var derived context.Context
					var out []string
					closed := func(c context.Context) bool {
						select {
						case <-c.Done():
							return true
						default:
							return false
						}
					}
					for _, op := range seq {
						switch op {
						case parentCancel:
							if cancelParent != nil {
								cancelParent()
							}
						case end:
							endRun()
						case askErr:
							out = append(out, fmt.Sprint("err ", ctx.Err()))
						case askDone:
							out = append(out, fmt.Sprint("done ", closed(ctx)))
						case askCause:
							out = append(out, fmt.Sprint("cause ", context.Cause(ctx)))
						case derive:
							var stop context.CancelFunc
							derived, stop = context.WithTimeout(ctx, time.Hour)
							defer stop()
						case askDerived:
							if derived != nil {
								out = append(out, fmt.Sprint("derived ", closed(derived), derived.Err(), context.Cause(derived)))
							}
						}
					}
					dl, ok := ctx.Deadline()
					out = append(out, fmt.Sprint(ctx.Value(idKey{}), ctx.Value(otherKey{}), !dl.IsZero(), ok, remaining.ReplaceAllString(fmt.Sprint(ctx), "")))
					return out
				}
				want, got := run(false), run(true)
				if strings.Join(want, "; ") != strings.Join(got, "; ") {
					var ns []string
					for _, op := range seq {
						ns = append(ns, names[op])
					}
					t.Errorf("%s parent, value %v, %v:\n got %v\nwant %v", pk, withValue, ns, got, want)
				}
			}
		}
	}
}

// Questions from several goroutines while the run ends and the caller gives up.
func TestConcurrent(t *testing.T) {
	for range 50 {
		parent, cancel := context.WithCancel(context.Background())
		rc := WithCancelValue(parent, idKey{}, "wf")
		start := make(chan struct{})
		done := make(chan struct{})
		for i := range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				<-start
				switch i {
				case 0:
					<-rc.Done()
				case 1:
					for rc.Err() == nil {
					}
				case 2:
					c, stop := context.WithCancel(rc)
					defer stop()
					<-c.Done()
				default:
					_ = context.Cause(rc)
					_ = rc.Value(idKey{})
				}
			}()
		}
		close(start)
		go rc.Cancel()
		go cancel()
		for range 4 {
			<-done
		}
		if !errors.Is(rc.Err(), context.Canceled) {
			t.Fatalf("err %v", rc.Err())
		}
	}
}
