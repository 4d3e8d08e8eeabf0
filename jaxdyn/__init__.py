"""jaxdyn: compiled JAX experiments on the training dynamics of neural networks."""
