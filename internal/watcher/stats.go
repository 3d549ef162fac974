package watcher

// Stats is what a Watcher holds and has received, for cost accounting (the
// scale test in test/scale reads it).
type Stats struct {
	// PodsCached and EventsCached are the objects in the informer stores.
	PodsCached, EventsCached int
	// EventWatches is the number of event watches open.
	EventWatches int
	// EventSweeps counts the one-off lists of a pod's events made.
	EventSweeps uint64
	// SweepsDue is the number of pods whose sweep is due or waits for a
	// retry; SweepsDeferred those whose first sweep waits until shortly
	// before their oldest Events can expire (sweep.go, sweepTime).
	SweepsDue, SweepsDeferred int
	// Unswept counts the pods first seen quiet that got no sweep: their
	// status records no change within Config.EventTTL.
	Unswept uint64
	// WindowLists counts the event windows' lists of a namespace's
	// Events; WindowsResumed the windows started without one (resume.go),
	// ResumesExpired those of them that listed after all (their start
	// gone, 410, or their first watch failed).
	WindowLists, WindowsResumed, ResumesExpired uint64
	// WindowListsFailed counts the windows' lists that failed (the API
	// server counts them, the lists above do not), WindowListsCanceled
	// those of them ended by their window's close.
	WindowListsFailed, WindowListsCanceled uint64
	// PodsReceived and EventsReceived count the objects the informers
	// handed over (adds and updates, before any filtering).
	PodsReceived, EventsReceived uint64
	// EndpointChanges counts the changes of the node's pods' endpoints
	// sent (endpoints.go); EndpointSliceErrors the EndpointSlices' failed
	// lists and watches.
	EndpointChanges, EndpointSliceErrors uint64
}

// Stats returns the watcher's current Stats.
func (w *Watcher) Stats() Stats {
	st := Stats{
		PodsReceived:   w.podsReceived.Load(),
		EventsReceived: w.eventsReceived.Load(),

		EndpointChanges:     w.endpointChanges.Load(),
		EndpointSliceErrors: w.endpointSliceErrors.Load(),
		EventSweeps:         w.sweeps.Load(),
		Unswept:             w.unswept.Load(),
		WindowLists:         w.windowLists.Load(),
		WindowsResumed:      w.windowsResumed.Load(),
		ResumesExpired:      w.resumesExpired.Load(),

		WindowListsFailed:   w.windowListsFailed.Load(),
		WindowListsCanceled: w.windowListsCanceled.Load(),
	}
	st.PodsCached = len(w.podInf.GetStore().ListKeys())
	w.mu.Lock()
	defer w.mu.Unlock()
	st.EventWatches = len(w.windows)
	now := w.clock()
	for _, s := range w.pods {
		switch {
		case s.sweepAt.IsZero():
		case s.sweepAt.After(now) && s.sweepFails == 0:
			st.SweepsDeferred++
		default:
			st.SweepsDue++
		}
	}
	for _, win := range w.windows {
		st.EventsCached += len(win.inf.GetStore().ListKeys())
	}
	return st
}
