// Package cluster elects one leader among the replicas of a Helix application, so
// that singleton triggers (timer://, file:// and postgres:// polling — the
// components whose spec sets Singleton) fire on one replica at a time while every
// other trigger (HTTP, MCP, Kafka consumer groups) runs on all of them.
//
// [Leader] is one replica's side of an election; [Postgres] implements it with a
// PostgreSQL session-level advisory lock held on a dedicated connection: the replica
// whose pg_try_advisory_lock succeeds is the leader for as long as that session
// lives. PostgreSQL grants the lock to one session at a time, and ends a session's
// locks with the session — when the leader resigns, exits, or its connection is
// found dead by the server — so at most one replica holds it at any moment.
//
// [Run] drives a Leader for an application: campaign, run the leader's work for the
// term, stop it when the term ends, campaign again.
package cluster

import (
	"context"
	"errors"
	"time"
)

// Leader is one replica's side of a leader election. A Leader is used by one
// goroutine at a time for Campaign and Resign; IsLeader is safe from any goroutine.
type Leader interface {
	// Campaign blocks until this replica becomes the leader, retrying while another
	// replica leads or the coordinator cannot be reached, and returns the term: a
	// context cancelled as soon as leadership is lost (the lock's connection failed
	// a check or broke) or given up with Resign; context.Cause(term) says why. It
	// returns ctx's error when ctx ends first.
	Campaign(ctx context.Context) (term context.Context, err error)
	// IsLeader reports whether a term is running now.
	IsLeader() bool
	// Resign ends the current term, if any (cancelling its context with
	// ErrResigned), releases the lock so another replica can take it, and closes
	// what Campaign opened. Campaign may be called again afterwards.
	Resign(ctx context.Context) error
}

// ErrResigned is the cause of a term that ended with Resign.
var ErrResigned = errors.New("leadership resigned")

// ErrLost wraps the cause of a term that ended because the lock could no longer be
// vouched for: errors.Is(context.Cause(term), ErrLost).
var ErrLost = errors.New("leadership lost")

// Run campaigns with l until ctx ends. For each term it calls lead with a context
// that is done when the term ends or ctx ends (context.Cause says which); lead does
// the leader's work, and must return once that context is done, after stopping the
// work: Run resigns only after lead returns, so the lock
// is held until the work has stopped and no other replica starts it earlier. When
// lead returns an error before its term ended (its work could not start), Run
// resigns and waits pause before campaigning again, so that another replica gets
// the chance. Run returns when ctx ends, after resigning.
func Run(ctx context.Context, l Leader, pause time.Duration, lead func(term context.Context) error) {
	defer func() { _ = l.Resign(context.WithoutCancel(ctx)) }()
	for ctx.Err() == nil {
		term, err := l.Campaign(ctx)
		if err != nil {
			return // ctx ended
		}
		leadCtx, cancel := context.WithCancelCause(term)
		stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		err = lead(leadCtx)
		stop()
		cancel(nil)
		_ = l.Resign(context.WithoutCancel(ctx))
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}
}
