#!/usr/bin/env bash
# CI smoke of the k6 flash sale: builds seckill, starts it on the real Redis
# and MariaDB of scripts/test-services.sh (its own key prefix and database,
# the shipped defaults, shoppers identified by JWT), runs
# loadtest/flash-sale.js briefly (VUS buyers, STOCK units), checks the invariants with `seckill verify`, then stops the server
# and removes the database and keys. Exits non-zero when k6 or verify fails.
#
#   scripts/loadtest-smoke.sh            # or: make loadtest-smoke
#   VUS=1000 STOCK=50 scripts/loadtest-smoke.sh
#   ROOM=1 scripts/loadtest-smoke.sh     # the crowd goes through a waiting room
#   DROP=5 scripts/loadtest-smoke.sh     # ... the room of a drop of 5 sizes
#
# k6 is installed with `go install go.k6.io/k6@$K6_VERSION` into bin/, where
# `make k6` puts it, when bin/k6 is missing or another version.
set -euo pipefail
cd "$(dirname "$0")/.."

K6_VERSION=${K6_VERSION:-v1.8.1}
VUS=${VUS:-300}
STOCK=${STOCK:-10}

log() { echo "loadtest-smoke: $*" >&2; }

eval "$(scripts/test-services.sh --env)"

gobin="$PWD/bin"
k6="$gobin/k6"
if ! "$k6" version 2>/dev/null | grep -q "^k6 ${K6_VERSION} "; then
	log "installing k6 ${K6_VERSION} into $gobin (go install; a few minutes from a cold build cache)"
	start=$(date +%s)
	GOBIN="$gobin" go install "go.k6.io/k6@${K6_VERSION}"
	log "k6 installed in $(($(date +%s) - start))s"
fi

work=$(mktemp -d)
suffix="$(date +%s)_$$"
db="seckill_smoke_${suffix}"
prefix="seckill-smoke:${suffix}:"
token="smoke-admin-token-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
jwt_secret="smoke-jwt-secret-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"

# Reach MariaDB and Redis with their command-line clients.
dsn=$SECKILL_TEST_MYSQL_DSN # user[:password]@tcp(host:port)/
if [[ ! "$dsn" =~ ^([^:@]*)(:([^@]*))?@tcp\(([^:\)]+)(:([0-9]+))?\)/ ]]; then
	log "cannot parse SECKILL_TEST_MYSQL_DSN=$dsn"
	exit 2
fi
my_user=${BASH_REMATCH[1]} my_pass=${BASH_REMATCH[3]} my_host=${BASH_REMATCH[4]} my_port=${BASH_REMATCH[6]:-3306}
mysql_cmd() { MYSQL_PWD="$my_pass" mysql -h "$my_host" -P "$my_port" -u "$my_user" "$@"; }
redis_host=${SECKILL_TEST_REDIS_ADDR%:*}
redis_port=${SECKILL_TEST_REDIS_ADDR##*:}

server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		for _ in $(seq 1 150); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$server_pid" 2>/dev/null || true
	fi
	mysql_cmd -e "DROP DATABASE IF EXISTS \`$db\`" || true
	redis-cli -h "$redis_host" -p "$redis_port" --scan --pattern "${prefix}*" |
		xargs -r -n 500 redis-cli -h "$redis_host" -p "$redis_port" UNLINK >/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

mysql_cmd -e "CREATE DATABASE \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
base_dsn=${dsn%/*}
export SECKILL_REDIS_ADDRS=$SECKILL_TEST_REDIS_ADDR
export SECKILL_REDIS_KEY_PREFIX=$prefix
export SECKILL_MYSQL_DSN="${base_dsn}/${db}"
export SECKILL_ADMIN_TOKEN=$token
# Shoppers identify as a shop's identity service would have them: JWTs,
# signed by k6 with the same secret.
export SECKILL_AUTH_MODE=jwt
export SECKILL_AUTH_JWT_SECRET=$jwt_secret
# The scenarios' shoppers pay their own orders (POST /api/v1/orders/{id}/pay).
export SECKILL_PAYMENT_MODE=trusted
export SECKILL_LOG_LEVEL=info # the listening address is logged at info
export SECKILL_HTTP_ADDR=127.0.0.1:0
export SECKILL_WORKER_SKU_REFRESH=200ms

log "building seckill"
go build -o "$work/seckill" ./cmd/seckill
"$work/seckill" serve >"$work/server.log" 2>&1 &
server_pid=$!

addr=""
for _ in $(seq 1 300); do
	addr=$(grep -o '"msg":"http listening","addr":"[^"]*"' "$work/server.log" | head -1 | sed 's/.*"addr":"\([^"]*\)"/\1/' || true)
	if [[ -n "$addr" ]] && curl -fsS "http://$addr/readyz" >/dev/null 2>&1; then break; fi
	if ! kill -0 "$server_pid" 2>/dev/null; then
		log "server exited:"
		cat "$work/server.log" >&2
		exit 1
	fi
	sleep 0.1
done
if [[ -z "$addr" ]]; then
	log "server did not become ready:"
	cat "$work/server.log" >&2
	exit 1
fi
log "server on $addr; k6 flash sale: $VUS buyers, $STOCK units"

rc=0
BASE_URL="http://$addr" ADMIN_TOKEN=$token JWT_SECRET=$jwt_secret VUS=$VUS STOCK=$STOCK START_DELAY_MS=${START_DELAY_MS:-1000} \
	"$k6" run --quiet --no-color loadtest/flash-sale.js | tee "$work/k6.out" || rc=$?
if [[ $rc -ne 0 ]]; then
	log "k6 failed (exit $rc); server log:"
	grep -v '"level":"INFO"' "$work/server.log" | tail -20 >&2 || true
fi

# The run leaves nothing on the shop: its summary names its SKU, which is a
# load test's (named so, hidden from the shop's list) and ended.
sku=$(sed -n 's/^sku: *\([0-9][0-9]*\) .*/\1/p' "$work/k6.out" | head -1)
if [[ -z "$sku" ]]; then
	log "the k6 summary names no SKU"
	rc=1
else
	view=$(curl -fsS "http://$addr/api/v1/skus/$sku")
	if [[ "$view" != *'"name":"loadtest: '* || "$view" != *'"state":"ended"'* ]]; then
		log "SKU $sku is not a load test's ended sale: $view"
		rc=1
	fi
	sleep 1.1 # the shop's list is at most a second old
	if curl -fsS "http://$addr/api/v1/skus?state=upcoming,live,sold_out,ended&limit=100" | grep -q "\"id\":$sku,"; then
		log "SKU $sku is in the shop's list"
		rc=1
	fi
	log "SKU $sku: a load test's, hidden from the shop's list, ended"
fi

if ! "$work/seckill" verify >"$work/verify.log" 2>&1; then
	log "seckill verify found a violation:"
	cat "$work/verify.log" >&2
	rc=1
else
	tail -1 "$work/verify.log" >&2
fi
exit "$rc"
