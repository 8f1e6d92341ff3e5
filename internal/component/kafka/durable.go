package kafka

import (
	"fmt"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// A record is one delivery: a durable workflow's run for it is named by its
// topic, partition and offset, so that the record read again after a crash
// (before its offset was committed) finds its run instead of starting another.
func init() { durable.RegisterRunKey(recordRunKey) }

func recordRunKey(ex *exchange.Exchange) (string, bool) {
	m := ex.In()
	topic, ok := m.Header(HeaderTopic).(string)
	if !ok || topic == "" {
		return "", false
	}
	p, okP := m.Header(HeaderPartition).(int)
	o, okO := m.Header(HeaderOffset).(int64)
	if !okP || !okO {
		return "", false
	}
	return fmt.Sprintf("%s/%d/%d", topic, p, o), true
}
