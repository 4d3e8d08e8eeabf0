"""Test helper: where primitives sit in a jaxpr (outside or inside while_loop bodies)."""

import jax.extend


def primitives_outside_and_inside_while(jaxpr):
  """Names of the primitives of a jaxpr outside any while_loop, and inside while_loop bodies."""
  outside, inside = set(), set()

  def walk(jaxpr, in_while):
    for eqn in jaxpr.eqns:
      (inside if in_while else outside).add(eqn.primitive.name)
      for sub in jax.extend.core.jaxprs_in_params(eqn.params):
        walk(sub, in_while or eqn.primitive.name == 'while')

  walk(jaxpr, False)
  return outside, inside
