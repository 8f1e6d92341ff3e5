package deploy

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/uri"
)

const (
	repoRoot      = ".."
	manifestDir   = "kubernetes"
	imageConfig   = "helix.yaml" // deploy/helix.yaml, the image's default configuration
	configMapKey  = "helix.yaml"
	dockerfileRel = "Dockerfile"
)

// bundle is everything the checks look at together.
type bundle struct {
	cm     *corev1.ConfigMap
	dep    *appsv1.Deployment
	svc    *corev1.Service
	hpa    *autoscalingv2.HorizontalPodAutoscaler
	docker *dockerfile
	// imageConfig is deploy/helix.yaml, which the Dockerfile copies into the image.
	imageConfig string
	goVersion   string
	// where is the file each object came from, for messages.
	where map[any]string
}

func (b *bundle) copy() *bundle {
	c := *b
	c.cm, c.dep, c.svc, c.hpa = b.cm.DeepCopy(), b.dep.DeepCopy(), b.svc.DeepCopy(), b.hpa.DeepCopy()
	d := *b.docker
	d.stages = nil
	for _, s := range b.docker.stages {
		sc := *s
		sc.instr = append([]dockerInstr(nil), s.instr...)
		d.stages = append(d.stages, &sc)
	}
	c.docker = &d
	c.where = map[any]string{c.cm: b.where[b.cm], c.dep: b.where[b.dep], c.svc: b.where[b.svc], c.hpa: b.where[b.hpa]}
	return &c
}

// loadBundle reads the Dockerfile, deploy/helix.yaml and every manifest under
// deploy/kubernetes. Each YAML document must be one object of a kind listed in
// decodeManifest and decode strictly: an unknown or misspelt field, a duplicate key
// or a value of the wrong type is an error.
func loadBundle(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{where: map[any]string{}}
	files, err := filepath.Glob(filepath.Join(manifestDir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/%s: %v", manifestDir, err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".yaml") {
			t.Errorf("deploy/%s: not a .yaml manifest (kubectl apply -f %s/ reads every file)", f, manifestDir)
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range splitDocuments(data) {
			obj, err := decodeManifest(doc.text)
			if err != nil {
				t.Errorf("deploy/%s:%d: %v", f, doc.line, err)
				continue
			}
			where := fmt.Sprintf("deploy/%s:%d", f, doc.line)
			var dup bool
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				dup, b.cm = b.cm != nil, o
			case *appsv1.Deployment:
				dup, b.dep = b.dep != nil, o
			case *corev1.Service:
				dup, b.svc = b.svc != nil, o
			case *autoscalingv2.HorizontalPodAutoscaler:
				dup, b.hpa = b.hpa != nil, o
			}
			if dup {
				t.Errorf("%s: a second %T: the checks expect one of each kind", where, obj)
			}
			b.where[obj] = where
		}
	}
	if b.cm == nil || b.dep == nil || b.svc == nil || b.hpa == nil {
		t.Fatalf("deploy/%s must hold a ConfigMap, a Deployment, a Service and a HorizontalPodAutoscaler", manifestDir)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, dockerfileRel))
	if err != nil {
		t.Fatal(err)
	}
	if b.docker, err = parseDockerfile(dockerfileRel, data); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile(imageConfig)
	if err != nil {
		t.Fatal(err)
	}
	b.imageConfig = string(img)
	if b.goVersion, err = goModVersion(filepath.Join(repoRoot, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return b
}

type yamlDoc struct {
	line int
	text []byte
}

// splitDocuments splits a YAML stream on `---` lines; empty documents are dropped.
func splitDocuments(data []byte) []yamlDoc {
	var docs []yamlDoc
	start := 1
	var cur []string
	add := func() {
		text := strings.Join(cur, "\n")
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(text, "")) != "" {
			docs = append(docs, yamlDoc{line: start, text: []byte(text)})
		}
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.TrimRight(l, " \t\r") == "---" {
			add()
			cur, start = nil, i+2
			continue
		}
		cur = append(cur, l)
	}
	add()
	return docs
}

// decodeManifest decodes one object strictly into its Kubernetes API type.
func decodeManifest(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	default:
		return nil, fmt.Errorf("apiVersion %q kind %q: not a kind these checks know (add it to decodeManifest with its checks)", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// check runs every check of the bundle and returns what is wrong. Configurations
// are loaded with t.Setenv'd environments, so t must not be parallel.
func (b *bundle) check(t *testing.T) []error {
	var errs []error
	add := func(where string, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, a...)))
	}
	addAll := func(more []error) { errs = append(errs, more...) }

	addAll(b.checkMetadata())
	addAll(b.checkDockerfile())

	dep, where := b.dep, b.where[b.dep]
	// The pod template carries the selector's labels.
	if sel := dep.Spec.Selector; sel == nil || len(sel.MatchLabels) == 0 {
		add(where, "spec.selector.matchLabels is empty")
	} else if !subset(sel.MatchLabels, dep.Spec.Template.Labels) {
		add(where, "spec.selector.matchLabels %v do not match the pod template's labels %v", sel.MatchLabels, dep.Spec.Template.Labels)
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		add(where, "want one container, got %d", len(dep.Spec.Template.Spec.Containers))
		return errs
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image == "" {
		add(where, "container %q has no image", c.Name)
	}

	// The configuration: the file the args name comes from the ConfigMap, equals the
	// image's default, and is valid for Helix in the Deployment's environment.
	if err := b.configFromArgs(c, pod); err != nil {
		add(where, "%v", err)
	}
	if b.cm.Data[configMapKey] != b.imageConfig {
		add(b.where[b.cm], "data[%q] differs from deploy/%s (the image's default configuration): keep the two equal", configMapKey, imageConfig)
	}
	cfg, cfgErrs := loadHelixConfig(t, fmt.Sprintf("%s data[%s]", b.where[b.cm], configMapKey), b.cm.Data[configMapKey], containerEnv(c))
	addAll(cfgErrs)
	if cfg == nil {
		return errs
	}

	// Container ports: the Dockerfile's EXPOSE, and every listener of the
	// configuration on a non-loopback address.
	ports := map[string]int32{}
	byNumber := map[int32]bool{}
	for _, p := range c.Ports {
		if p.Name != "" {
			ports[p.Name] = p.ContainerPort
		}
		byNumber[p.ContainerPort] = true
	}
	if exposed, err := b.docker.final().exposed(); err != nil {
		add(dockerfileRel, "%v", err)
	} else if !sameKeys(exposed, byNumber) {
		add(where, "container ports %v differ from the Dockerfile's EXPOSE %v", sortedKeys(byNumber), sortedKeys(exposed))
	}
	mgmtPort := int32(-1)
	for _, l := range listeners(cfg) {
		host, port, err := splitAddr(l.addr)
		if err != nil {
			add(where, "%s: %v", l.what, err)
			continue
		}
		if l.management {
			mgmtPort = port
		}
		if !byNumber[port] {
			add(where, "%s listens on port %d, which is not a container port", l.what, port)
		}
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			add(where, "%s listens on %s: loopback inside the pod, unreachable from the kubelet and the Service (use 0.0.0.0)", l.what, l.addr)
		}
	}
	if mgmtPort < 0 {
		add(where, "the configuration has no management server: the probes need /healthz and /readyz")
	}

	// Probes: on the management port, and paths that the management server answers
	// as liveness (200 even while not ready) and readiness (503 while not ready).
	b.checkProbe(&errs, where, "readinessProbe", c.ReadinessProbe, c, mgmtPort, true)
	b.checkProbe(&errs, where, "livenessProbe", c.LivenessProbe, c, mgmtPort, false)

	// Resources and security.
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[name]; !ok {
			add(where, "container %q has no %s request", c.Name, name)
		}
		if _, ok := c.Resources.Limits[name]; !ok {
			add(where, "container %q has no %s limit", c.Name, name)
		}
	}
	if !nonRoot(pod.SecurityContext, c.SecurityContext) {
		add(where, "runAsNonRoot is not true (pod or container securityContext)")
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		add(where, "container %q: securityContext.readOnlyRootFilesystem is not true", c.Name)
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		add(where, "container %q: securityContext.allowPrivilegeEscalation is not false", c.Name)
	}
	if uid, ok := runAsUser(pod.SecurityContext, sc); ok {
		if img, err := b.imageUser(); err == nil && img != uid {
			add(where, "runAsUser %d differs from the image's USER %d", uid, img)
		}
	}

	// Writable paths on a read-only root: Helix's data_dir (relative to the working
	// directory) and the temporary directory.
	wd := c.WorkingDir
	if wd == "" {
		wd = b.docker.final().workdir()
	}
	dataDir := cfg.Helix.DataDir
	if dataDir == "" {
		dataDir = config.DefaultDataDir
	}
	if !path.IsAbs(dataDir) {
		dataDir = path.Join(wd, dataDir)
	}
	for _, p := range []struct{ what, dir string }{{"helix.data_dir", dataDir}, {"the temporary directory", os.TempDir()}} {
		if err := writableMount(pod, c, p.dir); err != nil {
			add(where, "%s (%s): %v", p.what, p.dir, err)
		}
	}

	addAll(b.checkService(c, mgmtPort))
	addAll(b.checkHPA(c))
	return errs
}

func (b *bundle) checkMetadata() []error {
	var errs []error
	for _, o := range []metav1.Object{b.cm, b.dep, b.svc, b.hpa} {
		where := b.where[o]
		for _, msg := range validation.IsDNS1123Subdomain(o.GetName()) {
			errs = append(errs, fmt.Errorf("%s: metadata.name %q: %s", where, o.GetName(), msg))
		}
		for k, v := range o.GetLabels() {
			for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				errs = append(errs, fmt.Errorf("%s: label %s=%s: %s", where, k, v, msg))
			}
		}
	}
	for k, v := range b.dep.Spec.Template.Labels {
		for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
			errs = append(errs, fmt.Errorf("%s: pod label %s=%s: %s", b.where[b.dep], k, v, msg))
		}
	}
	return errs
}

// configFromArgs checks that the configuration file the container's args name
// (helix run FILE) is the ConfigMap's helix.yaml, mounted there.
func (b *bundle) configFromArgs(c corev1.Container, pod corev1.PodSpec) error {
	files, err := runFiles(c.Args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fmt.Errorf("container %q: want `run FILE`, got args %q", c.Name, c.Args)
	}
	key, err := configMapKeyAt(pod, c, b.cm.Name, files[0])
	if err != nil {
		return err
	}
	if _, ok := b.cm.Data[key]; !ok {
		return fmt.Errorf("the pods read %s, key %q of ConfigMap %s, which has no such key", files[0], key, b.cm.Name)
	}
	if key != configMapKey {
		return fmt.Errorf("the pods read key %q of ConfigMap %s; the checks validate %q", key, b.cm.Name, configMapKey)
	}
	return nil
}

// runFiles returns the FILE arguments of `run FILE… [flags]` (or `mcp serve`).
func runFiles(args []string) ([]string, error) {
	rest := args
	switch {
	case len(rest) > 0 && rest[0] == "run":
		rest = rest[1:]
	case len(rest) > 1 && rest[0] == "mcp" && rest[1] == "serve":
		rest = rest[2:]
	default:
		return nil, fmt.Errorf("args %q: want run FILE… (or mcp serve FILE…)", args)
	}
	var files []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--log-format" || a == "--log-level":
			i++ // the flag's value
		case strings.HasPrefix(a, "-"):
			if !strings.Contains(a, "=") && !strings.HasPrefix(a, "--log-") {
				return nil, fmt.Errorf("args %q: unknown flag %s", args, a)
			}
		default:
			files = append(files, a)
		}
	}
	return files, nil
}

// configMapKeyAt resolves file to the key of ConfigMap cmName mounted at its
// directory.
func configMapKeyAt(pod corev1.PodSpec, c corev1.Container, cmName, file string) (string, error) {
	m, v, err := mountOf(pod, c, file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if v.ConfigMap == nil || v.ConfigMap.Name != cmName {
		return "", fmt.Errorf("%s is on volume %q, not on ConfigMap %s", file, v.Name, cmName)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(file, m.MountPath), "/")
	if m.SubPath != "" {
		rel = m.SubPath
	}
	if len(v.ConfigMap.Items) == 0 {
		return rel, nil
	}
	for _, it := range v.ConfigMap.Items {
		if it.Path == rel {
			return it.Key, nil
		}
	}
	return "", fmt.Errorf("%s: ConfigMap volume %q has no item with path %q", file, v.Name, rel)
}

// mountOf returns the container's mount holding p (the longest mount path that is
// p or one of its parents) and its volume.
func mountOf(pod corev1.PodSpec, c corev1.Container, p string) (corev1.VolumeMount, corev1.Volume, error) {
	var best *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if (p == m.MountPath || strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")) &&
			(best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = &c.VolumeMounts[i]
		}
	}
	if best == nil {
		return corev1.VolumeMount{}, corev1.Volume{}, errors.New("no volume is mounted there")
	}
	for _, v := range pod.Volumes {
		if v.Name == best.Name {
			return *best, v, nil
		}
	}
	return *best, corev1.Volume{}, fmt.Errorf("volumeMount %q names no volume of the pod", best.Name)
}

// writableMount checks that dir is on a writable volume (emptyDir, ephemeral or a
// persistent volume claim): the root filesystem is read-only.
func writableMount(pod corev1.PodSpec, c corev1.Container, dir string) error {
	m, v, err := mountOf(pod, c, dir)
	if err != nil {
		return fmt.Errorf("%w; the root filesystem is read-only: mount an emptyDir", err)
	}
	if m.ReadOnly {
		return fmt.Errorf("mount %s is read-only", m.MountPath)
	}
	if v.EmptyDir == nil && v.Ephemeral == nil && v.PersistentVolumeClaim == nil {
		return fmt.Errorf("volume %q at %s is not writable storage (emptyDir, ephemeral or a PVC)", v.Name, m.MountPath)
	}
	return nil
}

func (b *bundle) checkProbe(errs *[]error, where, name string, p *corev1.Probe, c corev1.Container, mgmtPort int32, readiness bool) {
	add := func(format string, a ...any) {
		*errs = append(*errs, fmt.Errorf("%s: %s: %s", where, name, fmt.Sprintf(format, a...)))
	}
	if p == nil || p.HTTPGet == nil {
		add("missing, or not an httpGet probe on the management endpoints")
		return
	}
	g := p.HTTPGet
	if port, err := containerPort(c, g.Port); err != nil {
		add("%v", err)
	} else if port != mgmtPort {
		add("port %s is %d, not the management port %d", g.Port.String(), port, mgmtPort)
	}
	if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
		add("scheme %s: the management server speaks plain HTTP", g.Scheme)
	}
	// Ask the management server itself, once ready and once not.
	for _, ready := range []bool{true, false} {
		srv := management.New(management.Options{
			Logger: slog.New(slog.DiscardHandler),
			Ready: func() error {
				if ready {
					return nil
				}
				return errors.New("stopping")
			},
		})
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, g.Path, nil))
		want := http.StatusOK
		if readiness && !ready {
			want = http.StatusServiceUnavailable
		}
		if rec.Code != want {
			state := "ready"
			if !ready {
				state = "not ready"
			}
			add("GET %s answers %d while Helix is %s, want %d (liveness is /healthz, readiness /readyz)", g.Path, rec.Code, state, want)
		}
	}
}

func containerPort(c corev1.Container, p intstr.IntOrString) (int32, error) {
	if p.Type == intstr.Int {
		for _, cp := range c.Ports {
			if cp.ContainerPort == p.IntVal {
				return p.IntVal, nil
			}
		}
		return 0, fmt.Errorf("port %d is not a port of container %q", p.IntVal, c.Name)
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("container %q has no port named %q", c.Name, p.StrVal)
}

func (b *bundle) checkService(c corev1.Container, mgmtPort int32) []error {
	var errs []error
	where := b.where[b.svc]
	if len(b.svc.Spec.Selector) == 0 || !subset(b.svc.Spec.Selector, b.dep.Spec.Template.Labels) {
		errs = append(errs, fmt.Errorf("%s: spec.selector %v does not select the Deployment's pods (labels %v)", where, b.svc.Spec.Selector, b.dep.Spec.Template.Labels))
	}
	if len(b.svc.Spec.Ports) == 0 {
		errs = append(errs, fmt.Errorf("%s: no ports", where))
	}
	for _, p := range b.svc.Spec.Ports {
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port) // targetPort defaults to port
		}
		port, err := containerPort(c, target)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: port %q: targetPort: %w", where, p.Name, err))
			continue
		}
		if port == mgmtPort {
			errs = append(errs, fmt.Errorf("%s: port %q routes to the management port %d: keep it off the Service (the manifest lists every tool; probes and Prometheus reach pods directly)", where, p.Name, port))
		}
	}
	return errs
}

func (b *bundle) checkHPA(c corev1.Container) []error {
	var errs []error
	where := b.where[b.hpa]
	ref := b.hpa.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != b.dep.Name {
		errs = append(errs, fmt.Errorf("%s: scaleTargetRef %s %s %q is not the Deployment %q", where, ref.APIVersion, ref.Kind, ref.Name, b.dep.Name))
	}
	minR := int32(1)
	if b.hpa.Spec.MinReplicas != nil {
		minR = *b.hpa.Spec.MinReplicas
	}
	if minR < 1 || minR > b.hpa.Spec.MaxReplicas {
		errs = append(errs, fmt.Errorf("%s: minReplicas %d, maxReplicas %d", where, minR, b.hpa.Spec.MaxReplicas))
	}
	if len(b.hpa.Spec.Metrics) == 0 {
		errs = append(errs, fmt.Errorf("%s: no metrics", where))
	}
	for _, m := range b.hpa.Spec.Metrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil {
			continue
		}
		if m.Resource.Target.Type == autoscalingv2.UtilizationMetricType {
			if _, ok := c.Resources.Requests[m.Resource.Name]; !ok {
				errs = append(errs, fmt.Errorf("%s: %s utilization needs a %s request in the Deployment's container", where, m.Resource.Name, m.Resource.Name))
			}
		}
	}
	return errs
}

func (b *bundle) checkDockerfile() []error {
	var errs []error
	d := b.docker
	add := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", dockerfileRel, fmt.Sprintf(format, a...)))
	}
	if len(d.stages) < 2 {
		add("want a build stage and a final stage, got %d stage(s)", len(d.stages))
		return errs
	}
	build, final := d.stages[0], d.final()
	if img := build.image; !strings.HasPrefix(img, "golang:"+b.goVersion) ||
		(len(img) > len("golang:"+b.goVersion) && img[len("golang:"+b.goVersion)] != '-') {
		add("line %d: build stage FROM %s: want golang:%s, the go line of go.mod", build.line, img, b.goVersion)
	}
	if final.image != "scratch" && !strings.Contains(final.image, "distroless") {
		add("line %d: final stage FROM %s: want scratch or a distroless image", final.line, final.image)
	}
	if _, err := b.imageUser(); err != nil {
		add("%v", err)
	}
	if cmd, err := build.buildCommand(); err != nil {
		add("%v", err)
	} else if v, ok := cmd.envValue("CGO_ENABLED"); !ok || v != "0" {
		add("line %d: the go build line must set CGO_ENABLED=0 (a static binary for an image without a C library)", cmd.line)
	}
	// The image's default configuration is deploy/helix.yaml, where CMD runs it.
	cmd, ok := final.last("CMD")
	var cmdArgs []string
	if !ok {
		add("final stage has no CMD")
	} else if err := yaml.Unmarshal([]byte(cmd.rest), &cmdArgs); err != nil || !strings.HasPrefix(cmd.rest, "[") {
		add("line %d: CMD %s: want the exec form [\"run\", \"FILE\"]", cmd.line, cmd.rest)
	} else if files, err := runFiles(cmdArgs); err != nil || len(files) != 1 {
		add("line %d: CMD %s: want run FILE", cmd.line, cmd.rest)
	} else {
		copied := false
		for _, in := range final.instr {
			if f := strings.Fields(in.rest); in.cmd == "COPY" && len(f) == 2 && f[0] == "deploy/"+imageConfig && f[1] == files[0] {
				copied = true
			}
		}
		if !copied {
			add("CMD runs %s, but no COPY deploy/%s %s puts the default configuration there", files[0], imageConfig, files[0])
		}
	}
	return errs
}

// imageUser is the uid of the final stage's USER, which must be numeric (so that
// runAsNonRoot can be verified without a passwd lookup) and not root.
func (b *bundle) imageUser() (int64, error) {
	in, ok := b.docker.final().last("USER")
	if !ok {
		return 0, errors.New("final stage has no USER: the image would run as root")
	}
	u, _, _ := strings.Cut(in.rest, ":")
	uid, err := strconv.ParseInt(u, 10, 64)
	if err != nil || uid == 0 {
		return 0, fmt.Errorf("line %d: USER %s: want a numeric uid other than 0", in.line, in.rest)
	}
	return uid, nil
}

func nonRoot(pod *corev1.PodSecurityContext, c *corev1.SecurityContext) bool {
	if c != nil && c.RunAsNonRoot != nil {
		return *c.RunAsNonRoot
	}
	return pod != nil && pod.RunAsNonRoot != nil && *pod.RunAsNonRoot
}

func runAsUser(pod *corev1.PodSecurityContext, c *corev1.SecurityContext) (int64, bool) {
	if c != nil && c.RunAsUser != nil {
		return *c.RunAsUser, true
	}
	if pod != nil && pod.RunAsUser != nil {
		return *pod.RunAsUser, true
	}
	return 0, false
}

// containerEnv is the container's environment as the checks load the configuration
// with it: literal values as written, values from Secrets, ConfigMaps or the
// downward API as a stand-in naming their source.
func containerEnv(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			env[e.Name] = "from-" + strings.ToLower(e.Name)
			continue
		}
		env[e.Name] = e.Value
	}
	return env
}

// loadHelixConfig loads text as `helix validate` does (app.Load: the whole
// configuration built, nothing started) with env set, and returns the configuration
// and every error. Warnings count as errors except the one a pod cannot avoid: the
// management address is beyond loopback so that the kubelet's probes reach it.
func loadHelixConfig(t *testing.T, where, text string, env map[string]string) (*config.Config, []error) {
	t.Helper()
	// The variables the file names take the container's values, and only those: a
	// variable set in the test's own environment must not hide a missing one.
	for _, m := range envRef.FindAllStringSubmatch(text, -1) {
		if _, ok := env[m[1]]; !ok {
			t.Setenv(m[1], "") // restored after the test
			os.Unsetenv(m[1])
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	file := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, cfg, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, file)
	var errs []error
	rel := func(e error) error {
		return fmt.Errorf("%s: %s", where, strings.ReplaceAll(e.Error(), file, "helix.yaml"))
	}
	if err != nil {
		var ce config.Errors
		if errors.As(err, &ce) {
			for _, e := range ce.Sorted() {
				errs = append(errs, rel(e))
			}
		} else {
			errs = append(errs, rel(err))
		}
		return nil, errs
	}
	for _, w := range cfg.Warnings.Sorted() {
		var ce *config.Error
		if errors.As(w, &ce) && ce.Path == "helix.management.addr" {
			continue
		}
		errs = append(errs, rel(fmt.Errorf("warning: %w", w)))
	}
	return cfg, errs
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)`)

type listener struct {
	what       string
	addr       string
	management bool
}

// listeners are the TCP listeners a configuration opens: the management server,
// every MCP server but stdio ones, and every http-server:// and mcp-server://
// trigger.
func listeners(cfg *config.Config) []listener {
	var ls []listener
	if m := cfg.Helix.Management; m.Enabled == nil || *m.Enabled {
		addr := m.Addr
		if addr == "" {
			addr = management.DefaultAddr
		}
		ls = append(ls, listener{what: "helix.management", addr: addr, management: true})
	}
	for _, s := range cfg.MCPServers() {
		if strings.EqualFold(s.Transport, mcpserver.TransportStdio) {
			continue
		}
		addr := s.Addr
		if addr == "" {
			addr = mcpserver.DefaultAddr
		}
		ls = append(ls, listener{what: fmt.Sprintf("mcp server %q", s.ID), addr: addr})
	}
	for _, w := range cfg.Workflows {
		u, err := uri.Parse(w.From)
		if err != nil {
			continue
		}
		switch {
		case u.Scheme == "http-server",
			u.Scheme == mcpserver.Scheme && mcpserver.URITransport(u) != mcpserver.TransportStdio:
			ls = append(ls, listener{what: fmt.Sprintf("the trigger of workflow %q", w.ID), addr: u.Host})
		}
	}
	return ls
}

func splitAddr(addr string) (string, int32, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("address %s: want a fixed port (a container port cannot follow a chosen one)", addr)
	}
	return host, int32(n), nil
}

func subset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}

func sameKeys[A, B any](a map[int32]A, b map[int32]B) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
