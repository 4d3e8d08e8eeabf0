"""The names a config may choose among for the optimizers of this layer, importable without jax.

An experiment's config module (which imports no jax) names its domains' choices from here;
`optim/factory.py` builds them.
"""

OPTIMIZERS = ('adam', 'adamw', 'sgd')
OPTIMIZERS_WITH_HIDDEN_LAYERS = (*OPTIMIZERS, 'muon')   # for models that name their hidden layers
