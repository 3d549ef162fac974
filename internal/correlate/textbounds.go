package correlate

import (
	"slices"
	"strings"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// Bounded bytes. The caps in bounds.go bound how many things a pod keeps;
// these bound how large they are. Tenant text is cut to fact's byte caps
// (fact.MaxEventMessage, ...) where it enters the model when it is kept
// (Kubernetes Events, which a tenant can create by the hundred) and at emit
// for the rest, and what is cut is counted on the span that carries it
// (podchron.text.truncated_bytes). Then each span is held under
// maxSpanBytes, an estimate of its encoded size: over it, its last events
// go first, then its largest attributes that do not say whose or what the
// span is, counted (podchron.span.events_dropped,
// podchron.span.truncated_bytes). A collector rejects a whole batch for one
// span over its message limit (4 MiB by default); no span gets near it.
const (
	// maxSpanBytes: a span's estimated encoded size.
	maxSpanBytes = 256 << 10
	// attrOverhead, eventOverhead, spanOverhead: the estimate's protobuf
	// framing per attribute (tags, lengths, the AnyValue), per event (its
	// time and framing) and per span (IDs, times, kind, status).
	attrOverhead  = 8
	eventOverhead = 16
	spanOverhead  = 64
)

// boundEvent cuts a Kubernetes Event's reason and message to their caps
// before the model keeps or holds it, adding what was cut to its Truncated
// count. The input is not changed: a cut Event is a copy.
func boundEvent(ev *fact.K8sEvent) *fact.K8sEvent {
	reason, cutR := fact.Truncate(ev.Reason, fact.MaxEventReason)
	msg, cutM := fact.Truncate(ev.Message, fact.MaxEventMessage)
	if cutR+cutM == 0 {
		return ev
	}
	cp := *ev
	cp.Reason, cp.Message = reason, msg
	cp.Truncated += cutR + cutM
	return &cp
}

// eventCut is the attribute that counts what was cut from an Event's text,
// none when nothing was.
func eventCut(ev *fact.K8sEvent) []span.Attr {
	if ev.Truncated <= 0 {
		return nil
	}
	return []span.Attr{span.Int(names.TextTruncatedBytes, int64(ev.Truncated))}
}

// textCap is the byte cap of a tenant-text attribute key, 0 for keys that
// are not tenant text.
func textCap(key string) int {
	switch {
	case key == names.Message:
		return fact.MaxMessage
	case key == names.K8sEventReason:
		return fact.MaxEventReason
	case strings.HasPrefix(key, names.K8sPodLabelPrefix):
		return fact.MaxLabelValue
	}
	return 0
}

// boundAttrs cuts the tenant text among attrs to its caps and takes out the
// truncation counts already there (an Event cut when it came in); it
// returns the attributes (attrs itself when unchanged: a span's attributes
// may share memory with the model's state) and the bytes cut, those counts
// included.
func boundAttrs(attrs []span.Attr) ([]span.Attr, int) {
	var out []span.Attr
	total := 0
	for i, a := range attrs {
		b, cut, counted := boundAttr(a)
		total += cut
		if out == nil && (counted || cut > 0) {
			out = slices.Clone(attrs[:i])
		}
		if out != nil && !counted {
			out = append(out, b)
		}
	}
	if out == nil {
		return attrs, total
	}
	return out, total
}

// boundAttr cuts one attribute; counted is true for a truncation count
// (whose value is cut).
func boundAttr(a span.Attr) (_ span.Attr, cut int, counted bool) {
	if a.Key == names.TextTruncatedBytes {
		n, _ := a.Value.(int64)
		return a, int(n), true
	}
	if a.Key == names.ProcessCommandArgs {
		args, _ := a.Value.([]string)
		kept, cut := fact.TruncateArgs(args, fact.MaxArgs)
		return span.Attr{Key: a.Key, Value: kept}, cut, false
	}
	s, ok := a.Value.(string)
	limit := textCap(a.Key)
	if !ok || limit == 0 {
		return a, 0, false
	}
	kept, cut := fact.Truncate(s, limit)
	return span.String(a.Key, kept), cut, false
}

// boundText cuts a span's tenant text (its attributes, its events', its
// resource's labels, its status message) to the caps and counts what was
// cut, on the span and on each event that lost some.
func boundText(s *span.Span) {
	var total, cut int
	s.Attrs, total = boundAttrs(s.Attrs)
	s.Resource, cut = boundAttrs(s.Resource)
	total += cut
	s.StatusMessage, cut = fact.Truncate(s.StatusMessage, fact.MaxMessage)
	total += cut
	var events []span.SpanEvent
	for i, ev := range s.Events {
		attrs, cut := boundAttrs(ev.Attrs)
		if cut == 0 {
			if events != nil {
				events = append(events, ev)
			}
			continue
		}
		if events == nil {
			events = slices.Clone(s.Events[:i])
		}
		ev.Attrs = append(slices.Clip(attrs), span.Int(names.TextTruncatedBytes, int64(cut)))
		events = append(events, ev)
		total += cut
	}
	if events != nil {
		s.Events = events
	}
	if total > 0 {
		s.Attrs = append(s.Attrs[:len(s.Attrs):len(s.Attrs)], span.Int(names.TextTruncatedBytes, int64(total)))
	}
}

// attrSize estimates an attribute's encoded bytes.
func attrSize(a span.Attr) int {
	n := len(a.Key) + attrOverhead
	switch v := a.Value.(type) {
	case string:
		n += len(v)
	case []string:
		for _, s := range v {
			n += len(s) + 2
		}
	default:
		n += 8
	}
	return n
}

func attrsSize(attrs []span.Attr) int {
	n := 0
	for _, a := range attrs {
		n += attrSize(a)
	}
	return n
}

func eventSize(ev span.SpanEvent) int {
	return len(ev.Name) + eventOverhead + attrsSize(ev.Attrs)
}

// spanSize estimates a span's encoded bytes: what the model puts in it,
// with protobuf's framing approximated.
func spanSize(s *span.Span) int {
	n := spanOverhead + len(s.Name) + len(s.StatusMessage) + attrsSize(s.Attrs) + attrsSize(s.Resource)
	for _, ev := range s.Events {
		n += eventSize(ev)
	}
	return n
}

// identityAttr: attributes that say whose or what a span is, never dropped
// to fit the span cap.
func identityAttr(key string) bool {
	return strings.HasPrefix(key, "k8s.pod.") || key == names.ContainerID || key == names.K8sContainerName ||
		key == names.ExitCause || key == names.TextTruncatedBytes
}

// boundSize holds a span under maxSpanBytes: its last events go first (the
// first ones tell how the story began), then its largest attributes but
// the identity ones; what went is counted on the span.
func boundSize(s *span.Span) {
	size := spanSize(s)
	if size <= maxSpanBytes {
		return
	}
	// Room for the counts themselves.
	budget := maxSpanBytes - 2*(len(names.SpanTruncatedBytes)+attrOverhead+8)
	dropped, kept := 0, len(s.Events)
	for kept > 0 && size > budget {
		kept--
		size -= eventSize(s.Events[kept])
		dropped += eventSize(s.Events[kept])
	}
	eventsDropped := len(s.Events) - kept
	s.Events = s.Events[:kept:kept]
	attrs := slices.Clone(s.Attrs)
	for size > budget {
		i := largestDroppable(attrs)
		if i < 0 {
			break
		}
		size -= attrSize(attrs[i])
		dropped += attrSize(attrs[i])
		attrs = slices.Delete(attrs, i, i+1)
	}
	if eventsDropped > 0 {
		attrs = append(attrs, span.Int(names.SpanEventsDropped, int64(eventsDropped)))
	}
	attrs = append(attrs, span.Int(names.SpanTruncatedBytes, int64(dropped)))
	s.Attrs = attrs
}

// largestDroppable is the index of the largest attribute that is not an
// identity one, -1 if none.
func largestDroppable(attrs []span.Attr) int {
	best, bestSize := -1, 0
	for i, a := range attrs {
		if identityAttr(a.Key) {
			continue
		}
		if n := attrSize(a); n > bestSize {
			best, bestSize = i, n
		}
	}
	return best
}
