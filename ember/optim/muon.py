"""Muon (Jordan et al., 2024): momentum SGD whose 2-d updates are orthogonalised by a quintic
Newton–Schulz iteration, with PyTorch 2.13's ``torch.optim.Muon`` semantics for 2-d parameters.

Muon is meant for the weight matrices of hidden layers. Unlike ``torch.optim.Muon`` (which refuses
non-2-d parameters), ember's Muon also accepts biases, norms and embeddings: a parameter whose
group says ``use_muon=False``, or any non-2-d parameter when ``use_muon`` is left at None, gets an
AdamW update instead (``adamw_betas``, ``adamw_eps``, the group's lr and weight_decay), as in the
common Muon implementations::

    opt = ember.optim.Muon([{"params": hidden_matrices},
                            {"params": others, "use_muon": False, "lr": 3e-4}], lr=0.02)
"""

from __future__ import annotations

import math

from .. import _creation as cr
from .. import _dtype as dt
from .._linalg_ops import matmul
from .._tensor import Tensor
from .optimizer import Optimizer, check_common, grads_of, no_grad, scalar, step_count, step_tensor

__all__ = ["Muon", "zeropower_via_newtonschulz"]


def zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
                               ns_steps: int = 5, eps: float = 1e-7) -> Tensor:
    """Approximately orthogonalise a 2-d matrix (``U Vᵀ`` of its SVD, up to singular values in about
    [0.5, 1.5]) with ``ns_steps`` iterations of ``X ← a X + (b A + c A²) X``, ``A = X Xᵀ``, after scaling X
    to unit Frobenius norm. Runs in bfloat16 with float32 accumulation; returns bfloat16.
    """
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError(f"Newton-Schulz orthogonalization needs a 2-d matrix, got shape {list(grad.shape)}")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    bf, f32 = dt.bfloat16, dt.float32
    x = grad.to(bf)
    tall = grad.shape[0] > grad.shape[1]
    if tall:  # iterate on the wide orientation: the Gram matrix is the smaller one
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        # each product is accumulated in float32 and rounded to bfloat16 once, like a bf16 addmm
        xf = x.to(f32)
        gram = matmul(xf, xf.T).to(bf).to(f32)
        upd = (gram * b + matmul(gram, gram) * c).to(bf).to(f32)
        x = (xf * a + matmul(upd, xf)).to(bf)
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Muon for 2-d parameters (see the module docstring for the AdamW fallback). Per step::

        buf = lerp(buf, g, 1 - momentum)                # an EMA, as in torch.optim.Muon
        u = lerp(g, buf, momentum) if nesterov else buf
        O = NewtonSchulz(u)
        p *= 1 - lr * weight_decay
        p -= adjust(lr, p.shape) * O                    # "original": lr * sqrt(max(1, rows / cols))

    ``adjust_lr_fn="match_rms_adamw"`` uses ``0.2 * lr * sqrt(max(rows, cols))`` (Moonshot's rule).
    """

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn: str | None = None, *,
                 adamw_betas: tuple[float, float] = (0.9, 0.95), adamw_eps: float = 1e-8) -> None:
        check_common(lr, eps, weight_decay, adamw_betas)
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn,
                        use_muon=None, adamw_betas=adamw_betas, adamw_eps=adamw_eps)
        super().__init__(params, defaults)
        for group in self.param_groups:
            if group["use_muon"]:
                for p in group["params"]:
                    if p.dim() != 2:
                        raise ValueError("Muon only supports 2D parameters whereas we found a parameter with size: "
                                         f"{list(p.shape)} in a group with use_muon=True")

    @staticmethod
    def _uses_muon(group: dict, p: Tensor) -> bool:
        flag = group.get("use_muon")
        return p.dim() == 2 if flag is None else bool(flag)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, wd = scalar(group["lr"]), group["weight_decay"]
                for p, g in grads_of(group):
                    if self._uses_muon(group, p):
                        self._muon_update(group, p, g, lr, wd)
                    else:
                        self._adamw_update(group, p, g, lr, wd)
        return loss

    def _muon_update(self, group: dict, p: Tensor, g: Tensor, lr: float, wd: float) -> None:
        if g.dim() != 2:
            raise ValueError(f"Muon: parameter gradient must be a 2D matrix, got shape {list(g.shape)}")
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = cr.zeros_like(g)
        buf, mu = state["momentum_buffer"], group["momentum"]
        buf.lerp_(g, 1 - mu)
        u = g.lerp(buf, mu) if group["nesterov"] else buf
        o = zeropower_via_newtonschulz(u, group["ns_coefficients"], group["ns_steps"], group["eps"])
        p.mul_(1 - lr * wd)
        # the update is added in the parameter's precision (the bf16 result is widened first)
        p.add_(o.to(p.dtype), alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape))

    def _adamw_update(self, group: dict, p: Tensor, g: Tensor, lr: float, wd: float) -> None:
        state = self.state[p]
        if "exp_avg" not in state:
            state["step"] = step_tensor(p.device)
            state["exp_avg"] = cr.zeros_like(p)
            state["exp_avg_sq"] = cr.zeros_like(p)
        t = step_count(state, p.device)
        beta1, beta2 = group["adamw_betas"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        p.mul_(1 - lr * wd)
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).add_(g * g, alpha=1 - beta2)
        denom = (v.sqrt() / math.sqrt(1 - beta2 ** t)).add_(group["adamw_eps"])
        p.add_(m / denom, alpha=-lr / (1 - beta1 ** t))
