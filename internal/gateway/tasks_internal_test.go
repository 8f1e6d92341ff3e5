package gateway

import (
	"fmt"
	"testing"
	"time"
)

// The task table forgets a task when its ttl ends (so that a later request
// finds it unknown), and drops expired tasks as it grows, so that a gateway
// relaying tasks for long does not hold them all.
func TestTaskTableForgetsExpiredTasks(t *testing.T) {
	now := time.Unix(1000, 0)
	tt := &taskTable{now: func() time.Time { return now }}
	tt.put("short", relayedTask{owner: "alice"}, time.Minute)
	tt.put("long", relayedTask{owner: "alice"}, 0) // no ttl: the cap
	if _, ok := tt.get("short", "alice"); !ok {
		t.Fatal("a task within its ttl is unknown")
	}
	now = now.Add(time.Minute)
	if _, ok := tt.get("short", "alice"); ok {
		t.Error("a task past its ttl is still known")
	}
	if _, ok := tt.get("long", "alice"); !ok {
		t.Error("a task without a ttl was forgotten before the cap")
	}
	for i := range taskPruneAt + 10 {
		tt.put(fmt.Sprint("old-", i), relayedTask{owner: "bob"}, time.Second)
		now = now.Add(time.Second) // each expires before the next comes
	}
	tt.mu.Lock()
	n := len(tt.tasks)
	tt.mu.Unlock()
	if n >= taskPruneAt {
		t.Errorf("the table holds %d tasks, most of them expired", n)
	}
	now = now.Add(maxTaskTTL)
	if _, ok := tt.get("long", "alice"); ok {
		t.Error("a task without a ttl outlived the cap")
	}
}
