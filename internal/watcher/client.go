package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client is what the watcher reads from the API server: pods and events
// (core/v1) and EndpointSlices (discovery.k8s.io/v1), listed and watched. NewClient's client is it; a clientset
// (kubernetes.Interface, fake ones too) becomes one with
// internal/watcher/clientset.Wrap.
//
// It is not kubernetes.Interface on purpose: the clientset brings every API
// group's types, typed client and apply configurations into the binary and
// registers them all at start-up, 10-17 MiB of the tracer's resident memory
// for three resources (README, Performance).
type Client interface {
	ListPods(ctx context.Context, namespace string, o metav1.ListOptions) (*corev1.PodList, error)
	WatchPods(ctx context.Context, namespace string, o metav1.ListOptions) (watch.Interface, error)
	ListEvents(ctx context.Context, namespace string, o metav1.ListOptions) (*corev1.EventList, error)
	WatchEvents(ctx context.Context, namespace string, o metav1.ListOptions) (watch.Interface, error)
	ListEndpointSlices(ctx context.Context, namespace string, o metav1.ListOptions) (*discoveryv1.EndpointSliceList, error)
	WatchEndpointSlices(ctx context.Context, namespace string, o metav1.ListOptions) (watch.Interface, error)
}

// ErrNoAPIServer means no API server is configured: podchron is not running
// in a pod and no kubeconfig was given (or it cannot be read). The tracer
// runs without one, with less context; callers detect it with errors.Is.
var ErrNoAPIServer = errors.New("no Kubernetes API server configured")

// UserAgent is sent to the API server.
const UserAgent = "podchron"

// NewClient returns a client of the API server's pods and events:
//   - kubeconfig != "": that kubeconfig file;
//   - else, running in a pod (KUBERNETES_SERVICE_HOST set): the in-cluster
//     config (service account token);
//   - else $KUBECONFIG (a path list, merged as kubectl does).
//
// When none of these is available the error wraps ErrNoAPIServer (and, for
// a missing file, fs.ErrNotExist).
func NewClient(kubeconfig string) (Client, error) {
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return NewClientForConfig(cfg)
}

// NewClientForConfig returns a client of core/v1 pods and events and
// discovery.k8s.io/v1 EndpointSlices for cfg: the requests the generated
// clientset makes (same paths, parameters and encodings), with a scheme of
// those two group versions alone.
func NewClientForConfig(cfg *rest.Config) (Client, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if err := discoveryv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	// One HTTP client for both group versions: their watches share one
	// connection (HTTP/2 streams), as a clientset's do. Two RESTClientFor
	// calls make two transports where the TLS cache cannot share one (a
	// wrapped transport, a custom dialer): a second connection per node,
	// measured at the API server with make fleet (2026-12-06).
	base := configFor(cfg, scheme, "/api", &corev1.SchemeGroupVersion)
	hc, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	rc, err := rest.RESTClientForConfigAndClient(base, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	drc, err := rest.RESTClientForConfigAndClient(configFor(cfg, scheme, "/apis", &discoveryv1.SchemeGroupVersion), hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &coreClient{rc: rc, discovery: drc, params: runtime.NewParameterCodec(scheme)}, nil
}

func configFor(cfg *rest.Config, scheme *runtime.Scheme, apiPath string, gv *schema.GroupVersion) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.APIPath = apiPath
	c.GroupVersion = gv
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return c
}

// coreClient lists and watches core/v1 (rc) and discovery.k8s.io/v1
// (discovery) resources as the generated typed client does
// (k8s.io/client-go/gentype). Its errors are the REST client's, unwrapped
// as the typed client's are: the reflector compares some of them with ==
// (io.EOF, io.ErrUnexpectedEOF).
type coreClient struct {
	rc, discovery *rest.RESTClient
	params        runtime.ParameterCodec
}

func (c *coreClient) ListPods(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	return out, c.list(ctx, "pods", ns, o, out)
}

func (c *coreClient) WatchPods(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return c.watch(ctx, "pods", ns, o)
}

func (c *coreClient) ListEvents(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.EventList, error) {
	out := &corev1.EventList{}
	return out, c.list(ctx, "events", ns, o, out)
}

func (c *coreClient) WatchEvents(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return c.watch(ctx, "events", ns, o)
}

func (c *coreClient) ListEndpointSlices(ctx context.Context, ns string, o metav1.ListOptions) (*discoveryv1.EndpointSliceList, error) {
	out := &discoveryv1.EndpointSliceList{}
	return out, listWith(ctx, c.discovery, c.params, "endpointslices", ns, o, out)
}

func (c *coreClient) WatchEndpointSlices(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return watchWith(ctx, c.discovery, c.params, "endpointslices", ns, o)
}

func (c *coreClient) list(ctx context.Context, resource, ns string, o metav1.ListOptions, into runtime.Object) error {
	return listWith(ctx, c.rc, c.params, resource, ns, o, into)
}

func (c *coreClient) watch(ctx context.Context, resource, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return watchWith(ctx, c.rc, c.params, resource, ns, o)
}

func listWith(ctx context.Context, rc *rest.RESTClient, params runtime.ParameterCodec, resource, ns string, o metav1.ListOptions, into runtime.Object) error {
	return rc.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).
		VersionedParams(&o, params).Timeout(timeoutOf(o)).Do(ctx).Into(into)
}

func watchWith(ctx context.Context, rc *rest.RESTClient, params runtime.ParameterCodec, resource, ns string, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return rc.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).
		VersionedParams(&o, params).Timeout(timeoutOf(o)).Watch(ctx)
}

func timeoutOf(o metav1.ListOptions) time.Duration {
	if o.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*o.TimeoutSeconds) * time.Second
}

// RESTConfig is the client configuration NewClient uses (same choice of
// source, user agent and protobuf encoding), for callers that wrap its
// transport (the scale test counts the bytes received).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := restConfig(kubeconfig, os.Getenv)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = UserAgent
	// Pods and Events support protobuf: cheaper to decode on every node.
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	return cfg, nil
}

// restConfig picks the client configuration; getenv is os.Getenv (injected
// for tests).
func restConfig(kubeconfig string, getenv func(string) string) (*rest.Config, error) {
	if kubeconfig != "" {
		return fromKubeconfig([]string{kubeconfig}, "kubeconfig "+kubeconfig)
	}
	if getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("%w: in-cluster config: %w", ErrNoAPIServer, err)
		}
		return cfg, nil
	}
	if env := getenv("KUBECONFIG"); env != "" {
		var paths []string
		for _, p := range filepath.SplitList(env) {
			if p != "" {
				paths = append(paths, p)
			}
		}
		if len(paths) > 0 {
			return fromKubeconfig(paths, "$KUBECONFIG="+env)
		}
	}
	return nil, fmt.Errorf("%w: not running in a pod (KUBERNETES_SERVICE_HOST unset) and neither a kubeconfig nor $KUBECONFIG given", ErrNoAPIServer)
}

func fromKubeconfig(paths []string, what string) (*rest.Config, error) {
	var existing []string
	var statErr error
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			statErr = errors.Join(statErr, err)
			continue
		}
		existing = append(existing, p)
	}
	if len(existing) == 0 {
		if statErr == nil {
			statErr = fs.ErrNotExist
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrNoAPIServer, what, statErr)
	}
	rules := &clientcmd.ClientConfigLoadingRules{}
	if len(existing) == 1 {
		rules.ExplicitPath = existing[0]
	} else {
		rules.Precedence = existing
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("%w: %s: %w", ErrNoAPIServer, what, err)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return cfg, nil
}
