package testsvc

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
)

// Replicated are the arguments of every replicated private redis-server:
// a full resynchronisation starts at once rather than after the default 5s
// wait for more replicas.
var Replicated = []string{"--repl-diskless-sync-delay", "0"}

// SentinelSet is a private primary watched by three private Sentinels.
type SentinelSet struct {
	t       testing.TB
	name    string
	all     []*RedisServer
	clients []*redis.SentinelClient
}

// StartSentinelSet starts three Sentinels on the primary at primary under
// name and waits until each knows the other two and the replicas it must
// see.
func StartSentinelSet(t testing.TB, name, primary string, replicas int) *SentinelSet {
	t.Helper()
	set := &SentinelSet{t: t, name: name}
	for range 3 {
		s := StartSentinel(t, name, primary)
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		set.all, set.clients = append(set.all, s), append(set.clients, c)
	}
	deadline := time.Now().Add(20 * time.Second)
	for i, s := range set.all {
		for {
			m, err := set.clients[i].Master(context.Background(), name).Result()
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
func (set *SentinelSet) Addrs() string { return JoinAddrs(set.all) }

// Name is the master name the Sentinels watch.
func (set *SentinelSet) Name() string { return set.name }

// JoinAddrs joins the addresses of servers with commas.
func JoinAddrs[S interface{ Addr() string }](servers []S) string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	return strings.Join(out, ",")
}

// WaitMaster waits until every Sentinel names addr as the primary and
// returns when the last did.
func (set *SentinelSet) WaitMaster(addr string, limit time.Duration) time.Time {
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

// Master is the primary's address as the first Sentinel that answers names
// it, "" when none does.
func (set *SentinelSet) Master() string {
	for _, c := range set.clients {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, err := c.GetMasterAddrByName(ctx, set.name).Result()
		cancel()
		if err == nil && len(got) == 2 {
			return got[0] + ":" + got[1]
		}
	}
	return ""
}

// ReplicaCount returns how many replicas are online on the server c reaches
// (INFO replication), -1 when it does not answer.
func ReplicaCount(c *redis.Client) int {
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

// WaitReplicas waits until the server c reaches has n replicas online.
func WaitReplicas(t testing.TB, c *redis.Client, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for ReplicaCount(c) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d replicas online after %s", c.Options().Addr, n, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RedisCluster is a private Redis Cluster of three masters with one replica
// each.
type RedisCluster struct {
	t     testing.TB
	Nodes []*RedisServer

	mu      sync.Mutex
	clients map[string]*redis.Client
}

// StartRedisCluster starts six cluster-mode redis-servers (node timeout
// 1s), makes a cluster of them with redis-cli (three masters, each with a
// replica), and waits until every node says the cluster is ok and every
// master has its replica online.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		Missing(t, "redis-cli not found: %v", err)
	}
	c := &RedisCluster{t: t, clients: map[string]*redis.Client{}}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-node-timeout", "1000"}, Replicated...)
	for range 6 {
		c.Nodes = append(c.Nodes, StartRedisServer(t, args...))
	}
	create := []string{"--cluster", "create"}
	create = append(create, strings.Split(c.Addrs(), ",")...)
	create = append(create, "--cluster-replicas", "1", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ready in 20s:\n%s", c.Describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

// Addrs are the nodes' addresses, comma-separated.
func (c *RedisCluster) Addrs() string { return JoinAddrs(c.Nodes) }

// Client returns a client of the node at addr, closed when the test ends.
func (c *RedisCluster) Client(addr string) *redis.Client {
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

// Node is the server at addr.
func (c *RedisCluster) Node(addr string) *RedisServer {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	c.t.Fatalf("no node at %s", addr)
	return nil
}

// ClusterNode is one line of CLUSTER NODES.
type ClusterNode struct {
	ID, Addr string
	Master   string // the master's id for a replica, "" for a master
	Flags    string
}

// View is CLUSTER NODES as the node at addr sees it.
func (c *RedisCluster) View(addr string) ([]ClusterNode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	text, err := c.Client(addr).ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []ClusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := ClusterNode{ID: f[0], Addr: strings.Split(f[1], "@")[0], Flags: f[2]}
		if f[3] != "-" {
			n.Master = f[3]
		}
		out = append(out, n)
	}
	return out, nil
}

// Ready reports whether every node says the cluster is ok and each of the
// three masters has an online replica.
func (c *RedisCluster) Ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	masters := 0
	for _, n := range c.Nodes {
		info, err := c.Client(n.Addr()).ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		role, err := c.Client(n.Addr()).Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 {
			return false
		}
		if role[0] == "master" {
			masters++
			if ReplicaCount(c.Client(n.Addr())) < 1 {
				return false
			}
		}
	}
	return masters == 3
}

// MasterOf returns the address of the master that serves slot, as the node
// at addr sees it.
func (c *RedisCluster) MasterOf(addr string, slot int64) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	shards, err := c.Client(addr).ClusterShards(ctx).Result()
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

// ReplicaOf returns the address of the replica of the master at addr.
func (c *RedisCluster) ReplicaOf(addr string) string {
	c.t.Helper()
	nodes, err := c.View(addr)
	if err != nil {
		c.t.Fatalf("cluster nodes on %s: %v", addr, err)
	}
	var id string
	for _, n := range nodes {
		if n.Addr == addr {
			id = n.ID
		}
	}
	for _, n := range nodes {
		if id != "" && n.Master == id {
			return n.Addr
		}
	}
	c.t.Fatalf("master %s has no replica:\n%s", addr, c.Describe())
	return ""
}

// Describe is CLUSTER NODES of every node that answers, for a failure.
func (c *RedisCluster) Describe() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		text, err := c.Client(n.Addr()).ClusterNodes(ctx).Result()
		cancel()
		fmt.Fprintf(&b, "%s: %v\n%s\n", n.Addr(), err, text)
	}
	return b.String()
}
