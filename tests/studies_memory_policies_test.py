"""Tests for jaxdyn.studies.memory_policies: policy names, config edits, a compiled report."""

from absl.testing import absltest, parameterized

from jaxdyn.experiments import galore_pretrain
from jaxdyn.studies import memory_policies
from jaxdyn.experiments import modular_addition


class MemoryPoliciesTest(parameterized.TestCase):

  def test_policy_names_parse_into_edits(self):
    self.assertEqual(memory_policies.parse_policy('bf16+remat+scan+micro8+fsdp'),
                     dict(dtype='bfloat16', remat=True, scan_layers=True, microbatches=8,
                          fsdp=True))
    self.assertEqual(memory_policies.parse_policy('float32'), dict(dtype='float32'))
    for name in memory_policies.POLICIES:
      memory_policies.parse_policy(name)

  @parameterized.parameters(('remat', 'must start with a dtype'),
                            ('bf16+micro0', 'unknown part'), ('float32+offload', 'unknown part'))
  def test_bad_policy_names_are_refused(self, name, message):
    with self.assertRaisesRegex(ValueError, message):
      memory_policies.parse_policy(name)

  def test_a_policy_edits_a_copy_of_the_config(self):
    config = galore_pretrain.get_config('tiny')
    edited = memory_policies.apply_policy(config, 'bf16+scan+micro2')
    self.assertEqual((edited.model.dtype, edited.model.remat, edited.model.scan_layers,
                      edited.train.microbatches, edited.mesh.shard_params),
                     ('bfloat16', False, True, 2, False))
    self.assertEqual(config.model.dtype, 'auto')   # the original is untouched
    with self.assertRaisesRegex(ValueError, 'lacks'):
      memory_policies.apply_policy(modular_addition.get_config('tiny'), 'bf16')

  def test_microbatches_and_scanned_remat_lower_the_compiled_temporaries(self):
    config = galore_pretrain.get_config('tiny')
    config.data.update(batch_size=16, seq_len=16)
    config.model.update(num_layers=2)
    config.method = 'full_adamw'   # the cheapest optimizer to compile; the policies are the same
    rows = {name: memory_policies.compile_under_policy(galore_pretrain, config, name)
            for name in ('float32', 'float32+remat+scan+micro4')}
    self.assertLess(rows['float32+remat+scan+micro4'].temp_gib, rows['float32'].temp_gib)
    self.assertIsNone(memory_policies.compile_under_policy(galore_pretrain, config, 'bf16+fsdp'))
    table = memory_policies.markdown(list(rows.values()), config)
    self.assertIn('| float32+remat+scan+micro4 | 1 |', table)


if __name__ == '__main__':
  absltest.main()
