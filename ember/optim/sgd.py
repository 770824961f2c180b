"""SGD with momentum, dampening, Nesterov momentum and weight decay (PyTorch's formulation).

>>> w = ember.nn.Parameter(ember.tensor([1.0]))
>>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
>>> (w * w).sum().backward(); _ = opt.step(); w
Parameter containing:
tensor([0.8000], requires_grad=True)
"""

from __future__ import annotations

from ._flat import flat_for
from .optimizer import Optimizer, check_common, grads_of, no_grad, scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent.

    Per step, with g the gradient (negated when ``maximize``): ``g += weight_decay * p``; with
    momentum, ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` on the first step) and
    ``g = g + momentum * buf`` (Nesterov) or ``g = buf``; then ``p -= lr * g``.

    Its step can be captured by ``ember.compile`` (the options are Python numbers that a replay
    checks: a changed ``lr`` captures again).
    """

    _replay_safe = True  # see optimizer._capture_check

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
                if group["foreach"] is not False and self._step_packed(group):
                    continue
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

    def _step_packed(self, group) -> bool:
        """The group's update on its packed parameters (see ember.optim._flat): the same formulas as
        the loop above, on every parameter at once. False when the group can't be packed this step."""
        fp = flat_for(self.__dict__.setdefault("_packs", {}), group)
        if fp is None:
            return False
        g = fp.grad()
        momentum = group["momentum"]
        buf = fp.state(self.state, "momentum_buffer") if momentum != 0 else None
        if g is None or (momentum != 0 and buf is None and any(self.state.get(p) for p in fp.params)):
            return False  # a missing gradient, or momentum buffers only some parameters have: the loop
        if group["maximize"]:
            g = -g
        lr, wd = scalar(group["lr"]), group["weight_decay"]
        if wd != 0:
            g = g.add(fp.flat, alpha=wd)
        if momentum != 0:
            if buf is None:
                buf = fp.adopt(self.state, "momentum_buffer", g.detach().clone())
            else:
                buf.mul_(momentum).add_(g, alpha=1 - group["dampening"])
            g = g.add(buf, alpha=momentum) if group["nesterov"] else buf
        fp.flat.add_(g, alpha=-lr)
        return True

