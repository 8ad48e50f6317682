#!/usr/bin/env bash
# deploy/'s checks: check_manifests.py on deploy/ as it is (with kjitd
# --check-config on every configuration), then its tests, which break copies
# of deploy/ one thing at a time and expect each to be named, then the tests
# of kjitd --check-config itself, and that no registry or archive host is
# written into the project (check_registry_hosts.py) with its tests.
#   tests/deploy/run.sh [path/to/kjitd]        (default: build/bin/kjitd)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export KJITD=${1:-${KJITD:-$here/../../build/bin/kjitd}}
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "tests/deploy: installing PyYAML with pip"
  if ! python3 -m pip install --quiet pyyaml; then
    echo "tests/deploy: PyYAML is missing and pip could not install it (Debian: apt-get install python3-yaml)" >&2
    exit 1
  fi
fi
python3 "$here/check_manifests.py" --kjitd "$KJITD"
python3 "$here/test_check_manifests.py"
python3 "$here/test_check_config.py"
python3 "$here/test_grafana_dashboard.py"
python3 "$here/check_registry_hosts.py"
python3 "$here/test_check_registry_hosts.py"
