"""Benchmarks of jaxdyn's compiled programs: speed ratios measured in one run, beside plain PyTorch
where a Python with torch is given. Run each from the repository root as a module:

  python -m benchmarks.<name> [flags]        # e.g. python -m benchmarks.modular --parts=d23

  modular        the modular-addition and Li2 training steps: S members against one, the matmul
                 peak, member batchings, per-op timings and profiles, PyTorch (`--torch_python`).
  transformers   Scan & Snap, JoMA hierarchical and the reversal curse: sweep ratio and tokens/s
                 against the same step in PyTorch (`--torch_python`).
  galore         jaxdyn GaLore against optax.adamw and optax.contrib.galore: optimizer step, LLaMA
                 training step, projector computation.
  streaming      the sink + window cache against re-computation and dense attention, by stream length.
  coconut        continuous thoughts in one `lax.scan` against a Python loop of jitted steps.
  mfu            a GPT-2-124M-shaped decoder in bfloat16: MFU per attention implementation (einsum,
                 cuDNN's fused attention) and a profile of where the step's time goes.
  galore_parity  jaxdyn GaLore against the published PyTorch GaLoreAdamW (needs torch and
                 galore-torch in this Python).
  config_walk    not a timing: every function of core/ that reads a run's config, counted as
                 stops and returns (docs/architecture.md, "One run, through the layers").

  lib            what the sweep benchmarks share: the trainer's chunk timed per step, interleaved
                 rounds, the matmul peak, matmul counts from the step's jaxpr, the PyTorch subprocess.
  torch_steps    the plain PyTorch steps, run by `lib.TorchSteps` as a subprocess with the Python that
                 has torch: `--torch_python=PATH`, else the `JAXDYN_TORCH_PYTHON` environment
                 variable, else this Python if it has torch; without one the PyTorch column is
                 skipped with a one-line message.
"""
