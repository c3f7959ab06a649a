// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package tools pins the code generators and the linter the build uses. It is a module of
// its own so that the generator's dependencies never reach the main module.
package tools

import (
	_ "go.opentelemetry.io/collector/cmd/mdatagen"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
