// Package cri is podchron's read-mostly view of the node's container runtime
// through the Kubernetes CRI v1 API (k8s.io/cri-api runtime.v1) over a unix
// socket: typed snapshots of pod sandboxes and containers, and a poller that
// turns successive snapshots into lifecycle events, reconnecting with backoff
// and reporting the time ranges during which the runtime was unavailable.
package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	crifact "github.com/podchron/podchron/internal/fact/cri"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultEndpoints are probed, in order, when Dial is given no endpoint.
var DefaultEndpoints = []string{
	"unix:///run/containerd/containerd.sock",
	"unix:///run/k3s/containerd/containerd.sock",
	"unix:///var/run/crio/crio.sock",
}

var (
	// ErrNoRuntime means no CRI socket was found at any probed endpoint.
	ErrNoRuntime = errors.New("cri: no container runtime socket found")
	// ErrUnreachable means a socket exists (or was named) but no CRI v1
	// runtime answered on it.
	ErrUnreachable = errors.New("cri: container runtime not reachable")
)

const (
	// kubeletAPIVersion is what the kubelet sends in VersionRequest.
	kubeletAPIVersion = "0.1.0"
	// maxMsgSize matches the kubelet's CRI client limit.
	maxMsgSize = 16 << 20
)

// Option configures Dial.
type Option func(*options)

type options struct {
	logger         *slog.Logger
	callTimeout    time.Duration
	connectTimeout time.Duration
	candidates     []string
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithCallTimeout bounds every CRI call made by the client (default 10s).
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.callTimeout = d
		}
	}
}

// WithConnectTimeout bounds the Version check done by Dial per endpoint
// (default 5s).
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.connectTimeout = d
		}
	}
}

// WithCandidates replaces DefaultEndpoints for auto-detection.
func WithCandidates(endpoints ...string) Option {
	return func(o *options) { o.candidates = endpoints }
}

func buildOptions(opts []Option) options {
	o := options{
		logger:         slog.Default(),
		callTimeout:    10 * time.Second,
		connectTimeout: 5 * time.Second,
		candidates:     DefaultEndpoints,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Client is a CRI v1 runtime-service client bound to one endpoint.
// It is safe for concurrent use.
type Client struct {
	endpoint string
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
	version  crifact.RuntimeVersion
	opts     options
	log      *slog.Logger
}

// Dial connects to the CRI runtime at endpoint ("unix:///path" or a plain
// absolute socket path) and verifies it answers the CRI v1 Version call.
// With an empty endpoint the DefaultEndpoints (or WithCandidates) are probed
// in order and the first one answering wins. Errors wrap ErrNoRuntime or
// ErrUnreachable.
func Dial(ctx context.Context, endpoint string, opts ...Option) (*Client, error) {
	o := buildOptions(opts)
	if endpoint != "" {
		return dialOne(ctx, endpoint, o)
	}
	var (
		found []string
		errs  []error
	)
	for _, cand := range o.candidates {
		path := socketPath(cand)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		found = append(found, cand)
		c, err := dialOne(ctx, cand, o)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%w (probed %s)", ErrNoRuntime, strings.Join(o.candidates, ", "))
	}
	return nil, errors.Join(errs...)
}

func dialOne(ctx context.Context, endpoint string, o options) (*Client, error) {
	path := socketPath(endpoint)
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("cri: endpoint %q: only absolute unix socket paths are supported: %w", endpoint, ErrUnreachable)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cri: endpoint %s: %w: %w", endpoint, ErrUnreachable, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("cri: endpoint %s: %w: %s is not a unix socket", endpoint, ErrUnreachable, path)
	}
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("cri: endpoint %s: %w: %w", endpoint, ErrUnreachable, err)
	}
	c := &Client{
		endpoint: "unix://" + path,
		conn:     conn,
		rt:       runtimeapi.NewRuntimeServiceClient(conn),
		opts:     o,
		log:      o.logger.With("cri_endpoint", "unix://"+path),
	}
	vctx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	defer cancel()
	v, err := c.Version(vctx)
	if err != nil {
		_ = conn.Close()
		if status.Code(err) == codes.Unimplemented {
			return nil, fmt.Errorf("cri: endpoint %s: %w: runtime does not serve CRI v1 (runtime.v1.RuntimeService): %w", endpoint, ErrUnreachable, err)
		}
		return nil, fmt.Errorf("cri: endpoint %s: %w: %w", endpoint, ErrUnreachable, err)
	}
	c.version = v
	c.log.Debug("connected to container runtime", "runtime", v.Name, "runtime_version", v.Version, "cri_api", v.APIVersion)
	return c, nil
}

// socketPath turns "unix:///a/b", "unix:/a/b" or "/a/b" into "/a/b".
func socketPath(endpoint string) string {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		return strings.TrimPrefix(endpoint, "unix://")
	case strings.HasPrefix(endpoint, "unix:"):
		return strings.TrimPrefix(endpoint, "unix:")
	default:
		return endpoint
	}
}

// Endpoint returns the endpoint the client is connected to ("unix:///...").
func (c *Client) Endpoint() string { return c.endpoint }

// RuntimeVersion returns the version learned when dialing.
func (c *Client) RuntimeVersion() crifact.RuntimeVersion { return c.version }

// Close closes the connection.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("cri: close %s: %w", c.endpoint, err)
	}
	return nil
}

// RuntimeService exposes the raw CRI runtime service, for drivers (test
// harnesses) that need calls this package does not wrap.
func (c *Client) RuntimeService() runtimeapi.RuntimeServiceClient { return c.rt }

func (c *Client) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.opts.callTimeout)
}

// Version calls CRI Version.
func (c *Client) Version(ctx context.Context) (crifact.RuntimeVersion, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{Version: kubeletAPIVersion})
	if err != nil {
		return crifact.RuntimeVersion{}, fmt.Errorf("cri: Version: %w", err)
	}
	return crifact.RuntimeVersion{Name: r.GetRuntimeName(), Version: r.GetRuntimeVersion(), APIVersion: r.GetRuntimeApiVersion()}, nil
}

// Status calls CRI Status.
func (c *Client) Status(ctx context.Context) (RuntimeStatus, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return RuntimeStatus{}, fmt.Errorf("cri: Status: %w", err)
	}
	var st RuntimeStatus
	for _, cond := range r.GetStatus().GetConditions() {
		st.Conditions = append(st.Conditions, Condition{
			Type: cond.GetType(), Status: cond.GetStatus(), Reason: cond.GetReason(), Message: cond.GetMessage(),
		})
	}
	return st, nil
}

// ListSandboxes lists all pod sandboxes (ListPodSandbox view only: no IP,
// netns path or PID; see SandboxStatus).
func (c *Client) ListSandboxes(ctx context.Context) ([]crifact.Sandbox, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("cri: ListPodSandbox: %w", err)
	}
	out := make([]crifact.Sandbox, 0, len(r.GetItems()))
	for _, p := range r.GetItems() {
		out = append(out, sandboxFromList(p))
	}
	return out, nil
}

// SandboxStatus returns the verbose status of one sandbox. A missing sandbox
// yields an error for which IsNotFound is true.
func (c *Client) SandboxStatus(ctx context.Context, id string) (crifact.Sandbox, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		return crifact.Sandbox{}, fmt.Errorf("cri: PodSandboxStatus %s: %w", id, err)
	}
	return sandboxFromStatus(r), nil
}

// ListContainers lists all containers (ListContainers view only: no
// start/finish times, exit code or PID; see ContainerStatus).
func (c *Client) ListContainers(ctx context.Context) ([]crifact.Container, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("cri: ListContainers: %w", err)
	}
	out := make([]crifact.Container, 0, len(r.GetContainers()))
	for _, ct := range r.GetContainers() {
		out = append(out, containerFromList(ct))
	}
	return out, nil
}

// ContainerStatus returns the verbose status of one container. sandboxID
// may be "" (it is then taken from the runtime's verbose info when present).
// A missing container yields an error for which IsNotFound is true.
func (c *Client) ContainerStatus(ctx context.Context, id, sandboxID string) (crifact.Container, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return crifact.Container{}, fmt.Errorf("cri: ContainerStatus %s: %w", id, err)
	}
	return containerFromStatus(r, sandboxID), nil
}

// IsNotFound reports whether err is (or wraps) a CRI NotFound error.
func IsNotFound(err error) bool {
	if err == nil {
		return false
	}
	if status.Code(err) == codes.NotFound {
		return true
	}
	// containerd 1.6 answers some lookups of removed objects with
	// codes.Unknown and a "not found" message.
	return strings.Contains(err.Error(), "not found")
}
