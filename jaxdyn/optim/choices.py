"""The names a config may choose among for the optimizers of this layer, importable without jax.

An experiment's config module (which imports no jax) names its domains' choices from here;
`optim/factory.py` builds them.
"""

OPTIMIZERS = ('adam', 'adamw', 'sgd')
OPTIMIZERS_WITH_HIDDEN_LAYERS = (*OPTIMIZERS, 'muon')   # for models that name their hidden layers

# optim/methods.py's table (GaLore's Table 2): every method, and those that train the dense params
# themselves (`Method.dense`)
METHODS = ('full_adamw', 'galore', 'lora', 'relora', 'low_rank')
DENSE_METHODS = ('full_adamw', 'galore')
# optim/galore/: the projector's sources (projectors.PROJECTOR_SOURCES) and what a refresh does to
# the inner moments (transform.MOMENT_POLICIES)
GALORE_PROJECTORS = ('auto', 'svd', 'gram_eigh', 'randomized_svd', 'random', 'subspace_iteration')
GALORE_MOMENTS = ('keep', 'reset', 'reproject')
