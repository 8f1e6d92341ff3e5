package postgres

import "github.com/arvenza/helix/pkg/component"

// Headers the component writes.
const (
	// HeaderRowCount holds the number of rows a statement returned or affected (int64).
	HeaderRowCount = "HelixPostgresRowCount"
	// HeaderCommandTag holds PostgreSQL's command tag ("INSERT 0 3", "UPDATE 1", "SELECT 5").
	HeaderCommandTag = "HelixPostgresCommandTag"
	// HeaderChannel holds the channel a LISTEN consumer received a notification on.
	HeaderChannel = "HelixPostgresChannel"
	// HeaderNotifyPID holds the process ID of the backend that sent the notification (int64).
	HeaderNotifyPID = "HelixPostgresNotifyPid"
)

// Operations of the producer.
const (
	OpQuery  = "query"
	OpInsert = "insert"
	OpUpdate = "update"
	OpDelete = "delete"
	OpExec   = "exec"
)

// Spec is the postgres:// component's description: options, headers, direction.
var Spec = &component.Spec{
	Scheme:    "postgres",
	Summary:   "query and change a PostgreSQL database; poll a table or LISTEN to a channel",
	Direction: component.Both,
	Syntax:    "postgres://[user[:password]@]host[:port]/database[?options]",
	Description: `A target runs one SQL statement per exchange through a connection pool (jackc/pgx v5,
pgxpool) and makes the result the body: operation=query answers a list of row maps,
insert answers the inserted row (a map body) or rows (a list body) as RETURNING * gives
them, update and delete answer the changed rows, exec keeps the body. Parameters are
always bound, never spliced into the SQL: $1, $2 … take the values of a list, :name takes
the key name of a map. Table and column names (table=, the keys of an inserted or updated
map) are quoted identifiers. Numbers and booleans are bound as text, so PostgreSQL
converts them by the column's type as it would a literal (5.5 for an integer is an error).

Values come back JSON-natural: integers as numbers; numeric as a number when a float64
holds it exactly and as a string otherwise (no precision is lost); timestamptz as RFC 3339
text; date as YYYY-MM-DD; uuid as text; json and jsonb as the decoded value; bytea as bytes;
NULL as null.

SQL taken from the body (a {"query": …, "params": […]} map, as the spec's database query
tool builds it) is the sender's SQL: whatever built it decides what runs. allowedColumns
limits such SQL to the listed tables and columns, one statement, no literals, comments or
function calls, and WHERE conditions of the form column operator $n; PostgreSQL's own
parser (libpg_query) checks that it reads and writes listed columns only: no *, no table
or alias used as a column (a whole row), no NATURAL JOIN or USING, INSERT with a column
list, UPDATE and DELETE with a narrowing WHERE unless allowUnfiltered=true. query= and
where= are held to the same column rules when the endpoint is made; see docs/postgres.md.

As a trigger it polls (query=, delay=, onConsume= marking each row the workflow handled,
all in one transaction per batch) or, with channel=, LISTENs and turns each NOTIFY into an
exchange (a JSON payload is decoded). Credentials come from the URI, user=/password=
(write ${env:NAME}) or the PG* environment variables; they never appear in a message.

With helix.cluster.leader set, a polling or LISTEN trigger runs on the elected leader only
(docs/scaling.md), so a row or notification is not handled once per replica.`,
	Path: []component.PathPart{
		{Name: "user:password@", Description: "credentials (optional; user= and password= or PGUSER/PGPASSWORD otherwise); the password is never shown"},
		{Name: "host:port", Required: true, Description: "the server; the port defaults to 5432"},
		{Name: "database", Required: true, Description: "the database name"},
	},
	Options: []component.Option{
		{Name: "operation", Type: component.TypeEnum, Enum: []string{OpQuery, OpInsert, OpUpdate, OpDelete, OpExec}, Default: OpQuery, Role: component.ProducerOnly, Since: "0.2",
			Description: "what a target does: query (rows as a list of maps), insert (table=, a map or a list of maps), update and delete (table=, where=), exec (a statement whose rows are discarded)"},
		{Name: "query", Type: component.TypeString, Role: component.Both, Since: "0.2",
			Description: "the SQL. A target binds $1… from a list body (a scalar body is $1) and :name from a map body; without it a target takes {\"query\": …, \"params\": […]} or SQL text from the body. A polling trigger runs it every delay (a trigger with channel= LISTENs and leaves query= to the target)"},
		{Name: "table", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.2",
			Description: "the table of insert, update and delete (schema.table allowed); quoted as an identifier"},
		{Name: "where", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.2",
			Description: "the condition of update and delete, with :name parameters bound from the body map (write where=true to change every row)"},
		{Name: "returning", Type: component.TypeBool, Default: "true", Role: component.ProducerOnly, Since: "0.2",
			Description: "insert, update and delete answer the rows RETURNING * gives; false keeps the body and only sets the row count"},
		{Name: "insertMode", Type: component.TypeEnum, Enum: []string{"values", "copy"}, Default: "values", Role: component.ProducerOnly, Since: "0.2",
			Description: "how a list is inserted: values (one INSERT … VALUES statement per 1000 rows, in one transaction, RETURNING rows) or copy (the COPY protocol: fastest, keeps the body, all maps must have the same keys)"},
		{Name: "allowedColumns", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.2",
			Description: "comma-separated tables and columns; when set, SQL from the body, query= and where= may read and write only these (no *, no whole-row references, UPDATE and DELETE need a narrowing WHERE; the guard rules of docs/postgres.md), inserted or updated maps may only have these keys, and insert, update and delete answer only these columns"},
		{Name: "allowUnfiltered", Type: component.TypeBool, Default: "false", Role: component.ProducerOnly, Since: "0.2",
			Description: "with allowedColumns, let UPDATE and DELETE (from the body, or where=) change rows without a WHERE that narrows them to given values (column = $n, column IN (…)); off, WHERE NOT id = $1, WHERE id <> $1 and a missing WHERE are refused"},
		{Name: "user", Type: component.TypeString, Role: component.Both, Since: "0.2",
			Description: "the user name, when the URI has none"},
		{Name: "password", Type: component.TypeString, Secret: true, Role: component.Both, Since: "0.2",
			Description: "the password, when the URI has none; write password=${env:PGPASSWORD}"},
		{Name: "sslmode", Type: component.TypeEnum, Enum: []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}, Default: "prefer", Role: component.Both, Since: "0.2",
			Description: "TLS to the server, as libpq's sslmode"},
		{Name: "maxConns", Type: component.TypeInt, Default: "10", Role: component.Both, Since: "0.2",
			Description: "the pool's size: connections open at most (endpoints with the same server, database, user and pool settings share one pool)"},
		{Name: "statementTimeout", Type: component.TypeDuration, Role: component.Both, Since: "0.2",
			Description: "the server cancels a statement that runs longer (PostgreSQL's statement_timeout); unset means the server's setting"},
		{Name: "connectTimeout", Type: component.TypeDuration, Default: "10s", Role: component.Both, Since: "0.2",
			Description: "how long opening one connection may take"},
		{Name: "delay", Type: component.TypeDuration, Default: "1s", Role: component.ConsumerOnly, Since: "0.2",
			Description: "a polling trigger's pause after a poll that found fewer than maxRows rows (also the wait before reconnecting after an error)"},
		{Name: "maxRows", Type: component.TypeInt, Default: "100", Role: component.ConsumerOnly, Since: "0.2",
			Description: "a polling trigger handles at most this many rows per batch (one transaction)"},
		{Name: "onConsume", Type: component.TypeString, Role: component.ConsumerOnly, Since: "0.2",
			Description: "statement run for each row the workflow handled, in the batch's transaction, with :column parameters from the row (UPDATE jobs SET done = true WHERE id = :id); without it rows are not marked and come again"},
		{Name: "onConsumeFailed", Type: component.TypeString, Role: component.ConsumerOnly, Since: "0.2",
			Description: "statement run for each row whose exchange failed, with :column parameters from the row; without it a failed row stays unmarked and is retried by the next poll"},
		{Name: "channel", Type: component.TypeString, Role: component.ConsumerOnly, Since: "0.2",
			Description: "LISTEN to this channel instead of polling: each NOTIFY becomes an InOnly exchange (the payload, JSON-decoded when it is JSON)"},
	},
	Headers: []component.Header{
		{Name: HeaderRowCount, Type: "int", Use: component.Writes, Role: component.ProducerOnly, Description: "rows returned or affected by the statement"},
		{Name: HeaderCommandTag, Type: "string", Use: component.Writes, Role: component.ProducerOnly, Description: "PostgreSQL's command tag, such as INSERT 0 3"},
		{Name: HeaderChannel, Type: "string", Use: component.Writes, Role: component.ConsumerOnly, Description: "the channel of a LISTEN trigger's notification"},
		{Name: HeaderNotifyPID, Type: "int", Use: component.Writes, Role: component.ConsumerOnly, Description: "the process ID of the backend that sent the NOTIFY"},
	},
	Examples: []component.Example{
		{URI: "postgres://db:5432/orders?operation=query", Description: "run the SQL of the body ({\"query\": \"… $1\", \"params\": [42]}) and answer the rows"},
		{URI: "postgres://db:5432/orders?operation=query&query=SELECT+*+FROM+orders+WHERE+id+%3D+:orderId", Description: "a fixed query with :orderId from the body map"},
		{URI: "postgres://localhost:5432/billing?operation=insert&table=invoices", Description: "insert the body map as a row and answer the row with its generated id"},
		{URI: "postgres://app@db/jobs?query=SELECT+*+FROM+jobs+WHERE+NOT+done+ORDER+BY+id&onConsume=UPDATE+jobs+SET+done+%3D+true+WHERE+id+%3D+:id&delay=500ms", Description: "poll a job table, marking each handled row in the batch's transaction"},
		{URI: "postgres://db/app?channel=orders_changed&password=${env:PGPASSWORD}", Description: "trigger a workflow for each NOTIFY on orders_changed"},
	},
	Since:          "0.2",
	Singleton:      true,
	FreshExchanges: true,
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
