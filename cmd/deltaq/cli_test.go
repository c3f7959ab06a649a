// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/globtest"
)

// examples is the repository's testdata directory with the thesis examples.
const examples = "../../testdata"

// runCmd runs deltaq with args and returns the status, stdout and stderr.
func runCmd(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	status := run(args, &stdout, &stderr)
	return status, stdout.String(), stderr.String()
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunDispatch(t *testing.T) {
	status, _, stderr := runCmd()
	if status != exitUsage || !strings.Contains(stderr, "Commands:") {
		t.Errorf("no arguments: status %d, stderr %q", status, stderr)
	}
	for _, name := range []string{"check", "fmt", "graph", "eval"} {
		if !strings.Contains(stderr, "\t"+name+" ") {
			t.Errorf("usage does not list %s:\n%s", name, stderr)
		}
	}
	status, _, stderr = runCmd("frobnicate")
	if status != exitUsage || !strings.HasPrefix(stderr, `deltaq: unknown command "frobnicate"`) {
		t.Errorf("unknown command: status %d, stderr %q", status, stderr)
	}
	// A misspelt command is named with the one meant, as a misspelt probe
	// or flag value is; it was named alone.
	for _, args := range [][]string{{"evl"}, {"help", "evl"}} {
		status, _, stderr = runCmd(args...)
		if status != exitUsage || !strings.Contains(stderr, `unknown command "evl" (did you mean eval?)`+"\n") {
			t.Errorf("%v: status %d, stderr %q", args, status, stderr)
		}
	}
	// A misspelt flag too; one far from every flag is named alone.
	status, _, stderr = runCmd("eval", "x.dq", "--dmx", "1ms")
	if want := "flag provided but not defined: -dmx (did you mean --dmax?)\nusage: deltaq eval "; status != exitUsage || !strings.HasPrefix(stderr, want) {
		t.Errorf("--dmx: status %d, stderr %q, want it to start %q", status, stderr, want)
	}
	status, _, stderr = runCmd("eval", "x.dq", "--zzz")
	if want := "flag provided but not defined: -zzz\nusage: deltaq eval "; status != exitUsage || !strings.HasPrefix(stderr, want) {
		t.Errorf("--zzz: status %d, stderr %q, want it to start %q", status, stderr, want)
	}
	status, stdout, _ := runCmd("help", "eval")
	if status != exitOK || !strings.Contains(stdout, "DIST is one of") || !strings.Contains(stdout, "-outcome NAME=DIST") {
		t.Errorf("help eval: status %d, stdout %q", status, stdout)
	}
	status, _, stderr = runCmd("help", "nothing")
	if status != exitUsage || !strings.Contains(stderr, `unknown command "nothing"`) {
		t.Errorf("help nothing: status %d, stderr %q", status, stderr)
	}
	status, _, stderr = runCmd("eval", "-h")
	if status != exitOK || !strings.Contains(stderr, "usage: deltaq eval FILE.dq") {
		t.Errorf("eval -h: status %d, stderr %q", status, stderr)
	}
}

func TestCheck(t *testing.T) {
	path := filepath.Join(examples, "mm1k.dq")
	status, stdout, stderr := runCmd("check", path)
	want := path + ": ok, 4 probes\n" +
		"  probe     definition  " + path + ":8:1\n" +
		"  system    system      " + path + ":11:1\n" +
		"  worker_1  outcome     " + path + ":8:9\n" +
		"  worker_2  outcome     " + path + ":8:21\n"
	if status != exitOK || stdout != want || stderr != "" {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", status, stdout, want, stderr)
	}

	bad := writeTemp(t, "bad.dq", "probe = s:probe_2;\nprobe_2 = s:probe;\nx = a -> ;\n")
	status, stdout, stderr = runCmd("check", bad, filepath.Join(examples, "ftf.dq"))
	wantErr := bad + ":3:10: expected outcome, s:name or operator, found ';'\n"
	if status != exitFail || stderr != wantErr || !strings.Contains(stdout, "ftf.dq: ok, 4 probes") ||
		!strings.Contains(stdout, "ftf       first-to-finish operator") {
		t.Errorf("status %d\nstdout:\n%s\nstderr:\n%s\nwant stderr:\n%s", status, stdout, stderr, wantErr)
	}

	// Semantic errors, all of them, once the syntax is right.
	bad = writeTemp(t, "cycle.dq", "probe = s:probe_2;\nprobe_2 = s:probe;\nx = p:c[0.5, 0.6](a, b);\n")
	status, _, stderr = runCmd("check", bad)
	wantErr = bad + ":1:9: cycle of probes: probe -> probe_2 -> probe\n" +
		bad + ":3:5: probabilities of p:c sum to 1.1, not 1\n"
	if status != exitFail || stderr != wantErr {
		t.Errorf("status %d, stderr:\n%s\nwant:\n%s", status, stderr, wantErr)
	}

	status, _, stderr = runCmd("check", filepath.Join(t.TempDir(), "missing.dq"))
	if status != exitFail || !strings.Contains(stderr, "no such file") {
		t.Errorf("missing file: status %d, stderr %q", status, stderr)
	}
	if status, _, _ := runCmd("check"); status != exitUsage {
		t.Errorf("check without files: status %d", status)
	}
}

func TestFmt(t *testing.T) {
	messy := "# doc\nsystem=f:ftf( worker_1 ,worker_2 ) ;# end\n"
	canonical := "# doc\nsystem = f:ftf(worker_1, worker_2); # end\n"
	path := writeTemp(t, "messy.dq", messy)
	status, stdout, stderr := runCmd("fmt", path)
	if status != exitOK || stdout != canonical || stderr != "" {
		t.Errorf("fmt: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	if b, _ := os.ReadFile(path); string(b) != messy {
		t.Error("fmt without -w changed the file")
	}
	status, stdout, _ = runCmd("fmt", "-w", path)
	if b, _ := os.ReadFile(path); status != exitOK || stdout != "" || string(b) != canonical {
		t.Errorf("fmt -w: status %d, stdout %q, file %q", status, stdout, b)
	}

	// Formatting needs only the syntax: an undefined reference is kept.
	semantic := writeTemp(t, "undef.dq", "x=s:nowhere;")
	if status, stdout, _ := runCmd("fmt", semantic); status != exitOK || stdout != "x = s:nowhere;\n" {
		t.Errorf("fmt of a file with a semantic error: status %d, stdout %q", status, stdout)
	}

	broken := writeTemp(t, "broken.dq", "x = a ->\n")
	status, _, stderr = runCmd("fmt", "-w", broken)
	if b, _ := os.ReadFile(broken); status != exitFail || string(b) != "x = a ->\n" ||
		stderr != broken+":2:1: expected outcome, s:name or operator, found end of file\n" {
		t.Errorf("fmt -w of a broken file: status %d, stderr %q, file %q", status, stderr, b)
	}

	// The examples are already canonical.
	for _, f := range globtest.Glob(t, filepath.Join(examples, "*.dq")) {
		src, _ := os.ReadFile(f)
		if status, stdout, _ := runCmd("fmt", f); status != exitOK || stdout != string(src) {
			t.Errorf("%s is not canonical", f)
		}
	}
}

func TestGraph(t *testing.T) {
	path := filepath.Join(examples, "ftf.dq")
	status, stdout, stderr := runCmd("graph", path)
	assertContainsAll(t, "graph output", stdout,
		"digraph \""+path+"\" {\n",
		"subgraph \"cluster_def_system\"",
		"label=\"f:ftf (first-to-finish)\"",
		"[label=\"worker_1\", shape=ellipse]",
	)
	if status != exitOK || stderr != "" {
		t.Errorf("status %d, stderr %q", status, stderr)
	}
	bad := writeTemp(t, "bad.dq", "x = s:y;")
	if status, stdout, stderr := runCmd("graph", bad); status != exitFail || stdout != "" || !strings.Contains(stderr, "undefined probe s:y") {
		t.Errorf("graph of an invalid file: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	if status, _, _ := runCmd("graph", path, path); status != exitUsage {
		t.Errorf("graph with two files: status %d", status)
	}
}

// evalJSON runs deltaq eval --json and decodes its output.
func evalJSON(t *testing.T, args ...string) map[string]struct {
	CDFAt     map[string]float64  `json:"cdf_at"`
	Quantiles map[string]*float64 `json:"quantiles"`
	Failure   float64             `json:"failure"`
	BinWidth  float64             `json:"bin_width"`
	DMax      float64             `json:"dmax"`
} {
	t.Helper()
	status, stdout, stderr := runCmd(append([]string{"eval", "--json"}, args...)...)
	if status != exitOK {
		t.Fatalf("eval %v: status %d, stderr %s", args, status, stderr)
	}
	var out struct {
		Probes map[string]struct {
			CDFAt     map[string]float64  `json:"cdf_at"`
			Quantiles map[string]*float64 `json:"quantiles"`
			Failure   float64             `json:"failure"`
			BinWidth  float64             `json:"bin_width"`
			DMax      float64             `json:"dmax"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	return out.Probes
}

// TestEvalKnownAnswers checks eval against closed forms.
func TestEvalKnownAnswers(t *testing.T) {
	// a, b ~ U[1 s, 2 s): a ⊗ b is triangular on [2, 4] with median 3 and
	// P(≤ 3.5) = 1 − 0.5²/2 = 0.875; behind a 0.75/0.25 choice with never,
	// P(≤ 3.5) = 0.75 · 0.875 = 0.65625 and the failure mass is 0.25.
	file := filepath.Join(examples, "lossy_choice.dq")
	u := []string{file, "--outcome", "a=uniform(1s,2s)", "--outcome", "b=uniform(1s,2s)", "--outcome", "lost=never", "--at", "3.5s,3s"}
	probes := evalJSON(t, append(u, "--probe", "chain", "--probe", "system")...)
	chain, system := probes["chain"], probes["system"]
	if med := chain.Quantiles["0.5"]; med == nil || math.Abs(*med-3) > chain.BinWidth {
		t.Errorf("chain median %v, want 3", med)
	}
	if got := chain.CDFAt["3.5"]; math.Abs(got-0.875) > 1e-9 {
		t.Errorf("chain P(≤3.5) = %v, want 0.875", got)
	}
	if got := system.CDFAt["3.5"]; math.Abs(got-0.65625) > 1e-9 {
		t.Errorf("system P(≤3.5) = %v, want 0.65625", got)
	}
	if got := system.CDFAt["3"]; math.Abs(got-0.375) > 1e-9 {
		t.Errorf("system P(≤3) = %v, want 0.75·0.5 = 0.375", got)
	}
	if system.Failure != 0.25 || system.Quantiles["0.9"] != nil || system.Quantiles["0.5"] == nil {
		t.Errorf("system failure %v, q0.9 %v (want 0.25, unreachable)", system.Failure, system.Quantiles["0.9"])
	}
	// Default dMax: the smallest nice value above 2 s is 2.5 s; 1000 bins.
	if chain.BinWidth != 0.0025 || chain.DMax != 5 {
		t.Errorf("chain bin width %v dMax %v, want 0.0025 and 5 (two 2.5 s operands)", chain.BinWidth, chain.DMax)
	}

	// M/M/1/K workers with exponential delays of mean 5 ms: the sequence is
	// Erlang-2, F(t) = 1 − e^{−t/θ}(1 + t/θ), median ≈ 1.678347·θ.
	theta := 0.005
	probes = evalJSON(t, filepath.Join(examples, "mm1k.dq"), "--outcome", "worker_1=exp(5ms)", "--outcome", "worker_2=exp(5ms)", "--at", "10ms")
	sys := probes["system"]
	wantCDF := 1 - math.Exp(-2)*3
	if got := sys.CDFAt["0.01"]; math.Abs(got-wantCDF) > 1e-3 {
		t.Errorf("Erlang-2 F(10ms) = %v, want %v", got, wantCDF)
	}
	if med := sys.Quantiles["0.5"]; med == nil || math.Abs(*med-1.678347*theta) > 2*sys.BinWidth {
		t.Errorf("Erlang-2 median %v, want %v", med, 1.678347*theta)
	}
	if len(probes) != 1 {
		t.Errorf("printed %d probes, want only system", len(probes))
	}

	// README.md's "Design time" example: worker 1 drops 1 %, so F(10 ms) is
	// 0.99 · (1 − 3e⁻²) = 0.58805 (Erlang-2 behind the loss), up to the
	// discretisation of the 120 µs bins, the failure mass 0.01 and the 0.99
	// quantile out of reach.
	probes = evalJSON(t, filepath.Join(examples, "mm1k.dq"), "--outcome", "worker_1=choice(0.99:exp(5ms),0.01:never)", "--outcome", "worker_2=exp(5ms)", "--at", "10ms")
	sys = probes["system"]
	if got, want := sys.CDFAt["0.01"], 0.99*(1-3*math.Exp(-2)); math.Abs(got-want) > 1e-4 {
		t.Errorf("README example: F(10ms) = %v, want %v", got, want)
	}
	if sys.Failure != 0.01 || sys.Quantiles["0.99"] != nil {
		t.Errorf("README example: failure %v, q0.99 %v; want 0.01, unreachable", sys.Failure, sys.Quantiles["0.99"])
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if hand := fmt.Sprintf("0.99 · (1 − 3e⁻²) = %.5f", 0.99*(1-3*math.Exp(-2))); !strings.Contains(string(readme), hand) {
		t.Errorf("README.md does not check the example by hand as %q", hand)
	}

	// A delay of exactly dMax is a success (the bins are upper-inclusive,
	// README.md, "The ideas in a few paragraphs"), as eval's help says.
	probes = evalJSON(t, filepath.Join(examples, "mm1k.dq"), "--outcome", "worker_1=point(10ms)", "--outcome", "worker_2=point(10ms)", "--dmax", "10ms", "--bins", "10", "--at", "20ms")
	if sys := probes["system"]; sys.Failure != 0 || sys.CDFAt["0.02"] != 1 {
		t.Errorf("two stages of exactly dMax: failure %v, F(2·dMax) = %v; want 0 and 1", sys.Failure, sys.CDFAt["0.02"])
	}
	if help := evalCommand().help; !strings.Contains(help, "covering [0, --dmax], a delay of exactly\ndMax a success") {
		t.Errorf("eval's help does not say that the bins cover [0, dMax], dMax included:\n%s", help)
	}

	// First to finish of two exponentials of mean 5 ms is exponential of
	// mean 2.5 ms: F(5 ms) = 1 − e^{−2}.
	probes = evalJSON(t, filepath.Join(examples, "ftf.dq"), "--outcome", "worker_1=exp(5ms)", "--outcome", "worker_2=exp(5ms)", "--at", "5ms", "--dmax", "100ms", "--bins", "2000")
	if got, want := probes["system"].CDFAt["0.005"], 1-math.Exp(-2); math.Abs(got-want) > 1e-3 {
		t.Errorf("FTF F(5ms) = %v, want %v", got, want)
	}
	if w := probes["system"].BinWidth; math.Abs(w-50e-6) > 1e-15 {
		t.Errorf("bin width %v, want 100ms/2000", w)
	}
}

func TestEvalAllProbesAndDefinitionInput(t *testing.T) {
	// Without a system every probe is printed.
	path := writeTemp(t, "nosys.dq", "chain = a -> b;\nboth = f:race(s:chain, c);\n")
	probes := evalJSON(t, path, "--outcome", "a=point(1ms)", "--outcome", "b=point(2ms)", "--outcome", "c=point(10ms)")
	for _, name := range []string{"chain", "both", "race", "a", "b", "c"} {
		if _, ok := probes[name]; !ok {
			t.Errorf("probe %s not printed", name)
		}
	}
	// A definition given an assumed ΔQ stands in for its calculation, and
	// is called assumed, as the ΔQs of --outcome are: eval observes none.
	status, stdout, stderr := runCmd("eval", path, "--outcome", "chain=point(1ms)", "--outcome", "c=point(10ms)", "--probe", "both")
	if status != exitOK || !strings.Contains(stdout, "s:chain    assumed ΔQ used") {
		t.Errorf("status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
}

func TestEvalText(t *testing.T) {
	file := filepath.Join(examples, "lossy_choice.dq")
	status, stdout, stderr := runCmd("eval", file, "--outcome", "a=uniform(1s,2s)", "--outcome", "b=uniform(1s,2s)",
		"--outcome", "lost=never", "--at", "3s,3.5s")
	want := "system (system): calculated ΔQ, 2000 bins of 2.5ms, dMax 5s\n" +
		"  s:chain    calculated ΔQ used\n" +
		"  quantiles  0.25=2.816s 0.5=3.184s 0.75=4s 0.9=unreachable 0.99=unreachable\n" +
		"  failure    0.25\n" +
		"  P(d ≤ t)   3s: 0.375000 3.5s: 0.656250\n"
	if status != exitOK || stdout != want || stderr != "" {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", status, stdout, want, stderr)
	}
}

func TestEvalErrors(t *testing.T) {
	mm1k := filepath.Join(examples, "mm1k.dq")
	ftf := filepath.Join(examples, "ftf.dq")
	tests := []struct {
		name   string
		args   []string
		status int
		stderr string // a line the error output must contain
	}{
		{"missing outcome", []string{mm1k, "--outcome", "worker_1=exp(5ms)"}, exitFail,
			"deltaq eval: no --outcome for outcome worker_2 (" + mm1k + ":8:21)"},
		{"unknown name", []string{mm1k, "--outcome", "worker_3=exp(5ms)"}, exitUsage,
			"deltaq eval: --outcome worker_3: " + mm1k + " has no outcome or definition named worker_3; known: worker_1, worker_2, probe, system"},
		{"operator name", []string{ftf, "--outcome", "ftf=exp(5ms)"}, exitUsage,
			"ftf is an operator (" + ftf + ":5:10); its ΔQ is always calculated from its branches"},
		{"bad distribution", []string{mm1k, "--outcome", "worker_1=uniform(1ms,x)"}, exitUsage,
			`invalid value "worker_1=uniform(1ms,x)" for flag -outcome: worker_1: 1:13: expected a number, found "x)"`},
		{"outcome twice", []string{mm1k, "--outcome", "worker_1=never", "--outcome", "worker_1=never"}, exitUsage,
			"worker_1 given twice"},
		{"bad dmax", []string{mm1k, "--outcome", "worker_1=never", "--dmax", "10"}, exitUsage,
			"--dmax 10: 1:3: expected a unit (ns, us, ms or s) after 10"},
		{"zero dmax", []string{mm1k, "--outcome", "worker_1=never", "--dmax", "0s"}, exitUsage,
			"deltaq eval: --dmax 0s: want at least 1us, the smallest dMax a probe may have"},
		// A negative --dmax was "expected a number"; one below a
		// nanosecond was accepted, bins of 1e-07ns.
		{"negative dmax", []string{mm1k, "--outcome", "worker_1=never", "--dmax", "-1s"}, exitUsage,
			"deltaq eval: --dmax -1s: want at least 1us, the smallest dMax a probe may have"},
		{"sub-nanosecond dmax", []string{mm1k, "--outcome", "worker_1=never", "--dmax", "0.0001ns"}, exitUsage,
			"deltaq eval: --dmax 0.0001ns: want at least 1us, the smallest dMax a probe may have"},
		// It named the default --dmax, not given: "--dmax 1s --bins 0:".
		{"bad bins", []string{mm1k, "--outcome", "worker_1=never", "--bins", "0"}, exitUsage,
			"deltaq eval: --bins 0: want a number in [1, 65536]\n"},
		{"bad at", []string{mm1k, "--outcome", "worker_1=never", "--at", "1ms,x"}, exitUsage,
			"--at x: 1:1: expected a number"},
		{"empty at", []string{mm1k, "--outcome", "worker_1=never", "--at", "1ms,"}, exitUsage,
			"--at 1ms,: delay 2 is empty"},
		// Given empty, --qoo was taken for not given.
		{"empty qoo", []string{mm1k, "--outcome", "worker_1=never", "--qoo", ""}, exitUsage,
			`--qoo : "": want pP:ROP/CPUP or loss:ROP/CPUP`},
		{"unknown probe", []string{mm1k, "--outcome", "worker_1=never", "--probe", "sytem"}, exitUsage,
			"--probe sytem: " + mm1k + " has no probe named sytem; known: system, probe, worker_1, worker_2"},
		{"no file", []string{"--outcome", "worker_1=never"}, exitUsage,
			"deltaq eval: want one FILE.dq, got 0 arguments"},
		{"invalid diagram", []string{writeTemp(t, "bad.dq", "x = s:y;"), "--outcome", "a=never"}, exitFail,
			"bad.dq:1:5: undefined probe s:y"},
		// 2 × 40000 bins > MaxBins: the file, the probe and what fits.
		{"sequence too long", []string{mm1k, "--outcome", "worker_1=exp(5ms)", "--outcome", "worker_2=exp(5ms)", "--bins", "40000"}, exitFail,
			"deltaq eval: " + mm1k + ": system: sequence at 8:21: deltaq: Convolve: result of 40000 + 40000 bins exceeds MaxBins = 65536; a sequence spans the sum of its parts' ranges: fewer --bins (now 40000) fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, stdout, stderr := runCmd(append([]string{"eval"}, tt.args...)...)
			if status != tt.status || !strings.Contains(stderr, tt.stderr) || stdout != "" {
				t.Errorf("status %d (want %d)\nstderr:\n%s\nwant it to contain:\n%s\nstdout: %q", status, tt.status, stderr, tt.stderr, stdout)
			}
		})
	}
}

// TestEvalDMaxBound: --dmax is bounded as a probe's dmax is
// (deltaq.MaxDMax), the bound named in the error and the help; the bound
// itself is accepted.
func TestEvalDMaxBound(t *testing.T) {
	mm1k := filepath.Join(examples, "mm1k.dq")
	limit := strconv.FormatFloat(deltaq.MaxDMax.Seconds(), 'f', -1, 64) + "s"
	args := []string{"eval", mm1k, "--outcome", "worker_1=exp(5ms)", "--outcome", "worker_2=exp(5ms)", "--bins", "10", "--dmax"}
	if status, _, stderr := runCmd(append(args, limit)...); status != exitOK {
		t.Errorf("--dmax %s: status %d, %s", limit, status, stderr)
	}
	above := strconv.FormatFloat(deltaq.MaxDMax.Seconds()+0.001, 'f', -1, 64) + "s"
	status, stdout, stderr := runCmd(append(args, above)...)
	want := "deltaq eval: --dmax " + above + ": want at most " + limit + " (24 hours), the largest dMax a probe may have\n"
	if status != exitUsage || stderr != want || stdout != "" {
		t.Errorf("--dmax %s: status %d, stderr %q, want %q", above, status, stderr, want)
	}
	if status, _, stderr := runCmd(append(args, "1us")...); status != exitOK {
		t.Errorf("--dmax 1us: status %d, %s", status, stderr)
	}
	_, help, _ := runCmd("help", "eval")
	assertContainsAll(t, "deltaq help eval", help, "at least 1us, and at most\n"+limit+" (24 hours)")
}

// TestEvalSuggestedDMaxReads: the --dmax a warning suggests is one eval
// reads. exp(600s) names 20 means, 12000 s, and keeps its mass under
// 1.5e+04s, which eval refused ("expected a unit after 1.5").
func TestEvalSuggestedDMaxReads(t *testing.T) {
	path := writeTemp(t, "sys.dq", "system = a;\n")
	_, _, stderr := runCmd("eval", path, "--outcome", "a=exp(600s)", "--dmax", "1000s", "--bins", "10")
	_, suggested, ok := strings.Cut(stderr, "; --dmax ")
	suggested, _, _ = strings.Cut(suggested, " would keep it")
	if !ok || suggested != "1.5e+04s" {
		t.Fatalf("stderr %q, want a warning suggesting --dmax 1.5e+04s", stderr)
	}
	status, stdout, stderr := runCmd("eval", path, "--outcome", "a=exp(600s)", "--dmax", suggested, "--bins", "10")
	if want := "system (system): calculated ΔQ, 10 bins of 1500s, dMax 1.5e+04s\n"; status != exitOK || !strings.HasPrefix(stdout, want) || stderr != "" {
		t.Errorf("--dmax %s: status %d\nstdout %q\nwant it to start %q\nstderr %q", suggested, status, stdout, want, stderr)
	}
}

// TestEvalDefaultDMaxBound: the default dMax, fitted to the distributions,
// is bounded as --dmax is. point(100000s) took a default of 2.4e5s (the
// smallest 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10^k above it), past any
// probe's dMax, and reported its delay as if a probe could measure it; it
// is cut at 86400s, all of its mass a failure, with a warning that names
// no --dmax (eval would refuse the one that keeps it). point(1ns) took
// 1.2ns, over bins of 1.2e-3ns; its default is now 1us, bins of 1ns.
func TestEvalDefaultDMaxBound(t *testing.T) {
	path := writeTemp(t, "sys.dq", "system = a;\n")
	status, stdout, stderr := runCmd("eval", path, "--outcome", "a=point(100000s)", "--bins", "10")
	wantOut := "system (system): calculated ΔQ, 10 bins of 8640s, dMax 8.64e+04s\n" +
		"  quantiles  0.25=unreachable 0.5=unreachable 0.75=unreachable 0.9=unreachable 0.99=unreachable\n" +
		"  failure    1\n"
	wantErr := "deltaq eval: warning: --outcome a: dMax 8.64e+04s cuts off 100.0 % of its mass, which counts as failure; no dMax a probe may have (at most 86400s) keeps it\n"
	if status != exitOK || stdout != wantOut || stderr != wantErr {
		t.Errorf("point(100000s): status %d\nstdout %q\nwant   %q\nstderr %q\nwant   %q", status, stdout, wantOut, stderr, wantErr)
	}
	status, stdout, stderr = runCmd("eval", path, "--outcome", "a=point(1ns)")
	if want := "system (system): calculated ΔQ, 1000 bins of 1ns, dMax 1us\n"; status != exitOK || !strings.HasPrefix(stdout, want) || stderr != "" {
		t.Errorf("point(1ns): status %d\nstdout %q\nwant it to start %q\nstderr %q", status, stdout, want, stderr)
	}
}

// TestEvalWarnsOfMassBeyondDMax: --dmax 10ms on exp(mean 5ms) cuts off
// P(X > 10ms) = e⁻² ≈ 13.5 % of its mass (the exponential's survival
// function), which would otherwise pass silently as failure; the default
// dMax for that distribution (20 means, rounded up to 120ms) keeps it. An
// assumed distribution that fits warns of nothing.
// TestEvalWarnsOfUnusedDefinitionInput: an assumed ΔQ for a definition
// that no s: refers to and that is calculated from its outcomes is not
// used; it was ignored silently. Referred to, it is used without a word.
func TestEvalWarnsOfUnusedDefinitionInput(t *testing.T) {
	path := writeTemp(t, "unused.dq", "chain = a -> b;\nsystem = s:chain -> c;\n")
	status, _, stderr := runCmd("eval", path, "--outcome", "a=point(1ms)", "--outcome", "b=point(2ms)", "--outcome", "c=point(3ms)",
		"--outcome", "system=never", "--outcome", "chain=point(5ms)")
	want := "deltaq eval: warning: --outcome system: not used: no s:system refers to the definition (" + path + ":2:1), and its ΔQ is calculated from its outcomes\n"
	if status != exitOK || stderr != want {
		t.Errorf("status %d, stderr %q; want %d and %q", status, stderr, exitOK, want)
	}
}

// TestEvalProbeRepeated: a probe named twice with --probe is printed and
// drawn once; it was printed twice and drawn into a.png and a-2.png.
func TestEvalProbeRepeated(t *testing.T) {
	path := writeTemp(t, "seq.dq", "system = a -> b;\n")
	dir := t.TempDir()
	status, stdout, stderr := runCmd("eval", path, "--outcome", "a=point(1ms)", "--outcome", "b=point(1ms)",
		"--probe", "a", "--probe", "system", "--probe", "a", "--plot", dir)
	if status != exitOK || strings.Count(stdout, "a (outcome)") != 1 || strings.Count(stdout, "system (system)") != 1 ||
		!strings.HasSuffix(stdout, "wrote "+filepath.Join(dir, "a.png")+"\nwrote "+filepath.Join(dir, "system.png")+"\n") {
		t.Errorf("status %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "a-2.png")); err == nil {
		t.Error("a-2.png written: the probe drawn twice")
	}
}

// TestEvalAtRepeated: --at given twice prints the delays of both (the
// last one alone was printed).
func TestEvalAtRepeated(t *testing.T) {
	path := writeTemp(t, "sys.dq", "system = a;\n")
	status, stdout, stderr := runCmd("eval", path, "--outcome", "a=exp(1ms)", "--at", "1ms", "--at", "2ms,3ms")
	if status != exitOK || !strings.Contains(stdout, "1ms: 0.632121 2ms: 0.864665 3ms: 0.950213") {
		t.Errorf("status %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
}

func TestEvalWarnsOfMassBeyondDMax(t *testing.T) {
	mm1k := filepath.Join(examples, "mm1k.dq")
	status, _, stderr := runCmd("eval", mm1k, "--outcome", "worker_1=exp(5ms)", "--outcome", "worker_2=uniform(1ms,2ms)", "--dmax", "10ms")
	want := "deltaq eval: warning: --outcome worker_1: dMax 10ms cuts off 13.5 % of its mass, which counts as failure; --dmax 120ms would keep it\n"
	if status != exitOK || stderr != want {
		t.Errorf("status %d, stderr %q; want %d and %q", status, stderr, exitOK, want)
	}
	status, _, stderr = runCmd("eval", mm1k, "--outcome", "worker_1=exp(5ms)", "--outcome", "worker_2=uniform(1ms,2ms)")
	if status != exitOK || stderr != "" {
		t.Errorf("default dMax: status %d, stderr %q; want no warning", status, stderr)
	}
}

// TestBinary builds the command and runs it as a user would, checking exit
// statuses.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "deltaq")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "eval", filepath.Join(examples, "ftf.dq"),
		"--outcome", "worker_1=uniform(1ms,3ms)", "--outcome", "worker_2=point(2ms)", "--json").Output()
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	if !json.Valid(out) || !strings.Contains(string(out), `"system"`) {
		t.Errorf("eval output: %s", out)
	}
	err = exec.Command(bin, "check", writeTemp(t, "bad.dq", "x = ;")).Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFail {
		t.Errorf("check of a bad file: %v, want exit status %d", err, exitFail)
	}
	err = exec.Command(bin).Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage {
		t.Errorf("no arguments: %v, want exit status %d", err, exitUsage)
	}
}

// TestEvalPrintsTheLibrarysΔQ: what eval prints, as text and as JSON, is
// the ΔQ the library calculates from the same assumed distributions
// (distribution.Dist.Build on eval's grid, diagram.Diagram.Evaluate): the
// CDF at delays on and between bin edges, the quantiles and the failure
// mass, for every operator of the language, a point on an edge, a choice
// with never and a step CDF.
func TestEvalPrintsTheLibrarysΔQ(t *testing.T) {
	const src = "front = a -> f:race(b, c -> d);\nsystem = p:lossy[0.8, 0.2](s:front -> a:join(e, b2), lost);\n"
	file := writeTemp(t, "all.dq", src)
	assumed := map[string]string{
		"a": "exp(3ms)", "b": "uniform(1ms,9ms)", "c": "point(2ms)", "d": "choice(0.9:exp(1ms),0.1:never)",
		"e": "steps(2ms:0.5,6ms:0.95)", "b2": "point(4ms)", "lost": "never",
	}
	var args []string
	var dists []distribution.Dist
	names := make([]string, 0, len(assumed))
	for n := range assumed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		args = append(args, "--outcome", n+"="+assumed[n])
		d, err := distribution.Parse(assumed[n])
		if err != nil {
			t.Fatal(err)
		}
		dists = append(dists, d)
	}
	at := []float64{0.002, 0.0045, 0.01, 0.0173, 0.03}
	args = append(args, "--at", "2ms,4.5ms,10ms,17.3ms,30ms", "--bins", "500", "--probe", "system", "--probe", "race")

	// The library's calculation on eval's grid.
	width, err := deltaq.WidthFor(distribution.DefaultDMax(dists), 500)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]deltaq.DeltaQ{}
	for i, n := range names {
		if inputs[n], err = dists[i].Build(width, 500); err != nil {
			t.Fatal(err)
		}
	}
	d, err := diagram.Parse(file, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := d.Evaluate(inputs)
	if err != nil {
		t.Fatal(err)
	}

	probes := evalJSON(t, append([]string{file}, args...)...)
	status, text, stderr := runCmd(append([]string{"eval", file}, args...)...)
	if status != exitOK {
		t.Fatalf("eval: status %d, %s", status, stderr)
	}
	for _, name := range []string{"system", "race"} {
		r, ok := ev.Result(name)
		if !ok || !r.OK {
			t.Fatalf("%s not calculated", name)
		}
		dq, got := r.DeltaQ, probes[name]
		if got.BinWidth != dq.Width() || got.DMax != dq.DMax() || got.Failure != math.Round(dq.Intangible()*1e9)/1e9 {
			t.Errorf("%s: JSON width %v dMax %v failure %v, library %v", name, got.BinWidth, got.DMax, got.Failure, dq)
		}
		line := "  P(d ≤ t)  "
		for _, x := range at {
			key := strconv.FormatFloat(x, 'g', -1, 64)
			if got.CDFAt[key] != dq.CDF(x) {
				t.Errorf("%s: JSON F(%v) = %v, library %v", name, x, got.CDFAt[key], dq.CDF(x))
			}
			line += fmt.Sprintf(" %s: %s", distribution.FormatDuration(x), strconv.FormatFloat(dq.CDF(x), 'f', 6, 64))
		}
		if !strings.Contains(text, line+"\n") {
			t.Errorf("%s: text output lacks %q:\n%s", name, line, text)
		}
		for _, q := range reportQuantiles {
			key := strconv.FormatFloat(q, 'g', -1, 64)
			v, ok := dq.Quantile(q)
			if g := got.Quantiles[key]; (g != nil) != ok || (ok && *g != v) {
				t.Errorf("%s: JSON quantile %v = %v, library %v (%v)", name, q, g, v, ok)
			}
		}
	}
}

// failingWriter fails every write, as a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestErrorsNameTheCommand: an error that is not a diagram's
// (FILE:LINE:COL: message) begins "deltaq NAME:", as those of analyze,
// model, slo and scope do, whichever command reads the .dq file.
func TestErrorsNameTheCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.dq")
	modelDir := t.TempDir()
	if status, out, stderr := runCmd("model", checkoutFile, "-o", modelDir); status != exitOK {
		t.Fatalf("model: status %d\n%s%s", status, out, stderr)
	}
	if err := os.Remove(filepath.Join(modelDir, modelDiagramFile)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", missing},
		{"fmt", missing},
		{"fmt", "-w", missing},
		{"graph", missing},
		{"eval", missing},
		{"whatif", modelDir},
	} {
		status, _, stderr := runCmd(args...)
		if want := "deltaq " + args[0] + ": "; status != exitFail || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "no such file") {
			t.Errorf("%v: status %d, stderr %q, want it to begin %q", args, status, stderr, want)
		}
	}

	// An error writing the graph (a closed pipe) too.
	var stderr bytes.Buffer
	status := run([]string{"graph", writeTemp(t, "ok.dq", "probe = a -> b;\n")}, failingWriter{}, &stderr)
	if status != exitFail || !strings.HasPrefix(stderr.String(), "deltaq graph: ") {
		t.Errorf("graph to a failing writer: status %d, stderr %q", status, stderr.String())
	}
}
