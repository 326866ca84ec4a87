#!/usr/bin/env bash
# Runs every fuzz target for a short time: FUZZTIME each (default 6s), about
# 60-80 s in all including the instrumented builds. A failing input is written
# under the package's testdata/fuzz/<target>/ and the script exits non-zero;
# commit that file with the fix so the input stays in the seed corpus that
# `go test` runs.
#
#   scripts/fuzz.sh                  # every target
#   FUZZTIME=2m scripts/fuzz.sh      # longer, e.g. before a release
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-6s}
GO=${GO:-go}

targets=(
	"./internal/httpapi FuzzPlaceRequest"
	"./internal/httpapi FuzzSKURequest"
	"./internal/httpapi FuzzStockRequest"
	"./internal/httpapi FuzzShopperToken"
	"./internal/httpapi FuzzListQuery"
	"./internal/auth FuzzVerify"
	"./internal/config FuzzLoadEnv"
	"./internal/config FuzzLoadFile"
)

start=$SECONDS
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz: $name ($pkg) for $FUZZTIME"
	"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"
done
echo "fuzz: ${#targets[@]} targets passed in $((SECONDS - start))s"
