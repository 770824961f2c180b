"""Per-coordinate adaptive methods: Adagrad, Adadelta, RMSprop (PyTorch's formulations).

>>> w = ember.nn.Parameter(ember.tensor([1.0]))
>>> opt = ember.optim.RMSprop([w], lr=0.01, centered=True, momentum=0.9)
>>> (w * w).sum().backward(); _ = opt.step(); w.shape
ember.Size([1])
"""

from __future__ import annotations

from .. import _creation as cr
from .optimizer import Optimizer, check_common, grads_of, no_grad, scalar, step_count, step_tensor

__all__ = ["Adagrad", "Adadelta", "RMSprop"]


class Adagrad(Optimizer):
    """Adagrad: ``sum += g²``; ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)``.

    As in PyTorch, the state (``step``, ``sum`` filled with ``initial_accumulator_value``) is created
    when the optimizer is built, not at the first step. Unlike PyTorch, which fills every group with
    the constructor's value, a group's own ``initial_accumulator_value`` is honoured.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *,
                 maximize: bool = False, differentiable: bool = False, fused=None) -> None:
        check_common(lr, eps, weight_decay, differentiable=differentiable, fused=fused)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = step_tensor(p.device)
                state["sum"] = cr.full_like(p, group["initial_accumulator_value"])

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd, eps, decay = scalar(group["lr"]), group["weight_decay"], group["eps"], group["lr_decay"]
                for p, g in grads_of(group):
                    state = self.state[p]
                    if "sum" not in state:  # a group added after construction
                        state["step"] = step_tensor(p.device)
                        state["sum"] = cr.full_like(p, group["initial_accumulator_value"])
                    t = step_count(state, p.device)
                    if wd != 0:
                        g = g.add(p, alpha=wd)
                    clr = lr / (1 + (t - 1) * decay)
                    acc = state["sum"]
                    acc.add_(g * g)
                    p.add_(g / acc.sqrt().add_(eps), alpha=-clr)
        return loss


class Adadelta(Optimizer):
    """Adadelta (Zeiler): running averages of g² and of the squared updates set a per-coordinate step;
    ``p -= lr * delta``. State: ``step``, ``square_avg``, ``acc_delta``."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_common(lr, eps, weight_decay, capturable=capturable, differentiable=differentiable)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd, eps, rho = scalar(group["lr"]), group["weight_decay"], group["eps"], group["rho"]
                for p, g in grads_of(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = step_tensor(p.device)
                        state["square_avg"] = cr.zeros_like(p)
                        state["acc_delta"] = cr.zeros_like(p)
                    step_count(state, p.device)
                    if wd != 0:
                        g = g.add(p, alpha=wd)
                    sq, acc = state["square_avg"], state["acc_delta"]
                    sq.mul_(rho).add_(g * g, alpha=1 - rho)
                    std = sq.add(eps).sqrt_()
                    delta = acc.add(eps).sqrt_().div_(std).mul_(g)
                    acc.mul_(rho).add_(delta * delta, alpha=1 - rho)
                    p.add_(delta, alpha=-lr)
        return loss


class RMSprop(Optimizer):
    """RMSprop (Hinton): ``v = alpha * v + (1 - alpha) * g²``; centered subtracts the squared running
    mean of g; the step ``g / (sqrt(v) + eps)`` goes through a momentum buffer when momentum > 0.
    State: ``step``, ``square_avg`` (+ ``momentum_buffer``, ``grad_avg``)."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_common(lr, eps, weight_decay, capturable=capturable, differentiable=differentiable)
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd, eps, alpha = scalar(group["lr"]), group["weight_decay"], group["eps"], group["alpha"]
                momentum, centered = group["momentum"], group["centered"]
                for p, g in grads_of(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = step_tensor(p.device)
                        state["square_avg"] = cr.zeros_like(p)
                        if momentum > 0:
                            state["momentum_buffer"] = cr.zeros_like(p)
                        if centered:
                            state["grad_avg"] = cr.zeros_like(p)
                    step_count(state, p.device)
                    if wd != 0:
                        g = g.add(p, alpha=wd)
                    sq = state["square_avg"]
                    sq.mul_(alpha).add_(g * g, alpha=1 - alpha)
                    if centered:
                        ga = state["grad_avg"]
                        ga.lerp_(g, 1 - alpha)
                        avg = sq.sub(ga * ga).sqrt_()
                    else:
                        avg = sq.sqrt()
                    avg = avg.add_(eps)
                    if momentum > 0:
                        buf = state["momentum_buffer"]
                        buf.mul_(momentum).add_(g / avg)
                        p.add_(buf, alpha=-lr)
                    else:
                        p.add_(g / avg, alpha=-lr)
        return loss
