// Package helm_test checks the chart in ./seckill without a cluster: Helm's
// own library installs it as a dry run (client only, as `helm template`
// does) and lints it, every object it renders is decoded strictly into
// Kubernetes' own Go types, and what the objects say is held to seckill:
// the settings of configs/config.yaml (the defaults the binary embeds, which
// decide which SECKILL_* variables it knows) and the endpoints of
// api/openapi.yaml.
//
// It is a module of its own so that Helm's and Kubernetes' dependencies
// never enter seckill's go.mod.
package helm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "seckill"
	repoRoot    = "../.."
	releaseName = "shop"
	namespace   = "sale"
)

// valuesFiles are the values an install is tested with: the chart's
// defaults alone, then each file given with -f.
var valuesFiles = map[string]string{
	"default":    "",
	"production": "values-production.yaml",
	"minimal":    "values-minimal.yaml",
}

// object is one rendered Kubernetes object, decoded.
type object struct {
	kind, name string
	hook       bool // a Helm hook (the migration)
	obj        runtime.Object
}

// scheme knows every kind the chart may render: Kubernetes' own and the
// Prometheus Operator's ServiceMonitor.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	require.NoError(t, err)
	return c
}

// readValues reads a values file of the chart; "" is no file (the defaults).
func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, file))
	require.NoError(t, err)
	return v
}

// install runs `helm install --dry-run` (client only) of the chart with vals
// over its defaults, as `helm install shop deploy/helm/seckill -n sale -f
// file` would render it.
func install(t *testing.T, vals map[string]any) (*release.Release, error) {
	t.Helper()
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	in := action.NewInstall(cfg)
	in.DryRun = true
	in.ClientOnly = true
	in.ReleaseName = releaseName
	in.Namespace = namespace
	in.KubeVersion = kubeVersion(t)
	return in.RunWithContext(context.Background(), loadChart(t), vals)
}

// kubeVersion is the Kubernetes release whose types the objects are decoded
// into, as go.mod requires them: k8s.io/api v0.N.x is Kubernetes 1.N.x.
func kubeVersion(t *testing.T) *chartutil.KubeVersion {
	t.Helper()
	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+\.\d+)`).FindSubmatch(mod)
	require.NotNil(t, m, "go.mod requires k8s.io/api")
	kv, err := chartutil.ParseKubeVersion("v1." + string(m[1]))
	require.NoError(t, err)
	return kv
}

// render installs with vals and decodes every object of the release, its
// hooks included, strictly: a field the Go type does not have fails.
func render(t *testing.T, vals map[string]any) []object {
	t.Helper()
	rel, err := install(t, vals)
	require.NoError(t, err)
	var objs []object
	docs := releaseutil.SplitManifests(rel.Manifest)
	for i, h := range rel.Hooks {
		docs[fmt.Sprintf("hook:%d", i)] = h.Manifest
	}
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		doc := docs[name]
		if strings.TrimSpace(doc) == "" {
			continue
		}
		o := decodeStrict(t, doc)
		o.hook = strings.HasPrefix(name, "hook:")
		objs = append(objs, o)
	}
	require.NotEmpty(t, objs)
	return objs
}

// decodeStrict decodes one YAML document into the Go type of its apiVersion
// and kind: YAML to JSON, then a JSON decoder that refuses unknown fields
// and duplicate keys.
func decodeStrict(t *testing.T, doc string) object {
	t.Helper()
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &tm), doc)
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	obj, err := scheme.New(gvk)
	require.NoError(t, err, "%s %s: a kind Kubernetes does not know", gvk, tm.Metadata.Name)
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), "%s %s does not decode strictly:\n%s", tm.Kind, tm.Metadata.Name, doc)
	return object{kind: tm.Kind, name: tm.Metadata.Name, obj: obj}
}

// withValues returns a copy of base with the value at path set (path's
// elements are map keys, which may hold dots: secrets.keys' settings).
func withValues(base map[string]any, sets ...setting) map[string]any {
	out := deepCopy(base).(map[string]any)
	for _, s := range sets {
		m := out
		for _, k := range s.path[:len(s.path)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[s.path[len(s.path)-1]] = s.value
	}
	return out
}

type setting struct {
	path  []string
	value any
}

func set(value any, path ...string) setting { return setting{path: path, value: value} }

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// readYAML reads a YAML file of the repository into a map.
func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(data, &m), path)
	return m
}

// flatten returns the leaf settings of a configuration in seckill's shape,
// "redis.tls.enabled" → value, as viper names its keys.
func flatten(prefix string, m map[string]any, out map[string]any) map[string]any {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flatten(key, sub, out)
			continue
		}
		out[key] = v
	}
	return out
}

// envName is the environment variable of a setting, as internal/config
// names it.
func envName(setting string) string {
	return "SECKILL_" + strings.ToUpper(strings.ReplaceAll(setting, ".", "_"))
}

// knownSettings are the settings seckill has: the keys of
// configs/config.yaml, the defaults the binary embeds, from which it decides
// which SECKILL_* variables set a key and which it warns of.
func knownSettings(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	for k := range flatten("", readYAML(t, filepath.Join(repoRoot, "configs/config.yaml")), map[string]any{}) {
		known[k] = true
	}
	require.Contains(t, known, "mysql.dsn")
	return known
}

// secretSettings are the settings the chart reads from the Secret: those
// values.yaml lists under secrets.keys.
func secretSettings(t *testing.T) []string {
	t.Helper()
	keys, ok := loadChart(t).Values["secrets"].(map[string]any)["keys"].(map[string]any)
	require.True(t, ok, "values.yaml has secrets.keys")
	var out []string
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func kinds(objs []object) map[string]int {
	n := map[string]int{}
	for _, o := range objs {
		n[o.kind]++
	}
	return n
}

func find[T runtime.Object](objs []object, hook bool) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.obj.(T); ok && o.hook == hook {
			out = append(out, v)
		}
	}
	return out
}

func one[T runtime.Object](t *testing.T, objs []object, hook bool) T {
	t.Helper()
	found := find[T](objs, hook)
	require.Len(t, found, 1, "one %T", *new(T))
	return found[0]
}

func fmtKinds(objs []object) string {
	var s []string
	for _, o := range objs {
		s = append(s, fmt.Sprintf("%s/%s", o.kind, o.name))
	}
	return strings.Join(s, " ")
}
