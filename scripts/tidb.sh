#!/usr/bin/env bash
# Starts a TiDB for the tests unless one answers already, and prints the
# variable that points the tests at it: `eval "$(scripts/tidb.sh)"`.
#
# SECKILL_TEST_TIDB_DSN set (a TiDB of your own, `root:@tcp(host:port)/`
# form, with the rights to create databases): it is used as it is.
# Otherwise a single TiDB node on its embedded storage is started on
# 127.0.0.1:$TIDB_PORT (default 4000) from the TiDB build in
# ../shared/tools/tidb next to the repository (or $SECKILL_TIDB_TOOLS), with
# TiDB's own defaults; its data is thrown away by the next start.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n ${SECKILL_TEST_TIDB_DSN:-} ]]; then
	echo "export SECKILL_TEST_TIDB_DSN='$SECKILL_TEST_TIDB_DSN'"
	exit 0
fi
port=${TIDB_PORT:-4000}
log() { echo "tidb: $*" >&2; }
up() { mysql --protocol=tcp -h127.0.0.1 -P"$port" -uroot -e 'SELECT 1' 2>/dev/null | grep -q 1; }
if up; then
	version=$(mysql --protocol=tcp -h127.0.0.1 -P"$port" -uroot -N -e 'SELECT VERSION()')
	if [[ $version != *TiDB* ]]; then
		log "127.0.0.1:$port answers but is not TiDB ($version): set TIDB_PORT or SECKILL_TEST_TIDB_DSN"
		exit 1
	fi
	log "TiDB :$port already running ($version)"
else
	tools=${SECKILL_TIDB_TOOLS:-}
	for dir in "$tools" ../shared/tools/tidb /work/shared/tools/tidb; do
		if [[ -n $dir && -x $dir/start.sh ]]; then tools=$(cd "$dir" && pwd); break; fi
	done
	if [[ -z $tools || ! -x $tools/start.sh ]]; then
		log "no TiDB: set SECKILL_TEST_TIDB_DSN, or SECKILL_TIDB_TOOLS to a directory with start.sh"
		exit 1
	fi
	command -v mysql >/dev/null || { apt-get install -y -qq mariadb-client >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq mariadb-client; } >/dev/null 2>&1; }
	log "starting TiDB :$port from $tools"
	# start.sh writes TiDB's slow log into the directory it runs in.
	(cd "${TMPDIR:-/tmp}" && "$tools/start.sh" "$port" >/dev/null)
fi
echo "export SECKILL_TEST_TIDB_DSN='root:@tcp(127.0.0.1:$port)/'"
