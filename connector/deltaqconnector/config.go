// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector // import "github.com/deltaq-otel/deltaq/connector/deltaqconnector"

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/internal/observer"
)

// Config is the configuration of the deltaq connector: the analysis options
// of the deltaq exporter (interval, lag, history, diagram, probes, …),
// without the exporter's sending options, since the output goes to the
// collector's own pipelines.
type Config struct {
	// Config holds the analysis options, at the top level of the
	// connector's section.
	observer.Config `mapstructure:",squash"`
	_               struct{} // prevent unkeyed literal initialization
}

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
)

func createDefaultConfig() component.Config {
	return &Config{Config: observer.NewDefaultConfig()}
}

// Unmarshal decodes the connector's section of the collector configuration,
// refusing what decoding would change without a word (observer.Unmarshal):
// a duration without a unit, an integer its field cannot hold.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	return observer.Unmarshal(conf, c)
}

// Validate checks the analysis options (observer.Config.Check), the outcome
// diagram included, so that its own error messages (file:line:col) reach
// the user at start-up.
func (c *Config) Validate() error {
	return c.Check()
}
