"""The run book's outputs: where and when a call ran (`environment`), its rows as a markdown table,
`DIR/<entry>.json` and `DIR/<entry>.md` (`write_outputs`), read back by `read_outputs`."""

import datetime
import json
import os
from typing import Sequence

import jax

from jaxdyn.report import results
from jaxdyn.studies.runbook import entries

INSTALL_ENV = 'RUNBOOK_INSTALL_S'   # the install's seconds, set by the device command


def environment() -> dict:
  """Where and when: UTC date, device kind and count, platform, jax's version, host cores, and the
  install's seconds where the device command gave them ($RUNBOOK_INSTALL_S)."""
  device = jax.devices()[0]
  install = os.environ.get(INSTALL_ENV)
  return {'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
          'device': device.device_kind, 'platform': device.platform,
          'devices': jax.device_count(), 'jax': jax.__version__, 'host_cores': os.cpu_count(),
          'install_s': float(install) if install else None}


def markdown_rows(rows: Sequence[dict]) -> str:
  """Rows of {column: text} as a markdown table (the columns of the first row)."""
  columns = list(rows[0])
  lines = ['| ' + ' | '.join(columns) + ' |', '|' + '---|' * len(columns)]
  lines += ['| ' + ' | '.join(str(r.get(c, '')) for c in columns) + ' |' for r in rows]
  return '\n'.join(lines) + '\n'


def write_outputs(out: str, name: str, record: dict, rows: Sequence[dict]) -> dict:
  """`out/<name>.json` ({'entry', environment, what the entry is compared with and where its result
  goes, the record, 'rows'}) and `out/<name>.md` (the rows, each with the date and device
  appended); returns what the json holds. `name` is an entry's or starts with one and '_'."""
  env = environment()
  entry = entries.ENTRIES[name.split('_')[0]]
  rows = [{**r, 'device': env['device'], 'date': env['date'][:10]} for r in rows]
  full = {'entry': name, **env, 'title': entry.title, 'compared_with': entry.compared,
          'goes_to': entry.docs, **record, 'rows': rows}
  results.write_json(os.path.join(out, f'{name}.json'), full)
  results.write_markdown(os.path.join(out, f'{name}.md'), markdown_rows(rows))
  return full


def read_outputs(folder: str, name: str) -> dict:
  """What `write_outputs` wrote as `folder/<name>.json`."""
  path = os.path.join(folder, f'{name}.json')
  with open(path, encoding='utf-8') as f:
    return json.load(f)
