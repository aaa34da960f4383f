# Image URL to use for all building/pushing image targets
IMG ?= ghcr.io/ownergc/ownergc:latest

# Kubernetes version of the test control plane: the version of
# k8s.io/kubernetes that hack/tools/go.mod requires (kube-apiserver, etcd and
# kube-controller-manager are built from it, from the Go module proxy).
# test/framework.KubernetesVersion must agree; a test in test/framework checks.
ENVTEST_K8S_VERSION ?= $(shell sed -n 's/^[[:space:]]*k8s\.io\/kubernetes v//p' hack/tools/go.mod)

# Get the currently used golang install path (in GOPATH/bin, unless GOBIN is set)
ifeq (,$(shell go env GOBIN))
GOBIN=$(shell go env GOPATH)/bin
else
GOBIN=$(shell go env GOBIN)
endif

# Setting SHELL to bash allows bash commands to be executed by recipes.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate the CRD and ClusterRole manifests from the markers in api/ and internal/.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/crdmetadata config/crd/bases/*.yaml

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods for the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt against code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet against code.
	@echo "==> go vet ./... (the first run type-checks every dependency: about 4 minutes on 2 cores)"
	go vet ./...

.PHONY: test
test: manifests generate fmt vet envtest-assets installer-check ## Run unit and integration tests against a real kube-apiserver.
	@echo "==> hack/monitoring: the alerts and the Grafana dashboard against docs/metrics.md, with Prometheus' PromQL parser (a module of its own; the first run downloads it)"
	cd hack/monitoring && go test ./... -count=1
	@echo "==> go test ./... (compiling the test binaries takes a few minutes the first time; then each integration package starts its own control plane and runs for up to several minutes; a line appears as each package finishes)"
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test ./... -timeout 45m -coverprofile cover.out

.PHONY: test-unit
test-unit: ## Run only the unit tests (no control plane needed).
	@echo "==> go test -race (the first run compiles every dependency with the race detector: about 4 minutes on 2 cores)"
	go test $$(go list ./... | grep -v /test/) -race

.PHONY: verify
verify: manifests generate fmt build-installer lint ## Regenerate everything, lint (with the import rules), check every Go file's licence header, and fail when the committed files differ.
	@echo "==> every Go file begins with the licence header of hack/boilerplate.go.txt (hack/licence)"
	go test ./hack/licence/ -count=1
	@if [ -n "$$(git status --porcelain -- . ':!bin')" ]; then \
		echo "Generated files are out of date; run 'make manifests generate fmt build-installer' and commit:"; \
		git status --porcelain -- . ':!bin'; git --no-pager diff --stat; exit 1; fi

.PHONY: lint
lint: golangci-lint ## Run golangci-lint (.golangci.yml), which also enforces the import rules between packages (depguard).
	@echo "==> golangci-lint (about a minute; several the first time, while it type-checks the dependencies)"
	$(GOLANGCI_LINT) run ./...
	cd hack/monitoring && $(GOLANGCI_LINT) run ./...

.PHONY: installer-check
installer-check: kustomize ## Fail when dist/install.yaml or the generated parts of dist/chart are stale with respect to config/.
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(KUSTOMIZE) build config/default > $$tmp/install.yaml; \
	if ! diff -q $$tmp/install.yaml dist/install.yaml >/dev/null; then \
		echo "dist/install.yaml is stale: run 'make build-installer' and commit the result"; \
		diff -u dist/install.yaml $$tmp/install.yaml | head -40; exit 1; fi; \
	cp -R dist/chart $$tmp/chart; \
	$(call gen-helm-chart,$$tmp/chart); \
	if ! diff -r dist/chart $$tmp/chart >/dev/null; then \
		echo "dist/chart is stale: run 'make helm-chart' and commit the result"; \
		diff -ruN dist/chart $$tmp/chart | head -40; exit 1; fi

.PHONY: test-compat
test-compat: compat-assets ## Run the install tests against the oldest supported Kubernetes (not part of make test; the first run builds its control plane: about 10 minutes on 2 cores).
	@echo "==> go test ./test/integration/install/ against kube-apiserver and kube-controller-manager v$(COMPAT_K8S_VERSION)"
	KUBEBUILDER_ASSETS="$(COMPAT_ASSETS)" go test ./test/integration/install/ -count=1 -timeout 30m \
		-skip '^(TestManagerSendsOnlyWhatItsRolesAllow|TestFleetSendsOnlyWhatItsRolesAllow)$$'
# The two tests skipped compare the requests the manager sends with those it
# sends to kube-apiserver $(ENVTEST_K8S_VERSION): an older one has no
# streaming lists, so the manager lists instead, and refuses the Job status
# those tests write.

.PHONY: bench
bench: envtest-assets ## Run ownergc side by side with kube-controller-manager's collector and write docs/benchmarks.md.
	go test ./internal/graph/ -run '^$$' -bench 'Insert|Update|Observe|Remove' -benchmem -benchtime 20000x
	go test ./internal/graph/ -run '^$$' -bench 'BytesPerNode' -benchtime 1x
	go test ./internal/monitor/ -run '^$$' -bench 'StoreAndGraph|Relist' -benchtime 1x
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go run ./test/bench -assets "$(ENVTEST_ASSETS)" -out docs/benchmarks.md

.PHONY: bench-scale
bench-scale: envtest-assets ## Memory and start-up with M=200,000 objects, and a wide cascade of 50,000 dependents at QPS 200, side by side with kube-controller-manager (prints; takes about 30 minutes).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go run ./test/bench -assets "$(ENVTEST_ASSETS)" -only wide,memory -m 200000 -n 50000 -rounds 3

.PHONY: demo
demo: demo-assets ## Start a throwaway control plane, run ownergc on it and play a cascading-deletion story (with kubectl ownergc tree and why).
	@echo "==> Building bin/manager, bin/kubectl-ownergc (the kubectl plugin) and bin/demo with go build (the first build compiles client-go, controller-runtime and cli-runtime: about $(GO_BUILD_MINUTES) on 2 cores)"
	@mkdir -p $(LOCALBIN)
	go build -o $(LOCALBIN)/manager .
	go build -o $(LOCALBIN)/kubectl-ownergc ./cmd/kubectl-ownergc
	go build -o $(LOCALBIN)/demo ./test/demo
	$(LOCALBIN)/demo -assets "$(ENVTEST_ASSETS)" -manager $(LOCALBIN)/manager -plugin $(LOCALBIN)/kubectl-ownergc

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Regenerate, format and vet the code, then build the manager binary.
	go build -o bin/manager .

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-ownergc (put it on your PATH for `kubectl ownergc tree|why|graph`).
	@echo "==> Building bin/kubectl-ownergc with go build (the first build compiles client-go and cli-runtime: about $(GO_BUILD_MINUTES) on 2 cores)"
	@mkdir -p $(LOCALBIN)
	go build -o $(LOCALBIN)/kubectl-ownergc ./cmd/kubectl-ownergc

.PHONY: run
run: manifests generate fmt vet ## Run the manager from your host against the cluster in your kubeconfig.
	go run .

.PHONY: docker-build
docker-build: ## Build the docker image with the manager.
	$(CONTAINER_TOOL) build -t ${IMG} .

.PHONY: docker-push
docker-push: ## Push the docker image with the manager.
	$(CONTAINER_TOOL) push ${IMG}

.PHONY: build-installer
build-installer: manifests generate kustomize ## Generate dist/install.yaml (CRDs, RBAC and the Deployment in one file) and the generated parts of dist/chart.
	mkdir -p dist
	$(KUSTOMIZE) build config/default > dist/install.yaml
	$(call gen-helm-chart,dist/chart)

.PHONY: helm-chart
helm-chart: manifests kustomize ## Regenerate the CRD, RBAC, metrics Service and Prometheus templates of the Helm chart in dist/chart from config/.
	$(call gen-helm-chart,dist/chart)

# gen-helm-chart writes the parts of the chart that come from config/ into the
# chart directory $(1) (see hack/helmchart): the objects of config/default,
# then, for the value fleet.enable, those of config/fleet; the rest of the
# chart is written by hand.
define gen-helm-chart
{ $(KUSTOMIZE) build config/default; echo ---; $(KUSTOMIZE) build config/prometheus; printf -- '---\n# fleet.enable\n---\n'; $(KUSTOMIZE) build config/fleet; echo ---; $(KUSTOMIZE) build config/prometheus; } | go run ./hack/helmchart $(1)
endef

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install the CRDs into the cluster in your kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Uninstall the CRDs from the cluster in your kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy ownergc into the cluster in your kubeconfig (set IMG to your image); changes no file of the tree.
	$(call deploy-build) | $(KUBECTL) apply -f -

.PHONY: deploy-manifests
deploy-manifests: kustomize ## Print what `make deploy` applies: config/default with the manager's image set to IMG.
	@$(call deploy-build)

# deploy-build prints config/default with the manager's image set to $(IMG).
# It sets the image in a temporary copy of config/, so that `make deploy`
# leaves config/manager/kustomization.yaml as it is (make verify and the
# installer check compare the tree with what is committed).
define deploy-build
tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; cp -R config "$$tmp/config"; \
(cd "$$tmp/config/manager" && $(KUSTOMIZE) edit set image controller=$(IMG)); \
$(KUSTOMIZE) build "$$tmp/config/default"
endef

.PHONY: undeploy
undeploy: kustomize ## Remove ownergc from the cluster in your kubeconfig.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

##@ Dependencies

## Location to install dependencies to
LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
ENVTEST_ASSETS ?= $(LOCALBIN)/k8s/v$(ENVTEST_K8S_VERSION)
# The oldest Kubernetes version ownergc supports, which `make test-compat`
# runs the install tests against: the k8s.io/kubernetes that
# hack/tools/compat/go.mod requires.
COMPAT_K8S_VERSION ?= $(shell sed -n 's/^[[:space:]]*k8s\.io\/kubernetes v//p' hack/tools/compat/go.mod)
COMPAT_ASSETS ?= $(LOCALBIN)/k8s/v$(COMPAT_K8S_VERSION)

## Tool versions
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION ?= v5.7.1
GOLANGCI_LINT_VERSION ?= v2.15.0

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into ./bin.
$(CONTROLLER_GEN): | $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Install golangci-lint into ./bin.
$(GOLANGCI_LINT): | $(LOCALBIN)
	@echo "==> Building golangci-lint $(GOLANGCI_LINT_VERSION) from the Go module proxy (one-time cost: about 3 minutes on 2 cores)"
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Install kustomize into ./bin.
$(KUSTOMIZE): | $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

ENVTEST_BINARIES = $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(ENVTEST_ASSETS)/kube-controller-manager

.PHONY: envtest-assets
envtest-assets: $(ENVTEST_BINARIES) ## Build kube-apiserver, etcd and kube-controller-manager from the Go module proxy (once).

# The demo runs no kube-controller-manager.
.PHONY: demo-assets
demo-assets: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd

# Rough cold-build times on 2 cores, printed before each build. The
# Kubernetes binaries share most of their packages: whichever is built
# first pays for them.
GO_BUILD_MINUTES = 2 minutes
BUILD_MINUTES_kube-apiserver = 5 minutes
BUILD_MINUTES_etcd = 2 minutes
BUILD_MINUTES_kube-controller-manager = 3 minutes after kube-apiserver

# hack/tools is its own Go module; each binary is built only when missing.
$(ENVTEST_ASSETS)/%: hack/tools/go.mod hack/tools/go.sum
	@mkdir -p $(ENVTEST_ASSETS)
	@echo "==> Building $* (control plane of Kubernetes v$(ENVTEST_K8S_VERSION)) from the Go module proxy into $(ENVTEST_ASSETS) (once; about $(BUILD_MINUTES_$*) on 2 cores)"
	cd hack/tools && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o $(ENVTEST_ASSETS)/$*.tmp ./$* && mv $(ENVTEST_ASSETS)/$*.tmp $(ENVTEST_ASSETS)/$*

# The control plane of `make test-compat`: kube-apiserver and
# kube-controller-manager from hack/tools/compat, each built only when
# missing, and the etcd of the current one.
.PHONY: compat-assets
compat-assets: $(COMPAT_ASSETS)/kube-apiserver $(COMPAT_ASSETS)/kube-controller-manager $(COMPAT_ASSETS)/etcd ## Build the control plane of the oldest supported Kubernetes from the Go module proxy (once).
$(COMPAT_ASSETS)/etcd: $(ENVTEST_ASSETS)/etcd
	@mkdir -p $(COMPAT_ASSETS)
	cp $< $@
$(COMPAT_ASSETS)/kube-%: hack/tools/compat/go.mod hack/tools/compat/go.sum
	@mkdir -p $(COMPAT_ASSETS)
	@echo "==> Building kube-$* (control plane of Kubernetes v$(COMPAT_K8S_VERSION)) from the Go module proxy into $(COMPAT_ASSETS) (once; about $(BUILD_MINUTES_kube-$*) on 2 cores)"
	cd hack/tools/compat && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o $(COMPAT_ASSETS)/kube-$*.tmp ./kube-$* && mv $(COMPAT_ASSETS)/kube-$*.tmp $(COMPAT_ASSETS)/kube-$*

# go-install-tool will 'go install' any package with custom target and name of binary, if it doesn't exist
# $1 - target path with name of binary (ideally with version)
# $2 - package url which can be installed
# $3 - specific version of package
define go-install-tool
@[ -f $(1) ] || { \
set -e; \
package=$(2)@$(3) ;\
echo "==> Installing $${package} into $(LOCALBIN) (once; about a minute)" ;\
GOBIN=$(LOCALBIN) go install $${package} ;\
mv "$$(echo "$(1)" | sed "s/-$(3)$$//")" $(1) ;\
}
endef
