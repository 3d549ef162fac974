package metrics

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// otherValue is the label value that values past a label's cap fold into.
	otherValue = "other"
	// maxLabelValueLen bounds one label value, in bytes. Kubernetes names
	// (namespaces, kinds) are at most 63 characters; anything longer is not a
	// name and is cut.
	maxLabelValueLen = 128
)

// labelLimiter bounds the distinct values of one label. Known values are
// always kept; up to limit further values are admitted first come, first
// served, and kept for the life of the process; every other value becomes
// "other". Admission is sticky, so a given value always maps to the same
// label value, which keeps gauges that go up and down (stuck pods) balanced.
type labelLimiter struct {
	label   string
	empty   string // what an empty value is reported as
	limit   int
	known   map[string]bool
	folded  prometheus.Counter
	mu      sync.Mutex
	dynamic map[string]struct{}
}

func newLabelLimiter(label, empty string, limit int, known []string, folded *prometheus.CounterVec) *labelLimiter {
	l := &labelLimiter{
		label:   label,
		empty:   empty,
		limit:   limit,
		known:   make(map[string]bool, len(known)),
		folded:  folded.WithLabelValues(label),
		dynamic: map[string]struct{}{},
	}
	for _, k := range known {
		l.known[k] = true
	}
	return l
}

// value maps v to the label value to record it under.
func (l *labelLimiter) value(v string) string { return l.admit(v, true) }

// zeroValue is value for a series created at zero, before any observation:
// it admits v the same way but does not count a fold, which is only counted
// for observations.
func (l *labelLimiter) zeroValue(v string) string { return l.admit(v, false) }

func (l *labelLimiter) admit(v string, countFold bool) string {
	v = sanitizeLabelValue(v)
	if v == "" {
		v = l.empty
	}
	if l.known[v] {
		return v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.dynamic[v]; ok {
		return v
	}
	if len(l.dynamic) < l.limit {
		l.dynamic[v] = struct{}{}
		return v
	}
	if countFold {
		l.folded.Inc()
	}
	return otherValue
}

// sanitizeLabelValue makes v a valid, short label value: client_golang
// panics on invalid UTF-8, and a runaway value must not bloat every scrape.
func sanitizeLabelValue(v string) string {
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	if len(v) <= maxLabelValueLen {
		return v
	}
	cut := maxLabelValueLen
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}

func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
