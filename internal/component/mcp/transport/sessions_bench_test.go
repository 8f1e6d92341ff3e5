package transport

import (
	"testing"
)

// BenchmarkSessionBeginEnd: every request of a session begins and ends in the
// session table. Many sessions at once (parallelism 64 per CPU) must not queue
// on one table-wide lock: each request takes only its own session's.
func BenchmarkSessionBeginEnd(b *testing.B) {
	tab := NewSessionTable(&Options{SessionIdleTimeout: 10e9})
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		s, err := tab.admit("", "bench", true)
		if err != nil {
			b.Error(err)
			return
		}
		s.ready("s", func() {})
		s.end()
		for pb.Next() {
			if !s.begin() {
				b.Error("session gone")
				return
			}
			s.end()
		}
		s.release()
	})
}
