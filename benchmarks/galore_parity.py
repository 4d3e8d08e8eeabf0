r"""Parity of jaxdyn's GaLore with the published PyTorch GaLoreAdamW (galore_torch).

Feeds the same gradient sequence, over several projector refreshes, to both
and prints the max abs / rel difference of the parameter updates.

  pip install torch==2.13.0 && pip install --no-deps galore-torch
  python -m benchmarks.galore_parity --steps=32 --update_proj_gap=8

It runs both optimizers in this Python, so this one needs torch and galore-torch (with jax);
without them it says so in one line and exits.

galore_torch imports `transformers` (only for `require_version`) and
`bitsandbytes` (only for its 8-bit optimizer) at package import; neither is
used by GaLoreAdamW, so when they are missing they are replaced by empty stubs.
"""

import importlib.util
import sys
import types

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdyn.optim import galore as galore_lib

FLAGS = flags.FLAGS
flags.DEFINE_integer('steps', 32, 'Optimizer steps.')
flags.DEFINE_integer('update_proj_gap', 8, 'T: steps between projector refreshes.')
flags.DEFINE_integer('rank', 8, 'GaLore rank.')
flags.DEFINE_float('scale', 0.25, 'GaLore scale alpha.')
flags.DEFINE_float('learning_rate', 0.01, 'Learning rate.')
flags.DEFINE_float('weight_decay', 0.0, 'Decoupled weight decay.')

# Torch (out, in) shapes of the projected weights, and one unprojected bias.
TORCH_SHAPES = {'wide': (32, 64), 'tall': (64, 32), 'square': (48, 48)}
BIAS_SIZE = 64


def stub_missing_imports():
  """Empty stand-ins for galore_torch's unused import-time dependencies."""
  try:
    import transformers.utils.versions  # noqa: F401
  except ImportError:
    versions = types.ModuleType('transformers.utils.versions')
    versions.require_version = lambda *_: None
    for name in ('transformers', 'transformers.utils'):
      sys.modules[name] = types.ModuleType(name)
    sys.modules['transformers.utils.versions'] = versions
  try:
    import bitsandbytes.optim.optimizer  # noqa: F401
  except ImportError:
    optimizer = types.ModuleType('bitsandbytes.optim.optimizer')
    optimizer.Optimizer2State = object
    for name in ('bitsandbytes', 'bitsandbytes.optim'):
      sys.modules[name] = types.ModuleType(name)
    sys.modules['bitsandbytes.optim.optimizer'] = optimizer


def scale_by_reference_adam(b1=0.9, b2=0.999, eps=1e-6) -> optax.GradientTransformation:
  """The reference's (HF) Adam: sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps).

  optax.scale_by_adam adds eps to the bias-corrected sqrt(v) instead.
  """
  def init_fn(params):
    zeros = optax.tree.zeros_like(params)
    return optax.ScaleByAdamState(jnp.zeros([], jnp.int32), zeros, zeros)

  def update_fn(updates, state, params=None):
    del params
    count = state.count + 1
    mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
    nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state.nu, updates)
    step = jnp.sqrt(1 - b2**count) / (1 - b1**count)
    out = jax.tree.map(lambda m, v: step * m / (jnp.sqrt(v) + eps), mu, nu)
    return out, optax.ScaleByAdamState(count, mu, nu)

  return optax.GradientTransformation(init_fn, update_fn)


def gradient_sequence(steps):
  rng = np.random.default_rng(0)
  for _ in range(steps):
    # A low-rank drift plus noise, so the top subspace is meaningful.
    yield {name: (rng.normal(size=(shape[0], 4)) @ rng.normal(size=(4, shape[1]))
                  + 0.3 * rng.normal(size=shape)).astype(np.float32)
           for name, shape in TORCH_SHAPES.items()} | {
               'bias': rng.normal(size=(BIAS_SIZE,)).astype(np.float32)}


def align_reference_signs(projector_class):
  """Patches the reference projector to flip new singular vectors towards the old ones.

  The reference keeps Adam's moments across refreshes in whatever sign LAPACK
  returns; torch and JAX may return opposite signs, so the unpatched runs part
  after the first refresh. With sign alignment on both sides they must not.
  """
  import torch
  original = projector_class.get_orthogonal_matrix

  def aligned(self, weights, rank, type):
    old = self.ortho_matrix
    new = original(self, weights, rank, type)
    if old is not None:
      vector_axis = 1 if type == 'right' else 0  # right: rows of Vh; left: columns of U
      overlap = (new * old).sum(dim=vector_axis, keepdim=True)
      new = torch.where(overlap < 0, -new, new)
    self.ortho_matrix = new
    return new

  projector_class.get_orthogonal_matrix = aligned
  return lambda: setattr(projector_class, 'get_orthogonal_matrix', original)


def reference_updates(initial, grads_seq, align_signs):
  import torch
  stub_missing_imports()
  from galore_torch import GaLoreAdamW
  from galore_torch.galore_projector import GaLoreProjector

  undo_patch = align_reference_signs(GaLoreProjector) if align_signs else (lambda: None)

  params = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in initial.items()}
  optimizer = GaLoreAdamW([
      {'params': [params['bias']]},
      {'params': [params[k] for k in TORCH_SHAPES], 'rank': FLAGS.rank,
       'update_proj_gap': FLAGS.update_proj_gap, 'scale': FLAGS.scale, 'proj_type': 'std'},
  ], lr=FLAGS.learning_rate, weight_decay=FLAGS.weight_decay, no_deprecation_warning=True)
  for grads in grads_seq:
    before = {k: p.detach().clone() for k, p in params.items()}
    for k, p in params.items():
      p.grad = torch.tensor(grads[k])
    optimizer.step()
    yield {k: (params[k].detach() - before[k]).numpy() for k in params}
  undo_patch()


def our_updates(initial, grads_seq, layout, align_signs):
  """Our GaLore on the same gradients; Flax layout receives the transposes."""
  def flip(tree):
    if layout == 'torch':
      return tree
    return {k: v.T if k in TORCH_SHAPES else v for k, v in tree.items()}

  tx = optax.chain(
      galore_lib.scale_by_galore(
          FLAGS.rank, FLAGS.update_proj_gap, FLAGS.scale, scale_by_reference_adam(),
          side='std', layout=layout, align_signs=align_signs, projector='svd',
          mask={k: k in TORCH_SHAPES for k in initial}),
      optax.add_decayed_weights(FLAGS.weight_decay),
      optax.scale_by_learning_rate(FLAGS.learning_rate))
  params = jax.tree.map(jnp.asarray, flip(initial))
  state = tx.init(params)
  update = jax.jit(tx.update)
  for grads in grads_seq:
    updates, state = update(jax.tree.map(jnp.asarray, flip(grads)), state, params)
    params = optax.apply_updates(params, updates)
    yield flip(jax.tree.map(np.asarray, updates))


def compare(reference, ours, steps):
  """Max abs and max (per-leaf-normalised) rel difference over the given steps."""
  worst_abs, worst_rel = 0.0, 0.0
  for ref, our in list(zip(reference, ours))[steps]:
    for k in ref:
      diff = np.abs(ref[k] - our[k])
      worst_abs = max(worst_abs, float(diff.max()))
      worst_rel = max(worst_rel, float(diff.max() / np.abs(ref[k]).max()))
  return worst_abs, worst_rel


def main(argv):
  del argv
  missing = [name for name in ('torch', 'galore_torch') if importlib.util.find_spec(name) is None]
  if missing:
    print(f'{sys.executable} has no {" and no ".join(missing)} (pip install torch==2.13.0 && pip '
          f'install --no-deps galore-torch); the PyTorch parity check is skipped')
    return 1
  rng = np.random.default_rng(1)
  initial = {k: (0.1 * rng.normal(size=s)).astype(np.float32) for k, s in TORCH_SHAPES.items()}
  initial['bias'] = np.zeros((BIAS_SIZE,), np.float32)
  grads_seq = list(gradient_sequence(FLAGS.steps))
  refreshes = (FLAGS.steps - 1) // FLAGS.update_proj_gap + 1
  print(f'{FLAGS.steps} steps, T={FLAGS.update_proj_gap} ({refreshes} projector computations), '
        f'rank {FLAGS.rank}, scale {FLAGS.scale}, lr {FLAGS.learning_rate}, '
        f'wd {FLAGS.weight_decay}; shapes (out, in) {TORCH_SHAPES} + bias')
  print('rel diff = max |ours - ref| / max |ref| per leaf and step, worst over both')
  before_refresh = slice(0, FLAGS.update_proj_gap)
  for align_signs in (False, True):
    reference = list(reference_updates(initial, grads_seq, align_signs))
    for layout in ('torch', 'flax'):
      ours = list(our_updates(initial, grads_seq, layout, align_signs))
      first = compare(reference, ours, before_refresh)
      every = compare(reference, ours, slice(None))
      print(f'align_signs={align_signs!s:5s} (both sides) layout={layout:5s}: '
            f'steps < T: abs {first[0]:.2e} rel {first[1]:.2e} | '
            f'all steps: abs {every[0]:.2e} rel {every[1]:.2e}')


if __name__ == '__main__':
  app.run(main)
