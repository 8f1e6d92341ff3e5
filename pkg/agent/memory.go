package agent

import (
	"container/list"
	"sync"
)

// memory keeps the last window messages of each session, for at most max
// sessions and maxBytes bytes of messages in all (a caller choosing session ids
// and long messages must not be able to grow it without bound); the least
// recently used session is evicted first. Safe for concurrent use. Two runs of
// one session at once both start from the same history and the later to finish
// appends last.
type memory struct {
	window, max int
	maxBytes    int64

	mu       sync.Mutex
	sessions map[string]*list.Element // of *session
	lru      list.List                // front: most recently used
	bytes    int64                    // of every session
}

type session struct {
	id       string
	messages []Message
	bytes    int64
}

func newMemory(window, max int, maxBytes int64) *memory {
	return &memory{window: window, max: max, maxBytes: maxBytes, sessions: map[string]*list.Element{}}
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

// append adds a run's messages to the session, trims it to the window (and, if it
// alone exceeds maxBytes, to what fits) and evicts the least recently used
// sessions beyond max sessions or maxBytes.
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
	for len(s.messages) > 0 && sessionBytes(id, s.messages) > m.maxBytes {
		s.messages = trimWindow(s.messages, len(s.messages)-1)
	}
	m.bytes -= s.bytes
	s.bytes = sessionBytes(id, s.messages)
	m.bytes += s.bytes
	if len(s.messages) == 0 {
		m.remove(e)
	}
	for m.lru.Len() > m.max || m.bytes > m.maxBytes {
		m.remove(m.lru.Back())
	}
}

func (m *memory) remove(e *list.Element) {
	s := e.Value.(*session)
	m.lru.Remove(e)
	delete(m.sessions, s.id)
	m.bytes -= s.bytes
}

// sessionBytes is what a session holds: its id and the text of its messages
// (what grows with the caller's input; the fixed size of each Message is left
// out).
func sessionBytes(id string, msgs []Message) int64 {
	n := int64(len(id))
	for _, msg := range msgs {
		n += int64(len(msg.Text) + len(msg.ToolCallID))
		for _, c := range msg.ToolCalls {
			n += int64(len(c.ID) + len(c.Name) + len(c.Arguments))
		}
	}
	return n
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
