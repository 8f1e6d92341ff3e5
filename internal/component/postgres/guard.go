package postgres

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	pgquery "github.com/wasilibs/go-pgquery"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The allowedColumns guard reads SQL with PostgreSQL's own parser (libpg_query as
// WebAssembly through wasilibs/go-pgquery, which needs no cgo and answers
// pg_query_go's parse-tree types) rather than with the token check of sql.go: only the real
// grammar says for sure which names are columns, which are tables and where a
// `*` or a whole-row reference hides (t.*, (t).*, row_to_json(t), TABLE t, a CTE, a
// subquery, RETURNING, ON CONFLICT …). It walks every node of the parse tree, so a
// column reference anywhere in the statement is seen, and it refuses rather than
// expands: `*` and whole rows are refused, never rewritten to the listed columns.

// maxGuardedSQL bounds the SQL the guard parses: a statement a caller may write
// against a handful of listed columns is short, and parsing and walking a huge one
// costs time in proportion to its size, far more than any call should spend
// (BENCHMARKS.md, "Figures behind limits").
const maxGuardedSQL = 64 << 10

// columnGuard judges one statement against allowedColumns. Names are compared as
// the parser gives them: unquoted names are folded to lower case as PostgreSQL
// folds them, and a quoted "ID" is not the listed id (it is another column).
type columnGuard struct {
	allowed         map[string]bool // lower-case listed names (tables and columns)
	allowUnfiltered bool            // UPDATE and DELETE may go without a narrowing WHERE
	source          string          // where the SQL came from, for messages: "from the body", "of option query="
	statement       string          // names the statement in messages when the checked SQL only stands in for it
}

// guardError is a refusal: what is not allowed, where and what to do.
type guardError struct {
	source string
	offset int // byte offset in the SQL; -1 when unknown
	msg    string
}

func (e *guardError) Error() string {
	if e.offset >= 0 {
		return fmt.Sprintf("allowedColumns refuses the SQL %s at offset %d: %s", e.source, e.offset, e.msg)
	}
	return fmt.Sprintf("allowedColumns refuses the SQL %s: %s", e.source, e.msg)
}

// check parses sql (with $n parameters; bind :name first) and refuses it unless it
// is one SELECT, INSERT, UPDATE or DELETE that reads and writes listed columns only.
func (g *columnGuard) check(sql string) error {
	if len(sql) > maxGuardedSQL {
		return &guardError{g.source, -1, fmt.Sprintf("it is %d bytes long; the guard reads at most %d", len(sql), maxGuardedSQL)}
	}
	tree, err := pgquery.Parse(sql)
	if err != nil {
		return &guardError{g.source, -1, fmt.Sprintf("PostgreSQL's parser does not accept it (%v)", err)}
	}
	if len(tree.Stmts) != 1 {
		return &guardError{g.source, -1, fmt.Sprintf("it holds %d statements; send exactly one", len(tree.Stmts))}
	}
	stmt := tree.Stmts[0].Stmt
	switch stmt.GetNode().(type) {
	case *pg_query.Node_SelectStmt, *pg_query.Node_InsertStmt, *pg_query.Node_UpdateStmt, *pg_query.Node_DeleteStmt:
	default:
		return &guardError{g.source, int(tree.Stmts[0].StmtLocation), "only SELECT, INSERT, UPDATE and DELETE are allowed"}
	}
	relations, ctes := relationNames(stmt)
	w := &guardWalk{g: g, relations: relations, ctes: ctes}
	w.message(stmt.ProtoReflect(), -1)
	return w.err
}

// relationNames collects every name the statement gives a row source: tables and
// their aliases, CTEs, aliased subqueries, functions and joins, and EXCLUDED of ON
// CONFLICT. Such a name used as a column is a whole-row reference. Scopes are not
// tracked: a name that is a relation anywhere in the statement is never a column.
// The CTE names come separately: a FROM may name them without listing them, as
// their own columns are checked where the CTE is defined.
func relationNames(stmt *pg_query.Node) (names, ctes map[string]bool) {
	names, ctes = map[string]bool{}, map[string]bool{}
	walkMessages(stmt.ProtoReflect(), func(m protoreflect.Message) {
		switch n := m.Interface().(type) {
		case *pg_query.RangeVar:
			names[strings.ToLower(n.Relname)] = true
		case *pg_query.Alias:
			names[strings.ToLower(n.Aliasname)] = true
		case *pg_query.CommonTableExpr:
			names[strings.ToLower(n.Ctename)] = true
			ctes[strings.ToLower(n.Ctename)] = true
		case *pg_query.OnConflictClause:
			names["excluded"] = true
		}
	})
	delete(names, "")
	return names, ctes
}

// walkMessages calls f for m and every message below it, depth first.
func walkMessages(m protoreflect.Message, f func(protoreflect.Message)) {
	f(m)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walkMessages(l.Get(i).Message(), f)
			}
			return true
		}
		walkMessages(v.Message(), f)
		return true
	})
}

// guardWalk visits the parse tree and keeps the first refusal.
type guardWalk struct {
	g         *columnGuard
	relations map[string]bool
	ctes      map[string]bool
	err       error
}

func (w *guardWalk) refuse(offset int32, format string, args ...any) {
	if w.err == nil {
		w.err = &guardError{w.g.source, int(offset), fmt.Sprintf(format, args...)}
	}
}

// message checks m and then everything below it. near is the offset of the
// closest enclosing node with a location, for nodes that have none (A_Star).
func (w *guardWalk) message(m protoreflect.Message, near int32) {
	if w.err != nil {
		return
	}
	if loc := m.Descriptor().Fields().ByName("location"); loc != nil && loc.Kind() == protoreflect.Int32Kind {
		if l := int32(m.Get(loc).Int()); l >= 0 {
			near = l
		}
	}
	w.node(m.Interface(), near)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind || w.err != nil {
			return w.err == nil
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				w.message(l.Get(i).Message(), near)
			}
			return true
		}
		w.message(v.Message(), near)
		return true
	})
}

// node applies the rule of one kind of node; its children are visited after.
func (w *guardWalk) node(n proto.Message, near int32) {
	switch n := n.(type) {
	case *pg_query.A_Star:
		w.refuse(near, "* reads every column, listed or not; name the columns you need")
	case *pg_query.ColumnRef:
		w.columnRef(n)
	case *pg_query.RangeVar:
		w.table(n)
	case *pg_query.Alias:
		if len(n.Colnames) > 0 {
			w.refuse(near, "the column list of alias %q renames a source's columns by position; drop it and name listed columns", n.Aliasname)
		}
	case *pg_query.JoinExpr:
		if n.IsNatural {
			w.refuse(near, "NATURAL JOIN joins on columns it does not name; write JOIN … ON with listed columns")
		} else if len(n.UsingClause) > 0 {
			w.refuse(near, "JOIN … USING yields merged columns; write JOIN … ON with listed columns")
		}
	case *pg_query.InsertStmt:
		if n.SelectStmt != nil && len(n.Cols) == 0 {
			w.refuse(near, "INSERT without a column list writes columns by position; list the columns: INSERT INTO t (a, b) …")
		}
		w.targetColumns(n.Cols, "INSERT")
	case *pg_query.UpdateStmt:
		w.targetColumns(n.TargetList, "UPDATE … SET")
		w.needsFilter("UPDATE", n.WhereClause, near)
	case *pg_query.DeleteStmt:
		w.needsFilter("DELETE", n.WhereClause, near)
	case *pg_query.OnConflictClause:
		w.targetColumns(n.TargetList, "ON CONFLICT … SET")
	case *pg_query.IndexElem:
		if n.Name != "" {
			w.column(n.Name, near)
		}
	case *pg_query.MergeStmt:
		w.refuse(near, "MERGE is not allowed")
	}
}

// columnRef checks a column reference: [qualifier.]…column. The column must be
// listed and must not name a row source (a whole-row reference: SELECT t FROM t,
// row_to_json(t)); a qualifier must be a row source or a listed name.
func (w *guardWalk) columnRef(c *pg_query.ColumnRef) {
	var parts []string
	for _, f := range c.Fields {
		switch f.GetNode().(type) {
		case *pg_query.Node_AStar:
			return // refused by the A_Star case, with this ColumnRef's location
		case *pg_query.Node_String_:
			parts = append(parts, f.GetString_().Sval)
		default:
			w.refuse(c.Location, "an unexpected column reference")
			return
		}
	}
	if len(parts) == 0 {
		w.refuse(c.Location, "an empty column reference")
		return
	}
	for _, q := range parts[:len(parts)-1] {
		if !w.relations[strings.ToLower(q)] && !w.g.allowed[q] {
			w.refuse(c.Location, "%q is neither a table of the statement nor in allowedColumns", q)
			return
		}
	}
	w.column(parts[len(parts)-1], c.Location)
}

// column checks one column name.
func (w *guardWalk) column(name string, at int32) {
	lower := strings.ToLower(name)
	switch {
	case w.relations[lower]:
		w.refuse(at, "%q names a table or alias of the statement: used as a column it is the whole row, every column, listed or not; name listed columns instead", name)
	case !w.g.allowed[name]:
		w.refuse(at, "column %q is not in allowedColumns; list it there or leave it out", name)
	}
}

// table checks a row source: its name, and its schema if it has one, must be listed.
func (w *guardWalk) table(r *pg_query.RangeVar) {
	if w.ctes[strings.ToLower(r.Relname)] && r.Schemaname == "" && r.Catalogname == "" {
		return
	}
	for _, part := range []string{r.Catalogname, r.Schemaname, r.Relname} {
		if part != "" && !w.g.allowed[part] {
			w.refuse(r.Location, "table %q is not in allowedColumns; list it there or leave it out", part)
			return
		}
	}
}

// targetColumns checks the columns an INSERT, UPDATE or ON CONFLICT writes.
func (w *guardWalk) targetColumns(targets []*pg_query.Node, what string) {
	for _, t := range targets {
		rt := t.GetResTarget()
		if rt == nil {
			continue
		}
		if !w.g.allowed[rt.Name] || w.relations[strings.ToLower(rt.Name)] {
			w.refuse(rt.Location, "%s writes column %q, which is not in allowedColumns; list it there or leave it out", what, rt.Name)
			return
		}
	}
}

// needsFilter refuses an UPDATE or DELETE whose WHERE does not narrow the rows,
// unless allowUnfiltered=true.
func (w *guardWalk) needsFilter(what string, where *pg_query.Node, at int32) {
	if w.g.allowUnfiltered || narrows(where) {
		return
	}
	if w.g.statement != "" {
		what = w.g.statement
	}
	if where == nil {
		w.refuse(at, "%s without WHERE changes every row; add WHERE column = $n, or set allowUnfiltered=true to allow bulk changes", what)
		return
	}
	w.refuse(at, "the WHERE of this %s does not narrow the rows (WHERE NOT id = $1 matches all rows but one); it needs a condition column = $n or column IN ($n, …) that every matching row meets, not under NOT or beside an unnarrowed OR branch; or set allowUnfiltered=true to allow bulk changes", what)
}

// narrows tells whether a WHERE condition limits the rows to those equal to given
// values: column = value, column IN (values), an AND with such a condition, or an
// OR of only such conditions. NOT, <>, <, LIKE, IS … do not narrow: a caller can
// pick a value they match on every row.
func narrows(n *pg_query.Node) bool {
	switch {
	case n == nil:
		return false
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		switch b.Boolop {
		case pg_query.BoolExprType_AND_EXPR:
			for _, a := range b.Args {
				if narrows(a) {
					return true
				}
			}
			return false
		case pg_query.BoolExprType_OR_EXPR:
			for _, a := range b.Args {
				if !narrows(a) {
					return false
				}
			}
			return len(b.Args) > 0
		}
		return false
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if operatorName(e) != "=" || (e.Kind != pg_query.A_Expr_Kind_AEXPR_OP && e.Kind != pg_query.A_Expr_Kind_AEXPR_IN) {
			return false
		}
		if e.Lexpr.GetColumnRef() == nil {
			e = &pg_query.A_Expr{Kind: e.Kind, Lexpr: e.Rexpr, Rexpr: e.Lexpr}
		}
		if e.Lexpr.GetColumnRef() == nil {
			return false
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_IN {
			list := e.Rexpr.GetList()
			if list == nil || len(list.Items) == 0 {
				return false
			}
			for _, item := range list.Items {
				if !isValue(item) {
					return false
				}
			}
			return true
		}
		return isValue(e.Rexpr)
	}
	return false
}

// isValue: a $n parameter or a constant, possibly cast.
func isValue(n *pg_query.Node) bool {
	for n.GetTypeCast() != nil {
		n = n.GetTypeCast().Arg
	}
	return n.GetParamRef() != nil || n.GetAConst() != nil
}

// operatorName is an A_Expr's operator without its schema (OPERATOR(pg_catalog.=)).
func operatorName(e *pg_query.A_Expr) string {
	if len(e.Name) == 0 {
		return ""
	}
	return e.Name[len(e.Name)-1].GetString_().GetSval()
}

// guard returns the allowedColumns guard of the endpoint for SQL from source.
func (e *endpoint) guard(source string) *columnGuard {
	return &columnGuard{allowed: e.allowed, allowUnfiltered: e.allowUnfiltered, source: source}
}

// guardConfiguredSQL checks query= and where= when the endpoint is made, so that a
// configuration that reads or changes unlisted columns fails to load (with its
// YAML position) rather than at the first exchange.
func (e *endpoint) guardConfiguredSQL() []string {
	var problems []string
	if e.query != "" && (e.op == OpQuery || e.op == OpExec) {
		if err := e.guard("of option query=").check(sameLengthParams(e.query)); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if e.where != "" && e.tableIdent != nil && (e.op == OpUpdate || e.op == OpDelete) {
		// Judge where= in the DELETE it belongs to (UPDATE's SET columns come from
		// the body and are checked per exchange); table= is the author's choice, so
		// it counts as listed here.
		prefix := "DELETE FROM " + e.tableIdent.Sanitize() + " WHERE "
		g := e.guard("of option where=")
		g.statement = "operation=" + e.op
		g.allowed = maps.Clone(e.allowed)
		for _, part := range e.tableIdent {
			g.allowed[strings.ToLower(part)] = true
		}
		if err := g.check(prefix + sameLengthParams(e.where)); err != nil {
			var ge *guardError
			if errors.As(err, &ge) {
				ge.offset -= len(prefix)
				if ge.offset < 0 {
					ge.offset = -1
				}
			}
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// sameLengthParams turns each :name of sql into $1 padded to the same length, so
// that PostgreSQL's parser takes it and offsets in messages match the text as
// written. (The guard does not care which parameter is which.) SQL the lexer
// cannot read is returned as it is, for the parser to refuse.
func sameLengthParams(sql string) string {
	toks, err := lex(sql)
	if err != nil {
		return sql
	}
	b := []byte(sql)
	for _, t := range toks {
		if t.kind == tNamed {
			copy(b[t.pos:], "$1"+strings.Repeat(" ", len(t.text)-2))
		}
	}
	return string(b)
}
