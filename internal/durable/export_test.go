package durable

import "time"

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

// SetStoreFaultForTest has f fail the checkpoint of a run's top-level step as
// the store would, before the step runs (nil: no fault). Set it before the
// runs it concerns start.
func SetStoreFaultForTest(rt *Runtime, f func(run string, step int) error) {
	rt.storeFault = f
}

// TransientStoreErrorForTest is transientStoreError.
func TransientStoreErrorForTest(err error) bool { return transientStoreError(err) }

// StoreBackoffForTest is storeBackoff.
func StoreBackoffForTest(n int) time.Duration { return storeBackoff(n) }
