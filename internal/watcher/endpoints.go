// EndpointSlices: which Services list the node's pods, and when that
// changes. The endpoints controller adds a pod to its Services' slices and
// marks it ready when the pod is Ready, and withdraws it (ready false,
// terminating true, then removed) when the pod is deleted or loses Ready;
// kube-proxy and load balancers route by the slices. The moment a
// terminating pod leaves them, against its SIGTERM, is when its clients
// stop being sent to it: the step that decides whether a rollout drops
// requests.
//
// Slices cannot be selected by node (their field selectors are the
// object's name and namespace, their labels the Service's), so the node's
// tracer watches them all, as the node's kube-proxy does: one watch per
// node, served from the API server's watch cache. The slices are not
// cached: a store of our own (sliceStore) keeps, per slice, only the
// endpoints of pods on this node (endpoint nodeName), and turns each
// change of those into an EndpointChange. A tracer without RBAC for them
// (an older ClusterRole) says so once and traces without them.

package watcher

import (
	"context"
	"sync"
	"time"

	"github.com/podchron/podchron/internal/fact"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// epConditions are a pod's endpoint's conditions in one slice.
type epConditions struct {
	ready, serving, terminating bool
}

// sliceEndpoints is what one slice says of the node's pods.
type sliceEndpoints struct {
	namespace, service, name string
	pods                     map[types.UID]epConditions
}

// sliceStore is the EndpointSlice reflector's store (cache.ReflectorStore):
// it keeps the node's endpoints of each slice and sends their changes.
type sliceStore struct {
	w    *Watcher
	node string

	mu     sync.Mutex
	slices map[string]*sliceEndpoints // by namespace/name
}

// endpointsOf returns what slice es says of the node's pods (nil when it
// lists none).
func (st *sliceStore) endpointsOf(es *discoveryv1.EndpointSlice) *sliceEndpoints {
	var out *sliceEndpoints
	for i := range es.Endpoints {
		ep := &es.Endpoints[i]
		if ep.NodeName == nil || *ep.NodeName != st.node || ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" {
			continue
		}
		if out == nil {
			svc := es.Labels[discoveryv1.LabelServiceName]
			if svc == "" {
				svc = es.Name
			}
			out = &sliceEndpoints{namespace: es.Namespace, service: truncated(svc), name: truncated(es.Name),
				pods: map[types.UID]epConditions{}}
		}
		// Unset conditions as the API defines them: ready true, serving
		// as ready, terminating false.
		c := epConditions{ready: ep.Conditions.Ready == nil || *ep.Conditions.Ready}
		c.serving = c.ready
		if ep.Conditions.Serving != nil {
			c.serving = *ep.Conditions.Serving
		}
		c.terminating = ep.Conditions.Terminating != nil && *ep.Conditions.Terminating
		out.pods[ep.TargetRef.UID] = c
	}
	return out
}

// maxNameBytes bounds a Service's and a slice's name in a fact: the API
// server caps both (a DNS label, 63 bytes; a subdomain, 253).
const maxNameBytes = 253

func truncated(s string) string {
	t, _ := fact.Truncate(s, maxNameBytes)
	return t
}

func sliceKey(es *discoveryv1.EndpointSlice) string { return es.Namespace + "/" + es.Name }

// apply replaces what the store holds of slice key by now (nil: the slice
// lists none of the node's pods, or is gone) and sends the differences.
func (st *sliceStore) apply(key string, now *sliceEndpoints, initial bool) {
	old := st.slices[key]
	if now == nil {
		delete(st.slices, key)
	} else {
		st.slices[key] = now
	}
	if old != nil {
		for uid, c := range old.pods {
			if now == nil {
				st.send(old, uid, nil, initial)
			} else if nc, ok := now.pods[uid]; !ok {
				st.send(old, uid, nil, initial)
			} else if nc != c {
				st.send(now, uid, &nc, initial)
			}
		}
	}
	if now != nil {
		for uid, c := range now.pods {
			if old == nil {
				st.send(now, uid, &c, initial)
			} else if _, ok := old.pods[uid]; !ok {
				st.send(now, uid, &c, initial)
			}
		}
	}
}

// send tells the model what slice s says of pod uid now (c nil: it no
// longer lists it).
func (st *sliceStore) send(s *sliceEndpoints, uid types.UID, c *epConditions, initial bool) {
	ch := &fact.EndpointChange{PodUID: string(uid), Namespace: s.namespace, Service: s.service, Slice: s.name, Initial: initial}
	if c != nil {
		ch.Listed, ch.Ready, ch.Serving, ch.Terminating = true, c.ready, c.serving, c.terminating
	}
	st.w.endpointChanges.Add(1)
	st.w.send(fact.Input{Endpoint: ch})
}

func (st *sliceStore) object(obj any) (*discoveryv1.EndpointSlice, bool) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	return es, ok
}

// Add implements cache.ReflectorStore: a slice created, or first seen
// by a watch.
func (st *sliceStore) Add(obj any) error { return st.Update(obj) }

// Update implements cache.ReflectorStore.
func (st *sliceStore) Update(obj any) error { return st.change(obj, false) }

// Delete implements cache.ReflectorStore: every endpoint the slice listed
// is withdrawn.
func (st *sliceStore) Delete(obj any) error { return st.change(obj, true) }

// change applies a watched slice's update, or its deletion.
func (st *sliceStore) change(obj any, deleted bool) error {
	es, ok := st.object(obj)
	if !ok {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var now *sliceEndpoints
	if !deleted {
		now = st.endpointsOf(es)
	}
	st.apply(sliceKey(es), now, false)
	return nil
}

// Replace implements cache.ReflectorStore: a list (the first, or a relist
// after the watch broke). What changed since the store's last state is
// sent as found by a list (Initial): it happened before, by how much is
// not known.
func (st *sliceStore) Replace(list []any, _ string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	seen := make(map[string]bool, len(list))
	for _, obj := range list {
		es, ok := st.object(obj)
		if !ok {
			continue
		}
		key := sliceKey(es)
		seen[key] = true
		st.apply(key, st.endpointsOf(es), true)
	}
	for key := range st.slices {
		if !seen[key] {
			st.apply(key, nil, true)
		}
	}
	return nil
}

// Resync implements cache.ReflectorStore (nothing to resync).
func (st *sliceStore) Resync() error { return nil }

// Transformer implements cache.TransformingStore: a streaming list
// (WatchList) gathers every slice of the cluster before Replace; stripped
// to the node's endpoints, a slice costs a few hundred bytes there, not
// its whole endpoint list.
func (st *sliceStore) Transformer() cache.TransformFunc {
	return func(obj any) (any, error) {
		es, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return obj, nil
		}
		out := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: es.Name, Namespace: es.Namespace,
			ResourceVersion: es.ResourceVersion}, AddressType: es.AddressType}
		if svc, ok := es.Labels[discoveryv1.LabelServiceName]; ok {
			out.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
		}
		for _, ep := range es.Endpoints {
			if ep.NodeName != nil && *ep.NodeName == st.node {
				out.Endpoints = append(out.Endpoints, ep)
			}
		}
		return out, nil
	}
}

// runEndpointSlices lists and watches every EndpointSlice until ctx is
// done. It logs once when the API server refuses them (RBAC).
func (w *Watcher) runEndpointSlices(ctx context.Context) {
	st := &sliceStore{w: w, node: w.cfg.NodeName, slices: map[string]*sliceEndpoints{}}
	var refused sync.Once
	report := func(err error) {
		if err == nil || ctx.Err() != nil {
			return
		}
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			refused.Do(func() {
				w.log.Warn("EndpointSlices cannot be listed: traces will not show Services adding and withdrawing pods "+
					"(grant list and watch on discovery.k8s.io endpointslices: deploy/rbac.yaml)", "err", err)
			})
			w.endpointSliceErrors.Add(1)
			return
		}
		if !ignorable(err) {
			w.endpointSliceErrors.Add(1)
			w.log.Debug("EndpointSlices list/watch failed", "err", err)
		}
	}
	client := w.cfg.Client
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := client.ListEndpointSlices(ctx, metav1.NamespaceAll, o)
			report(err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := client.WatchEndpointSlices(ctx, metav1.NamespaceAll, o)
			report(err)
			return wi, err
		},
	}
	// A plain reflector (no informer): its store is sliceStore, which
	// keeps no slice. It is run here rather than by its Run, whose error
	// handler logs every failed list: a refusal (RBAC) is told once above
	// and retried every refusedRetry, other errors back off to 30 s.
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, w.cfg.Client), &discoveryv1.EndpointSlice{}, st,
		cache.ReflectorOptions{Name: "endpointslices"})
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 32, Cap: 30 * time.Second}
	for {
		err := r.ListAndWatchWithContext(ctx)
		delay := backoff.Step()
		switch {
		case err == nil:
			backoff.Duration, backoff.Steps = time.Second, 32
			delay = time.Second
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
			delay = refusedRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// refusedRetry is how often a refused EndpointSlices list is tried again
// (the ClusterRole may be fixed while the tracer runs).
const refusedRetry = 5 * time.Minute
