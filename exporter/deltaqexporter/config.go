package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// Defaults of the analysis options.
const (
	defaultInterval     = time.Second
	defaultHistory      = 30
	defaultMaxProbes    = 1000
	defaultCDFPoints    = 32
	defaultRearmWindows = 1
	defaultBefore       = 5
	defaultAfter        = 5 * time.Second
	// defaultQueueSize is in requests; one request is one window's metrics
	// (or logs), so this holds one minute of windows at the default interval.
	defaultQueueSize = 60
	// defaultMaxRequestBytes keeps one OTLP request of ΔQ output below the
	// 4 MiB message limit that gRPC servers apply by default.
	defaultMaxRequestBytes = 3 << 20
	// defaultProbeIdleTimeout is how long a probe that no configuration
	// names is kept without instances.
	defaultProbeIdleTimeout = 10 * time.Minute
	// Snapshot retention defaults: at 10 probes × 1000 bins a snapshot file
	// is about 0.3 MiB.
	defaultSnapshotMaxFiles = 100
	defaultSnapshotMaxBytes = 64 << 20
	// maxLagIntervals bounds the lag, and with it the number of open windows
	// (⌈lag/interval⌉ + 2).
	maxLagIntervals = 16
)

// defaultQuantiles are the q of the deltaq.quantile gauge.
var defaultQuantiles = []float64{0.25, 0.5, 0.75, 0.9, 0.99}

// Config is the configuration of the deltaq exporter. The OTLP side is
// configured exactly like the otlp_grpc exporter (endpoint, tls, headers,
// timeout, retry_on_failure, sending_queue, …); setting http sends over
// OTLP/HTTP instead.
type Config struct {
	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	QueueConfig   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig   configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
	// ClientConfig is the OTLP/gRPC client: endpoint, tls, headers, ….
	ClientConfig configgrpc.ClientConfig `mapstructure:",squash"`
	// HTTP, when present, sends OTLP/HTTP (protobuf) to HTTP.Endpoint
	// (paths /v1/metrics and /v1/logs) instead of OTLP/gRPC.
	HTTP configoptional.Optional[confighttp.ClientConfig] `mapstructure:"http"`

	// Interval is the polling interval: the length of a window (thesis 3.6,
	// 4.4.1 "polling rate").
	Interval time.Duration `mapstructure:"interval"`
	// Lag is how long after its end a window closes, so that instances that
	// end just before the boundary but arrive after it still count (thesis
	// 3.6). Zero means one interval, the thesis's choice.
	Lag time.Duration `mapstructure:"lag"`
	// History is K, the number of past windows the mean and 95 % band are
	// computed over (thesis 4.1.5).
	History int `mapstructure:"history"`
	// MaxProbes bounds the number of probes tracked that no configuration
	// names (neither this exporter's probes, nor the diagram, nor a deltaq
	// processor of this collector); instances of further such probes are
	// dropped and counted. Configured probes never count against it.
	MaxProbes int `mapstructure:"max_probes"`
	// ProbeIdleTimeout is how long a probe that no configuration names is
	// kept after its last instance; then it is forgotten and frees its slot.
	ProbeIdleTimeout time.Duration `mapstructure:"probe_idle_timeout"`
	// MaxRequestBytes bounds the size of one OTLP request of ΔQ output: a
	// window whose metrics or logs are larger is sent in several requests.
	MaxRequestBytes int `mapstructure:"max_request_bytes"`
	// Quantiles are the q reported by the deltaq.quantile gauge.
	Quantiles []float64 `mapstructure:"quantiles"`
	// CDFPoints is the number of deltaq.le points per curve of the
	// deltaq.cdf gauge; 0 reports every bin edge.
	CDFPoints int `mapstructure:"cdf_points"`

	// Diagram is the outcome diagram (.dq text, thesis 4.3) inline.
	Diagram string `mapstructure:"diagram"`
	// DiagramFile is the path of a .dq file; exclusive with Diagram.
	DiagramFile string `mapstructure:"diagram_file"`

	// Probes holds per-probe settings, keyed by probe name.
	Probes map[string]ProbeConfig `mapstructure:"probes"`

	// RearmWindows is the number of consecutive windows in which a fired
	// trigger's condition must be false before it can fire again.
	RearmWindows int `mapstructure:"rearm_windows"`
	// Snapshot configures the snapshot that follows a trigger.
	Snapshot SnapshotConfig `mapstructure:"snapshot"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// ProbeConfig holds one probe's settings.
type ProbeConfig struct {
	// DMax and Bins override the dMax and bin count carried by the instances
	// (deltaq.dmax_ns, deltaq.bins). Both or neither.
	DMax time.Duration `mapstructure:"dmax"`
	Bins int           `mapstructure:"bins"`
	// QTA is the probe's quantitative timeliness agreement.
	QTA QTAConfig `mapstructure:"qta"`
	// Triggers selects the probe's triggers; all are off by default (thesis
	// 4.4.1).
	Triggers TriggersConfig `mapstructure:"triggers"`
}

// QTAConfig is a QTA as in thesis 4.1.3: the delays by which given fractions
// of instances must have completed, and the largest fraction of instances
// that may fail or time out.
type QTAConfig struct {
	// Points are the steps of the QTA: at Delay, at least P of the instances
	// have completed successfully.
	Points []QTAPoint `mapstructure:"points"`
	// MaxFailure is the largest failure ratio (timeouts + failures over all
	// instances) the QTA accepts, in [0, 1].
	MaxFailure float64 `mapstructure:"max_failure"`
}

// QTAPoint is one step of a QTA.
type QTAPoint struct {
	Delay time.Duration `mapstructure:"delay"`
	P     float64       `mapstructure:"p"`
}

// TriggersConfig selects a probe's triggers (thesis 3.5; draft 5.6).
type TriggersConfig struct {
	// QTA fires when the observed ΔQ falls below a QTA step:
	// F_obs(delay) < p for some point.
	QTA bool `mapstructure:"qta"`
	// Failure fires when the failure ratio exceeds qta.max_failure.
	Failure bool `mapstructure:"failure"`
	// MaxInstances fires the load trigger when a window holds more
	// instances than this; 0 turns it off.
	MaxInstances int64 `mapstructure:"max_instances"`
	// MaxDivergence fires when the distance between the observed and the
	// calculated ΔQ exceeds this; 0 turns it off.
	MaxDivergence float64 `mapstructure:"max_divergence"`
}

// SnapshotConfig configures snapshots (thesis 3.5.1, 4.4.1).
type SnapshotConfig struct {
	// Enabled turns snapshots on.
	Enabled bool `mapstructure:"enabled"`
	// Before is the number of windows before the trigger's window that a
	// snapshot holds.
	Before int `mapstructure:"before"`
	// After is how long recording continues after the trigger's window,
	// rounded up to whole windows.
	After time.Duration `mapstructure:"after"`
	// Directory, when set, receives one JSON file per snapshot.
	Directory string `mapstructure:"directory"`
	// MaxFiles and MaxBytes bound the snapshot files kept in Directory:
	// past either, the oldest snapshot files are removed.
	MaxFiles int   `mapstructure:"max_files"`
	MaxBytes int64 `mapstructure:"max_bytes"`
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.QueueSize = defaultQueueSize
	return &Config{
		TimeoutConfig:    exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:      configoptional.Some(queue),
		RetryConfig:      configretry.NewDefaultBackOffConfig(),
		ClientConfig:     configgrpc.NewDefaultClientConfig(),
		HTTP:             configoptional.Default(confighttp.NewDefaultClientConfig()),
		Interval:         defaultInterval,
		History:          defaultHistory,
		MaxProbes:        defaultMaxProbes,
		ProbeIdleTimeout: defaultProbeIdleTimeout,
		MaxRequestBytes:  defaultMaxRequestBytes,
		Quantiles:        append([]float64(nil), defaultQuantiles...),
		CDFPoints:        defaultCDFPoints,
		RearmWindows:     defaultRearmWindows,
		Snapshot: SnapshotConfig{
			Enabled:  true,
			Before:   defaultBefore,
			After:    defaultAfter,
			MaxFiles: defaultSnapshotMaxFiles,
			MaxBytes: defaultSnapshotMaxBytes,
		},
	}
}

// Validate checks the configuration. The outcome diagram is parsed here, so
// its own error messages (file:line:col) reach the user at start-up.
func (c *Config) Validate() error {
	var errs []error
	if !c.HTTP.HasValue() && c.ClientConfig.Endpoint == "" {
		errs = append(errs, errors.New(`requires a non-empty "endpoint" (OTLP/gRPC) or an "http" section with an endpoint (OTLP/HTTP)`))
	}
	if c.HTTP.HasValue() && c.HTTP.Get().Endpoint == "" {
		errs = append(errs, errors.New(`"http" requires a non-empty "endpoint"`))
	}
	if c.QueueConfig.HasValue() && c.QueueConfig.Get().BlockOnOverflow {
		errs = append(errs, errors.New(`"sending_queue::block_on_overflow" must be false: a full queue drops and counts output instead of stalling the window timer`))
	}
	if err := c.CheckBounds(); err != nil {
		errs = append(errs, err)
	}
	if c.Snapshot.Directory != "" {
		if st, err := os.Stat(c.Snapshot.Directory); err != nil {
			errs = append(errs, fmt.Errorf(`"snapshot::directory": %w`, err))
		} else if !st.IsDir() {
			errs = append(errs, fmt.Errorf(`"snapshot::directory": %q is not a directory`, c.Snapshot.Directory))
		}
	}
	if _, err := c.AnalysisConfig(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// AnalysisConfig checks the analysis part of the configuration and converts
// it into the analysis engine's configuration, parsing the outcome diagram.
// The deltaq analyze command uses it on the exporters.deltaq section of a
// collector configuration.
func (c *Config) AnalysisConfig() (analysis.Config, error) {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf(`"interval" must be positive, got %s`, c.Interval))
	}
	lag := c.Lag
	if lag == 0 {
		lag = c.Interval
	}
	if c.Lag < 0 {
		errs = append(errs, fmt.Errorf(`"lag" must be ≥ 0, got %s`, c.Lag))
	} else if c.Interval > 0 && lag > maxLagIntervals*c.Interval {
		errs = append(errs, fmt.Errorf(`"lag" %s is more than %d intervals: it would keep too many windows open`, c.Lag, maxLagIntervals))
	}
	if c.Snapshot.After < 0 {
		errs = append(errs, fmt.Errorf(`"snapshot::after" must be ≥ 0, got %s`, c.Snapshot.After))
	}
	var d *diagram.Diagram
	switch {
	case c.Diagram != "" && c.DiagramFile != "":
		errs = append(errs, errors.New(`set "diagram" or "diagram_file", not both`))
	case c.Diagram != "":
		var err error
		if d, err = diagram.Parse("diagram", []byte(c.Diagram)); err != nil {
			errs = append(errs, fmt.Errorf(`"diagram": %w`, err))
		}
	case c.DiagramFile != "":
		src, err := os.ReadFile(c.DiagramFile)
		if err != nil {
			errs = append(errs, fmt.Errorf(`"diagram_file": %w`, err))
		} else if d, err = diagram.Parse(c.DiagramFile, src); err != nil {
			errs = append(errs, fmt.Errorf(`"diagram_file": %w`, err))
		}
	}
	if d != nil && len(d.Probes()) == 0 {
		// A file that parses but defines nothing (empty, or only comments)
		// is almost certainly the wrong file: say so rather than run
		// without calculated ΔQs.
		where := `"diagram"`
		if c.DiagramFile != "" {
			where = fmt.Sprintf(`"diagram_file" %s`, c.DiagramFile)
		}
		errs = append(errs, fmt.Errorf("%s: the outcome diagram defines no outcome", where))
		d = nil
	}
	after := 0
	if c.Interval > 0 && c.Snapshot.After > 0 {
		after = int((c.Snapshot.After + c.Interval - 1) / c.Interval)
	}
	ac := analysis.Config{
		Interval:         c.Interval,
		Lag:              lag,
		History:          c.History,
		MaxProbes:        c.MaxProbes,
		ProbeIdleTimeout: c.ProbeIdleTimeout,
		// The probes of the deltaq processors of this collector are
		// configured probes too: their layout is the processor's, and they
		// never take one of the max_probes places.
		ConfiguredProbes: outcome.RegisteredProbes(),
		LookupLayout:     processorLayout,
		Quantiles:        c.Quantiles,
		Diagram:          d,
		RearmWindows:     c.RearmWindows,
		Snapshot: analysis.SnapshotConfig{
			Enabled: c.Snapshot.Enabled,
			Before:  c.Snapshot.Before,
			After:   after,
		},
	}
	if len(c.Probes) > 0 {
		ac.Probes = make(map[string]analysis.ProbeConfig, len(c.Probes))
	}
	for name, pc := range c.Probes {
		apc, err := pc.analysis()
		if err != nil {
			errs = append(errs, fmt.Errorf(`"probes::%s": %w`, name, err))
			continue
		}
		ac.Probes[name] = apc
	}
	if len(errs) == 0 {
		if err := ac.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return analysis.Config{}, errors.Join(errs...)
	}
	return ac, nil
}

// processorLayout is analysis.Config.LookupLayout over the probes the
// deltaq processors of this process registered (outcome.LookupLayout).
func processorLayout(probe string) (time.Duration, int, bool) {
	l, ok := outcome.LookupLayout(probe)
	if !ok || !l.Valid() {
		return 0, 0, false
	}
	return time.Duration(l.DMaxNs), l.Bins, true
}

func (pc ProbeConfig) analysis() (analysis.ProbeConfig, error) {
	out := analysis.ProbeConfig{
		DMax: pc.DMax,
		Bins: pc.Bins,
		Triggers: analysis.Triggers{
			QTA:           pc.Triggers.QTA,
			Failure:       pc.Triggers.Failure,
			MaxInstances:  pc.Triggers.MaxInstances,
			MaxDivergence: pc.Triggers.MaxDivergence,
		},
	}
	if len(pc.QTA.Points) > 0 || pc.QTA.MaxFailure != 0 {
		q := &analysis.QTA{MaxFailure: pc.QTA.MaxFailure}
		for _, p := range pc.QTA.Points {
			q.Points = append(q.Points, analysis.QTAPoint{Delay: p.Delay, P: p.P})
		}
		out.QTA = q
	}
	return out, nil
}
