"""Tests of jaxdyn.optim.choices: each name list a config's domains read without jax is the one the
jax module that builds them defines."""

from absl.testing import absltest

from jaxdyn.optim import choices
from jaxdyn.optim import methods
from jaxdyn.optim.galore import projectors
from jaxdyn.optim.galore import transform


class ChoicesTest(absltest.TestCase):

  def test_the_methods_are_the_table_of_optim_methods(self):
    self.assertEqual(choices.METHODS, methods.NAMES)
    self.assertEqual(choices.DENSE_METHODS,
                     tuple(name for name, m in methods.METHODS.items() if m.dense))

  def test_galore_projectors_and_moment_policies(self):
    self.assertEqual(choices.GALORE_PROJECTORS, projectors.PROJECTOR_SOURCES)
    self.assertEqual(choices.GALORE_MOMENTS, transform.MOMENT_POLICIES)


if __name__ == '__main__':
  absltest.main()
