// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package otlprecv serves OTLP/gRPC: it hands the traces, metrics and logs of
// every export request to functions of the caller and answers with what they
// return, a success, a partial success or an error. It is the one OTLP
// receiver of the repository's own code: `deltaq scope` listens with it, and
// internal/otlptest builds on it the receiver the tests send to. Spans,
// Metrics and LogRecords walk the items of a request.
package otlprecv

import (
	"context"
	"fmt"
	"iter"
	"net"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the collector's OTLP exporters compress with gzip by default
)

// Reply is the answer to one export request.
type Reply struct {
	// Err, when set, fails the whole request; an error of
	// google.golang.org/grpc/status keeps its code.
	Err error
	// Rejected items are reported as a partial success, with Message.
	Rejected int64
	Message  string
}

// Handlers receive the requests of each signal. A nil handler leaves its
// signal unserved (the sender gets Unimplemented). Handlers may be called
// from several goroutines at once, and the data they are given is valid only
// during the call: a handler that keeps it keeps a copy.
type Handlers struct {
	Traces  func(ptrace.Traces) Reply
	Metrics func(pmetric.Metrics) Reply
	Logs    func(plog.Logs) Reply
}

// Server is a running OTLP/gRPC endpoint.
type Server struct {
	srv  *grpc.Server
	addr net.Addr
	done chan error
}

// Listen listens on addr ("127.0.0.1:0" picks a free port) and serves h
// until Stop. opts are passed to the gRPC server, e.g. grpc.MaxRecvMsgSize.
func Listen(addr string, h Handlers, opts ...grpc.ServerOption) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{srv: grpc.NewServer(opts...), addr: lis.Addr(), done: make(chan error, 1)}
	if h.Traces != nil {
		ptraceotlp.RegisterGRPCServer(s.srv, &tracesService{handle: h.Traces})
	}
	if h.Metrics != nil {
		pmetricotlp.RegisterGRPCServer(s.srv, &metricsService{handle: h.Metrics})
	}
	if h.Logs != nil {
		plogotlp.RegisterGRPCServer(s.srv, &logsService{handle: h.Logs})
	}
	go func() { s.done <- s.srv.Serve(lis) }()
	return s, nil
}

// Addr is the address the server listens on, with the port it got.
func (s *Server) Addr() string { return s.addr.String() }

// Done receives the error that ended the server if it ended by itself, and
// nil after Stop.
func (s *Server) Done() <-chan error { return s.done }

// Stop lets the requests in flight get their answers (a sender that is
// waiting for one gets it) and cuts them off after grace; 0 cuts them off at
// once.
func (s *Server) Stop(grace time.Duration) {
	if grace <= 0 {
		s.srv.Stop()
		return
	}
	stopped := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(grace):
		s.srv.Stop()
	}
}

type tracesService struct {
	ptraceotlp.UnimplementedGRPCServer
	handle func(ptrace.Traces) Reply
}

func (t *tracesService) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	resp := ptraceotlp.NewExportResponse()
	return resp, answer(t.handle(req.Traces()), resp.PartialSuccess(), ptraceotlp.ExportPartialSuccess.SetRejectedSpans)
}

type metricsService struct {
	pmetricotlp.UnimplementedGRPCServer
	handle func(pmetric.Metrics) Reply
}

func (m *metricsService) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	resp := pmetricotlp.NewExportResponse()
	return resp, answer(m.handle(req.Metrics()), resp.PartialSuccess(), pmetricotlp.ExportPartialSuccess.SetRejectedDataPoints)
}

type logsService struct {
	plogotlp.UnimplementedGRPCServer
	handle func(plog.Logs) Reply
}

func (l *logsService) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	resp := plogotlp.NewExportResponse()
	return resp, answer(l.handle(req.Logs()), resp.PartialSuccess(), plogotlp.ExportPartialSuccess.SetRejectedLogRecords)
}

// answer writes r into the partial success ps of a signal's export
// response, whose count of rejected items setRejected sets, and returns the
// error the request fails with, if any.
func answer[P interface{ SetErrorMessage(string) }](r Reply, ps P, setRejected func(P, int64)) error {
	if r.Err != nil {
		return r.Err
	}
	if r.Rejected > 0 {
		setRejected(ps, r.Rejected)
		ps.SetErrorMessage(r.Message)
	}
	return nil
}

// Spans yields every span of td, resource by resource and scope by scope.
func Spans(td ptrace.Traces) iter.Seq[ptrace.Span] {
	return items(td.ResourceSpans(), ptrace.ResourceSpans.ScopeSpans, ptrace.ScopeSpans.Spans)
}

// Metrics yields every metric of md, resource by resource and scope by scope.
func Metrics(md pmetric.Metrics) iter.Seq[pmetric.Metric] {
	return items(md.ResourceMetrics(), pmetric.ResourceMetrics.ScopeMetrics, pmetric.ScopeMetrics.Metrics)
}

// LogRecords yields every log record of ld, resource by resource and scope by
// scope.
func LogRecords(ld plog.Logs) iter.Seq[plog.LogRecord] {
	return items(ld.ResourceLogs(), plog.ResourceLogs.ScopeLogs, plog.ScopeLogs.LogRecords)
}

// pdataSlice is a slice of pdata, such as ptrace.SpanSlice.
type pdataSlice[T any] interface{ All() iter.Seq2[int, T] }

// items yields the items of every scope of every resource of a request:
// scopes gives a resource's scopes, itemsOf a scope's items.
func items[R, S, T any, RS pdataSlice[R], SS pdataSlice[S], TS pdataSlice[T]](resources RS, scopes func(R) SS, itemsOf func(S) TS) iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, r := range resources.All() {
			for _, s := range scopes(r).All() {
				for _, t := range itemsOf(s).All() {
					if !yield(t) {
						return
					}
				}
			}
		}
	}
}
