package postgres

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// numericCodec writes every float64 and int64 byte for byte as pgx's own numeric
// codec does (the bytes COPY sent before it), NaN and infinities included.
func TestNumericCodecWritesWhatPgxWrites(t *testing.T) {
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, -0.1, 9.99, 1234.125, 0.0001, 0.00010002, 0.05, 1.5, 10, 100, 1e4, 1e5,
		-100, 1e15, 1e16, 1e17, 1e20, 1.5e20, 1e22, 1e23, 123456789.123, 1.0 / 3, 2.0 / 3, 1e-7, 1e-10, 1e-20, 1e-24, 5e-324,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.MaxInt64, 9007199254740993, 0.1 + 0.2,
		math.NaN(), math.Inf(1), math.Inf(-1), 12345678.9, 99999999.99999, 0.99999999}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		floats = append(floats,
			math.Float64frombits(rng.Uint64()),
			float64(rng.Int64N(1e9)-5e8)/math.Pow10(rng.IntN(12)),
			rng.NormFloat64()*math.Pow10(rng.IntN(40)-20),
			math.Round(rng.Float64()*1e6)/100)
	}
	ints := []int64{0, 1, -1, 9, 10, 9999, 10000, 10001, -10000, 123456789, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for range 5000 {
		ints = append(ints, rng.Int64()>>rng.IntN(63), -rng.Int64N(1e12))
	}
	enc := func(p pgtype.EncodePlan, v any) []byte {
		t.Helper()
		b, err := p.Encode(v, []byte("prefix"))
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		return b
	}
	fast := 0
	for _, f := range floats {
		want := enc(pgxFloatNumeric, pgtype.Float8{Float64: f, Valid: true})
		if got := enc(numericFloatPlan{}, f); !bytes.Equal(got, want) {
			t.Fatalf("%v (%b): % x, pgx % x", f, math.Float64bits(f), got, want)
		}
		if _, ok := appendNumericFloat(nil, f); ok {
			fast++
		}
	}
	if fast < len(floats)/2 {
		t.Errorf("only %d of %d floats took the uint64 path", fast, len(floats))
	}
	for _, i := range ints {
		want := enc(pgxIntNumeric, pgtype.Int8{Int64: i, Valid: true})
		if got := enc(numericIntPlan{}, i); !bytes.Equal(got, want) {
			t.Fatalf("%d: % x, pgx % x", i, got, want)
		}
	}
}

// Through a type map, float64 and int64 for a numeric column take numericCodec's
// plans without allocating; other values and the text format are pgx's.
func TestNumericCodecPlans(t *testing.T) {
	m := pgtype.NewMap()
	m.RegisterType(&pgtype.Type{Name: "numeric", OID: pgtype.NumericOID, Codec: numericCodec{}})
	buf := make([]byte, 0, 64)
	var err error
	vals := []any{9.99, int64(42), 1e-7}
	if n := testing.AllocsPerRun(100, func() {
		for _, v := range vals {
			if buf, err = m.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, v, buf[:0]); err != nil {
				t.Fatal(err)
			}
		}
	}); n != 0 {
		t.Errorf("%v allocations for three numerics", n)
	}
	ref := pgtype.NewMap()
	for _, v := range []any{"1.25", pgtype.Numeric{}, 9.99, int64(-7), int32(5), float32(0.5), nil} {
		for _, format := range []int16{pgtype.BinaryFormatCode, pgtype.TextFormatCode} {
			got, err1 := m.Encode(pgtype.NumericOID, format, v, nil)
			want, err2 := ref.Encode(pgtype.NumericOID, format, v, nil)
			if !bytes.Equal(got, want) || (err1 == nil) != (err2 == nil) {
				t.Errorf("%#v format %d: % x (%v), pgx % x (%v)", v, format, got, err1, want, err2)
			}
		}
	}
}

// The component's connections encode numerics with numericCodec, and what COPY
// writes through it reads back as the same number INSERT (text parameters) stores.
func TestPoolConnectionsUseNumericCodec(t *testing.T) {
	db := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, db, "CREATE TABLE nums (k int, n numeric)")
	u, err := uri.Parse(db + "?operation=insert&insertMode=copy&table=nums")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := New(nil).CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := ep.CreateProducer()
	ctx := context.Background()
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cp.Stop(ctx)
	conn, err := cp.(*producer).pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	typ, _ := conn.Conn().TypeMap().TypeForOID(pgtype.NumericOID)
	conn.Release()
	if _, ok := typ.Codec.(numericCodec); !ok {
		t.Fatalf("numeric's codec is %T", typ.Codec)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var rows []any
	for k := range 300 {
		var v any = float64(rng.Int64N(2e9)-1e9) / math.Pow10(rng.IntN(9))
		switch k % 3 {
		case 1:
			v = rng.Int64() >> rng.IntN(63)
		case 2:
			v = rng.NormFloat64() * math.Pow10(rng.IntN(30)-15)
		}
		rows = append(rows, map[string]any{"k": int64(k), "n": v})
	}
	ex := exchange.NewWithBody(exchange.InOut, rows)
	if err := cp.Process(ctx, ex); err != nil {
		t.Fatal(err)
	}
	u2, _ := uri.Parse(db + "?query=" + url.QueryEscape("SELECT k, n::text AS n FROM nums ORDER BY k"))
	ep2, _ := New(nil).CreateEndpoint(u2)
	q, _ := ep2.CreateProducer()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(ctx)
	got := exchange.NewWithBody(exchange.InOut, nil)
	if err := q.Process(ctx, got); err != nil {
		t.Fatal(err)
	}
	pool := cp.(*producer).pool
	for i, r := range got.In().Body().([]any) {
		var want string // the number as PostgreSQL reads its text parameter, like INSERT
		if err := pool.QueryRow(ctx, "SELECT $1::numeric::text", paramValue(rows[i].(map[string]any)["n"])).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if n := r.(map[string]any)["n"]; n != want {
			t.Errorf("row %d: COPY stored %v, INSERT stores %s (%v)", i, n, want, rows[i].(map[string]any)["n"])
		}
	}
}
