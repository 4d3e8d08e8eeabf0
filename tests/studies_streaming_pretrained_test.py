"""The StreamingLLM study on a small random decoder with the bytes tokenizer (the real model's run:
`launch/streaming_eval.py --model=smollm2-135m`, docs/experiments/attention_sinks.md)."""

import os

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn.data import tokenizers
from jaxdyn.models import streaming
from jaxdyn.models import transformer
from jaxdyn.studies import streaming_pretrained as study

CONFIG = transformer.DecoderConfig(vocab_size=256, num_layers=2, d_model=32, num_heads=4,
                                   num_kv_heads=2, mlp='swiglu', norm='rmsnorm', positions='rope',
                                   max_len=64)
SPEC = study.Spec(num_tokens=80, cache_sizes=(16, 32), recompute_tokens=256, recompute_chunk=4,
                  block=16, attention_window=32, attention_windows=2, latency_tokens=4)


class StreamingStudyTest(absltest.TestCase):

  def assertClose(self, a, b):   # perplexities of a random model are in the hundreds
    self.assertLess(abs(a / b - 1), 1e-5, f'{a} vs {b}')

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.params = transformer.Decoder(CONFIG).init(jax.random.key(0),
                                                  jnp.zeros((1, 4), jnp.int32))['params']
    cls.out = os.path.join(absltest.get_default_test_tmpdir(), 'streaming')
    cls.result = study.run(CONFIG, cls.params, tokenizers.load('bytes'), cls.out, SPEC,
                           model='random', log=lambda _: None)

  def test_rows_equal_the_token_by_token_cache_and_the_recomputed_window(self):
    tokens_XxN = np.stack([study.stream(tokenizers.load('bytes'), t, 80) for t in study.TEXTS])
    kjv = self.result['texts']['kjv']
    rows = {(r['cache'], r['setting']): r for r in kjv['rows']}
    self.assertEqual(
        list(rows), [('dense', '80 tokens')] + [
            (str(c), s) for c in (16, 32)
            for s in (f'0+{c}', f'1+{c - 1}', f'2+{c - 2}', f'4+{c - 4}', f'4"\\n"+{c - 4}',
                      'recompute')])
    for k in (0, 4):
      nll = streaming.streaming_nll(CONFIG, self.params, jnp.asarray(tokens_XxN[:1]),
                                    streaming.CacheSpec.of_size(k, 16))[0]
      row = rows[('16', f'{k}+{16 - k}')]
      self.assertClose(row['perplexity'], study.perplexity(nll[3:]))
      self.assertClose(row['perplexity_after_eviction'], study.perplexity(nll[16:]))
    newline_stream = tokens_XxN[0].copy()
    newline_stream[:4] = ord('\n')
    nll = streaming.streaming_nll(CONFIG, self.params, jnp.asarray(newline_stream)[None],
                                  streaming.CacheSpec(4, 12))[0]
    self.assertClose(rows[('16', '4"\\n"+12')]['perplexity'], study.perplexity(nll[3:]))
    # the re-computed window: every stride-th target from t = 16, the same targets paired
    targets = study.recompute_targets(80, 16, 256)
    np.testing.assert_array_equal(targets, np.arange(16, 79, 4))
    recomputed = streaming.recompute_nll(CONFIG, self.params, jnp.asarray(tokens_XxN[:1]), 16)[0]
    row = rows[('16', 'recompute')]
    self.assertClose(row['perplexity'], study.perplexity(recomputed[targets]))
    self.assertEqual(row['targets'], len(targets))
    window = streaming.streaming_nll(CONFIG, self.params, jnp.asarray(tokens_XxN[:1]),
                                     streaming.CacheSpec(0, 16))[0]
    self.assertClose(rows[('16', '0+16')]['perplexity_at_recompute'],
                           study.perplexity(window[targets]))
    self.assertIn('dense at these targets', row['note'])
    for r in kjv['rows']:
      self.assertGreater(r['cpu_s'], 0)
      self.assertGreater(r['temp_mib'], 0)
    docs_rows = self.result['texts']['python_docs']['rows']
    self.assertNotIn('recompute', [r['setting'] for r in docs_rows])   # the first text only

  def test_outputs_and_merge(self):
    for name in ('streaming.json', 'streaming.md', 'perplexity_by_block.png',
                 'first_token_attention.png', 'massive_activations.png'):
      self.assertTrue(os.path.exists(os.path.join(self.out, name)), name)
    text = open(os.path.join(self.out, 'streaming.md'), encoding='utf-8').read()
    self.assertIn('at the re-computed targets', text)
    self.assertIn('Cost per streamed token', text)
    self.assertEqual(set(self.result['latency']), {'16', '32'})
    merged = study.merge([self.result, self.result])
    self.assertLen(merged['texts']['kjv']['rows'], 2 * len(self.result['texts']['kjv']['rows']))
    self.assertEqual(set(merged['latency']), {'16', '32'})


if __name__ == '__main__':
  absltest.main()
