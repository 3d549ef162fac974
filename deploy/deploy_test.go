// Package deploy holds podchron's deployment files (Kubernetes manifests,
// alert rules, dashboard, image build). Its tests check them: every YAML
// decodes (strictly, into the Kubernetes API types where there are some),
// the DaemonSet keeps its security properties, RBAC is exactly what the
// tracer calls, the
// PrometheusRule is the plain rule file, promtool accepts and tests the
// rules, and the dashboard and the rules only query metrics podchron
// exports.
package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsyaml "sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite generated files (prometheus-operator/prometheus-rules.yaml)")

const (
	ruleFile        = "rules/podchron.rules.yml"
	ruleTestFile    = "rules/podchron.rules.test.yml"
	promRuleFile    = "prometheus-operator/prometheus-rules.yaml"
	dashboardFile   = "dashboard.json"
	runbookFile     = "RUNBOOK.md"
	runbookURLBase  = "https://github.com/podchron/podchron/blob/main/deploy/RUNBOOK.md#"
	metricsGolden   = "../internal/export/metrics/testdata/metrics.golden"
	daemonSetFile   = "daemonset.yaml"
	tracerContainer = "tracer"
)

// exportedMetrics are the metric families podchron exports (and their
// types), the only ones the alerts and the dashboard may query.
var exportedMetrics = map[string]string{
	"podchron_pod_startup_duration_seconds":             "histogram",
	"podchron_pod_termination_duration_seconds":         "histogram",
	"podchron_pod_not_ready_duration_seconds":           "histogram",
	"podchron_pod_terminations_total":                   "counter",
	"podchron_container_stop_duration_seconds":          "histogram",
	"podchron_grace_period_overruns_total":              "counter",
	"podchron_endpoint_withdrawn_after_signal_total":    "counter",
	"podchron_endpoint_withdrawn_after_not_ready_total": "counter",
	"podchron_container_exits_total":                    "counter",
	"podchron_oom_kills_total":                          "counter",
	"podchron_oom_kills_misreported_total":              "counter",
	"podchron_cni_duration_seconds":                     "histogram",
	"podchron_signals_total":                            "counter",
	"podchron_correlation_misses_total":                 "counter",
	"podchron_pods_terminating_stuck":                   "gauge",
	"podchron_pod_stuck_terminating_info":               "gauge",
	"podchron_pod_startup_phase_duration_seconds":       "histogram",
	"podchron_probe_events_total":                       "counter",
	"podchron_probe_events_lost_total":                  "counter",
	"podchron_probe_up":                                 "gauge",
	"podchron_decode_errors_total":                      "counter",
	"podchron_spans_exported_total":                     "counter",
	"podchron_spans_dropped_total":                      "counter",
	"podchron_span_delivery_lag_seconds":                "histogram",
	"podchron_build_info":                               "gauge",
	"podchron_source_up":                                "gauge",
	"podchron_api_event_watches":                        "gauge",
	"podchron_api_event_sweeps_total":                   "counter",
	"podchron_api_event_sweeps_deferred":                "gauge",
	"podchron_api_event_window_starts_total":            "counter",
	"podchron_api_event_window_resumes_expired_total":   "counter",
	"podchron_api_event_window_lists_failed_total":      "counter",
	"podchron_api_endpoint_changes_total":               "counter",
	"podchron_api_endpointslice_errors_total":           "counter",
	"podchron_pipeline_queue_delay_seconds":             "histogram",
}

// The capabilities the tracer may be given, and the host paths it may mount.
var (
	allowedCaps       = []string{"BPF", "PERFMON"}
	expectedHostPaths = map[string]string{ // host path -> mount path
		"/sys/kernel/btf":     "/sys/kernel/btf",
		"/sys/kernel/tracing": "/sys/kernel/tracing",
		"/sys/fs/cgroup":      "/sys/fs/cgroup",
		"/run/containerd":     "/run/containerd",
		"/var/lib/podchron":   "/var/lib/podchron", // the checkpoint, the one writable mount
	}
	// writableMounts: the mounts the tracer writes (its checkpoint).
	writableMounts = map[string]bool{"state": true}
)

// ---------------------------------------------------------------------------
// YAML helpers

// yamlDocs splits a (multi-document) YAML file into its documents, each
// re-encoded on its own.
func yamlDocs(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs [][]byte
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(n.Content) == 0 {
			continue
		}
		out, err := yaml.Marshal(&n)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, out)
	}
	return docs
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func kindOf(t *testing.T, doc []byte) typeMeta {
	t.Helper()
	var tm typeMeta
	if err := sigsyaml.Unmarshal(doc, &tm); err != nil {
		t.Fatal(err)
	}
	return tm
}

// strict decodes doc into v, refusing unknown fields.
func strict(t *testing.T, path string, doc []byte, v any) {
	t.Helper()
	if err := sigsyaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%s: %T: %v", path, v, err)
	}
}

// manifestFiles lists every YAML file under deploy/, except the Helm chart's
// (templates, not manifests: helm_test.go renders and checks them).
func manifestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == helmDir {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func loadDaemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	docs := yamlDocs(t, daemonSetFile)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", daemonSetFile, len(docs))
	}
	var ds appsv1.DaemonSet
	strict(t, daemonSetFile, docs[0], &ds)
	return &ds
}

func tracer(t *testing.T, ds *appsv1.DaemonSet) *corev1.Container {
	t.Helper()
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != tracerContainer {
		t.Fatalf("want exactly one container %q, got %d", tracerContainer, len(cs))
	}
	return &cs[0]
}

// ---------------------------------------------------------------------------
// Manifests

// TestManifestsDecode parses every YAML file and decodes each Kubernetes
// object strictly into its API type (unknown fields are errors).
func TestManifestsDecode(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range manifestFiles(t) {
		for _, doc := range yamlDocs(t, f) {
			var generic map[string]any
			if err := yaml.Unmarshal(doc, &generic); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			tm := kindOf(t, doc)
			if tm.Kind == "" {
				continue // rule files, promtool tests
			}
			seen[tm.Kind] = true
			var v any
			switch tm.APIVersion + "/" + tm.Kind {
			case "v1/Namespace":
				v = &corev1.Namespace{}
			case "v1/ServiceAccount":
				v = &corev1.ServiceAccount{}
			case "v1/ResourceQuota":
				v = &corev1.ResourceQuota{}
			case "v1/Service":
				v = &corev1.Service{}
			case "rbac.authorization.k8s.io/v1/ClusterRole":
				v = &rbacv1.ClusterRole{}
			case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
				v = &rbacv1.ClusterRoleBinding{}
			case "apps/v1/DaemonSet":
				v = &appsv1.DaemonSet{}
			case "networking.k8s.io/v1/NetworkPolicy":
				v = &networkingv1.NetworkPolicy{}
			case "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule":
				v = &map[string]any{} // CRDs: checked in their own tests
			case "kustomize.config.k8s.io/v1beta1/Kustomization", "kustomize.config.k8s.io/v1alpha1/Component":
				checkKustomization(t, f, doc)
				continue
			default:
				t.Errorf("%s: unexpected object %s %s", f, tm.APIVersion, tm.Kind)
				continue
			}
			strict(t, f, doc, v)
		}
	}
	for _, k := range []string{"Namespace", "ResourceQuota", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet", "Service", "NetworkPolicy", "ServiceMonitor", "PrometheusRule", "Kustomization", "Component"} {
		if !seen[k] {
			t.Errorf("no %s found under deploy/", k)
		}
	}
}

// checkKustomization checks that what a kustomization lists exists.
func checkKustomization(t *testing.T, path string, doc []byte) {
	t.Helper()
	var k struct {
		Resources  []string `json:"resources"`
		Components []string `json:"components"`
	}
	if err := sigsyaml.Unmarshal(doc, &k); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, r := range append(k.Resources, k.Components...) {
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), r)); err != nil {
			t.Errorf("%s: resource %s: %v", path, r, err)
		}
	}
}

// TestEveryManifestIsListed: a manifest no kustomization (or component)
// lists is never deployed.
func TestEveryManifestIsListed(t *testing.T) {
	listed := map[string]bool{}
	comps, err := filepath.Glob("components/*/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append([]string{"kustomization.yaml", "prometheus-operator/kustomization.yaml"}, comps...) {
		var kz struct {
			Resources []string `json:"resources"`
		}
		strict(t, k, yamlDocs(t, k)[0], &map[string]any{})
		if err := sigsyaml.Unmarshal(yamlDocs(t, k)[0], &kz); err != nil {
			t.Fatal(err)
		}
		for _, r := range kz.Resources {
			listed[filepath.Clean(filepath.Join(filepath.Dir(k), r))] = true
		}
	}
	for _, f := range manifestFiles(t) {
		if filepath.Base(f) == "kustomization.yaml" || strings.HasPrefix(f, "rules/") {
			continue
		}
		if !listed[f] {
			t.Errorf("%s is in no kustomization's resources", f)
		}
	}
}

func TestDaemonSetSecurity(t *testing.T) {
	ds := loadDaemonSet(t)
	pod := ds.Spec.Template.Spec
	c := tracer(t, ds)

	if !pod.HostPID {
		t.Error("hostPID must be true: kernel events carry host pids, and /proc must be the host's")
	}
	if pod.HostNetwork || pod.HostIPC {
		t.Error("hostNetwork and hostIPC must stay off")
	}
	if sp := pod.SecurityContext.SeccompProfile; sp == nil || sp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccompProfile = %+v, want RuntimeDefault (components/seccomp-unconfined relaxes it)", sp)
	}
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal("tracer has no securityContext")
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("tracer must not be privileged")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem must be true")
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Error("runAsUser must be 0 (capabilities without ambient caps; see the comment in daemonset.yaml)")
	}
	if sc.Capabilities == nil {
		t.Fatal("no capabilities")
	}
	if !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities.drop = %v, want [ALL]", sc.Capabilities.Drop)
	}
	var added []string
	for _, c := range sc.Capabilities.Add {
		added = append(added, string(c))
	}
	if !slices.Equal(added, allowedCaps) {
		t.Errorf("capabilities.add = %v, want %v", added, allowedCaps)
	}
	if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container seccompProfile %v overrides the pod's", sc.SeccompProfile.Type)
	}
}

// TestCapabilitiesCommented: every added capability (in the DaemonSet and
// in the components' patches) has a comment right above it saying why.
func TestCapabilitiesCommented(t *testing.T) {
	check := func(path string, firstLine int, text string, itemRe *regexp.Regexp) int {
		lines := strings.Split(text, "\n")
		n := 0
		for i, l := range lines {
			m := itemRe.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			n++
			if strings.Contains(l, " # ") {
				continue
			}
			j := i - 1
			for j >= 0 && strings.TrimSpace(lines[j]) == "" {
				j--
			}
			if j < 0 || !strings.HasPrefix(strings.TrimSpace(lines[j]), "#") {
				t.Errorf("%s:%d: capability %s has no comment above it explaining why it is needed", path, firstLine+i, m[1])
			}
		}
		return n
	}
	b, err := os.ReadFile(daemonSetFile)
	if err != nil {
		t.Fatal(err)
	}
	// Items of the capabilities.add list: from "add:" to the next key at
	// the same or a lower indentation.
	lines := strings.Split(string(b), "\n")
	start, indent := -1, 0
	for i, l := range lines {
		if strings.TrimSpace(l) == "add:" && i > 0 && strings.Contains(strings.Join(lines[max(0, i-3):i], "\n"), "capabilities:") {
			start, indent = i, len(l)-len(strings.TrimLeft(l, " "))
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s: capabilities.add not found", daemonSetFile)
	}
	end := start + 1
	for end < len(lines) {
		l := lines[end]
		trim := strings.TrimSpace(l)
		if trim != "" && !strings.HasPrefix(trim, "#") && !strings.HasPrefix(trim, "- ") && len(l)-len(strings.TrimLeft(l, " ")) <= indent {
			break
		}
		end++
	}
	block := strings.Join(lines[start:end], "\n")
	if n := check(daemonSetFile, start+1, block, regexp.MustCompile(`^\s*-\s+([A-Z_]+)\s*(#.*)?$`)); n != len(allowedCaps) {
		t.Errorf("%s: %d capabilities in add, want %d", daemonSetFile, n, len(allowedCaps))
	}
	// Components adding capabilities through a JSON patch.
	comps, _ := filepath.Glob("components/*/kustomization.yaml")
	for _, f := range comps {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "capabilities/add") {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.Contains(l, "capabilities/add") {
				// The comment sits above the patch operation ("- op: add").
				j := i - 1
				for j >= 0 && !strings.Contains(lines[j], "- op:") {
					j--
				}
				k := j - 1
				if j < 0 || k < 0 || !strings.HasPrefix(strings.TrimSpace(lines[k]), "#") {
					t.Errorf("%s:%d: capability patch without a comment above it", f, i+1)
				}
			}
		}
	}
}

func TestDaemonSetShape(t *testing.T) {
	ds := loadDaemonSet(t)
	pod := ds.Spec.Template.Spec
	c := tracer(t, ds)

	// NODE_NAME from the downward API; OTLP configured.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e, ok := env["NODE_NAME"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME must come from fieldRef spec.nodeName, got %+v", e)
	}
	// README.md's overlay example patches the endpoint as env/1.
	if len(c.Env) < 2 || c.Env[1].Name != "OTEL_EXPORTER_OTLP_ENDPOINT" {
		t.Error("env[1] must be OTEL_EXPORTER_OTLP_ENDPOINT (README.md patches it by index)")
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"} {
		if env[k].Value == "" {
			t.Errorf("env %s is not set", k)
		}
	}

	// Port and probes.
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9464 {
		t.Errorf("ports = %+v, want metrics:9464", c.Ports)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s probe = %+v, want GET %s on port metrics", name, p, path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("startup", c.StartupProbe, "/healthz")

	// Resources (see the comment in daemonset.yaml for the measurements).
	want := map[string]string{"requests.cpu": "50m", "requests.memory": "64Mi", "limits.cpu": "500m", "limits.memory": "128Mi"}
	got := map[string]resource.Quantity{
		"requests.cpu": c.Resources.Requests[corev1.ResourceCPU], "requests.memory": c.Resources.Requests[corev1.ResourceMemory],
		"limits.cpu": c.Resources.Limits[corev1.ResourceCPU], "limits.memory": c.Resources.Limits[corev1.ResourceMemory],
	}
	for k, w := range want {
		if q := got[k]; q.Cmp(resource.MustParse(w)) != 0 {
			t.Errorf("resources %s = %s, want %s", k, q.String(), w)
		}
	}

	// Volumes: exactly the expected host paths, all mounted read-only but
	// the checkpoint's directory; no /proc (hostPID gives the host's), no
	// /sys/fs/bpf (nothing is pinned).
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
		if !m.ReadOnly && !writableMounts[m.Name] {
			t.Errorf("volume mount %s (%s) must be readOnly", m.Name, m.MountPath)
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			t.Errorf("volume mount %s: propagation %s", m.Name, *m.MountPropagation)
		}
	}
	gotPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath == nil {
			t.Errorf("volume %s is not a hostPath", v.Name)
			continue
		}
		m, ok := mounts[v.Name]
		if !ok {
			t.Errorf("volume %s is not mounted", v.Name)
			continue
		}
		gotPaths[v.HostPath.Path] = m.MountPath
	}
	if !maps.Equal(gotPaths, expectedHostPaths) {
		t.Errorf("host paths = %v, want %v", gotPaths, expectedHostPaths)
	}
	// The components patch the runtime volume by index.
	if len(pod.Volumes) < 4 || pod.Volumes[3].Name != "runtime" || len(c.VolumeMounts) < 4 || c.VolumeMounts[3].Name != "runtime" {
		t.Error(`volumes[3] and volumeMounts[3] must be "runtime": components/cri-o and components/k3s patch them by index`)
	}

	// Scheduling and rollout.
	if !slices.ContainsFunc(pod.Tolerations, func(tl corev1.Toleration) bool {
		return tl.Operator == corev1.TolerationOpExists && tl.Key == "" && tl.Effect == ""
	}) {
		t.Error("want a toleration {operator: Exists} so the tracer runs on every node")
	}
	if pod.PriorityClassName != "system-node-critical" {
		t.Errorf("priorityClassName = %q", pod.PriorityClassName)
	}
	// Clusters that limit critical priority classes need a matching quota
	// in the namespace (resourcequota.yaml).
	var quota corev1.ResourceQuota
	strict(t, "resourcequota.yaml", yamlDocs(t, "resourcequota.yaml")[0], &quota)
	if quota.Namespace != ds.Namespace || quota.Spec.ScopeSelector == nil || len(quota.Spec.ScopeSelector.MatchExpressions) != 1 ||
		quota.Spec.ScopeSelector.MatchExpressions[0].ScopeName != corev1.ResourceQuotaScopePriorityClass ||
		!slices.Contains(quota.Spec.ScopeSelector.MatchExpressions[0].Values, pod.PriorityClassName) {
		t.Errorf("resourcequota.yaml does not admit priority class %s in %s: %+v", pod.PriorityClassName, ds.Namespace, quota.Spec)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds != 30 {
		t.Error("terminationGracePeriodSeconds must be 30")
	}
	if pod.DNSPolicy != "" && pod.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("dnsPolicy = %s: only hostNetwork pods need ClusterFirstWithHostNet", pod.DNSPolicy)
	}
	us := ds.Spec.UpdateStrategy
	if us.Type != appsv1.RollingUpdateDaemonSetStrategyType || us.RollingUpdate == nil ||
		us.RollingUpdate.MaxUnavailable == nil || us.RollingUpdate.MaxUnavailable.String() != "10%" {
		t.Errorf("updateStrategy = %+v, want RollingUpdate maxUnavailable 10%%", us)
	}
	if pod.ServiceAccountName != "podchron" {
		t.Errorf("serviceAccountName = %q", pod.ServiceAccountName)
	}
	// Selector matches the template.
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod template", k, v)
		}
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("imagePullPolicy = %s, want IfNotPresent (images imported with ctr)", c.ImagePullPolicy)
	}
}

// rbacNeeded is every permission the tracer uses: internal/watcher's two
// informers (pods of its node; events of each of those pods) only list and
// watch. Nothing is fetched by name, nothing written, no node read.
var rbacNeeded = map[string][]string{ // "group/resource" -> verbs
	"/pods":                           {"list", "watch"},
	"/events":                         {"list", "watch"},
	"discovery.k8s.io/endpointslices": {"list", "watch"},
}

// checkClusterRole fails unless role grants exactly rbacNeeded: no other
// verb, resource, group, resource name or non-resource URL.
func checkClusterRole(t *testing.T, what string, role *rbacv1.ClusterRole) {
	t.Helper()
	if role.AggregationRule != nil {
		t.Errorf("%s: no aggregation rule", what)
	}
	granted := map[string][]string{}
	for _, r := range role.Rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("%s: rule %+v: no non-resource URLs or resource names expected", what, r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				k := g + "/" + res
				for _, v := range r.Verbs {
					if !slices.Contains(granted[k], v) {
						granted[k] = append(granted[k], v)
					}
				}
			}
		}
	}
	for k, verbs := range granted {
		slices.Sort(verbs)
		if !slices.Equal(verbs, rbacNeeded[k]) {
			t.Errorf("%s: %s: verbs %v, the tracer needs %v", what, k, verbs, rbacNeeded[k])
		}
	}
	for k, verbs := range rbacNeeded {
		if _, ok := granted[k]; !ok {
			t.Errorf("%s: no rule for %s (%v)", what, k, verbs)
		}
	}
}

// TestRBACMinimal: the ClusterRole grants exactly what the tracer calls.
func TestRBACMinimal(t *testing.T) {
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for _, doc := range yamlDocs(t, "rbac.yaml") {
		switch kindOf(t, doc).Kind {
		case "ClusterRole":
			role = &rbacv1.ClusterRole{}
			strict(t, "rbac.yaml", doc, role)
		case "ClusterRoleBinding":
			binding = &rbacv1.ClusterRoleBinding{}
			strict(t, "rbac.yaml", doc, binding)
		default:
			t.Errorf("rbac.yaml: unexpected %s", kindOf(t, doc).Kind)
		}
	}
	if role == nil || binding == nil {
		t.Fatal("rbac.yaml needs a ClusterRole and a ClusterRoleBinding")
	}
	checkClusterRole(t, "rbac.yaml", role)
	if binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != role.Name {
		t.Errorf("binding roleRef = %+v", binding.RoleRef)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" ||
		binding.Subjects[0].Name != "podchron" || binding.Subjects[0].Namespace != "podchron" {
		t.Errorf("binding subjects = %+v", binding.Subjects)
	}
}

func TestServiceAndServiceMonitor(t *testing.T) {
	var svc corev1.Service
	strict(t, "service.yaml", yamlDocs(t, "service.yaml")[0], &svc)
	ds := loadDaemonSet(t)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("service clusterIP = %q, want None (headless)", svc.Spec.ClusterIP)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != 9464 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("service ports = %+v", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("service selector %s=%s does not select the tracer pods", k, v)
		}
	}

	var sm struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Endpoints []struct {
				Port        string `json:"port"`
				HonorLabels bool   `json:"honorLabels"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(yamlDocs(t, "prometheus-operator/servicemonitor.yaml")[0], &sm); err != nil {
		t.Fatal(err)
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s does not select the Service", k, v)
		}
	}
	if !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, svc.Namespace) {
		t.Errorf("ServiceMonitor namespaceSelector %v misses %s", sm.Spec.NamespaceSelector.MatchNames, svc.Namespace)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || !sm.Spec.Endpoints[0].HonorLabels {
		t.Errorf("ServiceMonitor endpoints = %+v, want port metrics with honorLabels (podchron's namespace label)", sm.Spec.Endpoints)
	}

	var ns corev1.Namespace
	strict(t, "namespace.yaml", yamlDocs(t, "namespace.yaml")[0], &ns)
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Error("namespace: Pod Security must allow hostPID, hostPath and CAP_BPF (enforce: privileged)")
	}
}

// kubectlKustomize renders dir with kubectl's built-in kustomize; it skips
// when kubectl is missing.
func kubectlKustomize(t *testing.T, dir string) []byte {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed: cannot render the kustomizations")
	}
	out, err := exec.Command(kubectl, "kustomize", "--load-restrictor", "LoadRestrictionsNone", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	return out
}

func renderedDaemonSet(t *testing.T, out []byte) (*appsv1.DaemonSet, []string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "out.yaml")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	var ds *appsv1.DaemonSet
	var kinds []string
	for _, doc := range yamlDocs(t, p) {
		k := kindOf(t, doc).Kind
		kinds = append(kinds, k)
		if k == "DaemonSet" {
			ds = &appsv1.DaemonSet{}
			strict(t, "kustomize output", doc, ds)
		}
	}
	if ds == nil {
		t.Fatal("no DaemonSet in the kustomize output")
	}
	return ds, kinds
}

// TestKustomize renders the base, the Prometheus Operator overlay and each
// component (through a throwaway overlay) and checks what each changes.
func TestKustomize(t *testing.T) {
	base, kinds := renderedDaemonSet(t, kubectlKustomize(t, "."))
	slices.Sort(kinds)
	if want := []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Namespace", "ResourceQuota", "Service", "ServiceAccount"}; !slices.Equal(kinds, want) {
		t.Errorf("base renders %v, want %v (CRD objects belong to prometheus-operator/)", kinds, want)
	}
	if img := tracer(t, base).Image; img != "ghcr.io/podchron/podchron:dev" {
		t.Errorf("rendered image = %s", img)
	}

	// prometheus-operator/: only the CRD objects, in the same namespace.
	dir := t.TempDir()
	p := filepath.Join(dir, "po.yaml")
	if err := os.WriteFile(p, kubectlKustomize(t, "prometheus-operator"), 0o644); err != nil {
		t.Fatal(err)
	}
	var poKinds []string
	for _, doc := range yamlDocs(t, p) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := sigsyaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		poKinds = append(poKinds, obj.Kind)
		if obj.Metadata.Namespace != base.Namespace {
			t.Errorf("prometheus-operator: %s in namespace %q, want %q", obj.Kind, obj.Metadata.Namespace, base.Namespace)
		}
	}
	slices.Sort(poKinds)
	if !slices.Equal(poKinds, []string{"PrometheusRule", "ServiceMonitor"}) {
		t.Errorf("prometheus-operator renders %v", poKinds)
	}

	abs, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	component := func(name string) *appsv1.DaemonSet {
		dir := t.TempDir()
		rel, err := filepath.Rel(dir, abs)
		if err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("resources:\n  - %s\ncomponents:\n  - %s\n", rel, filepath.Join(rel, "components", name))
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
		ds, _ := renderedDaemonSet(t, kubectlKustomize(t, dir))
		return ds
	}
	runtimeVol := func(ds *appsv1.DaemonSet) (string, string) {
		for i, v := range ds.Spec.Template.Spec.Volumes {
			if v.Name == "runtime" {
				return v.HostPath.Path, tracer(t, ds).VolumeMounts[i].MountPath
			}
		}
		return "", ""
	}
	for name, wantPath := range map[string]string{"cri-o": "/run/crio", "k3s": "/run/k3s/containerd"} {
		ds := component(name)
		host, mnt := runtimeVol(ds)
		if host != wantPath || mnt != wantPath {
			t.Errorf("%s: runtime volume %s mounted at %s, want %s", name, host, mnt, wantPath)
		}
		if !slices.ContainsFunc(tracer(t, ds).Args, func(a string) bool {
			return strings.HasPrefix(a, "--runtime-endpoint=unix://"+wantPath+"/")
		}) {
			t.Errorf("%s: no --runtime-endpoint under %s in %v", name, wantPath, tracer(t, ds).Args)
		}
	}
	if ds := component("seccomp-unconfined"); ds.Spec.Template.Spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined {
		t.Error("seccomp-unconfined: seccomp profile not Unconfined")
	}
	ds := component("kernel-pre-5.11")
	var caps []string
	for _, c := range tracer(t, ds).SecurityContext.Capabilities.Add {
		caps = append(caps, string(c))
	}
	if !slices.Equal(caps, append(slices.Clone(allowedCaps), "SYS_RESOURCE")) {
		t.Errorf("kernel-pre-5.11: capabilities %v", caps)
	}
}

// ---------------------------------------------------------------------------
// Image build

func TestDockerfile(t *testing.T) {
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod: no go directive")
	}
	goVersion := string(m[1])
	for _, want := range []string{
		"FROM --platform=$BUILDPLATFORM golang:" + goVersion + "-bookworm@sha256:",
		`CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH`,
		`go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/tracer ./cmd/tracer`,
		"go run ./deploy/imagebuild -rootfs /rootfs -binary /out/tracer",
		"FROM scratch\n",
		"COPY --from=build /rootfs/ /",
		`ENTRYPOINT ["/tracer"]`,
		"USER 0:0",
	} {
		if !bytes.Contains(df, []byte(want)) {
			t.Errorf("Dockerfile: missing %q", want)
		}
	}
	// Every image it names is pinned by digest: the syntax frontend and
	// each FROM but scratch (the final stage has no base image).
	pinned := regexp.MustCompile(`^[^\s@$]+:[^\s@]+@sha256:[0-9a-f]{64}$`)
	lines := strings.Split(string(df), "\n")
	if syntax, ok := strings.CutPrefix(lines[0], "# syntax="); !ok || !pinned.MatchString(syntax) {
		t.Errorf("Dockerfile: first line %q, want # syntax=<frontend>:<tag>@sha256:<digest>", lines[0])
	}
	froms := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "FROM" {
			continue
		}
		froms++
		img := f[1]
		if strings.HasPrefix(img, "--platform=") && len(f) > 2 {
			img = f[2]
		}
		if img != "scratch" && !pinned.MatchString(img) {
			t.Errorf("Dockerfile: %s is not pinned by digest (tag@sha256:...)", img)
		}
	}
	if froms != 2 {
		t.Errorf("Dockerfile: %d FROM lines, want 2 (build, scratch)", froms)
	}
	// -X main.version must name a variable that exists.
	if src, err := os.ReadFile("../cmd/tracer/trace.go"); err == nil && !regexp.MustCompile(`(?m)^var version = `).Match(src) {
		t.Error("cmd/tracer no longer has `var version`: fix -X main.version in the Dockerfile and build-image.sh")
	}
	di, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"!go.mod", "!go.sum", "!cmd/", "!internal/"} {
		if !bytes.Contains(di, []byte(want)) {
			t.Errorf(".dockerignore must let %s through", strings.TrimPrefix(want, "!"))
		}
	}
	// COPY only what .dockerignore lets through.
	for _, l := range strings.Split(string(df), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "COPY" && !strings.HasPrefix(f[1], "--from") {
			for _, src := range f[1 : len(f)-1] {
				if !bytes.Contains(di, []byte("!"+src)) {
					t.Errorf("Dockerfile copies %s, which .dockerignore excludes", src)
				}
			}
		}
	}
	sh, err := os.ReadFile("build-image.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sh, []byte(`-ldflags "-s -w -X main.version=${VERSION}"`)) {
		t.Error("build-image.sh does not build like the Dockerfile")
	}
	// One image name everywhere.
	ds := loadDaemonSet(t)
	img := tracer(t, ds).Image
	if !bytes.Contains(sh, []byte(`IMAGE="${IMAGE:-`+img+`}"`)) {
		t.Errorf("build-image.sh's default IMAGE is not the DaemonSet's %s", img)
	}
	ib, err := os.ReadFile("imagebuild/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ib, []byte(`DefaultImage = "`+img+`"`)) {
		t.Errorf("imagebuild's DefaultImage is not the DaemonSet's %s", img)
	}
}

// ---------------------------------------------------------------------------
// Rules

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus): cannot check the rules")
	}
	return p
}

func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	out := runPromtool(t, ".", "check", "rules", ruleFile)
	t.Logf("%s", out)
	// The PrometheusRule's groups, extracted, are valid too.
	var pr struct {
		Spec map[string]any `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(yamlDocs(t, promRuleFile)[0], &pr); err != nil {
		t.Fatal(err)
	}
	b, err := sigsyaml.Marshal(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "from-prometheusrule.yml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, ".", "check", "rules", p)
}

func TestPromtoolTestRules(t *testing.T) {
	out := runPromtool(t, "rules", "test", "rules", filepath.Base(ruleTestFile))
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules:\n%s", out)
	}
}

// renderPrometheusRule wraps the rule file's groups in a PrometheusRule.
func renderPrometheusRule(rules []byte) ([]byte, error) {
	i := bytes.Index(rules, []byte("\ngroups:\n"))
	if i < 0 {
		return nil, errors.New(ruleFile + ": no top-level groups:")
	}
	var b bytes.Buffer
	b.WriteString(`# GENERATED from ../rules/podchron.rules.yml (its groups, verbatim): do not
# edit; edit the rule file and regenerate with
#   go test ./deploy -run TestPrometheusRuleMatchesRuleFile -update
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: podchron
  namespace: podchron
  labels:
    app.kubernetes.io/name: podchron
    # Your Prometheus may select rules by label (Prometheus.spec.ruleSelector),
    # e.g. kube-prometheus-stack wants release: <its release name>.
spec:
`)
	sc := bufio.NewScanner(bytes.NewReader(rules[i+1:]))
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			b.WriteString("  " + l)
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), sc.Err()
}

func TestPrometheusRuleMatchesRuleFile(t *testing.T) {
	rules, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderPrometheusRule(rules)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(promRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(promRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: regenerate with go test ./deploy -run TestPrometheusRuleMatchesRuleFile -update", promRuleFile)
	}
	// And the same groups, parsed.
	var plain, pr struct {
		Groups any `json:"groups"`
		Spec   struct {
			Groups any `json:"groups"`
		} `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(rules, &plain); err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.Unmarshal(got, &pr); err != nil {
		t.Fatal(err)
	}
	if plain.Groups == nil || !reflect.DeepEqual(plain.Groups, pr.Spec.Groups) {
		t.Error("the PrometheusRule's spec.groups differ from the rule file's groups")
	}
}

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// TestAlertConventions: severity, summary, description, a runbook_url that
// points at an existing RUNBOOK.md section, known metrics only, and a
// promtool test that makes each alert fire and one that keeps it quiet.
func TestAlertConventions(t *testing.T) {
	b, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	var rg ruleGroups
	if err := sigsyaml.UnmarshalStrict(b, &rg); err != nil {
		t.Fatal(err)
	}
	runbook, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, l := range strings.Split(string(runbook), "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			headings[githubAnchor(h)] = true
		}
	}

	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	tb, err := os.ReadFile(ruleTestFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.Unmarshal(tb, &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}

	alerts := map[string]bool{}
	for _, g := range rg.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			if s := r.Labels["severity"]; s != "info" && s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want info, warning or critical", r.Alert, s)
			}
			if i := r.Labels["impact"]; i != "workload" && i != "observability" {
				t.Errorf("%s: impact %q, want workload or observability", r.Alert, i)
			}
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[k]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, k)
				}
			}
			anchor := strings.ToLower(r.Alert)
			if u := r.Annotations["runbook_url"]; u != runbookURLBase+anchor {
				t.Errorf("%s: runbook_url %s, want %s", r.Alert, u, runbookURLBase+anchor)
			}
			if !headings[anchor] {
				t.Errorf("%s: %s has no section \"## %s\"", r.Alert, runbookFile, r.Alert)
			}
			names, err := metricNames(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
			}
			for _, n := range names {
				if !knownMetric(n) && n != "up" {
					t.Errorf("%s: expr uses %s, which podchron does not export", r.Alert, n)
				}
			}
			if !fires[r.Alert] {
				t.Errorf("%s: no promtool test makes it fire", r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("%s: no promtool test expects it quiet", r.Alert)
			}
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("%s tests unknown alert %s", ruleTestFile, name)
		}
	}
	// The alerts the deployment promises.
	for _, a := range []string{"PodchronSlowPodTerminations", "PodchronGracePeriodOverruns", "PodchronOOMKills",
		"PodchronCNISlow", "PodchronCNIErrors", "PodchronPodsStuckTerminating", "PodchronEventsLost",
		"PodchronDown", "PodchronAbsent", "PodchronProbesDown", "PodchronSourceDegraded", "PodchronSpansDropped"} {
		if !alerts[a] {
			t.Errorf("alert %s is missing", a)
		}
	}
}

// githubAnchor is the anchor GitHub gives a Markdown heading.
func githubAnchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Metric names in PromQL

var (
	reStrings   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	reMatchers  = regexp.MustCompile(`\{[^{}]*\}`)
	reRanges    = regexp.MustCompile(`\[[^\[\]]*\]`)
	reGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	reOffset    = regexp.MustCompile(`\boffset\s+-?[0-9a-zA-Z]+`)
	reIdent     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promqlWords = []string{"and", "or", "unless", "bool", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "inf", "nan", "Inf", "NaN", "atan2"}
)

// metricNames returns the metric names an expression selects. It is not a
// PromQL parser (promtool checks syntax): it drops strings, label matchers,
// ranges, grouping label lists and offsets, then takes every identifier
// that is not a function, an aggregation or a keyword.
func metricNames(expr string) ([]string, error) {
	s := reStrings.ReplaceAllString(expr, `""`)
	s = reMatchers.ReplaceAllString(s, " ")
	s = reRanges.ReplaceAllString(s, " ")
	s = reGrouping.ReplaceAllString(s, " ")
	s = reOffset.ReplaceAllString(s, " ")
	if strings.ContainsAny(s, "{}[]") {
		return nil, fmt.Errorf("cannot scan %q", expr)
	}
	var names []string
	for _, loc := range reIdent.FindAllStringIndex(s, -1) {
		if loc[0] > 0 {
			if c := s[loc[0]-1]; c == '.' || c >= '0' && c <= '9' || c == '$' {
				continue // a number (1e3) or a variable
			}
		}
		id := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(promqlWords, id) {
			continue
		}
		if !slices.Contains(names, id) {
			names = append(names, id)
		}
	}
	return names, nil
}

// knownMetric reports whether name is an exported metric, or a histogram's
// _bucket, _count or _sum series.
func knownMetric(name string) bool {
	if _, ok := exportedMetrics[name]; ok {
		return true
	}
	for _, suf := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suf); ok && exportedMetrics[base] == "histogram" {
			return true
		}
	}
	return false
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`histogram_quantile(0.95, sum by (namespace, le) (rate(a_bucket{x="y"}[5m]))) > 60`:          {"a_bucket"},
		`sum by (namespace) (x unless x offset 10m) and on (instance) (up{job="p"} offset 10m == 1)`: {"x", "up"},
		`count(b == 0) or vector(0)`:                                    {"b"},
		`rate(c{namespace=~"$namespace"}[$__rate_interval]) * 60 + 1e3`: {"c"},
		`absent(up{job="podchron"})`:                                    {"up"},
	} {
		got, err := metricNames(expr)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %v, %v; want %v", expr, got, err, want)
		}
	}
}

// TestExportedMetricsMatchTracer: the list above is what the tracer really
// exports (its metrics golden file), with the same types.
func TestExportedMetricsMatchTracer(t *testing.T) {
	b, err := os.ReadFile(metricsGolden)
	if err != nil {
		t.Skipf("no %s: %v", metricsGolden, err)
	}
	types := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	for name, typ := range exportedMetrics {
		if got, ok := types[name]; !ok {
			t.Errorf("%s is not exported any more (%s)", name, metricsGolden)
		} else if got != typ {
			t.Errorf("%s is a %s, not a %s", name, got, typ)
		}
	}
}

// ---------------------------------------------------------------------------
// Dashboard

type grafanaPanel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource map[string]any `json:"datasource"`
	GridPos    map[string]int `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

func loadDashboard(t *testing.T) (map[string]any, []grafanaPanel) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var d struct {
		Panels []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var all []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return raw, all
}

var dashboardVars = map[string]string{
	"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h",
	"$namespace": ".*", "$instance": ".*", "${namespace}": ".*", "${instance}": ".*", "$cluster": ".*",
}

func TestDashboard(t *testing.T) {
	raw, panels := loadDashboard(t)
	if v, _ := raw["schemaVersion"].(float64); v < 36 {
		t.Errorf("schemaVersion %v, want >= 36", raw["schemaVersion"])
	}
	if raw["uid"] == "" || raw["title"] == "" {
		t.Error("dashboard needs a uid and a title")
	}
	vars := map[string]map[string]any{}
	tl, _ := raw["templating"].(map[string]any)
	list, _ := tl["list"].([]any)
	for _, v := range list {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		vars[name] = m
	}
	if ds := vars["datasource"]; ds == nil || ds["type"] != "datasource" || ds["query"] != "prometheus" {
		t.Errorf("want a datasource variable of type datasource for prometheus, got %v", ds)
	}
	if ns := vars["namespace"]; ns == nil || ns["type"] != "query" {
		t.Errorf("want a namespace query variable, got %v", ns)
	}

	ids := map[int]bool{}
	var exprs []string
	covered := map[string]bool{}
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil {
			t.Errorf("panel %q has no gridPos", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if uid, _ := p.Datasource["uid"].(string); uid != "${datasource}" {
			t.Errorf("panel %q: datasource uid %q, want ${datasource}", p.Title, uid)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if uid, _ := tg.Datasource["uid"].(string); uid != "${datasource}" {
				t.Errorf("panel %q target %s: datasource uid %q", p.Title, tg.RefID, uid)
			}
			names, err := metricNames(tg.Expr)
			if err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
			}
			for _, n := range names {
				if !knownMetric(n) {
					t.Errorf("panel %q: %s is not a metric podchron exports (expr %s)", p.Title, n, tg.Expr)
				}
				covered[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")] = true
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	// Every exported metric is on the dashboard somewhere.
	for name := range exportedMetrics {
		if !covered[name] {
			t.Errorf("no dashboard panel shows %s", name)
		}
	}

	// Every expression is valid PromQL: promtool checks them as recording
	// rules once the Grafana variables are substituted.
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed: dashboard expressions not syntax-checked")
	}
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for i, e := range exprs {
		for k, v := range dashboardVars {
			e = strings.ReplaceAll(e, k, v)
		}
		if strings.Contains(e, "$") {
			t.Errorf("unknown Grafana variable in %s", e)
			continue
		}
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:expr_%d", i), Expr: e})
	}
	b, err := sigsyaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, ".", "check", "rules", p)
}
