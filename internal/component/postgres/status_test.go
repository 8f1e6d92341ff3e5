package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestSQLErrorsSayTheirHTTPStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code string
		want int
	}{
		{"23505", 409}, // unique_violation
		{"23503", 409}, // foreign_key_violation
		{"40001", 409}, // serialization_failure: try again
		{"40P01", 409}, // deadlock_detected: try again
		{"23514", 422}, // check_violation
		{"23502", 422}, // not_null_violation
		{"22P02", 422}, // invalid_text_representation ('abc' for an integer)
		{"22001", 422}, // string_data_right_truncation
		{"57014", 504}, // query_canceled: statementTimeout
		{"08006", 503}, // connection_failure
		{"57P01", 503}, // admin_shutdown
		{"42P01", 500}, // undefined_table: the workflow's mistake
		{"42601", 500}, // syntax_error
	}
	for _, c := range cases {
		err := describeErr(&pgconn.PgError{Code: c.code, Message: "m"}, settings{host: "db", port: "5432", database: "x"})
		// Classifiable through the wrapping a failed step adds.
		wrapped := &engine.StepError{Step: "s", Err: fmt.Errorf("to: %w", err)}
		if got := exchange.HTTPStatus(wrapped); got != c.want {
			t.Errorf("SQLSTATE %s: status %d, want %d", c.code, got, c.want)
		}
	}
	if got := exchange.HTTPStatus(describeErr(context.DeadlineExceeded, settings{})); got != 504 {
		t.Errorf("deadline: status %d, want 504", got)
	}
}

func TestUnreachableDatabaseIs503(t *testing.T) {
	t.Parallel()
	// A closed port: the driver's own ConnectError, as a stopped database gives.
	_, cerr := pgconn.Connect(context.Background(), "postgres://u@127.0.0.1:1/x?connect_timeout=5")
	if cerr == nil {
		t.Skip("something listens on port 1")
	}
	err := describeErr(cerr, settings{host: "127.0.0.1", port: "1"})
	if got := exchange.HTTPStatus(err); got != 503 {
		t.Errorf("status %d, want 503", got)
	}
}
