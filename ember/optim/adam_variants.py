"""Adam's relatives: Adamax (infinity norm), NAdam (Nesterov momentum), RAdam (rectified).

All follow PyTorch's formulations, state names and defaults.

>>> w = ember.nn.Parameter(ember.tensor([1.0]))
>>> opt = ember.optim.NAdam([w], lr=0.01)
>>> (w * w).sum().backward(); _ = opt.step(); w.shape
ember.Size([1])
"""

from __future__ import annotations

import math

from .. import _creation as cr
from .._elementwise import maximum
from .optimizer import Optimizer, check_common, grads_of, no_grad, scalar, step_count, step_tensor

__all__ = ["Adamax", "NAdam", "RAdam"]


def _l2_or_decoupled(p, g, lr: float, wd: float, decoupled: bool):
    if wd == 0:
        return g
    if decoupled:
        p.mul_(1 - lr * wd)
        return g
    return g.add(p, alpha=wd)


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm. ``u = max(beta2 * u, |g| + eps)``, then
    ``p -= lr / (1 - beta1^t) * m / u``. State: ``step``, ``exp_avg``, ``exp_inf``."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_common(lr, eps, weight_decay, betas, differentiable=differentiable, capturable=capturable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd, eps = scalar(group["lr"]), group["weight_decay"], group["eps"]
                beta1, beta2 = group["betas"]
                for p, g in grads_of(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = step_tensor(p.device)
                        state["exp_avg"] = cr.zeros_like(p)
                        state["exp_inf"] = cr.zeros_like(p)
                    t = step_count(state, p.device)
                    g = _l2_or_decoupled(p, g, lr, wd, False)
                    m, u = state["exp_avg"], state["exp_inf"]
                    m.lerp_(g, 1 - beta1)
                    u.copy_(maximum(u.mul_(beta2), g.abs().add_(eps)))
                    p.add_(m / u, alpha=-lr / (1 - beta1 ** t))
        return loss


class NAdam(Optimizer):
    """NAdam (Dozat): Adam with Nesterov momentum and the momentum schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))``. State: ``step``, ``mu_product``
    (the running product of mu, a float32 tensor as in PyTorch), ``exp_avg``, ``exp_avg_sq``."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_common(lr, eps, weight_decay, betas, capturable=capturable, differentiable=differentiable)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd, eps = scalar(group["lr"]), group["weight_decay"], group["eps"]
                beta1, beta2 = group["betas"]
                psi = group["momentum_decay"]
                for p, g in grads_of(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = step_tensor(p.device)
                        state["mu_product"] = step_tensor(p.device, 1.0)
                        state["exp_avg"] = cr.zeros_like(p)
                        state["exp_avg_sq"] = cr.zeros_like(p)
                    t = step_count(state, p.device)
                    g = _l2_or_decoupled(p, g, lr, wd, group["decoupled_weight_decay"])
                    mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
                    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
                    # the product is kept in the step tensor's precision, as PyTorch does
                    mu_prod = float(state["mu_product"].mul_(mu).item())
                    m, v = state["exp_avg"], state["exp_avg_sq"]
                    m.lerp_(g, 1 - beta1)
                    v.mul_(beta2).add_(g * g, alpha=1 - beta2)
                    denom = v.div(1 - beta2 ** t).sqrt().add_(eps)
                    p.add_(g / denom, alpha=-lr * (1 - mu) / (1 - mu_prod))
                    p.add_(m / denom, alpha=-lr * mu_next / (1 - mu_prod * mu_next))
        return loss


class RAdam(Optimizer):
    """RAdam (Liu et al.): Adam whose adaptive term is switched on, with a variance rectification,
    once the approximated SMA length ``rho_t`` exceeds 5; before that it is SGD with momentum."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        check_common(lr, eps, weight_decay, betas, capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd, eps = scalar(group["lr"]), group["weight_decay"], group["eps"]
                beta1, beta2 = group["betas"]
                rho_inf = 2 / (1 - beta2) - 1
                for p, g in grads_of(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = step_tensor(p.device)
                        state["exp_avg"] = cr.zeros_like(p)
                        state["exp_avg_sq"] = cr.zeros_like(p)
                    t = step_count(state, p.device)
                    g = _l2_or_decoupled(p, g, lr, wd, group["decoupled_weight_decay"])
                    m, v = state["exp_avg"], state["exp_avg_sq"]
                    m.lerp_(g, 1 - beta1)
                    v.mul_(beta2).add_(g * g, alpha=1 - beta2)
                    bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
                    m_hat = m / bc1
                    rho_t = rho_inf - 2 * t * beta2 ** t / bc2
                    if rho_t > 5.0:
                        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                        adaptive = math.sqrt(bc2) / v.sqrt().add_(eps)
                        p.add_(m_hat * lr * adaptive * rect, alpha=-1.0)
                    else:
                        p.add_(m_hat * lr, alpha=-1.0)
        return loss

