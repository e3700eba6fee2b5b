package deploy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/svc-dev/svc/cmd/svc/node"
)

// The manifests are checked the way svc itself would read them: every SVC_* variable they set
// must be a setting of `svc serve` (or the _FILE variant of a secret one), and each node's
// environment, assembled as its runtime would (compose merge keys, Kubernetes envFrom and
// $(VAR) expansion, systemd's Environment= and EnvironmentFile=), must pass node.ParseConfig
// as a member of one cluster.

const (
	composePath = "compose/compose.yaml"
	k8sDir      = "k8s"
	unitPath    = "systemd/svc.service"
	envExample  = "systemd/svc.env.example"
	dockerfile  = "compose/Dockerfile"
	readmePath  = "README.md"
	migrations  = "../sinks/clickhouse/migrations"
	nodesWanted = 3
)

// kv is one variable as a manifest sets it.
type kv struct{ name, value string }

// ---- svc's settings

func settingsByEnv() map[string]node.Setting {
	m := map[string]node.Setting{}
	for _, s := range node.Settings {
		m[s.Env] = s
	}
	return m
}

// knownVar says whether svc serve reads name: a setting's variable, or <variable>_FILE of a
// secret setting.
func knownVar(name string) error {
	byEnv := settingsByEnv()
	if _, ok := byEnv[name]; ok {
		return nil
	}
	if base, ok := strings.CutSuffix(name, "_FILE"); ok {
		s, ok := byEnv[base]
		switch {
		case !ok:
			return fmt.Errorf("%s: svc has no setting %s", name, base)
		case !s.Secret():
			return fmt.Errorf("%s: %s is not a secret setting, so svc does not read it from a file", name, base)
		}
		return nil
	}
	return fmt.Errorf("%s is not a setting of svc serve (svc serve -h)", name)
}

// sampleSecret is what a test secret file holds for a secret setting: a value its check accepts.
func sampleSecret(env string) string {
	switch env {
	case "SVC_CLICKHOUSE_DSN":
		return "clickhouse://svc:sample@clickhouse:9000/svc"
	case "SVC_POSTGRES_DSN":
		return "postgres://svc:sample@postgres:5432/svc?sslmode=disable"
	}
	return "sample-secret-value"
}

// parseEnv runs svc's own configuration parser over vars. A <setting>_FILE variable is pointed
// at a temporary file with a sample value (the real files are the deployment's secrets).
func parseEnv(t *testing.T, vars map[string]string) (node.Config, error) {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{}
	for k, v := range vars {
		if base, ok := strings.CutSuffix(k, "_FILE"); ok && strings.HasPrefix(k, "SVC_") {
			f := filepath.Join(dir, base)
			if err := os.WriteFile(f, []byte(sampleSecret(base)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			env[k] = f
			continue
		}
		env[k] = v
	}
	return node.ParseConfig(nil, func(k string) string { return env[k] }, io.Discard)
}

// checkMembers checks what every cluster's nodes must agree on and differ in.
func checkMembers(t *testing.T, where string, cfgs map[string]node.Config, provider string) {
	t.Helper()
	addrs := map[string]string{}
	names := map[string]bool{}
	for n, c := range cfgs {
		if !c.Clustered() {
			t.Errorf("%s: %s has no SVC_CLUSTER_NAME", where, n)
		}
		names[c.ClusterName] = true
		if c.ClusterProvider != provider {
			t.Errorf("%s: %s uses provider %q, want %q", where, n, c.ClusterProvider, provider)
		}
		if other, dup := addrs[c.ClusterAddr]; dup {
			t.Errorf("%s: %s and %s share SVC_CLUSTER_ADDR %s", where, n, other, c.ClusterAddr)
		}
		addrs[c.ClusterAddr] = n
		if c.ShutdownTimeout <= 0 {
			t.Errorf("%s: %s has no shutdown timeout", where, n)
		}
	}
	if len(names) > 1 {
		t.Errorf("%s: nodes name different clusters: %v", where, names)
	}
}

// ---- Docker Compose

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

type composeService struct {
	Image           string     `yaml:"image"`
	Build           any        `yaml:"build"`
	Environment     composeEnv `yaml:"environment"`
	EnvFile         any        `yaml:"env_file"`
	Ports           []string   `yaml:"ports"`
	Expose          []string   `yaml:"expose"`
	Volumes         []string   `yaml:"volumes"`
	Secrets         []string   `yaml:"secrets"`
	StopGracePeriod string     `yaml:"stop_grace_period"`
	DependsOn       map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// composeEnv is a service's environment, written as a mapping (merge keys allowed) or as a
// list of NAME=value.
type composeEnv map[string]string

func (e *composeEnv) UnmarshalYAML(n *yaml.Node) error {
	m := map[string]string{}
	switch n.Kind {
	case yaml.MappingNode:
		if err := n.Decode(&m); err != nil {
			return err
		}
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, item := range l {
			k, v, _ := strings.Cut(item, "=")
			m[k] = v
		}
	default:
		return fmt.Errorf("line %d: environment is neither a mapping nor a list", n.Line)
	}
	*e = m
	return nil
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", composePath, err)
	}
	if len(c.Services) == 0 {
		t.Fatalf("%s: no services", composePath)
	}
	return c
}

// svcNodes are the compose services that run svc as a cluster member.
func (c composeFile) svcNodes() []string {
	var out []string
	for name, s := range c.Services {
		if _, ok := s.Environment["SVC_CLUSTER_NAME"]; ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// hostOf is the host of host:port, of a URL, or of a DSN.
func hostOf(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		return u.Hostname()
	}
	h, _, _ := net.SplitHostPort(addr)
	return h
}

func portOf(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		return u.Port()
	}
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func TestCompose(t *testing.T) {
	c := loadCompose(t)
	nodes := c.svcNodes()
	if len(nodes) != nodesWanted {
		t.Errorf("%s: %d svc nodes (services with SVC_CLUSTER_NAME), want %d", composePath, len(nodes), nodesWanted)
	}
	cfgs := map[string]node.Config{}
	byEnv := settingsByEnv()
	script, err := os.ReadFile("compose/secrets.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, sec := range c.Secrets {
		f, ok := strings.CutPrefix(sec.File, "./secrets/")
		if !ok || !strings.Contains(string(script), f) {
			t.Errorf("secret %s: file %q is not one secrets.sh writes into ./secrets", name, sec.File)
		}
	}
	for _, name := range nodes {
		s := c.Services[name]
		where := composePath + ": " + name
		cfg, err := parseEnv(t, s.Environment)
		if err != nil {
			t.Errorf("%s: svc refuses its environment: %v", where, err)
			continue
		}
		cfgs[name] = cfg

		// Secrets come from files, each one a compose secret the service mounts.
		for k, v := range s.Environment {
			if st, ok := byEnv[k]; ok && st.Secret() {
				t.Errorf("%s: %s is given in the environment; use %s_FILE and a compose secret", where, k, k)
			}
			if !strings.HasSuffix(k, "_FILE") {
				continue
			}
			secret, ok := strings.CutPrefix(v, "/run/secrets/")
			if _, declared := c.Secrets[secret]; !ok || !declared || !slices.Contains(s.Secrets, secret) {
				t.Errorf("%s: %s=%s is not a compose secret the service mounts", where, k, v)
			}
		}

		// Remoting: the service's own name, on a port it exposes to the network.
		if h := hostOf(cfg.ClusterAddr); h != name {
			t.Errorf("%s: SVC_CLUSTER_ADDR host %q, want the service name %q", where, h, name)
		}
		if !slices.Contains(s.Expose, portOf(cfg.ClusterAddr)) {
			t.Errorf("%s: remoting port %s is not in expose %v", where, portOf(cfg.ClusterAddr), s.Expose)
		}
		for _, e := range cfg.EtcdEndpoints {
			if _, ok := c.Services[hostOf(e)]; !ok {
				t.Errorf("%s: etcd endpoint %s is not a compose service", where, e)
			}
		}
		if _, ok := c.Services[hostOf(cfg.S3Endpoint)]; !ok {
			t.Errorf("%s: S3 endpoint %s is not a compose service", where, cfg.S3Endpoint)
		}
		// Every store and etcd is healthy before the node starts.
		for other := range c.Services {
			if slices.Contains(nodes, other) {
				continue
			}
			if d, ok := s.DependsOn[other]; !ok || d.Condition != "service_healthy" {
				t.Errorf("%s: does not wait for %s to be healthy (depends_on)", where, other)
			}
		}
		// The admin listener is reachable from outside the container.
		if h := hostOf(cfg.AdminAddr); h != "0.0.0.0" && h != "" {
			t.Errorf("%s: SVC_ADMIN_ADDR %s binds %s: unreachable outside the container", where, cfg.AdminAddr, h)
		}
		// The public URL is the host port published for the public listener.
		published := false
		for _, p := range s.Ports {
			parts := strings.Split(p, ":")
			if len(parts) >= 2 && parts[len(parts)-1] == portOf(cfg.Addr) && parts[len(parts)-2] == portOf(cfg.PublicURL) {
				published = true
			}
		}
		if !published {
			t.Errorf("%s: SVC_PUBLIC_URL %s is not the host port of %s in ports %v", where, cfg.PublicURL, cfg.Addr, s.Ports)
		}
		// Its own named volume at the data directory.
		vol := ""
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && parts[1] == cfg.DataDir {
				vol = parts[0]
			}
		}
		switch _, declared := c.Volumes[vol]; {
		case vol == "":
			t.Errorf("%s: no volume mounted at the data directory %s", where, cfg.DataDir)
		case !declared:
			t.Errorf("%s: data volume %q is not a named volume of the file", where, vol)
		}
		for _, other := range nodes {
			if other != name && slices.Contains(c.Services[other].Volumes, vol+":"+cfg.DataDir) {
				t.Errorf("%s: shares its data volume %s with %s", where, vol, other)
			}
		}
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil || grace <= cfg.ShutdownTimeout {
			t.Errorf("%s: stop_grace_period %q, want longer than the shutdown timeout %s", where, s.StopGracePeriod, cfg.ShutdownTimeout)
		}
		if s.Healthcheck == nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), "/readyz") {
			t.Errorf("%s: healthcheck does not ask /readyz", where)
		}
	}
	checkMembers(t, composePath, cfgs, "etcd")
	for name, s := range c.Services {
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("%s: %s has no healthcheck", composePath, name)
		}
	}
}

// ---- Kubernetes

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       yaml.Node         `yaml:"spec"`
	file       string
}

type statefulSetSpec struct {
	ServiceName string `yaml:"serviceName"`
	Replicas    int    `yaml:"replicas"`
	Selector    struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
			Containers                    []container `yaml:"containers"`
		} `yaml:"spec"`
	} `yaml:"template"`
	VolumeClaimTemplates []struct {
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	} `yaml:"volumeClaimTemplates"`
}

type container struct {
	Name  string `yaml:"name"`
	Image string `yaml:"image"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	StartupProbe   *probe `yaml:"startupProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string    `yaml:"path"`
		Port yaml.Node `yaml:"port"`
	} `yaml:"httpGet"`
}

type serviceSpec struct {
	ClusterIP                string            `yaml:"clusterIP"`
	PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
	Selector                 map[string]string `yaml:"selector"`
	Ports                    []struct {
		Name       string    `yaml:"name"`
		Port       int       `yaml:"port"`
		TargetPort yaml.Node `yaml:"targetPort"`
	} `yaml:"ports"`
}

type kustomization struct {
	Namespace string   `yaml:"namespace"`
	Resources []string `yaml:"resources"`
}

// loadK8s reads every document of every YAML file in k8s/ but the kustomization.
func loadK8s(t *testing.T) (objs []k8sObject, kust kustomization) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no YAML in %s: %v", k8sDir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "kustomization.yaml" {
			if err := yaml.Unmarshal(b, &kust); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			continue
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		for i := 0; ; i++ {
			var o k8sObject
			err := dec.Decode(&o)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			if o.Kind == "" && o.APIVersion == "" {
				continue // an empty document
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s, document %d: apiVersion, kind and metadata.name are all needed", f, i+1)
			}
			o.file = f
			objs = append(objs, o)
		}
	}
	return objs, kust
}

func find(objs []k8sObject, kind, name string) *k8sObject {
	for i := range objs {
		if objs[i].Kind == kind && (name == "" || objs[i].Metadata.Name == name) {
			return &objs[i]
		}
	}
	return nil
}

func decodeSpec[T any](t *testing.T, o *k8sObject) T {
	t.Helper()
	var v T
	if err := o.Spec.Decode(&v); err != nil {
		t.Fatalf("%s: %s %s: spec: %v", o.file, o.Kind, o.Metadata.Name, err)
	}
	return v
}

// containerPort resolves a probe's or Service's port (a number or a container port's name).
func containerPort(c *container, n yaml.Node) int {
	if p, err := strconv.Atoi(n.Value); err == nil {
		return p
	}
	for _, p := range c.Ports {
		if p.Name == n.Value {
			return p.ContainerPort
		}
	}
	return 0
}

// expandK8s is Kubernetes' $(VAR) expansion of an env value: VAR must be defined earlier.
func expandK8s(v string, defined map[string]string) (string, error) {
	var err error
	out := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(v, func(m string) string {
		name := m[2 : len(m)-1]
		val, ok := defined[name]
		if !ok {
			err = fmt.Errorf("$(%s) is not defined before it is used", name)
		}
		return val
	})
	return out, err
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKubernetes(t *testing.T) {
	objs, kust := loadK8s(t)

	// The kustomization lists every manifest, and only those.
	var files []string
	for _, o := range objs {
		if f := filepath.Base(o.file); !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	res := slices.Clone(kust.Resources)
	slices.Sort(res)
	if !slices.Equal(files, res) {
		t.Errorf("kustomization.yaml resources %v, want the manifests %v", res, files)
	}
	ns := kust.Namespace
	if ns == "" {
		ns = "default"
	}

	sts := find(objs, "StatefulSet", "")
	if sts == nil {
		t.Fatal("no StatefulSet")
	}
	spec := decodeSpec[statefulSetSpec](t, sts)
	if spec.Replicas != nodesWanted {
		t.Errorf("StatefulSet replicas %d, want %d", spec.Replicas, nodesWanted)
	}
	podLabels := spec.Template.Metadata.Labels
	if !subset(spec.Selector.MatchLabels, podLabels) {
		t.Errorf("StatefulSet selector %v does not match its pods' labels %v", spec.Selector.MatchLabels, podLabels)
	}
	if len(spec.Template.Spec.Containers) != 1 {
		t.Fatalf("StatefulSet: %d containers, want 1", len(spec.Template.Spec.Containers))
	}
	c := &spec.Template.Spec.Containers[0]

	// What envFrom brings: the ConfigMap's and the Secret's keys.
	shared := map[string]string{}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm := find(objs, "ConfigMap", ef.ConfigMapRef.Name)
			if cm == nil {
				t.Fatalf("envFrom: no ConfigMap %s", ef.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				shared[k] = v
			}
		case ef.SecretRef != nil:
			s := find(objs, "Secret", ef.SecretRef.Name)
			if s == nil {
				t.Fatalf("envFrom: no Secret %s", ef.SecretRef.Name)
			}
			for k, v := range s.StringData {
				shared[k] = v
				if !strings.Contains(v, "CHANGE-ME") {
					t.Errorf("Secret %s: %s is not marked as a placeholder (CHANGE-ME)", s.Metadata.Name, k)
				}
			}
			for k := range s.Data {
				shared[k] = "c2FtcGxl"
			}
		}
	}

	// Each pod's environment, as the kubelet builds it.
	cfgs := map[string]node.Config{}
	for i := range spec.Replicas {
		pod := fmt.Sprintf("%s-%d", sts.Metadata.Name, i)
		env := map[string]string{}
		for k, v := range shared {
			env[k] = v
		}
		defined := map[string]string{}
		for _, e := range c.Env {
			v := e.Value
			if e.ValueFrom != nil {
				if e.ValueFrom.FieldRef == nil {
					t.Fatalf("env %s: only fieldRef is understood here", e.Name)
				}
				switch e.ValueFrom.FieldRef.FieldPath {
				case "metadata.name":
					v = pod
				case "metadata.namespace":
					v = ns
				default:
					t.Fatalf("env %s: fieldRef %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
				}
			}
			v, err := expandK8s(v, defined)
			if err != nil {
				t.Errorf("env %s: %v", e.Name, err)
			}
			defined[e.Name], env[e.Name] = v, v
		}
		cfg, err := parseEnv(t, env)
		if err != nil {
			t.Errorf("pod %s: svc refuses its environment: %v", pod, err)
			continue
		}
		cfgs[pod] = cfg
		want := fmt.Sprintf("%s.%s.%s.svc.cluster.local", pod, spec.ServiceName, ns)
		if h := hostOf(cfg.ClusterAddr); h != want {
			t.Errorf("pod %s: SVC_CLUSTER_ADDR host %q, want its stable name %q", pod, h, want)
		}
		if len(cfg.EtcdEndpoints) == 0 {
			t.Errorf("pod %s: no etcd endpoints", pod)
		}
		if h := hostOf(cfg.AdminAddr); h != "0.0.0.0" && h != "" {
			t.Errorf("pod %s: SVC_ADMIN_ADDR %s is unreachable from outside the pod", pod, cfg.AdminAddr)
		}
	}
	checkMembers(t, "StatefulSet "+sts.Metadata.Name, cfgs, "etcd")
	cfg, ok := cfgs[sts.Metadata.Name+"-0"]
	if !ok {
		t.FailNow()
	}
	remotingPort, _ := strconv.Atoi(portOf(cfg.ClusterAddr))
	httpPort, _ := strconv.Atoi(portOf(cfg.Addr))

	// Its data directory is a volumeClaimTemplate.
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.MountPath != cfg.DataDir {
			continue
		}
		for _, v := range spec.VolumeClaimTemplates {
			mounted = mounted || v.Metadata.Name == m.Name
		}
	}
	if !mounted {
		t.Errorf("StatefulSet: no volumeClaimTemplate mounted at the data directory %s", cfg.DataDir)
	}

	for _, p := range []struct {
		name string
		pr   *probe
		path string
	}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}} {
		switch {
		case p.pr == nil || p.pr.HTTPGet == nil:
			t.Errorf("container %s: no HTTP %s", c.Name, p.name)
		case p.pr.HTTPGet.Path != p.path:
			t.Errorf("container %s: %s asks %s, want %s", c.Name, p.name, p.pr.HTTPGet.Path, p.path)
		case containerPort(c, p.pr.HTTPGet.Port) != httpPort:
			t.Errorf("container %s: %s port %q is not the public listener's %d", c.Name, p.name, p.pr.HTTPGet.Port.Value, httpPort)
		}
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" {
			t.Errorf("container %s: no %s request", c.Name, r)
		}
	}
	if g := time.Duration(spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second; g <= cfg.ShutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds %v, want longer than the shutdown timeout %s", g, cfg.ShutdownTimeout)
	}

	// The headless Service the pods' names come from exposes remoting; another Service serves HTTP.
	headless := find(objs, "Service", spec.ServiceName)
	if headless == nil {
		t.Fatalf("no Service %s (the StatefulSet's serviceName)", spec.ServiceName)
	}
	hs := decodeSpec[serviceSpec](t, headless)
	if hs.ClusterIP != "None" {
		t.Errorf("Service %s: clusterIP %q, want None (headless)", spec.ServiceName, hs.ClusterIP)
	}
	if !hs.PublishNotReadyAddresses {
		t.Errorf("Service %s: publishNotReadyAddresses is off: members could not resolve each other while starting", spec.ServiceName)
	}
	servesPort := func(s serviceSpec, port int) bool {
		for _, p := range s.Ports {
			tp := containerPort(c, p.TargetPort)
			if p.TargetPort.Value == "" {
				tp = p.Port
			}
			if tp == port {
				return true
			}
		}
		return false
	}
	if !subset(hs.Selector, podLabels) || !servesPort(hs, remotingPort) {
		t.Errorf("Service %s does not expose the pods' remoting port %d", spec.ServiceName, remotingPort)
	}
	public := false
	for _, o := range objs {
		if o.Kind != "Service" || o.Metadata.Name == spec.ServiceName {
			continue
		}
		s := decodeSpec[serviceSpec](t, &o)
		public = public || (s.ClusterIP != "None" && subset(s.Selector, podLabels) && servesPort(s, httpPort))
	}
	if !public {
		t.Errorf("no Service serves the pods' public port %d", httpPort)
	}
}

// ---- systemd

// unitFile is a systemd unit: section → key → values in order.
type unitFile map[string]map[string][]string

func loadUnit(t *testing.T) unitFile {
	t.Helper()
	f, err := os.Open(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", unitPath, n, line)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u
}

func (u unitFile) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// loadEnvFile reads NAME=value lines as systemd's EnvironmentFile= does (no quoting used here).
func loadEnvFile(t *testing.T, path string) []kv {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []kv
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(k, " \t") {
			t.Fatalf("%s:%d: not NAME=value: %q", path, n, line)
		}
		out = append(out, kv{k, v})
	}
	return out
}

// systemdSeconds reads a systemd time span of the forms used here: "45", "45s", "1min 30s".
func systemdSeconds(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(strings.ReplaceAll(strings.ReplaceAll(s, " ", ""), "min", "m"))
}

// unitEnvironment is the Environment= assignments of the unit.
func unitEnvironment(u unitFile) []kv {
	var out []kv
	for _, e := range u["Service"]["Environment"] {
		for _, f := range strings.Fields(e) {
			k, v, _ := strings.Cut(strings.Trim(f, `"`), "=")
			out = append(out, kv{k, v})
		}
	}
	return out
}

func TestSystemd(t *testing.T) {
	u := loadUnit(t)
	example := loadEnvFile(t, envExample)
	env := map[string]string{}
	for _, e := range unitEnvironment(u) {
		env[e.name] = e.value
	}
	for _, e := range example { // EnvironmentFile= wins over Environment=
		env[e.name] = e.value
		if e.name == "SVC_DATA_DIR" {
			t.Errorf("%s sets SVC_DATA_DIR: the unit's StateDirectory= owns the data directory", envExample)
		}
		if s, ok := settingsByEnv()[e.name]; ok && s.Secret() && !strings.Contains(e.value, "CHANGE-ME") {
			t.Errorf("%s: secret %s is not marked as a placeholder (CHANGE-ME)", envExample, e.name)
		}
	}
	cfg, err := parseEnv(t, env)
	if err != nil {
		t.Fatalf("svc refuses the unit's environment with %s: %v", envExample, err)
	}
	if !cfg.Clustered() || cfg.ClusterProvider != "static" || len(cfg.ClusterPeers) != nodesWanted {
		t.Errorf("%s: want a member of a static cluster of %d, got name %q, provider %q, peers %v",
			envExample, nodesWanted, cfg.ClusterName, cfg.ClusterProvider, cfg.ClusterPeers)
	}

	stop, stopErr := systemdSeconds(u.get("Service", "TimeoutStopSec"))
	nofile, _ := strconv.Atoi(u.get("Service", "LimitNOFILE"))
	exec := strings.Fields(u.get("Service", "ExecStart"))
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"[Unit] Wants= and After= network-online.target", strings.Contains(u.get("Unit", "Wants"), "network-online.target") &&
			strings.Contains(u.get("Unit", "After"), "network-online.target")},
		{"[Service] User= a dedicated user, not root", u.get("Service", "User") != "" && u.get("Service", "User") != "root"},
		{"[Service] EnvironmentFile=/etc/svc/svc.env", u.get("Service", "EnvironmentFile") == "/etc/svc/svc.env"},
		{"[Service] StateDirectory= holding the data directory (SVC_DATA_DIR=/var/lib/<StateDirectory>)",
			u.get("Service", "StateDirectory") != "" && cfg.DataDir == "/var/lib/"+u.get("Service", "StateDirectory")},
		{"[Service] ExecStart= an absolute path running serve", len(exec) >= 2 && filepath.IsAbs(exec[0]) && exec[1] == "serve"},
		{"[Service] Restart=always", u.get("Service", "Restart") == "always"},
		{"[Service] TimeoutStopSec= longer than the shutdown timeout", stopErr == nil && stop > cfg.ShutdownTimeout},
		{"[Service] LimitNOFILE= at least 65536", nofile >= 65536},
		{"[Install] WantedBy=multi-user.target", u.get("Install", "WantedBy") == "multi-user.target"},
	} {
		if !c.ok {
			t.Errorf("%s: want %s", unitPath, c.what)
		}
	}
}

// ---- every variable any manifest sets

// dockerfileEnv reads the ENV instructions (NAME=value forms) of the image's Dockerfile.
func dockerfileEnv(t *testing.T) []kv {
	t.Helper()
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var out []kv
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ENV ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, "=")
			out = append(out, kv{k, v})
		}
	}
	return out
}

func TestVariablesAreSettings(t *testing.T) {
	type source struct {
		where string
		vars  []kv
	}
	var sources []source
	c := loadCompose(t)
	for name, s := range c.Services {
		var vars []kv
		for k, v := range s.Environment {
			vars = append(vars, kv{k, v})
		}
		if s.EnvFile != nil {
			t.Errorf("%s: %s: env_file is not checked here; set variables in environment", composePath, name)
		}
		sources = append(sources, source{composePath + ": " + name, vars})
	}
	objs, _ := loadK8s(t)
	for _, o := range objs {
		var vars []kv
		for k, v := range o.Data {
			vars = append(vars, kv{k, v})
		}
		for k, v := range o.StringData {
			vars = append(vars, kv{k, v})
		}
		if o.Kind == "StatefulSet" {
			for _, c := range decodeSpec[statefulSetSpec](t, &o).Template.Spec.Containers {
				for _, e := range c.Env {
					vars = append(vars, kv{e.Name, e.Value})
				}
			}
		}
		sources = append(sources, source{o.file + ": " + o.Kind + " " + o.Metadata.Name, vars})
	}
	u := loadUnit(t)
	sources = append(sources,
		source{unitPath, unitEnvironment(u)},
		source{envExample, loadEnvFile(t, envExample)},
		source{dockerfile, dockerfileEnv(t)})

	total := 0
	for _, s := range sources {
		for _, v := range s.vars {
			if !strings.HasPrefix(v.name, "SVC_") {
				continue
			}
			total++
			if err := knownVar(v.name); err != nil {
				t.Errorf("%s: %v", s.where, err)
			}
		}
	}
	if total < 50 {
		t.Errorf("only %d SVC_ variables found in the manifests: is a parser missing them?", total)
	}
}

// ---- README

// TestReadmeNamesClusterSettings keeps deploy/README.md's table of cluster settings whole.
func TestReadmeNamesClusterSettings(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range node.Settings {
		if strings.HasPrefix(s.Env, "SVC_CLUSTER_") || strings.HasPrefix(s.Env, "SVC_ETCD_") {
			if !strings.Contains(string(b), "| `"+s.Env+"` | `--"+s.Flag+"` |") {
				t.Errorf("%s: the cluster settings table has no row for %s (--%s)", readmePath, s.Env, s.Flag)
			}
		}
	}
}

// chTable is a ClickHouse table as a CREATE statement gives it.
type chTable struct {
	columns     []string // "name Type", in order
	partition   string
	order       string
	replacing   bool
	single      bool // kept on one server by svc, left out of the cluster layouts
	sourceFiles []string
}

var (
	createRE = regexp.MustCompile(`(?s)CREATE TABLE IF NOT EXISTS ([\w.]+)(?: ON CLUSTER \w+)? \((.*?)\n\) ENGINE = (\w+)\([^)]*\)\s*PARTITION BY (.*?)\s*ORDER BY \((.*?)\);`)
	alterRE  = regexp.MustCompile(`(?m)^ALTER TABLE (\w+) ADD COLUMN (\w+) (.+?)(?: AFTER (\w+))?;`)
	// singleRE: a table with no partition key, which svc keeps on one server only (the journey
	// rollups; deploy/README.md says why the cluster layouts leave them out).
	singleRE = regexp.MustCompile(`CREATE TABLE IF NOT EXISTS (\w+) \([^;]*?\n\) ENGINE = \w+\([^)]*\)\s*ORDER BY \([^)]*\);`)
	distRE   = regexp.MustCompile(`CREATE TABLE IF NOT EXISTS ([\w.]+) ON CLUSTER (\w+) AS ([\w.]+)\s+ENGINE = Distributed\((\w+), (\w+), (\w+), [^;]+\);`)
)

func columnList(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(l), ",")
		if l == "" || strings.HasPrefix(l, "--") {
			continue
		}
		name, typ, _ := strings.Cut(l, " ")
		out = append(out, name+" "+strings.ReplaceAll(typ, " ", ""))
	}
	return out
}

// migratedTables replays the Up parts of svc's ClickHouse migrations: the tables they create
// and the columns later ones add (at their AFTER position).
func migratedTables(t *testing.T) map[string]*chTable {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(migrations, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations in %s: %v", migrations, err)
	}
	slices.Sort(files)
	tables := map[string]*chTable{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		up, _, _ := strings.Cut(string(b), "-- +goose Down")
		_, up, _ = strings.Cut(up, "-- +goose Up")
		for _, m := range createRE.FindAllStringSubmatch(up, -1) {
			tables[m[1]] = &chTable{columns: columnList(m[2]), replacing: m[3] == "ReplacingMergeTree",
				partition: m[4], order: m[5], sourceFiles: []string{filepath.Base(f)}}
		}
		for _, m := range alterRE.FindAllStringSubmatch(up, -1) {
			tb := tables[m[1]]
			if tb == nil {
				t.Fatalf("%s: ALTER of %s, which no earlier migration creates", f, m[1])
			}
			col := m[2] + " " + strings.ReplaceAll(m[3], " ", "")
			at := len(tb.columns)
			if m[4] != "" {
				at = slices.IndexFunc(tb.columns, func(c string) bool { return strings.HasPrefix(c, m[4]+" ") }) + 1
				if at == 0 {
					t.Fatalf("%s: %s ADD COLUMN %s AFTER %s, which it does not have", f, m[1], m[2], m[4])
				}
			}
			tb.columns = slices.Insert(tb.columns, at, col)
			if !slices.Contains(tb.sourceFiles, filepath.Base(f)) {
				tb.sourceFiles = append(tb.sourceFiles, filepath.Base(f))
			}
		}
		for _, m := range singleRE.FindAllStringSubmatch(up, -1) {
			tables[m[1]] = &chTable{single: true, sourceFiles: []string{filepath.Base(f)}}
		}
		if n := strings.Count(up, "CREATE TABLE"); n != len(createRE.FindAllString(up, -1))+len(singleRE.FindAllString(up, -1)) {
			t.Fatalf("%s: a CREATE TABLE this test does not understand; teach it, and deploy/README.md's ClickHouse DDL", f)
		}
	}
	return tables
}

// TestClickHouseClusterDDL checks that README's ON CLUSTER tables are svc's tables: for each
// table the migrations create, a ReplicatedReplacingMergeTree <table>_local with the same
// columns in the same order, partition and sorting key, and a Distributed <table> over it.
func TestClickHouseClusterDDL(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	local := map[string]*chTable{}
	for _, m := range createRE.FindAllStringSubmatch(readme, -1) {
		if m[3] != "ReplicatedReplacingMergeTree" {
			t.Errorf("%s: %s has engine %s, want ReplicatedReplacingMergeTree", readmePath, m[1], m[3])
		}
		local[strings.TrimPrefix(m[1], "svc.")] = &chTable{columns: columnList(m[2]), partition: m[4], order: m[5]}
	}
	dist := map[string]string{} // Distributed table → its local table
	for _, m := range distRE.FindAllStringSubmatch(readme, -1) {
		if m[2] != m[4] || strings.TrimPrefix(m[3], "svc.") != m[6] || m[5] != "svc" {
			t.Errorf("%s: %s: cluster, database or local table disagree: %q", readmePath, m[1], m[0])
		}
		dist[strings.TrimPrefix(m[1], "svc.")] = m[6]
	}
	for name, want := range migratedTables(t) {
		if want.single {
			if !strings.Contains(readme, "`"+name+"`") {
				t.Errorf("%s: svc's single-server table %s (%v) is not named where the layouts say what they leave out", readmePath, name, want.sourceFiles)
			}
			continue
		}
		if !want.replacing {
			t.Errorf("migration creates %s with an engine other than ReplacingMergeTree: update README's engine mapping", name)
		}
		got := local[name+"_local"]
		if got == nil {
			t.Errorf("%s: no CREATE TABLE svc.%s_local ON CLUSTER for svc's table %s (%v)", readmePath, name, name, want.sourceFiles)
			continue
		}
		if !slices.Equal(got.columns, want.columns) {
			t.Errorf("%s: %s_local columns differ from what migrations %v make:\n got %v\nwant %v", readmePath, name, want.sourceFiles, got.columns, want.columns)
		}
		if got.partition != want.partition || got.order != want.order {
			t.Errorf("%s: %s_local PARTITION BY %s ORDER BY (%s), migrations have PARTITION BY %s ORDER BY (%s)",
				readmePath, name, got.partition, got.order, want.partition, want.order)
		}
		if dist[name] != name+"_local" {
			t.Errorf("%s: no Distributed svc.%s over svc.%s_local", readmePath, name, name)
		}
	}
}
