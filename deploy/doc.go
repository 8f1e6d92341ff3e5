// Package deploy holds the container image's default configuration (helix.yaml) and
// the Kubernetes manifests (kubernetes/); its tests check them together with the
// repository's Dockerfile: every manifest decodes strictly into the Kubernetes API
// types, their cross-references hold (Service selector, probe and target ports, the
// ConfigMap the pods mount, the HPA's target), the ConfigMap's helix.yaml is a valid
// Helix configuration whose listeners match the container ports, the pods can write
// where Helix writes, and the Dockerfile's `go build` line builds a statically linked
// helix. See docs/deployment.md.
package deploy
