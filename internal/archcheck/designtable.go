// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package archcheck

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Row is one row of the design's package table.
type Row struct {
	Line int
	// Packages are the module-relative paths the row names; each covers its
	// subpackages that no other row names.
	Packages []string
	// Internal are the module's packages the row may import, External the
	// short names of outside modules; Any allows every module package.
	Internal []string
	External []string
	Any      bool
}

// Outside is what each short name of the table's "may import" column stands
// for: import path prefixes.
var Outside = map[string][]string{
	"collector": {"go.opentelemetry.io/collector/"},
	"confmap":   {"go.opentelemetry.io/collector/confmap"},
	"otel-go":   {"go.opentelemetry.io/otel"},
	"zap":       {"go.uber.org/zap"},
	"gonum":     {"gonum.org/v1/"},
	"x/sys":     {"golang.org/x/sys/"},
	"x/text":    {"golang.org/x/text/"},
	"grpc":      {"google.golang.org/grpc"},
	"compress":  {"github.com/klauspost/compress/"},
	"yaml":      {"go.yaml.in/yaml/"},
}

const tableHeading = "## Packages and their dependencies"

var quoted = regexp.MustCompile("`([^`]+)`")

// ParseTable reads the package table under the heading "Packages and their
// dependencies" of a design document. A cell's module packages are in
// backticks; other words of the "may import" cell are short names of
// Outside, "any", or "—" for nothing.
func ParseTable(r io.Reader) ([]Row, error) {
	sc := bufio.NewScanner(r)
	var rows []Row
	in, header := false, 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == tableHeading:
			in = true
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "## "):
			in = false
			continue
		case !strings.HasPrefix(line, "|"):
			continue
		}
		if header < 2 { // the header and its rule
			header++
			continue
		}
		row, err := parseRow(line, n)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no package table under %q", tableHeading)
	}
	return rows, nil
}

func parseRow(line string, n int) (Row, error) {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	if len(cells) != 3 {
		return Row{}, fmt.Errorf("line %d: %d cells, want 3 (package | role | may import)", n, len(cells))
	}
	row := Row{Line: n}
	for _, m := range quoted.FindAllStringSubmatch(cells[0], -1) {
		row.Packages = append(row.Packages, m[1])
	}
	if len(row.Packages) == 0 {
		return Row{}, fmt.Errorf("line %d: no package in backticks in %q", n, strings.TrimSpace(cells[0]))
	}
	for _, item := range strings.Split(cells[2], ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "—" || item == "":
		case item == "any":
			row.Any = true
		case quoted.MatchString(item):
			row.Internal = append(row.Internal, quoted.FindStringSubmatch(item)[1])
		case Outside[item] != nil:
			row.External = append(row.External, item)
		default:
			return Row{}, fmt.Errorf("line %d: %q is neither a package in backticks nor a short name of an outside module", n, item)
		}
	}
	return row, nil
}

// RowOf returns the index of the row that covers the module-relative
// package path: the row naming it or its nearest parent; -1 for none.
func RowOf(rows []Row, pkg string) int {
	best, bestLen := -1, -1
	for i, r := range rows {
		for _, p := range r.Packages {
			if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}
