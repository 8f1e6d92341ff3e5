//go:build !race

package server

// RaceBuild: this test binary runs without the race detector.
const RaceBuild = false
