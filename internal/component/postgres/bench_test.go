package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arvenza/helix/internal/component/all"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkInsert compares inserting rows through Helix (an exchange sent to a direct://
// workflow whose target is postgres://…?operation=insert) with plain pgx doing the same
// work on a pool of the same size: the same INSERT … VALUES … RETURNING * statement, its
// rows read into maps, and COPY for insertMode=copy. Plain pgx is the limit. Each runs
// with 1, 10, 100 and 1,000 rows per exchange (per statement for pgx), and reports
// rows/s and the process's CPU time per row (getrusage; the client's share only, the
// server runs in its own processes). BENCHMARKS.md has the side-by-side figures and
// the command:
//
//	go test -run '^$' -bench BenchmarkInsert -benchtime 3s -count 3 ./internal/component/postgres/
func BenchmarkInsert(b *testing.B) {
	base := testtools.PostgresURL(b)
	for _, tc := range []struct {
		name string
		rows int
		mode string
	}{
		{"values1", 1, "values"},
		{"values10", 10, "values"},
		{"values100", 100, "values"},
		{"values1000", 1000, "values"},
		{"copy10", 10, "copy"},
		{"copy100", 100, "copy"},
		{"copy1000", 1000, "copy"},
	} {
		tbl := testtools.UniqueName("bench")
		testtools.PostgresExec(b, base, "CREATE TABLE "+tbl+" (id bigserial PRIMARY KEY, name text, qty int, price numeric(10,2))")
		b.Cleanup(func() { testtools.PostgresExec(b, base, "DROP TABLE IF EXISTS "+tbl) })
		rowsOf := func(i int) []any {
			out := make([]any, tc.rows)
			for j := range out {
				out[j] = map[string]any{"name": fmt.Sprint("item-", i, "-", j), "qty": int64(j), "price": 9.99}
			}
			return out
		}
		body := func(i int) any {
			r := rowsOf(i)
			if tc.rows == 1 {
				return r[0]
			}
			return r
		}
		b.Run(tc.name+"/helix", func(b *testing.B) {
			hc := engine.NewContext("bench")
			all.Register(hc)
			target := base + "?maxConns=4&operation=insert&insertMode=" + tc.mode + "&table=" + url.QueryEscape(tbl)
			if err := hc.AddWorkflow(&engine.Workflow{ID: "insert", FromURI: "direct://insert", ToURIs: []string{target}}); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := hc.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer hc.Stop(ctx)
			cpu0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				ex := exchange.NewWithBody(exchange.InOut, body(i))
				if err := hc.Send(ctx, "direct://insert", ex); err != nil {
					b.Fatal(err)
				}
				if err := ex.Exception(); err != nil {
					b.Fatal(err)
				}
			}
			reportRows(b, tc.rows, cpu0)
		})
		b.Run(tc.name+"/pgx", func(b *testing.B) {
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(base)
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxConns = 4
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			cols := []string{"name", "price", "qty"}
			ident := pgx.Identifier{tbl}
			prefix := "INSERT INTO " + ident.Sanitize() + " (name, price, qty) VALUES "
			cpu0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				rows := rowsOf(i)
				if tc.mode == "copy" {
					if _, err := pool.CopyFrom(ctx, ident, cols, pgx.CopyFromSlice(len(rows), func(k int) ([]any, error) {
						m := rows[k].(map[string]any)
						return []any{m["name"], m["price"], m["qty"]}, nil
					})); err != nil {
						b.Fatal(err)
					}
					continue
				}
				// The statement as a careful pgx user writes it: one builder, no
				// formatting per row (string concatenation grows quadratically).
				var sql strings.Builder
				sql.WriteString(prefix)
				args := make([]any, 0, 3*len(rows))
				for k, r := range rows {
					m := r.(map[string]any)
					if k > 0 {
						sql.WriteString(", ")
					}
					n := len(args)
					sql.WriteString("($")
					sql.WriteString(strconv.Itoa(n + 1))
					sql.WriteString(", $")
					sql.WriteString(strconv.Itoa(n + 2))
					sql.WriteString(", $")
					sql.WriteString(strconv.Itoa(n + 3))
					sql.WriteByte(')')
					args = append(args, m["name"], m["price"], m["qty"])
				}
				sql.WriteString(" RETURNING *")
				res, err := pool.Query(ctx, sql.String(), args...)
				if err != nil {
					b.Fatal(err)
				}
				got, err := pgx.CollectRows(res, pgx.RowToMap)
				if err != nil || len(got) != len(rows) {
					b.Fatal(err, len(got))
				}
			}
			reportRows(b, tc.rows, cpu0)
		})
	}
}

// reportRows reports rows/s and the process's CPU time per row since cpu0.
func reportRows(b *testing.B, rows int, cpu0 time.Duration) {
	total := float64(b.N * rows)
	b.ReportMetric(total/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/total, "cpu-µs/row")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
