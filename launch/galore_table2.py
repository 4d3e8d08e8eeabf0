"""GaLore's Table 2 at CPU scale: the five methods on KJV bytes, one shape, same steps and tokens.

  python launch/galore_table2.py --workdir=workdirs/galore_table2 [--variant=cpu] [--steps=N]
      [--methods=...]

Every method tunes its lr over `--lrs` as one vmapped sweep (GaLore over `--galore_lrs` crossed
with `--galore_scales`, the paper's recipe lr 0.01, α 0.25 included by default) and keeps the
setting with the lowest final validation perplexity averaged over seeds. GaLore's T is
`--update_proj_gap` (0: 2% of the run, the paper's 200 of 10k). Prints and writes
`<workdir>/table2.md`: method, lr (and α) chosen, validation perplexity, optimizer-state MiB, wall
time, beside the paper's 60M column, and `<workdir>/table2.png`, the chosen settings' validation
curves (both made by `jaxdyn.studies.galore_table2`). Each run's row is kept in
`<workdir>/<method><--tag>/row.json`, so methods may run as separate processes (`--methods=galore`)
and GaLore variants side by side (`--tag=_T50 --update_proj_gap=50`), with the table rebuilt from
every row present.

  python launch/galore_table2.py --workdir=W --yardstick=d64=W64,d128=W128

writes the papers' yardstick from finished runs instead: each method's relative loss gap
ln ppl / ln ppl_full − 1 and the tokens per parameter (`W/yardstick.md`), and the gap against the
training budget along the runs' evaluations (`W/yardstick.png`, or `--yardstick_figure`).
"""

from absl import app, flags

from jaxdyn.core import metrics
from jaxdyn.experiments import galore_pretrain
from jaxdyn.studies import galore_table2 as study

_WORKDIR = flags.DEFINE_string('workdir', None, 'One subdirectory per method is written here.')
_VARIANT = flags.DEFINE_string('variant', 'cpu', 'Config variant of galore_pretrain.')
_STEPS = flags.DEFINE_integer('steps', 0,
                              'Training steps (0: the variant\'s); T and restarts scale.')
_METHODS = flags.DEFINE_list('methods', list(galore_pretrain.METHODS), 'Methods to run.')
_LRS = flags.DEFINE_list('lrs', ['1e-3', '3e-3', '1e-2'], 'Learning rates tried for each baseline.')
_GALORE_LRS = flags.DEFINE_list('galore_lrs', ['1e-2'], 'Learning rates tried for GaLore.')
_GALORE_SCALES = flags.DEFINE_list('galore_scales', ['0.25'], 'GaLore scales α tried (x lrs).')
_GAP = flags.DEFINE_integer('update_proj_gap', 0, 'GaLore T (0: 2% of the steps).')
_MOMENTS = flags.DEFINE_enum('moments', 'keep', ['keep', 'reset', 'reproject'],
                             'GaLore moments on a refresh.')
_TAG = flags.DEFINE_string('tag', '', 'Suffix of the run directories (and table rows).')
_SEQ_LEN = flags.DEFINE_integer('seq_len', 0, 'Sequence length (0: the variant\'s).')
_D_MODEL = flags.DEFINE_integer('d_model', 0, 'Width (0: the variant\'s); rank d_model / 4.')
_LAYERS = flags.DEFINE_integer('num_layers', 0, 'Decoder layers (0: the variant\'s).')
_EVAL_EVERY = flags.DEFINE_integer(
    'eval_every', 0, 'Steps between evaluations (0: a sixth of the run); dispatches are then the '
    'largest multiple of it not above a sixth of the run, so every chunk has one shape.')
_SEEDS = flags.DEFINE_integer('num_seeds', 1, 'Seeds per setting (init and data order), vmapped; '
                              'the lr is chosen on the mean over seeds.')
_YARDSTICK = flags.DEFINE_list(
    'yardstick', [], 'label=workdir of finished Table 2 runs (run with this script, so their rows '
    'carry the shape): train nothing, write <workdir>/yardstick.md (relative loss gaps, tokens per '
    'parameter) and the gap-vs-budget figure.')
_YARDSTICK_FIGURE = flags.DEFINE_string('yardstick_figure', '',
                                        'Path of that figure (default <workdir>/yardstick.png).')
flags.mark_flag_as_required('workdir')


def method_config(method: str):
  return study.method_config(
      method, _VARIANT.value, lrs=[float(lr) for lr in _LRS.value],
      galore_lrs=[float(lr) for lr in _GALORE_LRS.value],
      galore_scales=[float(s) for s in _GALORE_SCALES.value], moments=_MOMENTS.value,
      update_proj_gap=_GAP.value, steps=_STEPS.value, eval_every=_EVAL_EVERY.value,
      seq_len=_SEQ_LEN.value, d_model=_D_MODEL.value, num_layers=_LAYERS.value,
      num_seeds=_SEEDS.value)


def main(argv):
  del argv
  metrics.show_progress_logs()
  if _YARDSTICK.value:
    runs = dict(item.split('=', 1) for item in _YARDSTICK.value)
    report, path = study.write_yardstick(_WORKDIR.value, runs, _YARDSTICK_FIGURE.value)
    print(report)
    print('figure:', path)
    return
  for method in _METHODS.value:
    config = method_config(method)
    row = study.run_method(config, _WORKDIR.value, _TAG.value)
    print(f'{method}: final perplexity by member {row["perplexities"]} ({row["members"]})',
          flush=True)
  report, path = study.write_table2(_WORKDIR.value, config)   # every run's row in the workdir
  print(report)
  print('figure:', path)


if __name__ == '__main__':
  app.run(main)
