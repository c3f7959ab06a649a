// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// manifest is one document of a manifest file, decoded.
type manifest struct {
	file string
	obj  runtime.Object
}

// strictDecoder decodes YAML into the Kubernetes API types the manifests
// use, refusing unknown and duplicate fields, as the API server's strict
// field validation (kubectl apply --validate=strict) does.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(scheme), appsv1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
}

// decode splits data into its YAML documents and decodes each strictly.
func decode(t *testing.T, file string, data []byte) ([]manifest, error) {
	t.Helper()
	dec := strictDecoder(t)
	r := kyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []manifest
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, &docError{file, i, err}
		}
		out = append(out, manifest{file, obj})
	}
}

// docError names the document of a file that failed to decode.
type docError struct {
	file string
	doc  int
	err  error
}

func (e *docError) Error() string {
	return e.file + ", document " + strconv.Itoa(e.doc) + ": " + e.err.Error()
}

// kindName is an object's kind and name, "Service/deltaq-gateway".
func kindName(obj runtime.Object) string {
	return obj.GetObjectKind().GroupVersionKind().Kind + "/" + obj.(metav1.Object).GetName()
}

// manifests decodes every *.yaml of the directory.
func manifests(t *testing.T) []manifest {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	var all []manifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := decode(t, f, data)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ms...)
	}
	return all
}

// The manifests are exactly the agent's and the gateway's objects, and each
// decodes strictly.
func TestManifestsDecodeStrictly(t *testing.T) {
	var got []string
	for _, m := range manifests(t) {
		got = append(got, m.file+": "+kindName(m.obj))
	}
	slices.Sort(got)
	want := []string{
		"agent.yaml: ConfigMap/deltaq-agent", "agent.yaml: DaemonSet/deltaq-agent",
		"gateway.yaml: ConfigMap/deltaq-gateway", "gateway.yaml: Deployment/deltaq-gateway", "gateway.yaml: Service/deltaq-gateway",
	}
	if !slices.Equal(got, want) {
		t.Errorf("objects %q, want %q", got, want)
	}
}

// The decoder is strict: a misspelled field, a duplicate one and an unknown
// kind are refused, naming what is wrong.
func TestStrictDecoderRefuses(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 1}\n", `unknown field "spec.replica"`},
		{"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {type: ClusterIP, type: NodePort}\n", `key "type" already set`},
		{"apiVersion: v1\nkind: Servce\nmetadata: {name: x}\n", `no kind "Servce"`},
	} {
		_, err := decode(t, "test.yaml", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.doc, err, c.want)
		}
	}
}
