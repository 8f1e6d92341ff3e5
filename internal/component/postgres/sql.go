package postgres

import (
	"fmt"
	"strings"
	"unicode"
)

// token is one lexical piece of SQL, enough to find parameters and to judge SQL
// that came from an exchange's body; it is not a parser.
type token struct {
	kind tokKind
	text string // as written
	pos  int    // byte offset
}

type tokKind int

const (
	tWord    tokKind = iota // keyword or unquoted identifier
	tQuoted                 // "quoted identifier"
	tString                 // 'literal', E'…', $$…$$
	tNumber                 // 42, 1.5
	tParam                  // $1
	tNamed                  // :name
	tComment                // -- … or /* … */
	tCast                   // ::
	tOp                     // = <> < > <= >= != ~~ etc.
	tPunct                  // ( ) , . ; * [ ]
)

// lex splits sql into tokens. It fails on an unterminated literal, quoted
// identifier or comment.
func lex(sql string) ([]token, error) {
	var out []token
	i := 0
	for i < len(sql) {
		c := sql[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
			continue
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			out = append(out, token{tComment, sql[start:i], start})
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated /* comment at offset %d", start)
			}
			i += end + 4
			out = append(out, token{tComment, sql[start:i], start})
		case c == '\'' || ((c == 'E' || c == 'e') && i+1 < len(sql) && sql[i+1] == '\''):
			if c != '\'' {
				i++
			}
			escapes := c != '\''
			i++
			closed := false
			for i < len(sql) {
				if escapes && sql[i] == '\\' {
					i += 2
					continue
				}
				if sql[i] == '\'' {
					if i+1 < len(sql) && sql[i+1] == '\'' {
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				i++
			}
			if !closed {
				return nil, fmt.Errorf("unterminated string literal at offset %d", start)
			}
			out = append(out, token{tString, sql[start:i], start})
		case c == '"':
			i++
			closed := false
			for i < len(sql) {
				if sql[i] == '"' {
					if i+1 < len(sql) && sql[i+1] == '"' {
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				i++
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quoted identifier at offset %d", start)
			}
			out = append(out, token{tQuoted, sql[start:i], start})
		case c == '$' && i+1 < len(sql) && isDigit(sql[i+1]):
			i++
			for i < len(sql) && isDigit(sql[i]) {
				i++
			}
			out = append(out, token{tParam, sql[start:i], start})
		case c == '$':
			// Dollar quoting: $$…$$ or $tag$…$tag$.
			j := i + 1
			for j < len(sql) && isIdentPart(rune(sql[j])) {
				j++
			}
			if j >= len(sql) || sql[j] != '$' {
				i++
				out = append(out, token{tPunct, "$", start})
				continue
			}
			tag := sql[i : j+1]
			end := strings.Index(sql[j+1:], tag)
			if end < 0 {
				return nil, fmt.Errorf("unterminated dollar-quoted string at offset %d", start)
			}
			i = j + 1 + end + len(tag)
			out = append(out, token{tString, sql[start:i], start})
		case c == ':' && i+1 < len(sql) && sql[i+1] == ':':
			i += 2
			out = append(out, token{tCast, "::", start})
		case c == ':' && i+1 < len(sql) && isIdentStart(rune(sql[i+1])):
			i++
			for i < len(sql) && isIdentPart(rune(sql[i])) {
				i++
			}
			out = append(out, token{tNamed, sql[start:i], start})
		case isDigit(c) || (c == '.' && i+1 < len(sql) && isDigit(sql[i+1])):
			for i < len(sql) && (isDigit(sql[i]) || sql[i] == '.' || sql[i] == 'e' || sql[i] == 'E') {
				i++
			}
			out = append(out, token{tNumber, sql[start:i], start})
		case isIdentStart(rune(c)) || c >= 0x80:
			for i < len(sql) && (isIdentPart(rune(sql[i])) || sql[i] >= 0x80) {
				i++
			}
			out = append(out, token{tWord, sql[start:i], start})
		case strings.IndexByte("(),.;*[]", c) >= 0:
			i++
			out = append(out, token{tPunct, sql[start:i], start})
		default:
			for i < len(sql) && strings.IndexByte("+-*/<>=~!@#%^&|`?", sql[i]) >= 0 {
				if i > start && sql[i] == '-' && i+1 < len(sql) && sql[i+1] == '-' {
					break
				}
				i++
			}
			if i == start {
				i++
			}
			out = append(out, token{tOp, sql[start:i], start})
		}
	}
	return out, nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// bindNamed rewrites the :name parameters of sql to $1, $2 … (one number per
// distinct name, in order of first use) and returns the names in that order.
// Casts (::), literals, quoted identifiers and comments are left alone. SQL with
// both :name and $n parameters is refused: the numbering would clash.
func bindNamed(sql string) (string, []string, error) {
	toks, err := lex(sql)
	if err != nil {
		return "", nil, err
	}
	var names []string
	index := map[string]int{}
	var b strings.Builder
	last := 0
	positional := false
	for _, t := range toks {
		if t.kind == tParam {
			positional = true
		}
		if t.kind != tNamed {
			continue
		}
		name := t.text[1:]
		n, ok := index[name]
		if !ok {
			names = append(names, name)
			n = len(names)
			index[name] = n
		}
		b.WriteString(sql[last:t.pos])
		fmt.Fprintf(&b, "$%d", n)
		last = t.pos + len(t.text)
	}
	if len(names) == 0 {
		return sql, nil, nil
	}
	if positional {
		return "", nil, fmt.Errorf("the SQL mixes :name and $n parameters; use one kind")
	}
	b.WriteString(sql[last:])
	return b.String(), names, nil
}

// maxParam returns the highest $n in sql (0 when there is none).
func maxParam(toks []token) int {
	m := 0
	for _, t := range toks {
		if t.kind == tParam {
			var n int
			fmt.Sscanf(t.text[1:], "%d", &n)
			m = max(m, n)
		}
	}
	return m
}

// guardKeywords are the words SQL from a body may use besides the allowed
// identifiers when allowedColumns is set: plain reads and writes, no functions,
// no subqueries beyond what these words can spell with allowed names.
var guardKeywords = map[string]bool{
	"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"like": true, "ilike": true, "in": true, "is": true, "null": true,
	"limit": true, "offset": true, "order": true, "by": true, "asc": true, "desc": true,
	"nulls": true, "first": true, "last": true, "as": true, "distinct": true,
	"insert": true, "into": true, "values": true, "update": true, "set": true,
	"delete": true, "returning": true, "default": true,
}

// whereEnd are the words that end a WHERE clause.
var whereEnd = map[string]bool{"limit": true, "offset": true, "order": true, "returning": true}

// comparison operators a guarded WHERE condition may use between a column and a parameter.
var guardOps = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true}

// checkGuard judges SQL that came from an exchange's body against allowed (lower
// case names of tables and columns). It refuses: more than one statement; comments;
// string literals and dollar quotes (values must be parameters); names that are not
// allowed, quoted or not; words that are neither allowed names nor plain SQL
// keywords; function calls; casts; and WHERE conditions other than
// `column op $n` (op one of = <> != < > <= >= [NOT] LIKE [NOT] ILIKE, or
// column [NOT] IN ($n, …)) joined by AND, OR, NOT and parentheses. So a value
// spliced into the SQL (the column name of the spec's §12.1 example) can only be
// one of the allowed names: `name ILIKE '%' OR 1=1 --`, `(SELECT password FROM
// users)`, `pg_sleep(10)` and `id = id OR name` are all refused.
func checkGuard(sql string, allowed map[string]bool) error {
	toks, err := lex(sql)
	if err != nil {
		return err
	}
	// A trailing semicolon is harmless; any other ends one statement and starts the next.
	if n := len(toks); n > 0 && toks[n-1].text == ";" {
		toks = toks[:n-1]
	}
	refuse := func(t token, why string) error {
		return fmt.Errorf("allowedColumns refuses the SQL from the body at offset %d (%q): %s", t.pos, t.text, why)
	}
	for i, t := range toks {
		switch t.kind {
		case tComment:
			return refuse(t, "comments are not allowed")
		case tString:
			return refuse(t, "literals are not allowed: pass values as $n parameters")
		case tNamed:
			return refuse(t, "use $n parameters in SQL from the body")
		case tCast:
			return refuse(t, "casts are not allowed")
		case tQuoted:
			name := strings.ReplaceAll(t.text[1:len(t.text)-1], `""`, `"`)
			if !allowed[strings.ToLower(name)] {
				return refuse(t, "this name is not in allowedColumns")
			}
		case tWord:
			w := strings.ToLower(t.text)
			if i+1 < len(toks) && toks[i+1].text == "(" && !guardKeywords[w] {
				return refuse(t, "function calls are not allowed")
			}
			if !allowed[w] && !guardKeywords[w] {
				return refuse(t, "this name is not in allowedColumns")
			}
		case tPunct:
			if t.text == ";" {
				return refuse(t, "only one statement is allowed")
			}
			if t.text == "[" || t.text == "]" {
				return refuse(t, "subscripts are not allowed")
			}
		}
	}
	// WHERE conditions: column op $n, joined by AND / OR / NOT and parentheses.
	for i := 0; i < len(toks); i++ {
		if !strings.EqualFold(toks[i].text, "where") {
			continue
		}
		j := i + 1
		for j < len(toks) && !(toks[j].kind == tWord && whereEnd[strings.ToLower(toks[j].text)]) {
			j++
		}
		if err := checkConditions(toks[i+1:j], allowed, refuse); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// checkConditions checks one WHERE clause's tokens: a sequence of
// `[NOT] column op $n` and `column [NOT] IN ($n, …)`, joined by AND/OR, with
// balanced parentheses.
func checkConditions(toks []token, allowed map[string]bool, refuse func(token, string) error) error {
	word := func(i int, w string) bool {
		return i < len(toks) && toks[i].kind == tWord && strings.EqualFold(toks[i].text, w)
	}
	depth, i := 0, 0
	if len(toks) == 0 {
		return fmt.Errorf("allowedColumns refuses the SQL from the body: WHERE without a condition")
	}
	for i < len(toks) {
		// Opening parentheses and NOT before a condition.
		for i < len(toks) && (toks[i].text == "(" || word(i, "not")) {
			if toks[i].text == "(" {
				depth++
			}
			i++
		}
		if i >= len(toks) {
			return fmt.Errorf("allowedColumns refuses the SQL from the body: the WHERE clause ends early")
		}
		col := toks[i]
		if !(col.kind == tWord || col.kind == tQuoted) || guardKeywords[strings.ToLower(col.text)] {
			return refuse(col, "a WHERE condition must start with an allowed column")
		}
		i++
		// Optional qualifier: table.column.
		if i+1 < len(toks) && toks[i].text == "." && (toks[i+1].kind == tWord || toks[i+1].kind == tQuoted) {
			i += 2
		}
		switch {
		case i < len(toks) && toks[i].kind == tOp && guardOps[toks[i].text]:
			i++
		case word(i, "like") || word(i, "ilike"):
			i++
		case word(i, "not") && (word(i+1, "like") || word(i+1, "ilike") || word(i+1, "in")):
			if word(i+1, "in") {
				i++
				goto in
			}
			i += 2
		case word(i, "in"):
			goto in
		default:
			if i < len(toks) {
				return refuse(toks[i], "a WHERE condition must be column operator $n")
			}
			return fmt.Errorf("allowedColumns refuses the SQL from the body: a WHERE condition without an operator")
		}
		if i >= len(toks) || toks[i].kind != tParam {
			if i < len(toks) {
				return refuse(toks[i], "a WHERE condition must compare a column with a $n parameter")
			}
			return fmt.Errorf("allowedColumns refuses the SQL from the body: a WHERE condition without a parameter")
		}
		i++
		goto after
	in:
		// IN ( $n [, $n]… )
		i++
		if i >= len(toks) || toks[i].text != "(" {
			return fmt.Errorf("allowedColumns refuses the SQL from the body: IN needs a list of $n parameters")
		}
		i++
		for {
			if i >= len(toks) || toks[i].kind != tParam {
				return fmt.Errorf("allowedColumns refuses the SQL from the body: IN needs a list of $n parameters")
			}
			i++
			if i < len(toks) && toks[i].text == "," {
				i++
				continue
			}
			break
		}
		if i >= len(toks) || toks[i].text != ")" {
			return fmt.Errorf("allowedColumns refuses the SQL from the body: IN needs a list of $n parameters")
		}
		i++
	after:
		for i < len(toks) && toks[i].text == ")" {
			depth--
			if depth < 0 {
				return refuse(toks[i], "unbalanced parentheses")
			}
			i++
		}
		if i >= len(toks) {
			break
		}
		if word(i, "and") || word(i, "or") {
			i++
			if i >= len(toks) {
				return fmt.Errorf("allowedColumns refuses the SQL from the body: the WHERE clause ends after %s", toks[i-1].text)
			}
			continue
		}
		return refuse(toks[i], "a WHERE condition must be column operator $n, joined by AND or OR")
	}
	if depth != 0 {
		return fmt.Errorf("allowedColumns refuses the SQL from the body: unbalanced parentheses in WHERE")
	}
	return nil
}
