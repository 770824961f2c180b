"""Lion (Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms"): sign-of-momentum
updates with decoupled weight decay. Not in torch.optim; tested against a direct transcription of
the paper's algorithm.

>>> w = ember.nn.Parameter(ember.tensor([1.0, -1.0]))
>>> opt = ember.optim.Lion([w], lr=0.1)
>>> (w * w).sum().backward(); _ = opt.step(); w
Parameter containing:
tensor([ 0.9000, -0.9000], requires_grad=True)
"""

from __future__ import annotations

from .. import _creation as cr
from .optimizer import Optimizer, check_common, grads_of, no_grad, scalar

__all__ = ["Lion"]


class Lion(Optimizer):
    """Per step with gradient g (negated when ``maximize``) and momentum m::

        c = beta1 * m + (1 - beta1) * g
        p = p * (1 - lr * weight_decay) - lr * sign(c)
        m = beta2 * m + (1 - beta2) * g

    Lion's steps are larger than Adam's (every coordinate moves by lr): use a 3-10x smaller lr and a
    correspondingly larger weight decay. State: ``exp_avg``.
    """

    def __init__(self, params, lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.99),
                 weight_decay: float = 0.0, *, maximize: bool = False, foreach=None) -> None:
        check_common(lr, 0.0, weight_decay)
        for i, b in enumerate(betas):
            if not 0.0 <= b <= 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        defaults = dict(lr=lr, betas=betas, weight_decay=weight_decay, maximize=maximize, foreach=foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd = scalar(group["lr"]), group["weight_decay"]
                beta1, beta2 = group["betas"]
                for p, g in grads_of(group):
                    state = self.state[p]
                    if not state:
                        state["exp_avg"] = cr.zeros_like(p)
                    m = state["exp_avg"]
                    update = m.lerp(g, 1 - beta1).sign_()
                    if wd != 0:
                        p.mul_(1 - lr * wd)
                    p.add_(update, alpha=-lr)
                    m.lerp_(g, 1 - beta2)
        return loss
