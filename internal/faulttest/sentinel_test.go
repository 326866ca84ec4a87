package faulttest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
)

// replicated are the arguments of every replicated redis-server of the
// failover scenarios: a full resynchronisation starts at once rather than
// after the default 5s wait for more replicas.
var replicated = []string{"--repl-diskless-sync-delay", "0"}

// sentinelSet is a primary watched by three Sentinels.
type sentinelSet struct {
	t       *testing.T
	name    string
	all     []*testsvc.RedisServer
	clients []*redis.SentinelClient
}

// startSentinels starts three Sentinels on the primary at primary and
// waits until each knows the other two and the replicas it must see.
func startSentinels(t *testing.T, name, primary string, replicas int) *sentinelSet {
	t.Helper()
	set := &sentinelSet{t: t, name: name}
	for range 3 {
		s := testsvc.StartSentinel(t, name, primary)
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		set.all, set.clients = append(set.all, s), append(set.clients, c)
	}
	deadline := time.Now().Add(20 * time.Second)
	for i, s := range set.all {
		for {
			m, err := set.clients[i].Master(t.Context(), name).Result()
			if err == nil && m["num-other-sentinels"] == "2" && m["num-slaves"] == strconv.Itoa(replicas) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sentinel %s does not see its peers and replicas in 20s: %v %v", s.Addr(), m, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return set
}

// Addrs are the Sentinels' addresses, comma-separated.
func (set *sentinelSet) Addrs() string { return joinAddrs(set.all) }

// joinAddrs joins the addresses of servers with commas.
func joinAddrs[S interface{ Addr() string }](servers []S) string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	return strings.Join(out, ",")
}

// waitMaster waits until every Sentinel names addr as the primary and
// returns when the last did.
func (set *sentinelSet) waitMaster(addr string, limit time.Duration) time.Time {
	set.t.Helper()
	deadline := time.Now().Add(limit)
	for i, s := range set.all {
		for {
			got, err := set.clients[i].GetMasterAddrByName(context.Background(), set.name).Result()
			if err == nil && len(got) == 2 && got[0]+":"+got[1] == addr {
				break
			}
			if time.Now().After(deadline) {
				set.t.Fatalf("sentinel %s does not name %s the primary in %s: %v %v", s.Addr(), addr, limit, got, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return time.Now()
}

// replicaCount returns how many replicas are online on the server c reaches
// (INFO replication).
func replicaCount(c *redis.Client) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return -1
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") {
			n++
		}
	}
	return n
}

// waitReplicas waits until the server c reaches has n replicas online.
func waitReplicas(t *testing.T, c *redis.Client, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for replicaCount(c) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d replicas online after %s", c.Options().Addr, n, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cluster is a private Redis Cluster of three masters with one replica each.
type cluster struct {
	t     *testing.T
	nodes []*testsvc.RedisServer

	mu      sync.Mutex
	clients map[string]*redis.Client
}

// startCluster starts six cluster-mode redis-servers (node timeout 1s),
// makes a cluster of them with redis-cli (three masters, each with a
// replica), and waits until every node says the cluster is ok and every
// master has its replica online.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		testsvc.Missing(t, "redis-cli not found: %v", err)
	}
	c := &cluster{t: t, clients: map[string]*redis.Client{}}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-node-timeout", "1000"}, replicated...)
	for range 6 {
		c.nodes = append(c.nodes, testsvc.StartRedisServer(t, args...))
	}
	create := []string{"--cluster", "create"}
	create = append(create, strings.Split(c.Addrs(), ",")...)
	create = append(create, "--cluster-replicas", "1", "--cluster-yes")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !c.ready() {
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ready in 20s:\n%s", c.describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

// Addrs are the nodes' addresses, comma-separated.
func (c *cluster) Addrs() string { return joinAddrs(c.nodes) }

// client returns a client of the node at addr.
func (c *cluster) client(addr string) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[addr]; ok {
		return cl
	}
	cl := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	c.t.Cleanup(func() { _ = cl.Close() })
	c.clients[addr] = cl
	return cl
}

// node is the server at addr.
func (c *cluster) node(addr string) *testsvc.RedisServer {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	c.t.Fatalf("no node at %s", addr)
	return nil
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string // master: the master's id for a replica, "" for a master
	flags            string
}

// view is CLUSTER NODES as the node at addr sees it.
func (c *cluster) view(addr string) ([]clusterNode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	text, err := c.client(addr).ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := clusterNode{id: f[0], addr: strings.Split(f[1], "@")[0], flags: f[2]}
		if f[3] != "-" {
			n.master = f[3]
		}
		out = append(out, n)
	}
	return out, nil
}

// ready reports whether every node says the cluster is ok and each of the
// three masters has an online replica.
func (c *cluster) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	masters := 0
	for _, n := range c.nodes {
		info, err := c.client(n.Addr()).ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		role, err := c.client(n.Addr()).Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 {
			return false
		}
		if role[0] == "master" {
			masters++
			if replicaCount(c.client(n.Addr())) < 1 {
				return false
			}
		}
	}
	return masters == 3
}

// masterOf returns the address of the master that serves slot, as the node
// at addr sees it.
func (c *cluster) masterOf(addr string, slot int64) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	shards, err := c.client(addr).ClusterShards(ctx).Result()
	if err != nil {
		return "", err
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if r.Start > slot || slot > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" && n.Health == "online" {
					return fmt.Sprintf("%s:%d", n.IP, n.Port), nil
				}
			}
		}
	}
	return "", fmt.Errorf("slot %d has no master online", slot)
}

// replicaOf returns the address of the replica of the master at addr.
func (c *cluster) replicaOf(addr string) string {
	c.t.Helper()
	nodes, err := c.view(addr)
	if err != nil {
		c.t.Fatalf("cluster nodes on %s: %v", addr, err)
	}
	var id string
	for _, n := range nodes {
		if n.addr == addr {
			id = n.id
		}
	}
	for _, n := range nodes {
		if id != "" && n.master == id {
			return n.addr
		}
	}
	c.t.Fatalf("master %s has no replica:\n%s", addr, c.describe())
	return ""
}

// describe is CLUSTER NODES of every node that answers, for a failure.
func (c *cluster) describe() string {
	var b strings.Builder
	for _, n := range c.nodes {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		text, err := c.client(n.Addr()).ClusterNodes(ctx).Result()
		cancel()
		fmt.Fprintf(&b, "%s: %v\n%s\n", n.Addr(), err, text)
	}
	return b.String()
}
