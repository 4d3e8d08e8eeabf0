"""Reasoning by superposition in closed form: the constructed 2-layer transformer (no training) on
random graphs, by graph size n, diameter D and node-embedding dimension d (Zhu et al. 2025; the
talk's slide "Main Theorem": "a 2-layer transformer with continuous CoT can solve reachability using
O(n) decoding steps with O(n) embedding dimensions").

  python launch/superposition.py --workdir=DIR [--sizes=10,20,30,50] [--depths=2,4,8]
      [--num_graphs=64] [--kinds=dag,digraph,prosqa] [--dim_n=30] [--dim_ratios=0.25,0.5,0.75,1,2]

Table 1 (`sizes` × `depths` × `kinds`): one-hot embeddings (d = n) and random embeddings (d = n,
dual readout), C = D thoughts. Table 2 (n = `dim_n`, D = 4, dag): random embeddings with d = ratio·n,
dual and matched readouts: where the construction breaks. Columns: see
`jaxdyn.experiments.coconut.superposition_study.evaluate`. Writes DIR/superposition.{md,json} and
DIR/superposition_{thoughts,dim}.png.
"""

import functools
import os
import time

from absl import app, flags

from jaxdyn.experiments.coconut import reachability
from jaxdyn.experiments.coconut import superposition
from jaxdyn.experiments.coconut import superposition_study as study
from jaxdyn.report import results

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_SIZES = flags.DEFINE_list('sizes', ['10', '20', '30', '50'], 'Node counts n.')
_DEPTHS = flags.DEFINE_list('depths', ['2', '4', '8'], 'Diameters D (= number of thoughts).')
_KINDS = flags.DEFINE_list('kinds', ['dag', 'digraph'], f'Graph kinds {reachability.GRAPH_KINDS}.')
_NUM_GRAPHS = flags.DEFINE_integer('num_graphs', 64, 'Random questions per row.')
_DIM_N = flags.DEFINE_integer('dim_n', 30, 'n of the dimension sweep (0: skip it).')
_DIM_RATIOS = flags.DEFINE_list('dim_ratios', ['0.25', '0.5', '0.75', '1', '2', '4'],
                                'd / n of the dimension sweep.')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed of graphs and embeddings.')


def main(argv):
  del argv
  start = time.perf_counter()
  seed = _SEED.value
  show = functools.partial(print, flush=True)
  rows = study.size_table(_KINDS.value, [int(n) for n in _SIZES.value],
                          [int(d) for d in _DEPTHS.value], num_graphs=_NUM_GRAPHS.value, seed=seed,
                          on_row=show)
  table = results.markdown_table(rows, study.COLUMNS, study.FORMATS)
  dim_rows = []
  if _DIM_N.value:
    n = _DIM_N.value
    dim_rows = study.dimension_table(n, [float(r) for r in _DIM_RATIOS.value],
                                     num_graphs=_NUM_GRAPHS.value, seed=seed, on_row=show)
    table += '\n' + results.markdown_table(dim_rows, study.COLUMNS, study.FORMATS)
    study.plot_dimension_sweep(
        dim_rows, os.path.join(_WORKDIR.value, 'superposition_dim.png'),
        f'random embeddings, n = {n}, D = 4, {_NUM_GRAPHS.value} layered DAGs; dual W = U⁺, '
        'matched W = Uᵀ')
  edges, root = reachability.example_question(seed, 20, 5)
  con = superposition.build(20, len(edges), max_thoughts=6)
  study.plot_thoughts(con, edges, root, 6,
                      os.path.join(_WORKDIR.value, 'superposition_thoughts.png'),
                      f'one layered DAG, n = 20, D = 5, {len(edges)} edges, one-hot d = 20')
  print(table)
  results.write_markdown(os.path.join(_WORKDIR.value, 'superposition.md'), table)
  results.write_json(os.path.join(_WORKDIR.value, 'superposition.json'), rows + dim_rows)
  print(f'done in {time.perf_counter() - start:.0f} s')


if __name__ == '__main__':
  app.run(main)
