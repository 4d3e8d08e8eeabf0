#!/usr/bin/env bash
# Runs one jaxdyn experiment on every worker of a TPU VM slice (written, not run by the project: see
# docs/running_at_scale.md for what is verified).
#
#   launch/tpu_pod.sh TPU_NAME ZONE CONFIG WORKDIR [--config.field=VALUE ...]
#
# WORKDIR is a bucket URL (gs://BUCKET/run; the workers' service account must be able to write it) or
# a path every worker sees (a shared file system). JAX finds the other workers itself
# (jax.distributed.initialize() on a pod slice). Dispatches are capped at 20 s
# (--config.train.max_dispatch_seconds, overridable after CONFIG), so that a preemption notice is
# honoured within the short notice of a spot/preemptible VM (30 s on GCE); programs are cached in
# WORKDIR/compile_cache for the relaunch.
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
  [ -d .venv ] || (python3 -m venv .venv && .venv/bin/pip install -q -e '.[tpu]')   # jax[tpu], gcsfs
  .venv/bin/python launch/train.py --config=$config --workdir=$workdir \
    --config.train.max_dispatch_seconds=20$overrides
"
