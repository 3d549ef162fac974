// Package clientset makes a client-go clientset (kubernetes.Interface, fake
// ones included) a watcher.Client. The tracer does not use it (it would
// bring every API group back into its binary: see watcher.Client); tests and
// tools that hold a clientset do.
package clientset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"
)

// Client is a clientset's core/v1 pods and events and discovery/v1
// EndpointSlices, as watcher.Client.
type Client struct {
	cs kubernetes.Interface
}

// Wrap makes cs a watcher.Client.
func Wrap(cs kubernetes.Interface) *Client { return &Client{cs: cs} }

// ListPods implements watcher.Client.
func (c *Client) ListPods(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.PodList, error) {
	return c.cs.CoreV1().Pods(ns).List(ctx, o)
}

// WatchPods implements watcher.Client.
func (c *Client) WatchPods(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return c.cs.CoreV1().Pods(ns).Watch(ctx, o)
}

// ListEvents implements watcher.Client.
func (c *Client) ListEvents(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.EventList, error) {
	return c.cs.CoreV1().Events(ns).List(ctx, o)
}

// WatchEvents implements watcher.Client.
func (c *Client) WatchEvents(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return c.cs.CoreV1().Events(ns).Watch(ctx, o)
}

// ListEndpointSlices implements watcher.Client.
func (c *Client) ListEndpointSlices(ctx context.Context, ns string, o metav1.ListOptions) (*discoveryv1.EndpointSliceList, error) {
	return c.cs.DiscoveryV1().EndpointSlices(ns).List(ctx, o)
}

// WatchEndpointSlices implements watcher.Client.
func (c *Client) WatchEndpointSlices(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return c.cs.DiscoveryV1().EndpointSlices(ns).Watch(ctx, o)
}

// IsWatchListSemanticsUnSupported passes on the clientset's say on streaming
// lists (fake clientsets have none), which the watcher's informers ask
// (cache.ToListWatcherWithWatchListSemantics).
func (c *Client) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.cs)
}
