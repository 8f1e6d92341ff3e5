package agent

import (
	"container/list"
	"sync"
)

// memory keeps the last window messages of each session, for at most max
// sessions; the least recently used session is evicted first. Safe for concurrent
// use. Two runs of one session at once both start from the same history and the
// later to finish appends last.
type memory struct {
	window, max int

	mu       sync.Mutex
	sessions map[string]*list.Element // of *session
	lru      list.List                // front: most recently used
}

type session struct {
	id       string
	messages []Message
}

func newMemory(window, max int) *memory {
	return &memory{window: window, max: max, sessions: map[string]*list.Element{}}
}

// load returns a copy of the session's history.
func (m *memory) load(id string) []Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sessions[id]
	if !ok {
		return nil
	}
	m.lru.MoveToFront(e)
	s := e.Value.(*session)
	return append([]Message(nil), s.messages...)
}

// append adds a run's messages to the session, trims it to the window and evicts
// the least recently used sessions beyond max.
func (m *memory) append(id string, msgs []Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sessions[id]
	if !ok {
		e = m.lru.PushFront(&session{id: id})
		m.sessions[id] = e
	}
	m.lru.MoveToFront(e)
	s := e.Value.(*session)
	s.messages = trimWindow(append(s.messages, msgs...), m.window)
	for m.lru.Len() > m.max {
		old := m.lru.Back()
		m.lru.Remove(old)
		delete(m.sessions, old.Value.(*session).id)
	}
}

// trimWindow keeps at most window messages, starting at a user message so that no
// tool result is left without the assistant turn that asked for it.
func trimWindow(msgs []Message, window int) []Message {
	if len(msgs) <= window {
		return msgs
	}
	start := len(msgs) - window
	for start < len(msgs) && msgs[start].Role != RoleUser {
		start++
	}
	return append([]Message(nil), msgs[start:]...)
}
