// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package envdefault is the env provider of the collector's configuration in
// otelcol-deltaq and in the command line's reading of a collector
// configuration: the collector's own (envprovider), except that
// ${env:NAME:-DEFAULT} takes DEFAULT when NAME is set but empty too, as the
// shell's ${NAME:-DEFAULT} does and as OpenTelemetry's environment variables
// read an empty value: as unset. The collector's provider takes the empty
// value, so that DELTAQ_MEMORY_LIMIT_MIB= (a template's empty value) gave
// the memory limiter of the default configuration a limit of 0, which it
// refused at start without naming the variable. ${env:NAME} without a
// default, an unset NAME and every other value are as the collector's
// provider reads them.
package envdefault

import (
	"context"
	"os"
	"regexp"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.uber.org/zap"
)

// scheme is the provider's scheme: ${env:NAME}.
const scheme = "env"

// validName is the collector's pattern of an environment variable's name; a
// name outside it is the collector's provider's to refuse.
var validName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// NewFactory returns the factory of the env provider: the collector's,
// with the default of a variable set but empty.
func NewFactory() confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(ps confmap.ProviderSettings) confmap.Provider {
		if ps.Logger == nil {
			ps.Logger = zap.NewNop()
		}
		return &provider{env: envprovider.NewFactory().Create(ps), logger: ps.Logger}
	})
}

// provider answers ${env:NAME:-DEFAULT} of a variable set but empty, and
// hands everything else to the collector's provider.
type provider struct {
	env    confmap.Provider
	logger *zap.Logger
}

func (p *provider) Retrieve(ctx context.Context, uri string, watcher confmap.WatcherFunc) (*confmap.Retrieved, error) {
	rest, ok := strings.CutPrefix(uri, scheme+":")
	if !ok {
		return p.env.Retrieve(ctx, uri, watcher)
	}
	name, def, hasDefault := strings.Cut(rest, ":-")
	if value, set := os.LookupEnv(name); !hasDefault || !set || value != "" || !validName.MatchString(name) {
		return p.env.Retrieve(ctx, uri, watcher)
	}
	p.logger.Info("Configuration references an empty environment variable: its default applies",
		zap.String("name", name), zap.String("default", def))
	if def == "" {
		// As the collector's provider returns an empty default: a string, not nil.
		return confmap.NewRetrieved("")
	}
	return confmap.NewRetrievedFromYAML([]byte(def))
}

func (p *provider) Scheme() string { return scheme }

func (p *provider) Shutdown(ctx context.Context) error { return p.env.Shutdown(ctx) }
