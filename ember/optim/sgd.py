"""SGD with momentum, dampening, Nesterov momentum and weight decay (PyTorch's formulation).

>>> w = ember.nn.Parameter(ember.tensor([1.0]))
>>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
>>> (w * w).sum().backward(); _ = opt.step(); w
Parameter containing:
tensor([0.8000], requires_grad=True)
"""

from __future__ import annotations

from .optimizer import Optimizer, check_common, grads_of, no_grad, scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent.

    Per step, with g the gradient (negated when ``maximize``): ``g += weight_decay * p``; with
    momentum, ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` on the first step) and
    ``g = g + momentum * buf`` (Nesterov) or ``g = buf``; then ``p -= lr * g``.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False, foreach=None,
                 differentiable: bool = False, fused=None) -> None:
        check_common(lr, weight_decay=weight_decay, differentiable=differentiable, fused=fused)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd = scalar(group["lr"]), group["weight_decay"]
                momentum, dampening, nesterov = group["momentum"], group["dampening"], group["nesterov"]
                for p, g in grads_of(group):
                    if wd != 0:
                        g = g.add(p, alpha=wd)
                    if momentum != 0:
                        state = self.state[p]
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            buf = state["momentum_buffer"] = g.detach().clone()
                        else:
                            buf.mul_(momentum).add_(g, alpha=1 - dampening)
                        g = g.add(buf, alpha=momentum) if nesterov else buf
                    p.add_(g, alpha=-lr)
        return loss
