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

// TestMakeRefusesNoVersion: make build and make commands stop when
// scripts/version.sh fails (a tag that disagrees with CHANGELOG.md), rather
// than stamp the collector and deltaq with an empty version, the script's
// message scrolled away above the build's output. The targets of
// mk/collector.mk run in a directory of their own, with a version.sh that
// fails and GO=echo, so that nothing is compiled.
func TestMakeRefusesNoVersion(t *testing.T) {
	makeCmd, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not installed")
	}
	mk, err := filepath.Abs(filepath.Join(repoRoot, "mk/collector.mk"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"scripts/version.sh": "#!/bin/sh\necho 'version.sh: HEAD is tagged v9.9.9, but the newest version in CHANGELOG.md is 1.2.3' >&2\nexit 1\n",
		// The collector's prerequisites.
		"builder-config.yaml": "dist:\n  version: 0.1.0\n",
		"go.mod":              "module example.com/m\n",
		"go.sum":              "",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, target := range []string{"build", "commands"} {
		cmd := exec.Command(makeCmd, "--no-print-directory", "-f", mk, "GO=echo", "BIN="+filepath.Join(dir, "bin"), target)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "no version to stamp: scripts/version.sh failed") {
			t.Errorf("make %s with scripts/version.sh failing: %v, want it to stop, saying so:\n%s", target, err, out)
		}
		if strings.Contains(string(out), "main.version=") {
			t.Errorf("make %s went on to build with no version:\n%s", target, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "build/builder-config.yaml")); err == nil {
		t.Error("make build wrote the builder's configuration with no version")
	}
}

// TestReleaseDirKeepsOtherFiles: scripts/release.sh empties RELEASE_DIR
// before it writes the release there; a directory that holds anything but
// an earlier release's files is refused, untouched (RELEASE_DIR=$HOME
// would have been emptied). An earlier release's files are removed as
// before. The Go toolchain and the Collector Builder are "false", so that
// nothing is compiled: the script fails at its first build.
func TestReleaseDirKeepsOtherFiles(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	release := func(dir string) (string, error) {
		cmd := exec.Command(bash, filepath.Join(repoRoot, "scripts/release.sh"))
		cmd.Env = append(os.Environ(), "RELEASE_DIR="+dir, "RELEASE_PLATFORMS=linux/amd64", "RELEASE_IMAGES=0",
			"VERSION=1.2.3", "GO=false", "OCB=false")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	other := t.TempDir()
	for _, name := range []string{"notes.txt", "deltaq_1.0.0_linux_amd64.tar.gz"} {
		if err := os.WriteFile(filepath.Join(other, name), []byte("kept"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := release(other)
	if err == nil || !strings.Contains(out, "holds files of no release (notes.txt)") {
		t.Errorf("release into a directory of other files: %v, want it refused, naming them:\n%s", err, out)
	}
	for _, name := range []string{"notes.txt", "deltaq_1.0.0_linux_amd64.tar.gz"} {
		if _, err := os.Stat(filepath.Join(other, name)); err != nil {
			t.Errorf("release into a directory of other files removed %s: %v", name, err)
		}
	}

	earlier := t.TempDir()
	for _, name := range []string{"SHA256SUMS", "deltaq_1.0.0_linux_amd64.tar.gz", "otelcol-deltaq_1.0.0_linux_amd64.oci.tar"} {
		if err := os.WriteFile(filepath.Join(earlier, name), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(earlier, "stage", "deltaq_1.0.0_linux_amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ = release(earlier)
	if strings.Contains(out, "holds files of no release") {
		t.Errorf("release into an earlier release's directory refused:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(earlier, "deltaq_1.0.0_linux_amd64.tar.gz")); err == nil {
		t.Errorf("release into an earlier release's directory kept its archive:\n%s", out)
	}
}

// TestReleaseNeedsBuildahFirst: without buildah, scripts/release.sh stops
// before it builds anything, saying how to make the archives alone; it used
// to compile the first platform (minutes), then fail in scripts/image.sh.
// Its PATH holds the few tools the script runs before it compiles, buildah
// not among them.
func TestReleaseNeedsBuildahFirst(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	tools := t.TempDir()
	for _, tool := range []string{"dirname", "date", "git", "sed", "find", "rm", "mkdir", "tail", "cat"} {
		if path, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(path, filepath.Join(tools, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(extra ...string) string {
		cmd := exec.Command(bash, filepath.Join(repoRoot, "scripts/release.sh"))
		cmd.Env = append([]string{"PATH=" + tools, "RELEASE_DIR=" + filepath.Join(t.TempDir(), "release"),
			"VERSION=1.2.3", "GO=false", "OCB=false"}, extra...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("release with no toolchain succeeded:\n%s", out)
		}
		return string(out)
	}
	const refused = "release: buildah not found, which builds the images"
	if out := run(); !strings.Contains(out, refused) || !strings.Contains(out, "RELEASE_IMAGES=0") ||
		strings.Contains(out, "collector sources") {
		t.Errorf("release without buildah: want it refused before building, naming RELEASE_IMAGES=0:\n%s", out)
	}
	// No image to build: no buildah needed.
	for _, env := range [][]string{{"RELEASE_IMAGES=0"}, {"RELEASE_PLATFORMS=darwin/arm64"}} {
		if out := run(env...); strings.Contains(out, refused) {
			t.Errorf("release with %s refused for want of buildah:\n%s", env, out)
		}
	}
}

// TestVersionScript: scripts/version.sh in a repository of its sources
// names the release a tag agreeing with CHANGELOG.md marks, refuses a tag
// that disagrees, and names any other commit a development build of the
// newest release (docs/install.md, "Versions"). Sources copied into another
// repository, tagged itself (a source archive unpacked in a repository of
// one's own), are a development build with no revision: that repository's
// tag is not theirs, and was refused as disagreeing, stopping every build.
func TestVersionScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	script, err := os.ReadFile(filepath.Join(repoRoot, "scripts/version.sh"))
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
			"-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// sources writes the script and a CHANGELOG.md whose newest release is 1.2.0 into dir.
	sources := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "scripts/version.sh"), script, 0o755); err != nil {
			t.Fatal(err)
		}
		changelog := "# Changelog\n\n## Unreleased\n\n## 1.2.0 - 2026-01-02\n\n## [1.1.0]\n"
		if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(changelog), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	version := func(dir string) (string, error) {
		out, err := exec.Command(bash, filepath.Join(dir, "scripts/version.sh")).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}

	repo := t.TempDir()
	sources(repo)
	git(repo, "init", "-q")
	git(repo, "add", ".")
	git(repo, "commit", "-qm", "sources")
	rev := git(repo, "rev-parse", "--short=12", "HEAD")
	if got, err := version(repo); err != nil || got != "1.2.0-dev+"+rev {
		t.Errorf("an untagged commit: %q (%v), want 1.2.0-dev+%s", got, err, rev)
	}
	git(repo, "tag", "v1.2.0")
	if got, err := version(repo); err != nil || got != "1.2.0" {
		t.Errorf("a commit tagged v1.2.0: %q (%v), want 1.2.0", got, err)
	}
	git(repo, "tag", "-d", "v1.2.0")
	git(repo, "tag", "v1.3.0")
	if got, err := version(repo); err == nil || !strings.Contains(got, "HEAD is tagged v1.3.0, but the newest version in CHANGELOG.md is 1.2.0") {
		t.Errorf("a commit tagged v1.3.0: %q (%v), want it refused", got, err)
	}

	outer := t.TempDir()
	git(outer, "init", "-q")
	if err := os.WriteFile(filepath.Join(outer, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(outer, "add", "notes.txt")
	git(outer, "commit", "-qm", "notes")
	git(outer, "tag", "v9.0.0")
	copied := filepath.Join(outer, "deltaq-1.2.0")
	sources(copied)
	if got, err := version(copied); err != nil || got != "1.2.0-dev" {
		t.Errorf("sources copied into a repository tagged v9.0.0: %q (%v), want 1.2.0-dev", got, err)
	}
}

// TestImageCACerts: scripts/image.sh puts the CA bundle IMAGE_CA_CERTS names
// in the image, and refuses a name that is no file. Before, it took
// /etc/ssl/certs/ca-certificates.crt, Debian's, alone: on Fedora or RHEL,
// whose bundle is elsewhere, make image and make release stopped. buildah is
// a stand-in that keeps the certificates of the build context it is given.
func TestImageCACerts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	fakeBin := filepath.Join(dir, "bin")
	kept := filepath.Join(dir, "kept.pem")
	files := map[string]string{
		// The context directory is buildah bud's last argument.
		"bin/buildah": "#!/bin/sh\nfor a; do ctx=$a; done\n" +
			"case \" $* \" in *\" bud \"*) cp \"$ctx/ca-certificates.crt\" \"" + kept + "\" ;; esac\n",
		"otelcol-deltaq": "#!/bin/sh\n",
		"ca.pem":         "-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	image := func(certs string) (string, error) {
		cmd := exec.Command(bash, filepath.Join(repoRoot, "scripts/image.sh"), filepath.Join(dir, "otelcol-deltaq"))
		cmd.Env = append(os.Environ(), "PATH="+fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"VERSION=1.2.3", "IMAGE_CA_CERTS="+certs)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := image(filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatalf("image with IMAGE_CA_CERTS: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(kept); err != nil || string(got) != files["ca.pem"] {
		t.Errorf("the image's CA certificates: %d bytes (%v), want IMAGE_CA_CERTS's %q", len(got), err, files["ca.pem"])
	}
	missing := filepath.Join(dir, "none.pem")
	if out, err := image(missing); err == nil || !strings.Contains(out, "image: no CA certificates at "+missing) {
		t.Errorf("image with IMAGE_CA_CERTS naming no file: %v, want it refused, naming the file:\n%s", err, out)
	}
}
