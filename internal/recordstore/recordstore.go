// Package recordstore is the trait of components that can keep records durably
// for an audit trail: a component whose *Component has OpenRecordStore (file,
// kafka, postgres) can be an audit sink. The audit package asks the engine for
// the component of the sink URI's scheme and checks for the trait, so no code
// outside a component's folder names its scheme.
package recordstore

import (
	"context"

	"github.com/arvenza/helix/pkg/uri"
)

// Record is one record to keep: its JSON object and its id, which a store that
// can (a table with a primary key) uses to keep a record delivered twice once.
type Record struct {
	ID   string
	JSON []byte
}

// Store keeps records. Write returns nil only when every record of the batch is
// durable (fsynced, committed, acknowledged by the brokers); on an error the
// caller writes the batch again later, so a store must accept a record it may
// already hold (kept once, or at least once where the store cannot tell).
// Methods are called from one goroutine at a time.
type Store interface {
	Write(ctx context.Context, recs []Record) error
	Close(ctx context.Context) error
}

// Options shape a store. MaxFileBytes and KeepFiles rotate a file store: when
// the file would grow past MaxFileBytes it is renamed to <name>.1 (the older ones
// shifting to .2 …) and only KeepFiles rotated files are kept.
type Options struct {
	MaxFileBytes int64
	KeepFiles    int
}

// Opener is the trait: the component opens a store at the endpoint URI u.
type Opener interface {
	OpenRecordStore(u *uri.URI, o Options) (Store, error)
}
