"""L-BFGS with an optional strong-Wolfe line search (Nocedal & Wright, *Numerical Optimization*,
Algorithms 7.4 and 3.5/3.6; the line search follows Schmidt's minFunc: cubic interpolation with
safeguards).

The parameters are treated as one flat vector. ``step(closure)`` runs up to ``max_iter`` quasi-Newton
iterations; ``closure`` must zero the gradients, compute the loss, call ``backward()`` and return it.

>>> w = ember.nn.Parameter(ember.tensor([3.0, -2.0]))
>>> opt = ember.optim.LBFGS([w], line_search_fn="strong_wolfe")
>>> def closure():
...     opt.zero_grad()
...     loss = ((w - 1) ** 2).sum()
...     loss.backward()
...     return loss
>>> _ = opt.step(closure); [round(v, 4) for v in w.tolist()]
[1.0, 1.0]
"""

from __future__ import annotations

import math

from .. import _creation as cr
from .._movement import cat
from .._tensor import Tensor
from .optimizer import Optimizer, no_grad, scalar

__all__ = ["LBFGS"]


def _cubic_min(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
               bounds: tuple[float, float] | None = None) -> float:
    """Minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped into ``bounds``
    (default: the interval between the points); the bounds' midpoint when the cubic has no minimiser."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    if x1 > x2:  # the formula below assumes x1 <= x2; the cubic does not care about the order
        x1, f1, g1, x2, f2, g2 = x2, f2, g2, x1, f1, g1
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    return min(max(x, lo), hi)


def _strong_wolfe(evaluate, t: float, d: Tensor, f: float, g: Tensor, gtd: float, c1: float = 1e-4,
                  c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25):
    """Find a step t along d satisfying the strong Wolfe conditions.

    ``evaluate(t) -> (loss, flat_grad)`` at x + t·d. Returns (loss, grad, t, evaluations).
    Phase 1 grows the step (extrapolating by cubic interpolation) until an interval is known to
    contain an acceptable point; phase 2 ("zoom") shrinks that interval.
    """
    d_max = float(d.abs().max().item())
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = float(g_new.dot(d).item())
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    it = 0
    bracket: list = []
    while it < max_ls:
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= f_prev):
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new, gtd_new]]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, done = [[t, f_new, g_new, gtd_new]], True
            break
        if gtd_new >= 0:
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new, gtd_new]]
            break
        # still descending with sufficient decrease: extrapolate, at least 1% further and at most 10x
        t_next = _cubic_min(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
        t = t_next
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new.dot(d).item())
        it += 1
    if it == max_ls:
        bracket = [[0.0, f, g, gtd], [t, f_new, g_new, gtd_new]]

    # zoom: bracket[lo] is the best point so far, bracket[hi] the other end
    stalled = False
    lo, hi = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    while not done and it < max_ls:
        (ta, fa, _, ga), (tb, fb, _, gb) = bracket
        if abs(tb - ta) * d_max < tolerance_change:
            break
        t = _cubic_min(ta, fa, ga, tb, fb, gb)
        # keep away from the interval's ends: a point within 10% of an end counts as little progress,
        # and twice in a row (or outside the interval) moves it to 10% inside
        top, bot = max(ta, tb), min(ta, tb)
        margin = 0.1 * (top - bot)
        if min(top - t, t - bot) < margin:
            if stalled or t >= top or t <= bot:
                t = top - margin if abs(t - top) < abs(t - bot) else bot + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new.dot(d).item())
        it += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket[lo][1]:
            bracket[hi] = [t, f_new, g_new, gtd_new]
            lo, hi = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[hi][0] - bracket[lo][0]) >= 0:
                bracket[hi] = bracket[lo]
            bracket[lo] = [t, f_new, g_new, gtd_new]
    t, f_new, g_new, _ = bracket[lo]
    return f_new, g_new, t, evals


class LBFGS(Optimizer):
    """Limited-memory BFGS. All parameters form one group (per-group options are not supported).

    ``history_size`` curvature pairs (s, y) approximate the inverse Hessian (two-loop recursion,
    initial scaling yᵀs / yᵀy). Without a line search each iteration steps ``lr`` along the
    direction (the first iteration ``lr * min(1, 1 / |g|₁)``); with ``line_search_fn="strong_wolfe"``
    the step comes from the line search. Stops early when the largest gradient entry is at most
    ``tolerance_grad``, or the step or the loss change falls below ``tolerance_change``, or after
    ``max_eval`` closure evaluations.
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if not 0.0 <= scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if line_search_fn is not None and line_search_fn != "strong_wolfe":
            raise ValueError(f"only 'strong_wolfe' is supported as line_search_fn, got {line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ---- the parameters as one vector ----------------------------------------------------------
    def _flat_grad(self) -> Tensor:
        parts = []
        for p in self._params:
            g = p.grad
            parts.append(cr.zeros(p.numel(), dtype=p.dtype, device=p.device) if g is None else g.reshape(-1))
        return cat(parts)

    def _add_direction(self, t: float, d: Tensor) -> None:
        at = 0
        for p in self._params:
            n = p.numel()
            p.add_(d[at:at + n].view_as(p), alpha=t)
            at += n

    def _evaluator(self, closure, x0: list[Tensor], d: Tensor):
        """evaluate(t): loss and flat gradient at x0 + t·d; the parameters are restored to x0 after."""
        def evaluate(t: float):
            self._add_direction(t, d)
            loss = float(self._eval_closure(closure))
            g = self._flat_grad()
            for p, x in zip(self._params, x0):
                p.copy_(x)
            return loss, g
        return evaluate

    def step(self, closure):
        """Run up to ``max_iter`` iterations; returns the loss from the first closure evaluation."""
        if closure is None or not callable(closure):
            raise TypeError("LBFGS.step needs a closure that re-evaluates the model and returns the loss")
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr = scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history, line_search = group["history_size"], group["line_search_fn"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        first_loss = self._eval_closure(closure)
        loss = float(first_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if float(g.abs().max().item()) <= tol_grad:
            return first_loss

        d, t = state.get("d"), state.get("t")
        dirs, steps, rho = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_g, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")

        n = 0
        while n < max_iter:
            n += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = g.neg()
                dirs, steps, rho = [], [], []
                h_diag = 1.0
            else:
                y = g - prev_g
                s = d * t
                ys = float(y.dot(s).item())
                if ys > 1e-10:  # keep the pair only if it carries positive curvature
                    if len(dirs) == history:
                        dirs.pop(0), steps.pop(0), rho.pop(0)
                    dirs.append(y)
                    steps.append(s)
                    rho.append(1.0 / ys)
                    h_diag = ys / float(y.dot(y).item())
                # two-loop recursion: d = -H g
                alphas = [0.0] * len(dirs)
                q = g.neg()
                for i in range(len(dirs) - 1, -1, -1):
                    alphas[i] = float(steps[i].dot(q).item()) * rho[i]
                    q.add_(dirs[i], alpha=-alphas[i])
                d = q.mul_(h_diag)
                for i in range(len(dirs)):
                    beta = float(dirs[i].dot(d).item()) * rho[i]
                    d.add_(steps[i], alpha=alphas[i] - beta)
                state["al"] = alphas

            prev_g = g.clone() if prev_g is None else prev_g.copy_(g)
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(g.abs().sum().item())) * lr
            else:
                t = lr
            gtd = float(g.dot(d).item())
            if gtd > -tol_change:  # not a descent direction
                break

            ls_evals = 0
            if line_search is not None:
                x0 = [p.clone() for p in self._params]
                loss, g, t, ls_evals = _strong_wolfe(self._evaluator(closure, x0, d), t, d, loss, g, gtd)
                self._add_direction(t, d)
                converged = float(g.abs().max().item()) <= tol_grad
            else:
                self._add_direction(t, d)
                converged = False
                if n != max_iter:
                    # re-evaluate only when another iteration will use the result
                    loss = float(self._eval_closure(closure))
                    g = self._flat_grad()
                    converged = float(g.abs().max().item()) <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            if n == max_iter or evals >= max_eval or converged:
                break
            if float(d.abs().max().item()) * abs(t) <= tol_change:
                break
            if abs(loss - prev_loss) < tol_change:
                break

        state.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=rho, H_diag=h_diag, prev_flat_grad=prev_g,
                     prev_loss=prev_loss)
        return first_loss
