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
	sessions map[sessionKey]*list.Element // of *session
	lru      list.List                    // front: most recently used
	bytes    int64                        // of every session
}

type session struct {
	key      sessionKey
	messages []Message
	bytes    int64
}

func newMemory(window, max int, maxBytes int64) *memory {
	return &memory{window: window, max: max, maxBytes: maxBytes, sessions: map[sessionKey]*list.Element{}}
}

// load returns a copy of the session's history.
func (m *memory) load(key sessionKey) []Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sessions[key]
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
func (m *memory) append(key sessionKey, msgs []Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sessions[key]
	if !ok {
		e = m.lru.PushFront(&session{key: key})
		m.sessions[key] = e
	}
	m.lru.MoveToFront(e)
	s := e.Value.(*session)
	s.messages = trimWindow(append(s.messages, msgs...), m.window)
	for len(s.messages) > 0 && sessionBytes(key, s.messages) > m.maxBytes {
		s.messages = trimWindow(s.messages, len(s.messages)-1)
	}
	m.bytes -= s.bytes
	s.bytes = sessionBytes(key, s.messages)
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
	delete(m.sessions, s.key)
	m.bytes -= s.bytes
}

// sessionBytes is what a session holds: its key and the text of its messages
// (what grows with the caller's input; the fixed size of each Message is left
// out).
func sessionBytes(key sessionKey, msgs []Message) int64 {
	n := key.size()
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
