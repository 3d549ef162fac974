package watcher

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	slices *discoveryv1.EndpointSliceList

	mu   sync.Mutex
	reqs []string
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.Query().Encode()+" accept="+r.Header.Get("Accept"))
	s.mu.Unlock()
	var list runtime.Object = s.pods
	var item runtime.Object = &s.pods.Items[0]
	gv := corev1.SchemeGroupVersion
	if strings.HasSuffix(r.URL.Path, "/events") {
		list, item = s.events, &s.events.Items[0]
	}
	if strings.HasSuffix(r.URL.Path, "/endpointslices") {
		list, item, gv = s.slices, &s.slices.Items[0], discoveryv1.SchemeGroupVersion
	}
	if r.URL.Query().Get("resourceVersion") == "gone" {
		status := apierrors.NewResourceExpired("too old resource version").Status()
		s.write(w, "application/json", http.StatusGone, &status)
		return
	}
	if r.URL.Query().Get("watch") != "true" {
		s.writeAs(w, runtime.ContentTypeProtobuf, http.StatusOK, list, gv)
		return
	}
	obj, err := runtime.Encode(s.codecs.LegacyCodec(gv), item)
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
	s.writeAs(w, mediaType, code, obj, corev1.SchemeGroupVersion)
}

func (s *apiServer) writeAs(w http.ResponseWriter, mediaType string, code int, obj runtime.Object, gv schema.GroupVersion) {
	info, ok := runtime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		s.t.Errorf("no serializer for %s", mediaType)
		return
	}
	b, err := runtime.Encode(s.codecs.EncoderForVersion(info.Serializer, gv), obj)
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
	if err := discoveryv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	node, yes := "n1", true
	slice := discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "shop", ResourceVersion: "8", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &yes},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web", UID: "u1"}}},
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
		events: &corev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []corev1.Event{event}},
		slices: &discoveryv1.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []discoveryv1.EndpointSlice{slice}}}
	hs := httptest.NewUnstartedServer(srv)
	var conns atomic.Int32
	hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	hs.Start()
	defer hs.Close()

	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(strings.Replace(testKubeconfig, "https://127.0.0.1:6443", hs.URL, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	// A dialer of its own (as a byte-counting or proxying caller's) keeps
	// client-go from sharing transports between configs: the client must
	// share its one itself.
	cfg.Dial = (&net.Dialer{}).DialContext
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
		case "list slices":
			obj, err = c.ListEndpointSlices(ctx, "", listOpts)
		case "list gone":
			o := listOpts
			o.ResourceVersion = "gone"
			_, err = c.ListPods(ctx, "", o)
			obj = apierrors.IsResourceExpired(err)
		case "watch pods", "watch events", "watch slices":
			var w watch.Interface
			switch op {
			case "watch pods":
				w, err = c.WatchPods(ctx, "", watchOpts)
			case "watch events":
				w, err = c.WatchEvents(ctx, "shop", watchOpts)
			default:
				w, err = c.WatchEndpointSlices(ctx, "", watchOpts)
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
	ops := []string{"list pods", "list events", "list slices", "list gone", "watch pods", "watch events", "watch slices"}
	before := conns.Load()
	for _, op := range ops {
		_ = do(ours, op)
	}
	// Both group versions over one connection (one HTTP client): a second
	// transport is a second connection per node at the API server.
	if n := conns.Load() - before; n != 1 {
		t.Errorf("our client opened %d connections for pods, events and EndpointSlices, want 1", n)
	}
	for _, op := range ops {
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
	if l, err := ours.ListEndpointSlices(ctx, "", listOpts); err != nil || len(l.Items) != 1 || l.Items[0].Endpoints[0].TargetRef.UID != "u1" {
		t.Errorf("ListEndpointSlices = %+v, %v", l, err)
	}
	if gone := do(ours, "list gone"); gone.obj != true {
		t.Errorf("a 410 list: IsResourceExpired = %v (%s)", gone.obj, gone.err)
	}
}
