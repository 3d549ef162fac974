package watcher

import (
	"context"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func testSlice(name string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
	}
}

func endpoint(podUID types.UID, nodeName string, ready, terminating *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, NodeName: &nodeName,
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: string(podUID), UID: podUID},
		Conditions: discoveryv1.EndpointConditions{Ready: ready, Terminating: terminating}}
}

func isEndpoint(uid types.UID, f func(*fact.EndpointChange) bool) func(fact.Input) bool {
	return func(in fact.Input) bool {
		return in.Endpoint != nil && in.Endpoint.PodUID == string(uid) && f(in.Endpoint)
	}
}

// The node's pods' endpoints, and only theirs, become EndpointChanges:
// listed ones as Initial, then each change of their conditions, their
// removal from a slice and the slice's deletion.
func TestEndpointSlicesOfTheNodesPods(t *testing.T) {
	yes, no := true, false
	mine, other := types.UID("uid-mine"), types.UID("uid-other")
	h := newHarness(t, fixedClock(), testPod("mine", node),
		testSlice("web-abc", endpoint(mine, node, &yes, nil), endpoint(other, "node-b", &yes, nil)))
	h.start()
	first := h.waitFor("the listed endpoint", isEndpoint(mine, func(e *fact.EndpointChange) bool {
		return e.Listed && e.Ready && e.Serving && !e.Terminating && e.Initial
	}))
	if e := first.Endpoint; e.Service != "web" || e.Slice != "web-abc" || e.Namespace != "shop" {
		t.Errorf("listed endpoint %+v, want service web, slice web-abc in shop", *e)
	}
	h.waitWatching("endpointslices", 1)

	// The pod's deletion: the controller marks it terminating, not ready.
	es := testSlice("web-abc", endpoint(mine, node, &no, &yes), endpoint(other, "node-b", &no, &yes))
	es.Endpoints[0].Conditions.Serving = &yes
	if _, err := h.cs.DiscoveryV1().EndpointSlices("shop").Update(context.Background(), es, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the terminating endpoint", isEndpoint(mine, func(e *fact.EndpointChange) bool {
		return e.Listed && !e.Ready && e.Serving && e.Terminating && !e.Initial
	}))
	// Then removed from the slice, and a second slice deleted.
	if _, err := h.cs.DiscoveryV1().EndpointSlices("shop").Update(context.Background(), testSlice("web-abc", endpoint(other, "node-b", &yes, nil)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the removal", isEndpoint(mine, func(e *fact.EndpointChange) bool { return !e.Listed && e.Slice == "web-abc" }))
	if _, err := h.cs.DiscoveryV1().EndpointSlices("shop").Create(context.Background(), testSlice("web-v6", endpoint(mine, node, &yes, nil)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the second slice", isEndpoint(mine, func(e *fact.EndpointChange) bool { return e.Listed && e.Slice == "web-v6" && !e.Initial }))
	if err := h.cs.DiscoveryV1().EndpointSlices("shop").Delete(context.Background(), "web-v6", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the slice's deletion", isEndpoint(mine, func(e *fact.EndpointChange) bool { return !e.Listed && e.Slice == "web-v6" }))

	if n := h.count(func(in fact.Input) bool { return in.Endpoint != nil && in.Endpoint.PodUID != string(mine) }); n != 0 {
		t.Errorf("%d changes of another node's endpoints, want 0", n)
	}
	if n := h.count(func(in fact.Input) bool { return in.Endpoint != nil }); n != 5 {
		t.Errorf("%d endpoint changes, want 5 (listed, terminating, removed, added, deleted):\n%s", n, dump(h.inputs()))
	}
	if st := h.w.Stats(); st.EndpointChanges != 5 || st.EndpointSliceErrors != 0 {
		t.Errorf("stats: %d changes, %d errors; want 5, 0", st.EndpointChanges, st.EndpointSliceErrors)
	}
}

// A tracer whose ClusterRole predates EndpointSlices traces on: its API
// status stays available, the refusal is counted.
func TestEndpointSlicesForbidden(t *testing.T) {
	h := newHarness(t, fixedClock(), testPod("mine", node))
	h.failList.Store("endpointslices", apierrors.NewForbidden(schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, "", nil))
	h.start()
	h.waitFor("the pod", isPod("uid-mine", nil))
	h.waitFor("the API available", isAPI(true, false))
	deadline := time.Now().Add(10 * time.Second)
	for h.w.Stats().EndpointSliceErrors == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the refused list was not counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := h.count(isAPI(false, true)); n != 0 {
		t.Errorf("the API reported forbidden %d times for EndpointSlices alone", n)
	}
}

// With NoEndpointSlices, no slice is listed.
func TestEndpointSlicesOff(t *testing.T) {
	h := newHarnessWith(t, fixedClock(), func(c *Config) { c.NoEndpointSlices = true }, testPod("mine", node))
	h.start()
	h.waitFor("the API available", isAPI(true, false))
	for _, a := range h.cs.Actions() {
		if a.GetResource().Resource == "endpointslices" {
			t.Fatalf("%s endpointslices with NoEndpointSlices", a.GetVerb())
		}
	}
}

// The streaming list's transform keeps a slice's name, Service and the
// node's endpoints only.
func TestEndpointSliceTransform(t *testing.T) {
	yes := true
	st := &sliceStore{node: node}
	es := testSlice("web-abc", endpoint("uid-mine", node, &yes, nil), endpoint("uid-other", "node-b", &yes, nil))
	es.Labels["other"] = "x"
	got, err := st.Transformer()(es)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(*discoveryv1.EndpointSlice)
	if out.Name != "web-abc" || out.Namespace != "shop" || len(out.Labels) != 1 || out.Labels[discoveryv1.LabelServiceName] != "web" {
		t.Errorf("stripped slice %+v", out.ObjectMeta)
	}
	if len(out.Endpoints) != 1 || out.Endpoints[0].TargetRef.UID != "uid-mine" {
		t.Errorf("stripped endpoints %+v, want uid-mine's alone", out.Endpoints)
	}
	if e := st.endpointsOf(out); e == nil || len(e.pods) != 1 || e.service != "web" {
		t.Errorf("endpointsOf(stripped) = %+v", e)
	}
}
