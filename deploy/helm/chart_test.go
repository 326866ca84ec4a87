package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// awaitedSettings are settings the chart reads from the Secret (and
// refuses in the ConfigMap) before configs/config.yaml lists them: none now.
var awaitedSettings = map[string]bool{}

// TestRender installs the chart (dry run) with the defaults, the production
// and the minimal values, decodes every object strictly, and checks each
// against seckill and the restricted Pod Security Standard.
func TestRender(t *testing.T) {
	known := knownSettings(t)
	for name, file := range valuesFiles {
		t.Run(name, func(t *testing.T) {
			vals := readValues(t, file)
			objs := render(t, vals)
			t.Logf("rendered: %s", fmtKinds(objs))
			checkObjects(t, objs, known)
		})
	}
}

// TestRenderEverySecret maps every setting values.yaml lists as a secret:
// each becomes an environment variable read from the Secret, and the
// ConfigMaps stay free of them.
func TestRenderEverySecret(t *testing.T) {
	var sets []setting
	for _, s := range secretSettings(t) {
		sets = append(sets, set("key-"+strings.ReplaceAll(s, ".", "-"), "secrets", "keys", s))
	}
	objs := render(t, withValues(readValues(t, "values-production.yaml"), sets...))
	checkObjects(t, objs, knownSettings(t))
	dep := one[*appsv1.Deployment](t, objs, false)
	env := map[string]corev1.EnvVar{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	for _, s := range secretSettings(t) {
		e, ok := env[envName(s)]
		if assert.True(t, ok, "%s is set from the Secret", envName(s)) {
			assert.Equal(t, "key-"+strings.ReplaceAll(s, ".", "-"), e.ValueFrom.SecretKeyRef.Key)
		}
	}
}

// TestSecretRefusedInConfig: a secret given in config, where it would land
// in a ConfigMap, stops the install, naming the setting and where it goes.
func TestSecretRefusedInConfig(t *testing.T) {
	for _, s := range secretSettings(t) {
		t.Run(s, func(t *testing.T) {
			sentinel := "s3cr3t-" + strings.ReplaceAll(s, ".", "-") + "-0123456789abcdef0123456789"
			path := append([]string{"config"}, strings.Split(s, ".")...)
			_, err := install(t, withValues(map[string]any{}, set(sentinel, path...)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "config."+s+" is a secret")
			assert.Contains(t, err.Error(), "secrets.keys."+s)
			assert.NotContains(t, err.Error(), sentinel)
		})
	}
}

// TestSecretSettingsAreSettings: what the chart treats as a secret is a
// setting of seckill, and every setting of seckill that holds a secret is
// among them, so that none can reach a ConfigMap.
func TestSecretSettingsAreSettings(t *testing.T) {
	known := knownSettings(t)
	secrets := secretSettings(t)
	for _, s := range secrets {
		switch {
		case known[s] && awaitedSettings[s]:
			t.Logf("%s is a setting now: take it out of awaitedSettings", s)
		case !known[s]:
			assert.True(t, awaitedSettings[s], "secrets.keys.%s is not a setting of configs/config.yaml", s)
		}
	}
	secretLike := regexp.MustCompile(`(token|password|secret|dsn|keys?)$`)
	for s := range known {
		if secretLike.MatchString(s) {
			assert.Contains(t, secrets, s, "%s looks like a secret: list it in values.yaml's secrets.keys and in _helpers.tpl's seckill.secretSettings", s)
		}
	}
}

// TestRefusals: an install that would leave each pod with stores of its
// own, or keys without a Secret, is refused with the value to set.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  setting
		want string
	}{
		{"no Redis", set([]any{}, "config", "redis", "addrs"), "config.redis.addrs is empty"},
		{"no MySQL", set("", "secrets", "keys", "mysql.dsn"), "secrets.keys.mysql.dsn is empty"},
		{"no Secret", set("", "secrets", "existingSecret"), "secrets.existingSecret names no Secret"},
		{"a misspelt value", set(3, "replicas"), "replicas"},
		{"a value of the wrong type", set("two", "replicaCount"), "replicaCount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := install(t, withValues(map[string]any{}, tc.set))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestLint runs Helm's linter, strict (a warning fails), with each values
// file.
func TestLint(t *testing.T) {
	for name, file := range valuesFiles {
		t.Run(name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, readValues(t, file), namespace, kubeVersion(t))
			for _, m := range l.Messages {
				assert.Less(t, m.Severity, support.WarningSev, "%s", m.Error())
			}
		})
	}
}

// TestProductionMirrorsExample: values-production.yaml's config is
// configs/production.example.yaml, less http.addr (the chart's) and the
// secrets (from the Secret).
func TestProductionMirrorsExample(t *testing.T) {
	example := flatten("", readYAML(t, filepath.Join(repoRoot, "configs/production.example.yaml")), map[string]any{})
	config := flatten("", readValues(t, "values-production.yaml")["config"].(map[string]any), map[string]any{})
	secrets := secretSettings(t)
	for k, v := range example {
		if k == "http.addr" || slices.Contains(secrets, k) {
			assert.NotContains(t, config, k)
			continue
		}
		assert.Equal(t, fmt.Sprint(v), fmt.Sprint(config[k]), "config.%s", k)
	}
	for k := range config {
		assert.Contains(t, example, k, "config.%s is not in configs/production.example.yaml", k)
	}
}

// TestAppVersionIsTheRelease: the chart deploys the newest release of
// CHANGELOG.md by default.
func TestAppVersionIsTheRelease(t *testing.T) {
	log, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^## \[(\d[^\]]*)\]`).FindSubmatch(log)
	require.NotNil(t, m, "CHANGELOG.md names a release")
	assert.Equal(t, string(m[1]), loadChart(t).Metadata.AppVersion)
}

// checkObjects holds what one install rendered to seckill and to the
// restricted Pod Security Standard.
func checkObjects(t *testing.T, objs []object, known map[string]bool) {
	t.Helper()
	n := kinds(objs)
	for _, k := range []string{"Deployment", "Service", "ConfigMap"} {
		assert.Positive(t, n[k], "a %s", k)
	}
	assert.Zero(t, n["Secret"], "the chart never holds a secret")
	dep := one[*appsv1.Deployment](t, objs, false)
	pods := map[string]corev1.PodSpec{"Deployment " + dep.Name: dep.Spec.Template.Spec}
	for _, j := range find[*batchv1.Job](objs, true) {
		pods["Job "+j.Name] = j.Spec.Template.Spec
		assert.Equal(t, []string{"migrate", "--config=/etc/seckill/seckill.yaml"}, j.Spec.Template.Spec.Containers[0].Args)
	}
	assert.Len(t, pods, 2, "the Deployment and the migration Job: %s", fmtKinds(objs))
	for what, pod := range pods {
		checkRestricted(t, what, pod)
		checkEnv(t, what, pod, known)
	}
	checkProbes(t, dep)
	checkConfigMaps(t, objs, known)
	checkSelectors(t, objs, dep)
}

func checkRestricted(t *testing.T, what string, pod corev1.PodSpec) {
	t.Helper()
	psc := pod.SecurityContext
	require.NotNil(t, psc, what)
	assert.True(t, psc.RunAsNonRoot != nil && *psc.RunAsNonRoot, "%s: runAsNonRoot", what)
	assert.True(t, psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault, "%s: seccomp RuntimeDefault", what)
	assert.False(t, pod.HostNetwork || pod.HostPID || pod.HostIPC, "%s: host namespaces", what)
	assert.False(t, pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken, "%s: no service account token", what)
	for _, v := range pod.Volumes {
		assert.Nil(t, v.HostPath, "%s: hostPath volume %s", what, v.Name)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		sc := c.SecurityContext
		require.NotNil(t, sc, "%s %s", what, c.Name)
		assert.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "%s %s: allowPrivilegeEscalation false", what, c.Name)
		assert.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "%s %s: readOnlyRootFilesystem", what, c.Name)
		assert.False(t, sc.Privileged != nil && *sc.Privileged, "%s %s: privileged", what, c.Name)
		require.NotNil(t, sc.Capabilities, "%s %s", what, c.Name)
		assert.Contains(t, sc.Capabilities.Drop, corev1.Capability("ALL"), "%s %s: drops ALL", what, c.Name)
		assert.Empty(t, sc.Capabilities.Add, "%s %s: adds none", what, c.Name)
		assert.False(t, c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero(),
			"%s %s: CPU and memory requests, a memory limit", what, c.Name)
	}
}

// checkEnv: every variable the chart sets is a setting seckill knows, read
// from the Secret, never written into the manifest.
func checkEnv(t *testing.T, what string, pod corev1.PodSpec, known map[string]bool) {
	t.Helper()
	env := map[string]string{}
	for s := range known {
		env[envName(s)] = s
	}
	for s := range awaitedSettings {
		env[envName(s)] = s
	}
	for _, c := range pod.Containers {
		for _, e := range c.Env {
			_, ok := env[e.Name]
			assert.True(t, ok, "%s %s: %s is no setting of configs/config.yaml", what, c.Name, e.Name)
			assert.Empty(t, e.Value, "%s %s: %s is written into the manifest", what, c.Name, e.Name)
			if assert.NotNil(t, e.ValueFrom, "%s %s: %s", what, c.Name, e.Name) {
				assert.NotNil(t, e.ValueFrom.SecretKeyRef, "%s %s: %s comes from a Secret", what, c.Name, e.Name)
			}
		}
	}
}

// checkProbes: the probes ask seckill's real endpoints (api/openapi.yaml)
// on the port it listens on.
func checkProbes(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "api/openapi.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &doc))
	c := dep.Spec.Template.Spec.Containers[0]
	require.Len(t, c.Ports, 1)
	want := map[string]string{"startup": "/healthz", "liveness": "/healthz", "readiness": "/readyz"}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		require.NotNil(t, p, "%s probe", name)
		require.NotNil(t, p.HTTPGet, "%s probe", name)
		assert.Equal(t, want[name], p.HTTPGet.Path, "%s probe", name)
		assert.Contains(t, doc.Paths[p.HTTPGet.Path], "get", "%s probe: GET %s is in api/openapi.yaml", name, p.HTTPGet.Path)
		port := p.HTTPGet.Port
		assert.True(t, port.StrVal == c.Ports[0].Name || port.IntVal == c.Ports[0].ContainerPort, "%s probe: port %s is the container's", name, port.String())
	}
	assert.Contains(t, doc.Paths["/metrics"], "get", "the ServiceMonitor's /metrics")
}

// checkConfigMaps: each ConfigMap is seckill's configuration file, every key
// of it a setting seckill knows and none of them a secret; http.addr is
// the container's port.
func checkConfigMaps(t *testing.T, objs []object, known map[string]bool) {
	t.Helper()
	secrets := secretSettings(t)
	for _, o := range objs {
		cm, ok := o.obj.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		assert.Empty(t, cm.BinaryData, cm.Name)
		require.Contains(t, cm.Data, "seckill.yaml", cm.Name)
		var file map[string]any
		require.NoError(t, yaml.UnmarshalStrict([]byte(cm.Data["seckill.yaml"]), &file), cm.Name)
		for k := range flatten("", file, map[string]any{}) {
			assert.True(t, known[k], "ConfigMap %s: %s is no setting of configs/config.yaml (seckill would exit 2)", cm.Name, k)
			assert.NotContains(t, secrets, k, "ConfigMap %s holds the secret %s", cm.Name, k)
		}
		dep := one[*appsv1.Deployment](t, objs, false)
		assert.Equal(t, fmt.Sprintf(":%d", dep.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort),
			file["http"].(map[string]any)["addr"], "ConfigMap %s: http.addr", cm.Name)
	}
}

// checkSelectors: the Service, the disruption budget, the network policy
// and the autoscaler find the Deployment's pods, and none the migration's.
func checkSelectors(t *testing.T, objs []object, dep *appsv1.Deployment) {
	t.Helper()
	podLabels := labels.Set(dep.Spec.Template.Labels)
	var jobLabels []labels.Set
	for _, j := range find[*batchv1.Job](objs, true) {
		jobLabels = append(jobLabels, j.Spec.Template.Labels)
	}
	selects := func(what string, sel labels.Selector) {
		assert.True(t, sel.Matches(podLabels), "%s selects the Deployment's pods", what)
		for _, jl := range jobLabels {
			assert.False(t, sel.Matches(jl), "%s selects the migration's pod", what)
		}
	}
	svc := one[*corev1.Service](t, objs, false)
	selects("Service", labels.SelectorFromSet(svc.Spec.Selector))
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, "http", svc.Spec.Ports[0].TargetPort.StrVal)
	for _, p := range find[*policyv1.PodDisruptionBudget](objs, false) {
		selects("PodDisruptionBudget", labels.SelectorFromSet(p.Spec.Selector.MatchLabels))
	}
	for _, np := range find[*networkingv1.NetworkPolicy](objs, false) {
		selects("NetworkPolicy", labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels))
	}
	for _, sm := range find[*monitoringv1.ServiceMonitor](objs, false) {
		assert.True(t, labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels)), "the ServiceMonitor selects the Service")
		assert.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	}
	for _, h := range find[*autoscalingv2.HorizontalPodAutoscaler](objs, false) {
		assert.Equal(t, dep.Name, h.Spec.ScaleTargetRef.Name)
		assert.Nil(t, dep.Spec.Replicas, "the autoscaler sets the replicas")
	}
	require.NotEmpty(t, dep.Spec.Template.Spec.TopologySpreadConstraints)
	for _, c := range dep.Spec.Template.Spec.TopologySpreadConstraints {
		assert.True(t, labels.SelectorFromSet(c.LabelSelector.MatchLabels).Matches(podLabels), "topology spread on %s counts the pods", c.TopologyKey)
	}
	assert.True(t, strings.Contains(dep.Spec.Template.Spec.Containers[0].Image, ":"), "the image has a tag")
}
