package deploy

// Checks of the deployment's hardening (issue 12, "The image"): GOMEMLIMIT
// below the memory limit, RBAC trimmed to the calls the tracer makes, and
// the optional NetworkPolicy for the metrics port; each in the kustomize
// files and in the Helm chart.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// goMemLimitBytes parses GOMEMLIMIT as the Go runtime does: a number of
// bytes with an optional B, KiB, MiB, GiB or TiB suffix.
func goMemLimitBytes(s string) (int64, bool) {
	m := regexp.MustCompile(`^([0-9]+)(B|KiB|MiB|GiB|TiB)?$`).FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[m[2]]
	return n << shift, true
}

// checkGoMemLimit: the tracer's GOMEMLIMIT is a literal (a resourceFieldRef
// cannot scale) between 88% and 90% of its memory limit: room below the
// limit for what the cgroup is charged outside the Go heap (BPF maps, the
// ring buffer), and not so low that the GC runs for nothing.
func checkGoMemLimit(t *testing.T, what string, ds *appsv1.DaemonSet) {
	t.Helper()
	c := tracer(t, ds)
	limit := c.Resources.Limits.Memory().Value()
	var env *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "GOMEMLIMIT" {
			env = &c.Env[i]
		}
	}
	if env == nil {
		t.Fatalf("%s: no GOMEMLIMIT", what)
	}
	if env.ValueFrom != nil {
		t.Fatalf("%s: GOMEMLIMIT from %+v: a resourceFieldRef gives 100%% of the limit", what, env.ValueFrom)
	}
	v, ok := goMemLimitBytes(env.Value)
	if !ok {
		t.Fatalf("%s: GOMEMLIMIT %q is not in the Go runtime's syntax", what, env.Value)
	}
	ratio := float64(v) / float64(limit)
	if ratio < 0.88 || ratio > 0.90 {
		t.Errorf("%s: GOMEMLIMIT %s is %.1f%% of limits.memory %s, want about 90%%", what, env.Value, 100*ratio,
			c.Resources.Limits.Memory())
	}
	t.Logf("%s: GOMEMLIMIT %s = %.1f%% of %s", what, env.Value, 100*ratio, c.Resources.Limits.Memory())
}

func TestGoMemLimit(t *testing.T) {
	checkGoMemLimit(t, daemonSetFile, loadDaemonSet(t))
	for _, want := range []string{"0", "115MiB", "1GiB", "123456789", "7B"} {
		if _, ok := goMemLimitBytes(want); !ok {
			t.Errorf("goMemLimitBytes(%q) refused", want)
		}
	}
	if n, _ := goMemLimitBytes("115MiB"); n != 115<<20 {
		t.Errorf("115MiB = %d", n)
	}
	for _, bad := range []string{"115Mi", "115M", "1.5GiB", ""} {
		if _, ok := goMemLimitBytes(bad); ok {
			t.Errorf("goMemLimitBytes(%q) accepted", bad)
		}
	}
}

// TestHelmGoMemLimit: the chart computes GOMEMLIMIT from
// resources.limits.memory (the default rendering equals deploy/'s, which
// TestHelmMatchesKustomize checks field for field), takes goMemLimit as
// is, and sets none without a memory limit.
func TestHelmGoMemLimit(t *testing.T) {
	dsOf := func(sets ...string) *appsv1.DaemonSet {
		var ds appsv1.DaemonSet
		typed(t, byKind(t, objects(t, helmTemplate(t, sets...)), "DaemonSet"), &ds)
		return &ds
	}
	checkGoMemLimit(t, "helm default", dsOf())
	for _, mem := range []string{"64Mi", "200Mi", "512Mi", "1Gi", "1.5Gi", "300M", "2G", "134217728"} {
		checkGoMemLimit(t, "helm limits.memory="+mem, dsOf("resources.limits.memory="+mem))
	}
	if env := tracerEnv(t, objects(t, helmTemplate(t, "goMemLimit=200MiB"))); env["GOMEMLIMIT"].Value != "200MiB" {
		t.Errorf("goMemLimit=200MiB: GOMEMLIMIT %+v", env["GOMEMLIMIT"])
	}
	if env := tracerEnv(t, objects(t, helmTemplate(t, "resources.limits.memory=null"))); env["GOMEMLIMIT"] != (corev1.EnvVar{}) {
		t.Errorf("no memory limit: GOMEMLIMIT %+v", env["GOMEMLIMIT"])
	}
	for set, msg := range map[string]string{
		"resources.limits.memory=12x": "not a quantity",
		"goMemLimit=115Mi":            "/goMemLimit",
	} {
		out, err := runHelm(t, "template", helmRelease, chartDir, "--set", set)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("--set %s: want an error with %q, got %v\n%s", set, msg, err, out)
		}
	}
}

// TestRBACMatchesWatcher ties rbacNeeded to the code: every Kubernetes API
// call outside the tests is a List or Watch of pods or events through the
// core/v1 client (internal/watcher's informers), or of EndpointSlices
// through the discovery/v1 client. A new call fails here
// until rbac.yaml, the chart and rbacNeeded grant it.
func TestRBACMatchesWatcher(t *testing.T) {
	call := regexp.MustCompile(`\.(Pods|Events|EndpointSlices|Nodes|Namespaces|Services|Endpoints|ConfigMaps|Secrets|ServiceAccounts|PersistentVolumes|PersistentVolumeClaims|ReplicationControllers|LimitRanges|ResourceQuotas|ComponentStatuses)\([^()]*\)\.(\w+)\(`)
	group := regexp.MustCompile(`\.(\w+V[0-9]+\w*|Discovery|RESTClient)\(\)`)
	used := map[string][]string{}
	var files int
	for _, root := range []string{"../internal", "../cmd"} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && p == filepath.Join("..", "cmd", "kubectl-podchron") {
				// The kubectl plugin runs with the user's own credentials,
				// not the DaemonSet's ServiceAccount.
				return filepath.SkipDir
			}
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			src := string(b)
			if !strings.Contains(src, "k8s.io/client-go") && !strings.Contains(src, "CoreV1()") {
				return nil
			}
			files++
			for _, m := range group.FindAllStringSubmatch(src, -1) {
				if m[1] != "CoreV1" && m[1] != "DiscoveryV1" {
					t.Errorf("%s: %s(): an API group (or raw client) the RBAC does not grant", p, m[1])
				}
			}
			for _, m := range call.FindAllStringSubmatch(src, -1) {
				res, verb := "/"+strings.ToLower(m[1]), strings.ToLower(m[2])
				if res == "/endpointslices" {
					res = "discovery.k8s.io" + res
				}
				if !slices.Contains(used[res], verb) {
					used[res] = append(used[res], verb)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files == 0 {
		t.Fatal("no Kubernetes client code found under internal/ and cmd/")
	}
	for k, verbs := range used {
		slices.Sort(verbs)
		if !slices.Equal(verbs, rbacNeeded[k]) {
			t.Errorf("the code calls %s %v; rbacNeeded grants %v", k, verbs, rbacNeeded[k])
		}
	}
	for k := range rbacNeeded {
		if _, ok := used[k]; !ok {
			t.Errorf("rbacNeeded grants %s, which the code never calls", k)
		}
	}
	t.Logf("API calls in the code: %v", used)
}

// TestHelmRBACMinimal: the chart's ClusterRole is deploy/rbac.yaml's.
func TestHelmRBACMinimal(t *testing.T) {
	var role rbacv1.ClusterRole
	typed(t, byKind(t, objects(t, helmTemplate(t)), "ClusterRole"), &role)
	checkClusterRole(t, "helm ClusterRole", &role)
}

const networkPolicyComponent = "components/networkpolicy"

// checkNetworkPolicy: np selects the DaemonSet's pods in its namespace and
// admits ingress only to the metrics port, from explicit peers.
func checkNetworkPolicy(t *testing.T, what string, np *networkingv1.NetworkPolicy, ds *appsv1.DaemonSet) {
	t.Helper()
	if np.Namespace != ds.Namespace {
		t.Errorf("%s: namespace %q, the tracers run in %q", what, np.Namespace, ds.Namespace)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatalf("%s: podSelector: %v", what, err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("%s: podSelector %s does not select the tracer pods (%v)", what, sel, ds.Spec.Template.Labels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("%s: policyTypes %v, want [Ingress] (egress left to the cluster)", what, np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("%s: %d ingress rules, want 1", what, len(np.Spec.Ingress))
	}
	rule := np.Spec.Ingress[0]
	c := tracer(t, ds)
	if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.IntValue() != 9464 ||
		int32(rule.Ports[0].Port.IntValue()) != c.Ports[0].ContainerPort ||
		rule.Ports[0].Protocol == nil || *rule.Ports[0].Protocol != corev1.ProtocolTCP || rule.Ports[0].EndPort != nil {
		t.Errorf("%s: ports %+v, want exactly TCP 9464 (the metrics port)", what, rule.Ports)
	}
	// An empty from admits every source.
	if len(rule.From) == 0 {
		t.Errorf("%s: no from: every source admitted", what)
	}
	for _, p := range rule.From {
		if p.NamespaceSelector == nil && p.PodSelector == nil && p.IPBlock == nil {
			t.Errorf("%s: empty peer %+v", what, p)
		}
		if p.NamespaceSelector != nil && len(p.NamespaceSelector.MatchLabels) == 0 && len(p.NamespaceSelector.MatchExpressions) == 0 {
			t.Errorf("%s: namespaceSelector {} admits every namespace", what)
		}
	}
}

func loadNetworkPolicy(t *testing.T) *networkingv1.NetworkPolicy {
	t.Helper()
	p := filepath.Join(networkPolicyComponent, "networkpolicy.yaml")
	docs := yamlDocs(t, p)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", p, len(docs))
	}
	var np networkingv1.NetworkPolicy
	strict(t, p, docs[0], &np)
	return &np
}

// TestNetworkPolicy: the optional component's NetworkPolicy selects the
// tracer pods and only their port 9464; the base does not include it (a
// Prometheus in another namespace scrapes the default install), an overlay
// with the component renders it.
func TestNetworkPolicy(t *testing.T) {
	ds := loadDaemonSet(t)
	np := loadNetworkPolicy(t)
	checkNetworkPolicy(t, "networkpolicy.yaml", np, ds)
	if got := np.Spec.Ingress[0].From[0].NamespaceSelector; got == nil || got.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
		t.Errorf("default peer %+v, want the namespace monitoring (as deploy/README.md says)", np.Spec.Ingress[0].From)
	}

	base := objects(t, kubectlKustomize(t, "."))
	if slices.Contains(kindsOf(base), "NetworkPolicy") {
		t.Error("the base renders a NetworkPolicy: it must stay optional")
	}
	with := objects(t, kustomizeWithComponent(t, "networkpolicy"))
	var rendered networkingv1.NetworkPolicy
	typed(t, byKind(t, with, "NetworkPolicy"), &rendered)
	var rds appsv1.DaemonSet
	typed(t, byKind(t, with, "DaemonSet"), &rds)
	checkNetworkPolicy(t, "kustomize with "+networkPolicyComponent, &rendered, &rds)
	if rendered.Labels["app.kubernetes.io/part-of"] != "podchron" {
		t.Errorf("rendered labels %v", rendered.Labels)
	}
}

// TestHelmNetworkPolicy: networkPolicy.enabled renders the component's
// object; off by default; a custom peer list is used as given.
func TestHelmNetworkPolicy(t *testing.T) {
	if slices.Contains(kindsOf(objects(t, helmTemplate(t))), "NetworkPolicy") {
		t.Error("the chart renders a NetworkPolicy by default")
	}
	hm := objects(t, helmTemplate(t, "networkPolicy.enabled=true"))
	kz := objects(t, kustomizeWithComponent(t, "networkpolicy"))
	sameObject(t, "NetworkPolicy", byKind(t, kz, "NetworkPolicy"), byKind(t, hm, "NetworkPolicy"))
	var np networkingv1.NetworkPolicy
	typed(t, byKind(t, hm, "NetworkPolicy"), &np)
	var ds appsv1.DaemonSet
	typed(t, byKind(t, hm, "DaemonSet"), &ds)
	checkNetworkPolicy(t, "helm networkPolicy.enabled", &np, &ds)

	custom := objects(t, helmTemplate(t, "networkPolicy.enabled=true",
		"networkPolicy.from[0].namespaceSelector.matchLabels.team=observability",
		"networkPolicy.from[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=prometheus"))
	typed(t, byKind(t, custom, "NetworkPolicy"), &np)
	checkNetworkPolicy(t, "helm custom from", &np, &ds)
	if p := np.Spec.Ingress[0].From; len(p) != 1 || p[0].NamespaceSelector.MatchLabels["team"] != "observability" ||
		p[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "prometheus" {
		t.Errorf("custom from: %+v", p)
	}
	out, err := runHelm(t, "template", helmRelease, chartDir, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.from=null")
	if err == nil || !strings.Contains(err.Error(), "admits every source") {
		t.Errorf("empty from: want an error, got %v\n%s", err, out)
	}
}
