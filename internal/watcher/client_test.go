package watcher

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/podchron/podchron/internal/watcher/clientset"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: abc
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
`

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRestConfig(t *testing.T) {
	kc := writeKubeconfig(t)
	missing := filepath.Join(t.TempDir(), "nope")

	t.Run("nothing configured", func(t *testing.T) {
		_, err := restConfig("", env(nil))
		if !errors.Is(err, ErrNoAPIServer) {
			t.Fatalf("err = %v, want ErrNoAPIServer", err)
		}
	})
	t.Run("explicit path", func(t *testing.T) {
		cfg, err := restConfig(kc, env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "abc" {
			t.Errorf("cfg = %+v", cfg)
		}
	})
	t.Run("explicit path missing", func(t *testing.T) {
		_, err := restConfig(missing, env(nil))
		if !errors.Is(err, ErrNoAPIServer) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want ErrNoAPIServer and fs.ErrNotExist", err)
		}
	})
	t.Run("$KUBECONFIG list", func(t *testing.T) {
		cfg, err := restConfig("", env(map[string]string{"KUBECONFIG": missing + string(filepath.ListSeparator) + kc}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://127.0.0.1:6443" {
			t.Errorf("host = %q", cfg.Host)
		}
	})
	t.Run("$KUBECONFIG missing", func(t *testing.T) {
		_, err := restConfig("", env(map[string]string{"KUBECONFIG": missing}))
		if !errors.Is(err, ErrNoAPIServer) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("in cluster without service account", func(t *testing.T) {
		if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/token"); err == nil {
			t.Skip("running in a pod")
		}
		_, err := restConfig("", env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}))
		if !errors.Is(err, ErrNoAPIServer) {
			t.Fatalf("err = %v, want ErrNoAPIServer", err)
		}
	})
	t.Run("empty kubeconfig", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "empty")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := restConfig(p, env(nil))
		if !errors.Is(err, ErrNoAPIServer) {
			t.Fatalf("err = %v, want ErrNoAPIServer", err)
		}
	})
}

func TestNewClient(t *testing.T) {
	cs, err := NewClient(writeKubeconfig(t))
	if err != nil || cs == nil {
		t.Fatalf("NewClient = %v, %v", cs, err)
	}
	if _, err := NewClient(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrNoAPIServer) {
		t.Fatalf("err = %v", err)
	}
}

// apiServer answers pod and event lists (protobuf, as the API server does
// when asked) and watches (JSON lines) with the objects it holds, a 410 Gone
// for lists at resourceVersion "gone", and records each request.
type apiServer struct {
	t      *testing.T
	codecs serializer.CodecFactory
	pods   *corev1.PodList
	events *corev1.EventList

	mu   sync.Mutex
	reqs []string
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.Query().Encode()+" accept="+r.Header.Get("Accept"))
	s.mu.Unlock()
	var list runtime.Object = s.pods
	var item runtime.Object = &s.pods.Items[0]
	if strings.HasSuffix(r.URL.Path, "/events") {
		list, item = s.events, &s.events.Items[0]
	}
	if r.URL.Query().Get("resourceVersion") == "gone" {
		status := apierrors.NewResourceExpired("too old resource version").Status()
		s.write(w, "application/json", http.StatusGone, &status)
		return
	}
	if r.URL.Query().Get("watch") != "true" {
		s.write(w, runtime.ContentTypeProtobuf, http.StatusOK, list)
		return
	}
	obj, err := runtime.Encode(s.codecs.LegacyCodec(corev1.SchemeGroupVersion), item)
	if err != nil {
		s.t.Error(err)
		return
	}
	line, err := json.Marshal(metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: obj}})
	if err != nil {
		s.t.Error(err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(line, '\n'))
}

func (s *apiServer) write(w http.ResponseWriter, mediaType string, code int, obj runtime.Object) {
	info, ok := runtime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		s.t.Errorf("no serializer for %s", mediaType)
		return
	}
	b, err := runtime.Encode(s.codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
	if err != nil {
		s.t.Error(err)
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func (s *apiServer) takeRequests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reqs
	s.reqs = nil
	return r
}

// The tracer's client (core/v1 only) makes the requests the generated
// clientset makes, and decodes the same objects and errors from them.
func TestClientMatchesClientset(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", ResourceVersion: "7",
			Annotations: map[string]string{"a": "b"}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	event := corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "shop", ResourceVersion: "8"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", UID: "u1"},
		Reason:         "Pulled", Message: "pulled", Count: 2,
	}
	srv := &apiServer{t: t, codecs: serializer.NewCodecFactory(scheme),
		pods:   &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []corev1.Pod{pod}},
		events: &corev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []corev1.Event{event}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(strings.Replace(testKubeconfig, "https://127.0.0.1:6443", hs.URL, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := NewClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	theirs := clientset.Wrap(cs)
	ctx := t.Context()
	timeout := int64(300)
	listOpts := metav1.ListOptions{FieldSelector: "spec.nodeName=n1", ResourceVersion: "0", Limit: 500}
	watchOpts := metav1.ListOptions{FieldSelector: "involvedObject.uid=u1", ResourceVersion: "9",
		AllowWatchBookmarks: true, TimeoutSeconds: &timeout}

	type result struct {
		obj  any
		err  string
		reqs []string
	}
	do := func(c Client, op string) result {
		var obj any
		var err error
		switch op {
		case "list pods":
			obj, err = c.ListPods(ctx, "", listOpts)
		case "list events":
			obj, err = c.ListEvents(ctx, "shop", listOpts)
		case "list gone":
			o := listOpts
			o.ResourceVersion = "gone"
			_, err = c.ListPods(ctx, "", o)
			obj = apierrors.IsResourceExpired(err)
		case "watch pods", "watch events":
			var w watch.Interface
			if op == "watch pods" {
				w, err = c.WatchPods(ctx, "", watchOpts)
			} else {
				w, err = c.WatchEvents(ctx, "shop", watchOpts)
			}
			if err == nil {
				ev := <-w.ResultChan()
				w.Stop()
				obj = ev
			}
		}
		r := result{obj: obj, reqs: srv.takeRequests()}
		if err != nil {
			r.err = err.Error()
		}
		return r
	}
	for _, op := range []string{"list pods", "list events", "list gone", "watch pods", "watch events"} {
		want, got := do(theirs, op), do(ours, op)
		if len(got.reqs) != 1 {
			t.Errorf("%s: %d requests, want 1: %q", op, len(got.reqs), got.reqs)
		}
		if !reflect.DeepEqual(got.reqs, want.reqs) {
			t.Errorf("%s: requests\n%q\nthe clientset's:\n%q", op, got.reqs, want.reqs)
		}
		if got.err != want.err {
			t.Errorf("%s: error %q, the clientset's %q", op, got.err, want.err)
		}
		if !reflect.DeepEqual(got.obj, want.obj) {
			t.Errorf("%s: decoded\n%#v\nthe clientset's:\n%#v", op, got.obj, want.obj)
		}
	}
	if l, err := ours.ListPods(ctx, "", listOpts); err != nil || len(l.Items) != 1 || l.Items[0].Spec.Containers[0].Image != "nginx" {
		t.Errorf("ListPods = %+v, %v", l, err)
	}
	if gone := do(ours, "list gone"); gone.obj != true {
		t.Errorf("a 410 list: IsResourceExpired = %v (%s)", gone.obj, gone.err)
	}
}
