package correlate

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// emit sends a span once.
func (c *Correlator) emit(p *pod, s span.Span) {
	key := s.SpanID.String()
	if p.emitted[key] {
		return
	}
	p.emitted[key] = true
	if _, ok := c.prior[s.SpanID]; ok {
		// The previous instance on this node emitted this span ID
		// (Config.Emitted): told once, by it.
		c.miss(names.MissEmittedBeforeRestart)
		return
	}
	if !c.traced(p) {
		c.stats.SpansFiltered++
		return
	}
	s.TraceID = p.trace
	s.Resource = c.resource(p)
	if p.eventsLost > 0 {
		s.Attrs = append(s.Attrs, span.Int(names.EventsLost, int64(p.eventsLost)))
	}
	if d := c.degradedDuring(s.Start, s.End); d != "" {
		s.Attrs = append(s.Attrs, span.String(names.Degraded, d))
	}
	if !p.observedFrom.IsZero() {
		s.Attrs = append(s.Attrs, span.String(names.ObservedFrom, p.observedFrom.UTC().Format(time.RFC3339Nano)))
	}
	if s.End.Before(s.Start) {
		s.End = s.Start
	}
	if s.Status == span.StatusError {
		s.Attrs = append(s.Attrs, span.String(names.ErrorType, errorType(s)))
	}
	s.Attrs = c.commandArgs(s.Attrs)
	boundText(&s)
	boundSize(&s)
	c.stats.SpansEmitted++
	c.cfg.Sink.Emit(s)
}

// resource is the OTel resource of every span in the pod's trace.
func (c *Correlator) resource(p *pod) []span.Attr {
	r := []span.Attr{span.String(names.K8sPodUID, p.uid)}
	if p.info != nil && p.info.ConfigUID != "" && p.info.UID != p.uid {
		// A static pod: its own UID above, its mirror object's here.
		r = append(r, span.String(names.PodMirrorUID, p.info.UID))
	}
	if n := p.name(); n != "" {
		r = append(r, span.String(names.K8sPodName, n))
	}
	if ns := p.namespace(); ns != "" {
		r = append(r, span.String(names.K8sNamespaceName, ns))
	}
	if c.cfg.NodeName != "" {
		r = append(r, span.String(names.K8sNodeName, c.cfg.NodeName))
	}
	if c.cfg.ClusterName != "" {
		r = append(r, span.String(names.K8sClusterName, c.cfg.ClusterName))
	}
	if p.info != nil {
		r = append(r, ownerResource(p.info)...)
		for _, k := range slices.Sorted(maps.Keys(p.info.Labels)) {
			r = append(r, span.String(names.K8sPodLabelPrefix+k, p.info.Labels[k]))
		}
	}
	return r
}

// ownerResource names the pod's controller with the semantic conventions'
// keys: k8s.replicaset.*, and k8s.deployment.name when the ReplicaSet's
// name is a Deployment's plus the pod's template hash; k8s.statefulset.*,
// k8s.daemonset.*, k8s.job.*. (A Job's CronJob is not in the pod's object.)
func ownerResource(info *fact.PodInfo) []span.Attr {
	var r []span.Attr
	add := func(nameKey, uidKey string) {
		r = append(r, span.String(nameKey, info.OwnerName))
		if info.OwnerUID != "" && uidKey != "" {
			r = append(r, span.String(uidKey, info.OwnerUID))
		}
	}
	switch info.OwnerKind {
	case "ReplicaSet":
		add(names.K8sReplicaSetName, names.K8sReplicaSetUID)
		if h := info.TemplateHash; h != "" && strings.HasSuffix(info.OwnerName, "-"+h) {
			r = append(r, span.String(names.K8sDeploymentName, strings.TrimSuffix(info.OwnerName, "-"+h)))
		}
	case "StatefulSet":
		add(names.K8sStatefulSetName, names.K8sStatefulSetUID)
	case "DaemonSet":
		add(names.K8sDaemonSetName, names.K8sDaemonSetUID)
	case "Job":
		add(names.K8sJobName, names.K8sJobUID)
	}
	return r
}

// errorType is an error span's error.type: a low-cardinality class, the
// span's own cause or reason when it has one (an exit cause, a start-up
// outcome, a waiting reason, a probe result), else "_OTHER" (semconv's
// fallback).
func errorType(s span.Span) string {
	for _, k := range []string{names.ExitCause, names.StartupOutcome, names.WaitingReason, names.ProbeResult} {
		if v, ok := s.Attr(k).(string); ok && v != "" {
			return v
		}
	}
	if s.Name == names.SpanPodTermination || s.Name == names.SpanContainerStop {
		if v, ok := s.Attr(names.GracePeriodOverrun).(bool); ok && v {
			return "grace_period_overrun"
		}
	}
	return "_OTHER"
}

// commandArgs applies Config.Args to a span's command line: the one place
// argv leaves the model.
func (c *Correlator) commandArgs(attrs []span.Attr) []span.Attr {
	for i := 0; i < len(attrs); i++ {
		if attrs[i].Key != names.ProcessCommandArgs {
			continue
		}
		args, _ := attrs[i].Value.([]string)
		if kept := c.cfg.Args.Args(args); len(kept) > 0 {
			attrs[i] = span.Strings(names.ProcessCommandArgs, kept...)
		} else {
			attrs = append(attrs[:i], attrs[i+1:]...)
			i--
		}
	}
	return attrs
}
