#!/usr/bin/env bash
# Starts the real services the test suite talks to, unless they already run:
#   Redis standalone      127.0.0.1:6379
#   Redis Cluster         127.0.0.1:7000-7002 (3 masters)
#   Redlock nodes         127.0.0.1:6381-6385 (5 independent servers)
#   MariaDB               127.0.0.1:3306 (root, empty password)
# Installs redis-server and mariadb-server with apt-get when they are missing.
# Safe to run twice. Prints the SECKILL_TEST_* variables for the tests at the end;
# `eval "$(scripts/test-services.sh --env)"` exports them into the current shell.
set -euo pipefail

STATE_DIR=${SECKILL_SERVICES_DIR:-/tmp/seckill-test-services}
REDIS_PORT=6379
CLUSTER_PORTS=(7000 7001 7002)
REDLOCK_PORTS=(6381 6382 6383 6384 6385)
MYSQL_PORT=3306

quiet=0
if [[ "${1:-}" == "--env" ]]; then quiet=1; fi
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

redis_up() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

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
	local dir=$STATE_DIR/redis-$port
	mkdir -p "$dir"
	log "starting redis :$port"
	redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
		--dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid" "$@" >&2
	wait_for "redis :$port" 50 redis_up "$port"
}

cluster_ok() { redis-cli -p "${CLUSTER_PORTS[0]}" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; }

start_cluster() {
	for port in "${CLUSTER_PORTS[@]}"; do
		start_redis "$port" --cluster-enabled yes --cluster-config-file "nodes-$port.conf" --cluster-node-timeout 5000
	done
	if cluster_ok; then
		log "redis cluster already formed"
		return
	fi
	local known
	known=$(redis-cli -p "${CLUSTER_PORTS[0]}" cluster info | awk -F: '/cluster_known_nodes/ {print $2}' | tr -d '\r')
	if [[ "$known" != "1" ]]; then
		# Half-formed cluster from an earlier run: reset every node and create it again.
		for port in "${CLUSTER_PORTS[@]}"; do
			redis-cli -p "$port" flushall >/dev/null 2>&1 || true
			redis-cli -p "$port" cluster reset hard >/dev/null
		done
	fi
	log "creating redis cluster on ${CLUSTER_PORTS[*]}"
	local nodes=()
	for port in "${CLUSTER_PORTS[@]}"; do nodes+=("127.0.0.1:$port"); done
	redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >&2
	wait_for "redis cluster" 150 cluster_ok
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

mkdir -p "$STATE_DIR"
need_redis
start_redis "$REDIS_PORT"
for port in "${REDLOCK_PORTS[@]}"; do start_redis "$port"; done
start_cluster
start_mysql

join() {
	local IFS=,
	echo "$*"
}
cluster_addrs=()
for port in "${CLUSTER_PORTS[@]}"; do cluster_addrs+=("127.0.0.1:$port"); done
redlock_addrs=()
for port in "${REDLOCK_PORTS[@]}"; do redlock_addrs+=("127.0.0.1:$port"); done

cat <<EOF
export SECKILL_TEST_REDIS_ADDR=127.0.0.1:$REDIS_PORT
export SECKILL_TEST_REDIS_CLUSTER_ADDRS=$(join "${cluster_addrs[@]}")
export SECKILL_TEST_REDLOCK_ADDRS=$(join "${redlock_addrs[@]}")
export SECKILL_TEST_MYSQL_DSN='root:@tcp(127.0.0.1:$MYSQL_PORT)/'
EOF
