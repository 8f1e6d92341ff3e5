package postgres

import (
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// numericCodec is pgx's numeric codec with its own binary encoding of float64 and
// int64 values: those COPY sends for numeric columns (copyValue keeps JSON numbers
// binary). pgx writes such a value by formatting it as text, parsing the text into
// a big.Int and cutting that into base-10,000 digits with big.Int divisions, a
// dozen allocations per value; appendNumeric does the same arithmetic in uint64
// and writes the same bytes, and leaves values past uint64's reach to pgx.
// Decoding and every other value are pgx's.
type numericCodec struct{ pgtype.NumericCodec }

func (c numericCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		switch value.(type) {
		case float64:
			return numericFloatPlan{}
		case int64:
			return numericIntPlan{}
		}
	}
	return c.NumericCodec.PlanEncode(m, oid, format, value)
}

// useNumericCodec puts numericCodec in place of pgx's for the numeric type of a
// new connection (the pool's AfterConnect).
func useNumericCodec(conn *pgx.Conn) {
	tm := conn.TypeMap()
	t, ok := tm.TypeForOID(pgtype.NumericOID)
	if !ok {
		return
	}
	tm.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: numericCodec{}})
}

// pgx's own plans, for the values appendNumeric leaves to it.
var (
	pgxFloatNumeric = pgtype.NumericCodec{}.PlanEncode(nil, pgtype.NumericOID, pgtype.BinaryFormatCode, pgtype.Float8{})
	pgxIntNumeric   = pgtype.NumericCodec{}.PlanEncode(nil, pgtype.NumericOID, pgtype.BinaryFormatCode, pgtype.Int8{})
)

type numericFloatPlan struct{}

func (numericFloatPlan) Encode(value any, buf []byte) ([]byte, error) {
	f := value.(float64)
	if out, ok := appendNumericFloat(buf, f); ok {
		return out, nil
	}
	return pgxFloatNumeric.Encode(pgtype.Float8{Float64: f, Valid: true}, buf)
}

type numericIntPlan struct{}

func (numericIntPlan) Encode(value any, buf []byte) ([]byte, error) {
	i := value.(int64)
	abs := uint64(i)
	if i < 0 {
		abs = -abs // two's complement: right for math.MinInt64 too
	}
	return appendNumeric(buf, abs, i < 0, 0), nil
}

// appendNumericFloat writes f as pgx does: its shortest decimal text read as
// digits and an exponent (a whole number's trailing zeros go into the exponent),
// then appendNumeric. ok is false for NaN, ±Inf and decimals too long for uint64
// arithmetic, which pgx writes.
func appendNumericFloat(buf []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return buf, false
	}
	var tb [32]byte
	s := strconv.AppendFloat(tb[:0], f, 'f', -1, 64)
	if len(s) > 24 {
		return buf, false
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var exp int32
	dot := -1
	for i, ch := range s {
		if ch == '.' {
			dot = i
			break
		}
	}
	if dot < 0 {
		for len(s) > 1 && s[len(s)-1] == '0' {
			s = s[:len(s)-1]
			exp++
		}
	} else {
		exp = -int32(len(s) - dot - 1)
	}
	var num uint64
	for _, ch := range s {
		if ch == '.' {
			continue
		}
		num = num*10 + uint64(ch-'0')
		if num >= 1e16 { // times 1,000 below must stay within uint64
			return buf, false
		}
	}
	return appendNumeric(buf, num, neg && num != 0, exp), true
}

// appendNumeric writes the binary numeric of ±num × 10^exp exactly as pgx's
// encodeNumericBinary writes Numeric{Int: ±num, Exp: exp}: the exponent lowered to
// a multiple of 4, the whole part's base-10,000 digits without leading zeros, the
// fraction's as many digits as the exponent spans (zeros included), dscale the
// original exponent's fraction digits. num < 10^16.
func appendNumeric(buf []byte, num uint64, neg bool, exp int32) []byte {
	dscale := int16(0)
	if exp < 0 {
		dscale = int16(-exp)
	}
	switch exp % 4 {
	case 1, -3:
		exp--
		num *= 10
	case 2, -2:
		exp -= 2
		num *= 100
	case 3, -1:
		exp -= 3
		num *= 1000
	}
	whole, frac := num, uint64(0)
	fracDigits := 0
	if exp < 0 {
		fracDigits = int(-exp / 4)
		if -exp < 20 {
			d := uint64(1)
			for range -exp {
				d *= 10
			}
			whole, frac = num/d, num%d
		} else { // 10^-exp > num: all fraction
			whole, frac = 0, num
		}
	}
	var wd [8]int16 // little-endian: a uint64 has at most 5 base-10,000 digits
	nw := 0
	for w := whole; w != 0; w /= 10000 {
		wd[nw] = int16(w % 10000)
		nw++
	}
	var weight int64
	if nw > 0 {
		weight = int64(nw - 1)
		if exp > 0 {
			weight += int64(exp) / 4
		}
	} else {
		weight = int64(exp)/4 - 1 + int64(fracDigits)
	}
	sign := uint16(0)
	if neg {
		sign = 16384
	}
	buf = appendUint16(buf, uint16(nw+fracDigits))
	buf = appendUint16(buf, uint16(int16(weight)))
	buf = appendUint16(buf, sign)
	buf = appendUint16(buf, uint16(dscale))
	for i := nw - 1; i >= 0; i-- {
		buf = appendUint16(buf, uint16(wd[i]))
	}
	// The fraction's digits, most significant first: digit i is frac / 10000^(n-1-i).
	for i := fracDigits - 1; i >= 0; i-- {
		g := frac
		for range i {
			g /= 10000
		}
		buf = appendUint16(buf, uint16(g%10000))
	}
	return buf
}

func appendUint16(b []byte, v uint16) []byte { return append(b, byte(v>>8), byte(v)) }
