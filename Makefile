# podchron. `make help` lists the targets.
GO        ?= go
BIN       ?= bin
CLANG     ?= clang-19
GENERATED := internal/probe/event/podchron_bpfel.go internal/probe/event/podchron_bpfel.o

.PHONY: help deps deps-behind generate check-generate build runc-upstream helm cosign release-local portable test test-load test-unit test-vm test-vm-node test-vm-node-containerd2 test-vm-node-systemd test-vm-kubelet test-vm-kubelet-cgroupfs test-vm-selftest e2e e2e-build e2e-stack2 e2e-stack136 e2e-stack2-crun e2e-nested scale fleet bench bench-busy lint run run-nested trace events clean faults

help: ## list targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

deps: ## install build and test dependencies (Debian, as root; idempotent)
	bash scripts/install-deps.sh
	bash test/vm/install-deps.sh

generate: ## regenerate the eBPF object and Go bindings from bpf/
	cd internal/probe && $(GO) generate ./...

deps-behind: ## list every pinned dependency (go.mod, Helm, golangci-lint, kwok, the collector, Jaeger, Kubernetes, ...) against the newest the Go module proxy serves
	bash scripts/deps-behind.sh

check-generate: ## fail if the committed eBPF objects differ from what bpf/ generates
	bash scripts/check-generate.sh

VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

build: ## build the tracer, the kubectl plugin (kubectl-podchron) and the demo driver into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN)/tracer ./cmd/tracer
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN)/kubectl-podchron ./cmd/kubectl-podchron
	$(GO) build -o $(BIN)/demo ./examples/demo

run: deps build ## a real trace on this node (root): pods driven through a private containerd, traced
	$(BIN)/demo -tracer $(BIN)/tracer $(ARGS)

run-nested: deps build ## the same demo on a node inside a container, as kind makes one: containerd and the tracer in their own pid, mount and cgroup namespaces
	$(BIN)/demo -tracer $(BIN)/tracer -nested $(ARGS)

trace: deps build ## trace this (Kubernetes) node's pods: bin/tracer with ARGS
	$(BIN)/tracer $(ARGS)

events: deps build ## raw kernel events on this node
	$(BIN)/tracer events $(ARGS)

# test/runtime runs its scenarios on every OCI runtime: Debian's runc, the
# newest upstream runc (built by scripts/build-runc.sh, cached) and crun.
# Under make a runtime that is missing fails the run instead of skipping.
# go test hides a passing package's output, so test/runtime also writes its
# matrix (runtime version, result and time per scenario, span-tree verdicts)
# to a file, shown after the run.
RUNTIME_REPORT     := $(BIN)/runtime-matrix.txt
# The OCI runtimes the self-checking demo runs on in test-load.
DEMO_RUNTIMES      ?= runc runc-upstream crun
RUNTIME_MATRIX_ENV = PODCHRON_RUNC_UPSTREAM="$$(bash scripts/build-runc.sh)" PODCHRON_REQUIRE_RUNTIMES=1 \
	PODCHRON_RUNTIME_REPORT="$(CURDIR)/$(RUNTIME_REPORT)"
SHOW_RUNTIME_REPORT = s=$$?; cat $(RUNTIME_REPORT) 2>/dev/null; exit $$s

runc-upstream: ## build the newest upstream runc release from the Go module proxy (cached; prints its path)
	bash scripts/build-runc.sh

# Helm for the chart's checks (deploy/helm_test.go), `make lint` and the e2e,
# which installs podchron with deploy/helm/podchron.
HELM_ENV = PODCHRON_HELM="$$(bash scripts/build-helm.sh)"
# The unit tests also lint and install the chart with Helm 4, the install
# into a kube-apiserver from the e2e's Kubernetes build (deploy/helm_install_test.go).
CHART_ENV = $(HELM_ENV) PODCHRON_HELM4="$$(HELM_VERSION=v4 bash scripts/build-helm.sh)" \
	PODCHRON_KUBE_BIN="$$(bash test/e2e/tools/build.sh kubernetes)"

helm: ## build Helm 3 and Helm 4 (and crane, the OCI registry the chart test pushes to) from the Go module proxy (cached; prints their paths)
	bash scripts/build-helm.sh
	HELM_VERSION=v4 bash scripts/build-helm.sh

# SYFT=1 also builds syft and makes the SBOM with it (as the release
# workflow does); by default the dry run attests the SPDX SBOM the image
# build writes itself (deploy/imagebuild): syft's cold build is longer than
# CI's budget allows (scripts/build-cosign.sh).
SYFT ?= 0

cosign: ## build cosign (and syft with SYFT=1: the release's signing and SBOM tools) from the Go module proxy (cached; prints cosign's path)
	SYFT=$(SYFT) bash scripts/build-cosign.sh

release-local: helm cosign ## the release dry run (part of make test): scripts/release.sh into a local registry, signed with a key made for the run, verified, saved as an OCI layout in bin/release/oci
	SYFT=$(SYFT) KREW_PLATFORMS="$${KREW_PLATFORMS:-linux/amd64 darwin/arm64}" bash scripts/release-local.sh

test: deps check-generate runc-upstream helm ## everything CI runs (root): unit, real-kernel, containerd (runc, upstream runc, crun), under load, guest-kernel (5.10, 6.1, 6.12), the demo on a pure cgroup v2 node in a guest (cgroupfs and systemd drivers), a 1.37 kubelet (systemd and cgroupfs drivers) in such a guest, real-cluster tests on both legs (Kubernetes 1.35 on containerd 1.6; Kubernetes 1.37 on containerd 2 with upstream runc, and a subset of it with crun), the 1.35 cluster in a node inside a container, and the short scale test
	$(RUNTIME_MATRIX_ENV) bash scripts/versions.sh
	$(GO) vet ./...
	$(MAKE) portable lint
	@mkdir -p $(BIN) && rm -f $(RUNTIME_REPORT)
	$(RUNTIME_MATRIX_ENV) $(CHART_ENV) $(GO) test -count=1 -timeout 20m ./...; $(SHOW_RUNTIME_REPORT)
	$(MAKE) release-local
	$(MAKE) test-load
	$(MAKE) test-vm
	$(MAKE) test-vm-node
	$(MAKE) test-vm-node-containerd2
	$(MAKE) test-vm-node-systemd
	$(MAKE) test-vm-kubelet
	$(MAKE) test-vm-kubelet-cgroupfs
	PODCHRON_TEST_LOAD=1 $(MAKE) e2e
	$(MAKE) e2e-nested
	PODCHRON_TEST_LOAD=1 $(MAKE) e2e-stack2
	PODCHRON_TEST_LOAD=1 $(MAKE) e2e-stack2-crun
	$(MAKE) scale SCALE_SHORT=1

test-load: build runc-upstream ## under background CPU load (test/load; root): the containerd tests, then the self-checking demo on each runtime
	@mkdir -p $(BIN) && rm -f $(RUNTIME_REPORT)
	PODCHRON_TEST_LOAD=1 $(RUNTIME_MATRIX_ENV) $(GO) test -count=1 -timeout 20m ./test/runtime; $(SHOW_RUNTIME_REPORT)
	for rt in $(DEMO_RUNTIMES); do \
		PODCHRON_RUNC_UPSTREAM="$$(bash scripts/build-runc.sh)" PODCHRON_OCI_RUNTIME=$$rt \
			$(BIN)/demo -tracer $(BIN)/tracer -load || exit 1; \
	done

# The model, record/replay and the exporters build on any OS: only the probe
# loader (internal/probe, //go:build linux) is Linux's.
PORTABLE_PKGS := ./internal/correlate/... ./internal/fact/... ./internal/span/... ./internal/measure/... ./internal/record/... ./internal/export/... ./internal/probe/event/... ./internal/names/... ./internal/redact/... ./internal/query ./cmd/kubectl-podchron
portable: ## build the portable packages for darwin (no Linux-only code in them)
	GOOS=darwin GOARCH=arm64 $(GO) build $(PORTABLE_PKGS)

test-unit: runc-upstream helm ## tests without the VM run
	@mkdir -p $(BIN) && rm -f $(RUNTIME_REPORT)
	$(RUNTIME_MATRIX_ENV) $(CHART_ENV) $(GO) test -count=1 -timeout 20m ./...; $(SHOW_RUNTIME_REPORT)

# The e2e node's stack (test/e2e/tools/build.sh): k8s135-containerd16 (Kubernetes v1.35.4, the
# last minor that supports containerd 1.x, on Debian's containerd 1.6) or k8s137-containerd2
# (Kubernetes v1.37.2, containerd v2.4.2 from its Go module). `make test` runs both legs. Each
# leg prints its versions first (scripts/versions.sh, then the test's `e2e stack ...` line)
# and its time last.
E2E_STACK ?= k8s135-containerd16

e2e-build: ## build Kubernetes, Jaeger v2 and the OpenTelemetry Collector for the e2e, for E2E_STACK (cached; ~20 min cold on 2 cores)
	PODCHRON_E2E_STACK=$(E2E_STACK) bash test/e2e/tools/build.sh

# The suite runs through gotestsum (scripts/build-gotestsum.sh): what `go test -v` prints;
# after a failure scripts/test-failures.sh prints each failed scenario's last lines again, at
# the end, where CI's tail shows them.
e2e: deps helm ## the real-cluster e2e (root): Kubernetes + containerd + podchron installed with its Helm chart + an OpenTelemetry Collector + Jaeger + Prometheus (E2E_STACK picks the node's stack)
	@echo "e2e stack: $(E2E_STACK)"
	bin="$$(PODCHRON_E2E_STACK=$(E2E_STACK) bash test/e2e/tools/build.sh)" && gotestsum="$$(bash scripts/build-gotestsum.sh)" && \
	PODCHRON_E2E_STACK=$(E2E_STACK) PODCHRON_E2E_BIN="$$bin" bash scripts/versions.sh && t0=$$(date +%s) && \
	json="$$(mktemp /tmp/e2e-json.XXXXXX)" && \
	{ PODCHRON_E2E_STACK=$(E2E_STACK) PODCHRON_E2E_BIN="$$bin" $(HELM_ENV) "$$gotestsum" --format standard-verbose --hide-summary=skipped,output \
		--jsonfile "$$json" --raw-command -- $(GO) test -json -count=1 -p 1 -timeout 30m -parallel 8 ./test/e2e/... $(E2EARGS); \
	s=$$?; [ $$s = 0 ] || bash scripts/test-failures.sh "$$json"; rm -f "$$json"; echo "e2e stack $(E2E_STACK): suite $$(($$(date +%s) - t0)) s, exit $$s"; exit $$s; }

e2e-nested: ## the e2e's cluster in a node inside a container (kind's shape: the whole cluster in new pid, mount and cgroup namespaces; test/e2e/nested_test.go), a named subset of the lifecycle suite, on the 1.35 leg
	PODCHRON_E2E_NESTED=1 $(MAKE) e2e E2EARGS="-run '^TestClusterNested'"

# The OCI runtime of the second stack's leg: runc-upstream (scripts/build-runc.sh) or crun.
# crun needs a version that knows runtime-spec 1.3.0, which containerd v2.4.2
# writes: Debian 12's crun 1.8.1 refuses every sandbox ("OCI runtime create
# failed: unknown version specified"; 2026-11-29).
E2E_STACK2_RUNTIME ?= runc-upstream

e2e-stack2: runc-upstream ## the e2e's second leg (part of make test): Kubernetes v1.37.2 + containerd v2.4.2 built from the module proxy, E2E_STACK2_RUNTIME (~8-12 min cold build); first the CRI watcher's tests on that containerd (its event stream, its restart)
	bin="$$(PODCHRON_E2E_STACK=k8s137-containerd2 bash test/e2e/tools/build.sh)" && \
	PODCHRON_CONTAINERD="$$bin/containerd" $(GO) test -count=1 -run 'TestWatchEventStream|TestWatchAcrossContainerdRestart|TestLifecycleAgainstContainerd' ./internal/cri
	$(MAKE) e2e E2E_STACK=k8s137-containerd2 PODCHRON_OCI_RUNTIME=$(E2E_STACK2_RUNTIME) PODCHRON_RUNC_UPSTREAM="$$(bash scripts/build-runc.sh)"

# The scenarios e2e-stack2-crun runs: the create path, a graceful and an
# overrun termination, OOM, back-off, liveness and network-probe restarts,
# a kill in the pod, a failed postStart hook, a startup-probe restart and an
# ephemeral container (every exec, signal and exit crun's way).
E2E_CRUN_SCENARIOS ?= 1-startup-2-graceful-delete|3-sigterm-ignored-overrun|4-oom-kill|5-crashloop-backoff|6a-liveness-restart|6b-kill-9-in-pod|20-startup-probe-restart|35-poststart-hook-fails|36-network-probe-restarts|46-kubectl-debug

e2e-stack136: runc-upstream ## the suite on Kubernetes v1.36.3 (the minor between the two legs) + containerd v2.4.2 + upstream runc; by hand, not in `make test` (its cold build and suite would take CI past its budget)
	$(MAKE) e2e E2E_STACK=k8s136-containerd2 PODCHRON_OCI_RUNTIME=runc-upstream PODCHRON_RUNC_UPSTREAM="$$(bash scripts/build-runc.sh)"

e2e-stack2-crun: ## the second stack's leg on crun (part of make test): Kubernetes v1.37.2 + containerd v2.4.2 + crun 1.21 built from Debian's source of the upstream release (scripts/build-crun.sh; Debian 12's crun 1.8.1 refuses containerd 2's runtime-spec 1.3), E2E_CRUN_SCENARIOS
	crun="$$(bash scripts/build-crun.sh)" && \
	$(MAKE) e2e E2E_STACK=k8s137-containerd2 PODCHRON_OCI_RUNTIME="$$crun" E2EARGS="-count=1 -run 'TestCluster/lifecycle/^($(E2E_CRUN_SCENARIOS))'"

scale: deps ## a tracer's API cost vs cluster size (root): kube-apiserver + etcd + kwok, 100 and 500 nodes (SCALE_SHORT=1: 25 and 125, < 5 min)
	bin="$$(bash test/e2e/tools/build.sh kubernetes)" && kwok="$$(bash test/scale/build-kwok.sh)" && \
	PODCHRON_SCALE=1 PODCHRON_SCALE_SHORT=$(SCALE_SHORT) PODCHRON_SCALE_BIN="$$bin" PODCHRON_SCALE_KWOK="$$kwok" \
	$(GO) test -count=1 -timeout 60m -v -run '^TestScale$$' ./test/scale $(SCALEARGS)

fleet: deps ## the API server's cost of one tracer per node (root): kube-apiserver + etcd + kwok, one watcher per node for 500 nodes vs none (FLEET_NODES, FLEET_PODS, FLEET_WINDOW, FLEET_CHURN, FLEET_START_RATE, FLEET_OUT, FLEET_PPROF: a directory for the API server's heap profiles, FLEET_APISERVER_ARGS: extra kube-apiserver flags, FLEET_EVENT_TTL: the watchers' --event-ttl, FLEET_FLOOR=0: skip the floor, a bare pod watch per node, measured between, FLEET_SETTLE: how long the tracers run before their window; FLEET_NO_SLICES=1: the tracers without their EndpointSlice watch; etcd 3.5 built once; ~19 min)
	bin="$$(bash test/e2e/tools/build.sh kubernetes)" && kwok="$$(bash test/scale/build-kwok.sh)" && etcd="$$(bash test/scale/build-etcd.sh)" && \
	PODCHRON_FLEET=1 PODCHRON_FLEET_ETCD="$$etcd" PODCHRON_FLEET_NODES=$(FLEET_NODES) PODCHRON_FLEET_PODS=$(FLEET_PODS) PODCHRON_FLEET_WINDOW=$(FLEET_WINDOW) \
	PODCHRON_FLEET_CHURN=$(FLEET_CHURN) PODCHRON_FLEET_START_RATE=$(FLEET_START_RATE) PODCHRON_FLEET_OUT=$(FLEET_OUT) PODCHRON_SCALE_PPROF=$(FLEET_PPROF) PODCHRON_SCALE_APISERVER_ARGS="$(FLEET_APISERVER_ARGS)" PODCHRON_FLEET_EVENT_TTL=$(FLEET_EVENT_TTL) PODCHRON_FLEET_FLOOR=$(FLEET_FLOOR) PODCHRON_FLEET_SETTLE=$(FLEET_SETTLE) PODCHRON_FLEET_NO_SLICES=$(FLEET_NO_SLICES) PODCHRON_SCALE_BIN="$$bin" PODCHRON_SCALE_KWOK="$$kwok" \
	$(GO) test -count=1 -timeout 90m -v -run '^TestFleet$$' ./test/scale $(FLEETARGS)

test-vm: ## probe tests on every kernel in test/vm/kernels.txt, under qemu
	$(GO) run ./test/vm $(VMARGS)

# A pure cgroup v2 node in a qemu guest (TCG): Debian's containerd, runc and
# CNI plugins (the runner copies them with their shared libraries), the
# demo and the tracer built static, the guest's root switched to a tmpfs
# (runc's pivot_root refuses the initramfs), 4 GiB of guest memory.
VM_NODE_KERNEL ?= linux-image-6.12-cloud-amd64
VM_NODE_DIR    := $(abspath $(BIN))/vm-node
# VM_NODE_CONTAINERD: a directory holding the containerd and
# containerd-shim-runc-v2 the guest runs in place of Debian's 1.6
# (test-vm-node-containerd2: the 1.37 leg's containerd v2.4.2, static).
VM_NODE_CONTAINERD ?=
comma := ,
empty :=
space := $(empty) $(empty)
VM_NODE_CTRD   := $(if $(VM_NODE_CONTAINERD),$(VM_NODE_CONTAINERD)/containerd:/usr/bin/containerd$(comma)$(VM_NODE_CONTAINERD)/containerd-shim-runc-v2:/usr/bin/containerd-shim-runc-v2,/usr/bin/containerd$(comma)/usr/bin/containerd-shim-runc-v2)
VM_NODE_EXTRA  := $(VM_NODE_DIR)/demo:/podchron/bin/demo,$(VM_NODE_DIR)/tracer:/podchron/bin/tracer,$(VM_NODE_CTRD),/usr/bin/ctr,/usr/sbin/runc,/usr/lib/cni/bridge,/usr/lib/cni/host-local,/usr/lib/cni/loopback

test-vm-node: ## the self-checking demo (containerd + runc + CNI, five pods, an OOM group kill) on a pure cgroup v2 node: a qemu guest with Debian's 6.12 kernel
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(VM_NODE_DIR)/tracer ./cmd/tracer
	CGO_ENABLED=0 $(GO) build -trimpath -o $(VM_NODE_DIR)/demo ./examples/demo
	$(GO) run ./test/vm -pkg ./test/vm/testdata/node -kernel $(VM_NODE_KERNEL) -switch-root -mem 4096 \
		-modules veth,bridge,overlay -extra $(VM_NODE_EXTRA) -timeout 15m $(VMARGS)

test-vm-node-containerd2: ## test-vm-node with containerd v2.4.2 (built from its Go module, as the 1.37 leg's) in the pure cgroup v2 guest
	$(MAKE) test-vm-node VM_NODE_CONTAINERD="$$(PODCHRON_E2E_STACK=k8s137-containerd2 bash test/e2e/tools/build.sh containerd)"

# The systemd cgroup driver, kubeadm's default: PID 1 is the host's
# systemd (test/vm -systemd), pods are slices and containers scopes, which
# runc asks systemd for. With containerd 2 as today's nodes run it; Debian's
# containerd 1.6 by hand: make test-vm-node VMARGS="$(VM_SYSTEMD_ARGS)".
VM_SYSTEMD_ARGS := -systemd -env PODCHRON_VM_CGROUP_DRIVER=systemd
test-vm-node-systemd: ## test-vm-node-containerd2 with systemd as the guest's PID 1 and the systemd cgroup driver (pod slices, container scopes), as on a kubeadm node
	$(MAKE) test-vm-node-containerd2 VMARGS="$(VM_SYSTEMD_ARGS) $(VMARGS)"

# A real kubelet on a pure cgroup v2 node, with the systemd cgroup driver in
# the guest of test-vm-node-systemd (systemd as PID 1), or with cgroupfs
# (busybox init). The guest runs the e2e's cluster (etcd, the 1.37 leg's
# control plane and kubelet) on the 1.37 leg's containerd 2, and the tracer
# beside them (test/vm/testdata/kubelet).
# The guest needs openssl (the cluster's certificates), iproute2 (its node
# bridge) and iptables (nft; the cluster saves and restores the node's
# tables) besides the node's binaries; ~600 MB of them, hence 6 GiB.
VM_XTABLES := $(foreach b,iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore,/usr/sbin/xtables-nft-multi:/usr/sbin/$(b))
VM_K8S_STACK := k8s137-containerd2
# VM_KUBELET_INIT: the guest's PID 1, systemd for the systemd driver
# (test-vm-kubelet-cgroupfs empties it: busybox init, the cgroupfs driver).
VM_KUBELET_INIT ?= -systemd
VM_K8S_BINS  := kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl
test-vm-kubelet: ## the kubelet (1.37, systemd cgroup driver) on containerd 2 in a pure cgroup v2 guest whose PID 1 is systemd: a graceful stop and an OOM group kill traced, each trace checked against the kubelet and the kernel
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(VM_NODE_DIR)/tracer ./cmd/tracer
	bin="$$(PODCHRON_E2E_STACK=$(VM_K8S_STACK) bash test/e2e/tools/build.sh)" && \
	extra="$(VM_NODE_DIR)/tracer:/podchron/bin/tracer,$$bin/containerd:/usr/bin/containerd,$$bin/containerd-shim-runc-v2:/usr/bin/containerd-shim-runc-v2" && \
	for b in $(VM_K8S_BINS); do extra="$$extra,$$bin/$$b:/podchron/k8s/$$b"; done && \
	$(GO) run ./test/vm -pkg ./test/vm/testdata/kubelet -kernel $(VM_NODE_KERNEL) -switch-root $(VM_KUBELET_INIT) -mem 6144 \
		-modules veth,bridge,overlay,nf_tables -timeout 25m \
		-extra "$$extra,$(subst $(space),$(comma),$(VM_XTABLES)),/usr/bin/ctr,/usr/sbin/runc,/usr/lib/cni/bridge,/usr/lib/cni/host-local,/usr/lib/cni/loopback,/usr/bin/etcd,/usr/bin/openssl,/etc/ssl/openssl.cnf:/usr/lib/ssl/openssl.cnf,/usr/sbin/ip" $(VMARGS)

test-vm-kubelet-cgroupfs: ## test-vm-kubelet with the kubelet's cgroupfs driver (pods under /kubepods) and busybox as the guest's PID 1
	$(MAKE) test-vm-kubelet VM_KUBELET_INIT= VMARGS="-env PODCHRON_VM_CGROUP_DRIVER=cgroupfs $(VMARGS)"

test-vm-selftest: ## the VM runner's own smoke test
	$(GO) run ./test/vm -pkg ./test/vm/testdata/smoke

bench: build ## decode benchmark and the exec-storm benchmark (root)
	$(GO) test -run '^$$' -bench . -benchmem ./internal/probe/event ./internal/correlate/cgroupid
	$(GO) test -run '^$$' -bench CorrelateKernelEvent -benchmem ./internal/correlate
	$(GO) test -run '^$$' -bench TrackedNodeMemory -benchtime 3x ./internal/correlate
	bash bench/execstorm.sh

bench-busy: ## busy-node benchmark: 110 pods forking, exec-probed every 10 s, one flooding signals; daemon CPU, RSS, in-kernel time, losses (root)
	bash bench/busynode.sh

faults: ## OTLP fault suite with figures (test/faults: outage, partial success, oversized span, throttling, 400/401, clock step ±1 h; PODCHRON_FAULT_OUTAGE=10m for the long outage, default 20s)
	$(GO) test -count=1 -v -timeout 30m ./test/faults/

BPF_SOURCES = $$(git ls-files 'bpf/*.c' 'bpf/*.h')
lint: helm ## golangci-lint (.golangci.yaml), clang-format of bpf/ (bpf/.clang-format), helm lint of the chart (Helm 3 and 4)
	"$$(bash scripts/build-golangci-lint.sh)" run ./...
	clang-format-19 --dry-run --Werror $(BPF_SOURCES)
	"$$(bash scripts/build-helm.sh)" lint --strict deploy/helm/podchron
	"$$(HELM_VERSION=v4 bash scripts/build-helm.sh)" lint --strict deploy/helm/podchron

clean:
	rm -rf $(BIN)
