package cri

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podchron/podchron/internal/chans"
	crifact "github.com/podchron/podchron/internal/fact/cri"
)

// WatchConfig configures a Watcher.
type WatchConfig struct {
	// Endpoint of the runtime; "" auto-detects (see Dial) on every
	// (re)connect.
	Endpoint string
	// Interval between polls while the runtime answers (default 1s).
	Interval time.Duration
	// BackoffMin and BackoffMax bound the exponential reconnect backoff
	// (defaults 250ms and 10s). Each wait is jittered by ±20%.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// DialOptions are passed to Dial (the logger is added automatically).
	DialOptions []Option
	// OnGap, if set, is called (from the watcher goroutine) with every
	// completed gap, in addition to the EventRuntimeAvailable event.
	OnGap func(crifact.Gap)
	// Kick, when it receives, asks for polls sooner than Interval: one
	// KickDelay later, then KickFollowUps more every KickDelay*2 (the
	// runtime records a container's exit a little after the kernel saw
	// it: containerd 1.6 under load took up to ~0.4 s, so the polls cover
	// +50 to +550 ms). The kernel's view of a container's end sends it, so
	// the runtime's exit reason follows in a fraction of a second rather
	// than up to a whole Interval.
	Kick <-chan struct{}
	// KickDelay (default 50ms) and KickFollowUps (default 5).
	KickDelay     time.Duration
	KickFollowUps int
	// Poll, when it receives, asks for one poll now, with no follow-ups,
	// and at most one such poll every PollGap (default 100ms; requests in
	// between wait for the gap's end and coalesce). The model holds
	// another source's fact until the runtime's view has passed its time
	// (the runtime's progress is a poll's snapshot time), so the API
	// server's word on a pod (its deletion, Ready) would otherwise wait
	// up to an Interval for the next poll: the pipeline sends it for each
	// pod update (pipeline.Config.RuntimePoll).
	Poll    <-chan struct{}
	PollGap time.Duration
	// NoEventStream: poll only. By default the watcher also reads the
	// runtime's container event stream (StreamEvents) where it has one,
	// and polls at once on each event: the runtime's facts (a container
	// created, started, exited, removed) follow in milliseconds instead of
	// up to an Interval. The polls go on at Interval either way: they are
	// the runtime's progress (pipeline.RuntimeSource) and the facts'
	// only source.
	NoEventStream bool
}

// streamRetry: a broken event stream (not an absent one) is opened again
// at a poll at least this long after it broke.
const streamRetry = 10 * time.Second

// Watcher polls the runtime, diffs successive snapshots and emits Events.
// While the runtime cannot be reached it reconnects with exponential backoff
// and reports the gap (EventRuntimeUnavailable, then EventRuntimeAvailable). Changes
// that happened during a gap are emitted on recovery with PhaseResync; the
// runtime keeps its state across restarts (containerd's shims outlive it), so
// exits during a gap are still reported with their real finish time.
type Watcher struct {
	cfg WatchConfig
	log *slog.Logger

	mu     sync.Mutex
	latest *Snapshot
	client *Client
	kicks  atomic.Uint64
	asked  atomic.Uint64 // polls asked for on Poll
	polls  atomic.Uint64 // polls made (successful or not)

	// The runtime's container event stream, while a client is connected
	// (ensureStream); mu guards the fields above noStream.
	streamKick   chan struct{} // an event asks for a poll (capacity 1: events coalesce)
	streamCancel context.CancelFunc
	streamDone   chan struct{} // closed when the stream's goroutine returns
	streamEnded  time.Time     // when a broken stream ended
	noStream     atomic.Bool   // the connected runtime has no stream
	streamed     atomic.Uint64 // events received
}

// NewWatcher returns a Watcher; call Run to start it.
func NewWatcher(cfg WatchConfig) *Watcher {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = 250 * time.Millisecond
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(10*time.Second, cfg.BackoffMin)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.KickDelay <= 0 {
		cfg.KickDelay = 50 * time.Millisecond
	}
	if cfg.KickFollowUps <= 0 {
		cfg.KickFollowUps = 5
	}
	if cfg.PollGap <= 0 {
		cfg.PollGap = 100 * time.Millisecond
	}
	return &Watcher{cfg: cfg, log: cfg.Logger.With("component", "cri-watch"), streamKick: make(chan struct{}, 1)}
}

// Polls is how many polls the watcher has made.
func (w *Watcher) Polls() uint64 { return w.polls.Load() }

// AskedPolls is how many polls requests on WatchConfig.Poll brought on.
func (w *Watcher) AskedPolls() uint64 { return w.asked.Load() }

// StreamedEvents is how many container events the runtime's stream brought
// (each a poll at once).
func (w *Watcher) StreamedEvents() uint64 { return w.streamed.Load() }

// Latest returns the most recent successful snapshot (nil before the first).
func (w *Watcher) Latest() *Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest
}

// Watch starts a Watcher in a goroutine owned by ctx and returns its event
// channel, which is closed once the goroutine has exited after ctx is done.
// buffer is the channel capacity.
func Watch(ctx context.Context, cfg WatchConfig, buffer int) (<-chan crifact.Event, *Watcher) {
	w := NewWatcher(cfg)
	ch := make(chan crifact.Event, buffer)
	go func() {
		defer close(ch)
		_ = w.Run(ctx, ch)
	}()
	return ch, w
}

// Run polls until ctx is done, sending events to out (blocking; a slow
// consumer slows polling down, it never loses events). It returns ctx.Err()
// once ctx is done, after closing its connection. Run does not close out.
func (w *Watcher) Run(ctx context.Context, out chan<- crifact.Event) error {
	defer w.closeClient()
	r := &run{w: w, out: out, backoff: w.cfg.BackoffMin}
	for {
		r.lastPoll = time.Now()
		w.polls.Add(1)
		snap, err := w.poll(ctx, r.prev)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ok bool
		if err != nil {
			ok = r.failed(ctx, err)
		} else {
			ok = r.polled(ctx, snap)
		}
		if !ok {
			return ctx.Err()
		}
	}
}

// run is the state of one Watcher.Run.
type run struct {
	w        *Watcher
	out      chan<- crifact.Event
	prev     *Snapshot
	gap      *crifact.Gap
	backoff  time.Duration
	fast     int       // kicked polls still to come
	lastPoll time.Time // when the last poll began
}

// failed reports a failed poll (the start of a gap, once) and waits out the
// backoff; false once ctx is done.
func (r *run) failed(ctx context.Context, err error) bool {
	w := r.w
	w.closeClient()
	now := time.Now()
	if r.gap == nil {
		r.gap = &crifact.Gap{Since: now, Err: err, Attempts: 1}
		if r.prev != nil {
			r.gap.LastSeen = r.prev.Time
		}
		w.log.Warn("container runtime unavailable", "endpoint", w.cfg.Endpoint, "err", err)
		g := *r.gap
		if !chans.Send(ctx, r.out, crifact.Event{Type: crifact.EventRuntimeUnavailable, At: now, Observed: now, Gap: &g}) {
			return false
		}
	} else {
		r.gap.Attempts++
		w.log.Debug("container runtime still unavailable", "attempts", r.gap.Attempts, "err", err)
	}
	if !sleep(ctx, jitter(r.backoff)) {
		return false
	}
	r.backoff = min(r.backoff*2, w.cfg.BackoffMax)
	return true
}

// polled sends a successful poll's changes (after the end of a gap, if one
// was open), publishes its snapshot and waits for the next poll; false once
// ctx is done.
func (r *run) polled(ctx context.Context, snap *Snapshot) bool {
	w := r.w
	r.backoff = w.cfg.BackoffMin
	phase := crifact.PhaseLive
	switch {
	case r.prev == nil:
		phase = crifact.PhaseInitial
	case r.gap != nil:
		phase = crifact.PhaseResync
	}
	if r.gap != nil && !r.gapEnded(ctx, snap) {
		return false
	}
	for _, ev := range Diff(r.prev, snap, phase) {
		if !chans.Send(ctx, r.out, ev) {
			return false
		}
	}
	r.prev = snap
	w.mu.Lock()
	w.latest = snap
	w.mu.Unlock()
	var ok bool
	r.fast, ok = w.wait(ctx, r.fast, r.lastPoll)
	return ok
}

// gapEnded closes the open gap at snap's time and reports it; false once
// ctx is done.
func (r *run) gapEnded(ctx context.Context, snap *Snapshot) bool {
	w := r.w
	r.gap.Until = snap.Time
	g := *r.gap
	r.gap = nil
	w.log.Info("container runtime available again", "gap_since", g.Since, "gap_until", g.Until,
		"gap", g.Duration(), "attempts", g.Attempts)
	if w.cfg.OnGap != nil {
		w.cfg.OnGap(g)
	}
	return chans.Send(ctx, r.out, crifact.Event{Type: crifact.EventRuntimeAvailable, At: g.Until, Observed: g.Until, Gap: &g})
}

// wait sleeps until the next poll: Interval, or sooner after a kick or a
// request (see WatchConfig.Kick and Poll). fast is how many kicked polls
// are still due, last when the last poll began; it returns the count
// after this wait, and false once ctx is done.
func (w *Watcher) wait(ctx context.Context, fast int, last time.Time) (int, bool) {
	d := w.cfg.Interval
	if fast > 0 {
		d = min(d, 2*w.cfg.KickDelay)
		fast--
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return fast, true
	case <-ctx.Done():
		return 0, false
	case <-w.cfg.Kick:
		w.kicks.Add(1)
		return w.cfg.KickFollowUps, sleep(ctx, w.cfg.KickDelay)
	case <-w.streamKick:
		// The runtime has recorded the change it streamed: poll now.
		return fast, true
	case <-w.cfg.Poll:
		w.asked.Add(1)
		return fast, sleep(ctx, w.cfg.PollGap-time.Since(last))
	}
}

func (w *Watcher) poll(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	w.mu.Lock()
	c := w.client
	w.mu.Unlock()
	if c == nil {
		opts := append([]Option{WithLogger(w.cfg.Logger)}, w.cfg.DialOptions...)
		var err error
		c, err = Dial(ctx, w.cfg.Endpoint, opts...)
		if err != nil {
			return nil, err
		}
		w.mu.Lock()
		w.client = c
		w.mu.Unlock()
		w.log.Info("connected to container runtime", "endpoint", c.Endpoint(),
			"runtime", c.RuntimeVersion().Name, "runtime_version", c.RuntimeVersion().Version)
	}
	w.ensureStream(ctx, c)
	return c.Snapshot(ctx, prev)
}

// ensureStream reads c's container event stream in a goroutine that
// closeClient stops (and Run's end, through it), unless one runs, the
// runtime has none, or a broken one ended less than streamRetry ago.
func (w *Watcher) ensureStream(ctx context.Context, c *Client) {
	if w.cfg.NoEventStream || w.noStream.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.streamDone != nil {
		select {
		case <-w.streamDone:
			if time.Since(w.streamEnded) < streamRetry {
				return
			}
		default:
			return // running
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.streamCancel, w.streamDone = cancel, done
	go func() {
		defer close(done)
		err := c.StreamEvents(sctx, func(*runtimeapi.ContainerEventResponse) {
			w.streamed.Add(1)
			select {
			case w.streamKick <- struct{}{}:
			default: // a poll is already asked for
			}
		})
		switch {
		case sctx.Err() != nil:
		case errors.Is(err, ErrNoEventStream):
			w.noStream.Store(true)
			w.log.Info("the runtime does not stream container events: polling only", "interval", w.cfg.Interval)
		default:
			w.mu.Lock()
			w.streamEnded = time.Now()
			w.mu.Unlock()
			w.log.Warn("container event stream broke: polling only until it is opened again", "err", err, "retry_after", streamRetry)
		}
	}()
}

// stopStream stops the event stream's goroutine and waits for it.
func (w *Watcher) stopStream() {
	w.mu.Lock()
	cancel, done := w.streamCancel, w.streamDone
	w.streamCancel, w.streamDone = nil, nil
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	// Whoever answers the next connection may stream (an upgraded runtime).
	w.noStream.Store(false)
}

func (w *Watcher) closeClient() {
	w.stopStream()
	w.mu.Lock()
	c := w.client
	w.client = nil
	w.mu.Unlock()
	if c != nil {
		if err := c.Close(); err != nil && !errors.Is(err, context.Canceled) {
			w.log.Debug("closing CRI client", "err", err)
		}
	}
}

func jitter(d time.Duration) time.Duration {
	// ±20%
	f := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * f)
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
