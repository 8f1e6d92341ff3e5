package config

import (
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ClusterConfig is `helix.cluster`: how replicas of one application running the
// same files coordinate. With Leader set they elect a leader through a PostgreSQL
// advisory lock (internal/cluster), and singleton triggers (timer://, file:// and
// postgres:// polling) run on the leader only; without it every trigger runs in
// every process, as before.
type ClusterConfig struct {
	// Leader is helix.cluster.leader: the postgres:// (or postgresql://) URL of the
	// database holding the lock; "" means no election.
	Leader    string
	LeaderPos Pos
	// Name is helix.cluster.name: replicas with the same name (and database) elect
	// one leader; "" means helix.name, or "helix".
	Name string
	// LockID is helix.cluster.lock_id: the advisory lock key, when it must be a
	// given number (a database whose other users take advisory locks); nil means a
	// key derived from Name.
	LockID *int64
	// RetryInterval, CheckInterval and CheckTimeout are helix.cluster.retry_interval
	// (how often a follower tries to take the lock), check_interval (how often the
	// leader checks its connection) and check_timeout (how long one check, or one
	// attempt, may take); 0 means internal/cluster's default.
	RetryInterval time.Duration
	CheckInterval time.Duration
	CheckTimeout  time.Duration
	// Pos is where helix.cluster was written.
	Pos Pos
}

// clusterShape declares helix.cluster: its keys, types and descriptions drive
// decoding, the JSON Schema and the docs.
var clusterShape = Shape{Type: TypeObject, What: "helix.cluster",
	Description: "Replicas of this application: with leader set they elect one leader through a PostgreSQL advisory lock, and timer://, file:// and postgres:// triggers run on the leader only (docs/scaling.md).",
	Keys: []Key{
		{Name: "leader", Required: true, Shape: str("postgres://user:password@host:5432/database[?params]: the database holding the leader lock; write the password as ${env:NAME}. libpq parameters such as sslmode and connect_timeout, and server settings such as tcp_keepalives_idle, may follow ?.")},
		{Name: "name", Shape: str("The election's name: replicas with the same name and database elect one leader. Default helix.name, or helix.")},
		{Name: "lock_id", Shape: Shape{Type: TypeInt64,
			Description: "The advisory lock key (a 64-bit integer), when the database's other users take advisory locks too. Default: derived from name."}},
		{Name: "retry_interval", Shape: Shape{Type: TypeDuration,
			Description: "How often a replica that is not the leader tries to take the lock (and to reconnect). Default 1s."}},
		{Name: "check_interval", Shape: Shape{Type: TypeDuration,
			Description: "How often the leader checks the connection that holds the lock; a failed check ends its leadership at once. Default 1s."}},
		{Name: "check_timeout", Shape: Shape{Type: TypeDuration,
			Description: "How long one check of the leader's connection, or one attempt to take the lock, may take. Default 2s."}},
	}}

// decodeCluster reads helix.cluster into c as clusterShape declares it.
// internal/cluster checks the leader URL's shape (scheme, host, database) through
// its registered value check and parses the rest when the application is built.
// Values are never echoed: the URL may hold a password.
func decodeCluster(d *Decoder, n *yaml.Node, path string, c *ClusterConfig) {
	v := d.Decode(n, path, "helix.cluster", &clusterShape)
	if d.desc != nil {
		return
	}
	c.Pos = d.Pos(n)
	c.Leader, c.Name = v.String("leader"), v.String("name")
	c.RetryInterval, c.CheckInterval, c.CheckTimeout = v.Duration("retry_interval"), v.Duration("check_interval"), v.Duration("check_timeout")
	if ln := v.NodeOf("leader"); ln != nil {
		c.LeaderPos = d.Pos(ln)
		if c.Leader != "" {
			d.checkValue(ln, v.PathOf("leader"), CheckClusterLeader, c.Leader) // a PostgreSQL URL: internal/cluster checks it
		}
	}
	if nn := v.NodeOf("name"); nn != nil && strings.TrimSpace(c.Name) == "" {
		d.Errorf(nn, v.PathOf("name"), "the cluster name is empty").Hint = "leave the key out to use helix.name"
	}
	if v.Has("lock_id") {
		id := v.Int64("lock_id")
		c.LockID = &id
	}
}
