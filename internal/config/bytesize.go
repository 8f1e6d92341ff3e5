package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// byteUnits are the suffixes ByteSize accepts: SI (kB, MB, GB: powers of 1000) and
// binary (KiB, MiB, GiB: powers of 1024), matched without regard to case.
var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

// ParseByteSize reads a size: a number of bytes (1048576, 1_048_576) or a number
// with a unit (64MiB, 128 MB, 1.5GiB). It must be positive.
func ParseByteSize(s string) (int64, error) {
	text := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(s, "_", "")))
	num, mult := text, 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(text, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(text, u.suffix)), u.mult
			break
		}
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil && mult == 1 {
		if n <= 0 {
			return 0, fmt.Errorf("%q is not a positive size", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || num == "" || strings.ContainsAny(num, "+-eEx") {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	v := f * mult
	switch {
	case v < 1:
		return 0, fmt.Errorf("%q is not a positive size", s)
	case v >= math.MaxInt64:
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v), nil
}

// ByteSize decodes a size scalar (see ParseByteSize); a bad value is an error at the
// node that says how to write one.
func (d *Decoder) ByteSize(n *yaml.Node, path string) int64 {
	if d.describeScalar(n, TypeByteSize) {
		return 0
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return 0
	}
	if n.Kind != yaml.ScalarNode {
		d.Errorf(n, path, "want a size, not %s", describe(n)).Hint = "write a number of bytes or a size such as 64MiB or 128MB"
		return 0
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		d.Errorf(n, path, "%v", err).Hint = "write a number of bytes or a size such as 64MiB or 128MB"
		return 0
	}
	return v
}
