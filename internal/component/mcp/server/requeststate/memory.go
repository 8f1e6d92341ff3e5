package requeststate

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// DefaultMemoryEntries bounds the in-process store of used state ids.
const DefaultMemoryEntries = 100_000

// MemoryStore is an in-process [UsedStore]: an LRU of used ids, each kept until
// it expires. When full it forgets the oldest entry first (the one that expires
// first, since every state lives the same time); a state whose id was forgotten
// could be used a second time, so the bound should exceed the states issued per
// TTL. Replicas each have their own: use a shared store (Redis) behind a load
// balancer.
type MemoryStore struct {
	mu    sync.Mutex
	max   int
	order *list.List               // oldest first; values are *memEntry
	ids   map[string]*list.Element // by id
	now   func() time.Time
}

type memEntry struct {
	id    string
	until time.Time
}

// NewMemoryStore returns a store holding at most max ids (0: DefaultMemoryEntries).
func NewMemoryStore(max int) *MemoryStore {
	if max <= 0 {
		max = DefaultMemoryEntries
	}
	return &MemoryStore{max: max, order: list.New(), ids: map[string]*list.Element{}, now: time.Now}
}

// Use implements UsedStore.
func (m *MemoryStore) Use(_ context.Context, id string, until time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	// Expired entries go first; they are at the front.
	for e := m.order.Front(); e != nil; e = m.order.Front() {
		if ent := e.Value.(*memEntry); now.Before(ent.until) {
			break
		}
		m.remove(e)
	}
	if _, used := m.ids[id]; used {
		return false, nil
	}
	for m.order.Len() >= m.max {
		m.remove(m.order.Front())
	}
	m.ids[id] = m.order.PushBack(&memEntry{id: id, until: until})
	return true, nil
}

func (m *MemoryStore) remove(e *list.Element) {
	delete(m.ids, e.Value.(*memEntry).id)
	m.order.Remove(e)
}

// Len is the number of ids remembered.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}
