package deploy

// The Helm chart (helm/podchron) checked against the kustomize base: its
// copies of the rule file and the dashboard are the originals, `helm lint`
// (also --strict) is clean, its default rendering is the same objects as
// `kubectl kustomize deploy/` (apart from the differences listed in
// helmOnlyLabels and the Namespace), the values that stand for the
// kustomize components render what the components do, and the toggles
// (ServiceMonitor, PrometheusRule, dashboard, OTLP headers, RBAC, ...) add
// or remove exactly their objects.
//
// Helm comes from $PODCHRON_HELM (Helm 3) and $PODCHRON_HELM4 (Helm 4;
// `make test` builds both with scripts/build-helm.sh); without them these
// tests skip, except the copy check. Lint (here) and a real install
// (helm_install_test.go) run with both.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

const (
	helmDir  = "helm"
	chartDir = "helm/podchron"
	// The release and namespace that give the kustomize base's names.
	helmRelease   = "podchron"
	helmNamespace = "podchron"
)

// chartCopies: files the chart carries (.Files.Get cannot read outside the
// chart, and a packaged chart has no symlinks) -> their originals.
var chartCopies = map[string]string{
	chartDir + "/files/podchron.rules.yml": ruleFile,
	chartDir + "/files/dashboard.json":     dashboardFile,
}

// helmOnlyLabels are the labels the chart adds to what deploy/ sets: Helm's
// standard ones. Everything else in the default rendering must equal the
// kustomize base. The other documented difference: the chart has no
// Namespace object (Helm installs into an existing namespace, or creates
// one without labels; deploy/README.md says how to label it).
var helmOnlyLabels = []string{
	"app.kubernetes.io/instance",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/version",
	"helm.sh/chart",
}

// TestHelmChartCopies: the chart's rule file and dashboard are byte for
// byte deploy/'s; -update copies them.
func TestHelmChartCopies(t *testing.T) {
	for cp, orig := range chartCopies {
		want, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(cp, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(cp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s: copy it with go test ./deploy -run TestHelmChartCopies -update", cp, orig)
		}
	}
}

// helmBin is Helm 3's binary, which the rendering checks use.
func helmBin(t *testing.T) string {
	t.Helper()
	return helmMajors[0].bin(t)
}

// helmMajor is one Helm major version the chart is checked with.
type helmMajor struct {
	name string // "helm3", "helm4": the subtest's name
	env  string // the variable holding its binary's path
}

var helmMajors = []helmMajor{{"helm3", "PODCHRON_HELM"}, {"helm4", "PODCHRON_HELM4"}}

// bin is the binary's path; the test skips when the variable is not set.
func (h helmMajor) bin(t *testing.T) string {
	t.Helper()
	p := os.Getenv(h.env)
	if p == "" {
		t.Skipf("%s is not set: `make test` builds %s (scripts/build-helm.sh) and sets it", h.env, h.name)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v", h.env, p, err)
	}
	return p
}

func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	return runHelmWith(t, helmBin(t), args...)
}

// runHelmWith runs the Helm binary bin with its own empty configuration.
func runHelmWith(t *testing.T, bin string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	// No repositories, plugins or registry logins from the machine's own
	// Helm configuration.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out, nil
}

// helmTemplate renders the chart as release podchron in namespace podchron
// with the given --set values.
func helmTemplate(t *testing.T, sets ...string) []byte {
	t.Helper()
	args := []string{"template", helmRelease, chartDir, "--namespace", helmNamespace}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := runHelm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// object is one rendered Kubernetes object, decoded generically.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }
func (o object) meta() map[string]any {
	m, _ := o["metadata"].(map[string]any)
	return m
}
func (o object) name() string { s, _ := o.meta()["name"].(string); return s }
func (o object) namespace() string {
	s, _ := o.meta()["namespace"].(string)
	return s
}
func (o object) key() string { return o.kind() + " " + o.namespace() + "/" + o.name() }

// objects decodes a rendered multi-document stream, keyed by kind,
// namespace and name.
func objects(t *testing.T, rendered []byte) map[string]object {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(p, rendered, 0o644); err != nil {
		t.Fatal(err)
	}
	objs := map[string]object{}
	for _, doc := range yamlDocs(t, p) {
		var o object
		if err := sigsyaml.Unmarshal(doc, &o); err != nil {
			t.Fatal(err)
		}
		if o == nil {
			continue
		}
		if _, dup := objs[o.key()]; dup {
			t.Errorf("%s rendered twice", o.key())
		}
		objs[o.key()] = o
	}
	return objs
}

func kindsOf(objs map[string]object) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.kind())
	}
	slices.Sort(ks)
	return ks
}

func byKind(t *testing.T, objs map[string]object, kind string) object {
	t.Helper()
	var found object
	for _, o := range objs {
		if o.kind() == kind {
			if found != nil {
				t.Fatalf("two %s objects", kind)
			}
			found = o
		}
	}
	if found == nil {
		t.Fatalf("no %s rendered (have %v)", kind, kindsOf(objs))
	}
	return found
}

// typed re-decodes o strictly into v (unknown fields are errors).
func typed(t *testing.T, o object, v any) {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	strict(t, "helm template "+o.key(), b, v)
}

// dropHelmLabels removes the chart's own labels from an object's metadata
// and, for a DaemonSet, its pod template's.
func dropHelmLabels(o object) object {
	b, _ := json.Marshal(o)
	var c object
	_ = json.Unmarshal(b, &c)
	drop := func(meta any) {
		m, _ := meta.(map[string]any)
		labels, _ := m["labels"].(map[string]any)
		for _, l := range helmOnlyLabels {
			delete(labels, l)
		}
	}
	drop(c["metadata"])
	if spec, ok := c["spec"].(map[string]any); ok {
		if tmpl, ok := spec["template"].(map[string]any); ok {
			drop(tmpl["metadata"])
		}
	}
	return c
}

// diffPaths lists where a and b differ, as JSON-ish paths.
func diffPaths(path string, a, b any) []string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		var out []string
		for _, k := range ks {
			out = append(out, diffPaths(path+"."+k, av[k], bv[k])...)
		}
		return out
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
		}
		var out []string
		for i := range av {
			out = append(out, diffPaths(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(a, b) {
			return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
		}
		return nil
	}
}

// sameObject fails the test where helm's object differs from kustomize's
// beyond Helm's labels.
func sameObject(t *testing.T, what string, kz, hm object) {
	t.Helper()
	for _, d := range diffPaths("", map[string]any(dropHelmLabels(kz)), map[string]any(dropHelmLabels(hm))) {
		t.Errorf("%s: kustomize != helm at %s", what, d)
	}
}

// TestHelmLint: `helm lint` (also --strict) is clean with Helm 3 and Helm 4.
func TestHelmLint(t *testing.T) {
	for _, h := range helmMajors {
		t.Run(h.name, func(t *testing.T) { helmLint(t, h.bin(t)) })
	}
}

func helmLint(t *testing.T, helm string) {
	for _, sets := range [][]string{
		nil,
		{"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "dashboard.enabled=true",
			"otlp.headers.secretName=otlp-auth", "extraArgs={--startup-timeout=5m}"},
	} {
		for _, strictFlag := range []bool{false, true} {
			args := []string{"lint", chartDir}
			if strictFlag {
				args = append(args, "--strict")
			}
			for _, s := range sets {
				args = append(args, "--set", s)
			}
			out, err := runHelmWith(t, helm, args...)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("helm %s:\n%s", strings.Join(args, " "), out)
			for _, bad := range []string{"[WARNING]", "[ERROR]"} {
				if bytes.Contains(out, []byte(bad)) {
					t.Errorf("helm %s: %s", strings.Join(args, " "), out)
				}
			}
		}
	}
}

// TestHelmMatchesKustomize: `helm template` with the default values renders
// the kustomize base's objects, field for field, plus Helm's labels and
// minus the Namespace.
func TestHelmMatchesKustomize(t *testing.T) {
	hm := objects(t, helmTemplate(t))
	kz := objects(t, kubectlKustomize(t, "."))
	for k, o := range kz {
		if o.kind() == "Namespace" {
			if o.name() != helmNamespace {
				t.Errorf("kustomize's namespace is %s, the test installs into %s", o.name(), helmNamespace)
			}
			continue // made outside the chart (values.yaml, deploy/README.md)
		}
		h, ok := hm[k]
		if !ok {
			t.Errorf("helm renders no %s", k)
			continue
		}
		sameObject(t, k, o, h)
	}
	for k := range hm {
		if _, ok := kz[k]; !ok {
			t.Errorf("helm renders %s, which the kustomize base does not have", k)
		}
	}
	// Helm's labels are there, and strict decoding into the API types works.
	for _, o := range hm {
		labels, _ := o.meta()["labels"].(map[string]any)
		for _, l := range helmOnlyLabels {
			if labels[l] == nil {
				t.Errorf("%s: no label %s", o.key(), l)
			}
		}
	}
	var ds appsv1.DaemonSet
	typed(t, byKind(t, hm, "DaemonSet"), &ds)
	if img := tracer(t, &ds).Image; img != tracer(t, loadDaemonSet(t)).Image {
		t.Errorf("helm image %s, deploy/daemonset.yaml's %s", img, tracer(t, loadDaemonSet(t)).Image)
	}
	// The Service and the pods' selector ignore the release (a DaemonSet's
	// selector is immutable: the same as deploy/'s, so a cluster can move
	// between the two).
	if !reflect.DeepEqual(ds.Spec.Selector.MatchLabels, loadDaemonSet(t).Spec.Selector.MatchLabels) {
		t.Errorf("selector %v, deploy/'s %v", ds.Spec.Selector.MatchLabels, loadDaemonSet(t).Spec.Selector.MatchLabels)
	}
}

// kustomizeWithComponent renders deploy/ with one of its components through
// a throwaway overlay.
func kustomizeWithComponent(t *testing.T, name string) []byte {
	t.Helper()
	abs, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	k := fmt.Sprintf("resources:\n  - %s\ncomponents:\n  - %s\n", rel, filepath.Join(rel, "components", name))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return kubectlKustomize(t, dir)
}

// TestHelmValuesForComponents: the values deploy/README.md gives for each
// kustomize component render the component's DaemonSet.
func TestHelmValuesForComponents(t *testing.T) {
	for comp, sets := range map[string][]string{
		"cri-o": {"runtime.hostPath=/run/crio", "runtime.mountPath=/run/crio", "runtime.endpoint=unix:///run/crio/crio.sock"},
		"k3s": {"runtime.hostPath=/run/k3s/containerd", "runtime.mountPath=/run/k3s/containerd",
			"runtime.endpoint=unix:///run/k3s/containerd/containerd.sock",
			"extraArgs={--cni-bin-dir=/var/lib/rancher/k3s/data/,--cni-bin-dir=/opt/cni/bin/}"},
		"seccomp-unconfined": {"seccompProfile.type=Unconfined"},
		"kernel-pre-5.11":    {"extraCapabilities={SYS_RESOURCE}"},
	} {
		t.Run(comp, func(t *testing.T) {
			kz := byKind(t, objects(t, kustomizeWithComponent(t, comp)), "DaemonSet")
			hm := byKind(t, objects(t, helmTemplate(t, sets...)), "DaemonSet")
			sameObject(t, "DaemonSet with "+comp, kz, hm)
		})
	}
}

// withoutPartOf drops the part-of label, which the chart puts on every
// object and deploy/prometheus-operator/ (outside the base's labels) does not.
func withoutPartOf(o object) object {
	c := dropHelmLabels(o)
	delete(c.meta()["labels"].(map[string]any), "app.kubernetes.io/part-of")
	return c
}

func tracerEnv(t *testing.T, objs map[string]object) map[string]corev1.EnvVar {
	t.Helper()
	var ds appsv1.DaemonSet
	typed(t, byKind(t, objs, "DaemonSet"), &ds)
	env := map[string]corev1.EnvVar{}
	for _, e := range tracer(t, &ds).Env {
		env[e.Name] = e
	}
	return env
}

// TestHelmToggles: each optional object appears only when enabled, and is
// what deploy/ has for it.
func TestHelmToggles(t *testing.T) {
	def := objects(t, helmTemplate(t))
	for _, k := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap"} {
		if slices.Contains(kindsOf(def), k) {
			t.Errorf("%s rendered by default", k)
		}
	}
	if _, ok := tracerEnv(t, def)["OTEL_EXPORTER_OTLP_HEADERS"]; ok {
		t.Error("OTEL_EXPORTER_OTLP_HEADERS set by default")
	}

	t.Run("serviceMonitor", func(t *testing.T) {
		objs := objects(t, helmTemplate(t, "serviceMonitor.enabled=true"))
		sm := byKind(t, objs, "ServiceMonitor")
		var want object
		if err := sigsyaml.Unmarshal(yamlDocs(t, "prometheus-operator/servicemonitor.yaml")[0], &want); err != nil {
			t.Fatal(err)
		}
		// Documented differences: the job comes from the Service's name
		// label (so any release name gives job="podchron"), and the selector
		// also names the release.
		spec := sm["spec"].(map[string]any)
		if spec["jobLabel"] != "app.kubernetes.io/name" {
			t.Errorf("ServiceMonitor jobLabel = %v", spec["jobLabel"])
		}
		delete(spec, "jobLabel")
		sel := spec["selector"].(map[string]any)["matchLabels"].(map[string]any)
		if sel["app.kubernetes.io/instance"] != helmRelease {
			t.Errorf("ServiceMonitor selector %v does not name the release", sel)
		}
		delete(sel, "app.kubernetes.io/instance")
		sameObject(t, "ServiceMonitor", want, withoutPartOf(sm))
		// It selects the Service, whose name label is the job.
		svc := byKind(t, objs, "Service")
		labels := svc.meta()["labels"].(map[string]any)
		if labels["app.kubernetes.io/name"] != "podchron" || labels["app.kubernetes.io/instance"] != helmRelease {
			t.Errorf("Service labels %v", labels)
		}
	})

	t.Run("prometheusRule", func(t *testing.T) {
		pr := byKind(t, objects(t, helmTemplate(t, "prometheusRule.enabled=true")), "PrometheusRule")
		var rules struct {
			Groups any `json:"groups"`
		}
		b, err := os.ReadFile(ruleFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := sigsyaml.Unmarshal(b, &rules); err != nil {
			t.Fatal(err)
		}
		spec := pr["spec"].(map[string]any)
		if len(spec) != 1 || rules.Groups == nil || !reflect.DeepEqual(spec["groups"], rules.Groups) {
			t.Errorf("the PrometheusRule's spec is not the rule file's groups: %s", strings.Join(diffPaths("spec.groups", rules.Groups, spec["groups"]), "\n"))
		}
		// And the same object as prometheus-operator/prometheus-rules.yaml.
		var want object
		if err := sigsyaml.Unmarshal(yamlDocs(t, promRuleFile)[0], &want); err != nil {
			t.Fatal(err)
		}
		sameObject(t, "PrometheusRule", want, withoutPartOf(pr))
	})

	t.Run("dashboard", func(t *testing.T) {
		objs := objects(t, helmTemplate(t, "dashboard.enabled=true", "dashboard.namespace=monitoring"))
		cm := byKind(t, objs, "ConfigMap")
		var c corev1.ConfigMap
		typed(t, cm, &c)
		want, err := os.ReadFile(dashboardFile)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Data["podchron.json"]; got != strings.TrimRight(string(want), "\n") {
			t.Errorf("ConfigMap podchron.json (%d bytes) is not %s (%d bytes)", len(got), dashboardFile, len(want))
		}
		if c.Namespace != "monitoring" || c.Labels["grafana_dashboard"] != "1" {
			t.Errorf("dashboard ConfigMap in %q with labels %v", c.Namespace, c.Labels)
		}
	})

	t.Run("otlpHeaders", func(t *testing.T) {
		env := tracerEnv(t, objects(t, helmTemplate(t, "otlp.headers.secretName=otlp-auth", "otlp.headers.secretKey=hdr")))
		h, ok := env["OTEL_EXPORTER_OTLP_HEADERS"]
		if !ok || h.Value != "" || h.ValueFrom == nil || h.ValueFrom.SecretKeyRef == nil ||
			h.ValueFrom.SecretKeyRef.Name != "otlp-auth" || h.ValueFrom.SecretKeyRef.Key != "hdr" {
			t.Errorf("OTEL_EXPORTER_OTLP_HEADERS = %+v, want secretKeyRef otlp-auth/hdr", h)
		}
		// No endpoint: no OTLP variables at all (console output).
		env = tracerEnv(t, objects(t, helmTemplate(t, "otlp.endpoint=", "otlp.headers.secretName=otlp-auth")))
		for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS"} {
			if _, ok := env[k]; ok {
				t.Errorf("otlp.endpoint empty, but %s is set", k)
			}
		}
	})

	t.Run("extras", func(t *testing.T) {
		objs := objects(t, helmTemplate(t, "extraArgs={--startup-timeout=20s,--no-api}", "extraEnv[0].name=FOO",
			"extraEnv[0].value=bar", "hostNetwork=true", "logLevel=debug", "metricsPort=9500"))
		var ds appsv1.DaemonSet
		typed(t, byKind(t, objs, "DaemonSet"), &ds)
		c := tracer(t, &ds)
		if want := []string{"--metrics-addr=:9500", "--log-level=debug", "--startup-timeout=20s", "--no-api"}; !slices.Equal(c.Args, want) {
			t.Errorf("args %q, want %q", c.Args, want)
		}
		if e := c.Env[len(c.Env)-1]; e.Name != "FOO" || e.Value != "bar" {
			t.Errorf("last env %+v, want FOO=bar", e)
		}
		pod := ds.Spec.Template.Spec
		if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
			t.Errorf("hostNetwork %v dnsPolicy %s", pod.HostNetwork, pod.DNSPolicy)
		}
		if c.Ports[0].ContainerPort != 9500 || ds.Spec.Template.Annotations["prometheus.io/port"] != "9500" {
			t.Errorf("metrics port not 9500: %+v %v", c.Ports, ds.Spec.Template.Annotations)
		}
		var svc corev1.Service
		typed(t, byKind(t, objs, "Service"), &svc)
		if svc.Spec.Ports[0].Port != 9500 {
			t.Errorf("service port %d", svc.Spec.Ports[0].Port)
		}
	})

	t.Run("filtersAndConventions", func(t *testing.T) {
		objs := objects(t, helmTemplate(t, "namespaces.include={prod-.*,shop}", "namespaces.exclude={kube-.*}",
			"clusterName=east", "exportPodLabels={app,team}", "commandArgs=argv0"))
		var ds appsv1.DaemonSet
		typed(t, byKind(t, objs, "DaemonSet"), &ds)
		want := []string{"--namespace-include=prod-.*|shop", "--namespace-exclude=kube-.*", "--cluster-name=east",
			"--pod-label=app", "--pod-label=team", "--command-args=argv0"}
		if got := tracer(t, &ds).Args[2:]; !slices.Equal(got, want) {
			t.Errorf("args %q, want %q", got, want)
		}
	})

	t.Run("image", func(t *testing.T) {
		digest := "sha256:" + strings.Repeat("ab", 32)
		for sets, want := range map[string]string{
			"image.repository=registry.example/podchron,image.tag=v0.1.0": "registry.example/podchron:v0.1.0",
			"image.tag=v0.1.0,image.digest=" + digest:                     "ghcr.io/podchron/podchron@" + digest,
		} {
			var ds appsv1.DaemonSet
			typed(t, byKind(t, objects(t, helmTemplate(t, sets)), "DaemonSet"), &ds)
			if got := tracer(t, &ds).Image; got != want {
				t.Errorf("--set %s: image %s, want %s", sets, got, want)
			}
		}
	})

	t.Run("withoutRBACAndServiceAccount", func(t *testing.T) {
		objs := objects(t, helmTemplate(t, "rbac.create=false", "serviceAccount.create=false", "serviceAccount.name=mine",
			"resourceQuota.create=false", "service.create=false"))
		if got := kindsOf(objs); !slices.Equal(got, []string{"DaemonSet"}) {
			t.Errorf("renders %v, want only the DaemonSet", got)
		}
		var ds appsv1.DaemonSet
		typed(t, byKind(t, objs, "DaemonSet"), &ds)
		if ds.Spec.Template.Spec.ServiceAccountName != "mine" {
			t.Errorf("serviceAccountName %s", ds.Spec.Template.Spec.ServiceAccountName)
		}
	})

	t.Run("releaseNameAndNamespace", func(t *testing.T) {
		out, err := runHelm(t, "template", "tracing", chartDir, "--namespace", "observability")
		if err != nil {
			t.Fatal(err)
		}
		objs := objects(t, out)
		var crb rbacv1.ClusterRoleBinding
		typed(t, byKind(t, objs, "ClusterRoleBinding"), &crb)
		if crb.Name != "tracing-podchron" || crb.RoleRef.Name != "tracing-podchron" ||
			crb.Subjects[0].Name != "tracing-podchron" || crb.Subjects[0].Namespace != "observability" {
			t.Errorf("ClusterRoleBinding %+v", crb)
		}
		for _, o := range objs {
			if ns := o.namespace(); o.kind() != "ClusterRole" && o.kind() != "ClusterRoleBinding" && ns != "observability" {
				t.Errorf("%s not in the release namespace", o.key())
			}
		}
		var ds appsv1.DaemonSet
		typed(t, byKind(t, objs, "DaemonSet"), &ds)
		if !reflect.DeepEqual(ds.Spec.Selector.MatchLabels, loadDaemonSet(t).Spec.Selector.MatchLabels) {
			t.Errorf("selector %v depends on the release", ds.Spec.Selector.MatchLabels)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for set, msg := range map[string]string{
			"commandArgs=some":  "/commandArgs",
			"bogus=1":           "additional properties 'bogus' not allowed",
			"otlp.protocol=udp": "/otlp/protocol",
			"serviceMonitor.enabled=true,service.create=false": "needs service.create",
		} {
			out, err := runHelm(t, "template", helmRelease, chartDir, "--set", set)
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("--set %s: want an error with %q, got %v\n%s", set, msg, err, out)
			}
		}
	})
}

// TestHelmPackage: the chart packages (what `helm push oci://...` uploads)
// with its copied files and schema, and the package renders like the
// directory.
func TestHelmPackage(t *testing.T) {
	dir := t.TempDir()
	if _, err := runHelm(t, "package", chartDir, "--destination", dir); err != nil {
		t.Fatal(err)
	}
	pkgs, _ := filepath.Glob(filepath.Join(dir, "podchron-*.tgz"))
	if len(pkgs) != 1 {
		t.Fatalf("helm package wrote %v", pkgs)
	}
	out, err := runHelm(t, "template", helmRelease, pkgs[0], "--namespace", helmNamespace,
		"--set", "prometheusRule.enabled=true,dashboard.enabled=true,serviceMonitor.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	fromDir := helmTemplate(t, "prometheusRule.enabled=true", "dashboard.enabled=true", "serviceMonitor.enabled=true")
	if !bytes.Equal(out, fromDir) {
		t.Error("the packaged chart renders differently from helm/podchron")
	}
}

// TestHelmOCI publishes the chart as users would (helm package, helm push
// oci://...) to a real OCI registry (crane registry serve, which
// scripts/build-helm.sh builds beside Helm) and renders it back from there.
func TestHelmOCI(t *testing.T) {
	helm := helmBin(t)
	crane := filepath.Join(filepath.Dir(helm), "crane")
	if _, err := os.Stat(crane); err != nil {
		t.Skipf("no crane beside $PODCHRON_HELM (scripts/build-helm.sh builds it): %v", err)
	}
	// A free loopback port for the registry.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	reg := exec.CommandContext(ctx, crane, "registry", "serve", "--address", addr)
	var regLog bytes.Buffer
	reg.Stdout, reg.Stderr = &regLog, &regLog
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = reg.Wait()
		if t.Failed() {
			t.Logf("registry log:\n%s", regLog.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry on %s not up: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	dir := t.TempDir()
	if _, err := runHelm(t, "package", chartDir, "--destination", dir, "--version", "0.1.0-test.1", "--app-version", "v0.1.0"); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(dir, "podchron-0.1.0-test.1.tgz")
	if _, err := runHelm(t, "push", pkg, "oci://"+addr+"/charts", "--plain-http"); err != nil {
		t.Fatal(err)
	}
	sets := "prometheusRule.enabled=true,dashboard.enabled=true,serviceMonitor.enabled=true"
	fromOCI, err := runHelm(t, "template", helmRelease, "oci://"+addr+"/charts/podchron", "--version", "0.1.0-test.1",
		"--plain-http", "--namespace", helmNamespace, "--set", sets)
	if err != nil {
		t.Fatal(err)
	}
	fromDir := helmTemplate(t, sets, "image.tag=v0.1.0")
	// The package's version is in a label (its appVersion is the tag).
	fromDir = bytes.ReplaceAll(fromDir, []byte("helm.sh/chart: podchron-0.1.0\n"), []byte("helm.sh/chart: podchron-0.1.0-test.1\n"))
	if !bytes.Equal(fromOCI, fromDir) {
		t.Errorf("the chart pulled from oci://%s/charts renders differently from helm/podchron:\n%s", addr,
			strings.Join(diffLines(string(fromDir), string(fromOCI)), "\n"))
	}
}

// diffLines lists the lines that differ between a and b (by position;
// enough to see a small difference).
func diffLines(a, b string) []string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)) && len(out) < 20; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("%d: -%s\n%d: +%s", i+1, x, i+1, y))
		}
	}
	return out
}
