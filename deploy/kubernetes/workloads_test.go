// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

const (
	// configDir is where the pods mount their ConfigMap; the image's
	// default configuration is there too (deploy/image/Containerfile).
	configDir = "/etc/otelcol-deltaq"
	// imageUser is the image's non-root user.
	imageUser = 10001
	// healthPort is the health_check extension's port in every embedded
	// configuration.
	healthPort = 13133
)

// objects are the decoded manifests, by kind and name.
type objects struct {
	configMaps  map[string]*corev1.ConfigMap
	daemonSets  map[string]*appsv1.DaemonSet
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
}

func load(t *testing.T) objects {
	t.Helper()
	o := objects{map[string]*corev1.ConfigMap{}, map[string]*appsv1.DaemonSet{}, map[string]*appsv1.Deployment{},
		map[string]*corev1.Service{}}
	for _, m := range manifests(t) {
		switch v := m.obj.(type) {
		case *corev1.ConfigMap:
			o.configMaps[v.Name] = v
		case *appsv1.DaemonSet:
			o.daemonSets[v.Name] = v
		case *appsv1.Deployment:
			o.deployments[v.Name] = v
		case *corev1.Service:
			o.services[v.Name] = v
		default:
			t.Fatalf("%s: %s: a kind these tests do not check", m.file, kindName(m.obj))
		}
	}
	if o.daemonSets["deltaq-agent"] == nil || o.deployments["deltaq-gateway"] == nil || o.services["deltaq-gateway"] == nil {
		t.Fatal("want the DaemonSet deltaq-agent, the Deployment and the Service deltaq-gateway")
	}
	return o
}

// pods are the two workloads' pod templates and selectors, by name.
func (o objects) pods() map[string]struct {
	template *corev1.PodTemplateSpec
	selector map[string]string
} {
	ds, dep := o.daemonSets["deltaq-agent"], o.deployments["deltaq-gateway"]
	return map[string]struct {
		template *corev1.PodTemplateSpec
		selector map[string]string
	}{
		"deltaq-agent":   {&ds.Spec.Template, ds.Spec.Selector.MatchLabels},
		"deltaq-gateway": {&dep.Spec.Template, dep.Spec.Selector.MatchLabels},
	}
}

// Each workload runs the image as its non-root user with a read-only root,
// its configuration from its ConfigMap, health checks on the
// health_check extension, and resource requests and limits.
func TestWorkloads(t *testing.T) {
	o := load(t)
	for name, p := range o.pods() {
		for k, v := range p.selector {
			if p.template.Labels[k] != v {
				t.Errorf("%s: the selector %s=%s does not select its own pods", name, k, v)
			}
		}
		spec := p.template.Spec
		if len(spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, want the collector alone", name, len(spec.Containers))
		}
		c := spec.Containers[0]
		checkContainer(t, name, c)
		checkSecurity(t, name, spec.SecurityContext, c.SecurityContext)
		checkConfigVolume(t, name, spec, c, o.configMaps)
	}
	dep := o.deployments["deltaq-gateway"]
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("gateway: replicas %v, strategy %q; want one gateway, replaced by Recreate (two would split the agents' windows)",
			dep.Spec.Replicas, dep.Spec.Strategy.Type)
	}
	agent := o.daemonSets["deltaq-agent"].Spec.Template.Spec.Containers[0]
	for _, want := range []int32{4317, 4318} {
		if !slices.ContainsFunc(agent.Ports, func(p corev1.ContainerPort) bool { return p.HostPort == want && p.ContainerPort == want }) {
			t.Errorf("agent: no host port %d: the node's applications send to the node's address", want)
		}
	}
}

func checkContainer(t *testing.T, name string, c corev1.Container) {
	t.Helper()
	if !regexp.MustCompile(`(^|/)otelcol-deltaq:[A-Za-z0-9_][A-Za-z0-9_.-]*$`).MatchString(c.Image) {
		t.Errorf("%s: image %q, want the otelcol-deltaq image with a tag", name, c.Image)
	}
	if !slices.Equal(c.Args, []string{"--config=" + configDir + "/config.yaml"}) {
		t.Errorf("%s: args %q, want the mounted configuration", name, c.Args)
	}
	for what, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/" || containerPort(c, probe.HTTPGet.Port) != healthPort {
			t.Errorf("%s: %s probe %+v, want GET / on the health check's port %d", name, what, probe, healthPort)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s: %s request %s, limit %s: want both, the request at most the limit", name, r, req.String(), lim.String())
		}
	}
}

// containerPort resolves a probe's port, by number or by name.
func containerPort(c corev1.Container, port intstr.IntOrString) int32 {
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	return 0
}

func checkSecurity(t *testing.T, name string, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	t.Helper()
	if pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot || pod.RunAsUser == nil || *pod.RunAsUser != imageUser {
		t.Errorf("%s: pod security %+v, want runAsNonRoot and the image's user %d", name, pod, imageUser)
	}
	if c == nil || c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem ||
		c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation ||
		c.Capabilities == nil || !slices.Equal(c.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: container security %+v, want a read-only root, no privilege escalation, every capability dropped", name, c)
	}
}

func checkConfigVolume(t *testing.T, name string, spec corev1.PodSpec, c corev1.Container, cms map[string]*corev1.ConfigMap) {
	t.Helper()
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == configDir })
	if i < 0 || !c.VolumeMounts[i].ReadOnly {
		t.Errorf("%s: nothing mounted read-only at %s", name, configDir)
		return
	}
	j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if j < 0 || spec.Volumes[j].ConfigMap == nil || spec.Volumes[j].ConfigMap.Name != name || cms[name] == nil ||
		cms[name].Data["config.yaml"] == "" {
		t.Errorf("%s: the configuration volume is not the ConfigMap %s with a config.yaml", name, name)
	}
}

// The agents send their windows to the gateway's Service, which selects
// the gateway's pods on the port its collector listens on.
func TestServiceReachesGateway(t *testing.T) {
	o := load(t)
	svc := o.services["deltaq-gateway"]
	gw := o.deployments["deltaq-gateway"].Spec.Template
	for k, v := range svc.Spec.Selector {
		if gw.Labels[k] != v {
			t.Errorf("the Service's selector %s=%s does not select the gateway's pods", k, v)
		}
	}
	cfg := collectorConfig(t, o.configMaps["deltaq-agent"])
	endpoint, _ := dig(cfg, "exporters", "otlp_grpc/gateway", "endpoint").(string)
	host, port, _ := strings.Cut(endpoint, ":")
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == int32(atoi(port)) })
	if host != svc.Name || i < 0 || containerPort(gw.Spec.Containers[0], svc.Spec.Ports[i].TargetPort) != 4317 {
		t.Errorf("the agents send to %q: want the Service %s on a port that reaches the gateway's OTLP/gRPC receiver (4317)",
			endpoint, svc.Name)
	}
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// collectorConfig is the collector configuration a ConfigMap embeds.
func collectorConfig(t *testing.T, cm *corev1.ConfigMap) map[string]any {
	t.Helper()
	var cfg map[string]any
	if err := yaml.UnmarshalStrict([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatalf("ConfigMap %s: config.yaml: %v", cm.Name, err)
	}
	return cfg
}

// dig follows keys through nested maps; nil when one is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Each embedded configuration has the health check the probes ask, the
// memory limiter first in every pipeline fed from outside, and every
// environment variable it reads set by its container; the built collector
// accepts it ($OTELCOL, as make test-kubernetes sets it).
func TestCollectorConfigs(t *testing.T) {
	o := load(t)
	otelcol := os.Getenv("OTELCOL")
	for name, p := range o.pods() {
		cm := o.configMaps[name]
		cfg := collectorConfig(t, cm)
		if ep, _ := dig(cfg, "extensions", "health_check", "endpoint").(string); ep != "0.0.0.0:13133" {
			t.Errorf("%s: health_check endpoint %q, want 0.0.0.0:%d (all interfaces, for the kubelet)", name, ep, healthPort)
		}
		if ext, _ := dig(cfg, "service", "extensions").([]any); !slices.Contains(ext, any("health_check")) {
			t.Errorf("%s: service.extensions %v lacks health_check", name, ext)
		}
		pipelines, _ := dig(cfg, "service", "pipelines").(map[string]any)
		for pname, pl := range pipelines {
			receivers, _ := dig(pl, "receivers").([]any)
			processors, _ := dig(pl, "processors").([]any)
			if slices.Contains(receivers, any("otlp")) && (len(processors) == 0 || processors[0] != "memory_limiter") {
				t.Errorf("%s: pipeline %s takes OTLP with processors %v: want memory_limiter first", name, pname, processors)
			}
		}
		c := p.template.Spec.Containers[0]
		var env []string
		for _, m := range regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(cm.Data["config.yaml"], -1) {
			i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == m[1] })
			if i < 0 {
				t.Errorf("%s: the configuration reads ${env:%s}, which the container does not set", name, m[1])
				continue
			}
			value := c.Env[i].Value
			if from := c.Env[i].ValueFrom; value == "" && from != nil && from.FieldRef != nil {
				// The downward API's value, known only in the pod: a stand-in.
				value = "pod-" + strings.ReplaceAll(from.FieldRef.FieldPath, ".", "-")
			}
			if value == "" {
				t.Errorf("%s: the configuration reads ${env:%s}, which the container does not set", name, m[1])
				continue
			}
			env = append(env, m[1]+"="+value)
		}
		if otelcol == "" {
			t.Logf("%s: OTELCOL not set: the configuration is not validated by the collector", name)
			continue
		}
		validate(t, otelcol, name, cm.Data["config.yaml"], env)
	}
	if otelcol == "" {
		t.Skip("set OTELCOL to the built collector's path (make test-kubernetes does) to validate the configurations")
	}
}

// validate runs otelcol validate over config with env.
func validate(t *testing.T, otelcol, name, config string, env []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(otelcol, "validate", "--config="+path)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: otelcol-deltaq validate refuses its ConfigMap's configuration: %v\n%s", name, err, out)
	}
}

// The gateway waits for every agent's window: an agent closes window k its
// own lag (one interval by default) after the window's end, on a timer that
// may fire up to one interval later (the timers are not aligned), and its
// exporter may retry for retry_on_failure::max_elapsed_time (5 minutes by
// default) before the window arrives. A window that arrives after the
// gateway's lag is refused as late: with a shorter lag, every window of the
// agents whose timer runs behind the gateway's would be.
func TestGatewayWaitsForAgents(t *testing.T) {
	o := load(t)
	agent, gateway := collectorConfig(t, o.configMaps["deltaq-agent"]), collectorConfig(t, o.configMaps["deltaq-gateway"])
	interval := duration(t, "the agents' interval", dig(agent, "connectors", "deltaq", "interval"), 0)
	if gi := duration(t, "the gateway's interval", dig(gateway, "connectors", "deltaq", "interval"), 0); gi != interval {
		t.Fatalf("the gateway's interval %s, the agents' %s: want one interval (other windows are misaligned)", gi, interval)
	}
	agentLag := duration(t, "the agents' lag", dig(agent, "connectors", "deltaq", "lag"), interval)
	retry := dig(agent, "exporters", "otlp_grpc/gateway", "retry_on_failure", "max_elapsed_time")
	if retry == nil {
		t.Fatal("the agents' exporter to the gateway retries for 5 minutes by default: set its retry_on_failure::max_elapsed_time")
	}
	need := agentLag + interval + duration(t, "the agents' retries", retry, 0)
	if lag := duration(t, "the gateway's lag", dig(gateway, "connectors", "deltaq", "lag"), interval); lag < need {
		t.Errorf("the gateway's lag %s: want at least %s (the agents' lag, one interval and their exporter's retries)", lag, need)
	}
}

// duration reads a configuration's duration; def when it is not set.
func duration(t *testing.T, what string, v any, def time.Duration) time.Duration {
	t.Helper()
	if v == nil && def > 0 {
		return def
	}
	s, _ := v.(string)
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("%s: %v, want a duration", what, v)
	}
	return d
}

// A tracing backend (Tempo, Jaeger) takes spans only: an exporter of a traces
// pipeline is in no logs pipeline, but for the deltaq connector, which takes
// both. Log records sent to it would be refused, every one of them counted in
// otelcol_exporter_send_failed_log_records (the DeltaQExportFailed alert).
func TestLogsNotToTracingBackend(t *testing.T) {
	o := load(t)
	for name, cm := range o.configMaps {
		cfg := collectorConfig(t, cm)
		connectors, _ := dig(cfg, "connectors").(map[string]any)
		pipelines, _ := dig(cfg, "service", "pipelines").(map[string]any)
		tracing := map[any]bool{}
		for pname, pl := range pipelines {
			if pname == "traces" || strings.HasPrefix(pname, "traces/") {
				exporters, _ := dig(pl, "exporters").([]any)
				for _, e := range exporters {
					if s, _ := e.(string); connectors[s] == nil {
						tracing[e] = true
					}
				}
			}
		}
		for pname, pl := range pipelines {
			if pname != "logs" && !strings.HasPrefix(pname, "logs/") {
				continue
			}
			exporters, _ := dig(pl, "exporters").([]any)
			for _, e := range exporters {
				if tracing[e] {
					t.Errorf("%s: pipeline %s sends log records to %v, the traces pipeline's exporter: want a log backend of its own", name, pname, e)
				}
			}
		}
	}
}

// The gateway counts agents by service.instance.id, which the collector
// draws at random at every start unless the configuration names it: each
// agent is named after its node, the same across restarts.
func TestAgentsNamedByNode(t *testing.T) {
	o := load(t)
	cfg := collectorConfig(t, o.configMaps["deltaq-agent"])
	id, _ := dig(cfg, "service", "telemetry", "resource", "service.instance.id").(string)
	m := regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$`).FindStringSubmatch(id)
	c := o.daemonSets["deltaq-agent"].Spec.Template.Spec.Containers[0]
	i := -1
	if m != nil {
		i = slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == m[1] })
	}
	if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("agent: service::telemetry::resource::service.instance.id %q: want the node's name (an environment variable from spec.nodeName)", id)
	}
}

// The memory limiter's thresholds as the ConfigMaps' comments and the README
// state them: it refuses data from its soft limit, limit_percentage less
// spike_limit_percentage (a fifth of limit_percentage when unset), and
// forces garbage collections from limit_percentage (the collector's
// memorylimiter: aboveSoftLimit, aboveHardLimit). Before, both said that
// data was refused from 80 %, the hard limit, where the manifests' refuse
// from 60 %.
func TestMemoryLimiterAsDocumented(t *testing.T) {
	o := load(t)
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Join(strings.Fields(string(readme)), " ")
	for name := range o.pods() {
		cm := o.configMaps[name]
		cfg := collectorConfig(t, cm)
		limit, _ := dig(cfg, "processors", "memory_limiter", "limit_percentage").(float64)
		if limit <= 0 {
			t.Fatalf("%s: memory_limiter::limit_percentage %v, want a share of the container's limit", name, limit)
		}
		spike, ok := dig(cfg, "processors", "memory_limiter", "spike_limit_percentage").(float64)
		if !ok {
			spike = float64(int(limit) / 5)
		}
		soft := int(limit - spike)
		text := strings.Join(strings.Fields(cm.Data["config.yaml"]), " ")
		if want := fmt.Sprintf("from %d %% of the container's memory limit", soft); !strings.Contains(text, want) {
			t.Errorf("%s: the memory limiter's comment does not say that it refuses data %s", name, want)
		}
		for _, want := range []string{
			fmt.Sprintf("refuses data from %d %% of the container's memory limit", soft),
			fmt.Sprintf("`limit_percentage` %d less `spike_limit_percentage` %d", int(limit), int(spike)),
			fmt.Sprintf("forces garbage collections from %d %%", int(limit)),
		} {
			if !strings.Contains(words, want) {
				t.Errorf("%s: README.md does not say %q", name, want)
			}
		}
	}
}
