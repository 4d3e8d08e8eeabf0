"""The Spectral Line Navigator as a standalone algorithm: its optimal- and valid-path rates by graph
size (slide "Spectral Line Navigator (SLN)": ">99% optimal for small random graph (size < 10)").

  python launch/sln_optimality.py --workdir=DIR [--num_graphs=10000] [--sizes=5,6,7,8,9,10,12,15,20]
      [--edge_prob=0.3] [--kind=erdos_renyi]

Each size: `num_graphs` random connected graphs (`jaxdyn.data.graphs.random_graphs`), one uniform
query source ≠ target each, SLN with the embeddings of
`jaxdyn.experiments.shortest_path.spectral.sln_table`; an answer is optimal when the exact BFS
checker accepts it as a shortest path. Prints the table, writes DIR/sln_optimality.{md,json,png}.
"""

import os
import time

from absl import app, flags

from jaxdyn.data import graphs
from jaxdyn.experiments.shortest_path import spectral
from jaxdyn.report import results

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
_NUM_GRAPHS = flags.DEFINE_integer('num_graphs', 10_000, 'Random graphs per size.')
_SIZES = flags.DEFINE_list('sizes', ['5', '6', '7', '8', '9', '10', '12', '15', '20'], 'Node counts.')
_EDGE_PROB = flags.DEFINE_float('edge_prob', 0.3, 'Edge probability p of the generator.')
_KIND = flags.DEFINE_enum('kind', 'erdos_renyi', graphs.GENERATORS, 'Graph generator.')
_SEED = flags.DEFINE_integer('seed', 0, 'Base seed (size s uses seed + s).')


def main(argv):
  del argv
  start = time.perf_counter()
  rows = spectral.sln_table([int(s) for s in _SIZES.value], _NUM_GRAPHS.value, seed=_SEED.value,
                            kind=_KIND.value, edge_prob=_EDGE_PROB.value)
  table = spectral.sln_markdown(rows)
  print(table)
  results.write_markdown(os.path.join(_WORKDIR.value, 'sln_optimality.md'), table)
  results.write_json(os.path.join(_WORKDIR.value, 'sln_optimality.json'), rows)
  spectral.plot_sln_table(
      rows, os.path.join(_WORKDIR.value, 'sln_optimality.png'),
      f'SLN on {_KIND.value} graphs, p={_EDGE_PROB.value}, {_NUM_GRAPHS.value} graphs per size')
  print(f'done in {time.perf_counter() - start:.0f} s')


if __name__ == '__main__':
  app.run(main)
