package config

import (
	"fmt"
	"sync"

	"go.yaml.in/yaml/v3"
)

// ValueCheck says what is wrong with a value whose meaning a module owns — the
// PostgreSQL URL of the leader lock, the Redis URL of a shared rate limit, a
// pgvector table name — as a message and a hint, or "" when nothing is. The
// decoder reports the message at the value's position. A check must not quote a
// URL it refuses: it may hold a password.
type ValueCheck func(value string) (msg, hint string)

// The values of the YAML model that a module checks. The module that uses the
// value registers its check under the name with [RegisterValueCheck] from its
// init, so that this package holds the model and no module's knowledge; a build
// without the module does not check the value (nor use it).
const (
	// CheckClusterLeader is helix.cluster.leader (internal/cluster).
	CheckClusterLeader = "helix.cluster.leader"
	// CheckRateLimitStore is an mcps: entry's rate_limit_store
	// (internal/component/mcp/security/redislimit).
	CheckRateLimitStore = "mcps.rate_limit_store"
	// CheckRequestStateStore is an MCP server's request_state.store (a Redis URL).
	CheckRequestStateStore = "mcps.request_state.store"
	// CheckPgvectorDSN and CheckPgvectorTable are a rag-store step's dsn and
	// table with store: pgvector (internal/rag/store/pgvector).
	CheckPgvectorDSN   = "rag-store.dsn"
	CheckPgvectorTable = "rag-store.table"
)

var (
	valueChecksMu sync.RWMutex
	valueChecks   = map[string]ValueCheck{}
)

// RegisterValueCheck installs the check of the value named name (one of the
// Check… constants). Registering two checks under one name panics: it is a
// programming error, like registering a step kind twice.
func RegisterValueCheck(name string, check ValueCheck) {
	valueChecksMu.Lock()
	defer valueChecksMu.Unlock()
	if _, dup := valueChecks[name]; dup {
		panic(fmt.Sprintf("config: value check %q registered twice", name))
	}
	valueChecks[name] = check
}

// swapValueChecks replaces the registered checks, for tests; the returned
// function puts the former ones back.
func swapValueChecks(m map[string]ValueCheck) (restore func()) {
	valueChecksMu.Lock()
	defer valueChecksMu.Unlock()
	old := valueChecks
	valueChecks = m
	return func() {
		valueChecksMu.Lock()
		defer valueChecksMu.Unlock()
		valueChecks = old
	}
}

// checkValue runs the check registered under name on value, recording what it
// finds at n. Nothing is checked while describing, nor when no module registered
// a check.
func (d *Decoder) checkValue(n *yaml.Node, path, name, value string) {
	if d.desc != nil {
		return
	}
	valueChecksMu.RLock()
	check := valueChecks[name]
	valueChecksMu.RUnlock()
	if check == nil {
		return
	}
	if msg, hint := check(value); msg != "" {
		d.Errorf(n, path, "%s", msg).Hint = hint
	}
}
