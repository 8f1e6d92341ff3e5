package pgvector

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/arvenza/helix/internal/config"
)

// The YAML model (internal/config) holds a rag-store step's dsn and table as
// strings; what they must look like for this store is its own knowledge, checked
// when the file is loaded, at the values' positions.
func init() {
	config.RegisterValueCheck(config.CheckPgvectorDSN, checkDSN)
	config.RegisterValueCheck(config.CheckPgvectorTable, checkTable)
}

// checkDSN accepts a postgres:// URL or libpq's key=value form. It never quotes
// the DSN, which may hold a password.
func checkDSN(dsn string) (msg, hint string) {
	if u, err := url.Parse(dsn); !strings.Contains(dsn, "=") && (err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql")) {
		return "dsn is not a postgres:// URL or a key=value connection string", "for example postgres://user:${env:PGPASSWORD}@db:5432/app"
	}
	return "", ""
}

// checkTable accepts a plain SQL identifier, or schema.table.
func checkTable(table string) (msg, hint string) {
	if !validIdentifier(table) {
		return "table " + strconv.Quote(table) + " is not a plain SQL identifier",
			"use letters, digits and underscores, starting with a letter or underscore (schema.table is allowed)"
	}
	return "", ""
}

func validIdentifier(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if part == "" || len(part) > 63 {
			return false
		}
		for i, r := range part {
			ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
			if !ok {
				return false
			}
		}
	}
	return true
}
