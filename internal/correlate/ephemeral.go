// Ephemeral (kubectl debug) containers: someone's debugging session in the
// pod, not part of its start-up or of a Job's completion; their exit is
// the session's end, not the application's error.

package correlate

import "slices"

// ephemeral reports whether a container name is one of the pod's
// ephemeral containers (the API server's pod spec says).
func (p *pod) ephemeral(name string) bool {
	return p != nil && p.info != nil && name != "" && slices.Contains(p.info.EphemeralContainers, name)
}

// notApp: a container that is not one of the pod's app containers for the
// start-up and completion decisions (the sandbox, an init container, an
// ephemeral container).
func (ct *container) notApp() bool { return ct.sandbox || ct.init || ct.pod.ephemeral(ct.name) }
