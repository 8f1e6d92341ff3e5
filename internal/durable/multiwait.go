package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Several waits at once: a composite step whose parallel branches each reach a
// waiting step (a multicast of two elicit:) parks the run once with all their
// waits. Each is resolved by its key; the run stays parked until the last one
// is, then goes on at the same step with every answer in its context, where
// each waiting step takes its own (ResolutionFor).

type resolutionsKey struct{}

// WithResolutions returns ctx carrying the resolutions of several waits, by
// their keys (Wait.Key), for the step about to run again.
func WithResolutions(ctx context.Context, rs map[string]Resolution) context.Context {
	return context.WithValue(ctx, resolutionsKey{}, rs)
}

// ResolutionFor returns how the wait with key ended, when the step calling it
// runs again after parking: the keyed resolution when the run waited for
// several at once, else the run's only one ([ResolutionFrom]).
func ResolutionFor(ctx context.Context, key string) (Resolution, bool) {
	if rs, ok := ctx.Value(resolutionsKey{}).(map[string]Resolution); ok {
		r, ok := rs[key]
		return r, ok
	}
	return ResolutionFrom(ctx)
}

// parkWaits returns the waits of every *ParkError in err's tree (errors.Join
// and wrapping included), in order, each key once.
func parkWaits(err error) []Wait {
	var out []Wait
	seen := map[string]bool{}
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if pe, ok := e.(*ParkError); ok {
			id := pe.Wait.Kind + "\x00" + pe.Wait.Key
			if !seen[id] {
				seen[id] = true
				out = append(out, pe.Wait)
			}
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// storedWait is what helix_runs' wait column holds: the first wait not
// answered (so that a single wait is stored as it always was), and, for a run
// that waits for several at once, all of them and the answers so far.
type storedWait struct {
	Wait
	All     []Wait                `json:"all,omitempty"`
	Answers map[string]Resolution `json:"answers,omitempty"`
}

// newStoredWait is the wait column of a run that parks on ws (at least one).
func newStoredWait(ws []Wait) storedWait {
	if len(ws) == 1 {
		return storedWait{Wait: ws[0]}
	}
	return storedWait{Wait: ws[0], All: ws}
}

// multi reports whether the run waits for several things at once.
func (s storedWait) multi() bool { return len(s.All) > 1 }

// pending are the waits not answered yet.
func (s storedWait) pending() []Wait {
	if !s.multi() {
		return []Wait{s.Wait}
	}
	var out []Wait
	for _, w := range s.All {
		if _, done := s.Answers[w.Key]; !done {
			out = append(out, w)
		}
	}
	return out
}

// answer records r for the wait r.Key names (the only one pending when r has
// no key) and returns the set with it, and whether every wait is answered now.
// ErrNotWaiting when that wait was answered already or is not in the set.
func (s storedWait) answer(r Resolution) (storedWait, Resolution, bool, error) {
	pending := s.pending()
	key := r.Key
	if key == "" {
		if len(pending) != 1 {
			return s, r, false, fmt.Errorf("%w: the run waits for %d things at once (%s); say which with the wait's key", ErrNotWaiting, len(pending), keysOf(pending))
		}
		key = pending[0].Key
	}
	found := false
	for _, w := range pending {
		if w.Key == key {
			found = true
			break
		}
	}
	if !found {
		return s, r, false, fmt.Errorf("%w: nothing the run waits for now has key %q (it waits for %s)", ErrNotWaiting, key, keysOf(pending))
	}
	r.Key = key
	answers := make(map[string]Resolution, len(s.Answers)+1)
	for k, v := range s.Answers {
		answers[k] = v
	}
	answers[key] = r
	next := storedWait{All: s.All, Answers: answers}
	left := next.pending()
	if len(left) > 0 {
		next.Wait = left[0]
	} else {
		next.Wait = s.Wait
	}
	return next, r, len(left) == 0, nil
}

func keysOf(ws []Wait) string {
	keys := make([]string, len(ws))
	for i, w := range ws {
		keys[i] = fmt.Sprintf("%s %q", w.Kind, w.Key)
	}
	return strings.Join(keys, ", ")
}

// decodeStoredWait reads the wait column.
func decodeStoredWait(s string) (storedWait, error) {
	var sw storedWait
	err := json.Unmarshal([]byte(s), &sw)
	return sw, err
}

// pendingWaits are the waits of a parked run not answered yet.
func pendingWaits(run Run) []Wait {
	if len(run.Waits) > 0 {
		return run.Waits
	}
	if run.Wait != nil {
		return []Wait{*run.Wait}
	}
	return nil
}

// errNoWait is a resolution for a run parked on nothing (never stored so).
var errNoWait = errors.New("durable: the parked run records no wait")
