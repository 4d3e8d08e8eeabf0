"""The names a config may choose among for the models of this layer, importable without jax.

An experiment's config module (which imports no jax) names its domains' choices from here; each
model module that defines them (a dict of functions) is checked against these names by its test.
"""

MODULAR_ACTIVATIONS = ('quadratic', 'relu', 'silu', 'identity')   # models/modular.py: ACTIVATIONS
MODULAR_LOSSES = ('mse', 'cross_entropy')                         # models/modular.py: LOSSES

# models/transformer.py's `DecoderConfig` fields (it imports them from here)
ATTENTION_KINDS = ('softmax', 'linear', 'exponential', 'sink', 'softmax_plus_one')
MLP_KINDS = ('relu', 'gelu', 'gelu_exact', 'swiglu', 'none')
NORM_KINDS = ('layernorm', 'rmsnorm', 'none')
NORM_PLACEMENTS = ('pre', 'post')
POSITION_KINDS = ('none', 'learned', 'rope')
ATTENTION_IMPLS = ('einsum', 'xla', 'cudnn')   # softmax attention without a cache (its docstring)

JOMA_INITS = ('torch', 'flax')   # models/joma.py: INITS (the hierarchical model's init scales)
