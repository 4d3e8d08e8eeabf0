"""JoMA, linear case (linear activation, exp attention): the erf relation between components.

  python launch/joma_erf.py --workdir=DIR [--num_tokens=10] [--lr=1e-3] [--seed=0]

Trains one hidden node h = Σ_m v_m x_m e^{z_m} on L = −g h (fixed back-propagated gradient g = 1,
Δ_m = x_m ~ U[0.2, 1)) by SGD from zero until 0.995 t*, t* = √(π/2)/(η Δ_max), and compares
v_m(t) with √2 erf⁻¹(√(2/π) η Δ_m t) and the bounded limits √2 erf⁻¹(Δ_m/Δ_max).
Writes DIR/joma_erf.png and DIR/joma_erf.json.
"""

import json
import os

from absl import app, flags
import jax.numpy as jnp
import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np

from jaxdyn.analysis import joma

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_NUM_TOKENS = flags.DEFINE_integer('num_tokens', 10, 'Number of contextual tokens M.')
_LR = flags.DEFINE_float('lr', 1e-3, 'SGD step η.')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed of Δ.')


def main(argv):
  del argv
  os.makedirs(_WORKDIR.value, exist_ok=True)
  delta = jnp.asarray(np.sort(np.random.default_rng(_SEED.value).uniform(0.2, 1.0, _NUM_TOKENS.value)),
                      jnp.float32)
  lr = _LR.value
  t_star = float(joma.erf_blowup_time(delta, lr))
  steps = int(0.995 * t_star)
  path = joma.linear_case_training(delta, 1.0, lr, steps)
  v, z = np.asarray(path['v']), np.asarray(path['z'])
  t = np.arange(steps + 1)
  closed = np.asarray(joma.erf_closed_form(delta, lr, t))
  ratio = np.asarray(joma.erf_ratio(jnp.asarray(v), delta[None]))
  limit = np.asarray(joma.erf_bounded_limit(delta))
  spread = (ratio.max(1) - ratio.min(1)) / np.maximum(np.abs(ratio.mean(1)), 1e-12)
  summary = {
      'delta': np.asarray(delta).tolist(), 'lr': lr, 't_star': t_star, 'steps': steps,
      'max_abs_invariant_error': float(np.abs(z - v ** 2 / 2).max()),
      'max_relative_spread_of_erf_ratio': float(spread[1:].max()),
      'max_abs_error_vs_closed_form_except_most_salient': float(np.nanmax(np.abs(v - closed)[:, :-1])),
      'final_v': v[-1].tolist(), 'bounded_limit': [float(x) for x in limit],
      'final_fraction_of_limit_except_most_salient': (v[-1, :-1] / limit[:-1]).tolist(),
  }
  with open(os.path.join(_WORKDIR.value, 'joma_erf.json'), 'w') as f:
    json.dump(summary, f, indent=1)
  print(json.dumps(summary, indent=1))
  fig, axes = plt.subplots(1, 2, figsize=(11, 4))
  colors = plt.cm.viridis(np.linspace(0, 0.9, len(limit)))
  for m, color in enumerate(colors):
    axes[0].plot(t, v[:, m], color=color, lw=1.8, label=f'Δ={float(delta[m]):.2f}')
    axes[0].plot(t, closed[:, m], '--', color='k', lw=0.6)
    if np.isfinite(limit[m]):
      axes[0].axhline(limit[m], color=color, ls=':', lw=0.8)
    axes[1].plot(t[1:], ratio[1:, m], color=color, lw=1.0)
  axes[0].axvline(t_star, color='r', lw=0.8)
  axes[0].set(xlabel='SGD step', ylabel='v_m', title='v_m (solid), √2 erf⁻¹(√(2/π)ηΔ_m t) (dashed), '
              'limits √2 erf⁻¹(Δ_m/Δ_max) (dotted)')
  axes[0].title.set_fontsize(7)
  axes[0].set_ylim(0, 3.5)
  axes[0].legend(fontsize=6)
  axes[1].set(xlabel='SGD step', ylabel='erf(v_m/√2)/Δ_m', title='one curve for all m (erf relation)')
  fig.tight_layout()
  fig.savefig(os.path.join(_WORKDIR.value, 'joma_erf.png'), dpi=120)


if __name__ == '__main__':
  app.run(main)
