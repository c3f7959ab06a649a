# The collector path: build the collector with the deltaq components, the
# synthetic workload and the load generator; validate the example
# configurations; run the demo and the end-to-end tests. Included by the
# Makefile, whose GO and BIN it uses.

# The version every artefact is stamped with, from one source (scripts/version.sh: a
# release tag that agrees with CHANGELOG.md, else X.Y.Z-dev+REVISION): the collector's
# --version, deltaq version, the release archives and the image.
VERSION         ?= $(shell scripts/version.sh)
# The OpenTelemetry Collector Builder, at the release set of go.mod.
OCB_VERSION     := v0.162.0
OCB             := $(GO) run go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)
OTELCOL         := $(BIN)/otelcol-deltaq
# The version the collector was last built with, rewritten only when it differs.
VERSION_FILE    := build/version
# What the collector is built from: rebuild when any of it changes.
COLLECTOR_SRC   := builder-config.yaml go.mod go.sum \
	$(shell find processor exporter connector internal deltaq diagram analysis sdk/deltaqstart -name '*.go' -not -name '*_test.go' 2>/dev/null)
# A+B: B applied over A (--config=A --config=B).
EXAMPLE_CONFIGS := examples/collector.yaml examples/processor.yaml examples/exporter.yaml examples/demo/collector.yaml \
	examples/demo/collector.yaml+examples/demo/collector-prometheus.yaml examples/demo/collector-throughput.yaml \
	examples/demo/collector-throughput-processor.yaml examples/demo/collector-throughput-starts.yaml \
	examples/demo/collector-spanmetrics.yaml examples/demo/collector-ceiling.yaml \
	examples/erlang/collector.yaml examples/scaling/agent.yaml examples/scaling/gateway.yaml
# The end-to-end Go tests, each gated by its environment variable.
E2E_GO_ENV      := DELTAQ_DEMO_E2E=1 DELTAQ_CONNECTOR_E2E=1 DELTAQ_PROMQL_E2E=1 DELTAQ_SDK_E2E=1 DELTAQ_SCALING_E2E=1 DELTAQ_SAMPLING_E2E=1 OTELCOL=$(OTELCOL)
E2E_GO_PKGS     := ./examples/demo/ ./connector/deltaqconnector/e2e/ ./examples/e2e/ ./sdk/e2e/ ./examples/scaling/e2e/ ./examples/sampling/e2e/

.PHONY: build commands image release e2e-artefacts test-kubernetes validate-configs slo-rules e2e e2e-demo e2e-slo e2e-erlang e2e-connector e2e-promql e2e-sdk e2e-browser e2e-scaling e2e-sampling early-warning demo load

## build: the collector with the deltaq processor, exporter and connector → bin/otelcol-deltaq.
build: $(OTELCOL)

# Statically linked (CGO_ENABLED=0), so that the image can be built from scratch. Built again
# when the version changes too (every commit does), so that its --version is the version make
# image labels and tags it with.
$(OTELCOL): $(COLLECTOR_SRC) $(VERSION_FILE)
	@mkdir -p build
	sed -e 's|^  version: .*|  version: $(VERSION)|' builder-config.yaml >build/builder-config.yaml
	CGO_ENABLED=0 $(OCB) --config build/builder-config.yaml
	@mkdir -p $(BIN)
	# Replaced by rename: a collector still running from the old binary keeps it.
	cp build/otelcol-deltaq/otelcol-deltaq $@.tmp && mv -f $@.tmp $@

# A version.sh that fails (a tag that disagrees with CHANGELOG.md) leaves VERSION empty, and make
# would go on with its message scrolled away: a collector whose --version names nothing.
$(VERSION_FILE): FORCE
	@[ -n "$(VERSION)" ] || { echo "no version to stamp: scripts/version.sh failed (its message is above)" >&2; exit 1; }
	@mkdir -p build
	@[ "$$(cat $@ 2>/dev/null)" = "$(VERSION)" ] || echo "$(VERSION)" >$@

.PHONY: FORCE
FORCE:

## commands: bin/dqworkload (synthetic M/M/1/K workload), bin/dqload (throughput), bin/deltaq.
commands:
	@[ -n "$(VERSION)" ] || { echo "no version to stamp: scripts/version.sh failed (its message is above)" >&2; exit 1; }
	$(GO) build -ldflags '-X main.version=$(VERSION)' -o $(BIN)/ ./cmd/dqworkload ./cmd/dqload ./cmd/deltaq

## image: the otelcol-deltaq OCI image with buildah, from scratch: the static collector, its default configuration
## (deploy/config.yaml), user 10001 → otelcol-deltaq:TAG (the version, "+" written "-") in buildah's storage (scripts/image.sh).
image: $(OTELCOL)
	scripts/image.sh $(OTELCOL)

## release: build/release: archives of the collector and deltaq for linux/amd64, linux/arm64 and darwin/arm64, the
## image for the linux ones as oci-archives, SHA256SUMS; all stamped with VERSION (scripts/release.sh).
release:
	scripts/release.sh

## test-kubernetes: the manifests of deploy/kubernetes decoded strictly with the Kubernetes API types (a module of its
## own, so that they stay out of the collector's module graph), their workloads checked, the collector configurations
## of their ConfigMaps validated by the built collector, the gateway's alert rules checked against the shipped ones and
## its lag, and tested with promtool.
test-kubernetes: $(OTELCOL)
	cd deploy/kubernetes && OTELCOL=$(OTELCOL) $(GO) test -count=1 ./...

## e2e-artefacts: make release for linux/amd64 checked as a user would use it: checksums, contents, versions, the
## default configuration; the image loaded from its oci-archive, run with buildah run (about 30 s).
e2e-artefacts:
	scripts/e2e-artefacts.sh

## validate-configs: the built collector lists the three deltaq components and accepts every example configuration,
## and deltaq check --config finds nothing in them (what no single component checks: probes, layouts, pipelines).
validate-configs: $(OTELCOL) commands
	@$(OTELCOL) components > build/components.yaml
	@for kind in processors exporters connectors; do \
		sed -n "/^$$kind:/,/^[a-z]/p" build/components.yaml | grep -q 'name: deltaq$$' \
			|| { echo "otelcol-deltaq components: no deltaq in $$kind"; exit 1; }; \
	done
	@for c in $(EXAMPLE_CONFIGS); do \
		$(OTELCOL) validate $$(echo "$$c" | tr + ' ' | sed 's/[^ ]*/--config=&/g') || { echo "invalid: $$c"; exit 1; }; \
		$(BIN)/deltaq check $$(echo "$$c" | tr + ' ' | sed 's/[^ ]*/--config=&/g') > /dev/null || { echo "deltaq check: $$c"; exit 1; }; \
		echo "valid: $$c"; \
	done

## e2e: the end-to-end tests side by side: scripts/e2e.sh (collector + workload + Prometheus + Alertmanager on
## loopback; asserts metrics, dashboard queries, alert fire/resolve, trigger log), e2e-slo, e2e-connector, e2e-promql,
## e2e-sdk, e2e-scaling, e2e-sampling, e2e-demo and e2e-browser; then, alone (their timing must not compete for the CPU),
## e2e-erlang (its M/M/1/K runs in real time: sharing the CPUs with the rest stretched its service times and its buffers
## blocked jobs) and the short load ramp of early-warning; then e2e-artefacts (it compiles, which would disturb the timings).
## The Go tests are compiled first, so that compiling does not take the CPUs from the parts already running (a
## starved demo workload is slow for real, and pages). Each part's output is also in build/e2e-parts/PART.log; the
## last lines name the parts that failed and their failures.
e2e: validate-configs commands test-kubernetes
	@rm -rf build/e2e-parts && mkdir -p build/e2e-parts; \
		$(GO) test -count=1 -exec true $(E2E_GO_PKGS) ./internal/scope/ ./erlang/e2e/ ./examples/earlywarning/ > /dev/null 2>&1; \
		part() { name=$$1; shift; { "$$@"; echo $$? > build/e2e-parts/$$name.rc; } 2>&1 | tee build/e2e-parts/$$name.log; }; \
		part e2e.sh scripts/e2e.sh & script=$$!; \
		part e2e-slo.sh scripts/e2e-slo.sh & slo=$$!; \
		part go-tests env $(E2E_GO_ENV) $(GO) test -count=1 -v -timeout 5m $(E2E_GO_PKGS); \
		part scope-browser env DELTAQ_BROWSER_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 3m -run '^TestScopeBrowser' ./internal/scope/; \
		wait $$script $$slo; \
		part erlang env DQSD_OTEL_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 5m ./erlang/e2e/; \
		part early-warning env DELTAQ_EARLYWARNING_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 5m ./examples/earlywarning/; \
		part e2e-artefacts.sh scripts/e2e-artefacts.sh; \
		failed=; for n in e2e.sh e2e-slo.sh go-tests scope-browser erlang early-warning e2e-artefacts.sh; do \
			[ "$$(cat build/e2e-parts/$$n.rc 2>/dev/null)" = 0 ] || failed="$$failed $$n"; done; \
		[ -z "$$failed" ] && exit 0; \
		echo "e2e: FAILED:$$failed"; \
		for n in $$failed; do \
			echo "e2e: $$n:"; lines=$$(grep -h -B 6 -e '--- FAIL' -e 'FAIL:' build/e2e-parts/$$n.log 2>/dev/null | tail -n 20); \
			if [ -n "$$lines" ]; then echo "$$lines"; else tail -n 10 build/e2e-parts/$$n.log 2>/dev/null; fi; done; \
		exit 1

## e2e-slo: the rules of deltaq slo with windows scaled to seconds against real Prometheus and Alertmanager: the
## demo's healthy phase pages nobody, slowing worker_2 pages for worker_2 and job, never worker_1 (about 60 s).
e2e-slo: $(OTELCOL) commands
	scripts/e2e-slo.sh

## e2e-erlang: dqsd_otel's M/M/1/K example (Erlang) through the collector; asserts the ΔQs of its probes, then kills the collector mid-run;
## again with the collector restarted after 3 s: no false timeout from the backlog; and its HTTP example through the deltaq
## connector alone: a request past dMax and one whose service is killed time out in real time.
e2e-erlang: $(OTELCOL)
	DQSD_OTEL_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 5m ./erlang/e2e/

## e2e-promql: spans of known delays into real Prometheus: exact PromQL over two phases, native histograms, DeltaQExportFailed,
## and DeltaQQTABreach of deploy/kubernetes's rules firing on windows closed and exported as its gateway does (the shipped one never).
e2e-promql: $(OTELCOL)
	DELTAQ_PROMQL_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 2m ./examples/e2e/

## e2e-browser: deltaq scope --http end to end: the built collector (examples/demo/collector.yaml), the demo workload,
## headless Chromium; DELTAQ_SCREENSHOT=1 rewrites docs/img/scope.png.
e2e-browser: $(OTELCOL)
	DELTAQ_BROWSER_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 3m -run '^TestScopeBrowser' ./internal/scope/

## e2e-scaling: three agent collectors and a gateway against a single collector: exact merged windows, an agent
## killed and restarted; idle agents counted present, a stopped one missing.
e2e-scaling: $(OTELCOL)
	DELTAQ_SCALING_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 3m ./examples/scaling/e2e/

## e2e-sampling: the OpenTelemetry JS SDK (npm, lock file in examples/sampling/e2e/client) sampling one span in four
## (ot=th:c) through the collector into Prometheus with exemplar storage: counts within the sampling error of the
## unsampled totals, exemplars naming the client's spans, a trigger naming slowed ones.
e2e-sampling: $(OTELCOL)
	DELTAQ_SAMPLING_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 2m ./examples/sampling/e2e/

## early-warning: load ramps of the shared-server and tandem workloads through the built collector (about 6 minutes);
## prints the loads at which the divergence test, the slack trend and the QTA answered. make e2e runs a short ramp.
early-warning: $(OTELCOL)
	DELTAQ_EARLYWARNING_E2E=1 DELTAQ_EARLYWARNING_LONG=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 15m ./examples/earlywarning/

## e2e-sdk: the OpenTelemetry Go SDK with sdk/deltaqstart through the deltaq connector alone; asserts exact outcome counts and
## that spans left running, or ending after dMax, time out within one tick of start + dMax, each in the window of its deadline.
e2e-sdk: $(OTELCOL)
	DELTAQ_SDK_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 2m ./sdk/e2e/

## e2e-connector: spans and start events through the deltaq connector alone and through the processor into it; asserts
## exact outcome counts and delays in its output, and that the tracing backend gets the spans as sent.
e2e-connector: $(OTELCOL)
	DELTAQ_CONNECTOR_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 2m ./connector/deltaqconnector/e2e/

## e2e-demo: make demo cannot hang: a busy port refused before anything starts, a collector that fails or dies
## stops the demo with its error, Ctrl-C and SIGTERM (also sent twice) stop everything within 5 s (about 15 s).
e2e-demo: $(OTELCOL)
	DELTAQ_DEMO_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 2m ./examples/demo/

## demo: scope, collector and workload (the scope first); a busy port is refused before anything starts; Ctrl-C stops all within 5 s.
demo: $(OTELCOL) commands
	scripts/demo.sh

## load: spans/s, CPU and RSS of one collector with the deltaq connector alone, with the connector taking start events (dqload -start-events: for every span, and as an SDK draining every 10 ms sends them, for the spans still running), with spanmetrics, then with no ΔQ component, the ceiling (dqload, 20 s each); each as a fraction of the ceiling and a multiple of spanmetrics; LOAD_RUNS chooses the runs, deltaq (the processor + connector) among them; LOAD_ROUNDS=3 repeats them in turn and prints the median ratios; LOAD_ARGS="-duration 10m" for the memory run; the collector and dqload on separate CPUs (LOAD_PIN=off shares them); LOAD_GATES=+pdata.useProtoPooling for pdata's pools.
load: $(OTELCOL) commands
	scripts/load.sh

# The SLO rules of the demo's QTAs (deltaq slo), checked in: go test ./cmd/deltaq/ fails when they differ from
# what the command writes.
SLO_CONFIG := examples/demo/collector.yaml

## slo-rules: regenerate examples/prometheus/rules/deltaq-slo.yml, its promtool tests and examples/slo/ from
## the demo's QTAs (deltaq slo).
slo-rules:
	$(GO) run ./cmd/deltaq slo --config $(SLO_CONFIG) -o examples/prometheus/rules/deltaq-slo.yml \
		--tests examples/prometheus/tests/deltaq-slo.test.yml
	$(GO) run ./cmd/deltaq slo --config $(SLO_CONFIG) --format openslo -o examples/slo/deltaq.openslo.yaml
	$(GO) run ./cmd/deltaq slo --config $(SLO_CONFIG) --format sloth -o examples/slo/deltaq.sloth.yaml
