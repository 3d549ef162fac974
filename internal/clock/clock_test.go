package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// At the start the timeline reads as the wall clock; after a wall step it
// keeps counting the boot clock from the start's epoch, and node wall times
// read after the step map back onto it once re-measured.
func TestTimelineIgnoresWallSteps(t *testing.T) {
	for _, step := range []time.Duration{-time.Hour, time.Hour} {
		src := NewFake(5*time.Hour, t0)
		tl := New(src)
		if got := tl.Now(); !got.Equal(t0) {
			t.Fatalf("start: Now %v, want the wall clock %v", got, t0)
		}
		src.Advance(10 * time.Second)
		src.StepWall(step)
		src.Advance(5 * time.Second)
		want := t0.Add(15 * time.Second)
		if got := tl.Now(); !got.Equal(want) {
			t.Errorf("step %v: Now %v, want %v (15 s of boot clock)", step, got, want)
		}
		if got := tl.Wall(uint64((5*time.Hour + 15*time.Second).Nanoseconds())); !got.Equal(want) {
			t.Errorf("step %v: kernel stamp at %v, want %v", step, got, want)
		}
		// Before re-measuring, a node wall time is taken as it reads:
		// the step is not known yet.
		if got := tl.FromNode(src.Real()); !got.Equal(want.Add(step)) {
			t.Errorf("step %v, not re-measured: FromNode %v, want %v", step, got, want.Add(step))
		}
		if got := tl.Remeasure(); got != step {
			t.Errorf("Remeasure = %v, want %v", got, step)
		}
		if got := tl.FromNode(src.Real()); !got.Equal(want) {
			t.Errorf("step %v: FromNode(wall now) %v, want the timeline's now %v", step, got, want)
		}
		if got := tl.FromNode(time.Time{}); !got.IsZero() {
			t.Errorf("FromNode(zero) = %v, want zero", got)
		}
	}
}

// bracketSource reads a wide bracket first (a preemption between the
// reads), then narrow ones: the narrowest is kept.
type bracketSource struct {
	boots []time.Duration
	i     int
	real  time.Time
}

func (b *bracketSource) Boot() time.Duration { v := b.boots[b.i%len(b.boots)]; b.i++; return v }
func (b *bracketSource) Real() time.Time     { return b.real }

func TestEpochFromNarrowestBracket(t *testing.T) {
	src := &bracketSource{real: t0, boots: []time.Duration{
		time.Second, 3 * time.Second, // 2 s wide: midpoint 2 s
		10 * time.Second, 10*time.Second + 2*time.Microsecond, // narrowest
		20 * time.Second, 20*time.Second + time.Millisecond,
	}}
	tl := New(src)
	want := t0.Add(-(10*time.Second + time.Microsecond))
	if got := tl.Wall(1); !got.Equal(want.Add(1)) {
		t.Errorf("epoch %v, want %v (the narrowest bracket's midpoint)", got.Add(-1), want)
	}
}

func TestAPIOffset(t *testing.T) {
	recv := t0.Add(time.Hour)
	ms := time.Millisecond
	cases := []struct {
		name    string
		add     func(o *APIOffset)
		want    time.Duration
		samples int
	}{
		{"no samples: 0", func(*APIOffset) {}, 0, 0},
		{"synchronised, truncated second: 0", func(o *APIOffset) {
			o.SampleDeletion(recv.Add(-700*ms), recv) // deleted at .3xx, read .000
			o.SampleCreation(recv.Add(-40*time.Second), recv)
		}, 0, 2},
		{"API server 2 s ahead: the least sample", func(o *APIOffset) {
			o.SampleDeletion(recv.Add(2*time.Second-600*ms), recv) // d = -1.4 s
			o.SampleDeletion(recv.Add(2*time.Second-100*ms), recv) // d = -1.9 s
			o.SampleCreation(recv.Add(-3*time.Second), recv)
		}, -1900 * ms, 3},
		{"a creation alone proves the API ahead", func(o *APIOffset) {
			o.SampleCreation(recv.Add(3*time.Second), recv)
		}, -3 * time.Second, 1},
		{"API server 5 s behind: deletions over the truncation", func(o *APIOffset) {
			o.SampleDeletion(recv.Add(-5*time.Second-200*ms), recv)
			o.SampleDeletion(recv.Add(-5*time.Second-900*ms), recv)
		}, 4200 * ms, 2},
		{"creations never prove the API behind (scheduling, relists)", func(o *APIOffset) {
			o.SampleCreation(recv.Add(-72*time.Hour), recv)
			o.SampleCreation(recv.Add(-30*time.Second), recv)
		}, 0, 2},
		{"a creation bounds a deletion's estimate from above", func(o *APIOffset) {
			o.SampleDeletion(recv.Add(-10*time.Second), recv) // lower bound 9 s
			o.SampleCreation(recv.Add(-4*time.Second), recv)  // but s <= 4 s
		}, 4 * time.Second, 2},
		{"zero times are no samples", func(o *APIOffset) {
			o.SampleDeletion(time.Time{}, recv)
			o.SampleCreation(recv, time.Time{})
		}, 0, 0},
	}
	for _, tc := range cases {
		var o APIOffset
		tc.add(&o)
		if got := o.Offset(); got != tc.want {
			t.Errorf("%s: offset %v, want %v", tc.name, got, tc.want)
		}
		if got := o.Samples(); got != tc.samples {
			t.Errorf("%s: %d samples, want %d", tc.name, got, tc.samples)
		}
	}
}

// An API server's clock step is followed once the samples from before it
// leave the window (by count or by age); until then the minimum holds.
func TestAPIOffsetFollowsAStep(t *testing.T) {
	var o APIOffset
	at := t0
	for range maxSamples {
		at = at.Add(time.Second)
		o.SampleDeletion(at.Add(2*time.Second), at) // 2 s ahead
	}
	if got := o.Offset(); got != -2*time.Second {
		t.Fatalf("offset %v, want -2s", got)
	}
	// The API server's clock corrected: now in step (d = 0.3 s).
	for i := range maxSamples {
		if got := o.Offset(); got != -2*time.Second {
			t.Fatalf("after %d new samples: offset %v, want the old -2s until all %d old ones left", i, got, maxSamples)
		}
		at = at.Add(time.Second)
		o.SampleDeletion(at.Add(-300*time.Millisecond), at)
	}
	if got := o.Offset(); got != 0 {
		t.Errorf("offset %v after the window moved on, want 0", got)
	}
	if got := o.Samples(); got != maxSamples {
		t.Errorf("%d samples kept, want the cap %d", got, maxSamples)
	}
	// Age: one sample 11 minutes later expires all the others.
	o.SampleDeletion(at.Add(window+time.Minute+time.Second), at.Add(window+time.Minute))
	if got := o.Samples(); got != 1 {
		t.Errorf("%d samples after 11 quiet minutes, want 1", got)
	}
	if got := o.Offset(); got != -time.Second {
		t.Errorf("offset %v, want -1s (the one fresh sample)", got)
	}
}

// The system source: the boot clock runs, and a fresh timeline reads as the
// wall clock (no step measured on a machine whose clock did not just step).
func TestSystem(t *testing.T) {
	tl := New(System{})
	if d := time.Until(tl.Now()); d < -time.Second || d > time.Second {
		t.Errorf("timeline %v from the wall clock at start, want within 1s", d)
	}
	b := System{}.Boot()
	time.Sleep(2 * time.Millisecond)
	if (System{}).Boot() <= b {
		t.Error("the boot clock did not advance")
	}
	if s := tl.Remeasure(); s < -time.Second || s > time.Second {
		t.Errorf("step %v measured just after the start", s)
	}
}
