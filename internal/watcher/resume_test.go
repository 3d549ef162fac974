package watcher

import (
	"testing"
	"time"
)

// The pod watch's resource versions: one sample per change, the last
// resumeHorizon kept, the latest seen at or before a time found.
func TestRVHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	var h rvHistory
	h.note(t0, "100")
	h.note(t0.Add(time.Second), "100") // no change
	h.note(t0.Add(2*time.Second), "")  // not a number: ignored
	h.note(t0.Add(3*time.Second), "abc")
	h.note(t0.Add(10*time.Second), "150")
	if len(h.s) != 2 {
		t.Fatalf("samples %v, want 2", h.s)
	}
	for _, c := range []struct {
		at     time.Duration
		want   uint64
		wantOK bool
	}{
		{-time.Second, 0, false}, // before the first sample: nothing known
		{0, 100, true},
		{9 * time.Second, 100, true},
		{time.Minute, 150, true},
	} {
		got, ok := h.before(t0.Add(c.at))
		if ok != c.wantOK || got.rv != c.want {
			t.Errorf("before(t0%+v) = %v %v, want %d %v", c.at, got, ok, c.want, c.wantOK)
		}
	}
	// Past the horizon, old samples go (the newest stays).
	h.note(t0.Add(resumeHorizon+5*time.Second), "200")
	if len(h.s) != 2 || h.s[0].rv != 150 {
		t.Errorf("after the horizon: %v, want 150 and 200", h.s)
	}
}

// Where a pod's next window starts: after everything its window handed
// over, only if that window synced and never relisted.
func TestWindowStartNext(t *testing.T) {
	mk := func(from uint64, lists int32, handed ...string) *windowStart {
		ws := &windowStart{}
		ws.from.Store(from)
		ws.lists.Store(lists)
		for _, rv := range handed {
			ws.hand(rv)
		}
		return ws
	}
	for _, c := range []struct {
		name   string
		ws     *windowStart
		synced bool
		want   uint64
	}{
		{"listed, then Events handed over", mk(40, 1, "35", "52", "47"), true, 52},
		{"listed, nothing after", mk(40, 1, "12"), true, 40},
		{"not synced: its list may not all be handed over", mk(40, 1, "52"), false, 0},
		{"relisted", mk(40, 2, "52"), true, 0},
		{"never listed", mk(0, 0), true, 0},
	} {
		if got := c.ws.next(c.synced); got != c.want {
			t.Errorf("%s: next = %d, want %d", c.name, got, c.want)
		}
	}
}
