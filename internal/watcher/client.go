package watcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNoAPIServer means no API server is configured: podchron is not running
// in a pod and no kubeconfig was given (or it cannot be read). The tracer
// runs without one, with less context; callers detect it with errors.Is.
var ErrNoAPIServer = errors.New("no Kubernetes API server configured")

// UserAgent is sent to the API server.
const UserAgent = "podchron"

// NewClient returns a clientset for the API server:
//   - kubeconfig != "": that kubeconfig file;
//   - else, running in a pod (KUBERNETES_SERVICE_HOST set): the in-cluster
//     config (service account token);
//   - else $KUBECONFIG (a path list, merged as kubectl does).
//
// When none of these is available the error wraps ErrNoAPIServer (and, for
// a missing file, fs.ErrNotExist).
func NewClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}

// RESTConfig is the client configuration NewClient uses (same choice of
// source, user agent and protobuf encoding), for callers that wrap its
// transport (the scale test counts the bytes received).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := restConfig(kubeconfig, os.Getenv)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = UserAgent
	// Pods and Events support protobuf: cheaper to decode on every node.
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	return cfg, nil
}

// restConfig picks the client configuration; getenv is os.Getenv (injected
// for tests).
func restConfig(kubeconfig string, getenv func(string) string) (*rest.Config, error) {
	if kubeconfig != "" {
		return fromKubeconfig([]string{kubeconfig}, "kubeconfig "+kubeconfig)
	}
	if getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("%w: in-cluster config: %w", ErrNoAPIServer, err)
		}
		return cfg, nil
	}
	if env := getenv("KUBECONFIG"); env != "" {
		var paths []string
		for _, p := range filepath.SplitList(env) {
			if p != "" {
				paths = append(paths, p)
			}
		}
		if len(paths) > 0 {
			return fromKubeconfig(paths, "$KUBECONFIG="+env)
		}
	}
	return nil, fmt.Errorf("%w: not running in a pod (KUBERNETES_SERVICE_HOST unset) and neither a kubeconfig nor $KUBECONFIG given", ErrNoAPIServer)
}

func fromKubeconfig(paths []string, what string) (*rest.Config, error) {
	var existing []string
	var statErr error
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			statErr = errors.Join(statErr, err)
			continue
		}
		existing = append(existing, p)
	}
	if len(existing) == 0 {
		if statErr == nil {
			statErr = fs.ErrNotExist
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrNoAPIServer, what, statErr)
	}
	rules := &clientcmd.ClientConfigLoadingRules{}
	if len(existing) == 1 {
		rules.ExplicitPath = existing[0]
	} else {
		rules.Precedence = existing
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("%w: %s: %w", ErrNoAPIServer, what, err)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return cfg, nil
}
