# seckill — common tasks. `make help` lists them.
GO       ?= go
BIN      ?= bin/seckill
# The binary reports internal/buildinfo.Release, the newest release of
# CHANGELOG.md, and the commit it was built from; VERSION, when set
# (make build VERSION=1.2.3-rc1), replaces the release.
VERSION  ?=
LDFLAGS  := -s -w $(if $(VERSION),-X github.com/seckill/seckill/internal/buildinfo.Version=$(VERSION))
K6_VERSION ?= v1.8.1
# golangci-lint, built from the Go module proxy at this version into bin/.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := bin/golangci-lint-$(GOLANGCI_LINT_VERSION)
# make chaos: how long the randomized fault run lasts, and its seed (empty:
# a random one, printed at the start).
DURATION ?= 60s
SEED     ?=
# go test's limit for it: twice the run plus 15 minutes for the build,
# the barriers and the checks ("1m30s" -> 1080s).
CHAOS_TIMEOUT = $(shell echo '$(DURATION)' | awk '{ s = 0; d = $$0; while (match(d, /^[0-9.]+(h|ms|m|s)/)) { v = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1); u = v; gsub(/[0-9.]/, "", u); n = v + 0; if (u == "h") s += n * 3600; else if (u == "m") s += n * 60; else if (u == "s") s += n; else s += n / 1000 } printf "%ds", 2 * s + 900 }')

.PHONY: help run build test test-short test-helm test-tidb chaos services lint fmt generate console apidocs up down k6 loadtest-smoke bench bench-events bench-cost bench-buckets bench-fair clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

run: ## run the server on the embedded default (in-process Redis and SQLite)
	$(GO) run ./cmd/seckill serve

build: ## build bin/seckill
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/seckill

services: ## start Redis, the Redis Cluster, the Sentinel set (each also speaking TLS only), the Redlock servers and MariaDB when they are not running
	./scripts/test-services.sh

test: ## start the services, then run every test with the race detector, then the Helm chart's tests
	@eval "$$(./scripts/test-services.sh --env)" && $(GO) test -race -count=1 -timeout 30m ./...
	@$(MAKE) --no-print-directory test-helm

# The chart's tests are a module of their own (deploy/helm/go.mod), so that
# Helm's and Kubernetes' dependencies stay out of seckill's go.mod. They
# start no goroutine of their own: no race detector, which would build all
# of Kubernetes' types instrumented.
test-helm: ## render and lint the Helm chart (deploy/helm/seckill) and check it against Kubernetes' types and seckill's settings
	cd deploy/helm && $(GO) test -count=1 -timeout 15m ./...

# The packages whose tests talk to SQL, run against TiDB instead of MariaDB
# (scripts/tidb.sh starts one, or SECKILL_TEST_TIDB_DSN names yours); the
# whole-server tests of internal/app first, the longest. On TiDB, where a
# database costs seconds of DDL, their servers reuse databases emptied by
# DELETE (testsvc.ServerMySQL). The commands' --help examples name
# MariaDB's address as written, and TestMySQLDownDuringDrain stops a
# mariadbd of its own: both run in make test only.
TIDB_PACKAGES = ./internal/app ./migrations ./internal/catalog ./internal/order ./internal/outbox ./internal/sale \
	./internal/cli ./internal/httpapi ./api/client ./internal/faulttest ./internal/chaostest
TIDB_SKIP = ^(TestHelpExamples|TestMySQLDownDuringDrain)$$

test-tidb: ## the SQL packages' tests against TiDB (docs/operate/deploy.md#tidb)
	@eval "$$(./scripts/test-services.sh --env)" && tidb=$$(./scripts/tidb.sh) && eval "$$tidb" && \
		SECKILL_TEST_MYSQL_DSN="$$SECKILL_TEST_TIDB_DSN" $(GO) test -race -count=1 -timeout 40m -skip '$(TIDB_SKIP)' $(TIDB_PACKAGES)

chaos: ## randomized fault run (internal/chaostest): make chaos DURATION=10m SEED=n
	@eval "$$(./scripts/test-services.sh --env)" && SECKILL_CHAOS_DURATION='$(DURATION)' SECKILL_CHAOS_SEED='$(SEED)' \
		$(GO) test -race -count=1 -v -run '^TestChaos$$' -timeout $(CHAOS_TIMEOUT) ./internal/chaostest

test-short: ## unit tests only, no services (the chart's tests too)
	$(GO) test -short -count=1 ./...
	@$(MAKE) --no-print-directory test-helm

lint: $(GOLANGCI_LINT) ## gofmt check, go vet, golangci-lint (.golangci.yml) on the module, on bench/ and on deploy/helm/, and api/openapi.yaml validated as OpenAPI 3.1
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	cd deploy/helm && $(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
	cd bench && $(CURDIR)/$(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...
	cd deploy/helm && $(CURDIR)/$(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...
	$(GO) test -count=1 -run '^TestDocumentValidates$$' ./api

$(GOLANGCI_LINT):
	GOBIN=$(CURDIR)/bin/.golangci $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv bin/.golangci/golangci-lint $@

fmt: $(GOLANGCI_LINT) ## gofmt and goimports (.golangci.yml) -w every Go file
	$(GOLANGCI_LINT) fmt ./...
	cd bench && $(CURDIR)/$(GOLANGCI_LINT) fmt --config $(CURDIR)/.golangci.yml ./...
	cd deploy/helm && $(CURDIR)/$(GOLANGCI_LINT) fmt --config $(CURDIR)/.golangci.yml ./...

generate: ## regenerate the API client (api/client) from api/openapi.yaml with oapi-codegen
	$(GO) generate ./api/client

console: ## rebuild the admin console's script and stylesheet (internal/console/assets, committed and embedded) from npm
	cd internal/console/web && npm ci && npm run build

apidocs: ## rebuild the API reference's script (internal/apidocs/assets/redoc.js, committed and embedded) from npm
	cd internal/apidocs/web && npm ci && npm run build

up: ## docker compose: MySQL 8, Redis 7 and seckill
	docker compose up --build -d

down: ## docker compose down
	docker compose down

k6: ## install k6 from the Go module proxy into bin/k6, where loadtest/README.md calls it
	GOBIN=$(CURDIR)/bin $(GO) install go.k6.io/k6@$(K6_VERSION)

loadtest-smoke: ## CI smoke: start seckill on the test services, run loadtest/flash-sale.js briefly, verify
	K6_VERSION=$(K6_VERSION) ./scripts/loadtest-smoke.sh

bench: ## throughput benchmark with wrk (about 4 minutes); its table is in BENCHMARKS.md
	./loadtest/bench.sh

bench-events: ## the drain's SQL transaction with order events off, on, and on with a dispatcher beside it, 8 rounds; then a sale over HTTP per receiver, events delivered per second against the drain's orders per second (EVENT_ROUNDS=n, default 3); then a mass expiry (about 30 minutes)
	eval "$$(./scripts/test-services.sh --env)" && \
		for i in 1 2 3 4 5 6 7 8; do $(GO) test -run '^$$' -bench 'BenchmarkDrainInsert' -benchtime 60x ./internal/order/ | grep orders/s; done && \
		(cd bench && $(GO) run ./loadbench -events all -event-rounds $(or $(EVENT_ROUNDS),3) -d 5s) && \
		$(GO) test -run '^$$' -bench 'BenchmarkMassExpiry' -benchtime 1x -count 3 ./internal/outbox/ | grep -E 's-to-deliver'

bench-fair: ## bots' share of units with the waiting room, with the room and a proof of work, without, and with a drop of 5 sizes through one room: 10,000 shoppers (1,000 bots, 30 identities to an operator), 200 units; 20 runs per mode, 3 of them with the proof of work (RUNS=n, POW_RUNS=n to change; about 16 minutes)
	eval "$$(./scripts/test-services.sh --env)" && \
		cd bench && $(GO) run ./fairbench -runs $(or $(RUNS),20) -pow-runs $(or $(POW_RUNS),3)

bench-cost: ## CPU per accepted order and the rate against an earlier commit (REF=<commit>): the hot-SKU and a 100-SKU row, 3 rounds alternated (about 10 minutes)
	@test -n "$(REF)" || { echo "bench-cost: name the earlier commit, e.g. make bench-cost REF=46cbc0a" >&2; exit 2; }
	@ref=$$(mktemp -d) && git worktree add -q --detach "$$ref/tree" "$(REF)" && \
		trap 'git worktree remove --force "$$ref/tree"; rm -rf "$$ref"' EXIT && \
		./loadtest/bench.sh -cost "$$ref/tree" -d 8s $(BENCH_ARGS)

bench-buckets: ## one hot SKU in 1, 3 and 6 stock buckets on the test Redis Cluster: script calls and CPU per master (about 3 minutes)
	./loadtest/bench.sh -buckets 1,3,6

clean:
	rm -rf bin
