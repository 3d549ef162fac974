package scale

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/podchron/podchron/internal/watcher"
)

// The agent is one tracer's API side: the real internal/watcher for one
// node name, no BPF, in its own process (the test binary re-executed with
// agentEnv set) so that its heap is its own. It counts what it receives
// on the wire (TLS bytes read from its connections), per response
// (decoded bytes, list items, watch events) and what the watcher hands to
// the model, and answers "stats" on stdin with one JSON line on stdout.
const agentEnv = "PODCHRON_SCALE_AGENT_NODE"

type agentStats struct {
	Node  string `json:"node"`
	Ready bool   `json:"ready"`
	// HeapBytes is HeapAlloc after two GCs; SysBytes the runtime's total.
	HeapBytes uint64 `json:"heap_bytes"`
	SysBytes  uint64 `json:"sys_bytes"`
	// WireBytes: bytes read from the API server's connections (TLS).
	WireBytes uint64 `json:"wire_bytes"`
	// BodyBytes: response bytes after TLS/HTTP framing (and gzip).
	BodyBytes uint64 `json:"body_bytes"`
	// ListItems and WatchEvents: objects received in list responses and
	// watch streams (bookmarks included).
	ListItems   uint64 `json:"list_items"`
	WatchEvents uint64 `json:"watch_events"`
	Requests    uint64 `json:"requests"`
	// What the watcher sent to the model.
	PodInputs   uint64 `json:"pod_inputs"`
	EventInputs uint64 `json:"event_inputs"`
	// ForeignEventInputs: event inputs about a pod never seen on this node
	// (must stay 0).
	ForeignEventInputs uint64        `json:"foreign_event_inputs"`
	Watcher            watcher.Stats `json:"watcher"`
}

type counters struct {
	wire, body, items, watchEvents, requests atomic.Uint64
}

func runAgent(node string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := watcher.RESTConfig(os.Getenv("KUBECONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var c counters
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, n: &c.wire}, nil
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &countingRT{rt: rt, c: &c} }
	// The tracer's own client (core/v1 only), as the daemon makes it.
	client, err := watcher.NewClientForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w, err := watcher.New(watcher.Config{Client: client, NodeName: node, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan fact.Input, 1024)
	var podIn, evIn, foreign atomic.Uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		seen := map[string]bool{}
		for in := range out {
			switch {
			case in.Pod != nil:
				podIn.Add(1)
				seen[in.Pod.UID] = true
			case in.Event != nil:
				evIn.Add(1)
				if !seen[in.Event.PodUID] {
					foreign.Add(1)
				}
			}
		}
	})
	go func() {
		_ = w.Run(ctx, out)
		close(out)
	}()

	sc := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		switch sc.Text() {
		case "stats":
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			st := agentStats{
				Node: node, Ready: w.Ready(), HeapBytes: ms.HeapAlloc, SysBytes: ms.Sys,
				WireBytes: c.wire.Load(), BodyBytes: c.body.Load(), ListItems: c.items.Load(),
				WatchEvents: c.watchEvents.Load(), Requests: c.requests.Load(),
				PodInputs: podIn.Load(), EventInputs: evIn.Load(), ForeignEventInputs: foreign.Load(),
				Watcher: w.Stats(),
			}
			if err := enc.Encode(st); err != nil {
				return 1
			}
		case "quit":
			cancel()
			wg.Wait()
			return 0
		}
	}
	cancel()
	wg.Wait()
	return 0
}

type countingConn struct {
	net.Conn
	n *atomic.Uint64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(uint64(n))
	return n, err
}

type countingRT struct {
	rt http.RoundTripper
	c  *counters
}

func (r *countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.c.requests.Add(1)
	resp, err := r.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if req.URL.Query().Get("watch") == "true" {
		resp.Body = &watchBody{ReadCloser: resp.Body, c: r.c}
	} else {
		resp.Body = &listBody{ReadCloser: resp.Body, c: r.c}
	}
	return resp, nil
}

// watchBody counts the frames of a protobuf watch stream: each is a
// 4-byte big-endian length, then one WatchEvent.
type watchBody struct {
	io.ReadCloser
	c      *counters
	hdr    [4]byte
	nhdr   int
	remain uint32
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.body.Add(uint64(n))
	buf := p[:n]
	for len(buf) > 0 {
		if b.remain > 0 {
			k := min(uint32(len(buf)), b.remain)
			b.remain -= k
			buf = buf[k:]
			continue
		}
		k := copy(b.hdr[b.nhdr:], buf)
		b.nhdr += k
		buf = buf[k:]
		if b.nhdr == 4 {
			b.remain = binary.BigEndian.Uint32(b.hdr[:])
			b.nhdr = 0
			b.c.watchEvents.Add(1)
		}
	}
	return n, err
}

// listBody keeps a (list) response and counts its items once read: a
// protobuf response is "k8s\x00" + runtime.Unknown, whose field 2 (raw) is
// the List, whose field 2 is repeated items.
type listBody struct {
	io.ReadCloser
	c    *counters
	buf  []byte
	done bool
}

func (b *listBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.body.Add(uint64(n))
	b.buf = append(b.buf, p[:n]...)
	if err == io.EOF && !b.done {
		b.done = true
		b.c.items.Add(uint64(countItems(b.buf)))
		b.buf = nil
	}
	return n, err
}

func countItems(b []byte) int {
	const magic = "k8s\x00"
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return 0
	}
	raw := field(b[len(magic):], 2)
	if raw == nil {
		return 0
	}
	n := 0
	for len(raw) > 0 {
		num, typ, k := protowire.ConsumeTag(raw)
		if k < 0 {
			return n
		}
		raw = raw[k:]
		m := protowire.ConsumeFieldValue(num, typ, raw)
		if m < 0 {
			return n
		}
		if num == 2 && typ == protowire.BytesType {
			n++
		}
		raw = raw[m:]
	}
	return n
}

// field returns the first bytes-typed field num of a protobuf message.
func field(b []byte, want protowire.Number) []byte {
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return nil
		}
		b = b[k:]
		if num == want && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			return v
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil
		}
		b = b[m:]
	}
	return nil
}
