// The API source's health: synced, reachable, allowed; reported to the
// model as APIStatus.

package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/podchron/podchron/internal/fact"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Ready reports whether the pods have been listed and the event windows
// opened then have listed their events. It stays true afterwards, even
// while the API server is unreachable (the caches then hold the last known
// state); the APIStatus inputs tell reachability.
func (w *Watcher) Ready() bool { return w.ready.Load() }

// Status returns the last API status sent, or ok=false before the first.
func (w *Watcher) Status() (st fact.APIStatus, ok bool) {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	if w.emitted == nil {
		return fact.APIStatus{}, false
	}
	return *w.emitted, true
}

// observe records the outcome of a list or watch call.
func (w *Watcher) observe(ctx context.Context, src source, err error) {
	if err != nil && (ctx.Err() != nil || ignorable(err)) {
		return
	}
	w.setSourceErr(src, err)
}

// watchError is the informers' WatchErrorHandler: it sees list failures
// (already recorded by observe) and watches that ended with an error, after
// which the reflector backs off and relists. Only errors the API server sent
// (a Status, e.g. 403 as a watch event) are recorded here: a watch stream cut
// short says nothing by itself, the outcome of the next list or watch does.
func (w *Watcher) watchError(ctx context.Context, src source, err error) {
	var status apierrors.APIStatus
	if err == nil || ctx.Err() != nil || ignorable(err) || !errors.As(err, &status) {
		w.log.Debug("list/watch ended", "resource", src.String(), "err", err)
		return
	}
	w.log.Debug("list/watch failed", "resource", src.String(), "err", err)
	w.setSourceErr(src, err)
}

// ignorable errors say nothing about reachability: watches expire (410),
// end normally, or the server asks to slow down (429: it is up).
func ignorable(err error) bool {
	return errors.Is(err, io.EOF) ||
		errors.Is(err, context.Canceled) ||
		apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		apierrors.IsTooManyRequests(err)
}

// Forbidden reports whether err means the API server is reachable but
// refuses podchron's credentials (403) or does not accept them (401).
func Forbidden(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

func (w *Watcher) setSourceErr(src source, err error) {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	w.srcErr[src] = err
	w.updateStatusLocked()
}

func (w *Watcher) setSynced() {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	w.synced = true
	w.updateStatusLocked()
}

// updateStatusLocked computes the API status from the sources' last
// outcomes and sends it if it changed. Before the caches have synced the
// API server only counts as unavailable (on an error), never as available.
func (w *Watcher) updateStatusLocked() {
	var st fact.APIStatus
	var firstErr error
	for src, err := range w.srcErr {
		if err == nil {
			continue
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", source(src), err)
		}
		if Forbidden(err) {
			st.Forbidden = true
		}
	}
	switch {
	case firstErr != nil:
		st.Err = firstErr.Error()
	case w.synced:
		st.Available = true
	default:
		return // starting, no verdict yet
	}
	if e := w.emitted; e != nil && e.Available == st.Available && e.Forbidden == st.Forbidden {
		return
	}
	st.Since = w.clock()
	if st.Available {
		w.log.Info("API server available")
	} else {
		w.log.Warn("API server unavailable", "forbidden", st.Forbidden, "err", st.Err)
	}
	w.emitted = &st
	send := st
	w.send(fact.Input{API: &send})
}
