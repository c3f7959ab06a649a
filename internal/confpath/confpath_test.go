// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confpath

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

func TestPathString(t *testing.T) {
	p := Fields("probes").Key("checkout").Field("qta").Field("points").Index(1).Field("delay")
	assert.Equal(t, `probes["checkout"].qta.points[1].delay`, p.String())
	assert.Equal(t, "triggers.divergence.alpha", Fields("triggers", "divergence", "alpha").String())
	assert.Equal(t, `[0]["a b"].c`, Path{}.Index(0).Key("a b").Field("c").String())
	assert.Empty(t, Fields().String())
}

// TestPathExtendsWithoutSharing: two paths extended from one do not
// overwrite each other's last step.
func TestPathExtendsWithoutSharing(t *testing.T) {
	base := make(Path, 1, 4)
	base[0] = Step{Key: "probes"}
	a, b := base.Index(0), base.Index(1)
	assert.Equal(t, "probes[0]", a.String())
	assert.Equal(t, "probes[1]", b.String())
}

func TestErrorf(t *testing.T) {
	err := Errorf(Fields("bins"), "must be in [1, %d], got %d", 1000, 0)
	assert.EqualError(t, err, "bins: must be in [1, 1000], got 0")
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, Fields("bins"), pe.Path)
	assert.EqualError(t, pe.Err, "must be in [1, 1000], got 0")
}

// TestUnderNests: an *Error's path continues the enclosing one, however
// deep, with a dot before a field and none before an index or a key.
func TestUnderNests(t *testing.T) {
	leaf := Errorf(Fields("points").Index(0).Field("p"), "95 is not in (0, 1]")
	qta := Under(Fields("qta"), leaf)
	probe := Under(Fields("probes").Key("checkout"), qta)
	assert.EqualError(t, probe, `probes["checkout"].qta.points[0].p: 95 is not in (0, 1]`)
	var pe *Error
	require.ErrorAs(t, probe, &pe)
	assert.Equal(t, Fields("probes").Key("checkout").Field("qta").Field("points").Index(0).Field("p"), pe.Path)
	assert.EqualError(t, pe.Err, "95 is not in (0, 1]", "one Error, not one per level")

	assert.EqualError(t, Under(Fields("probes"), Errorf(Path{}.Index(2).Field("bins"), "is required")), "probes[2].bins: is required")
}

// TestUnderWrapsOtherErrors: an error that is not an *Error follows the
// path after a colon, whatever its message looks like, and stays what
// errors.Is and errors.As find.
func TestUnderWrapsOtherErrors(t *testing.T) {
	err := Under(Fields("probes").Key("checkout"), errors.New("dmax, exponent: set either dmax or exponent, not both"))
	assert.EqualError(t, err, `probes["checkout"]: dmax, exponent: set either dmax or exponent, not both`)

	// A message that starts like a path is not read as one.
	assert.EqualError(t, Under(Fields("qoo"), errors.New("deltaq: QoO: bad")), "qoo: deltaq: QoO: bad")

	cause := &fs.PathError{Op: "stat", Path: "snapshots", Err: fs.ErrNotExist}
	err = Under(Fields("probes").Key("x"), Under(Fields("snapshot", "directory"), cause))
	assert.EqualError(t, err, `probes["x"].snapshot.directory: stat snapshots: file does not exist`)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	var got *fs.PathError
	require.ErrorAs(t, err, &got)
	assert.Same(t, cause, got)
}

// TestUnderJoined: each error of a join is put under the path, and the
// join's errors stay reachable.
func TestUnderJoined(t *testing.T) {
	sentinel := errors.New("only with dmax: auto")
	joined := errors.Join(
		Errorf(Fields("bins"), "must be in [1, 1000], got 0"),
		sentinel,
		errors.Join(Errorf(Fields("match", "span_kind"), "unknown span kind %q", "sever")),
	)
	err := Under(Fields("probes").Index(3), joined)
	assert.EqualError(t, err, ""+
		"probes[3].bins: must be in [1, 1000], got 0\n"+
		"probes[3]: only with dmax: auto\n"+
		`probes[3].match.span_kind: unknown span kind "sever"`)
	assert.ErrorIs(t, err, sentinel)
}

// listError is a list of errors that is not a join: a diagram's, say,
// whose message is its errors one a line.
type listError []error

func (l listError) Error() string   { return errors.Join(l...).Error() }
func (l listError) Unwrap() []error { return l }

// TestUnderLeavesOtherLists: a list of errors other than a join is one
// cause, written after the path once, and stays what errors.As finds.
func TestUnderLeavesOtherLists(t *testing.T) {
	list := listError{errors.New("a.dq:1:3: expected an outcome"), errors.New("a.dq:2:1: unknown probe")}
	err := Under(Fields("diagram_file"), list)
	assert.EqualError(t, err, "diagram_file: a.dq:1:3: expected an outcome\na.dq:2:1: unknown probe")
	var got listError
	require.ErrorAs(t, err, &got)
	assert.Len(t, got, 2)
}

func TestUnderEdges(t *testing.T) {
	assert.NoError(t, Under(Fields("qoo"), nil))
	err := errors.New("x")
	assert.Same(t, err, Under(nil, err), "an empty path leaves the error as it is")
	assert.EqualError(t, &Error{Err: err}, "x")
}

// TestSection: a component's section in the collector's key notation.
func TestSection(t *testing.T) {
	assert.Equal(t, "processors"+confmap.KeyDelimiter+"deltaq", Section("processors", "deltaq"))
	assert.Equal(t, "connectors::deltaq/gateway", Section("connectors", "deltaq/gateway"))
}
