# The collector path: build the collector with the deltaq components, the
# synthetic workload and the load generator; validate the example
# configurations; run the demo and the end-to-end test. Included by the
# Makefile, whose GO and BIN it uses.

# The OpenTelemetry Collector Builder, at the release set of go.mod.
OCB_VERSION     := v0.162.0
OCB             := $(GO) run go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)
OTELCOL         := $(BIN)/otelcol-deltaq
# What the collector is built from: rebuild when any of it changes.
COLLECTOR_SRC   := builder-config.yaml go.mod go.sum \
	$(shell find processor exporter internal deltaq diagram analysis -name '*.go' -not -name '*_test.go' 2>/dev/null)
EXAMPLE_CONFIGS := examples/collector.yaml examples/demo/collector.yaml examples/demo/collector-prometheus.yaml \
	examples/demo/collector-throughput.yaml examples/erlang/collector.yaml

.PHONY: build commands validate-configs e2e e2e-erlang demo load

## build: the collector with the deltaq processor and exporter → bin/otelcol-deltaq.
build: $(OTELCOL)

$(OTELCOL): $(COLLECTOR_SRC)
	@mkdir -p build
	$(OCB) --config builder-config.yaml
	@mkdir -p $(BIN)
	cp build/otelcol-deltaq/otelcol-deltaq $@

## commands: bin/dqworkload (synthetic M/M/1/K workload), bin/dqload (throughput), bin/deltaq.
commands:
	$(GO) build -o $(BIN)/ ./cmd/dqworkload ./cmd/dqload ./cmd/deltaq

## validate-configs: the built collector lists both deltaq components and accepts every example configuration.
validate-configs: $(OTELCOL)
	@$(OTELCOL) components > build/components.yaml
	@for kind in processors exporters; do \
		sed -n "/^$$kind:/,/^[a-z]/p" build/components.yaml | grep -q 'name: deltaq$$' \
			|| { echo "otelcol-deltaq components: no deltaq in $$kind"; exit 1; }; \
	done
	@for c in $(EXAMPLE_CONFIGS); do \
		$(OTELCOL) validate --config=$$c || { echo "invalid: $$c"; exit 1; }; \
		echo "valid: $$c"; \
	done

## e2e: collector + workload + Prometheus + Alertmanager on loopback; asserts metrics, dashboard queries, alert fire/resolve, trigger log.
e2e: validate-configs commands e2e-erlang
	scripts/e2e.sh

## e2e-erlang: dqsd_otel's M/M/1/K example (Erlang) through the collector; asserts the ΔQs of its probes, then kills the collector mid-run.
e2e-erlang: $(OTELCOL)
	DQSD_OTEL_E2E=1 OTELCOL=$(OTELCOL) $(GO) test -count=1 -v -timeout 5m ./erlang/e2e/

## demo: collector + workload + terminal oscilloscope (deltaq scope); Ctrl-C stops all.
demo: $(OTELCOL) commands
	scripts/demo.sh

## load: spans/s one collector with the deltaq components accepts (dqload); LOAD_ARGS="-duration 10m" for the memory run.
load: $(OTELCOL) commands
	scripts/load.sh
