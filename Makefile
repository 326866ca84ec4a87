# seckill — common tasks. `make help` lists them.
GO       ?= go
BIN      ?= bin/seckill
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/seckill/seckill/internal/buildinfo.Version=$(VERSION)
K6_VERSION ?= v1.8.1

.PHONY: help run build test test-short services lint fmt up down k6 loadtest-smoke bench clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

run: ## run the server on the embedded default (in-process Redis and SQLite)
	$(GO) run ./cmd/seckill serve

build: ## build bin/seckill
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/seckill

services: ## start Redis, the Redis Cluster, the Redlock servers and MariaDB when they are not running
	./scripts/test-services.sh

test: ## start the services, then run every test with the race detector
	@eval "$$(./scripts/test-services.sh --env)" && $(GO) test -race -count=1 ./...

test-short: ## unit tests only, no services
	$(GO) test -short -count=1 ./...

lint: ## gofmt check and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

fmt: ## gofmt -w every Go file
	gofmt -w $$(git ls-files '*.go')

up: ## docker compose: MySQL 8, Redis 7 and seckill
	docker compose up --build -d

down: ## docker compose down
	docker compose down

k6: ## install k6 from the Go module proxy
	$(GO) install go.k6.io/k6@$(K6_VERSION)

loadtest-smoke: ## CI smoke: start seckill on the test services, run loadtest/flash-sale.js briefly, verify
	K6_VERSION=$(K6_VERSION) ./scripts/loadtest-smoke.sh

bench: ## throughput benchmark with wrk (about 4 minutes); its table is in BENCHMARKS.md
	./loadtest/bench.sh

clean:
	rm -rf bin
