# Tether — run `make help` for the targets.
GO ?= go
PKGS := ./...
BIN := bin/tether
# Stamp the commit into every binary make builds (tether version, /health,
# the start log): go run never stamps it, and go build only from a plain clone.
VERSION_PKG := github.com/tether-run/tether/internal/version
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED := $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true || echo false)
LDFLAGS := -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).modified=$(MODIFIED)

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_\/-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the tether binary into bin/
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tether

.PHONY: install
install: ## Install tether into $(go env GOPATH)/bin (put that directory on PATH)
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/tether
	@bin="$$($(GO) env GOBIN)"; [ -n "$$bin" ] || bin="$$($(GO) env GOPATH)/bin"; \
	 case ":$$PATH:" in *":$$bin:"*) echo "installed $$bin/tether";; \
	 *) echo "installed $$bin/tether; $$bin is not on PATH: export PATH=\"$$bin:\$$PATH\"";; esac

.PHONY: image
image: ## Build the container image tether:dev around a static bin/image/tether (podman; see docs/deploy.md)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' -o bin/image/tether ./cmd/tether
	mkdir -p bin/image/data bin/image/tmp
	CONTAINERS_CONF=$${CONTAINERS_CONF:-$(CURDIR)/deploy/docker/containers.conf} podman build --format docker -f deploy/docker/Dockerfile.prebuilt -t tether:dev bin/image

.PHONY: run
run: ## Start a dev server on the embedded store (prints an admin token)
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/tether serve --dev

.PHONY: test
test: ## Every test with -race (needs Go and gcc), then the API suite on etcd; ends with what it skipped and why
	@skips=$$(mktemp); rc=0; \
	TETHER_TEST_SKIPS=$$skips $(GO) test -race -count=1 -timeout 15m $(PKGS) || rc=$$?; \
	if [ $$rc = 0 ]; then TETHER_TEST_SKIPS=$$skips TETHER_TEST_STORE=etcd $(GO) test -race -count=1 -timeout 10m ./api/ || rc=$$?; fi; \
	awk -f .ci/skip-summary.awk $$skips; rm -f $$skips; exit $$rc

.PHONY: test-etcd
test-etcd: ## The conformance suite (api tests) on a real three-member etcd cluster (TETHER_TEST_ETCD=URLs: an external one)
	TETHER_TEST_STORE=etcd $(GO) test -race -count=1 -timeout 10m ./api/

.PHONY: test-postgres
test-postgres: ## The conformance suite (api tests) on two servers of a cluster over a real PostgreSQL (TETHER_TEST_POSTGRES_URL=URL: an external one)
	TETHER_TEST_STORE=postgres $(GO) test -race -count=1 -timeout 15m ./api/

.PHONY: test-race
test-race: test ## Alias of test (the suite always runs with -race)

.PHONY: test-short
test-short: ## Run the tests without the race detector (faster)
	$(GO) test -count=1 $(PKGS)

.PHONY: sim
sim: ## The lease core's deterministic simulation: SEEDS=n seeds (default 1000), or SEED=n to replay one with its trace
	@if [ -n "$(SEED)" ]; then $(GO) test -count=1 -run 'TestSim$$' -v ./internal/sim/ -seed $(SEED); \
	else $(GO) test -count=1 -timeout 0 -run 'TestSim$$' -v ./internal/sim/ -seeds $(or $(SEEDS),1000) -first $(or $(FIRST),1); fi

.PHONY: linearize
linearize: ## Long lease linearizability checks (porcupine) against real servers: Badger with kill -9 restarts, etcd without faults, then etcd with owner kills, cut-offs, pauses, etcd leader kills, both at once, and network splits in namespaces, then PostgreSQL with owner kills and pauses; then the flow-control checks (limits per key, start rates) on Badger with kill -9 and etcd with owner kills (~75 min; splits need root)
	TETHER_LINEARIZE=long $(GO) test -count=1 -timeout 120m -v -run 'TestLinearize|TestFlowLimits' ./cmd/tether/

.PHONY: spec-lint
spec-lint: ## Lint openapi.yaml with Redocly (recommended) and Spectral (spectral:oas); needs npm
	bash .ci/spec-lint.sh

.PHONY: ts-e2e
ts-e2e: ## TypeScript client: regenerate-and-diff its types, type check, run its end-to-end script against a real server
	bash .ci/typescript-e2e.sh

.PHONY: py-e2e
py-e2e: ## Python client: drift check of its generated modules, pip install into a venv, its pytest suite against a real server
	bash .ci/python-e2e.sh

.PHONY: bench
bench: ## Benchmark a real server process over HTTP (all scenarios, ~3 min); see BENCHMARKS.md
	$(GO) run ./cmd/tether-bench -c 32 -d 10s

.PHONY: soak
soak: ## An hour at a constant rate with retention on: disk, RSS and claim latency must level off
	TETHER_SOAK_DURATION=1h $(GO) test ./cmd/tether -run TestSoakLevelsOff -count=1 -v -timeout 2h

.PHONY: bench-quick
bench-quick: ## A few-second smoke run of every benchmark scenario (CI runs this; River's comparison needs a PostgreSQL: see bench-river)
	$(GO) run ./cmd/tether-bench -quick

.PHONY: bench-river
bench-river: ## Tether's (a) and (b) on PostgreSQL against River on the same database, 3 alternating rounds: make bench-river POSTGRES_URL=postgres://...
	@test -n "$(POSTGRES_URL)" || { echo "bench-river needs POSTGRES_URL=postgres://user@host:port/db"; exit 2; }
	$(GO) run ./cmd/tether-bench -store postgres -postgres-url "$(POSTGRES_URL)" -vs-river -c 32 -d 10s

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

.PHONY: generate
generate: ## Regenerate the Go client, the Python client's generated modules (and the TypeScript types) from openapi.yaml
	$(GO) generate ./client/ ./api/
	$(GO) run ./cmd/tether-pygen -spec openapi.yaml -out clients/python/tether_client
	@if command -v npm >/dev/null && [ -d clients/typescript/node_modules ]; then cd clients/typescript && npm run --silent generate; fi

# The packages whose stored records have a generated codec (msgp).
CODEC_PKGS := ./internal/records/ ./internal/nodes/ ./internal/tenancy/ ./internal/fleet/ ./internal/message/ ./internal/schedule/

.PHONY: generate-codecs
generate-codecs: ## Regenerate the stored records' MessagePack codecs (*_gen.go) with msgp
	$(GO) generate $(CODEC_PKGS)

.PHONY: verify
verify: generate generate-codecs ## Fail when generated code is stale
	@git diff --exit-code -- client/ api/encode_gen.go clients/python/tether_client/ || (echo "client/, api/encode_gen.go or clients/python/tether_client/ is stale: run make generate and commit" && exit 1)
	@git diff --exit-code -- $(patsubst ./%/,%/*_gen.go,$(CODEC_PKGS)) || (echo "a stored records' codec is stale: run make generate-codecs and commit" && exit 1)
	@untracked=$$(git ls-files --others --exclude-standard -- $(patsubst ./%/,%/*_gen.go,$(CODEC_PKGS))); if [ -n "$$untracked" ]; then echo "generated but not committed: $$untracked"; exit 1; fi

.PHONY: fuzz
fuzz: ## Run each fuzz target for a short while
	$(GO) test ./internal/records/ -run '^$$' -fuzz FuzzOrderBytes -fuzztime 20s
	$(GO) test ./internal/records/ -run '^$$' -fuzz FuzzKeysStayInsideTenant -fuzztime 20s
	$(GO) test ./api/ -run '^$$' -fuzz FuzzDecodeNodeSpec -fuzztime 20s
	$(GO) test ./internal/nodes/ -run '^$$' -fuzz FuzzNodePatch -fuzztime 20s
	$(GO) test ./internal/nodes/ -run '^$$' -fuzz FuzzParseETag -fuzztime 10s
	$(GO) test ./internal/tenancy/ -run '^$$' -fuzz FuzzDecodePolicyPatch -fuzztime 20s
	$(GO) test ./internal/schedule/ -run '^$$' -fuzz FuzzParseTiming -fuzztime 20s
