package scale

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// floor is the least a per-node agent can cost the API server: one watch of
// the node's pods (spec.nodeName=<node>), with a client and connection of
// its own per node, and nothing else. It is the kubelet's own pod source
// (pkg/kubelet/config/apiserver.go: a reflector on pods with that field
// selector), so a real cluster's API server already carries one per node;
// the fleet's baseline (kwok: one client for all nodes) does not. The
// fleet measures it between the baseline and the tracers, so what the
// tracers add beyond it is what podchron's own design costs.
type floor struct {
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	informers []cache.SharedIndexInformer
}

// startFloor starts one pod informer per node, perSecond at a time, each
// with its own client and connection (nodeClient).
func startFloor(ctx context.Context, kubeconfig string, nodes []string, perSecond float64) (*floor, error) {
	fctx, cancel := context.WithCancel(ctx)
	f := &floor{cancel: cancel}
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	for i, node := range nodes {
		if !paced(ctx, tick, i) {
			f.stop()
			return nil, context.Cause(ctx)
		}
		client, err := nodeClient(kubeconfig)
		if err != nil {
			f.stop()
			return nil, fmt.Errorf("floor: node %s: %w", node, err)
		}
		sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = sel
				return client.ListPods(ctx, metav1.NamespaceAll, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = sel
				return client.WatchPods(ctx, metav1.NamespaceAll, o)
			},
		}
		// As the watcher makes its pod informer: the list by a streaming
		// watch where the client supports it.
		inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Pod{}, 0, cache.Indexers{})
		f.informers = append(f.informers, inf)
		f.wg.Go(func() { inf.RunWithContext(fctx) })
	}
	return f, nil
}

// notSynced counts the informers that have not listed yet.
func (f *floor) notSynced() int {
	n := 0
	for _, inf := range f.informers {
		if !inf.HasSynced() {
			n++
		}
	}
	return n
}

func (f *floor) waitSynced(ctx context.Context, cp *controlPlane, timeout time.Duration) error {
	return cp.waitFor(ctx, "floor's pod watches synced", timeout, func() error {
		if n := f.notSynced(); n > 0 {
			return fmt.Errorf("%d of %d pod informers not synced", n, len(f.informers))
		}
		return nil
	})
}

// stop ends every informer and waits for them.
func (f *floor) stop() {
	f.cancel()
	f.wg.Wait()
}
