// Package helm_test checks the chart in ./seckill without a cluster: Helm's
// own library renders it as `helm install --dry-run` does and lints it,
// every object it renders is decoded strictly into Kubernetes' own Go
// types, and what the objects say is held to seckill:
// the settings of configs/config.yaml (the defaults the binary embeds, which
// decide which SECKILL_* variables it knows) and the endpoints of
// api/openapi.yaml.
//
// It is a module of its own so that Helm's and Kubernetes' dependencies
// never enter seckill's go.mod.
package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
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

// rendered is what an install would send to the cluster: the hooks (the
// migration) and the other objects, one YAML document each, and the notes.
type rendered struct {
	hooks, manifests []string
	notes            string
}

// install renders the chart with vals over its defaults as `helm install shop
// deploy/helm/seckill -n sale -f file --dry-run` does, with the calls of
// Helm's install action that need no cluster: the chart's kubeVersion
// against the cluster's, the values against values.schema.json, the
// templates, then the hooks sorted from the other objects. (The action
// itself would bring kubectl, kustomize and a registry client into the
// build: 962 packages instead of 548, about 1.4 times the CPU to build.)
func install(t *testing.T, vals map[string]any) (*rendered, error) {
	t.Helper()
	ch := loadChart(t)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion(t)
	if !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion %s, not %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, err
	}
	opts := chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	out := &rendered{}
	for name, text := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			out.notes += text
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	for _, h := range hooks {
		out.hooks = append(out.hooks, h.Manifest)
	}
	for _, m := range manifests {
		out.manifests = append(out.manifests, m.Content)
	}
	return out, nil
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
	r, err := install(t, vals)
	require.NoError(t, err)
	require.NotEmpty(t, r.notes)
	var objs []object
	for i, docs := range [][]string{r.manifests, r.hooks} {
		for _, doc := range docs {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			o := decodeStrict(t, doc)
			o.hook = i == 1
			objs = append(objs, o)
		}
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
