package deploy

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestManifests decodes every manifest strictly and checks them with the Dockerfile
// and the configuration they carry.
func TestManifests(t *testing.T) {
	b := loadBundle(t)
	for _, err := range b.check(t) {
		t.Error(err)
	}
}

// TestChecksCatchBrokenManifests breaks one thing at a time and expects the checks
// to say so: a check that cannot fail would prove nothing.
func TestChecksCatchBrokenManifests(t *testing.T) {
	base := loadBundle(t)
	if errs := base.check(t); len(errs) > 0 {
		t.Fatalf("the checked-in manifests must pass first: %v", errs)
	}
	container := func(b *bundle) *corev1.Container { return &b.dep.Spec.Template.Spec.Containers[0] }
	cases := []struct {
		name   string
		break_ func(b *bundle)
		want   string
	}{
		{"service selector", func(b *bundle) { b.svc.Spec.Selector["app.kubernetes.io/name"] = "helx" }, "does not select the Deployment's pods"},
		{"deployment selector", func(b *bundle) { b.dep.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] = "other" }, "do not match the pod template's labels"},
		{"service target port", func(b *bundle) { b.svc.Spec.Ports[0].TargetPort = intstr.FromString("htp") }, `no port named "htp"`},
		{"service publishes management", func(b *bundle) { b.svc.Spec.Ports[0].TargetPort = intstr.FromString("management") }, "keep it off the Service"},
		{"readiness port", func(b *bundle) { container(b).ReadinessProbe.HTTPGet.Port = intstr.FromString("http") }, "not the management port"},
		{"readiness unknown port", func(b *bundle) { container(b).ReadinessProbe.HTTPGet.Port = intstr.FromInt32(9998) }, "is not a port of container"},
		{"liveness path", func(b *bundle) { container(b).LivenessProbe.HTTPGet.Path = "/health" }, "GET /health answers 404"},
		{"readiness on liveness path", func(b *bundle) { container(b).ReadinessProbe.HTTPGet.Path = "/healthz" }, "answers 200 while Helix is not ready, want 503"},
		{"liveness on readiness path", func(b *bundle) { container(b).LivenessProbe.HTTPGet.Path = "/readyz" }, "answers 503 while Helix is not ready, want 200"},
		{"no liveness", func(b *bundle) { container(b).LivenessProbe = nil }, "livenessProbe: missing"},
		{"container port dropped", func(b *bundle) { container(b).Ports = container(b).Ports[:2] }, "not a container port"},
		{"hpa target", func(b *bundle) { b.hpa.Spec.ScaleTargetRef.Name = "helx" }, "is not the Deployment"},
		{"hpa without cpu request", func(b *bundle) { delete(container(b).Resources.Requests, corev1.ResourceCPU) }, "cpu utilization needs a cpu request"},
		{"no memory limit", func(b *bundle) { delete(container(b).Resources.Limits, corev1.ResourceMemory) }, "no memory limit"},
		{"root allowed", func(b *bundle) { f := false; b.dep.Spec.Template.Spec.SecurityContext.RunAsNonRoot = &f }, "runAsNonRoot is not true"},
		{"writable root", func(b *bundle) { f := false; container(b).SecurityContext.ReadOnlyRootFilesystem = &f }, "readOnlyRootFilesystem is not true"},
		{"no data dir volume", func(b *bundle) { dropMount(container(b), "/var/lib/helix") }, "helix.data_dir (/var/lib/helix/.helix): no volume is mounted there"},
		{"no tmp volume", func(b *bundle) { dropMount(container(b), "/tmp") }, "the temporary directory (/tmp)"},
		{"data dir outside the volume", func(b *bundle) { container(b).WorkingDir = "/srv" }, "helix.data_dir (/srv/.helix)"},
		{"config path", func(b *bundle) { container(b).Args[1] = "/etc/helix/app.yaml" }, `key "app.yaml" of ConfigMap helix-config, which has no such key`},
		{"config not from the configmap", func(b *bundle) { b.dep.Spec.Template.Spec.Volumes[0].ConfigMap.Name = "other" }, "not on ConfigMap helix-config"},
		{"api key not provided", func(b *bundle) { container(b).Env = nil }, "HELIX_MCP_API_KEY"},
		{"broken helix.yaml", func(b *bundle) {
			b.cm.Data[configMapKey] = strings.Replace(b.cm.Data[configMapKey], "- transform:", "- tranform:", 1)
			b.imageConfig = b.cm.Data[configMapKey]
		}, `unknown step "tranform"`},
		{"management on loopback", func(b *bundle) {
			b.cm.Data[configMapKey] = strings.Replace(b.cm.Data[configMapKey], `addr: "0.0.0.0:9999"`, `addr: "127.0.0.1:9999"`, 1)
			b.imageConfig = b.cm.Data[configMapKey]
		}, "loopback inside the pod"},
		{"mcp server without key", func(b *bundle) {
			b.cm.Data[configMapKey] = strings.Replace(b.cm.Data[configMapKey], `api_keys: ["${env:HELIX_MCP_API_KEY}"]`, ``, 1)
			b.imageConfig = b.cm.Data[configMapKey]
		}, "has neither api_keys nor auth"},
		{"configmap drifts from the image's config", func(b *bundle) { b.cm.Data[configMapKey] += "# edited\n" }, "differs from deploy/helix.yaml"},
		{"dockerfile go version", func(b *bundle) { b.goVersion = "1.99.0" }, "want golang:1.99.0"},
		{"dockerfile expose", func(b *bundle) { replaceInstr(b.docker.final(), "EXPOSE", "8080 9999") }, "differ from the Dockerfile's EXPOSE"},
		{"dockerfile root user", func(b *bundle) { replaceInstr(b.docker.final(), "USER", "0") }, "want a numeric uid other than 0"},
		{"dockerfile uid differs", func(b *bundle) { replaceInstr(b.docker.final(), "USER", "1000:1000") }, "differs from the image's USER 1000"},
		{"dockerfile cgo", func(b *bundle) {
			st := b.docker.stages[0]
			for i, in := range st.instr {
				if in.cmd == "RUN" && strings.Contains(in.rest, "go build") {
					st.instr[i].rest = strings.Replace(in.rest, "CGO_ENABLED=0", "CGO_ENABLED=1", 1)
				}
			}
		}, "must set CGO_ENABLED=0"},
		{"dockerfile build line chained", func(b *bundle) {
			st := b.docker.stages[0]
			for i, in := range st.instr {
				if in.cmd == "RUN" && strings.Contains(in.rest, "go build") {
					st.instr[i].rest = in.rest + " && strip /out/helix"
				}
			}
		}, "must be one plain command"},
		{"dockerfile base image", func(b *bundle) { b.docker.final().image = "debian:12" }, "want scratch or a distroless image"},
		{"dockerfile cmd", func(b *bundle) { replaceInstr(b.docker.final(), "CMD", `["run", "/etc/helix/other.yaml"]`) }, "no COPY deploy/helix.yaml /etc/helix/other.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := base.copy()
			tc.break_(b)
			errs := b.check(t)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Errorf("want an error containing %q, got %d: %v", tc.want, len(errs), errs)
		})
	}
}

func dropMount(c *corev1.Container, path string) {
	var kept []corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			kept = append(kept, m)
		}
	}
	c.VolumeMounts = kept
}

func replaceInstr(s *dockerStage, cmd, rest string) {
	for i := range s.instr {
		if s.instr[i].cmd == cmd {
			s.instr[i].rest = rest
		}
	}
}

// TestStrictDecoding: a misspelt or unknown field, a duplicate key or a value of the
// wrong type in a manifest is an error, not silently dropped as kubectl's lenient
// decoders (and the API server with a warning) would.
func TestStrictDecoding(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(manifestDir, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	orig := string(data)
	if _, err := decodeManifest(data); err != nil {
		t.Fatalf("deployment.yaml: %v", err)
	}
	for name, edit := range map[string][2]string{
		"misspelt field":     {"readinessProbe:", "readinesProbe:"},
		"unknown field":      {"  replicas: 2\n", "  replicas: 2\n  replica: 2\n"},
		"wrong type":         {"containerPort: 8080", "containerPort: http"},
		"bad quantity":       {"memory: 256Mi", "memory: 256 MiB"},
		"duplicate key":      {"  replicas: 2\n", "  replicas: 2\n  replicas: 3\n"},
		"unknown kind":       {"kind: Deployment", "kind: Deploymnet"},
		"unknown apiVersion": {"apiVersion: apps/v1", "apiVersion: apps/v2"},
	} {
		if !strings.Contains(orig, edit[0]) {
			t.Fatalf("%s: deployment.yaml no longer contains %q; update the test", name, edit[0])
		}
		broken := strings.Replace(orig, edit[0], edit[1], 1)
		if _, err := decodeManifest([]byte(broken)); err == nil {
			t.Errorf("%s (%q → %q): decoded without error", name, edit[0], edit[1])
		}
	}
}

// TestDockerfileBuildsStaticHelix runs the Dockerfile's `go build` line (its
// environment, flags and ARG defaults) and checks that the binary is statically
// linked — no program interpreter, no shared libraries — so that it runs on an
// image without a C library; then that it runs, and that it accepts the
// Deployment's arguments with the ConfigMap's configuration (`validate` in place of
// `run`, nothing started).
func TestDockerfileBuildsStaticHelix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helix: skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux: the ELF checks need a linux build")
	}
	b := loadBundle(t)
	cmd, err := b.docker.stages[0].buildCommand()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "helix")
	args := append([]string(nil), cmd.args...)
	for i := range args {
		if i > 0 && args[i-1] == "-o" {
			args[i] = bin
		}
	}
	build := exec.Command("go", args...)
	build.Dir = repoRoot
	build.Env = append(os.Environ(), cmd.env...)
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("Dockerfile:%d: go %s: %v\n%s", cmd.line, strings.Join(args, " "), err, out)
	}
	t.Logf("go %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary has a program interpreter (PT_INTERP): it is dynamically linked")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) > 0 {
		t.Errorf("the binary needs shared libraries (DT_NEEDED): %v", libs)
	}

	version := b.docker.stages[0].args["VERSION"]
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "helix "+version+" ") {
		t.Errorf("helix version: %v: %q, want the Dockerfile's VERSION %q", err, out, version)
	}

	// The Deployment's args, with validate for run and the ConfigMap's file for the
	// mounted one, in the Deployment's environment.
	c := b.dep.Spec.Template.Spec.Containers[0]
	file := filepath.Join(t.TempDir(), configMapKey)
	if err := os.WriteFile(file, []byte(b.cm.Data[configMapKey]), 0o600); err != nil {
		t.Fatal(err)
	}
	files, err := runFiles(c.Args)
	if err != nil || len(files) != 1 || c.Args[0] != "run" {
		t.Fatalf("args %q: want run FILE [flags]", c.Args)
	}
	vargs := append([]string(nil), c.Args...)
	vargs[0] = "validate"
	for i, a := range vargs {
		if a == files[0] {
			vargs[i] = file
		}
	}
	validate := exec.Command(bin, vargs...)
	validate.Env = os.Environ()
	for k, v := range containerEnv(c) {
		validate.Env = append(validate.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	validate.Stdout, validate.Stderr = &stdout, &stderr
	if err := validate.Run(); err != nil || !strings.HasPrefix(stdout.String(), "ok: ") {
		t.Errorf("helix %s: %v\n%s%s", strings.Join(vargs, " "), err, stdout.String(), stderr.String())
	}
}
