"""GaLore (Zhao et al., ICML 2024): the optax transform, its projectors and its trees.

  transform   `scale_by_galore` (and its spec form `scale_by_galore_spec` with `GaLoreProjection`,
              `GaLoreLeaves`), `galore` (GaLore-AdamW), the option names
  projectors  the top-r singular vectors of one gradient matrix (SVD, Gram eigh, randomized, random,
              subspace iteration warm-started from the previous projector)
  trees       `GaLoreState`, the LLaMA mask, state shardings and state bytes

Imports go one way: transform → trees, projectors. The public names of all three are here, so
`from jaxdyn.optim import galore as galore_lib` reaches every one of them.
"""

from jaxdyn.optim.galore.projectors import (  # noqa: F401
    PROJECTOR_SOURCES, exact_svd, gram_eigh, randomized_svd, subspace_iteration)
from jaxdyn.optim.galore.transform import (  # noqa: F401
    LAYOUTS, MOMENT_POLICIES, SECOND_MOMENT_FIELDS, SIDE_RULES, STATIC_ARGS, GaLoreLeaves,
    GaLoreProjection, galore, scale_by_galore, scale_by_galore_spec)
from jaxdyn.optim.galore.trees import (  # noqa: F401
    GaLoreState, StateBytes, llama_galore_mask, optimizer_state_bytes, state_shardings_like_params)
