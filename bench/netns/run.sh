#!/bin/sh
# A session's network at its start, alone (docs/network.md, The cost): netnsStart.c makes and ends
# N sessions' networks of each kind (shared, none, full) in a container of the test image with the
# pool containers' capabilities, and prints CPU and wall time per session. Usage: bench/netns/run.sh [N]
set -eu
n=${1:-300}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
${CC:-cc} -static -O2 -Wall -Wno-unused-function -o "$dir/netns-start" "$(dirname "$0")/netnsStart.c"
docker run --rm --cap-add SYS_ADMIN --cap-add NET_ADMIN --memory 256m --cpus 1 -v "$dir:/b:ro" --entrypoint bash \
  "${BROKER_IMAGE:-bash-broker-test:latest}" -c "for m in shared none full shared none full; do /b/netns-start \$m $n; done"
