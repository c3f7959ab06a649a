// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const (
	// scrapeFile is the scrape job of the collectors' own metrics.
	scrapeFile = "prometheus/scrape.yml"
	// telemetryJob is the job the collector alerts and the runbook name.
	telemetryJob = "otelcol-deltaq-telemetry"
	// namespace is the one the README applies the manifests in.
	namespace = "observability"
)

// telemetryPort is the port a configuration serves the collector's own
// metrics on, and the host it binds; 0 when it serves none.
func telemetryPort(t *testing.T, name string, cfg map[string]any) (string, int) {
	t.Helper()
	if level, _ := dig(cfg, "service", "telemetry", "metrics", "level").(string); level == "none" {
		return "", 0
	}
	readers, _ := dig(cfg, "service", "telemetry", "metrics", "readers").([]any)
	for _, r := range readers {
		if prom, ok := dig(r, "pull", "exporter", "prometheus").(map[string]any); ok {
			host, _ := prom["host"].(string)
			port, _ := prom["port"].(float64)
			return host, int(port)
		}
	}
	t.Errorf("%s: no pull reader with a prometheus exporter in service::telemetry::metrics::readers", name)
	return "", 0
}

// Each collector serves its own metrics (the connector's
// otelcol_connector_deltaq_*, which the collector alerts read) on every
// interface of its pod, declares that port as "metrics", and asks to be
// scraped there by the prometheus.io annotations of its pod template.
func TestTelemetryScrapable(t *testing.T) {
	o := load(t)
	for name, p := range o.pods() {
		host, port := telemetryPort(t, name, collectorConfig(t, o.configMaps[name]))
		if port == 0 {
			t.Errorf("%s: the collector serves no metrics of its own: set service::telemetry::metrics", name)
			continue
		}
		if host != "0.0.0.0" {
			t.Errorf("%s: the collector's metrics on host %q: want 0.0.0.0, reachable from Prometheus in another pod", name, host)
		}
		c := p.template.Spec.Containers[0]
		if i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == "metrics" }); i < 0 ||
			c.Ports[i].ContainerPort != int32(port) {
			t.Errorf("%s: no container port named metrics at %d, where the collector serves its metrics", name, port)
		}
		want := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(port), "prometheus.io/path": "/metrics"}
		for k, v := range want {
			if got := p.template.Annotations[k]; got != v {
				t.Errorf("%s: pod annotation %s %q, want %q", name, k, got, v)
			}
		}
	}
}

// The scrape job of prometheus/scrape.yml, applied as Prometheus applies it
// to the targets its pod discovery makes of every declared container port,
// keeps one target per collector, on its metrics port and path, named after
// its pod, and no other pod's: an application's pod that asks to be scraped
// is not the job's. With a promtool built with Kubernetes discovery, promtool
// check config accepts the file.
func TestScrapeConfig(t *testing.T) {
	raw, err := os.ReadFile(scrapeFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
	}
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		t.Fatalf("%s: %v", scrapeFile, err)
	}
	if len(file.ScrapeConfigs) != 1 || file.ScrapeConfigs[0].JobName != telemetryJob {
		t.Fatalf("%s: want one scrape job, %s", scrapeFile, telemetryJob)
	}
	job := file.ScrapeConfigs[0]
	if len(job.KubernetesSD) != 1 || job.KubernetesSD[0].Role != "pod" || !slices.Contains(job.KubernetesSD[0].Namespaces.Names, namespace) {
		t.Fatalf("%s: want the pod discovery of namespace %s", scrapeFile, namespace)
	}
	o := load(t)
	for name, p := range o.pods() {
		_, port := telemetryPort(t, name, collectorConfig(t, o.configMaps[name]))
		var kept []map[string]string
		for _, target := range podTargets(name+"-x1", p.template) {
			if labels := relabel(t, job, target); labels != nil {
				kept = append(kept, labels)
			}
		}
		want := map[string]string{"job": telemetryJob, "__address__": "10.0.0.1:" + strconv.Itoa(port), "__metrics_path__": "/metrics",
			"instance": name + "-x1", "namespace": namespace, "node": "node-1", "app": name}
		if len(kept) != 1 {
			t.Errorf("%s: %d targets kept, want one: %v", name, len(kept), kept)
			continue
		}
		for k, v := range want {
			if kept[0][k] != v {
				t.Errorf("%s: target label %s %q, want %q (%v)", name, k, kept[0][k], v, kept[0])
			}
		}
	}
	app := corev1.PodTemplateSpec{}
	app.Labels = map[string]string{"app.kubernetes.io/name": "shop"}
	app.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8888"}
	app.Spec.Containers = []corev1.Container{{Name: "shop", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8888}}}}
	for _, target := range podTargets("shop-x1", &app) {
		if labels := relabel(t, job, target); labels != nil {
			t.Errorf("an application's pod kept: %v", labels)
		}
	}
	t.Run("promtool", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool not installed: the file is not checked by Prometheus's own parser")
		}
		out, err := exec.Command(promtool, "check", "config", scrapeFile).CombinedOutput()
		if err != nil && strings.Contains(string(out), "field kubernetes_sd_configs not found") {
			t.Skip("this promtool is built without Kubernetes discovery (Debian's): the file is not checked by it")
		}
		if err != nil {
			t.Errorf("promtool check config %s: %v\n%s", scrapeFile, err, out)
		}
	})
}

// scrapeConfig is what these tests read of a Prometheus scrape job.
type scrapeConfig struct {
	JobName      string `json:"job_name"`
	KubernetesSD []struct {
		Role       string `json:"role"`
		Namespaces struct {
			Names []string `json:"names"`
		} `json:"namespaces"`
	} `json:"kubernetes_sd_configs"`
	Relabel []struct {
		SourceLabels []string `json:"source_labels"`
		Separator    *string  `json:"separator"`
		Regex        *string  `json:"regex"`
		TargetLabel  string   `json:"target_label"`
		Replacement  *string  `json:"replacement"`
		Action       string   `json:"action"`
	} `json:"relabel_configs"`
}

// labelName is Prometheus's sanitising of a Kubernetes label or annotation
// name into a label name.
var labelName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// podTargets are the targets Prometheus's pod discovery makes of a pod of
// the template on node-1 at 10.0.0.1: one for every declared container port,
// with its meta labels.
func podTargets(pod string, tmpl *corev1.PodTemplateSpec) []map[string]string {
	var out []map[string]string
	for _, c := range tmpl.Spec.Containers {
		for _, p := range c.Ports {
			l := map[string]string{
				"__address__":                                 "10.0.0.1:" + strconv.Itoa(int(p.ContainerPort)),
				"__meta_kubernetes_namespace":                 namespace,
				"__meta_kubernetes_pod_name":                  pod,
				"__meta_kubernetes_pod_ip":                    "10.0.0.1",
				"__meta_kubernetes_pod_node_name":             "node-1",
				"__meta_kubernetes_pod_container_name":        c.Name,
				"__meta_kubernetes_pod_container_port_name":   p.Name,
				"__meta_kubernetes_pod_container_port_number": strconv.Itoa(int(p.ContainerPort)),
			}
			for k, v := range tmpl.Labels {
				l["__meta_kubernetes_pod_label_"+labelName.ReplaceAllString(k, "_")] = v
			}
			for k, v := range tmpl.Annotations {
				l["__meta_kubernetes_pod_annotation_"+labelName.ReplaceAllString(k, "_")] = v
			}
			out = append(out, l)
		}
	}
	return out
}

// relabel applies a job's relabel_configs to a discovered target as
// Prometheus does (the actions keep, drop and replace; others fail the
// test): the job label and the default path first, instance from the
// address when no rule sets it, the meta labels dropped at the end. nil
// when the target is dropped.
func relabel(t *testing.T, job scrapeConfig, target map[string]string) map[string]string {
	t.Helper()
	l := map[string]string{"job": job.JobName, "__metrics_path__": "/metrics", "__scheme__": "http"}
	for k, v := range target {
		l[k] = v
	}
	for _, r := range job.Relabel {
		sep, regex, repl := ";", "(.*)", "$1"
		if r.Separator != nil {
			sep = *r.Separator
		}
		if r.Regex != nil {
			regex = *r.Regex
		}
		if r.Replacement != nil {
			repl = *r.Replacement
		}
		re := regexp.MustCompile("^(?:" + regex + ")$")
		var values []string
		for _, s := range r.SourceLabels {
			values = append(values, l[s])
		}
		value := strings.Join(values, sep)
		switch r.Action {
		case "keep":
			if !re.MatchString(value) {
				return nil
			}
		case "drop":
			if re.MatchString(value) {
				return nil
			}
		case "", "replace":
			m := re.FindStringSubmatchIndex(value)
			if m == nil {
				continue
			}
			if res := string(re.ExpandString(nil, repl, value, m)); res != "" {
				l[r.TargetLabel] = res
			} else {
				delete(l, r.TargetLabel)
			}
		default:
			t.Fatalf("relabel action %q: not one this test applies", r.Action)
		}
	}
	if l["instance"] == "" {
		l["instance"] = l["__address__"]
	}
	for k := range l {
		if strings.HasPrefix(k, "__meta_") {
			delete(l, k)
		}
	}
	return l
}

// The gateway counts the agents of each window against
// gateway::expected_agents, which DeltaQAgentsMissing relies on: read from
// the container's environment with a default, and set there to at least one
// agent and at most max_agents.
func TestGatewayExpectsAgents(t *testing.T) {
	o := load(t)
	cfg := collectorConfig(t, o.configMaps["deltaq-gateway"])
	v, _ := dig(cfg, "connectors", "deltaq", "gateway", "expected_agents").(string)
	m := regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*):-([0-9]+)\}$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("gateway: connectors::deltaq::gateway::expected_agents %q: want ${env:NAME:-DEFAULT}, the number of agents set in the Deployment", v)
	}
	maxAgents, _ := dig(cfg, "connectors", "deltaq", "gateway", "max_agents").(float64)
	c := o.deployments["deltaq-gateway"].Spec.Template.Spec.Containers[0]
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == m[1] })
	if i < 0 {
		t.Fatalf("gateway: the container does not set %s: DeltaQAgentsMissing would never fire", m[1])
	}
	n, err := strconv.Atoi(c.Env[i].Value)
	if err != nil || n < 1 || (maxAgents > 0 && float64(n) > maxAgents) {
		t.Errorf("gateway: %s=%q, want a number of agents in [1, max_agents %v]", m[1], c.Env[i].Value, maxAgents)
	}
}
