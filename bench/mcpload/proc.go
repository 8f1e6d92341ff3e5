package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. Linux fixes it
// at 100 on every architecture Go supports, so no sysconf call (and no cgo) is needed.
const clockTicks = 100

// procCPU returns the user+system CPU time a process has used so far.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read cpu time of pid %d: %w", pid, err)
	}
	// The command name (field 2) may contain spaces and parentheses: fields are
	// counted from the last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime %q %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// procMem returns the resident set size now (VmRSS) and its peak (VmHWM), in KiB.
func procMem(pid int) (rssKB, peakKB int64, err error) {
	rssKB, peakKB, _, err = procMemAnon(pid)
	return rssKB, peakKB, err
}

// procMemAnon is procMem with the anonymous part of the resident set (RssAnon:
// heap, stacks, runtime), in KiB. The rest of VmRSS is mostly the executable's own
// pages, which grows with the binary's size, not with the load.
func procMemAnon(pid int) (rssKB, peakKB, anonKB int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &rssKB
		case "VmHWM":
			dst = &peakKB
		case "RssAnon":
			dst = &anonKB
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("/proc/%d/status: bad %s %q", pid, k, v)
		}
		*dst = n
	}
	return rssKB, peakKB, anonKB, nil
}

// memStats is the part of an expvar /debug/vars document the load tool reads.
type memStats struct {
	TotalAlloc uint64 `json:"TotalAlloc"`
	Mallocs    uint64 `json:"Mallocs"`
	NumGC      uint32 `json:"NumGC"`
}

// fetchMemStats reads runtime.MemStats from a server's expvar endpoint (the
// benchmark peers serve one at /debug/vars), for allocations per call.
func fetchMemStats(hc *http.Client, url string) (memStats, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return memStats{}, fmt.Errorf("memstats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return memStats{}, fmt.Errorf("memstats: %s answered %s", url, resp.Status)
	}
	var doc struct {
		MemStats *memStats `json:"memstats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return memStats{}, fmt.Errorf("memstats: %s: %w", url, err)
	}
	if doc.MemStats == nil {
		return memStats{}, fmt.Errorf("memstats: %s has no memstats variable (is it an expvar endpoint?)", url)
	}
	return *doc.MemStats, nil
}

// machineTicks are the machine-wide CPU times of /proc/stat's first line, in ticks.
type machineTicks struct {
	total, steal uint64
}

// readMachineTicks reads /proc/stat's "cpu" line: user nice system idle iowait irq
// softirq steal (guest time is already inside user and nice).
func readMachineTicks() (machineTicks, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTicks{}, err
	}
	return parseMachineTicks(raw)
}

func parseMachineTicks(raw []byte) (machineTicks, error) {
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return machineTicks{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var t machineTicks
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return machineTicks{}, fmt.Errorf("/proc/stat: field %d: %w", i+1, err)
		}
		t.total += n
		if i == 7 {
			t.steal = n
		}
	}
	return t, nil
}

// stealPct is the steal share of the machine's CPU time between two readings, or -1
// when either reading is missing.
func stealPct(a, b machineTicks) float64 {
	if a.total == 0 || b.total <= a.total || b.steal < a.steal {
		return -1
	}
	return 100 * float64(b.steal-a.steal) / float64(b.total-a.total)
}
