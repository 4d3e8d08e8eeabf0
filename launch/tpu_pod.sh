#!/usr/bin/env bash
# Runs one jaxdyn experiment on every worker of a TPU VM slice (written, not run by the project: see
# docs/running_at_scale.md for what is verified).
#
#   launch/tpu_pod.sh TPU_NAME ZONE CONFIG WORKDIR [--config.field=VALUE ...]
#
# WORKDIR must be a path every worker sees (a shared file system; gs:// workdirs are not supported
# yet). JAX finds the other workers itself (jax.distributed.initialize() on a pod slice).
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 TPU_NAME ZONE CONFIG WORKDIR [--config.field=VALUE ...]" >&2
  exit 2
fi
tpu=$1 zone=$2 config=$3 workdir=$4
shift 4
overrides=$(printf ' %q' "$@")
repo=${JAXDYN_REPO:-jaxdyn}   # the checkout's folder on each worker
gcloud compute tpus tpu-vm ssh "$tpu" --zone="$zone" --worker=all --command="
  set -e
  cd $repo
  [ -d .venv ] || (python3 -m venv .venv && .venv/bin/pip install -q -e . 'jax[tpu]')
  .venv/bin/python launch/train.py --config=$config --workdir=$workdir$overrides
"
