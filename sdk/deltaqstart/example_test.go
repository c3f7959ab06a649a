// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart_test

import (
	"context"
	"log"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/deltaq-otel/deltaq/sdk/deltaqstart"
)

// An application exporting spans and logs over OTLP/gRPC to a collector on
// localhost:4317 (OTEL_EXPORTER_OTLP_ENDPOINT), announcing its server spans.
// Both providers share the resource, and both export every 50 ms, well
// below the smallest dMax of the probes (see the README).
func Example() {
	ctx := context.Background()
	res := resource.NewSchemaless(semconv.ServiceName("shop"))
	logExp, err := otlploggrpc.New(ctx, otlploggrpc.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res),
		sdklog.WithProcessor(sdklog.NewBatchProcessor(logExp, sdklog.WithExportInterval(50*time.Millisecond))))
	defer lp.Shutdown(ctx) // runs last
	starts, err := deltaqstart.NewSpanProcessor(lp)
	if err != nil {
		log.Fatal(err)
	}
	traceExp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(starts),
		sdktrace.WithBatcher(traceExp, sdktrace.WithBatchTimeout(50*time.Millisecond)))
	defer tp.Shutdown(ctx) // runs first: emits the start events still queued
	otel.SetTracerProvider(tp)

	// … serve; every server span now announces itself when it starts.
}
