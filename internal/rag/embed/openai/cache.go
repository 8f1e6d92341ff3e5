package openai

import (
	"container/list"
	"crypto/sha256"
	"strconv"
	"sync"

	"github.com/arvenza/helix/internal/rag"
)

// cacheKey identifies a vector: the hash of the model, the dimensions, the kind
// and the (prefixed) text, so the cache holds vectors, not texts.
type cacheKey [sha256.Size]byte

func (e *Embedder) key(kind rag.EmbedKind, text string) cacheKey {
	h := sha256.New()
	h.Write([]byte(e.model))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(int(kind))))
	h.Write([]byte{0})
	h.Write([]byte(text))
	var k cacheKey
	h.Sum(k[:0])
	return k
}

// lru is a least-recently-used map of vectors, safe for concurrent use. Cached
// vectors are never modified.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recently used; values are *entry
	items map[cacheKey]*list.Element
}

type entry struct {
	key cacheKey
	vec []float32
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: make(map[cacheKey]*list.Element)}
}

func (c *lru) get(k cacheKey) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry).vec, true
}

func (c *lru) put(k cacheKey, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		el.Value.(*entry).vec = v
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(&entry{k, v})
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*entry).key)
	}
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
