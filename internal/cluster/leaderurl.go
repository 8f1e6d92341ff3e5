package cluster

import (
	"net/url"
	"strings"

	"github.com/arvenza/helix/internal/config"
)

// The YAML model (internal/config) holds helix.cluster.leader as a string; what
// the URL must look like is this package's knowledge, checked when the file is
// loaded, at the value's position.
func init() { config.RegisterValueCheck(config.CheckClusterLeader, checkLeaderURL) }

// checkLeaderURL says what is wrong with the shape of a leader URL, or "". The
// URL may hold a password: no message quotes it.
func checkLeaderURL(raw string) (msg, hint string) {
	const example = "write postgres://user:${env:PGPASSWORD}@host:5432/database"
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the URL, which may hold a password.
		return "the leader URL does not parse as a URL", example
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		if u.Scheme == "" {
			return "the leader URL has no scheme", example
		}
		return "leader election needs a postgres:// URL, not " + u.Scheme + "://", "the leader lock is a PostgreSQL advisory lock; " + example
	}
	if u.Host == "" {
		return "the leader URL names no host", example
	}
	if strings.Trim(u.Path, "/") == "" {
		return "the leader URL names no database", example
	}
	return "", ""
}
