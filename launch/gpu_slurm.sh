#!/usr/bin/env bash
# Runs one jaxdyn experiment on NVIDIA GPUs across SLURM nodes, one process per GPU (written, not run
# by the project: no GPU cluster was available; see docs/running_at_scale.md for what is verified).
#
#   sbatch --nodes=2 --ntasks-per-node=8 --gpus-per-task=1 launch/gpu_slurm.sh CONFIG WORKDIR \
#       [--config.field=VALUE ...]
#
# JAX reads the SLURM environment (SLURM_NTASKS > 1) and starts its distributed system itself, with
# process 0's node as coordinator; every process sees its one GPU, the mesh spans all of them.
# WORKDIR must be a path every node sees (a shared file system, or gs:// with the gcs extra).
# The checkout must already be installed on every node: python3 -m venv .venv &&
# .venv/bin/pip install -e '.[cuda]'   (or '.[cuda12]' for CUDA 12 drivers).
#SBATCH --job-name=jaxdyn
#SBATCH --signal=TERM@120
# (SIGTERM 120 s before the time limit: the trainer saves at the next dispatch boundary and exits;
#  keep train.max_dispatch_seconds well below 120 s. `sbatch --requeue` relaunches and resumes.)
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: sbatch [slurm options] $0 CONFIG WORKDIR [--config.field=VALUE ...]" >&2
  exit 2
fi
config=$1 workdir=$2
shift 2
cd "${JAXDYN_REPO:-$SLURM_SUBMIT_DIR}"
srun --kill-on-bad-exit=1 .venv/bin/python launch/train.py --config="$config" --workdir="$workdir" "$@"
