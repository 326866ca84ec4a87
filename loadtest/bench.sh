#!/usr/bin/env bash
# The throughput benchmark in one command (`make bench`): installs wrk when it
# is missing (apt-get), starts the test services (scripts/test-services.sh),
# then runs bench/loadbench, which builds seckill, starts its own servers, a
# private redis-server and its own MariaDB database, measures and prints the
# table of BENCHMARKS.md#load. Extra arguments go to loadbench, e.g.
#   loadtest/bench.sh -d 5s -drain 50000      # shorter
#   loadtest/bench.sh -h                      # every flag
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v wrk >/dev/null; then
	echo "bench: installing wrk (apt-get)" >&2
	if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wrk >&2 ||
		{ DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wrk >&2; }
fi
eval "$(scripts/test-services.sh --env)"
cd bench
exec go run ./loadbench "$@"
