package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a policy's rate: a token bucket per principal and tool holding N
// calls and refilled with N calls every Per, so a caller may burst N calls and
// then keeps to N per Per.
type Rate struct {
	N   int
	Per time.Duration
}

func (r Rate) String() string {
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	if unit == "" {
		unit = r.Per.String()
	}
	return strconv.Itoa(r.N) + "/" + unit
}

// Quota is a policy's quota: at most N calls per principal and tool in each
// fixed window of length Window. Windows start at whole multiples of Window
// since the Unix epoch, so a day is a UTC day and every replica agrees on it.
type Quota struct {
	N      int64
	Window time.Duration
}

func (q Quota) String() string { return strconv.FormatInt(q.N, 10) + "/" + unitName(q.Window) }

// units are the periods a rate or quota may name, by every spelling accepted.
var units = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hour": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour,
}

func unitName(d time.Duration) string {
	switch d {
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return d.String()
}

// ParseRate reads a policy's rate: "<n>/<unit>" with unit s, m or h (also
// second, minute, hour), e.g. "10/s" or "600/minute"; n is a whole number > 0.
func ParseRate(s string) (Rate, error) {
	n, per, err := parsePer(s, "rate", "10/s", time.Hour)
	if err != nil {
		return Rate{}, err
	}
	if n > 1<<30 {
		return Rate{}, fmt.Errorf("rate %q: %d calls is more than a bucket can hold; leave rate: out for no limit", s, n)
	}
	return Rate{N: int(n), Per: per}, nil
}

// ParseQuota reads a policy's quota: "<n>/<window>" with window minute, hour or
// day (also m, h, d), e.g. "1000/day"; n is a whole number > 0.
func ParseQuota(s string) (Quota, error) {
	n, per, err := parsePer(s, "quota", "1000/day", 24*time.Hour)
	if err != nil {
		return Quota{}, err
	}
	if per < time.Minute {
		return Quota{}, fmt.Errorf("quota %q: a quota's window is a minute, an hour or a day (for calls per second write rate:)", s)
	}
	return Quota{N: n, Window: per}, nil
}

// parsePer reads "<n>/<unit>" whose unit is at most longest.
func parsePer(s, what, example string, longest time.Duration) (int64, time.Duration, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, fmt.Errorf("%s %q is not <calls>/<period>, e.g. %s", what, s, example)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(num), "_", ""), 10, 64)
	if err != nil || n <= 0 {
		return 0, 0, fmt.Errorf("%s %q: the number of calls must be a whole number > 0, e.g. %s", what, s, example)
	}
	per, ok := units[strings.ToLower(strings.TrimSpace(unit))]
	if !ok || per > longest {
		valid := "s, m or h"
		if what == "quota" {
			valid = "minute, hour or day"
		}
		return 0, 0, fmt.Errorf("%s %q: unknown period %q; write %s, e.g. %s", what, s, strings.TrimSpace(unit), valid, example)
	}
	return n, per, nil
}
