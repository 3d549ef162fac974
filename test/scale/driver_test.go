package scale

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// driver plays the scheduler and the kubelets of simulated nodes: it
// creates kwok nodes, binds pods to them (spec.nodeName), writes the
// events a scheduler and a kubelet write for each pod (Scheduled; Pulling,
// Pulled, Created, Started; Killing on deletion, with involvedObject set
// and source.host=<node>) and churns the pods: each node replaces its
// oldest pod at a steady rate. kwok makes the pods Running/Ready and
// finishes their deletion.
type driver struct {
	cs          kubernetes.Interface
	podsPerNode int
	namespaces  []string

	mu    sync.Mutex
	nodes []*simNode
	seq   atomic.Uint64

	created, deleted, events, errors atomic.Uint64
}

type simNode struct {
	name string
	pods []*corev1.Pod // oldest first
}

func nodeName(i int) string { return fmt.Sprintf("kwok-node-%04d", i) }

func newDriver(cs kubernetes.Interface, podsPerNode, namespaces int) *driver {
	d := &driver{cs: cs, podsPerNode: podsPerNode}
	for i := range namespaces {
		d.namespaces = append(d.namespaces, fmt.Sprintf("team-%02d", i))
	}
	return d
}

func (d *driver) setupNamespaces(ctx context.Context) error {
	for _, ns := range d.namespaces {
		if _, err := d.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		// No controller-manager: the ServiceAccount admission plugin wants
		// the default ServiceAccount.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
		if _, err := d.cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// grow adds nodes up to n, each with podsPerNode pods and their events.
func (d *driver) grow(ctx context.Context, n, workers int) error {
	d.mu.Lock()
	from := len(d.nodes)
	var added []*simNode
	for i := from; i < n; i++ {
		sn := &simNode{name: nodeName(i)}
		d.nodes = append(d.nodes, sn)
		added = append(added, sn)
	}
	d.mu.Unlock()
	if err := parallel(ctx, workers, len(added), func(i int) error {
		return d.createNode(ctx, added[i].name)
	}); err != nil {
		return err
	}
	return parallel(ctx, workers, len(added)*d.podsPerNode, func(i int) error {
		sn := added[i/d.podsPerNode]
		return d.startPod(ctx, sn)
	})
}

func (d *driver) createNode(ctx context.Context, name string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "node-role.kubernetes.io/worker": ""},
		},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"cpu": resource.MustParse("32"), "memory": resource.MustParse("256Gi"), "pods": resource.MustParse("110")},
			Capacity:    corev1.ResourceList{"cpu": resource.MustParse("32"), "memory": resource.MustParse("256Gi"), "pods": resource.MustParse("110")},
		},
	}
	_, err := d.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// podTemplate is a typical Deployment pod: one container with probes,
// resources, env and ports (the API server adds the service-account
// token volume).
func (d *driver) podTemplate(node string) *corev1.Pod {
	n := d.seq.Add(1)
	ns := d.namespaces[int(n)%len(d.namespaces)]
	app := fmt.Sprintf("svc-%03d", n%97)
	rs := app + "-7d9f8c6b5"
	yes := true
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%s-%x", rs, node[len(node)-4:], n),
			Namespace: ns,
			Labels:    map[string]string{"app.kubernetes.io/name": app, "pod-template-hash": "7d9f8c6b5", "team": ns},
			Annotations: map[string]string{
				"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", n%97)), Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example.com/" + ns + "/" + app + ":1.24.3",
				Args:  []string{"--config=/etc/app/config.yaml", "--log-level=info"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env: []corev1.EnvVar{{Name: "GOMAXPROCS", Value: "2"}, {Name: "APP_ENV", Value: "production"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{"memory": resource.MustParse("256Mi")},
				},
				ReadinessProbe: probe("/ready"),
				LivenessProbe:  probe("/healthz"),
			}},
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

// startPod creates a pod on the node and the events its start produces.
func (d *driver) startPod(ctx context.Context, sn *simNode) error {
	tmpl := d.podTemplate(sn.name)
	pod, err := d.cs.CoreV1().Pods(tmpl.Namespace).Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		d.errors.Add(1)
		return fmt.Errorf("create pod: %w", err)
	}
	d.created.Add(1)
	d.mu.Lock()
	sn.pods = append(sn.pods, pod)
	d.mu.Unlock()
	img := pod.Spec.Containers[0].Image
	for _, e := range []struct{ reason, msg, source, fieldPath string }{
		{"Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, sn.name), "default-scheduler", ""},
		{"Pulling", fmt.Sprintf("Pulling image %q", img), "kubelet", "spec.containers{app}"},
		{"Pulled", fmt.Sprintf("Successfully pulled image %q in 1.843s (1.843s including waiting). Image size: 48213456 bytes.", img), "kubelet", "spec.containers{app}"},
		{"Created", "Created container: app", "kubelet", "spec.containers{app}"},
		{"Started", "Started container app", "kubelet", "spec.containers{app}"},
	} {
		if err := d.event(ctx, pod, sn.name, e.reason, e.msg, e.source, e.fieldPath); err != nil {
			return err
		}
	}
	return nil
}

// replaceOldest deletes the node's oldest pod (with the kubelet's Killing
// event) and starts a new one.
func (d *driver) replaceOldest(ctx context.Context, sn *simNode) error {
	d.mu.Lock()
	if len(sn.pods) == 0 {
		d.mu.Unlock()
		return d.startPod(ctx, sn)
	}
	pod := sn.pods[0]
	sn.pods = sn.pods[1:]
	d.mu.Unlock()
	if err := d.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		d.errors.Add(1)
		return fmt.Errorf("delete pod: %w", err)
	}
	d.deleted.Add(1)
	if err := d.event(ctx, pod, sn.name, "Killing", "Stopping container app", "kubelet", "spec.containers{app}"); err != nil {
		return err
	}
	return d.startPod(ctx, sn)
}

func (d *driver) event(ctx context.Context, pod *corev1.Pod, node, reason, msg, source, fieldPath string) error {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, time.Now().UnixNano()+rand.Int64N(1000)), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: fieldPath},
		Reason: reason, Message: msg, Type: corev1.EventTypeNormal, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source:              corev1.EventSource{Component: source},
		ReportingController: source, ReportingInstance: node,
	}
	if source == "kubelet" {
		ev.Source.Host = node
	} else {
		ev.ReportingInstance = source + "-scale"
	}
	if _, err := d.cs.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		d.errors.Add(1)
		return fmt.Errorf("create event: %w", err)
	}
	d.events.Add(1)
	return nil
}

// churn replaces pods until ctx is done: perNodePerMin replacements per
// node per minute, nodes taken round-robin at a steady pace.
func (d *driver) churn(ctx context.Context, perNodePerMin float64, workers int) {
	d.mu.Lock()
	nodes := append([]*simNode(nil), d.nodes...)
	d.mu.Unlock()
	interval := time.Duration(float64(time.Minute) / (perNodePerMin * float64(len(nodes))))
	jobs := make(chan *simNode, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for sn := range jobs {
				_ = d.replaceOldest(ctx, sn)
			}
		})
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			close(jobs)
			wg.Wait()
			return
		case <-tick.C:
		}
		select {
		case jobs <- nodes[i%len(nodes)]:
		case <-ctx.Done():
		}
	}
}

// parallel runs f(0..n-1) on workers goroutines; the first error wins.
func parallel(ctx context.Context, workers, n int, f func(int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// podsInTransition counts the cluster's pods that are terminating or not
// Ready now (one list from the API server's watch cache): the pods a
// tracer's event windows follow.
func (d *driver) podsInTransition(ctx context.Context) (int, error) {
	l, err := d.cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, fmt.Errorf("list pods: %w", err)
	}
	n := 0
	for i := range l.Items {
		p := &l.Items[i]
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		if p.DeletionTimestamp != nil || !ready {
			n++
		}
	}
	return n, nil
}
