package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/durable"
)

// HeaderIdempotencyKey is the record header that carries the idempotency key of
// the durable run's step that sent the record. The idempotent producer drops the
// duplicates of its own retries, but not a record sent again by a run resumed
// after a crash (a new producer id): consumers that must see each record once
// drop records whose key they have seen.
const HeaderIdempotencyKey = "Helix-Idempotency-Key"

// addIdempotencyKey adds the key of ctx's durable step to rec, if any.
func addIdempotencyKey(ctx context.Context, rec *kgo.Record) {
	if key, ok := durable.KeyFrom(ctx); ok {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: HeaderIdempotencyKey, Value: []byte(key)})
	}
}
