"""scan_snap_text's report of one run: summary.json (held-out loss and attention entropy per member,
first, last and minimum), figures/curves.png and figures/attention_maps.png."""

from __future__ import annotations

import os

import ml_collections
import numpy as np

from jaxdyn.analysis import attention_entropy
from jaxdyn.core import task as task_lib
from jaxdyn.report import figures
from jaxdyn.report import results


def summarise(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """Per member: held-out loss and attention entropy at the first and last evaluation, and the minimum."""
  h = result.history
  uniform = float(attention_entropy.causal_uniform_entropy(config.data.seq_len).mean())
  out = {'uniform_causal_entropy': uniform, 'steps': [int(s) for s in h['step']], 'members': []}
  for m, member in enumerate(result.members):
    row = dict(member)
    for name in ('loss', 'accuracy', 'attn_entropy', 'attn_normalised_entropy'):
      values = np.asarray(h[f'eval/{name}'][:, m], np.float64)
      row[name] = {'first': values[0], 'last': values[-1], 'min': values.min(),
                   'argmin_step': int(h['step'][values.argmin()]), 'curve': values.tolist()}
    out['members'].append(row)
  return out


def write_report(result: task_lib.TrainResult, config: ml_collections.ConfigDict) -> dict:
  """summary.json (`summarise`), figures/curves.png (held-out loss, entropy, normalised entropy) and
  figures/attention_maps.png (member 0, head 0); returns the summary."""
  summary = summarise(result, config)
  results.write_json(os.path.join(result.workdir, 'summary.json'), summary)
  fig_dir = os.path.join(result.workdir, 'figures')
  title = (f'1-layer transformer on word-level KJV (V={config.data.vocab_size}, '
           f'd={config.model.d_model}, {config.model.num_heads} head(s), {config.opt.name})')
  figures.plot_curves(result.history, result.members,
                      panels={'held-out next-word loss': ('eval/loss',),
                              'mean attention entropy': ('eval/attn_entropy',),
                              'attention entropy / ln(t+1)': ('eval/attn_normalised_entropy',)},
                      ylabels={'held-out next-word loss': 'cross-entropy (nats)',
                               'mean attention entropy': 'entropy (nats)',
                               'attention entropy / ln(t+1)': 'normalised entropy (1 = uniform)'},
                      path=os.path.join(fig_dir, 'curves.png'), title=title)
  attention_entropy.plot_attention_maps(result.history['step'],
                                        result.history['eval/attn_map'][:, 0, 0],  # E × T × T
                                        os.path.join(fig_dir, 'attention_maps.png'),
                                        title='attention of head 0 on held-out window 0, member 0 '
                                        f'({figures.member_label(result.members[0])})')
  return summary
