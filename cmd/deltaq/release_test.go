// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// archiveFiles are the files of a release archive (scripts/release.sh
// stages them; scripts/e2e-artefacts.sh checks the archive holds exactly
// these), each with the repository file it is a copy of; "" for a binary.
var archiveFiles = map[string]string{
	"README.md":      "README.md",
	"CHANGELOG.md":   "CHANGELOG.md",
	"LICENSE":        "LICENSE",
	"config.yaml":    "deploy/config.yaml",
	"deltaq":         "",
	"otelcol-deltaq": "",
}

const repoURL = "https://github.com/deltaq-otel/deltaq/"

var (
	// mdLink is a Markdown link or image: its target, up to a space or ")".
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// codeSpan is a fenced block or an inline code span (which may go on to
	// the next line), whose text is no link.
	codeSpan = regexp.MustCompile("(?s)```.*?```|`[^`]+`")
	// repoLink is a link into the repository at a ref: its kind and path.
	repoLink = regexp.MustCompile(`^` + regexp.QuoteMeta(repoURL) + `(blob|tree|raw)/([^/]+)/([^#]+)`)
)

// TestReleaseDocumentLinks: the Markdown documents of a release archive,
// as make release stages them (scripts/release-links.sh over the archive's
// files), link only to what resolves. A relative link names a file of the
// archive; a link into the repository names, at the ref given, a file the
// repository holds, as a file (blob), a directory (tree) or an image
// (raw). Before, the archive's README linked to docs/runbook.md,
// deploy/kubernetes/ and a dozen more files it does not hold.
func TestReleaseDocumentLinks(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	for name, from := range archiveFiles {
		var data []byte
		if from != "" {
			if data, err = os.ReadFile(filepath.Join(repoRoot, from)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(bash, filepath.Join(repoRoot, "scripts/release-links.sh"), dir, "v1.2.3").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/release-links.sh: %v\n%s", err, out)
	}
	toRepo := 0
	for _, doc := range []string{"README.md", "CHANGELOG.md"} {
		data, err := os.ReadFile(filepath.Join(dir, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := codeSpan.ReplaceAllString(string(data), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			path, _, _ := strings.Cut(target, "#")
			switch r := repoLink.FindStringSubmatch(target); {
			case strings.HasPrefix(target, "#"):
			case r != nil:
				toRepo++
				checkRepoLink(t, doc, target, r[1], r[2], r[3])
			case strings.Contains(target, "://"), strings.HasPrefix(target, "mailto:"):
			default:
				if _, ok := archiveFiles[strings.TrimPrefix(path, "./")]; !ok {
					t.Errorf("%s links to %s, which the archive does not hold", doc, target)
				}
			}
		}
	}
	if toRepo < 20 { // the README's links to the docs, the components' READMEs, the images
		t.Errorf("%d links into the repository: want the README's links to the files the archive does not hold", toRepo)
	}
}

// checkRepoLink checks a link into the repository: at the ref the release
// was given, to a file or directory the repository holds, by the kind of
// URL that shows it.
func checkRepoLink(t *testing.T, doc, target, kind, ref, path string) {
	t.Helper()
	if ref != "v1.2.3" {
		t.Errorf("%s links to %s: at %s, want the release's tag v1.2.3", doc, target, ref)
	}
	info, err := os.Stat(filepath.Join(repoRoot, path))
	if err != nil {
		t.Errorf("%s links to %s: the repository holds no %s", doc, target, path)
		return
	}
	want := "blob"
	switch {
	case info.IsDir():
		want = "tree"
	case regexp.MustCompile(`\.(png|jpe?g|gif|svg)$`).MatchString(path):
		want = "raw"
	}
	if kind != want {
		t.Errorf("%s links to %s as %s, want %s", doc, target, kind, want)
	}
}
