// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package configtest

import (
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"
)

// Row is a row of a README's table of options: a table whose header's
// first cell is "option".
type Row struct {
	// Options are the paths the first cell names, each with sep between
	// its keys and NAME for a probe's name; an option written after the
	// first of a cell without its parents ("`probes::NAME::dmax_min`,
	// `dmax_max`") is given the first's, and a value written with it
	// (`dmax: auto`) is cut.
	Options []string
	// Default is the cell of the column "default", empty when the table has
	// none; Text is the whole row.
	Default, Text string
	// Table counts the tables of options of the file before the row's.
	Table int
}

// Defaults returns the default the row gives each of its options: the
// code spans of its default cell, one an option when there are as many,
// else the cell's first for all (none when the cell does not begin with
// one).
func (r Row) Defaults() []string {
	spans := codeSpan.FindAllStringSubmatch(r.Default, -1)
	if len(spans) == 0 || !strings.HasPrefix(r.Default, "`") {
		return nil
	}
	out := make([]string, len(r.Options))
	for i := range out {
		if len(spans) == len(out) {
			out[i] = spans[i][1]
		} else {
			out[i] = spans[0][1]
		}
	}
	return out
}

// OptionRows returns the rows of the tables of options of the Markdown
// file readme, whose option paths have sep between their keys.
func OptionRows(t testing.TB, readme, sep string) []Row {
	t.Helper()
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	defaultCol, table := -1, -1
	inTable := false
	for line := range strings.SplitSeq(string(raw), "\n") {
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := splitRow(line)
		switch {
		case !inTable && len(cells) > 0 && cells[0] == "option":
			inTable, defaultCol = true, -1
			table++
			for i, c := range cells {
				if c == "default" {
					defaultCol = i
				}
			}
			continue
		case !inTable, strings.HasPrefix(cells[0], "---"):
			continue
		}
		r := Row{Options: rowOptions(cells[0], sep), Text: line, Table: table}
		if defaultCol >= 0 && defaultCol < len(cells) {
			r.Default = cells[defaultCol]
		}
		if len(r.Options) > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table of options", readme)
	}
	return rows
}

// splitRow returns the cells of a Markdown table row, trimmed.
func splitRow(line string) []string {
	line = strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "|"))
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// rowOptions returns the option paths a first cell names in backticks.
func rowOptions(cell, sep string) []string {
	var out []string
	parent := ""
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		opt, _, _ := strings.Cut(m[1], ": ") // `dmax: auto`
		if strings.ContainsAny(opt, " …{") {
			continue
		}
		if i := strings.LastIndex(opt, sep); i >= 0 {
			parent = opt[:i+len(sep)]
		} else if parent != "" {
			opt = parent + opt
		}
		out = append(out, opt)
	}
	return out
}

// Keys returns the option paths of the configuration type typ, with sep
// between their keys, as the collector's decoder reads its mapstructure
// tags (squashed structs flattened, NAME for the key of a map of
// structs, [] after a list of structs), each with its Go type: the paths
// of the structs and of the values they hold.
func Keys(typ reflect.Type, sep string) map[string]reflect.Type {
	keys := make(map[string]reflect.Type)
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && derefKind(t.Elem()) == reflect.Struct {
			keys[prefix+"NAME"] = t.Elem()
			walk(prefix+"NAME"+sep, t.Elem())
			return
		}
		if t.Kind() == reflect.Slice && derefKind(t.Elem()) == reflect.Struct {
			walk(strings.TrimSuffix(prefix, sep)+"[]"+sep, t.Elem())
			return
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Duration]() {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
			switch {
			case name == "" && strings.Contains(opts, "squash"):
				walk(prefix, f.Type)
			case name != "" && name != "-" && f.IsExported():
				keys[prefix+name] = f.Type
				walk(prefix+name+sep, f.Type)
			}
		}
	}
	walk("", typ)
	return keys
}

func derefKind(t reflect.Type) reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

// Bound is a range a row gives an option: "in [1, 1000]", "(0, 24h]".
type Bound struct {
	Option         string
	Lo, Hi         float64 // in nanoseconds for a duration
	LoOpen, HiOpen bool
	duration       bool // set by Cases
}

// bounds matches a range of a row's text: an optional word before it,
// the brackets and the two ends, each a number, a power (10⁷, 2⁴⁰) or a
// duration.
var bounds = regexp.MustCompile(`(\w+ )?(?:in |, )?([\[(])([0-9.]+[0-9⁰¹²³⁴⁵⁶⁷⁸⁹µa-z]*), ([0-9.]+[0-9⁰¹²³⁴⁵⁶⁷⁸⁹µa-z]*)([\])])`)

// Bounds returns the ranges a row gives its options: a range preceded by
// the last key of one of them is that option's, those preceded by "each"
// are every option's, and as many ranges as options go to them in order;
// a range whose ends are not literal values (`max_agents`) is left out.
func (r Row) Bounds(sep string) []Bound {
	var found [][]string
	for _, m := range bounds.FindAllStringSubmatch(r.Text, -1) {
		if _, ok := parseEnd(m[3]); !ok {
			continue
		}
		if _, ok := parseEnd(m[4]); !ok {
			continue
		}
		found = append(found, m)
	}
	var out []Bound
	mk := func(opt string, m []string) Bound {
		lo, _ := parseEnd(m[3])
		hi, _ := parseEnd(m[4])
		return Bound{Option: opt, Lo: lo, Hi: hi, LoOpen: m[2] == "(", HiOpen: m[5] == ")"}
	}
	unnamed := found[:0:0]
	for _, m := range found {
		word := strings.TrimSpace(m[1])
		named := false
		for _, opt := range r.Options {
			if word == "each" || word == opt[strings.LastIndex(opt, sep)+len(sep):] {
				out = append(out, mk(opt, m))
				named = true
			}
		}
		if !named {
			unnamed = append(unnamed, m)
		}
	}
	if len(unnamed) == len(r.Options) {
		for i, m := range unnamed {
			out = append(out, mk(r.Options[i], m))
		}
	}
	return out
}

var superscripts = strings.NewReplacer("⁰", "0", "¹", "1", "²", "2", "³", "3", "⁴", "4", "⁵", "5", "⁶", "6", "⁷", "7", "⁸", "8", "⁹", "9")

// parseEnd reads an end of a range: a number, a power written with a
// superscript exponent, or a duration (a day written d), in nanoseconds.
func parseEnd(s string) (float64, bool) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, true
	}
	for _, base := range []string{"10", "2"} {
		if exp, ok := strings.CutPrefix(s, base); ok && exp != "" && superscripts.Replace(exp) != exp {
			e, err := strconv.Atoi(superscripts.Replace(exp))
			b, _ := strconv.Atoi(base)
			if err == nil {
				return math.Pow(float64(b), float64(e)), true
			}
		}
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil {
			return float64(time.Duration(n) * 24 * time.Hour), true
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		return float64(d), true
	}
	return 0, false
}

// String is the range as a README writes it.
func (b Bound) String() string {
	end := func(v float64, dur bool) string {
		if dur {
			return time.Duration(v).String()
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	dur := b.duration
	return fmt.Sprintf("%s%s, %s%s", map[bool]string{true: "(", false: "["}[b.LoOpen], end(b.Lo, dur),
		end(b.Hi, dur), map[bool]string{true: ")", false: "]"}[b.HiOpen])
}

// Case is a value of an option and whether it is within the option's
// range.
type Case struct {
	Value  any
	Within bool
}

// Cases returns the values of the Go type typ at each end of the bound
// and just beyond, as a configuration writes them (a duration as its
// text). A zero is within where the row says that it stands for the
// default ("in [1, 64], `0` = the default").
func (b *Bound) Cases(t testing.TB, typ reflect.Type, r Row) []Case {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	var cs []Case
	add := func(v any, within bool, zero bool) {
		cs = append(cs, Case{Value: v, Within: within || zero && r.ZeroStandsFor()})
	}
	switch {
	case typ == reflect.TypeFor[time.Duration]():
		b.duration = true
		lo, hi := time.Duration(b.Lo), time.Duration(b.Hi)
		for _, c := range []struct {
			v      time.Duration
			within bool
		}{{lo, !b.LoOpen}, {lo - 1, false}, {hi, !b.HiOpen}, {hi + 1, false}} {
			add(c.v.String(), c.within, c.v == 0)
		}
	case typ.Kind() == reflect.Int || typ.Kind() == reflect.Int64:
		lo, hi := int64(b.Lo), int64(b.Hi)
		add(lo, !b.LoOpen, lo == 0)
		add(lo-1, false, lo-1 == 0)
		add(hi, !b.HiOpen, hi == 0)
		add(hi+1, false, false)
	case typ.Kind() == reflect.Float64:
		below := math.Nextafter(b.Lo, math.Inf(-1))
		add(b.Lo, !b.LoOpen, b.Lo == 0)
		add(below, false, false)
		add(b.Hi, !b.HiOpen, false)
		add(math.Nextafter(b.Hi, math.Inf(1)), false, false)
	default:
		t.Fatalf("%s: a range of an option of type %s", b.Option, typ)
	}
	return cs
}

// Undocumented returns the problems of the options of keys (Keys) that
// documented, the rows by the options they name, does not document: an
// option of one value needs a row of its own, or one of an option that
// holds it that names it.
func Undocumented(keys map[string]reflect.Type, documented map[string][]Row, sep string) []string {
	var msgs []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if _, ok := documented[k]; ok || !Scalar(keys[k]) && keys[k].Kind() != reflect.Slice {
			continue
		}
		leaf := k[strings.LastIndex(k, sep)+len(sep):]
		for parent := k; ; {
			i := strings.LastIndex(parent, sep)
			if i < 0 {
				msgs = append(msgs, fmt.Sprintf("no row of the option %s", k))
				break
			}
			parent = parent[:i]
			if rs, ok := documented[strings.TrimSuffix(parent, "[]")]; ok {
				if !slices.ContainsFunc(rs, func(r Row) bool { return strings.Contains(r.Text, leaf) }) {
					msgs = append(msgs, fmt.Sprintf("the row of %s does not name its option %s", parent, leaf))
				}
				break
			}
		}
	}
	return msgs
}

// Scalar reports whether an option of type typ holds one value.
func Scalar(typ reflect.Type) bool {
	if typ == nil {
		return false
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64, reflect.String:
		return true
	}
	return false
}

// Set sets opt, whose keys sep separates and whose NAME is the probe p,
// to v in the section sec.
func Set(sec map[string]any, opt, sep string, v any) {
	keys := strings.Split(strings.Replace(opt, "NAME", "p", 1), sep)
	for _, k := range keys[:len(keys)-1] {
		next, ok := sec[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			sec[k] = next
		}
		sec = next
	}
	sec[keys[len(keys)-1]] = v
}

// Refuses reports whether err, the problems of a configuration, has one
// at opt (NAME the probe p), in the components' notation:
// probes["p"].triggers.confidence.
func Refuses(err error, opt, sep string) bool {
	path := strings.ReplaceAll(strings.Replace(opt, sep+"NAME", `["p"]`, 1), sep, ".")
	return err != nil && strings.Contains("\n"+err.Error(), "\n"+path+": ")
}

// YAMLValue is the value of the YAML text s, as a configuration holds it.
func YAMLValue(t testing.TB, s string) any {
	t.Helper()
	r, err := confmap.NewRetrievedFromYAML([]byte("v: " + s))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := r.AsRaw()
	if err != nil {
		t.Fatal(err)
	}
	return raw.(map[string]any)["v"]
}

// Means reports whether the default def that a README gives is v, the
// value the option's zero stands for.
func Means(v any, def string) bool {
	if d, ok := v.(time.Duration); ok {
		dd, err := time.ParseDuration(def)
		return err == nil && dd == d
	}
	return fmt.Sprint(v) == def
}

// ZeroStandsFor reports whether a row says that an option's zero stands
// for its default.
func (r Row) ZeroStandsFor() bool { return strings.Contains(r.Text, "`0` = ") }

// Options describes a component's README tables of options for the checks
// CheckOptions, CheckDefaults and CheckBounds.
type Options struct {
	// Component names the component in messages ("the connector").
	Component string
	// Sep separates an option's keys; Rows are the README's rows
	// (OptionRows) and Keys the options the component decodes (Keys).
	Sep  string
	Rows []Row
	Keys map[string]reflect.Type
	// ZeroMeans are the defaults that an option's zero (or absence, for
	// an option decoded into a pointer) stands for.
	ZeroMeans map[string]any
	// Path is an option's path in a section made by Base (nil: the
	// option's own).
	Path func(opt string) string
	// Base is a section in which opt can be set alone; BoundsBase one in
	// which its whole range holds (nil: Base).
	Base, BoundsBase func(opt string) map[string]any
	// Decode decodes a section into the component's configuration,
	// which has a Validate method.
	Decode func(sec map[string]any) (interface{ Validate() error }, error)
}

func (o *Options) path(opt string) string {
	if o.Path == nil {
		return opt
	}
	return o.Path(opt)
}

// CheckOptions checks that every option of one value that the component
// decodes has its row in the README's tables, or is named in a row of the
// option that holds it (`match` names span_name, …), and that every
// option a row names is one the component decodes.
func CheckOptions(t *testing.T, o Options) {
	t.Helper()
	documented := make(map[string][]Row)
	for _, r := range o.Rows {
		for _, opt := range r.Options {
			if _, ok := o.Keys[opt]; !ok {
				t.Errorf("README.md names the option %s, which %s does not have", opt, o.Component)
			}
			documented[opt] = append(documented[opt], r)
		}
	}
	for _, msg := range Undocumented(o.Keys, documented, o.Sep) {
		t.Error("README.md: " + msg)
	}
}

// CheckDefaults checks that the default a row gives, written in the
// configuration, changes nothing; or that the option's zero (or absence,
// for an option decoded into a pointer) stands for it, and the row of one
// whose zero does says so ("`0` = the default"). It returns the number of
// options checked. The options of a list's entries (conditions[].op) are
// left out.
func CheckDefaults(t *testing.T, o Options) int {
	t.Helper()
	decode := func(sec map[string]any) any {
		cfg, err := o.Decode(sec)
		if err != nil {
			t.Fatalf("decoding %v: %v", sec, err)
		}
		return cfg
	}
	checked := 0
	for _, r := range o.Rows {
		for i, def := range r.Defaults() {
			opt := r.Options[i]
			if !Scalar(o.Keys[opt]) || strings.Contains(strings.TrimPrefix(opt, "probes[]"), "[]") {
				continue
			}
			checked++
			withDefault := o.Base(opt)
			Set(withDefault, o.path(opt), o.Sep, YAMLValue(t, def))
			if reflect.DeepEqual(decode(o.Base(opt)), decode(withDefault)) {
				continue
			}
			zero, ok := o.ZeroMeans[opt]
			switch {
			case !ok:
				t.Errorf("README.md gives %s the default %s, which is not %s's", opt, def, o.Component)
			case o.Keys[opt].Kind() != reflect.Pointer && !r.ZeroStandsFor():
				t.Errorf("README.md: %s's zero stands for its default %s: the row does not say so (`0` = the default)", opt, def)
			case !Means(zero, def):
				t.Errorf("README.md gives %s the default %s; its zero stands for %v", opt, def, zero)
			}
		}
	}
	return checked
}

// CheckBounds checks that an option is accepted at each end of the range
// its row gives, when within it, and refused just beyond, with a problem
// at the option's path. It returns the number of ranges checked.
func CheckBounds(t *testing.T, o Options) int {
	t.Helper()
	base := o.BoundsBase
	if base == nil {
		base = o.Base
	}
	checked := 0
	for _, r := range o.Rows {
		for _, b := range r.Bounds(o.Sep) {
			typ := o.Keys[b.Option]
			if !Scalar(typ) {
				continue
			}
			checked++
			for _, c := range b.Cases(t, typ, r) {
				sec := base(b.Option)
				Set(sec, o.path(b.Option), o.Sep, c.Value)
				cfg, err := o.Decode(sec)
				if err == nil {
					err = cfg.Validate()
				}
				if Refuses(err, o.path(b.Option), o.Sep) == c.Within {
					t.Errorf("README.md: %s %s: %v is %s (%v)", b.Option, b, c.Value, map[bool]string{true: "refused", false: "accepted"}[c.Within], err)
				}
			}
		}
	}
	return checked
}
