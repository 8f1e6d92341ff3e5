package postgres

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// collectRows reads every row of rows as a map from column name to a JSON-natural
// value ([jsonValue]).
func collectRows(rows pgx.Rows) ([]any, error) { return collectRowsCap(rows, 0) }

// collectRowsCap is collectRows for about n rows (an INSERT's RETURNING answers one
// per row inserted): the list is made once, not grown.
func collectRowsCap(rows pgx.Rows, n int) ([]any, error) {
	defer rows.Close()
	fields := rows.FieldDescriptions()
	out := make([]any, 0, n)
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, rowMap(fields, vals))
	}
	return out, rows.Err()
}

func rowMap(fields []pgconn.FieldDescription, vals []any) map[string]any {
	m := make(map[string]any, len(fields))
	for i, f := range fields {
		m[f.Name] = jsonValue(f.DataTypeOID, vals[i])
	}
	return m
}

// jsonValue turns a value pgx decoded into one a JSON encoder and Starlang take
// without loss: integers as int64; numeric as int64 or float64 when that holds the
// exact value, otherwise as its decimal text; timestamptz as RFC 3339 (UTC),
// timestamp without time zone as RFC 3339 without offset, date as YYYY-MM-DD; uuid
// as text; json/jsonb decoded; bytea as []byte; arrays element by element.
func jsonValue(oid uint32, v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, float64, []byte:
		return x
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int8:
		return int64(x)
	case float32:
		return float64(x)
	case uint32:
		return int64(x)
	case time.Time:
		switch oid {
		case pgtype.DateOID:
			return x.Format(time.DateOnly)
		case pgtype.TimestampOID:
			return x.Format("2006-01-02T15:04:05.999999999")
		}
		return x.UTC().Format(time.RFC3339Nano)
	case [16]byte:
		return uuidString(x)
	case pgtype.Numeric:
		return numericValue(x)
	case map[string]any:
		return x
	case []any:
		out := make([]any, len(x))
		elem := uint32(0)
		if t, ok := arrayElem[oid]; ok {
			elem = t
		}
		for i, e := range x {
			out[i] = jsonValue(elem, e)
		}
		return out
	case netip.Prefix:
		if x.IsSingleIP() {
			return x.Addr().String()
		}
		return x.String()
	case netip.Addr:
		return x.String()
	case fmt.Stringer:
		return x.String()
	}
	if dv, ok := v.(driver.Valuer); ok {
		if s, err := dv.Value(); err == nil && s != nil {
			return jsonValue(oid, any(s))
		}
	}
	return fmt.Sprint(v)
}

// arrayElem maps array type OIDs whose elements need the element's OID to be
// rendered (dates, timestamps) to that OID.
var arrayElem = map[uint32]uint32{
	pgtype.DateArrayOID:      pgtype.DateOID,
	pgtype.TimestampArrayOID: pgtype.TimestampOID,
}

func uuidString(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// numericValue renders a numeric without losing precision: an int64 when it is a
// whole number in range, a float64 when the float's shortest decimal is the same
// number, and the decimal text otherwise (NaN and ±Infinity as text too).
func numericValue(n pgtype.Numeric) any {
	if !n.Valid {
		return nil
	}
	if n.NaN {
		return "NaN"
	}
	if n.InfinityModifier == pgtype.Infinity {
		return "Infinity"
	}
	if n.InfinityModifier == pgtype.NegativeInfinity {
		return "-Infinity"
	}
	if v, ok := smallNumericValue(n); ok {
		return v
	}
	return numericValueText(n)
}

// numericValueText is numericValue for any finite numeric: through its decimal text.
func numericValueText(n pgtype.Numeric) any {
	text := numericText(n)
	if n.Exp >= 0 || !strings.Contains(text, ".") {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return i
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return text
	}
	if sameDecimal(strconv.FormatFloat(f, 'f', -1, 64), text) {
		return f
	}
	return text
}

// smallNumericValue answers numericValue without the decimal text for the usual
// numerics of money and quantities (every row of a RETURNING * with a numeric
// column comes through here): a whole number that fits an int64, or at most 15
// significant digits with at most 22 after the point. Such a value is exactly
// float64(digits) / 10^scale rounded once (both operands are exact floats), and a
// decimal of at most 15 significant digits is the shortest decimal of its nearest
// float, so the text path would answer the same float. ok is false for anything
// else, which the text path decides.
func smallNumericValue(n pgtype.Numeric) (any, bool) {
	if n.Int == nil || !n.Int.IsInt64() {
		return nil, false
	}
	i := n.Int.Int64()
	switch {
	case n.Exp == 0:
		return i, true
	case n.Exp > 0:
		if n.Exp > 18 { // 10^19 is beyond an int64
			return nil, false
		}
		m := int64(pow10[n.Exp])
		if i > math.MaxInt64/m || i < math.MinInt64/m {
			return nil, false
		}
		return i * m, true
	case n.Exp >= -22 && i > -maxExactDigits && i < maxExactDigits:
		return float64(i) / pow10[-n.Exp], true
	}
	return nil, false
}

// maxExactDigits bounds the digits smallNumericValue divides: below 10^15, a
// decimal has at most 15 significant digits, which every float64 keeps.
const maxExactDigits = 1e15

// pow10 holds the powers of ten that are exact float64 values.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// numericText renders n (finite, valid) as plain decimal text.
func numericText(n pgtype.Numeric) string {
	digits := n.Int.String()
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	var s string
	switch {
	case n.Exp >= 0:
		s = digits + strings.Repeat("0", int(n.Exp))
	default:
		frac := int(-n.Exp)
		if len(digits) <= frac {
			digits = strings.Repeat("0", frac-len(digits)+1) + digits
		}
		s = digits[:len(digits)-frac] + "." + digits[len(digits)-frac:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// sameDecimal compares two decimal texts as numbers (trailing fraction zeros do not count).
func sameDecimal(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// paramValue prepares a body value as a statement parameter. Numbers and booleans
// are sent as their text, so PostgreSQL converts them by the parameter's type exactly as
// it converts a literal: 5.5 for an integer column is an error (pgx would truncate a
// float64 to 5), 42 for a text column is "42" (pgx has no plan for it). Whole floats
// (JSON numbers arrive as float64) are written without a fraction. Maps, and lists
// holding maps, are sent as JSON text (for json/jsonb columns); other lists are
// arrays; strings, bytes and null go as they are.
func paramValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return jsonText(x)
	case []any:
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				return jsonText(x)
			}
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = arrayItem(e)
		}
		return out
	case json.Number:
		return x.String()
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case float32:
		return floatText(float64(x))
	case float64:
		return floatText(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return v
}

// arrayItem prepares one element of an array parameter: numbers stay numbers (pgx
// encodes an array's elements in the array's binary format).
func arrayItem(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case int:
		return int64(x)
	}
	return v
}

// copyValue prepares a body value for COPY, which pgx sends in binary: numbers stay
// numbers (converting text to binary in the client halves COPY's speed), except
// where the column's type needs care — a fraction for an integer column is refused
// (pgx would truncate it), numbers and booleans for a text column are their text, and
// text for a column whose binary form pgx cannot make from a string is read first.
func copyValue(v any, oid uint32) (any, error) {
	switch oid {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.JSONOID, pgtype.JSONBOID:
		return paramValue(v), nil
	}
	switch x := v.(type) {
	case string:
		if needsTextDecode(oid) {
			return copyText(x, oid) // copytext.go
		}
		return v, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), nil
		}
		switch oid {
		case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
			return nil, fmt.Errorf("%v is not a whole number", x)
		}
		return v, nil // v, not x: boxing x again would allocate per value
	case map[string]any, []any:
		return paramValue(v), nil
	}
	return arrayItem(v), nil
}

func floatText(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func jsonText(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
