package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// matrixCmd summarises a concurrency matrix (scripts/bench-concurrency.sh): runs
// of several servers at several client counts, stateful and stateless, with
// keep-alive and with a new connection per call, in interleaved rounds. Each
// server is compared with the base server of the same cell (mode, connection,
// clients) and the same round, which ran seconds before or after it: the ratio
// of throughput and the ratio of p99 latency per round, whose medians are what
// the goal is judged on (throughput ≥ -min-ratio and p99 ≤ -max-p99 times the
// base's).
func matrixCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mcpload matrix", flag.ContinueOnError)
	fs.SetOutput(out)
	base := fs.String("base", "limit", "label of the server every other is compared with")
	minRatio := fs.Float64("min-ratio", 0.9, "goal: throughput at least this ratio to the base's (median of the rounds)")
	maxP99 := fs.Float64("max-p99", 1.3, "goal: p99 at most this ratio to the base's (median of the rounds)")
	tsv := fs.String("tsv", "", "also write the rows as tab-separated values to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: mcpload matrix [-base limit] [-tsv FILE] results.jsonl [results.jsonl ...]")
	}
	var all []result
	for _, name := range fs.Args() {
		if err := readResults(name, func(r result) { all = append(all, r) }); err != nil {
			return err
		}
	}
	rows := matrixRows(all, *base)
	if len(rows) == 0 {
		return fmt.Errorf("no runs of %q paired with another server's of the same round and cell", *base)
	}
	fmt.Fprintf(out, "| mode | connection | clients | server | rounds | %s req/s | req/s | vs %s per round (median) | range | %s p99 µs | p99 µs | p99 vs %s per round (median) | %s CPU µs/call | CPU µs/call | steal %% | errors | goal (≥ %.2g, p99 ≤ %.2g×) |\n",
		*base, *base, *base, *base, *base, *minRatio, *maxP99)
	fmt.Fprintln(out, "|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		fmt.Fprintf(out, "| %s | %s | %d | %s | %d | %.0f | %.0f | **%.2f** | %.2f–%.2f | %.0f | %.0f | **%.2f** | %s | %s | %s | %d | %s |\n",
			r.Mode, r.Conn, r.Clients, r.Label, r.Rounds, r.BaseRPS, r.RPS, r.Ratio, r.RatioMin, r.RatioMax,
			r.BaseP99, r.P99, r.P99Ratio, optional(r.BaseCPU, "%.0f"), optional(r.CPU, "%.0f"), optional(r.Steal, "%.1f"),
			r.Errors, r.verdict(*minRatio, *maxP99))
	}
	if *tsv != "" {
		var b strings.Builder
		b.WriteString("mode\tconn\tclients\tserver\trounds\tbase_rps\trps\tratio\tratio_min\tratio_max\tbase_p99_us\tp99_us\tp99_ratio\tbase_cpu_us\tcpu_us\tsteal_pct\terrors\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "%s\t%s\t%d\t%s\t%d\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t%.0f\t%.0f\t%.3f\t%.1f\t%.1f\t%.2f\t%d\n",
				r.Mode, r.Conn, r.Clients, r.Label, r.Rounds, r.BaseRPS, r.RPS, r.Ratio, r.RatioMin, r.RatioMax,
				r.BaseP99, r.P99, r.P99Ratio, r.BaseCPU, r.CPU, r.Steal, r.Errors)
		}
		if err := os.WriteFile(*tsv, []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("matrix: %w", err)
		}
	}
	return nil
}

// matrixRow is one server in one cell of the matrix, against the base.
type matrixRow struct {
	Mode, Conn, Label string
	Clients, Rounds   int
	// Medians over the paired rounds.
	BaseRPS, RPS, BaseP99, P99, BaseCPU, CPU, Steal float64
	// Per-round ratios: their median, and the lowest and highest.
	Ratio, RatioMin, RatioMax, P99Ratio float64
	Errors                              int64 // of this server and the base, over the paired rounds
}

func (r matrixRow) verdict(minRatio, maxP99 float64) string {
	var miss []string
	if r.Ratio < minRatio {
		miss = append(miss, "throughput")
	}
	if r.P99Ratio > maxP99 {
		miss = append(miss, "p99")
	}
	if r.Errors > 0 {
		miss = append(miss, "errors")
	}
	if len(miss) == 0 {
		return "met"
	}
	return "not met: " + strings.Join(miss, ", ")
}

// cellKey is a cell of the matrix and a round of it.
type cellKey struct {
	mode, conn string
	clients    int
}

// matrixRows pairs every run with the base's run of the same cell and round and
// summarises each server per cell, in the order mode, connection, clients.
func matrixRows(all []result, base string) []matrixRow {
	type roundKey struct {
		cell  cellKey
		round int
	}
	keyOf := func(r result) cellKey {
		return cellKey{r.Mode, cmp.Or(r.Conn, connMode(false)), r.Clients}
	}
	bases := map[roundKey]result{}
	for _, r := range all {
		if r.Label == base && r.Round > 0 {
			bases[roundKey{keyOf(r), r.Round}] = r
		}
	}
	type group struct {
		cell  cellKey
		label string
	}
	pairs := map[group][][2]result{}
	for _, r := range all {
		if r.Label == base {
			continue
		}
		b, ok := bases[roundKey{keyOf(r), r.Round}]
		if !ok || r.Round == 0 {
			continue
		}
		g := group{keyOf(r), r.Label}
		pairs[g] = append(pairs[g], [2]result{b, r})
	}
	rows := make([]matrixRow, 0, len(pairs))
	for g, ps := range pairs {
		pick := func(side int, f func(result) float64) float64 {
			v := make([]float64, 0, len(ps))
			for _, p := range ps {
				v = append(v, f(p[side]))
			}
			return median(v)
		}
		var ratios, p99s []float64
		var errs int64
		for _, p := range ps {
			if p[0].RPS > 0 {
				ratios = append(ratios, p[1].RPS/p[0].RPS)
			}
			if p[0].P99us > 0 {
				p99s = append(p99s, p[1].P99us/p[0].P99us)
			}
			errs += p[0].Errors + p[1].Errors
		}
		row := matrixRow{Mode: g.cell.mode, Conn: g.cell.conn, Clients: g.cell.clients, Label: g.label, Rounds: len(ps),
			BaseRPS: pick(0, func(r result) float64 { return r.RPS }), RPS: pick(1, func(r result) float64 { return r.RPS }),
			BaseP99: pick(0, func(r result) float64 { return r.P99us }), P99: pick(1, func(r result) float64 { return r.P99us }),
			BaseCPU: pick(0, func(r result) float64 { return r.CPUusPerCall }), CPU: pick(1, func(r result) float64 { return r.CPUusPerCall }),
			Steal: pick(1, func(r result) float64 { return r.StealPct }),
			Ratio: median(slices.Clone(ratios)), P99Ratio: median(p99s), Errors: errs, RatioMin: -1, RatioMax: -1}
		if len(ratios) > 0 {
			row.RatioMin, row.RatioMax = slices.Min(ratios), slices.Max(ratios)
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b matrixRow) int {
		return cmp.Or(cmp.Compare(a.Mode, b.Mode), cmp.Compare(connOrder(a.Conn), connOrder(b.Conn)),
			cmp.Compare(a.Clients, b.Clients), cmp.Compare(a.Label, b.Label))
	})
	return rows
}

// connOrder puts keep-alive before a new connection per call.
func connOrder(c string) int {
	if c == connMode(true) {
		return 1
	}
	return 0
}
