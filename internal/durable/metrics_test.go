package durable

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type countsFunc func(context.Context) (map[State]int, error)

func (f countsFunc) CountByState(ctx context.Context) (map[State]int, error) { return f(ctx) }

func TestMetricsRunsByStateAndParked(t *testing.T) {
	t.Parallel()
	m := NewMetrics(countsFunc(func(context.Context) (map[State]int, error) {
		return map[State]int{StateWorking: 3, StateInputRequired: 2, StateWaiting: 5, StateCompleted: 7}, nil
	}))
	reg := prometheus.NewRegistry()
	for _, c := range m.Collectors() {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range mt.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[name] = mt.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"helix_durable_runs{state=working}": 3, "helix_durable_runs{state=input_required}": 2,
		"helix_durable_runs{state=waiting}": 5, "helix_durable_runs{state=completed}": 7,
		"helix_durable_runs{state=failed}": 0, "helix_durable_runs{state=cancelled}": 0,
		"helix_durable_runs_parked": 7,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

func TestMetricsHistogramsAndTakeovers(t *testing.T) {
	t.Parallel()
	m := NewMetrics(nil)
	reg := prometheus.NewRegistry()
	for _, c := range m.Collectors() {
		reg.MustRegister(c)
	}
	m.ObserveCheckpoint(300 * time.Microsecond)
	m.ObserveCheckpoint(2 * time.Millisecond)
	m.ObserveResume(1500 * time.Millisecond)
	m.TookOver("r2", []string{"a", "b", "c"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			if h := mt.GetHistogram(); h != nil {
				got[mf.GetName()] = float64(h.GetSampleCount())
			} else if c := mt.GetCounter(); c != nil {
				got[mf.GetName()] = c.GetValue()
			}
		}
	}
	want := map[string]float64{"helix_durable_checkpoint_seconds": 2, "helix_durable_resume_seconds": 1,
		"helix_durable_takeovers_total": 1, "helix_durable_taken_over_runs_total": 3}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["helix_durable_runs"]; ok {
		t.Error("runs by state without a counter")
	}
	var none *Metrics // a runtime without metrics
	none.ObserveCheckpoint(time.Millisecond)
	none.ObserveResume(time.Millisecond)
	none.TookOver("x", nil)
}

func TestMetricsStoreFailureCostsOnlyItsFamilies(t *testing.T) {
	t.Parallel()
	m := NewMetrics(countsFunc(func(context.Context) (map[State]int, error) { return nil, errors.New("store down") }))
	reg := prometheus.NewRegistry()
	for _, c := range m.Collectors() {
		reg.MustRegister(c)
	}
	m.ObserveCheckpoint(time.Millisecond)
	mfs, err := reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("gather error %v", err)
	}
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "helix_durable_checkpoint_seconds"
	}
	if !found {
		t.Error("the histograms were lost with the store's count")
	}
}
