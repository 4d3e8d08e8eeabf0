"""The one check the experiments' tests make of a bad config: `check_config` refuses it, before
anything compiles, with a `ConfigError` of one line (what `launch/train.py` prints after `error:`)
that names the field(s).

  refusals.assert_refused(self, shortest_path, {'model.num_heads': 3}, 'model.num_heads')
  refusals.assert_refused(self, galore_pretrain, {'method': 'lora', 'lora.rank': 1000},
                          "'lora.rank' = 1000", "'model.d_model' = 16")
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import ml_collections

from jaxdyn.core import config as config_lib


Edit = Mapping[str, Any] | Callable[[ml_collections.ConfigDict], None]


def assert_refused(test, experiment, edit: Edit, *named: str,
                   variant: str = 'tiny') -> config_lib.ConfigError:
  """`experiment`'s `variant` config, edited, is refused by `experiment.check_config` with a one-line
  `ConfigError` whose message holds each of `named`, in that order (literal text: a dotted field,
  or "'galore.rank' = 1000"). Returns the error.

  experiment  an experiment package or module (`get_config`, `check_config`)
  edit        {dotted field: value}, each set with `config.set_field`, or a function editing the config
  """
  if not named:
    raise ValueError('name the field(s) the refusal must name')
  config = experiment.get_config(variant)
  if callable(edit):
    edit(config)
  else:
    for field, value in edit.items():
      config_lib.set_field(config, field, value)
  with test.assertRaisesRegex(config_lib.ConfigError, '.*'.join(map(re.escape, named))) as raised:
    experiment.check_config(config)
  test.assertNotIn('\n', str(raised.exception), 'a refusal is one line')
  return raised.exception
