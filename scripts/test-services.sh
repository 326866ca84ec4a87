#!/usr/bin/env bash
# Starts the real services the test suite talks to, unless they already run:
#   Redis standalone      127.0.0.1:6379
#   Redis Cluster         127.0.0.1:7000-7002 (3 masters), 7003-7005 (one replica each)
#   Redlock nodes         127.0.0.1:6381-6385 (5 independent servers)
#   Redis Sentinel set    127.0.0.1:6390 (primary), 6391 (its replica), and three
#                         Sentinels on 26390-26392 watching master "seckill-test"
#   MariaDB               127.0.0.1:3306 (root, empty password)
#   RabbitMQ              127.0.0.1:5672 (guest/guest; tests make vhosts of
#                         their own with rabbitmqctl)
# and the same kinds of Redis speaking TLS only, with a CA, a server and a
# client certificate that it makes with openssl in $STATE_DIR/tls:
#   Redis standalone      127.0.0.1:6400 (a client certificate is optional)
#   Redis Cluster         127.0.0.1:7100-7102 (3 masters, bus over TLS)
#   Redis Sentinel set    127.0.0.1:6410 (primary), 6411 (its replica), and three
#                         Sentinels on 26410-26412 watching master "seckill-tls"
# These ask for a client certificate signed by the CA, except where noted.
# Cluster nodes and Sentinels use short timeouts, so that a failover a test
# provokes completes within a few seconds. After one, the roles may be swapped
# (6391 the primary, 7003 a master): that is healthy, and left as it is.
# and stripe-mock, Stripe's own mock of its API (stateless: it answers every
# call with a fixture), for the tests of payment.mode stripe, as no Stripe
# account is reachable from a test:
#   stripe-mock           http://127.0.0.1:12111 (and https on 12112)
# Installs redis-server, mariadb-server, rabbitmq-server and openssl with
# apt-get when they are missing, and stripe-mock with `go install` at a pinned
# version; the Sentinels run as `redis-server <conf> --sentinel`. Also installs
# nats-server, which it does not start: the tests that need it start their own;
# and chromium with chromium-driver for the console's browser test.
# Safe to run twice. Prints the SECKILL_TEST_* variables for the tests at the end;
# `eval "$(scripts/test-services.sh --env)"` exports them into the current shell.
#
# --only LIST starts only the services named, comma-separated, of redis (the
# standalone :6379), redlock, cluster, sentinel, tls (the three TLS sets),
# mysql, rabbitmq and stripe, installs only what they need (no nats-server, no
# chromium), and prints only their variables: `scripts/test-services.sh --only redis,mysql`
# is what a load test needs.

# start_tls_services changes the port variables in a subshell, on purpose.
# shellcheck disable=SC2030,SC2031
set -euo pipefail

STATE_DIR=${SECKILL_SERVICES_DIR:-/tmp/seckill-test-services}
REDIS_PORT=6379
CLUSTER_PORTS=(7000 7001 7002)
CLUSTER_REPLICA_PORTS=(7003 7004 7005) # 7003 replicates 7000, 7004 7001, 7005 7002
CLUSTER_NODE_TIMEOUT=5000
REDLOCK_PORTS=(6381 6382 6383 6384 6385)
SENTINEL_MASTER=seckill-test
SENTINEL_DATA_PORTS=(6390 6391) # the first starts as the primary
SENTINEL_PORTS=(26390 26391 26392)
SENTINEL_QUORUM=2
MYSQL_PORT=3306
AMQP_PORT=5672
TLS_DIR=$STATE_DIR/tls
TLS_REDIS_PORT=6400
TLS_CLUSTER_PORTS=(7100 7101 7102)
TLS_SENTINEL_MASTER=seckill-tls
TLS_SENTINEL_DATA_PORTS=(6410 6411)
TLS_SENTINEL_PORTS=(26410 26411 26412)
STRIPE_MOCK_VERSION=v0.203.0
STRIPE_MOCK_PORT=12111
STRIPE_MOCK_HTTPS_PORT=12112
# TLS=1 makes the functions below speak TLS: redis-cli through rcli, and the
# servers that start_redis and start_sentinel start listen on TLS only.
TLS=0

quiet=0
only=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--env) quiet=1 ;;
	--only)
		only=${2:-}
		shift
		;;
	--only=*) only=${1#--only=} ;;
	*)
		echo "test-services: unknown argument $1 (want --env, --only LIST)" >&2
		exit 2
		;;
	esac
	shift
done
SERVICES=(redis redlock cluster sentinel tls mysql rabbitmq stripe)
if [[ -n $only ]]; then
	for name in ${only//,/ }; do
		if [[ " ${SERVICES[*]} " != *" $name "* ]]; then
			echo "test-services: --only $only: unknown service $name (want some of ${SERVICES[*]})" >&2
			exit 2
		fi
	done
fi
# wants <service>: whether this run starts it (every one without --only).
wants() { [[ -z $only || ",$only," == *",$1,"* ]]; }
log() { if [[ $quiet == 0 ]]; then echo "test-services: $*"; else echo "test-services: $*" >&2; fi; }

apt_updated=0
apt_install() {
	if [[ $apt_updated == 0 ]]; then
		log "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		apt_updated=1
	fi
	log "apt-get install $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

need_redis() {
	if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
		apt_install redis-server redis-tools
	fi
}

# need_chromium installs Debian's Chromium and its driver for the browser
# tests of the admin console (internal/app's console test drives it with
# chromedp); nothing is started.
need_chromium() {
	if ! command -v chromium >/dev/null; then
		apt_install chromium chromium-driver
	fi
}

need_nats() {
	if ! command -v nats-server >/dev/null && [[ ! -x /usr/sbin/nats-server ]]; then
		apt_install nats-server
	fi
}

# rcli runs redis-cli, over TLS with the client certificate when TLS=1.
rcli() {
	if [[ $TLS == 1 ]]; then
		redis-cli --tls --cacert "$TLS_DIR/ca.crt" --cert "$TLS_DIR/client.crt" --key "$TLS_DIR/client.key" "$@"
	else
		redis-cli "$@"
	fi
}

# listen_args <port>: the arguments of a server that listens on <port>.
listen_args() {
	if [[ $TLS == 1 ]]; then
		listen=(--port 0 --tls-port "$1" --tls-cert-file "$TLS_DIR/server.crt" --tls-key-file "$TLS_DIR/server.key"
			--tls-ca-cert-file "$TLS_DIR/ca.crt" --tls-replication yes --tls-cluster yes)
	else
		listen=(--port "$1")
	fi
}

redis_up() { rcli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

poll() { # poll <tries> <command...>: like wait_for, silently
	local tries=$1 i
	shift
	for ((i = 0; i < tries; i++)); do
		if "$@"; then return 0; fi
		sleep 0.2
	done
	return 1
}

wait_for() { # wait_for <what> <tries> <command...>
	local what=$1 tries=$2
	shift 2
	for ((i = 0; i < tries; i++)); do
		if "$@"; then return 0; fi
		sleep 0.2
	done
	echo "test-services: $what did not come up" >&2
	return 1
}

start_redis() { # start_redis <port> [extra args...]
	local port=$1
	shift
	if redis_up "$port"; then
		log "redis :$port already running"
		return
	fi
	local dir=$STATE_DIR/redis-$port listen
	mkdir -p "$dir"
	listen_args "$port"
	log "starting redis :$port"
	redis-server --daemonize yes --bind 127.0.0.1 "${listen[@]}" --save "" --appendonly no \
		--dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid" "$@" >&2
	wait_for "redis :$port" 50 redis_up "$port"
}

cluster_ok() { rcli -p "${CLUSTER_PORTS[0]}" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; }

# info_field <port> <section> <field>: one field of INFO, empty when the server does not answer.
info_field() {
	local info
	info=$(rcli -p "$1" info "$2" 2>/dev/null | tr -d '\r') || true
	sed -n "s/^$3://p" <<<"$info"
}

cluster_nodes() { rcli -p "${CLUSTER_PORTS[0]}" cluster nodes 2>/dev/null | tr -d '\r'; }

# Prints the id of every master that serves slots and has no replica in working order.
masters_without_replica() {
	cluster_nodes | awk '
		$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 { masters[$1] = 1 }
		$3 ~ /slave/ && $3 !~ /fail/ { replicated[$4] = 1 }
		END { for (m in masters) if (!(m in replicated)) print m }'
}

cluster_replicas_ok() {
	local port
	if [[ -n "$(masters_without_replica)" ]]; then return 1; fi
	for port in "${CLUSTER_PORTS[@]}" "${CLUSTER_REPLICA_PORTS[@]}"; do
		if [[ "$(info_field "$port" replication role)" == slave &&
			"$(info_field "$port" replication master_link_status)" != up ]]; then
			return 1
		fi
	done
}

start_cluster() {
	local port
	for port in "${CLUSTER_PORTS[@]}" "${CLUSTER_REPLICA_PORTS[@]}"; do
		start_redis "$port" --cluster-enabled yes --cluster-config-file "nodes-$port.conf" \
			--cluster-node-timeout "$CLUSTER_NODE_TIMEOUT" --cluster-replica-validity-factor 0
	done
	# Nodes started before the replicas existed waited 5s before declaring a node failed.
	for port in "${CLUSTER_PORTS[@]}" "${CLUSTER_REPLICA_PORTS[@]}"; do
		if [[ "$(rcli -p "$port" config get cluster-node-timeout | tr -d '\r' | sed -n 2p)" != "$CLUSTER_NODE_TIMEOUT" ]]; then
			log "redis :$port cluster-node-timeout $CLUSTER_NODE_TIMEOUT"
			rcli -p "$port" config set cluster-node-timeout "$CLUSTER_NODE_TIMEOUT" >/dev/null
			rcli -p "$port" config set cluster-replica-validity-factor 0 >/dev/null
		fi
	done
	if cluster_ok; then
		log "redis cluster already formed"
	else
		local known
		known=$(rcli -p "${CLUSTER_PORTS[0]}" cluster info | awk -F: '/cluster_known_nodes/ {print $2}' | tr -d '\r')
		if [[ "$known" != "1" ]] && poll 50 cluster_ok; then
			# A failover under way (a test stopped a master): the cluster recovers on its own.
			known=ok
		fi
		if [[ "$known" != "1" && "$known" != ok ]]; then
			# Half-formed cluster from an earlier run: reset every node and create it again.
			for port in "${CLUSTER_PORTS[@]}" "${CLUSTER_REPLICA_PORTS[@]}"; do
				rcli -p "$port" flushall >/dev/null 2>&1 || true
				rcli -p "$port" cluster reset hard >/dev/null
			done
		fi
		if [[ "$known" != ok ]]; then
			log "creating redis cluster on ${CLUSTER_PORTS[*]}"
			local nodes=()
			for port in "${CLUSTER_PORTS[@]}"; do nodes+=("127.0.0.1:$port"); done
			rcli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >&2
			wait_for "redis cluster" 150 cluster_ok
		fi
	fi
	add_cluster_replicas
}

# add_cluster_replicas gives every master of the cluster a replica from
# CLUSTER_REPLICA_PORTS, preferring the pairing 7000-7003, 7001-7004, 7002-7005.
add_cluster_replicas() {
	if [[ ${#CLUSTER_REPLICA_PORTS[@]} == 0 ]]; then return; fi
	if cluster_replicas_ok; then
		log "redis cluster replicas already attached"
		return
	fi
	local i port id line master wanted lacking
	for i in "${!CLUSTER_REPLICA_PORTS[@]}"; do
		port=${CLUSTER_REPLICA_PORTS[$i]}
		id=$(rcli -p "$port" cluster myid | tr -d '\r')
		line=$(cluster_nodes | awk -v id="$id" '$1 == id')
		if [[ -n "$line" ]] && ! awk '$3 ~ /master/ && NF < 9 { bad = 1 } END { exit !bad }' <<<"$line"; then
			continue # a member already: a replica, or a master after a failover
		fi
		lacking=$(masters_without_replica)
		if [[ -z "$lacking" ]]; then
			continue
		fi
		wanted=$(cluster_nodes | awk -v addr="127.0.0.1:${CLUSTER_PORTS[$i]}@" 'index($2, addr) == 1 { print $1 }')
		master=$(head -n1 <<<"$lacking")
		if grep -qx "$wanted" <<<"$lacking"; then master=$wanted; fi
		if [[ -n "$line" ]]; then
			# Met the cluster but never became a replica (an interrupted add-node).
			log "redis :$port replicates $master"
			rcli -p "$port" cluster replicate "$master" >/dev/null
			continue
		fi
		if [[ "$(rcli -p "$port" cluster info | awk -F: '/cluster_known_nodes/ {print $2}' | tr -d '\r')" != "1" ]]; then
			# Knows a cluster that no longer exists: forget it.
			rcli -p "$port" flushall >/dev/null 2>&1 || true
			rcli -p "$port" cluster reset hard >/dev/null
		fi
		log "adding redis :$port as a replica of $master"
		rcli --cluster add-node "127.0.0.1:$port" "127.0.0.1:${CLUSTER_PORTS[0]}" \
			--cluster-slave --cluster-master-id "$master" >&2
		# The next replica must see this one, or it would pick the same master.
		wait_for "redis :$port in the cluster" 150 node_is_replica "$id"
	done
	wait_for "redis cluster replicas" 150 cluster_replicas_ok
}

node_is_replica() { cluster_nodes | awk -v id="$1" '$1 == id && $3 ~ /slave/ { ok = 1 } END { exit !ok }'; }

sentinel_field() { # sentinel_field <sentinel port> <field of SENTINEL MASTER>
	local out
	out=$(rcli -p "$1" sentinel master "$SENTINEL_MASTER" 2>/dev/null | tr -d '\r') || true
	awk -v f="$2" 'prev == f { print; exit } { prev = $0 }' <<<"$out"
}

sentinel_master_port() { # the primary's port as the Sentinel on <port> knows it, or nothing
	local out
	out=$(rcli -p "$1" sentinel get-master-addr-by-name "$SENTINEL_MASTER" 2>/dev/null | tr -d '\r') || true
	if [[ "$(sed -n 1p <<<"$out")" == 127.0.0.1 ]]; then sed -n 2p <<<"$out"; fi
}

# sentinel_set_ok: every Sentinel answers, they agree on the primary, each sees
# the two others and the master as up, and the primary has an online replica.
sentinel_set_ok() {
	local port primary="" p
	for port in "${SENTINEL_PORTS[@]}"; do
		p=$(sentinel_master_port "$port")
		if [[ -z "$p" || (-n "$primary" && "$p" != "$primary") ]]; then return 1; fi
		primary=$p
		if [[ "$(sentinel_field "$port" num-other-sentinels)" != $((${#SENTINEL_PORTS[@]} - 1)) ]]; then return 1; fi
		if [[ "$(sentinel_field "$port" flags)" != master ]]; then return 1; fi
	done
	[[ "$(info_field "$primary" replication role)" == master ]] || return 1
	rcli -p "$primary" info replication 2>/dev/null | grep -q 'state=online'
}

# current_primary prints the port of the primary: the one the Sentinels name,
# else a data node that is a master with a replica, else a master, else the first.
current_primary() {
	local port p
	for port in "${SENTINEL_PORTS[@]}"; do
		p=$(sentinel_master_port "$port")
		if [[ -n "$p" ]]; then
			echo "$p"
			return
		fi
	done
	for port in "${SENTINEL_DATA_PORTS[@]}"; do
		if [[ "$(info_field "$port" replication role)" == master &&
			"$(info_field "$port" replication connected_slaves)" -gt 0 ]]; then
			echo "$port"
			return
		fi
	done
	for port in "${SENTINEL_DATA_PORTS[@]}"; do
		if [[ "$(info_field "$port" replication role)" == master ]]; then
			echo "$port"
			return
		fi
	done
	echo "${SENTINEL_DATA_PORTS[0]}"
}

start_sentinel() { # start_sentinel <port> <primary port>
	local port=$1 primary=$2
	if redis_up "$port"; then
		if [[ -z "$(sentinel_master_port "$port")" ]]; then
			log "sentinel :$port monitors $SENTINEL_MASTER at :$primary"
			rcli -p "$port" sentinel monitor "$SENTINEL_MASTER" 127.0.0.1 "$primary" "$SENTINEL_QUORUM" >/dev/null
			rcli -p "$port" sentinel set "$SENTINEL_MASTER" down-after-milliseconds 1000 \
				failover-timeout 5000 parallel-syncs 1 >/dev/null
		else
			log "sentinel :$port already running"
		fi
		return
	fi
	local dir=$STATE_DIR/sentinel-$port
	mkdir -p "$dir"
	# Sentinel rewrites its file with what it learns; a fresh one starts from the current primary.
	local listen
	listen_args "$port"
	# The listen arguments as lines of the file: --port 0 -> port 0.
	printf '%s %s\n' "${listen[@]}" | sed 's/^--//' >"$dir/sentinel.conf"
	cat >>"$dir/sentinel.conf" <<-EOF
		bind 127.0.0.1
		daemonize yes
		dir $dir
		logfile $dir/sentinel.log
		pidfile $dir/sentinel.pid
		sentinel monitor $SENTINEL_MASTER 127.0.0.1 $primary $SENTINEL_QUORUM
		sentinel down-after-milliseconds $SENTINEL_MASTER 1000
		sentinel failover-timeout $SENTINEL_MASTER 5000
		sentinel parallel-syncs $SENTINEL_MASTER 1
	EOF
	log "starting sentinel :$port"
	redis-server "$dir/sentinel.conf" --sentinel >&2
	wait_for "sentinel :$port" 50 redis_up "$port"
}

start_sentinel_set() {
	if sentinel_set_ok; then
		log "redis sentinel set already running ($SENTINEL_MASTER at :$(sentinel_master_port "${SENTINEL_PORTS[0]}"))"
		return
	fi
	local primary port
	primary=$(current_primary)
	for port in "${SENTINEL_DATA_PORTS[@]}"; do
		if [[ "$port" == "$primary" ]]; then
			start_redis "$port"
		else
			start_redis "$port" --replicaof 127.0.0.1 "$primary"
		fi
	done
	# Repair roles the Sentinels would not: a primary that follows another
	# node, a data node that is a master of its own.
	if [[ "$(info_field "$primary" replication role)" != master ]]; then
		log "redis :$primary becomes the primary"
		rcli -p "$primary" replicaof no one >/dev/null
	fi
	for port in "${SENTINEL_DATA_PORTS[@]}"; do
		if [[ "$port" != "$primary" && "$(info_field "$port" replication master_port)" != "$primary" ]]; then
			log "redis :$port replicates :$primary"
			rcli -p "$port" replicaof 127.0.0.1 "$primary" >/dev/null
		fi
	done
	for port in "${SENTINEL_PORTS[@]}"; do start_sentinel "$port" "$primary"; done
	wait_for "redis sentinel set" 150 sentinel_set_ok
}

# make_tls_certs makes, in TLS_DIR, a CA and two certificates it signs: the
# servers' (for 127.0.0.1 and localhost, also presented by a node to the
# nodes it connects to) and the clients'. Certificates already there that the
# CA verifies are kept, so the running servers go on trusting the clients.
make_tls_certs() {
	local d=$TLS_DIR
	if [[ -s $d/server.key && -s $d/client.key ]] &&
		openssl verify -CAfile "$d/ca.crt" "$d/server.crt" "$d/client.crt" >/dev/null 2>&1; then
		log "tls certificates already in $d"
		return
	fi
	if ! command -v openssl >/dev/null; then apt_install openssl; fi
	log "making a CA, a server and a client certificate in $d"
	mkdir -p "$d"
	ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
		-subj "/CN=seckill test CA" -keyout "$d/ca.key" -out "$d/ca.crt"
	sign_tls_cert server "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
	sign_tls_cert client "extendedKeyUsage=clientAuth"
	rm -f "$d"/*.csr "$d"/*.srl
}

sign_tls_cert() { # sign_tls_cert <name> <extensions>: TLS_DIR/<name>.key and .crt
	local d=$TLS_DIR
	ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=seckill test $1" \
		-keyout "$d/$1.key" -out "$d/$1.csr"
	ossl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 3650 \
		-extfile <(printf '%s\n' "$2") -out "$d/$1.crt"
}

ossl() { # openssl, whose chatter is shown only when it fails
	local out
	if ! out=$(openssl "$@" 2>&1); then
		echo "$out" >&2
		return 1
	fi
}

# start_tls_services starts the TLS deployments with the functions the
# plain ones use, in a subshell that points them at the TLS ports.
start_tls_services() {
	make_tls_certs
	(
		TLS=1
		start_redis "$TLS_REDIS_PORT" --tls-auth-clients optional
		CLUSTER_PORTS=("${TLS_CLUSTER_PORTS[@]}")
		CLUSTER_REPLICA_PORTS=()
		start_cluster
		SENTINEL_MASTER=$TLS_SENTINEL_MASTER
		SENTINEL_DATA_PORTS=("${TLS_SENTINEL_DATA_PORTS[@]}")
		SENTINEL_PORTS=("${TLS_SENTINEL_PORTS[@]}")
		start_sentinel_set
	)
}

mysql_up() { mysqladmin --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -uroot ping >/dev/null 2>&1; }

start_mysql() {
	if mysql_up; then
		log "mariadb :$MYSQL_PORT already running"
		return
	fi
	if ! command -v mariadbd >/dev/null && [[ ! -x /usr/sbin/mariadbd ]]; then
		apt_install mariadb-server mariadb-client
	fi
	mkdir -p /run/mysqld
	chown mysql:mysql /run/mysqld 2>/dev/null || true
	if [[ ! -d /var/lib/mysql/mysql ]]; then
		log "initialising mariadb data directory"
		mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
	fi
	log "starting mariadb :$MYSQL_PORT"
	start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
	# The socket answers before TCP does; root over TCP with an empty password is what the tests use.
	wait_for "mariadb socket" 150 mysqladmin -uroot ping
	mysql -uroot <<-'SQL' >/dev/null 2>&1 || true
		ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;
		CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
		GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
		FLUSH PRIVILEGES;
	SQL
	wait_for "mariadb tcp" 150 mysql_up
}

amqp_up() { (exec 3<>"/dev/tcp/127.0.0.1/$AMQP_PORT") 2>/dev/null; }

# start_rabbitmq starts Debian's RabbitMQ (its wrapper runs the broker as the
# rabbitmq user) with its defaults: the guest user, which may connect from
# 127.0.0.1 only.
start_rabbitmq() {
	if amqp_up; then
		log "rabbitmq :$AMQP_PORT already running"
		return
	fi
	if ! command -v rabbitmq-server >/dev/null && [[ ! -x /usr/sbin/rabbitmq-server ]]; then
		apt_install rabbitmq-server
	fi
	log "starting rabbitmq :$AMQP_PORT"
	RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$AMQP_PORT \
		start-stop-daemon --start --oknodo --background --exec /usr/sbin/rabbitmq-server
	wait_for "rabbitmq :$AMQP_PORT" 600 amqp_up
	"$(command -v rabbitmqctl || echo /usr/sbin/rabbitmqctl)" -q await_startup >&2
}


# stripe_mock_up: whether stripe-mock answers a call as Stripe's API would.
stripe_mock_up() {
	curl -fsS -o /dev/null -u sk_test_stripemock: "http://127.0.0.1:$STRIPE_MOCK_PORT/v1/payment_intents?limit=1" 2>/dev/null
}

# start_stripe_mock starts stripe-mock, built from the Go module proxy at
# STRIPE_MOCK_VERSION into $STATE_DIR/bin when it is missing.
start_stripe_mock() {
	if stripe_mock_up; then
		log "stripe-mock :$STRIPE_MOCK_PORT already running"
		return
	fi
	local bin=$STATE_DIR/bin/stripe-mock-$STRIPE_MOCK_VERSION
	if [[ ! -x $bin ]]; then
		log "go install github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION"
		GOBIN=$STATE_DIR/bin/.stripe-mock go install "github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION" >&2
		mv "$STATE_DIR/bin/.stripe-mock/stripe-mock" "$bin"
	fi
	log "starting stripe-mock :$STRIPE_MOCK_PORT"
	nohup "$bin" -http-port "$STRIPE_MOCK_PORT" -https-port "$STRIPE_MOCK_HTTPS_PORT" \
		>"$STATE_DIR/stripe-mock.log" 2>&1 </dev/null &
	disown
	wait_for "stripe-mock :$STRIPE_MOCK_PORT" 150 stripe_mock_up
}

mkdir -p "$STATE_DIR/bin"
if wants redis || wants redlock || wants cluster || wants sentinel || wants tls; then need_redis; fi
if [[ -z $only ]]; then
	need_nats
	need_chromium
fi
if wants redis; then start_redis "$REDIS_PORT"; fi
if wants redlock; then for port in "${REDLOCK_PORTS[@]}"; do start_redis "$port"; done; fi
if wants cluster; then start_cluster; fi
if wants sentinel; then start_sentinel_set; fi
if wants tls; then start_tls_services; fi
if wants mysql; then start_mysql; fi
if wants rabbitmq; then start_rabbitmq; fi
if wants stripe; then start_stripe_mock; fi

join() {
	local IFS=,
	echo "$*"
}
cluster_addrs=()
for port in "${CLUSTER_PORTS[@]}"; do cluster_addrs+=("127.0.0.1:$port"); done
redlock_addrs=()
for port in "${REDLOCK_PORTS[@]}"; do redlock_addrs+=("127.0.0.1:$port"); done
sentinel_addrs=()
for port in "${SENTINEL_PORTS[@]}"; do sentinel_addrs+=("127.0.0.1:$port"); done
tls_cluster_addrs=()
for port in "${TLS_CLUSTER_PORTS[@]}"; do tls_cluster_addrs+=("127.0.0.1:$port"); done
tls_sentinel_addrs=()
for port in "${TLS_SENTINEL_PORTS[@]}"; do tls_sentinel_addrs+=("127.0.0.1:$port"); done

if wants redis; then echo "export SECKILL_TEST_REDIS_ADDR=127.0.0.1:$REDIS_PORT"; fi
if wants cluster; then echo "export SECKILL_TEST_REDIS_CLUSTER_ADDRS=$(join "${cluster_addrs[@]}")"; fi
if wants redlock; then echo "export SECKILL_TEST_REDLOCK_ADDRS=$(join "${redlock_addrs[@]}")"; fi
if wants sentinel; then
	echo "export SECKILL_TEST_REDIS_SENTINEL_ADDRS=$(join "${sentinel_addrs[@]}")"
	echo "export SECKILL_TEST_REDIS_SENTINEL_MASTER=$SENTINEL_MASTER"
fi
if wants mysql; then echo "export SECKILL_TEST_MYSQL_DSN='root:@tcp(127.0.0.1:$MYSQL_PORT)/'"; fi
if wants rabbitmq; then echo "export SECKILL_TEST_AMQP_URL=amqp://guest:guest@127.0.0.1:$AMQP_PORT/"; fi
if wants stripe; then echo "export SECKILL_TEST_STRIPE_API_BASE=http://127.0.0.1:$STRIPE_MOCK_PORT"; fi
if wants tls; then
	cat <<EOF
export SECKILL_TEST_REDIS_TLS_ADDR=127.0.0.1:$TLS_REDIS_PORT
export SECKILL_TEST_REDIS_TLS_CLUSTER_ADDRS=$(join "${tls_cluster_addrs[@]}")
export SECKILL_TEST_REDIS_TLS_SENTINEL_ADDRS=$(join "${tls_sentinel_addrs[@]}")
export SECKILL_TEST_REDIS_TLS_SENTINEL_MASTER=$TLS_SENTINEL_MASTER
export SECKILL_TEST_REDIS_TLS_CA_FILE=$TLS_DIR/ca.crt
export SECKILL_TEST_REDIS_TLS_CERT_FILE=$TLS_DIR/client.crt
export SECKILL_TEST_REDIS_TLS_KEY_FILE=$TLS_DIR/client.key
EOF
fi
