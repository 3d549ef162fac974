package metrics

import "github.com/prometheus/client_golang/prometheus"

// APIWatchStats is what the tracer's API source costs the API server: the
// Event watches it holds open now and the one-off lists it has made.
type APIWatchStats struct {
	EventWatches int
	EventSweeps  uint64
	Unswept      uint64
	// SweepsDeferred: pods first seen quiet whose sweep waits until
	// shortly before their oldest Events can expire.
	SweepsDeferred int
	// WindowLists and WindowsResumed: how event watches started (a list
	// of the namespace's Events, or a watch from a resource version);
	// ResumesExpired: resumed starts the API server no longer had.
	WindowLists, WindowsResumed, ResumesExpired uint64
	// WindowListsFailed: event watches' lists that failed (the API
	// server did the work all the same), WindowListsCanceled of them
	// ended by their watch's close (the pod gone or quiet before the list
	// returned).
	WindowListsFailed, WindowListsCanceled uint64
	// EndpointChanges: changes of the node's pods' endpoints in
	// EndpointSlices; EndpointSliceErrors: the slices' failed lists and
	// watches.
	EndpointChanges, EndpointSliceErrors uint64
}

var (
	apiEventWatchesDesc = prometheus.NewDesc("podchron_api_event_watches",
		"Event watches the tracer holds open on the API server now (besides its one pod watch): one per pod of the node in transition "+
			"(starting or not Ready, terminating, or just stirred by the kubelet), capped at 32.", nil, nil)
	apiEventSweepsDesc = prometheus.NewDesc("podchron_api_event_sweeps_total",
		"One-off lists of a pod's Events: one per pod first seen quiet, at the tracer's start (its history), "+
			"and the retries of those that failed.", nil, nil)
	apiSweepsDeferredDesc = prometheus.NewDesc("podchron_api_event_sweeps_deferred",
		"Pods first seen quiet (Ready) whose one-off list of Events waits until shortly before their oldest Events can expire "+
			"(the pod's creation + --event-ttl, less a quarter of it, at most 10 minutes): their trace's root span needs them when the pod ends, "+
			"and the Event watch its termination opens first lists them instead.", nil, nil)
	apiWindowStartsDesc = prometheus.NewDesc("podchron_api_event_window_starts_total",
		"How the tracer's Event watches started: start=\"list\", a list of the pod's namespace's Events (the API server reads them all from etcd, "+
			"with no watch cache for Events by default); start=\"resume\", a watch from a resource version known to be early enough "+
			"(before the pod was created, or where its previous watch stopped), which replays only the namespace's changes since.", []string{"start"}, nil)
	apiResumesExpiredDesc = prometheus.NewDesc("podchron_api_event_window_resumes_expired_total",
		"Resumed Event watches that listed after all: the API server no longer had their start (410 Gone: etcd's history compacted), or their first watch failed.", nil, nil)
	apiWindowListsFailedDesc = prometheus.NewDesc("podchron_api_event_window_lists_failed_total",
		"Lists of a pod's namespace's Events, made to start an Event watch, that failed: reason=\"canceled\", the watch closed before the list "+
			"returned (the pod gone or quiet first: the API server read the namespace's Events for nothing); "+
			"reason=\"error\", any other failure (the watch lists again).", []string{"reason"}, nil)
	apiEndpointChangesDesc = prometheus.NewDesc("podchron_api_endpoint_changes_total",
		"Changes of this node's pods' endpoints seen in EndpointSlices (a Service adding a pod, its conditions changing, its withdrawal), "+
			"from the tracer's one EndpointSlice watch.", nil, nil)
	apiEndpointSliceErrorsDesc = prometheus.NewDesc("podchron_api_endpointslice_errors_total",
		"Failed lists and watches of EndpointSlices: while it grows, traces do not show Services adding and withdrawing pods "+
			"(a refusal is RBAC: grant list and watch on discovery.k8s.io endpointslices).", nil, nil)
	apiUnsweptDesc = prometheus.NewDesc("podchron_api_event_sweeps_skipped_total",
		"Pods first seen quiet whose Events were not listed: their status records no change within --event-ttl "+
			"(the API server's Event TTL), so their Events have expired or come with the pod's next event watch.", nil, nil)
)

// APIWatchCollector exports podchron_api_event_watches,
// podchron_api_event_sweeps_total,
// podchron_api_event_sweeps_deferred,
// podchron_api_event_sweeps_skipped_total,
// podchron_api_event_window_starts_total,
// podchron_api_event_window_resumes_expired_total and
// podchron_api_event_window_lists_failed_total, read at each scrape.
type APIWatchCollector struct {
	read func() APIWatchStats
}

// NewAPIWatchCollector exports what read returns.
func NewAPIWatchCollector(read func() APIWatchStats) *APIWatchCollector {
	return &APIWatchCollector{read: read}
}

// Describe implements prometheus.Collector.
func (c *APIWatchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- apiEventWatchesDesc
	ch <- apiEventSweepsDesc
	ch <- apiUnsweptDesc
	ch <- apiSweepsDeferredDesc
	ch <- apiWindowStartsDesc
	ch <- apiResumesExpiredDesc
	ch <- apiWindowListsFailedDesc
	ch <- apiEndpointChangesDesc
	ch <- apiEndpointSliceErrorsDesc
}

// Collect implements prometheus.Collector.
func (c *APIWatchCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.read()
	ch <- prometheus.MustNewConstMetric(apiEventWatchesDesc, prometheus.GaugeValue, float64(st.EventWatches))
	ch <- prometheus.MustNewConstMetric(apiEventSweepsDesc, prometheus.CounterValue, float64(st.EventSweeps))
	ch <- prometheus.MustNewConstMetric(apiUnsweptDesc, prometheus.CounterValue, float64(st.Unswept))
	ch <- prometheus.MustNewConstMetric(apiSweepsDeferredDesc, prometheus.GaugeValue, float64(st.SweepsDeferred))
	ch <- prometheus.MustNewConstMetric(apiWindowStartsDesc, prometheus.CounterValue, float64(st.WindowLists), "list")
	ch <- prometheus.MustNewConstMetric(apiWindowStartsDesc, prometheus.CounterValue, float64(st.WindowsResumed), "resume")
	ch <- prometheus.MustNewConstMetric(apiResumesExpiredDesc, prometheus.CounterValue, float64(st.ResumesExpired))
	ch <- prometheus.MustNewConstMetric(apiWindowListsFailedDesc, prometheus.CounterValue, float64(st.WindowListsCanceled), "canceled")
	ch <- prometheus.MustNewConstMetric(apiWindowListsFailedDesc, prometheus.CounterValue, float64(st.WindowListsFailed-st.WindowListsCanceled), "error")
	ch <- prometheus.MustNewConstMetric(apiEndpointChangesDesc, prometheus.CounterValue, float64(st.EndpointChanges))
	ch <- prometheus.MustNewConstMetric(apiEndpointSliceErrorsDesc, prometheus.CounterValue, float64(st.EndpointSliceErrors))
}
