package postgres_test

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/component/postgres"
	"github.com/arvenza/helix/pkg/uri"
)

// TestMaxConnsBeyondInt32IsRefused: the pool size is an int32, so a larger maxConns
// is an error rather than a silently wrapped pool size (2^32+1 would give 1).
func TestMaxConnsBeyondInt32IsRefused(t *testing.T) {
	t.Parallel()
	u, err := uri.Parse("postgres://db:5432/x?maxConns=4294967297")
	if err != nil {
		t.Fatal(err)
	}
	_, err = postgres.New(nil).CreateEndpoint(u)
	if err == nil || !strings.Contains(err.Error(), `option maxConns="4294967297" is too large`) {
		t.Errorf("got %v", err)
	}
}
