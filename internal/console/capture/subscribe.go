package capture

import (
	"sync"
	"sync/atomic"
)

// Subscription is one live reader of new captures (a live feed).
type Subscription struct {
	c      chan *Exchange
	missed atomic.Uint64
	owner  *subscribers
}

// C delivers new captures. It is never closed (a publisher may still hold
// the subscriber list it was on); Done tells when the capture closed.
func (s *Subscription) C() <-chan *Exchange { return s.c }

// Done is closed when the capture closes.
func (s *Subscription) Done() <-chan struct{} { return s.owner.done }

// Missed returns and resets how many captures this subscriber missed because
// it did not keep up.
func (s *Subscription) Missed() uint64 { return s.missed.Swap(0) }

// Close ends the subscription.
func (s *Subscription) Close() { s.owner.remove(s) }

// subscribers is a copy-on-write list: publishing reads it with one atomic
// load and never takes mu, which only (un)subscribing does.
type subscribers struct {
	mu     sync.Mutex
	list   atomic.Pointer[[]*Subscription]
	closed bool
	done   chan struct{}
}

// Subscribe returns a subscription buffering up to buf captures (at least 1);
// past that the subscriber misses captures rather than slowing anything.
func (c *Capture) Subscribe(buf int) *Subscription {
	return c.subs.add(max(buf, 1))
}

func (s *subscribers) add(buf int) *Subscription {
	sub := &Subscription{c: make(chan *Exchange, buf), owner: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sub
	}
	var cur []*Subscription
	if p := s.list.Load(); p != nil {
		cur = *p
	}
	next := append(append(make([]*Subscription, 0, len(cur)+1), cur...), sub)
	s.list.Store(&next)
	return sub
}

func (s *subscribers) remove(sub *Subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.list.Load()
	if p == nil {
		return
	}
	next := make([]*Subscription, 0, len(*p))
	for _, x := range *p {
		if x != sub {
			next = append(next, x)
		}
	}
	if len(next) == len(*p) {
		return
	}
	s.list.Store(&next)
}

func (s *subscribers) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	close(s.done)
	s.list.Store(nil)
}

// publish hands rec to every subscriber that has room, and counts a miss for
// the others. Sends never block, and channels are never closed, so a
// publisher working from a list loaded before an unsubscribe is harmless.
func (s *subscribers) publish(rec *Exchange) {
	p := s.list.Load()
	if p == nil {
		return
	}
	for _, sub := range *p {
		select {
		case sub.c <- rec:
		default:
			sub.missed.Add(1)
		}
	}
}
