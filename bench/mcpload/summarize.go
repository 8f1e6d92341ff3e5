package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
)

// summarizeCmd reads result lines written by `mcpload run -json` over several
// interleaved rounds and prints, per server, the median of each figure and the
// throughput as a ratio to the base server, as a Markdown table.
func summarizeCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mcpload summarize", flag.ContinueOnError)
	fs.SetOutput(out)
	base := fs.String("base", "limit", "label whose median throughput is 1.00")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: mcpload summarize [-base limit] results.jsonl [results.jsonl ...]")
	}
	var order []string
	byLabel := map[string][]result{}
	for _, name := range fs.Args() {
		if err := readResults(name, func(r result) {
			if _, ok := byLabel[r.Label]; !ok {
				order = append(order, r.Label)
			}
			byLabel[r.Label] = append(byLabel[r.Label], r)
		}); err != nil {
			return err
		}
	}
	if len(order) == 0 {
		return errors.New("no load results in the given files")
	}
	med := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, 0, len(rs))
		for _, r := range rs {
			v = append(v, f(r))
		}
		return median(v)
	}
	baseRPS := 0.0
	baseByRound := map[int]float64{}
	if rs, ok := byLabel[*base]; ok {
		baseRPS = med(rs, func(r result) float64 { return r.RPS })
		for _, r := range rs {
			if r.Round > 0 {
				baseByRound[r.Round] = r.RPS
			}
		}
	}
	fmt.Fprintln(out, "| server | rounds | req/s (median) | vs "+*base+" | vs "+*base+" per round (median) | p50 µs | p99 µs | p99.9 µs | CPU µs/call | load tool CPU µs/call | alloc B/call | allocs/call | peak RSS MiB | anon RSS MiB | steal % | errors |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, label := range order {
		rs := byLabel[label]
		rps := med(rs, func(r result) float64 { return r.RPS })
		ratio := "n/a"
		if baseRPS > 0 {
			ratio = fmt.Sprintf("%.2f", rps/baseRPS)
		}
		// The ratio to the base within each round: the rounds' servers run within
		// seconds of each other, so a slow period of a shared host (steal) moves both.
		var perRound []float64
		for _, r := range rs {
			if b := baseByRound[r.Round]; r.Round > 0 && b > 0 {
				perRound = append(perRound, r.RPS/b)
			}
		}
		roundRatio := "n/a"
		if len(perRound) > 0 {
			roundRatio = fmt.Sprintf("%.2f", median(perRound))
		}
		var errs int64
		peak := int64(-1)
		for _, r := range rs {
			errs += r.Errors
			peak = max(peak, r.PeakRSSKB)
		}
		fmt.Fprintf(out, "| %s | %d | %.0f | %s | %s | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			label, len(rs), rps, ratio, roundRatio,
			med(rs, func(r result) float64 { return r.P50us }),
			med(rs, func(r result) float64 { return r.P99us }),
			med(rs, func(r result) float64 { return r.P999us }),
			optional(med(rs, func(r result) float64 { return r.CPUusPerCall }), "%.0f"),
			optional(med(rs, func(r result) float64 { return r.LoadCPUusPerCall }), "%.0f"),
			optional(med(rs, func(r result) float64 { return r.AllocPerCall }), "%.0f"),
			optional(med(rs, func(r result) float64 { return r.MallocPerCall }), "%.0f"),
			optional(float64(peak)/1024, "%.1f"),
			optional(med(rs, func(r result) float64 { return float64(r.AnonRSSKB) / 1024 }), "%.1f"),
			optional(med(rs, func(r result) float64 { return r.StealPct }), "%.1f"),
			errs)
	}
	return nil
}

// optional formats v, or "n/a" for the -1 that marks an unmeasured figure.
func optional(v float64, format string) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// readResults calls f for each load result in a JSON-lines file; lines of other
// kinds (startup, sessions) are skipped.
func readResults(name string, f func(result)) error {
	file, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var probe struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(sc.Bytes(), &probe); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if probe.Kind != "" {
			continue
		}
		r := result{LoadCPUusPerCall: -1, AnonRSSKB: -1, StealPct: -1} // absent from results written before it was measured
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		f(r)
	}
	return sc.Err()
}
