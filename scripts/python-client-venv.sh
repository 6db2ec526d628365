#!/usr/bin/env bash
# Makes (or refreshes) the virtualenv the Python client's tests run in (test/pool/pythonClient.test.ts
# calls it when the client's files changed): `python3 -m venv`, then clients/python with its test
# extras and mypy, from pip's configured index. Usage: scripts/python-client-venv.sh [venv dir]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-clients/python/.venv}

# A venv left half made (a run killed while making it) has a python but no pip: made again.
if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then rm -rf "$venv"; fi
if [ ! -x "$venv/bin/python" ]; then
  # python3 on PATH first (a pyenv or the system's); Debian's own needs python3-venv for ensurepip.
  made=0
  for python in python3 /usr/bin/python3; do
    if "$python" -m venv "$venv" 2>/dev/null; then made=1; break; fi
    rm -rf "$venv"
  done
  if [ "$made" != 1 ]; then
    echo "python-client-venv: python3 -m venv failed (Debian: apt-get install -y python3-venv)" >&2
    exit 1
  fi
fi
# Where pip's default index is unreachable and packages come from the extra indexes its configuration
# names, each lookup of the default one fails; pip's 5 retries with backoff made that 3.5 minutes.
export PIP_RETRIES=${PIP_RETRIES:-0}
pip() { "$venv/bin/python" -m pip --disable-pip-version-check -q "$@"; }
pip install "./clients/python[test]" mypy
# The client itself again, built from the files as they are now (same version number or not).
pip install --no-deps --force-reinstall ./clients/python
"$venv/bin/python" -c 'import bash_broker, aiohttp, pytest, pytest_asyncio; print("python client venv ready:", bash_broker.__version__, "aiohttp", aiohttp.__version__)'
