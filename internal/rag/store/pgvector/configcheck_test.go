package pgvector_test

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	_ "github.com/arvenza/helix/internal/rag/store/pgvector" // registers the dsn and table checks
)

// A rag-store step's dsn and table are checked when the file is loaded, at their
// positions; the DSN (which may hold a password) is never quoted.
func TestStoreKeysChecked(t *testing.T) {
	for _, tc := range []struct{ name, step, want string }{
		{"bad dsn", `{store: pgvector, dsn: "mysql://u:secret@x"}`,
			`helix.yaml:5:43: pipelines[0].steps[0].rag-store.dsn: dsn is not a postgres:// URL or a key=value connection string (for example postgres://user:${env:PGPASSWORD}@db:5432/app)`},
		{"bad table", `{store: pgvector, table: "rag docs"}`,
			`helix.yaml:5:45: pipelines[0].steps[0].rag-store.table: table "rag docs" is not a plain SQL identifier (use letters, digits and underscores, starting with a letter or underscore (schema.table is allowed))`},
		{"empty schema part", `{store: pgvector, table: "rag."}`,
			`helix.yaml:5:45: pipelines[0].steps[0].rag-store.table: table "rag." is not a plain SQL identifier`},
		{"good", `{store: pgvector, dsn: "postgresql://db/app", table: "rag.docs_1"}`, ""},
		{"key=value dsn", `{store: pgvector, dsn: "host=db dbname=app"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.LoadBytes("helix.yaml", []byte("\npipelines:\n  - id: p\n    steps:\n      - rag-store: "+tc.step+"\n"))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("errors:\n%v\nwant %s", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "secret"):
				t.Errorf("the error quotes the password: %v", err)
			}
		})
	}
}
