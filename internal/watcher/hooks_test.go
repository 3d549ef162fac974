package watcher

import (
	"reflect"
	"testing"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Hooks the kubelet runs itself (sleep, httpGet) leave nothing for the
// kernel to see: the model takes what they do from the spec. Header values
// and the host are not kept (a header can carry a token).
func TestConvertKubeletRunHooks(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *corev1.LifecycleHandler
		want *fact.Handler
	}{
		{"sleep", &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 20}}, &fact.Handler{Kind: KindSleep, SleepSeconds: 20}},
		{"httpGet numbered port", &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromInt32(8080),
			Host: "10.0.0.9", HTTPHeaders: []corev1.HTTPHeader{{Name: "Authorization", Value: "Bearer s3cret"}}}},
			&fact.Handler{Kind: KindHTTPGet, HTTPPath: "/drain", HTTPPort: "8080"}},
		{"httpGet named port", &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("admin")}},
			&fact.Handler{Kind: KindHTTPGet, HTTPPath: "/quit", HTTPPort: "admin"}},
		{"tcpSocket", &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9)}}, &fact.Handler{Kind: KindTCPSocket}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
				Lifecycle: &corev1.Lifecycle{PreStop: tc.in, PostStart: tc.in}}}}}
			info := Convert(pod)
			if len(info.Containers) != 1 {
				t.Fatalf("containers: %+v", info.Containers)
			}
			got := info.Containers[0]
			if !reflect.DeepEqual(got.PreStop, tc.want) || !reflect.DeepEqual(got.PostStart, tc.want) {
				t.Errorf("preStop %+v postStart %+v, want %+v", got.PreStop, got.PostStart, tc.want)
			}
		})
	}
}
