# ΔQ observability for the OpenTelemetry Collector.
# `make test` is everything CI runs; `make bench` prints the benchmark tables.

GO        ?= go
BIN       := $(CURDIR)/bin
MDATAGEN  := $(BIN)/mdatagen
STATICCHECK := $(BIN)/staticcheck
# Go packages of the main module (nested modules such as internal/tools are separate).
PKGS      := ./...
# sdk/deltaqstart is a module of its own: applications that import it require the
# OpenTelemetry Go SDK only. Every target below runs on it too.
SDK       := sdk/deltaqstart
# deploy/kubernetes is a module of its own too: its tests take the Kubernetes API types, which the
# collector's module graph must not (make test-kubernetes runs them).
KUBERNETES := deploy/kubernetes

.PHONY: all test test-go test-race test-erlang bench generate tools fmt vet lint clean figures

all: test

## test: vet, unit tests (with the race detector on the concurrent packages), the Erlang library's
## tests, and the end-to-end tests (the built collector with real Prometheus, Alertmanager, Erlang/OTP).
test: vet lint test-go test-race test-erlang e2e

## vet: gofmt, go mod tidy, licence headers, go vet, and internal/archcheck (docs/design.md's package
## table compared with go list; no function over 80 lines; no package variable with mutable state but
## internal/collectorstate's, reached only by the components' NewFactory functions; no test that
## passes on an empty glob; no test helper in the product; package documentation of a screen at
## most; a file name shared by several packages means one thing in all of them).
vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
		if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null || { echo "go mod tidy would change go.mod/go.sum: run it"; exit 1; }
	@cd $(SDK) && $(GO) mod tidy -diff >/dev/null || { echo "go mod tidy would change $(SDK)/go.mod/go.sum: run it there"; exit 1; }
	@cd $(KUBERNETES) && $(GO) mod tidy -diff >/dev/null || { echo "go mod tidy would change $(KUBERNETES)/go.mod/go.sum: run it there"; exit 1; }
	@missing=$$(git ls-files '*.go' '*.s' '*.erl' '*.hrl' | xargs grep -L 'SPDX-License-Identifier: Apache-2.0' | xargs -r grep -L '^// Code generated'); \
		if [ -n "$$missing" ]; then echo "no licence header (// Copyright The deltaq-otel Authors / SPDX-License-Identifier: Apache-2.0):"; echo "$$missing"; exit 1; fi
	$(GO) vet $(PKGS)
	cd $(SDK) && $(GO) vet ./...
	cd bench && $(GO) vet .
	cd $(KUBERNETES) && $(GO) vet ./...
	@# The design's package table against go list, functions of at most 80 lines, the process's state,
	@# tests' inputs, test helpers, package documentation, shared file names.
	$(GO) test -count=1 ./internal/archcheck

test-go:
	$(GO) test -count=1 $(PKGS)
	cd $(SDK) && $(GO) test -count=1 ./...
	$(GO) test -count=1 -tags purego ./deltaq/...

test-race:
	$(GO) test -count=1 -race ./processor/... ./exporter/... ./connector/... ./analysis/... ./internal/... ./cmd/... ./sdk/...
	cd $(SDK) && $(GO) test -count=1 -race ./...

## test-erlang: EUnit for erlang/dqsd_otel when Erlang/OTP is installed.
test-erlang:
	@if command -v erlc >/dev/null 2>&1; then \
		if [ -f erlang/Makefile ]; then $(MAKE) -C erlang test; fi; \
	else echo "erlc not found: skipping the Erlang tests (CI installs erlang-nox)"; fi

## bench: every Go benchmark with allocation counts, then the side-by-side
## comparison with contrib's spanmetrics connector (module bench/).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	cd $(SDK) && $(GO) test -run '^$$' -bench . -benchmem ./...
	cd bench && $(GO) test -run '^$$' -bench . -benchmem .

tools: $(MDATAGEN) $(STATICCHECK)

$(MDATAGEN): internal/tools/go.mod internal/tools/tools.go
	cd internal/tools && $(GO) build -o $(MDATAGEN) go.opentelemetry.io/collector/cmd/mdatagen

$(STATICCHECK): internal/tools/go.mod internal/tools/tools.go
	cd internal/tools && $(GO) build -o $(STATICCHECK) honnef.co/go/tools/cmd/staticcheck

## lint: staticcheck (pinned in internal/tools) over the module and bench/; findings are fixed, not silenced.
lint: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)
	cd $(SDK) && $(STATICCHECK) ./...
	cd bench && $(STATICCHECK) .

## generate: regenerate the components' internal/metadata from metadata.yaml.
generate: $(MDATAGEN)
	cd processor/deltaqprocessor && $(MDATAGEN) metadata.yaml
	cd exporter/deltaqexporter && $(MDATAGEN) metadata.yaml
	cd connector/deltaqconnector && $(MDATAGEN) metadata.yaml

## figures: redraw the README's first figure (deltaq analyze --plot on the shipped traces); TestREADMEFigure
## fails when it is stale. The browser screenshot docs/img/scope.png is rewritten by DELTAQ_SCREENSHOT=1 make e2e-browser.
figures:
	@rm -rf build/figures
	$(GO) run ./cmd/deltaq analyze --plot build/figures --config cmd/deltaq/testdata/analyze/collector.yaml cmd/deltaq/testdata/analyze/traces.json >/dev/null
	cp build/figures/e2e.png docs/deltaq-e2e.png

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) build

include mk/collector.mk
