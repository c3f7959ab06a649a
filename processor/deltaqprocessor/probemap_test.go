// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/configtest"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// probeOf returns the name of the probe the processor's matcher gives a
// span of that name, kind and service; "" for none.
func probeOf(t *testing.T, cfg *Config, name string, kind ptrace.SpanKind, service string) string {
	t.Helper()
	m, err := newMatcher(cfg)
	require.NoError(t, err)
	span := ptrace.NewSpan()
	span.SetName(name)
	span.SetKind(kind)
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", service)
	ri := newResourceInfo(res)
	if i := m.match(span, &ri); i >= 0 {
		return m.probes[i].name
	}
	return ""
}

// TestProbesAsMap: probes written as a map keyed by name are listed most
// specific first, so that a span several match belongs to the probe with
// the exact name over the one with a pattern, then to the one with more
// conditions, whatever their names; the list form keeps list order.
func TestProbesAsMap(t *testing.T) {
	cfg := loadConfig(t, "map_order")
	require.NoError(t, cfg.Validate())
	var names []string
	for _, pc := range cfg.Probes {
		names = append(names, pc.Name)
	}
	assert.Equal(t, []string{"checkout_shop", "checkout", "aaa", "items"}, names)
	for _, c := range []struct {
		span, service, want string
		kind                ptrace.SpanKind
	}{
		{"GET /checkout", "shop", "checkout_shop", ptrace.SpanKindServer},
		{"GET /checkout", "cart", "checkout", ptrace.SpanKindServer},
		{"GET /items/3", "shop", "aaa", ptrace.SpanKindServer},
		{"GET /items/3", "shop", "items", ptrace.SpanKindClient},
	} {
		assert.Equal(t, c.want, probeOf(t, cfg, c.span, c.kind, c.service), "%s %v of %s", c.span, c.kind, c.service)
	}

	list := loadConfig(t, "list_form")
	require.NoError(t, list.Validate())
	assert.False(t, list.probesByName)
	assert.Equal(t, "items", probeOf(t, list, "GET /items/3", ptrace.SpanKindServer, "shop"), "the list's first probe whose match holds")
}

// TestProbesMapMistakes: an entry that names another probe than its key,
// or is not a map of options, is refused, naming the key.
func TestProbesMapMistakes(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"map_name_differs", `probes["checkout"].name: checkuot is not the key "checkout": the key is the probe's name; leave name out`},
		{"map_entry_not_a_map", `probes["checkout"]: want the probe's options (dmax, bins, match, …), got 50ms`},
	} {
		err := configtest.Section(t, metadata.Type, c.name).Unmarshal(createDefaultConfig().(*Config))
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want)
	}
}

// TestListFormDeprecated: a processor made with its probes as a list logs
// the deprecation, with the map form to write; one made with a map does
// not.
func TestListFormDeprecated(t *testing.T) {
	for _, c := range []struct {
		section string
		warned  bool
	}{{"list_form", true}, {"map_order", false}} {
		core, logs := observer.New(zap.WarnLevel)
		set := processortest.NewNopSettings(metadata.Type)
		set.ID = component.NewIDWithName(metadata.Type, c.section)
		set.Logger = zap.New(core)
		f := newFactory(newFakeClock(), collectorstate.New()).processorFactory()
		p, err := f.CreateTraces(context.Background(), set, loadConfig(t, c.section), consumertest.NewNop())
		require.NoError(t, err)
		require.NoError(t, p.Shutdown(context.Background()))
		warned := logs.FilterMessage(listFormDeprecated).Len() == 1
		assert.Equal(t, c.warned, warned, "%s: warnings %v", c.section, logs.All())
	}
}
