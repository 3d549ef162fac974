package metrics

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/podchron/podchron/internal/names"
)

// podchron's sources, by their component names (names.Source's label
// spellings). Only the kernel is required for readiness.
var (
	SourceKernel    = names.SourceKernel.Label()
	SourceRuntime   = names.SourceRuntime.Label()
	SourceAPIServer = names.SourceAPI.Label()
)

// DefaultStaleAfter is how long /healthz tolerates no heartbeat.
const DefaultStaleAfter = 30 * time.Second

// HealthOptions configures a Health. Zero fields take defaults.
type HealthOptions struct {
	// StaleAfter: /healthz fails once the last heartbeat is older than this
	// (default DefaultStaleAfter). The main loop must beat at least every
	// StaleAfter/2, idle or not (it gets a tick input when nothing happens).
	StaleAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger logs source transitions (default slog.Default()).
	Logger *slog.Logger
}

// Health tracks podchron's liveness and readiness.
//
// Liveness is a heartbeat: the main loop calls Beat, and /healthz fails once
// the beat is stale (the loop is wedged; the kubelet should restart us).
//
// Readiness needs the kernel source only. The container runtime and the API
// server are optional: when either is down podchron is degraded, not unready.
// It keeps tracing from kernel facts (processes, signals, OOM kills, cgroups,
// CNI runs are all seen in the kernel) and fills in names and pod state once
// the source is back; marking the pod unready would only hide a working
// tracer, and the API server being down is exactly when node-level facts are
// most wanted. Degraded sources show in /readyz's body and in
// podchron_source_up.
//
// Health is safe for concurrent use.
type Health struct {
	staleAfter time.Duration
	now        func() time.Time
	log        *slog.Logger

	mu       sync.Mutex
	lastBeat time.Time
	comps    map[string]*component
}

type component struct {
	required bool
	ready    bool
	reason   string
}

// NewHealth makes a Health with the kernel (required), runtime and API
// server (optional) sources, all not ready ("starting"). The heartbeat
// starts now, so a loop that never beats fails /healthz after StaleAfter.
func NewHealth(opts HealthOptions) *Health {
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Health{
		staleAfter: opts.StaleAfter,
		now:        opts.Now,
		log:        opts.Logger,
		lastBeat:   opts.Now(),
		comps: map[string]*component{
			SourceKernel:    {required: true, reason: "starting"},
			SourceRuntime:   {reason: "starting"},
			SourceAPIServer: {reason: "starting"},
		},
	}
}

// SetReady records whether component name is ready, with a reason (why it
// is down, or a note). Names other than the three sources are added as
// optional components; they must come from code, never from data.
func (h *Health) SetReady(name string, ready bool, reason string) {
	h.mu.Lock()
	c, ok := h.comps[name]
	if !ok {
		c = &component{}
		h.comps[name] = c
	}
	changed := !ok || c.ready != ready
	c.ready, c.reason = ready, reason
	required := c.required
	h.mu.Unlock()
	switch {
	case !changed:
	case ready:
		h.log.Info("source up", "source", name, "reason", reason)
	case required:
		h.log.Warn("required source down; not ready", "source", name, "reason", reason)
	default:
		h.log.Warn("optional source down; degraded, tracing from the other sources", "source", name, "reason", reason)
	}
}

// Beat records that the main loop is alive.
func (h *Health) Beat() {
	now := h.now()
	h.mu.Lock()
	h.lastBeat = now
	h.mu.Unlock()
}

// Alive tells whether the last heartbeat is recent, and its age.
func (h *Health) Alive() (bool, time.Duration) {
	h.mu.Lock()
	age := h.now().Sub(h.lastBeat)
	h.mu.Unlock()
	return age <= h.staleAfter, age
}

// ComponentStatus is one component's state.
type ComponentStatus struct {
	Name     string
	Required bool
	Ready    bool
	Reason   string
}

// Status reports every component, the three sources first, then the others
// by name; ready is true when every required component is.
func (h *Health) Status() (ready bool, comps []ComponentStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ready = true
	for name, c := range h.comps {
		comps = append(comps, ComponentStatus{Name: name, Required: c.required, Ready: c.ready, Reason: c.reason})
		if c.required && !c.ready {
			ready = false
		}
	}
	rank := func(n string) int {
		if i := slices.IndexFunc(names.Sources(), func(s names.Source) bool { return s.Label() == n }); i >= 0 {
			return i
		}
		return len(names.Sources())
	}
	slices.SortFunc(comps, func(a, b ComponentStatus) int {
		if d := rank(a.Name) - rank(b.Name); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return ready, comps
}

// HealthzHandler serves /healthz: 200 while the heartbeat is fresh, 500
// once it is stale.
func (h *Health) HealthzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, age := h.Alive()
		if ok {
			writePlain(w, http.StatusOK, fmt.Sprintf("ok: last heartbeat %s ago\n", age.Round(time.Millisecond)))
			return
		}
		writePlain(w, http.StatusInternalServerError, fmt.Sprintf("heartbeat stale: last %s ago, limit %s\n",
			age.Round(time.Millisecond), h.staleAfter))
	})
}

// ReadyzHandler serves /readyz: 200 when every required component (the
// kernel source) is ready, degraded or not, 503 otherwise. The plain-text
// body has a status line, then one line per component:
//
//	ready (degraded: runtime)
//	kernel: ok
//	runtime: down (optional): dial unix /run/containerd/containerd.sock: connect: no such file or directory
//	apiserver: ok
func (h *Health) ReadyzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ready, comps := h.Status()
		var down, lines []string
		for _, c := range comps {
			line := c.Name + ": ok"
			if !c.Ready {
				down = append(down, c.Name)
				kind := "optional"
				if c.Required {
					kind = "required"
				}
				line = fmt.Sprintf("%s: down (%s)", c.Name, kind)
			}
			if reason := oneLine(c.Reason); reason != "" {
				line += ": " + reason
			}
			lines = append(lines, line)
		}
		status, code := "ready", http.StatusOK
		switch {
		case !ready:
			status, code = "not ready", http.StatusServiceUnavailable
		case len(down) > 0:
			status = "ready (degraded: " + strings.Join(down, ", ") + ")"
		}
		writePlain(w, code, status+"\n"+strings.Join(lines, "\n")+"\n")
	})
}

// oneLine keeps a reason on its line of the body.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func writePlain(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}
