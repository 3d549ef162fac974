package names

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// The semantic-convention keys podchron uses, as the semconv package of the
// version in go.mod spells them.
var semconvKeys = map[string]bool{}

func init() {
	for _, k := range []string{
		string(semconv.ContainerIDKey), string(semconv.ContainerImageNameKey),
		string(semconv.K8SContainerNameKey), string(semconv.K8SNamespaceNameKey), string(semconv.K8SNodeNameKey),
		string(semconv.K8SPodNameKey), string(semconv.K8SPodUIDKey), string(semconv.K8SClusterNameKey),
		string(semconv.ProcessPIDKey), string(semconv.ProcessExitCodeKey), string(semconv.ProcessCommandArgsKey),
		string(semconv.ServiceNameKey), string(semconv.ServiceVersionKey), string(semconv.HostNameKey),
		string(semconv.ErrorTypeKey), string(semconv.K8SContainerRestartCountKey), string(semconv.K8SPodStatusPhaseKey),
		string(semconv.ContainerImageTagsKey), string(semconv.ContainerRuntimeNameKey), string(semconv.ContainerRuntimeVersionKey),
		string(semconv.K8SReplicaSetNameKey), string(semconv.K8SReplicaSetUIDKey),
		string(semconv.K8SDeploymentNameKey), string(semconv.K8SDeploymentUIDKey),
		string(semconv.K8SStatefulSetNameKey), string(semconv.K8SStatefulSetUIDKey),
		string(semconv.K8SDaemonSetNameKey), string(semconv.K8SDaemonSetUIDKey),
		string(semconv.K8SJobNameKey), string(semconv.K8SJobUIDKey),
		string(semconv.K8SCronJobNameKey), string(semconv.K8SCronJobUIDKey),
		string(semconv.K8SContainerStatusLastTerminatedReasonKey), string(semconv.K8SPodStatusReasonKey),
		string(semconv.K8SVolumeNameKey), string(semconv.K8SServiceNameKey),
	} {
		semconvKeys[k] = true
	}
}

// standard reports whether a key is in a namespace the semantic conventions
// own: such a key must be a semconv key, never one of podchron's own.
func standard(key string) bool {
	for _, ns := range []string{"k8s.", "container.", "process.", "service.", "host.", "error.", "otel."} {
		if strings.HasPrefix(key, ns) {
			return true
		}
	}
	return false
}

// TestAttributeKeysFollowSemconv reads every attribute key constant of this
// package (attrs.go): those in a standard namespace must equal a semconv
// v1.43 constant, the others must be under podchron.
func TestAttributeKeysFollowSemconv(t *testing.T) {
	keys := constants(t, "attrs.go")
	if len(keys) < 20 {
		t.Fatalf("read %d keys from attrs.go, want the whole vocabulary", len(keys))
	}
	for name, key := range keys {
		switch {
		case key == K8sPodLabelPrefix:
			// The template k8s.pod.label.<key>: checked in
			// TestPodLabelKeyIsSemconv.
		case standard(key):
			if !semconvKeys[key] {
				t.Errorf("%s = %q: in a semantic-convention namespace but not a semconv v1.43 key", name, key)
			}
		case key == "message":
			// The conventional free-text key on events and spans.
		case !strings.HasPrefix(key, "podchron."):
			t.Errorf("%s = %q: podchron's own keys are under podchron.", name, key)
		}
	}
}

// k8s.pod.label.<key> is semconv's template for a pod's labels.
func TestPodLabelKeyIsSemconv(t *testing.T) {
	if got := string(semconv.K8SPodLabel("app", "web").Key); got != K8sPodLabelPrefix+"app" {
		t.Errorf("semconv's pod label key is %q, K8sPodLabelPrefix gives %q", got, K8sPodLabelPrefix+"app")
	}
}

// Span and span event names are not attribute keys: none may equal a key
// of the semconv version in go.mod (every key its package declares, read
// from its source), whose keys a backend may index by the same name.
func TestSpanNamesAreNotKeys(t *testing.T) {
	spanNames := constants(t, "spans.go")
	if len(spanNames) < 25 {
		t.Fatalf("read %d span and event names from spans.go, want the whole vocabulary", len(spanNames))
	}
	keys := allSemconvKeys(t)
	if len(keys) < 500 {
		t.Fatalf("read %d keys from semconv v1.43's source, want all of them", len(keys))
	}
	for k := range semconvKeys {
		if !keys[k] {
			t.Errorf("%q is not a key in semconv v1.43's source: the key reader is broken", k)
		}
	}
	for name, v := range spanNames {
		if keys[v] {
			t.Errorf("%s = %q is a semconv attribute key", name, v)
		}
	}
}

// allSemconvKeys reads every X = attribute.Key("...") declaration of the
// semconv v1.43 package.
func allSemconvKeys(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "go.opentelemetry.io/otel/semconv/v1.43.0").Output()
	if err != nil {
		t.Fatalf("go list semconv: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Key" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "attribute" {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				keys[v] = true
			}
			return true
		})
	}
	return keys
}

// constants returns the string constants declared in a file of this package.
func constants(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				out[n.Name] = v
			}
		}
	}
	return out
}

// Metric label names are valid Prometheus label names, not reserved ones,
// and each is declared once.
func TestMetricLabelNames(t *testing.T) {
	labels := constants(t, "metrics.go")
	if len(labels) < 20 {
		t.Fatalf("read %d label names from metrics.go, want the whole vocabulary", len(labels))
	}
	seen := map[string]string{}
	for name, v := range labels {
		if !validLabelName(v) || strings.HasPrefix(v, "__") {
			t.Errorf("%s = %q is not a valid Prometheus label name", name, v)
		}
		if other, dup := seen[v]; dup {
			t.Errorf("%s and %s are both %q", name, other, v)
		}
		seen[v] = name
	}
}

// validLabelName: [a-zA-Z_][a-zA-Z0-9_]*, Prometheus's label name syntax.
func validLabelName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}
