"""``ember.random``: seeding and RNG state (torch.random).

>>> with ember.random.fork_rng():
...     _ = ember.manual_seed(0); _ = ember.rand(2)
"""

from ._random import (  # noqa: F401
    Generator,
    default_generator,
    fork_rng,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]
