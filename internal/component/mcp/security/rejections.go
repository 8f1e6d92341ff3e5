package security

import (
	"sort"
	"strings"
	"sync"
)

// Rejections counts rejected requests by reason. One counter may be shared by
// successive stacks of the same server (Config.Rejections), so that a restart
// does not reset a monitoring counter. The zero value is ready; safe for
// concurrent use.
type Rejections struct {
	mu sync.Mutex
	m  map[string]uint64
}

// RejectionCount is the number of requests rejected for one reason.
type RejectionCount struct {
	Reason string
	Count  uint64
}

func (r *Rejections) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]uint64{}
	}
	r.m[reasonLabel(reason)]++
}

// Snapshot returns the counts sorted by reason; reasons never seen are absent.
func (r *Rejections) Snapshot() []RejectionCount {
	r.mu.Lock()
	out := make([]RejectionCount, 0, len(r.m))
	for k, v := range r.m {
		out = append(out, RejectionCount{Reason: k, Count: v})
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Reason < out[j].Reason })
	return out
}

// reasonLabel is the logged reason without its detail ("invalid token: token is
// expired" counts as "invalid token"), so the set of reasons stays small and fixed
// whatever clients send.
func reasonLabel(reason string) string {
	head, _, _ := strings.Cut(reason, ":")
	return strings.TrimSpace(head)
}
