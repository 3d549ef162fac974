package correlate

import (
	"fmt"
	"regexp"

	"github.com/podchron/podchron/internal/measure"
)

// Filter decides which pods are traced: a pod in a namespace that Include
// does not match, or that Exclude matches, or that opts out
// (fact.OptOutAnnotation), gives no span and no metric. The model still follows
// it (its processes, its cgroups), so nothing else is confused by it. A
// pod whose namespace is not known yet (no API server, no runtime word) is
// traced.
type Filter struct {
	Include *regexp.Regexp // nil: every namespace
	Exclude *regexp.Regexp // nil: none
}

// podFilter caches the namespace filter's verdict for the namespace last
// seen: a signal flood asks per event.
type podFilter struct {
	filteredNS string
	filteredIn bool
}

// NewFilter compiles namespace patterns, each matched against the whole
// namespace name ("" for none).
func NewFilter(include, exclude string) (Filter, error) {
	var f Filter
	var err error
	if include != "" {
		if f.Include, err = regexp.Compile("^(?:" + include + ")$"); err != nil {
			return f, fmt.Errorf("namespace include pattern: %w", err)
		}
	}
	if exclude != "" {
		if f.Exclude, err = regexp.Compile("^(?:" + exclude + ")$"); err != nil {
			return f, fmt.Errorf("namespace exclude pattern: %w", err)
		}
	}
	return f, nil
}

// traced tells whether a pod's spans and metrics are made.
func (c *Correlator) traced(p *pod) bool {
	if p == nil {
		return true
	}
	if p.info != nil && p.info.OptOut {
		return false
	}
	ns := p.namespace()
	if ns == "" {
		return true
	}
	if ns != p.filteredNS {
		f := c.cfg.Filter
		p.filteredNS = ns
		p.filteredIn = (f.Include == nil || f.Include.MatchString(ns)) && (f.Exclude == nil || !f.Exclude.MatchString(ns))
	}
	return p.filteredIn
}

// observer is where a pod's measurements go: nowhere for a pod not traced.
func (c *Correlator) observer(p *pod) measure.Observer {
	if !c.traced(p) {
		return measure.NopObserver{}
	}
	return c.cfg.Observer
}
