#!/usr/bin/env bash
# A cluster of brokers on this machine, as on several hosts (docs/deploy.md):
#   scripts/cluster.sh up [--nodes N] [--gateways G] [--image IMG]... [--containers C] [--sessions S] [--registry 127.0.0.1:PORT] [--dir D]
#   scripts/cluster.sh status [--dir D]
#   scripts/cluster.sh down [--dir D]
# up starts etcd, a registry on loopback (or uses the one --registry names), N Docker engines (each a
# dockerd with its own roots, socket and bridge, in a network namespace of its own), pushes the images
# from this machine's engine to the registry and pulls them into each engine, then N node brokers
# and G gateways (defaults 3 and 2), and prints the gateways' URLs. The store takes its clients over
# mutual TLS only, and so do the nodes their gateways, with certificates made with openssl in the rig's directory. Needs root (dockerd), etcd, and
# the images on this machine's engine (scripts/docker-images.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) == 0 ]] || { echo "cluster: must run as root (it starts dockerd)" >&2; exit 1; }
cmd=${1:-}
if [[ $cmd == up ]]; then
  for tool in etcd etcdctl dockerd unshare ip openssl docker-registry; do
    command -v "$tool" >/dev/null || { echo "cluster: $tool is not installed (Debian: etcd-server, etcd-client, docker.io, util-linux, iproute2, openssl, docker-registry)" >&2; exit 1; }
  done
  # The brokers run compiled, as the image runs them: five processes that each transpiled the whole
  # tree would take minutes to start on a small machine.
  npm run --silent build
  shift
  exec node -r ts-node/register/transpile-only scripts/cluster-rig.ts up --entry dist/index.js "$@"
fi
exec node -r ts-node/register/transpile-only scripts/cluster-rig.ts "$@"
