package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// APIOffset measures what to add to an API server time to place it on the
// timeline: the API server's clock against ours, from facts the watch
// delivers shortly after the API server stamped them. Each sample is
// d = (when the fact reached us, on the timeline) - (the API server's time
// of it) = latency + s, where s is the offset wanted and latency >= 0, less
// the API's whole-second truncation (metav1.Time drops the fraction: a
// time stamped at 12:00:00.9 reads 12:00:00, adding up to 1 s to d).
//
//   - Every sample bounds s from above (s <= d): the minimum of the recent
//     samples, when negative, proves the API server's clock ahead of ours
//     by at least that much, and that is the offset (a node 2 s behind
//     gets about -2 s, the truncation making it up to 1 s less).
//   - Only a deletion (deletionTimestamp - grace, sent to the node's watch
//     within milliseconds) bounds it from below: s >= d - 1 s (the
//     truncation), so a minimum of the deletions' samples over 1 s proves
//     the API server behind by at least the excess. A creation's sample
//     bounds nothing from below: a pod reaches this node's watch after its
//     scheduling, which can take minutes, and a pod listed at start or on a
//     relist may be days old.
//   - Within [0, 1 s] nothing is proved and the offset is 0: synchronised
//     clocks keep today's API times (the model sharpens them by when it saw
//     them, correlate's sharpenAPITimes).
//
// Recent: the last maxSamples samples received within window of the
// newest, so an API server's clock step (or, where the API server shares
// the node's clock, the node's) is followed once the older samples expire.
// Without samples the offset is 0.
type APIOffset struct {
	mu      sync.Mutex
	samples []apiSample // oldest first, at most maxSamples
	offset  atomic.Int64
}

type apiSample struct {
	at       time.Time // received, on the timeline
	d        time.Duration
	deletion bool
}

const (
	maxSamples = 32
	window     = 10 * time.Minute
	truncation = time.Second
)

// SampleCreation takes a pod's creationTimestamp received at recv (on the
// timeline) in a pod first seen then.
func (o *APIOffset) SampleCreation(created, recv time.Time) { o.add(created, recv, false) }

// SampleDeletion takes a deletion's request time (deletionTimestamp less the
// grace period) received at recv (on the timeline) in the update that first
// carried it.
func (o *APIOffset) SampleDeletion(requested, recv time.Time) { o.add(requested, recv, true) }

func (o *APIOffset) add(api, recv time.Time, deletion bool) {
	if api.IsZero() || recv.IsZero() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.samples = append(o.samples, apiSample{at: recv, d: recv.Sub(api), deletion: deletion})
	keep := o.samples[:0]
	for i, s := range o.samples {
		if len(o.samples)-i <= maxSamples && recv.Sub(s.at) <= window {
			keep = append(keep, s)
		}
	}
	clear(o.samples[len(keep):])
	o.samples = keep
	o.offset.Store(int64(estimate(o.samples)))
}

// estimate is the offset the samples prove (see APIOffset).
func estimate(samples []apiSample) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	upper := samples[0].d
	var lower time.Duration
	haveDel := false
	for _, s := range samples {
		upper = min(upper, s.d)
		if s.deletion && (!haveDel || s.d < lower) {
			lower, haveDel = s.d, true
		}
	}
	switch {
	case upper < 0:
		return upper
	case haveDel && lower > truncation:
		return min(upper, lower-truncation)
	}
	return 0
}

// Offset is what to add to an API server time to place it on the timeline.
func (o *APIOffset) Offset() time.Duration { return time.Duration(o.offset.Load()) }

// Samples is how many samples the offset stands on now.
func (o *APIOffset) Samples() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.samples)
}
