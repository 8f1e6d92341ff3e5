package redact

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// MinSecretLen is the shortest value the secret set takes. Shorter values are
// left alone: replacing "80" or "POST" would shred every message without hiding
// anything worth hiding, and a secret that short can be guessed anyway. URLs are
// masked whatever the length of their values ([URL]).
const MinSecretLen = 8

// MaxSecretLen is the longest value the secret set takes: a longer value (a
// certificate, a whole document passed through ${env:…}) is not a token an
// upstream echoes, and replacing it would cost every message a long comparison.
const MaxSecretLen = 4096

// Set is a set of secret values to replace in text. The zero Set is empty and
// ready; it is safe for concurrent use. Values are only ever added: a reload that
// drops a secret keeps hiding it, which costs nothing and may still matter (an old
// connection's error).
type Set struct {
	mu       sync.Mutex
	values   map[string]struct{}
	replacer atomic.Pointer[strings.Replacer] // nil while the set is empty
}

// secrets is the process's secret set: the boundaries ([Text], [Handler]) serve
// every application of the process, so there is one set for all.
var secrets Set

// AddSecret adds values to the process's secret set; see [Set.Add].
func AddSecret(values ...string) { secrets.Add(values...) }

// Secrets returns s with the values of the process's secret set replaced by
// [Replacement].
func Secrets(s string) string { return secrets.Replace(s) }

// Add adds values (surrounding spaces trimmed) of [MinSecretLen] to
// [MaxSecretLen] bytes; others are ignored.
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < MinSecretLen || len(v) > MaxSecretLen {
			continue
		}
		if _, ok := s.values[v]; ok {
			continue
		}
		if s.values == nil {
			s.values = make(map[string]struct{})
		}
		s.values[v] = struct{}{}
		changed = true
	}
	if changed {
		s.replacer.Store(s.build())
	}
}

// build makes the replacer of the current values, longest first, so that a
// secret containing another is replaced whole (strings.Replacer tries its pairs
// in order at each position).
func (s *Set) build() *strings.Replacer {
	sorted := make([]string, 0, len(s.values))
	for v := range s.values {
		sorted = append(sorted, v)
	}
	sort.Slice(sorted, func(i, j int) bool {
		if len(sorted[i]) != len(sorted[j]) {
			return len(sorted[i]) > len(sorted[j])
		}
		return sorted[i] < sorted[j]
	})
	pairs := make([]string, 0, 2*len(sorted))
	for _, v := range sorted {
		pairs = append(pairs, v, Replacement)
	}
	return strings.NewReplacer(pairs...)
}

// Replace returns text with every value of s replaced by [Replacement].
func (s *Set) Replace(text string) string {
	r := s.replacer.Load()
	if r == nil || text == "" {
		return text
	}
	return r.Replace(text)
}
