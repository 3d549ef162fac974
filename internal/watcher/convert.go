// Package watcher is the API server's view of this node's pods: it watches
// core/v1 Pods bound to the node and core/v1 Events about pods, converts them
// into correlate inputs (PodInfo, K8sEvent) and reports the API server's
// reachability (APIStatus). The tracer works without an API server; the
// watcher only adds names, owners, specs and the kubelet's story.
package watcher

import (
	"slices"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MirrorAnnotation marks a mirror pod: the API server's copy of a static
// pod the kubelet runs from a file (or URL).
const MirrorAnnotation = "kubernetes.io/config.mirror"

// Defaults the API server applies; used when a field is unset (objects built
// by hand, or stored before defaulting).
const (
	defaultTerminationGracePeriod = 30 // seconds
	defaultProbePeriod            = 10 // seconds
	defaultProbeTimeout           = 1  // seconds
	defaultProbeFailureThreshold  = 3
)

// Handler kinds, as named in the pod spec.
const (
	KindExec      = "exec"
	KindHTTPGet   = "httpGet"
	KindTCPSocket = "tcpSocket"
	KindGRPC      = "grpc"
	KindSleep     = "sleep"
)

// Convert reduces a core/v1 Pod to the correlator's PodInfo, with the
// labels named in labels (an allow-list: labels can be many, and some are
// not meant to leave the cluster). It is a pure function: the result shares
// no memory with pod, and all times are UTC.
func Convert(pod *corev1.Pod, labels ...string) fact.PodInfo {
	if pod == nil {
		return fact.PodInfo{}
	}
	info := fact.PodInfo{
		UID:           string(pod.UID),
		Name:          pod.Name,
		Namespace:     pod.Namespace,
		NodeName:      pod.Spec.NodeName,
		QOSClass:      string(pod.Status.QOSClass),
		CreatedAt:     utc(pod.CreationTimestamp.Time),
		Phase:         string(pod.Status.Phase),
		RestartPolicy: string(pod.Spec.RestartPolicy),
		Reason:        pod.Status.Reason,
		Message:       pod.Status.Message,
		TerminationGracePeriodSeconds: int64OrDefault(pod.Spec.TerminationGracePeriodSeconds,
			defaultTerminationGracePeriod),
	}

	if owner := ownerOf(pod.OwnerReferences); owner != nil {
		info.OwnerKind, info.OwnerName, info.OwnerUID = owner.Kind, owner.Name, string(owner.UID)
	}
	info.TemplateHash = pod.Labels["pod-template-hash"]
	info.OptOut = pod.Annotations[fact.OptOutAnnotation] == "false"
	for _, k := range labels {
		if v, ok := pod.Labels[k]; ok {
			if info.Labels == nil {
				info.Labels = map[string]string{}
			}
			info.Labels[k] = v
		}
	}
	if hash, mirror := pod.Annotations[MirrorAnnotation]; mirror {
		// A static pod is owned by its node; mirror pods carry an ownerRef
		// to the Node since 1.17, but older ones have none. The annotation
		// is the static pod's own UID (its config hash), which its cgroups,
		// the runtime and the kubelet's Events use.
		info.Static = true
		info.ConfigUID = hash
		info.OwnerKind = "Node"
		info.OwnerName = pod.Spec.NodeName
		info.OwnerUID = ""
	}

	if ts := pod.DeletionTimestamp; ts != nil {
		t := utc(ts.Time)
		info.DeletionTimestamp = &t
	}
	if gp := pod.DeletionGracePeriodSeconds; gp != nil {
		v := *gp
		info.DeletionGracePeriodSeconds = &v
	}

	if n := len(pod.Status.Conditions); n > 0 {
		info.Conditions = make([]fact.Condition, 0, n)
		for _, c := range pod.Status.Conditions {
			info.Conditions = append(info.Conditions, fact.Condition{
				Type:               string(c.Type),
				Status:             string(c.Status),
				LastTransitionTime: utc(c.LastTransitionTime.Time),
				Reason:             c.Reason,
				Message:            c.Message,
			})
		}
	}

	info.InitContainers = convertSpecs(pod.Spec.InitContainers, true)
	info.Containers = convertSpecs(pod.Spec.Containers, false)
	info.InitStatuses = convertStatuses(pod.Status.InitContainerStatuses)
	info.Statuses = convertStatuses(pod.Status.ContainerStatuses)
	convertEphemeralAndGates(pod, &info)
	return info
}

// ownerOf returns the controller owner reference, or the first owner
// reference when none is marked as controller, or nil.
func ownerOf(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if c := refs[i].Controller; c != nil && *c {
			return &refs[i]
		}
	}
	if len(refs) > 0 {
		return &refs[0]
	}
	return nil
}

func convertSpecs(cs []corev1.Container, init bool) []fact.ContainerSpec {
	if len(cs) == 0 {
		return nil
	}
	out := make([]fact.ContainerSpec, 0, len(cs))
	for i := range cs {
		c := &cs[i]
		spec := fact.ContainerSpec{
			Name:      c.Name,
			Image:     c.Image,
			Sidecar:   init && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways,
			Startup:   convertProbe(c.StartupProbe),
			Readiness: convertProbe(c.ReadinessProbe),
			Liveness:  convertProbe(c.LivenessProbe),
		}
		if lc := c.Lifecycle; lc != nil {
			spec.PostStart = convertLifecycleHandler(lc.PostStart)
			spec.PreStop = convertLifecycleHandler(lc.PreStop)
		}
		if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			spec.MemoryLimitBytes = mem.Value()
		}
		if c.RestartPolicy != nil {
			spec.RestartPolicy = string(*c.RestartPolicy)
		}
		spec.RestartRules = convertRestartRules(c.RestartPolicyRules)
		out = append(out, spec)
	}
	return out
}

// convertRestartRules keeps the restartPolicyRules the model can check (exit
// codes; the only condition the API has), in order.
func convertRestartRules(rules []corev1.ContainerRestartRule) []fact.RestartRule {
	var out []fact.RestartRule
	for _, r := range rules {
		if r.ExitCodes == nil {
			continue
		}
		out = append(out, fact.RestartRule{Action: string(r.Action), Operator: string(r.ExitCodes.Operator),
			ExitCodes: slices.Clone(r.ExitCodes.Values)})
	}
	return out
}

func convertLifecycleHandler(h *corev1.LifecycleHandler) *fact.Handler {
	if h == nil {
		return nil
	}
	switch {
	case h.Exec != nil:
		return &fact.Handler{Kind: KindExec, Exec: cloneStrings(h.Exec.Command)}
	case h.HTTPGet != nil:
		return &fact.Handler{Kind: KindHTTPGet, HTTPPath: h.HTTPGet.Path, HTTPPort: h.HTTPGet.Port.String()}
	case h.TCPSocket != nil:
		return &fact.Handler{Kind: KindTCPSocket}
	case h.Sleep != nil:
		return &fact.Handler{Kind: KindSleep, SleepSeconds: h.Sleep.Seconds}
	}
	return nil
}

func convertProbe(p *corev1.Probe) *fact.ProbeSpec {
	if p == nil {
		return nil
	}
	ps := &fact.ProbeSpec{
		PeriodSeconds:    int32OrDefault(p.PeriodSeconds, defaultProbePeriod),
		TimeoutSeconds:   int32OrDefault(p.TimeoutSeconds, defaultProbeTimeout),
		FailureThreshold: int32OrDefault(p.FailureThreshold, defaultProbeFailureThreshold),
	}
	switch h := &p.ProbeHandler; {
	case h.Exec != nil:
		ps.Kind, ps.Exec = KindExec, cloneStrings(h.Exec.Command)
	case h.HTTPGet != nil:
		ps.Kind = KindHTTPGet
	case h.TCPSocket != nil:
		ps.Kind = KindTCPSocket
	case h.GRPC != nil:
		ps.Kind = KindGRPC
	}
	return ps
}

func convertStatuses(ss []corev1.ContainerStatus) []fact.ContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	out := make([]fact.ContainerStatus, 0, len(ss))
	for i := range ss {
		s := &ss[i]
		runtime, id := SplitContainerID(s.ContainerID)
		st := fact.ContainerStatus{
			Name:         s.Name,
			ContainerID:  id,
			Runtime:      runtime,
			RestartCount: s.RestartCount,
			Ready:        s.Ready,
			State:        convertState(s.State),
			LastState:    convertState(s.LastTerminationState),
		}
		if s.Started != nil {
			v := *s.Started
			st.Started = &v
		}
		out = append(out, st)
	}
	return out
}

func convertState(s corev1.ContainerState) fact.ContainerState {
	var out fact.ContainerState
	if w := s.Waiting; w != nil {
		out.Waiting = &fact.Waiting{Reason: w.Reason, Message: w.Message}
	}
	if r := s.Running; r != nil {
		out.Running = &fact.Running{StartedAt: utc(r.StartedAt.Time)}
	}
	if t := s.Terminated; t != nil {
		_, id := SplitContainerID(t.ContainerID)
		out.Terminated = &fact.Terminated{
			ExitCode:    t.ExitCode,
			Signal:      t.Signal,
			Reason:      t.Reason,
			Message:     t.Message,
			StartedAt:   utc(t.StartedAt.Time),
			FinishedAt:  utc(t.FinishedAt.Time),
			ContainerID: id,
		}
	}
	return out
}

// SplitContainerID splits a kubelet container ID such as
// "containerd://0123abcd" into its runtime ("containerd") and the runtime's
// own ID ("0123abcd"). An ID without a scheme is returned as is, with an
// empty runtime.
func SplitContainerID(s string) (runtime, id string) {
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		return scheme, rest
	}
	return "", s
}

// Container field path prefixes in Event.involvedObject.fieldPath, as the
// kubelet writes them: spec.containers{name}.
var fieldPathPrefixes = []string{
	"spec.containers{",
	"spec.initContainers{",
	"spec.ephemeralContainers{",
}

// ContainerFromFieldPath returns the container named by an involved object's
// field path (spec.containers{name}, spec.initContainers{name} or
// spec.ephemeralContainers{name}), or "".
func ContainerFromFieldPath(fp string) string {
	for _, p := range fieldPathPrefixes {
		rest, ok := strings.CutPrefix(fp, p)
		if !ok {
			continue
		}
		name, _, ok := strings.Cut(rest, "}")
		if !ok {
			return ""
		}
		return name
	}
	return ""
}

// ConvertEvent reduces a core/v1 Event to the correlator's K8sEvent. ok is
// false when the event is not about a pod. Both the old-style (source,
// first/lastTimestamp, count) and the events.k8s.io-style (reportingComponent,
// eventTime, series) fields are understood.
func ConvertEvent(ev *corev1.Event) (fact.K8sEvent, bool) {
	if ev == nil || ev.InvolvedObject.Kind != "Pod" {
		return fact.K8sEvent{}, false
	}
	obj := &ev.InvolvedObject
	out := fact.K8sEvent{
		UID:     string(ev.UID),
		PodUID:  string(obj.UID),
		PodName: obj.Name,
		// The Event object's own namespace, not involvedObject's (which
		// its author writes): the model lets only a pod's own namespace's
		// Events speak for it.
		Namespace: ev.Namespace,
		Type:      ev.Type,
		Reason:    ev.Reason,
		Message:   ev.Message,
		Source:    ev.Source.Component,
		Container: ContainerFromFieldPath(obj.FieldPath),
		Count:     ev.Count,
		Truncated: truncatedBytes(ev),
	}
	if out.Namespace == "" {
		out.Namespace = obj.Namespace
	}
	if out.Source == "" {
		out.Source = ev.ReportingController
	}

	first := ev.FirstTimestamp.Time
	last := ev.LastTimestamp.Time
	if first.IsZero() {
		first = ev.EventTime.Time
	}
	if ev.Series != nil {
		if ev.Series.Count > out.Count {
			out.Count = ev.Series.Count
		}
		if t := ev.Series.LastObservedTime.Time; t.After(last) {
			last = t
		}
	}
	if last.IsZero() {
		last = ev.EventTime.Time
	}
	if first.IsZero() {
		first = ev.CreationTimestamp.Time
	}
	if last.IsZero() {
		last = first
	}
	if first.IsZero() {
		first = last
	}
	out.FirstTime, out.LastTime = utc(first), utc(last)
	if out.Count <= 0 {
		out.Count = 1
	}
	return out, true
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func int64OrDefault(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

func int32OrDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

func cloneStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}
