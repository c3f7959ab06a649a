package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// otlpClient sends the exporter's own metrics and logs to the configured
// OTLP endpoint. Its push functions are wrapped by exporterhelper, which
// adds the timeout, retries and the sending queue.
type otlpClient interface {
	pushMetrics(ctx context.Context, md pmetric.Metrics) error
	pushLogs(ctx context.Context, ld plog.Logs) error
	close() error
}

// newOTLPClient connects (without blocking) to the configured endpoint:
// OTLP/HTTP when the http section is present, OTLP/gRPC otherwise.
func newOTLPClient(ctx context.Context, cfg *Config, host component.Host, set component.TelemetrySettings) (otlpClient, error) {
	if cfg.HTTP.HasValue() {
		hc := cfg.HTTP.Get()
		client, err := hc.ToClient(ctx, host.GetExtensions(), set)
		if err != nil {
			return nil, fmt.Errorf("deltaq exporter: OTLP/HTTP client: %w", err)
		}
		base := strings.TrimSuffix(hc.Endpoint, "/")
		return &httpClient{client: client, metricsURL: base + "/v1/metrics", logsURL: base + "/v1/logs", logger: set.Logger}, nil
	}
	conn, err := cfg.ClientConfig.ToClientConn(ctx, host.GetExtensions(), set)
	if err != nil {
		return nil, fmt.Errorf("deltaq exporter: OTLP/gRPC client: %w", err)
	}
	return &grpcClient{
		conn:         conn,
		metrics:      pmetricotlp.NewGRPCClient(conn),
		logs:         plogotlp.NewGRPCClient(conn),
		waitForReady: cfg.ClientConfig.WaitForReady,
		logger:       set.Logger,
	}, nil
}

type grpcClient struct {
	conn         *grpc.ClientConn
	metrics      pmetricotlp.GRPCClient
	logs         plogotlp.GRPCClient
	waitForReady bool
	logger       *zap.Logger
}

func (c *grpcClient) pushMetrics(ctx context.Context, md pmetric.Metrics) error {
	resp, err := c.metrics.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md), grpc.WaitForReady(c.waitForReady))
	if err != nil {
		return grpcError(err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedDataPoints() > 0 {
		c.logger.Warn("OTLP endpoint rejected part of the ΔQ metrics",
			zap.Int64("rejected_data_points", ps.RejectedDataPoints()), zap.String("message", ps.ErrorMessage()))
	}
	return nil
}

func (c *grpcClient) pushLogs(ctx context.Context, ld plog.Logs) error {
	resp, err := c.logs.Export(ctx, plogotlp.NewExportRequestFromLogs(ld), grpc.WaitForReady(c.waitForReady))
	if err != nil {
		return grpcError(err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedLogRecords() > 0 {
		c.logger.Warn("OTLP endpoint rejected part of the ΔQ events",
			zap.Int64("rejected_log_records", ps.RejectedLogRecords()), zap.String("message", ps.ErrorMessage()))
	}
	return nil
}

func (c *grpcClient) close() error { return c.conn.Close() }

// grpcError classifies an export error as the OTLP specification asks
// (OTLP/gRPC, "Failures"): retryable codes are returned as they are (with
// the server's RetryInfo delay as a throttle), all others are permanent and
// not retried. RESOURCE_EXHAUSTED is retryable only when the server says
// that recovery is possible by sending RetryInfo; without it, it is what a
// message above the server's receive limit (or the client's send limit)
// produces, and sending the same request again cannot succeed: retrying it
// would only hold the sending queue until the retries run out.
func grpcError(err error) error {
	st := status.Convert(err)
	switch st.Code() {
	case codes.OK:
		return nil
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange,
		codes.Unavailable, codes.DataLoss, codes.ResourceExhausted:
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				if ri.RetryDelay != nil {
					return exporterhelper.NewThrottleRetry(err, ri.RetryDelay.AsDuration())
				}
				return err
			}
		}
		if st.Code() == codes.ResourceExhausted {
			return consumererror.NewPermanent(err)
		}
		return err
	default:
		return consumererror.NewPermanent(err)
	}
}

type httpClient struct {
	client              *http.Client
	metricsURL, logsURL string
	logger              *zap.Logger
}

func (c *httpClient) pushMetrics(ctx context.Context, md pmetric.Metrics) error {
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		return consumererror.NewPermanent(err)
	}
	return c.post(ctx, c.metricsURL, body)
}

func (c *httpClient) pushLogs(ctx context.Context, ld plog.Logs) error {
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		return consumererror.NewPermanent(err)
	}
	return c.post(ctx, c.logsURL, body)
}

// post sends one OTLP/HTTP protobuf request. 429, 502, 503 and 504 are
// retryable (honouring Retry-After), other non-2xx statuses are permanent
// (OTLP/HTTP specification, "Failures"); among them 413 (body above the
// server's limit), which the same request would meet again.
func (c *httpClient) post(ctx context.Context, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return consumererror.NewPermanent(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("OTLP/HTTP %s: %w", url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err = fmt.Errorf("OTLP/HTTP %s: %s: %s", url, resp.Status, bytes.TrimSpace(msg))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return exporterhelper.NewThrottleRetry(err, time.Duration(s)*time.Second)
		}
		return err
	}
	return consumererror.NewPermanent(err)
}

func (c *httpClient) close() error {
	c.client.CloseIdleConnections()
	return nil
}
