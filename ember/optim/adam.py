"""Adam and AdamW (PyTorch's formulation, including amsgrad and decoupled weight decay).

>>> w = ember.nn.Parameter(ember.tensor([1.0, -1.0]))
>>> opt = ember.optim.Adam([w], lr=0.1)
>>> (w * w).sum().backward(); _ = opt.step(); w
Parameter containing:
tensor([ 0.9000, -0.9000], requires_grad=True)
"""

from __future__ import annotations

import math

from .. import _creation as cr
from .._elementwise import maximum
from ..backend.capture import capturing
from .optimizer import Optimizer, check_common, grads_of, no_grad, scalar, step_count, step_tensor

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba). Per step t with gradient g (negated when ``maximize``)::

        g += wd * p                      (L2 penalty; with decoupled_weight_decay: p *= 1 - lr * wd)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g²
        v̂ = max(v̂, v) with amsgrad, else v
        p -= lr / (1 - beta1^t) * m / (sqrt(v̂) / sqrt(1 - beta2^t) + eps)

    State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq``).

    Inside a capture (``ember.compile``, a CUDA graph) the step count stays in its tensor and the bias
    corrections are computed from it with tensor ops (PyTorch's ``capturable`` formulation), so each
    replay advances it; eager steps read it as a Python number, as before.
    """

    _replay_safe = True  # see optimizer._capture_check

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False) -> None:
        check_common(lr, eps, weight_decay, betas, capturable=capturable, differentiable=differentiable,
                     fused=fused)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _init_state(self, p, amsgrad: bool) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = step_tensor(p.device)
            state["exp_avg"] = cr.zeros_like(p)
            state["exp_avg_sq"] = cr.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = cr.zeros_like(p)
        return state

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd, eps = scalar(group["lr"]), group["weight_decay"], group["eps"]
                beta1, beta2 = (scalar(b) for b in group["betas"])
                amsgrad, decoupled = group["amsgrad"], group.get("decoupled_weight_decay", False)
                captured = capturing()
                for p, g in grads_of(group):
                    state = self._init_state(p, amsgrad)
                    if captured:  # the count stays on the device: replays compute the replayed step's
                        st = state["step"]
                        st.add_(1)
                        if not amsgrad and _fused_step(p, g, state, lr, wd, eps, beta1, beta2, decoupled, 0.0, st):
                            continue
                        self._captured_update(p, g, state, lr, wd, eps, beta1, beta2, amsgrad, decoupled)
                        continue
                    t = step_count(state, p.device)
                    if not amsgrad and _fused_step(p, g, state, lr, wd, eps, beta1, beta2, decoupled, t):
                        continue
                    m, v = self._moments(p, g, state, lr, wd, beta1, beta2, amsgrad, decoupled)
                    step_size = lr / (1 - beta1 ** t)
                    denom = (v.sqrt() / math.sqrt(1 - beta2 ** t)).add_(eps)
                    p.add_(m / denom, alpha=-step_size)
        return loss

    @staticmethod
    def _moments(p, g, state, lr, wd, beta1, beta2, amsgrad, decoupled):
        """Weight decay (decoupled: on p; else into g), then the moment estimates updated in place:
        (m, v), v being the running maximum under amsgrad."""
        if wd != 0:
            if decoupled:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).add_(g * g, alpha=1 - beta2)
        if amsgrad:
            vmax = state.setdefault("max_exp_avg_sq", cr.zeros_like(p))
            vmax.copy_(maximum(vmax, v))
            v = vmax
        return m, v

    @staticmethod
    def _captured_update(p, g, state, lr, wd, eps, beta1, beta2, amsgrad, decoupled) -> None:
        """The update with the step count kept in its tensor (already incremented): ``t`` and the bias
        corrections are tensors, so a replay of the recorded work computes them for the replayed step."""
        st = state["step"]
        m, v = Adam._moments(p, g, state, lr, wd, beta1, beta2, amsgrad, decoupled)
        t = st.to(p.dtype)
        step_size = (1 - beta1 ** t).reciprocal().mul_(lr)
        denom = (v.sqrt() / (1 - beta2 ** t).sqrt()).add_(eps)
        p.sub_(m / denom * step_size)


def _fused_step(p, g, state, lr, wd, eps, beta1, beta2, decoupled, t, step=None) -> bool:
    """The update as one backend op where the backend has ``adam_step_`` (CUDA: one kernel instead of
    about ten ops a parameter), for a parameter, gradient and moments of one dtype and shape; False
    sends the caller to the op-by-op update (same formulas, same order). ``step``: the count as a tensor
    on the parameter's device (captured steps), read there instead of ``t``."""
    be = p._device.backend
    m, v = state["exp_avg"], state["exp_avg_sq"]
    if not be.supports("adam_step_") or not (p._dtype is g._dtype is m._dtype is v._dtype) \
            or not (p._shape == g._shape == m._shape == v._shape) or not p._dtype.is_floating_point \
            or (step is not None and (step._device is not p._device or step.numel() != 1)):
        return False
    be.run("adam_step_", (p._h, g._h, m._h, v._h) + (() if step is None else (step._h,)),
           {"lr": float(lr), "beta1": float(beta1), "beta2": float(beta2), "eps": float(eps),
            "weight_decay": float(wd), "decoupled": bool(decoupled), "step": float(t)})
    return True


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay`` before
    the Adam update, default ``weight_decay=1e-2``."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False, foreach=None,
                 capturable: bool = False, differentiable: bool = False, fused=None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
