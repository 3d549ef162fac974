// Package fact holds what the lifecycle model takes in: the one ordered
// stream of inputs (Input) from its three sources, and the API server's
// facts about pods (PodInfo, K8sEvent, APIStatus). The kernel's facts are
// internal/fact/kernel's, the container runtime's internal/fact/cri's. None
// of these packages imports a source's machinery (eBPF, gRPC, client-go):
// the sources convert into them, the model and the recorder read them.
package fact

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
)

// OptOutAnnotation is the pod annotation that, set to "false", keeps a pod
// out of the traces and metrics (PodInfo.OptOut).
const OptOutAnnotation = "podchron.io/trace"

// Input is one fact for the correlator, from one of its three sources. The
// correlator consumes a single ordered stream of inputs; `tracer record`
// writes that stream and `tracer replay` feeds it back, so the same stream
// always yields the same spans.
type Input struct {
	// Time is when podchron received the input (the injected clock's now).
	// Facts carry their own timestamps too; Time drives timers.
	Time time.Time `json:"time"`

	Kernel  kernel.Event `json:"-"`                 // a kernel event
	Runtime *cri.Event   `json:"runtime,omitempty"` // a container runtime (CRI) change
	Pod     *PodInfo     `json:"pod,omitempty"`     // the API server's view of a pod
	Event   *K8sEvent    `json:"event,omitempty"`   // a Kubernetes Event about a pod
	// Endpoint: a Service's EndpointSlice changed what it says of one of
	// the node's pods.
	Endpoint *EndpointChange `json:"endpoint,omitempty"`
	API      *APIStatus      `json:"api,omitempty"`    // API server reachability changed
	Cgroup   *CgroupSeen     `json:"cgroup,omitempty"` // a cgroup found at start-up (seeding)
	Proc     *ProcSeen       `json:"proc,omitempty"`   // a process found at start-up (seeding)
	Losses   *Losses         `json:"losses,omitempty"` // the kernel lost events (ring buffer full)
	Start    *Start          `json:"start,omitempty"`  // the tracer started: facts before this are partial
	Tick     bool            `json:"tick,omitempty"`   // no fact: time passed (timers fire)
	// Backlog: an input the tracer made itself (a tick, the kernel's idle
	// progress, its losses) while the sources' inputs stamped before it
	// still waited in the queue: its Time is ahead of theirs, and says
	// nothing of whether a source fell silent.
	Backlog bool `json:"backlog,omitempty"`
	// Progress: a source's view is complete up to a time (a watermark).
	Progress *Progress `json:"progress,omitempty"`
}

// Sources, as named in Progress and Start.Progress (names.Source's
// recorded spellings).
const (
	SourceKernel  = string(names.SourceKernel)
	SourceRuntime = string(names.SourceRuntime)
	SourceAPI     = string(names.SourceAPI)
)

// Progress says that a source has delivered every fact it will ever
// deliver about what happened before Until (what it still delivers is at or
// after Until, in its own time for the fact: the kernel event's time, the
// runtime poll's snapshot time, the API watch's delivery time): the kernel's ring buffer was
// drained (it is read in order), the container runtime was polled at Until
// and the poll's changes were all sent, the API server's watch had nothing
// more to hand over. The model waits for the sources that report progress
// before it decides about a moment (a container's end, a pod being gone),
// so how late a source's facts arrive does not change the spans; a source
// that reports none, or is down, is waited for by a bounded timeout
// instead (recordings made before progress existed replay as they did).
type Progress struct {
	Source string    `json:"source"` // SourceKernel, SourceRuntime or SourceAPI
	Until  time.Time `json:"until"`
}

// CgroupSeen is an existing cgroup found by walking cgroupfs at start-up.
type CgroupSeen struct {
	ID   uint64 `json:"id"`
	Path string `json:"path"` // relative to the hierarchy root
}

// ProcSeen is an existing process found in /proc at start-up.
type ProcSeen struct {
	PID      uint32    `json:"pid"`
	PPID     uint32    `json:"ppid"`
	CgroupID uint64    `json:"cgroup_id"`
	Comm     string    `json:"comm"`
	Args     []string  `json:"args,omitempty"`
	Started  time.Time `json:"started"`
}

// Losses reports kernel events lost since the previous report: Lost in the
// ring buffer (full: whose they were is unknown), Throttled by a cgroup's
// budget in the kernel (whose they were is known).
type Losses struct {
	Lost      uint64       `json:"lost"`
	Throttled []CgroupLoss `json:"throttled,omitempty"`
}

// CgroupLoss is a count of one cgroup's kernel records of one kind (a
// kernel.EventType's name: "signal", "signal_deliver") that its budget
// refused.
type CgroupLoss struct {
	CgroupID uint64 `json:"cgroup_id"`
	Kind     string `json:"kind"`
	Count    uint64 `json:"count"`
}

// Start marks the tracer's start: pods already alive are observed from here.
type Start struct {
	At       time.Time `json:"at"`
	NodeName string    `json:"node_name,omitempty"`
	// CgroupRoots are the watched roots (custom kubepods roots included), so
	// a replay needs no configuration.
	CgroupRoots []string `json:"cgroup_roots,omitempty"`
	// Progress names the sources that report progress (SourceKernel,
	// SourceRuntime, SourceAPI): the model waits for them from the start.
	Progress []string `json:"progress,omitempty"`
}

// PodInfo is what the API server says about a pod, reduced to what the
// lifecycle model needs. The watcher converts core/v1 Pods into it.
type PodInfo struct {
	UID       string `json:"uid"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	NodeName  string `json:"node_name,omitempty"`
	OwnerKind string `json:"owner_kind,omitempty"` // ReplicaSet, StatefulSet, DaemonSet, Job, Node (static), ...
	OwnerName string `json:"owner_name,omitempty"`
	OwnerUID  string `json:"owner_uid,omitempty"`
	// TemplateHash is the pod-template-hash label of a Deployment's pod:
	// its ReplicaSet's name is the Deployment's plus "-" and the hash.
	TemplateHash string `json:"template_hash,omitempty"`
	// Labels are the pod's labels the tracer was asked to export
	// (--pod-label), as k8s.pod.label.<key>.
	Labels map[string]string `json:"labels,omitempty"`
	// OptOut: the pod asks not to be traced (annotation
	// podchron.io/trace: "false").
	OptOut   bool   `json:"opt_out,omitempty"`
	QOSClass string `json:"qos_class,omitempty"`
	// Static is true for static/mirror pods (created by the kubelet).
	Static bool `json:"static,omitempty"`
	// ConfigUID: for a static pod's mirror, the static pod's own UID (the
	// kubernetes.io/config.mirror annotation), which differs from the
	// mirror's UID and is what cgroups, the runtime and Events carry.
	ConfigUID string `json:"config_uid,omitempty"`
	// RestartPolicy: Always, OnFailure or Never.
	RestartPolicy string `json:"restart_policy,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	// DeletionTimestamp is when the grace period ends (set on delete).
	DeletionTimestamp             *time.Time  `json:"deletion_timestamp,omitempty"`
	DeletionGracePeriodSeconds    *int64      `json:"deletion_grace_period_seconds,omitempty"`
	TerminationGracePeriodSeconds int64       `json:"termination_grace_period_seconds"`
	Phase                         string      `json:"phase,omitempty"`
	Reason                        string      `json:"reason,omitempty"` // e.g. Evicted
	Message                       string      `json:"message,omitempty"`
	Conditions                    []Condition `json:"conditions,omitempty"`

	InitContainers []ContainerSpec   `json:"init_containers,omitempty"`
	Containers     []ContainerSpec   `json:"containers,omitempty"`
	InitStatuses   []ContainerStatus `json:"init_statuses,omitempty"`
	Statuses       []ContainerStatus `json:"statuses,omitempty"`

	// Ephemeral (kubectl debug) containers and readiness gates.
	//
	// EphemeralContainers: the names of the pod's ephemeral containers
	// (spec.ephemeralContainers); their runs are neither the start-up's
	// nor a Job's completion.
	EphemeralContainers []string          `json:"ephemeral_containers,omitempty"`
	EphemeralStatuses   []ContainerStatus `json:"ephemeral_statuses,omitempty"`
	// ReadinessGates: the condition types the pod's Ready also waits for
	// (spec.readinessGates).
	ReadinessGates []string `json:"readiness_gates,omitempty"`
	// ImageVolumes: the pod's volumes whose source is an OCI image
	// (spec.volumes[].image): their pulls belong to no container.
	ImageVolumes []ImageVolume `json:"image_volumes,omitempty"`

	// Deleted is true once the object is gone from the API server.
	Deleted bool `json:"deleted,omitempty"`
}

// ImageVolume is a pod volume whose source is an OCI image.
type ImageVolume struct {
	Name       string `json:"name"`
	Reference  string `json:"reference"`
	PullPolicy string `json:"pull_policy,omitempty"`
}

// Condition is a pod condition (PodScheduled, Initialized, ContainersReady,
// Ready, PodReadyToStartContainers, DisruptionTarget, ...).
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"` // True, False, Unknown
	LastTransitionTime time.Time `json:"last_transition_time"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
}

// ContainerSpec is the part of a container's spec the model uses.
type ContainerSpec struct {
	Name  string `json:"name"`
	Image string `json:"image,omitempty"`
	// Sidecar: an init container with restartPolicy Always.
	Sidecar   bool       `json:"sidecar,omitempty"`
	PostStart *Handler   `json:"post_start,omitempty"`
	PreStop   *Handler   `json:"pre_stop,omitempty"`
	Startup   *ProbeSpec `json:"startup,omitempty"`
	Readiness *ProbeSpec `json:"readiness,omitempty"`
	Liveness  *ProbeSpec `json:"liveness,omitempty"`
	// MemoryLimitBytes is resources.limits.memory (0: none).
	MemoryLimitBytes int64 `json:"memory_limit_bytes,omitempty"`
	// RestartPolicy is the container's own restartPolicy (Always,
	// OnFailure, Never; "" when unset: the pod's applies).
	RestartPolicy string `json:"restart_policy,omitempty"`
	// RestartRules are its restartPolicyRules (Kubernetes 1.34+, feature
	// gate ContainerRestartRules), in order: the first that matches an
	// exit decides, whatever the restart policy says.
	RestartRules []RestartRule `json:"restart_rules,omitempty"`
}

// RestartRule is one of a container's restartPolicyRules.
type RestartRule struct {
	// Action is Restart (this container) or RestartAllContainers (every
	// container of the pod, init containers run again, in the same sandbox).
	Action string `json:"action"`
	// Operator is In or NotIn; ExitCodes the values it checks.
	Operator  string  `json:"operator,omitempty"`
	ExitCodes []int32 `json:"exit_codes,omitempty"`
}

// Restart rule actions, as the API spells them.
const (
	RestartRuleRestart    = "Restart"
	RestartRuleRestartAll = "RestartAllContainers"
)

// Matches reports whether an exit with this code satisfies the rule.
func (r RestartRule) Matches(code int32) bool {
	in := slices.Contains(r.ExitCodes, code)
	switch r.Operator {
	case "In":
		return in
	case "NotIn":
		return !in
	}
	return false
}

// String is the rule as an SRE reads it: "Restart on exit code In [42]".
func (r RestartRule) String() string {
	codes := make([]string, len(r.ExitCodes))
	for i, c := range r.ExitCodes {
		codes[i] = strconv.Itoa(int(c))
	}
	return r.Action + " on exit code " + r.Operator + " [" + strings.Join(codes, ",") + "]"
}

// RestartRuleFor is the first of the container's restart rules an exit with
// this code matches, nil if none does.
func (c *ContainerSpec) RestartRuleFor(code int32) *RestartRule {
	for i := range c.RestartRules {
		if c.RestartRules[i].Matches(code) {
			return &c.RestartRules[i]
		}
	}
	return nil
}

// Handler is a lifecycle hook or probe action.
type Handler struct {
	Kind string   `json:"kind"` // exec, httpGet, tcpSocket, grpc, sleep
	Exec []string `json:"exec,omitempty"`

	// What a kubelet-run hook does (sleep, httpGet): nothing the kernel
	// sees, so the model needs it from the spec. No header values (they can
	// carry secrets), no host.
	SleepSeconds int64  `json:"sleep_seconds,omitempty"` // sleep.seconds
	HTTPPath     string `json:"http_path,omitempty"`     // httpGet.path
	HTTPPort     string `json:"http_port,omitempty"`     // httpGet.port: a number or a port's name
}

// ProbeSpec is a container probe.
type ProbeSpec struct {
	Handler
	PeriodSeconds    int32 `json:"period_seconds,omitempty"`
	TimeoutSeconds   int32 `json:"timeout_seconds,omitempty"`
	FailureThreshold int32 `json:"failure_threshold,omitempty"`
}

// ContainerStatus is a container's status as the kubelet reported it.
type ContainerStatus struct {
	Name         string         `json:"name"`
	ContainerID  string         `json:"container_id,omitempty"` // without the "containerd://" scheme
	Runtime      string         `json:"runtime,omitempty"`      // containerd, cri-o, docker
	RestartCount int32          `json:"restart_count"`
	Ready        bool           `json:"ready"`
	Started      *bool          `json:"started,omitempty"`
	State        ContainerState `json:"state"`
	LastState    ContainerState `json:"last_state"`
}

// ContainerState is one of waiting, running or terminated (or empty).
type ContainerState struct {
	Waiting    *Waiting    `json:"waiting,omitempty"`
	Running    *Running    `json:"running,omitempty"`
	Terminated *Terminated `json:"terminated,omitempty"`
}

// Waiting is a container waiting to run, with the kubelet's reason.
type Waiting struct {
	Reason  string `json:"reason,omitempty"` // ContainerCreating, CrashLoopBackOff, ImagePullBackOff, ...
	Message string `json:"message,omitempty"`
}

// Running is a running container.
type Running struct {
	StartedAt time.Time `json:"started_at"`
}

// Terminated is a container that ended, as the kubelet reports it.
type Terminated struct {
	ExitCode    int32     `json:"exit_code"`
	Signal      int32     `json:"signal,omitempty"`
	Reason      string    `json:"reason,omitempty"` // Completed, Error, OOMKilled, ContainerCannotRun, ...
	Message     string    `json:"message,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at"`
	ContainerID string    `json:"container_id,omitempty"`
}

// K8sEvent is a Kubernetes Event whose involved object is a pod.
type K8sEvent struct {
	UID       string `json:"uid"` // the Event object's UID
	PodUID    string `json:"pod_uid"`
	PodName   string `json:"pod_name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Type      string `json:"type,omitempty"` // Normal, Warning
	Reason    string `json:"reason"`         // Scheduled, Pulling, Pulled, Created, Started, Killing, Unhealthy, BackOff, Evicted, Preempting, FailedPostStartHook, FailedPreStopHook, ...
	Message   string `json:"message,omitempty"`
	Source    string `json:"source,omitempty"` // reporting component: default-scheduler, kubelet, ...
	// Container is the container named by involvedObject.fieldPath, if any.
	Container string    `json:"container,omitempty"`
	FirstTime time.Time `json:"first_time"`
	LastTime  time.Time `json:"last_time"`
	Count     int32     `json:"count"`
	// Truncated: bytes of Reason and Message cut before the model saw
	// them (the watcher bounds Events before it caches them:
	// MaxEventReason, MaxEventMessage).
	Truncated int `json:"truncated,omitempty"`
}

// EndpointChange is what one EndpointSlice (discovery.k8s.io/v1) says of
// one of the node's pods after a change: whether the slice lists it, and
// its conditions there. The endpoints controller writes them (the pod's
// Ready condition, its deletion); kube-proxy and load balancers route by
// them. A Service has a slice per address family (and more past 100
// endpoints), so a pod may be listed in several of one Service's slices.
type EndpointChange struct {
	PodUID    string `json:"pod_uid"`
	Namespace string `json:"namespace"`
	// Service is the slice's kubernetes.io/service-name label (the
	// slice's own name for a slice with none).
	Service string `json:"service"`
	Slice   string `json:"slice"`
	// Listed: the slice lists an endpoint of the pod; false once it is
	// removed (or the slice deleted).
	Listed bool `json:"listed"`
	// The endpoint's conditions (an unset condition as the API reads it:
	// ready and serving true, terminating false).
	Ready       bool `json:"ready,omitempty"`
	Serving     bool `json:"serving,omitempty"`
	Terminating bool `json:"terminating,omitempty"`
	// Initial: the state a list found (the tracer's start, a relist after
	// the watch broke), not a change seen as it happened: the change came
	// at or before Input.Time.
	Initial bool `json:"initial,omitempty"`
}

// APIStatus says whether the API server can be reached.
type APIStatus struct {
	Available bool      `json:"available"`
	Since     time.Time `json:"since"`
	Err       string    `json:"err,omitempty"`
	// Forbidden: reachable but RBAC denies listing pods/events.
	Forbidden bool `json:"forbidden,omitempty"`
}
