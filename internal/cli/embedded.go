package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/config"
)

// errPrivateStore: a command that acts on the data of the servers was
// configured with a store that would exist only in its own process.
var errPrivateStore = errors.New("no shared store to act on")

// work describes a command that acts on the data of the servers: which
// stores it needs, and what does the same on a running server instead.
type work struct {
	cmd   string // the command line, e.g. "seckill verify"
	redis bool   // it needs the servers' Redis
	// instead says what to do on the running server: admin API calls
	// (curl lines, {base} and {token} filled in) or a sentence.
	instead []string
	curl    bool // instead holds curl lines
}

// privateStores names the stores of cfg that only this process would see:
// the in-process Redis (no redis.addrs) always, and SQLite when it is in
// memory. A SQLite file (embedded.sqlite_path) is shared by every process
// of the host that names it, so it counts as the servers' data.
func privateStores(cfg *config.Config, redis bool) []string {
	var private []string
	if redis && cfg.EmbeddedRedis() {
		private = append(private, "redis.addrs (SECKILL_REDIS_ADDRS) is empty: an in-process Redis")
	}
	if cfg.EmbeddedSQL() && cfg.Embedded.SQLitePath == "" {
		private = append(private, "mysql.dsn (SECKILL_MYSQL_DSN) and embedded.sqlite_path are empty: an in-memory SQLite database")
	}
	return private
}

// refusePrivate returns a usage error wrapping errPrivateStore when w
// would run on a store only its own process sees: it would report on data
// no server has, or change data no server reads. The error says how to
// reach the servers' stores, and what does the same on a running server.
func refusePrivate(cfg *config.Config, w work) error {
	private := privateStores(cfg, w.redis)
	if len(private) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("it acts on the data of the servers, and this configuration would give it stores of its own, gone when it exits, that no server sees:\n")
	for _, p := range private {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	vars := "SECKILL_MYSQL_DSN='user:pass@tcp(host:3306)/seckill'"
	if w.redis {
		vars = "SECKILL_REDIS_ADDRS=host:6379 " + vars
	}
	fmt.Fprintf(&b, "Point it at the Redis and MySQL the servers use (or give --config a file that names them):\n  %s %s ...\n", vars, w.cmd)
	if w.curl {
		b.WriteString("Or call the admin API of the running server (the token is admin.token, or in embedded mode the admin_token its EMBEDDED MODE warning logged):\n")
		base := serverBase(cfg.HTTP.Addr)
		for _, line := range w.instead {
			line = strings.ReplaceAll(line, "{base}", base)
			line = strings.ReplaceAll(line, "{token}", `-H "Authorization: Bearer $SECKILL_ADMIN_TOKEN"`)
			fmt.Fprintf(&b, "  %s\n", line)
		}
	} else {
		for _, line := range w.instead {
			fmt.Fprintf(&b, "%s\n", line)
		}
	}
	return usageError{fmt.Errorf("%s: %w: %s", strings.TrimPrefix(w.cmd, "seckill "), errPrivateStore, strings.TrimSuffix(b.String(), "\n"))}
}

// serverBase is the address a client on this host reaches a server
// listening on addr (http.addr) at: a wildcard host is localhost.
func serverBase(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "localhost:8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// seedWork is seed's work: one POST /admin/skus per SKU.
func seedWork(specs []catalog.Spec) work {
	w := work{cmd: "seckill seed", redis: true, curl: true}
	for i, s := range specs {
		if i == 2 {
			w.instead = append(w.instead, fmt.Sprintf("# ... one call per SKU, %d in all", len(specs)))
			break
		}
		body, _ := json.Marshal(s)
		w.instead = append(w.instead, "curl -s {base}/admin/skus {token} -H 'Content-Type: application/json' -d '"+
			strings.ReplaceAll(string(body), "'", `'\''`)+"'")
	}
	return w
}

// verifyWork is verify's work: the audit of each SKU.
func verifyWork(skus []uint) work {
	w := work{cmd: "seckill verify", redis: true, curl: true}
	if len(skus) == 0 {
		w.instead = []string{
			"curl -s {base}/admin/skus {token}                # the SKUs, by id",
			"curl -s {base}/admin/skus/ID/audit {token}       # for each ID: \"consistent\"",
		}
	}
	for _, id := range skus {
		w.instead = append(w.instead, fmt.Sprintf("curl -s {base}/admin/skus/%d/audit {token}", id))
	}
	return w
}

// queueWork is the work of `seckill queue <sub>` on SKU sku: the admin API
// call that does the same.
func queueWork(sub string, sku uint, n, offset int, task string) work {
	var call string
	switch sub {
	case "stats":
		call = fmt.Sprintf("curl -s '{base}/admin/skus/%d/queue?n=%d' {token}", sku, n)
	case "dead":
		call = fmt.Sprintf("curl -s '{base}/admin/skus/%d/dead?offset=%d&n=%d' {token}", sku, offset, n)
	case "requeue":
		call = fmt.Sprintf("curl -s -X POST {base}/admin/skus/%d/dead/%s/requeue {token}", sku, task)
	case "drop":
		call = fmt.Sprintf("curl -s -X DELETE {base}/admin/skus/%d/dead/%s {token}", sku, task)
	}
	return work{cmd: "seckill queue " + sub, redis: true, curl: true, instead: []string{call}}
}

// workerWork is the work of a process that only drains the queues.
var workerWork = work{cmd: "seckill worker", redis: true, instead: []string{
	"In embedded mode serve runs its own workers: no worker process is needed.",
}}

// migrateWork is migrate's work: it needs only the SQL store.
var migrateWork = work{cmd: "seckill migrate", instead: []string{
	"An in-memory database needs no migrate: serve applies the migrations to its own at start.",
}}
