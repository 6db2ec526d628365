#!/bin/sh
# The session init built ahead of time, for a broker image that has no C compiler
# (containers/broker/Dockerfile): written beside its source under the name the broker gives its own
# builds (.session-init- and the first 16 hex digits of the sha256 of the source, the files it
# includes from beside it (`#include "name"`) in order, then the flags;
# src/backends/docker/isolation/sessionInitBuild.ts), so the broker takes it only for that very
# source. Prints the file it wrote. Usage: build-session-init.sh SOURCE
set -eu
src=$1
dir=$(dirname "$src")
flags='-static -Os -s -Wall'
included=$(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$src")
hash=$({ cat "$src"; for f in $included; do cat "$dir/$f"; done; printf '%s' "$flags"; } | sha256sum | cut -c1-16)
out="$dir/.session-init-$hash"
# shellcheck disable=SC2086 # the flags are words
${CC:-cc} $flags -o "$out" "$src"
echo "$out"
