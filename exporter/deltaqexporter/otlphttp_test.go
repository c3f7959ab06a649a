package deltaqexporter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestOTLPHTTPEndpoint: with an http section the exporter posts OTLP/HTTP
// protobuf to /v1/metrics and /v1/logs.
func TestOTLPHTTPEndpoint(t *testing.T) {
	var mu sync.Mutex
	names := map[string]bool{}
	events := map[string]bool{}
	got := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/metrics":
			req := pmetricotlp.NewExportRequest()
			if req.UnmarshalProto(body) != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			ms := req.Metrics().ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
			for i := 0; i < ms.Len(); i++ {
				names[ms.At(i).Name()] = true
			}
		case "/v1/logs":
			req := plogotlp.NewExportRequest()
			if req.UnmarshalProto(body) != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			lrs := req.Logs().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
			for i := 0; i < lrs.Len(); i++ {
				events[lrs.At(i).EventName()] = true
			}
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
		got <- struct{}{}
	}))
	defer srv.Close()

	cfg := goldenConfig()
	cfg.ClientConfig.Endpoint = ""
	hc := confighttp.NewDefaultClientConfig()
	hc.Endpoint = srv.URL
	cfg.HTTP = configoptional.Some(hc)
	require.NoError(t, cfg.Validate())
	exp, err := newExporter(cfg, exportertest.NewNopSettings(typ), func(e *deltaqExporter) {
		e.now = func() time.Time { return at(time.Second) }
		e.ticks = make(chan time.Time)
	})
	require.NoError(t, err)
	require.NoError(t, exp.start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.shutdown(context.Background())) }()
	h := &harness{t: t, exp: exp}
	goldenWindows(h)

	deadline := time.After(30 * time.Second)
	for {
		mu.Lock()
		done := len(names) == len(allMetrics) && len(events) == len(allEvents)
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-got:
		case <-deadline:
			t.Fatalf("OTLP/HTTP endpoint received metrics %v and events %v", names, events)
		}
	}
}

func TestHTTPErrorsAreClassified(t *testing.T) {
	code, retryAfter := 0, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	c := &httpClient{client: srv.Client(), metricsURL: srv.URL + "/v1/metrics"}
	for _, tc := range []struct {
		code       int
		retryAfter string
		permanent  bool
	}{
		{http.StatusOK, "", false},
		{http.StatusServiceUnavailable, "3", false},
		{http.StatusTooManyRequests, "", false},
		{http.StatusBadRequest, "", true},
		{http.StatusNotFound, "", true},
		// The body is above the server's limit: the same request would
		// be refused again, so it is not retried.
		{http.StatusRequestEntityTooLarge, "", true},
	} {
		code, retryAfter = tc.code, tc.retryAfter
		err := c.pushMetrics(context.Background(), pmetric.NewMetrics())
		if tc.code == http.StatusOK {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err, "status %d", tc.code)
		assert.Equal(t, tc.permanent, consumererror.IsPermanent(err), "status %d: %v", tc.code, err)
	}
}

func TestGRPCErrorsAreClassified(t *testing.T) {
	assert.NoError(t, grpcError(status.Error(codes.OK, "")))
	for _, c := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.Aborted} {
		err := grpcError(status.Error(c, "x"))
		assert.Error(t, err)
		assert.False(t, consumererror.IsPermanent(err), "%s is retryable", c)
	}
	for _, c := range []codes.Code{codes.InvalidArgument, codes.Unimplemented, codes.Internal, codes.Unauthenticated} {
		assert.True(t, consumererror.IsPermanent(grpcError(status.Error(c, "x"))), "%s is permanent", c)
	}
	assert.True(t, consumererror.IsPermanent(grpcError(errors.New("not a status"))), "an unknown error is not retried")
}

// TestGRPCResourceExhausted: RESOURCE_EXHAUSTED is retryable only when the
// server sends RetryInfo (OTLP specification, OTLP/gRPC "Failures"); a
// message above the server's receive limit comes without it and is
// permanent, so that it does not hold the sending queue.
func TestGRPCResourceExhausted(t *testing.T) {
	tooLarge := status.Error(codes.ResourceExhausted, "grpc: received message larger than max (99000000 vs. 4194304)")
	assert.True(t, consumererror.IsPermanent(grpcError(tooLarge)), "no RetryInfo: permanent")

	st, err := status.New(codes.ResourceExhausted, "over quota").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(3 * time.Second)})
	require.NoError(t, err)
	got := grpcError(st.Err())
	require.Error(t, got)
	assert.False(t, consumererror.IsPermanent(got), "RetryInfo: the server asks to back off and retry")
	assert.Contains(t, got.Error(), "3s", "the server's delay is the throttle")

	st, err = status.New(codes.ResourceExhausted, "over quota").WithDetails(&errdetails.RetryInfo{})
	require.NoError(t, err)
	got = grpcError(st.Err())
	require.Error(t, got)
	assert.False(t, consumererror.IsPermanent(got), "RetryInfo without a delay still says recovery is possible")
}
