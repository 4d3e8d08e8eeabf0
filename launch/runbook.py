"""The accelerator run book's command (docs/accelerator.md; `jaxdyn.studies.runbook`).

  python launch/runbook.py --entry=coconut --seed=0 --out=DIR [--tiny]
  python launch/runbook.py --entry=galore --out=DIR
  python launch/runbook.py --entry=mfu --out=DIR
  python launch/runbook.py --entry=sinks --program=long --out=DIR
  python launch/runbook.py --entry=sinks --program=reference --seeds=0 --out=DIR
  python launch/runbook.py --entry=joma --cells=0 --out=DIR
  python launch/runbook.py --entry=streaming --model=PATH --out=DIR
  python launch/runbook.py --entry=coconut --combine=DIR0,DIR1,DIR2 --out=DIR
  python launch/runbook.py --prepare=wheels,coconut_data

Run from the repository root (the galore and mfu entries run `python -m benchmarks.*`). Writes
DIR/<entry>.json and DIR/<entry>.md; `--tiny` runs the same code at test size on a CPU.
"""

import sys

from jaxdyn.studies import runbook

if __name__ == '__main__':
  runbook.main(sys.argv[1:])
