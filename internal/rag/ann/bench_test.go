package ann

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time: on a shared machine the
// CPU per operation says more than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAdd is the cost of inserting one 384-dim vector into an index with
// the lists a million vectors get (DefaultLists(1e6)): a pass over the
// centroids and a quantisation.
func BenchmarkAdd(b *testing.B) {
	const dim = 384
	m := newMixture(1, dim, 100)
	lists := DefaultLists(1_000_000)
	cents := make([]float32, 0, lists*dim)
	for range lists {
		v, _ := m.Vector()
		cents = append(cents, v...)
	}
	x, err := New(dim, cents)
	if err != nil {
		b.Fatal(err)
	}
	vs := m.Vectors(1024)
	b.ReportAllocs()
	cpu := cpuTime()
	for i := 0; b.Loop(); i++ {
		if err := x.Add(uint32(i), vs[i%len(vs)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-us/op")
}

// BenchmarkTrain is the k-means training on 100,000 384-dim vectors.
func BenchmarkTrain(b *testing.B) {
	const dim, n = 384, 100_000
	m := newMixture(1, dim, 1000)
	vs := m.Vectors(n)
	cpu := cpuTime()
	defer func() { b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/op") }()
	for b.Loop() {
		if _, err := Train(context.Background(), dim, n, func(i int) []float32 { return vs[i] }, TrainOptions{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
