package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"golang.org/x/time/rate"
)

// A bucket of n per period in Redis answers what x/time/rate's limiter of the same
// size and refill answers at the same times, for periods other than a minute.
func TestStoreTakeMatchesTimeRate(t *testing.T) {
	m := miniredis.RunT(t)
	now := time.Unix(1_700_000_000, 0)
	s, err := OpenStore(StoreOptions{URL: "redis://" + m.Addr(), Namespace: "g:", Clock: func() time.Time { return now },
		Timeout: time.Minute}) // a slow answer on a busy machine is no outage here
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lim := rate.NewLimiter(rate.Limit(3.0/1), 3)
	for i, step := range []time.Duration{0, 0, 0, 0, 100 * time.Millisecond, 250 * time.Millisecond, 0, 2 * time.Second, 0, 0, 0, 0} {
		now = now.Add(step)
		ok, wait, err := s.Take(context.Background(), "alice|t", 3, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		want := lim.AllowN(now, 1)
		if ok != want {
			t.Fatalf("take %d: store says %v, x/time/rate %v", i+1, ok, want)
		}
		if !ok && wait <= 0 {
			t.Fatalf("take %d refused without a wait", i+1)
		}
	}
	if !m.Exists("g:alice|t") {
		t.Error("the bucket is not under its namespace")
	}
	if _, _, err := s.Take(context.Background(), "k", 0, time.Second); err == nil {
		t.Error("a bucket of 0 was accepted")
	}
}

// A counter counts within its window and is gone when the window ends.
func TestStoreCountExpiresWithItsWindow(t *testing.T) {
	m := miniredis.RunT(t)
	s, err := OpenStore(StoreOptions{URL: "redis://" + m.Addr(), Namespace: "q:", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m.SetTime(time.Unix(1_700_000_000, 0))
	end := time.Unix(1_700_000_060, 0)
	for want := int64(1); want <= 3; want++ {
		n, err := s.Count(context.Background(), "w1", end)
		if err != nil || n != want {
			t.Fatalf("count %d: %d %v", want, n, err)
		}
	}
	m.FastForward(61 * time.Second)
	if m.Exists("q:w1") {
		t.Error("the counter outlived its window")
	}
}

func TestOpenStoreRefusesBadURLs(t *testing.T) {
	if _, err := OpenStore(StoreOptions{URL: "http://:pw@host"}); err == nil {
		t.Error("an http URL was accepted")
	}
}
