package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/query/jaegertest"
	"github.com/podchron/podchron/internal/span"
)

// waitTrace polls until the trace holds n spans.
func waitTrace(t *testing.T, c *Client, id span.TraceID, n int) []span.Span {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := c.Trace(ctx, id)
		if err == nil && len(got) == n {
			return got
		}
		if err != nil && !errors.Is(err, ErrNoTrace) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d spans, want %d (err %v)", id, len(got), n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestJaegerRoundTrip(t *testing.T) {
	otlpAddr, queryURL := jaegertest.Start(t)
	want := podSpans("uid-1", "web-0", "shop")
	other := podSpans("uid-2", "web-1", "shop")
	jaegertest.Export(t, otlpAddr, append(slices.Clone(want), other...))

	c, err := New(Jaeger, queryURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := waitTrace(t, c, want[0].TraceID, len(want))
	// The exporter sends success as Unset (the semantic conventions leave
	// Ok to applications).
	for i := range want {
		if want[i].Status == span.StatusOK {
			want[i].Status = span.StatusUnset
		}
	}
	sameSpans(t, got, want)

	_, err = c.Trace(context.Background(), span.TraceIDForPod("never-seen"))
	if !errors.Is(err, ErrNoTrace) {
		t.Fatalf("unknown trace: err %v, want ErrNoTrace", err)
	}

	found, err := c.Search(context.Background(), Search{
		Attrs: map[string]string{"k8s.pod.name": "web-0", "k8s.namespace.name": "shop"},
		Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].ID != want[0].TraceID {
		t.Fatalf("search web-0: %d traces %v, want only %s", len(found), found, want[0].TraceID)
	}
	sameSpans(t, found[0].Spans, want)

	none, err := c.Search(context.Background(), Search{
		Attrs: map[string]string{"k8s.pod.name": "web-9"}, Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour),
	})
	if err != nil || len(none) != 0 {
		t.Fatalf("search web-9: %v, %v; want nothing", none, err)
	}
}

func TestUnreachable(t *testing.T) {
	p := jaegertest.FreePorts(t, 1)
	u := fmt.Sprintf("http://127.0.0.1:%d", p[0])
	for _, k := range []Kind{Jaeger, Tempo} {
		c, err := New(k, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Trace(context.Background(), span.TraceIDForPod("x"))
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("%s: err %v, want ErrUnreachable", k, err)
		}
		if !contains(err.Error(), u) {
			t.Fatalf("%s: error %q does not name %s", k, err, u)
		}
	}
}
