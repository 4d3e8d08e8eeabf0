"""What a run's outputs are turned into, outside the training engine: figures and tables.

  figures.py   the Agg backend chosen once, `plt`, standard curves and the figures' rules
  results.py   reading `metrics.jsonl`, grouping members over seeds, best settings, markdown tables

The trainer (core/) never imports these; an experiment's report, its analysis and the studies do.
"""
