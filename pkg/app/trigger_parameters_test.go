package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
)

// A trigger's parameters: are URI options, as a target's are: the values are
// URL-encoded into the query, ${env:…} is resolved in them and the URI shown to MCP
// clients keeps the reference.
func TestTriggerParametersJoinTheURI(t *testing.T) {
	t.Setenv("HELIX_TEST_SHIPPED", "true")
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: ship
    trigger:
      uri: postgres://db/shop?delay=500ms
      parameters:
        maxRows: 50
        query: SELECT id, note FROM orders WHERE note <> 'a&b=c' AND NOT shipped
        onConsume: "UPDATE orders SET shipped = ${env:HELIX_TEST_SHIPPED} WHERE id = :id"
    steps:
      - log: shipped
`))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Workflows[0]
	const want = "postgres://db/shop?delay=500ms&maxRows=50" +
		"&query=SELECT+id%2C+note+FROM+orders+WHERE+note+%3C%3E+%27a%26b%3Dc%27+AND+NOT+shipped" +
		"&onConsume=UPDATE+orders+SET+shipped+%3D+true+WHERE+id+%3D+%3Aid"
	if w.From != want {
		t.Errorf("From\n got %s\nwant %s", w.From, want)
	}
	if !strings.Contains(w.FromRaw, "shipped+%3D+${env:HELIX_TEST_SHIPPED}+WHERE") {
		t.Errorf("FromRaw %s keeps no ${env:…} reference", w.FromRaw)
	}
	if w.FromPos.Line != 5 || w.FromPos.Col != 12 {
		t.Errorf("FromPos %v, want the uri: value (5:12)", w.FromPos)
	}
	if _, err := buildYAML(t, `
workflows:
  - id: ship
    trigger:
      uri: postgres://db/shop
      parameters:
        query: SELECT id FROM orders WHERE NOT shipped
    steps:
      - log: shipped
`); err != nil {
		t.Errorf("build: %v", err)
	}
}

// A trigger's parameters are checked as a target's: an unknown or invalid option is
// reported at the trigger's URI with the same message, and a parameters: that is
// not a mapping of scalars is reported where it is.
func TestTriggerParametersMistakes(t *testing.T) {
	t.Parallel()
	src := `workflows:
  - id: poll
    trigger:
      uri: postgres://db/shop
      parameters:
        query: SELECT 1
        delya: 1s
  - id: rows
    trigger:
      uri: postgres://db/shop
      parameters: {query: SELECT 2, maxRows: lots}
  - id: send
    trigger: direct://send
    steps:
      - target:
          uri: postgres://db/shop
          parameters:
            query: SELECT 1
            delya: 1s
`
	if _, err := config.LoadBytes("helix.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	_, err := buildYAML(t, src)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`helix.yaml:4:12: workflows[0].trigger: `,
		`helix.yaml:10:12: workflows[1].trigger: `,
		`maxRows`,
		`helix.yaml:16:16: workflows[2].steps[0]: `,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
	// The trigger's complaint about delya is the target's.
	lines := strings.Split(msg, "\n")
	var trig, targ string
	for _, l := range lines {
		if strings.Contains(l, "delya") {
			_, rest, _ := strings.Cut(l, ": ")
			_, rest, _ = strings.Cut(rest, ": ")
			if strings.HasPrefix(l, "helix.yaml:4:") {
				trig = rest
			} else {
				targ = rest
			}
		}
	}
	if trig == "" || !strings.Contains(trig, `unknown option "delya" (did you mean "delay"?)`) {
		t.Errorf("trigger's delya error %q", trig)
	}
	if trig != targ {
		t.Errorf("the trigger's error\n%s\nis not the target's\n%s", trig, targ)
	}

	_, err = config.LoadBytes("helix.yaml", []byte(`workflows:
  - id: a
    trigger:
      uri: direct://a
      parameters: [query]
  - id: b
    trigger:
      uri: direct://b
      parameters:
        query: {sql: SELECT 1}
`))
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want config errors, got %v", err)
	}
	for _, want := range []string{
		`helix.yaml:5:19: workflows[0].trigger.parameters: parameters must be a mapping`,
		`helix.yaml:10:16: workflows[1].trigger.parameters.query: `,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%s", want, err)
		}
	}
}

// A polling statement written as parameters: runs as written: quotes, commas, an
// ampersand and an equals sign in the SQL reach PostgreSQL unchanged.
func TestPostgresPollingTriggerWithParameters(t *testing.T) {
	t.Parallel()
	db := testtools.PostgresDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE jobs (id int PRIMARY KEY, note text, done bool NOT NULL DEFAULT false);
CREATE TABLE handled (id int, note text);
INSERT INTO jobs (id, note) VALUES (1, 'a&b=c'), (2, 'plain'), (3, 'skip me')`); err != nil {
		t.Fatal(err)
	}
	startYAML(t, `workflows:
  - id: work
    trigger:
      uri: "`+db+`"
      parameters:
        delay: 20ms
        query: >-
          SELECT id, note FROM jobs
          WHERE NOT done AND note <> 'skip me'
          ORDER BY id FOR UPDATE SKIP LOCKED
        onConsume: UPDATE jobs SET done = true WHERE id = :id
    steps:
      - target:
          uri: "`+db+`"
          parameters: {operation: insert, returning: "false", table: handled}
`)
	deadline := time.Now().Add(testtools.StartupBound)
	for pgCount(t, db, "SELECT count(*) FROM jobs WHERE done") < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the rows were not handled in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := pgCount(t, db, "SELECT count(*) FROM handled WHERE note IN ('a&b=c', 'plain')"); n != 2 {
		t.Errorf("%d rows handled, want 2", n)
	}
	if n := pgCount(t, db, "SELECT count(*) FROM jobs WHERE done AND id = 3"); n != 0 {
		t.Error("the row the query excludes was handled")
	}
}
