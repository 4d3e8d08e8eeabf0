"""attention_sinks' evaluation after training (StreamingLLM, Xiao et al., ICLR 2024, Fig. 3 and
Table 1; Guo et al., 2024): held-out streams through each cache and the final sink statistics.

  eval_names         the streamed evaluations in table order: each k+(C−k), recompute, dense
  stream_nll         per-token NLL of a held-out stream under k+(C−k), re-computation or dense
  streaming_report   rows per member and evaluation, perplexity by position (StreamingLLM's Fig. 3)
  final_sink_metrics α_0, the sink score, the virtual-sink mass and the massive-activation profiles
                     of every member on the attention windows (`checkpoint_sink_metrics`: of a
                     finished run's checkpoint)
  bigram_stream_perplexities, bigram_final_statistics
                     the same for Bigram-Backcopy members, grouped by control

Streams go through `models/streaming.py`; the statistics are `analysis/attention_sinks.py`'s.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxdyn.analysis import attention_sinks as analysis
from jaxdyn.core import checkpoint
from jaxdyn.experiments.attention_sinks import bigram_backcopy as bb
from jaxdyn.experiments.attention_sinks import data as data_lib
from jaxdyn.experiments.attention_sinks import model as model_lib
from jaxdyn.experiments.attention_sinks.task import bigram_statistics, decoder_config, with_prefix
from jaxdyn.models import streaming
from jaxdyn.models import transformer


def eval_names(config: ml_collections.ConfigDict) -> list[str]:
  """The streamed evaluations, in table order: each k+(C−k), then the baselines asked for."""
  size = data_lib.cache_size(config)
  names = [str(streaming.CacheSpec.of_size(k, size)) for k in config.stream.num_sinks]
  return names + ['recompute'] * config.stream.recompute + ['dense'] * config.stream.dense


def stream_nll(config: ml_collections.ConfigDict, params, streams_BxN: np.ndarray,
               name: str) -> np.ndarray:
  """Per-token NLL B×(N−1) of the text tokens 1..N−1 under the evaluation `name`; for the sink
  token variant the stream starts with the sink token, whose own prediction is not scored."""
  dcfg = decoder_config(config)
  tokens = with_prefix(config, jnp.asarray(streams_BxN))
  if name == 'recompute':
    nll = streaming.recompute_nll(dcfg, params, tokens, data_lib.cache_size(config))
  elif name == 'dense':
    nll = streaming.dense_nll(dcfg, params, tokens)
  else:
    num_sink, size = _cache_args(name)   # every k+(C−k) in one program (num_sink an array)
    nll = streaming.streaming_nll_of_size(dcfg, params, tokens, num_sink, size)
  return np.asarray(nll[:, model_lib.prefix_length(config.variant):])


@jax.jit
def take_members(params_by_member, index):
  """The params of member `index` (an int) or members `index` (an int array) of a member-stacked
  tree, in one compiled program per index shape (indexing leaf by leaf compiles an op per leaf
  shape)."""
  return jax.tree.map(lambda x: x[index], params_by_member)


def streaming_report(params_by_member, members, config) -> tuple[list[dict], dict]:
  """Rows {seed, eval, perplexity} for every member and evaluation, and the seed-mean perplexity
  by position {eval: (positions, perplexity)}."""
  streams = data_lib.held_out_streams(config)
  rows, curves = [], {}
  for name in eval_names(config):
    per_member = []
    for m, member in enumerate(members):
      params = take_members(params_by_member, np.int32(m))
      nll = stream_nll(config, params, streams, name)
      per_member.append(nll)
      rows.append({**member, 'eval': name, 'perplexity': float(np.exp(nll.mean()))})
    curves[name] = analysis.perplexity_by_position(np.concatenate(per_member), config.stream.bins)
  return rows, curves


def final_sink_metrics(params_by_member, config) -> dict[str, np.ndarray]:
  """Per member, from its params on the attention windows: `first_token_attention` α_0 (S×L×N),
  `sink_score` (S,), `virtual_sink_mass` (S×L×N, the attention sent to no token), and the
  massive-activation view (`analysis.attention_sinks.activation_profile`): the profiles
  `hidden_norm`, `hidden_max` (S×(L+1)×T), `value_norm` (S×L×K×T) and their position-0 ratios."""
  windows = data_lib.held_out_windows(config, config.data.attention_windows)
  inputs = with_prefix(config, jnp.asarray(windows[:, :-1]))
  # host arrays: a trained run's params and a checkpoint's (numpy) then share the compiled program
  params_by_member = jax.tree.map(np.asarray, params_by_member)
  return jax.tree.map(np.asarray, _final_sink_metrics(decoder_config(config), params_by_member,
                                                      inputs, config.analysis.sink_threshold))


@functools.partial(jax.jit, static_argnames=('dcfg', 'threshold'))
def _final_sink_metrics(dcfg, params_by_member, inputs, threshold):
  def one(params):
    _, inter = transformer.forward_with_intermediates(dcfg, {'params': params}, inputs)
    profile = analysis.activation_profile(dcfg, params, inter)
    return {**analysis.sink_metrics(inter.attention_weights, 0, threshold),
            **profile, **analysis.first_position_ratios(profile)}

  return jax.vmap(one)(params_by_member)


def checkpoint_sink_metrics(config: ml_collections.ConfigDict, run_workdir: str) -> dict:
  """`final_sink_metrics` of the latest checkpoint in a finished run's workdir (no training, no
  resume: for runs made before a statistic existed). `config` must describe that run."""
  return final_sink_metrics(checkpoint.load_params(run_workdir), config)


def control_stream_tokens(config: ml_collections.ConfigDict, control: str,
                          streams_BxN: np.ndarray) -> jax.Array:
  """What a control streams: [first, c_0, ...] with a first token (BOS, sink), else the chain."""
  first = bb.control_first(config, control)
  return jnp.asarray(streams_BxN if first < 0 else np.concatenate(
      [np.full((len(streams_BxN), 1), first, streams_BxN.dtype), streams_BxN], axis=1))


def bigram_stream_nll(config: ml_collections.ConfigDict, params, control: str,
                      streams_BxN: np.ndarray, name: str) -> np.ndarray:
  """NLL B×(N−1) of the chain tokens c_1..c_{N−1} under the evaluation `name` ('k+w' or 'dense');
  a control with a first token (BOS, sink) streams [first, c_0, ...] and its first prediction (c_0
  from it) is not scored, so every control is scored on the same tokens."""
  dcfg = decoder_config(config)
  tokens = control_stream_tokens(config, control, streams_BxN)
  skip = 0 if bb.control_first(config, control) < 0 else 1
  return np.asarray(_one_stream_nll(dcfg, params, tokens, *_cache_args(name))[:, skip:])


def _cache_args(name: str) -> tuple[np.int32, int | None]:
  """(num_sink as an array argument, cache size) of evaluation 'k+w' (checked by `CacheSpec`);
  (0, None) for 'dense'."""
  if name == 'dense':
    return np.int32(0), None
  spec = streaming.CacheSpec(*(int(x) for x in name.split('+')))
  return np.int32(spec.num_sink), spec.size


def _one_stream_nll(dcfg, params, tokens_BxN, num_sink, size):
  """Dense (`size` None) or the k+(size−k) cache, k = `num_sink` (an array: one program for every
  k of a cache size)."""
  if size is None:
    return streaming.dense_nll(dcfg, params, tokens_BxN)
  return streaming.streaming_nll_of_size(dcfg, params, tokens_BxN, num_sink, size)


@functools.partial(jax.jit, static_argnames=('dcfg', 'size', 'skip'))
def _members_stream_nll(dcfg, params_by_member, tokens_BxN, num_sink, size, skip):
  """The mean scored NLL (S,) of members stacked on a leading axis (one compiled program per
  cache size, whatever the number of sinks `num_sink`, and one for dense: `size` None)."""
  return jax.vmap(lambda p: _one_stream_nll(dcfg, p, tokens_BxN, num_sink, size)[:, skip:].mean())(
      params_by_member)


def bigram_stream_perplexities(config: ml_collections.ConfigDict, params_by_member, control: str,
                               streams_BxN: np.ndarray) -> dict[str, np.ndarray]:
  """{evaluation: (S,) perplexity} of members that share a control, their params stacked on a
  leading axis S and vmapped in groups of `config.num_seeds` (per group size: one compiled program
  for every k+(C−k), one for dense, shared by the runs of one model shape, not one per member)."""
  dcfg = decoder_config(config)
  tokens = control_stream_tokens(config, control, streams_BxN)
  skip = 0 if bb.control_first(config, control) < 0 else 1
  size = jax.tree.leaves(params_by_member)[0].shape[0]
  starts = range(0, size, config.num_seeds)
  def group(name, a):
    params = (params_by_member if size <= config.num_seeds else
              take_members(params_by_member, np.arange(a, min(a + config.num_seeds, size))))
    return np.asarray(_members_stream_nll(dcfg, params, tokens, *_cache_args(name), skip),
                      np.float64)
  return {name: np.exp(np.concatenate([group(name, a) for a in starts]))
          for name in eval_names(config)}


def bigram_final_statistics(params_by_member, controls: list[str],
                            config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
  """`bigram_statistics` of every member on the attention windows (S×... arrays)."""
  dcfg, table = decoder_config(config), bb.bigram_table(config)
  is_trigger_V = jnp.asarray(np.concatenate([table.is_trigger(), [False]]))
  held_out = jnp.asarray(bb.bigram_held_out(config, config.data.eval_windows,
                                         config.data.seq_len + 1)[:config.data.attention_windows])
  first_S = jnp.asarray([bb.control_first(config, c) for c in controls], jnp.int32)

  def one(params, first):
    inputs = bb.with_first(held_out, first)[:, :-1]
    return bigram_statistics(dcfg, params, inputs, is_trigger_V, config.analysis.sink_threshold)

  return jax.tree.map(np.asarray, jax.jit(jax.vmap(one))(params_by_member, first_S))
