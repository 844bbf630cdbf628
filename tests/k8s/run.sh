#!/usr/bin/env bash
# ctest k8s_manifests: renders deploy/k8s/job.example.json and validates every
# manifest against Kubernetes' OpenAPI schema with kubernetes-validate (PyPI,
# installed once into BUILD/k8s-venv; its schemas ship inside the package, no
# cluster and no network at validation time). Exit 77 (ctest: skipped) with the
# reason when it cannot be installed.
set -uo pipefail
build="$1"
here="$(cd "$(dirname "$0")" && pwd)"
venv="$build/k8s-venv"
marker="$venv/.atl-kubernetes-validate-1.37.0"
if [[ ! -f "$marker" ]]; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1 ||
     ! "$venv/bin/pip" install -q 'kubernetes-validate==1.37.0' >"$build/k8s-venv.log" 2>&1; then
    echo "SKIP: kubernetes-validate could not be installed from PyPI: $(tail -1 "$build/k8s-venv.log" 2>/dev/null)"
    exit 77
  fi
  touch "$marker"
fi
export ATL_K8S_VALIDATE="$venv/bin/kubernetes-validate"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$here"
