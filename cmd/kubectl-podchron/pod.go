package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podchron/podchron/internal/export/console"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/query"
	"github.com/podchron/podchron/internal/span"
)

// cli is one invocation.
type cli struct {
	o      *options
	q      *query.Client
	out    io.Writer
	errw   io.Writer
	format console.Format
}

// target is the pod whose trace is shown.
type target struct {
	id   span.TraceID
	desc string // "pod shop/web-0 (uid …)"
	// spans found by a search (nil: fetch by id).
	spans []span.Span
	// searched says over which time the back end was searched.
	searched string
}

// resolve finds the pod: by --uid, in the API server, or (--since) in the
// trace back end by name.
func (c *cli) resolve(ctx context.Context) (*target, error) {
	o := c.o
	if o.uid != "" {
		desc := "pod with UID " + o.uid
		if o.pod != "" {
			desc = fmt.Sprintf("pod %s (uid %s)", o.pod, o.uid)
		}
		return &target{id: span.TraceIDForPod(o.uid), desc: desc}, nil
	}
	ns, cs, err := c.kube()
	if err != nil {
		if o.since == 0 {
			return nil, err
		}
		fmt.Fprintf(c.errw, "kubectl-podchron: %v; searching the trace back end only\n", err)
		return c.search(ctx, ns)
	}
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	pod, err := cs.CoreV1().Pods(ns).Get(cctx, o.pod, metav1.GetOptions{})
	switch {
	case err == nil:
		return &target{id: span.TraceIDForPod(string(pod.UID)), desc: fmt.Sprintf("pod %s/%s (uid %s)", ns, o.pod, pod.UID)}, nil
	case o.since > 0:
		if !apierrors.IsNotFound(err) {
			fmt.Fprintf(c.errw, "kubectl-podchron: get pod %s/%s: %v; searching the trace back end only\n", ns, o.pod, err)
		}
		return c.search(ctx, ns)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("pod %q not found in namespace %q: for a pod already gone, give --uid UID, or --since DURATION to search the trace back end by name", o.pod, ns)
	}
	return nil, fmt.Errorf("get pod %s/%s: %w", ns, o.pod, err)
}

// kube loads the kubeconfig as kubectl does (--kubeconfig, $KUBECONFIG,
// ~/.kube/config; --context; -n or the context's namespace).
func (c *cli) kube() (string, kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.o.kubeconfig
	over := &clientcmd.ConfigOverrides{CurrentContext: c.o.context}
	over.Context.Namespace = c.o.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = c.o.namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return ns, nil, fmt.Errorf("kubeconfig: %w", err)
	}
	rc.Timeout = c.o.timeout
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return ns, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return ns, cs, nil
}

// search looks the pod up in the back end by name and namespace over the
// last --since; of several pods of that name, the latest is shown.
func (c *cli) search(ctx context.Context, ns string) (*target, error) {
	since := time.Now().Add(-c.o.since)
	searched := fmt.Sprintf("searched since %s (--since %s)", since.UTC().Format(time.RFC3339), c.o.since)
	found, err := c.q.Search(ctx, query.Search{
		Attrs: map[string]string{names.K8sPodName: c.o.pod, names.K8sNamespaceName: ns},
		Since: since,
	})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no trace for pod %s/%s in %s at %s: %s", ns, c.o.pod, c.q.Kind(), c.q.URL(), searched)
	}
	sort.SliceStable(found, func(a, b int) bool { return first(found[a].Spans).After(first(found[b].Spans)) })
	t := found[0]
	uid := resource(t.Spans, names.K8sPodUID)
	if len(found) > 1 {
		fmt.Fprintf(c.errw, "kubectl-podchron: %d pods named %s/%s since %s; showing the latest (uid %s), the others:",
			len(found), ns, c.o.pod, since.UTC().Format(time.RFC3339), uid)
		for _, o := range found[1:] {
			fmt.Fprintf(c.errw, " --uid %s", resource(o.Spans, names.K8sPodUID))
		}
		fmt.Fprintln(c.errw)
	}
	return &target{id: t.ID, desc: fmt.Sprintf("pod %s/%s (uid %s)", ns, c.o.pod, uid), spans: t.Spans, searched: searched}, nil
}

// first is the earliest start of spans.
func first(spans []span.Span) time.Time {
	var t time.Time
	for _, s := range spans {
		if t.IsZero() || s.Start.Before(t) {
			t = s.Start
		}
	}
	return t
}

// resource is a resource attribute of the trace ("" when absent).
func resource(spans []span.Span, k string) string {
	for _, s := range spans {
		for _, a := range s.Resource {
			if a.Key == k {
				return fmt.Sprint(a.Value)
			}
		}
	}
	return ""
}

// noTrace is the error for a trace the back end does not hold.
func (c *cli) noTrace(t *target) error {
	why := "the tracer may not have exported it yet, or the back end no longer keeps it"
	if t.searched != "" {
		why = t.searched
	}
	return fmt.Errorf("no trace for %s in %s at %s (trace %s): %s: %w", t.desc, c.q.Kind(), c.q.URL(), t.id, why, query.ErrNoTrace)
}
