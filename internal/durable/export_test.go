package durable

// InboxHasForTest reports whether a record with key waits in w's inbox, from
// any source.
func InboxHasForTest(w *Waits, key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, items := range w.inbox {
		if k.key == key && len(unexpired(items, w.now())) > 0 {
			return true
		}
	}
	return false
}

// HeldForTest counts the waits held in memory.
func HeldForTest(w *Waits) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.memory)
}
