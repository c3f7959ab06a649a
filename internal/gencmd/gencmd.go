// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package gencmd is the command-line scaffolding the two traffic generators,
// dqload and dqworkload, share: the process's exit on error, the flags of
// the connection to the collector (-endpoint, -timeout) and its dialling,
// and the progress ticker of -report.
package gencmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Main runs a generator's run with the process's arguments and stdout. An
// error other than flag.ErrHelp (-h, whose help is already printed) ends the
// process with status 1 after "name: error" on stderr.
func Main(name string, run func(args []string, stdout io.Writer) error) {
	if err := run(os.Args[1:], os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Client is the connection to the collector.
type Client struct {
	// Endpoint is the collector's OTLP/gRPC host:port.
	Endpoint string
	// Timeout bounds one export.
	Timeout time.Duration
}

// defaultEndpoint is the collector's OTLP/gRPC port on this machine.
const defaultEndpoint = "127.0.0.1:4317"

// NewFlagSet returns the flag set of the command name, reporting to stderr,
// with -endpoint and -timeout filling c (defaultEndpoint and timeout are
// their defaults).
func NewFlagSet(name string, stderr io.Writer, c *Client, timeout time.Duration) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Endpoint, "endpoint", defaultEndpoint, "collector OTLP/gRPC `host:port`")
	fs.DurationVar(&c.Timeout, "timeout", timeout, "timeout of one export")
	return fs
}

// Parse parses args with fs and refuses positional arguments. It returns
// flag.ErrHelp for -h.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// Dial returns a client connection to c.Endpoint, without TLS: the
// generators drive a collector on this machine or in a test. The connection
// is made on the first request.
func (c Client) Dial() (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", c.Endpoint, err)
	}
	return conn, nil
}

// Ticker returns a channel that ticks every d, for -report, and the function
// that stops it; with d = 0 the channel is nil (never ticks).
func Ticker(d time.Duration) (tick <-chan time.Time, stop func()) {
	if d <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(d)
	return t.C, t.Stop
}
