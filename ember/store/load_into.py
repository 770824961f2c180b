"""``load_into``: copy a checkpoint into a module, renaming keys, adapting values, and reporting.

Each checkpoint key goes through, in order: every ``remap`` rule (``re.sub(pattern, replacement,
key)``, all of them, in order), the adapter's ``rename`` (None drops the key), and ``filter`` (a
regex searched in the key, or a function of it). The filter applies to the module's keys too: a
module key it rejects is not reported missing, so ``filter=r"^backbone\\."`` loads just a backbone.

Then the adapter's ``convert`` sees the value and the module's tensor, shapes must match, and
with ``dtype_cast`` a floating value is cast to the parameter's floating dtype (bf16/f16 <-> f32);
other dtype differences are mismatches. Nothing is copied until everything is checked, so a strict
load that fails leaves the module untouched.

>>> import ember
>>> net = ember.nn.Linear(2, 3)
>>> report = load_into(net, {"weight": ember.ones(3, 2, dtype=ember.float16), "bias": ember.zeros(3)})
>>> report.applied, report.cast
(['weight', 'bias'], [('weight', 'float16', 'float32')])
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .._tensor import Tensor
from .adapters import Adapter
from .checkpoint import flatten_state_dict, load, unwrap_state_dict
from .errors import LoadIntoError, StoreError

__all__ = ["load_into", "LoadReport"]

_SHOWN = 20  # entries per list in the report's text


@dataclass
class LoadReport:
    """What :func:`load_into` did. Keys are module keys (after renaming); ``renamed`` maps the
    checkpoint's own keys to them where they differ."""

    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[tuple[str, tuple, tuple]] = field(default_factory=list)  # (key, (shape, dtype), (shape, dtype))
    cast: list[tuple[str, str, str]] = field(default_factory=list)  # (key, checkpoint dtype, module dtype)
    skipped: list[str] = field(default_factory=list)  # checkpoint keys dropped by the adapter or the filter
    renamed: dict[str, str] = field(default_factory=dict)
    module: str = ""

    @property
    def ok(self) -> bool:
        """True when nothing is missing, unexpected or mismatched."""
        return not (self.missing or self.unexpected or self.mismatched)

    def __str__(self) -> str:
        head = (f"load_into({self.module}): {len(self.applied)} applied, {len(self.missing)} missing, "
                f"{len(self.unexpected)} unexpected, {len(self.mismatched)} mismatched, {len(self.cast)} cast, "
                f"{len(self.skipped)} skipped")
        lines = [head]

        def section(title: str, items: list[str]) -> None:
            if items:
                more = f" ... and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
                lines.append(f"  {title}: {', '.join(items[:_SHOWN])}{more}")

        section("missing", self.missing)
        section("unexpected", self.unexpected)
        section("mismatched", [f"{k} (module {_fmt(exp)}, checkpoint {_fmt(got)})" for k, exp, got in self.mismatched])
        section("cast", [f"{k} ({a} -> {b})" for k, a, b in self.cast])
        return "\n".join(lines)


def _fmt(meta: tuple) -> str:
    shape, dtype = meta
    return f"{list(shape)} {dtype}"


def _source(source, where: str) -> dict[str, Tensor]:
    if isinstance(source, (str, os.PathLike)):
        return load(source)
    if isinstance(source, Mapping):
        return flatten_state_dict(unwrap_state_dict(source))
    raise TypeError(f"load_into: source must be a path or a dict of tensors, got {type(source).__name__}")


def _rules(remap) -> list[tuple[re.Pattern, str]]:
    if isinstance(remap, Mapping):
        remap = list(remap.items())
    out = []
    for rule in remap:
        if not (isinstance(rule, (tuple, list)) and len(rule) == 2 and isinstance(rule[1], str)):
            raise TypeError(f"load_into: remap entries must be (regex, replacement) pairs, got {rule!r}")
        out.append((re.compile(rule[0]) if isinstance(rule[0], str) else rule[0], rule[1]))
    return out


def _filter(flt) -> Callable[[str], bool]:
    if flt is None:
        return lambda k: True
    if isinstance(flt, (str, re.Pattern)):
        pat = re.compile(flt)
        return lambda k: pat.search(k) is not None
    if callable(flt):
        return lambda k: bool(flt(k))
    raise TypeError(f"load_into: filter must be a regex or a function of the key, got {type(flt).__name__}")


def load_into(module, source, *, remap: Iterable[tuple[str, str]] | Mapping[str, str] = (),
              adapter: Adapter | None = None, strict: bool = True, filter=None,  # noqa: A002 - the issue's name
              dtype_cast: bool = True) -> LoadReport:
    """Copy ``source`` (a weights file path, or a dict such as a state dict) into ``module``'s
    parameters and persistent buffers; return a :class:`LoadReport`.

    With ``strict`` (default) any missing, unexpected or mismatched key raises
    :class:`~ember.store.LoadIntoError` carrying the report, and the module is left unchanged;
    otherwise the matching keys are copied and the rest reported. See the module docstring for
    ``remap``, ``adapter``, ``filter`` and ``dtype_cast``.
    """
    from ..autograd.grad_mode import no_grad
    from ..nn.module import Module
    if not isinstance(module, Module):
        raise TypeError(f"load_into: module must be an ember.nn.Module, got {type(module).__name__}")
    if adapter is not None and not (hasattr(adapter, "rename") and hasattr(adapter, "convert")):
        raise TypeError(f"load_into: adapter must have rename and convert methods, got {adapter!r}")
    where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<dict>"
    rules, keep = _rules(remap), _filter(filter)
    state = _source(source, where)
    targets = {k: v for k, v in module.state_dict(keep_vars=True).items() if isinstance(v, Tensor)}
    report = LoadReport(module=type(module).__name__)
    plan: dict[str, tuple[Tensor, Tensor]] = {}
    origin: dict[str, str] = {}
    for src, value in state.items():
        key = src
        for pat, rep in rules:
            key = pat.sub(rep, key)
        if adapter is not None:
            key = adapter.rename(key)
        if key is None or not keep(key):
            report.skipped.append(src)
            continue
        if key != src:
            report.renamed[src] = key
        if key in origin:
            raise StoreError(f"checkpoint keys {origin[key]!r} and {src!r} both map to {key!r}; fix remap/adapter",
                             path=where)
        origin[key] = src
        target = targets.get(key)
        if adapter is not None:
            value = adapter.convert(key, value, target)
        if target is None:
            report.unexpected.append(key)
            continue
        if tuple(value.shape) != tuple(target.shape):
            report.mismatched.append((key, (tuple(target.shape), target.dtype.name),
                                      (tuple(value.shape), value.dtype.name)))
            continue
        if value.dtype is not target.dtype:
            if not (dtype_cast and value.dtype.is_floating_point and target.dtype.is_floating_point):
                report.mismatched.append((key, (tuple(target.shape), target.dtype.name),
                                          (tuple(value.shape), value.dtype.name)))
                continue
            report.cast.append((key, value.dtype.name, target.dtype.name))
            value = value.to(target.dtype)
        plan[key] = (target, value)
    loaded = {id(t) for t, _ in plan.values()}  # a tied weight loaded under one name counts for all its names
    seen = set(plan) | {k for k, _, _ in report.mismatched}
    report.missing = [k for k, t in targets.items() if k not in seen and keep(k) and id(t) not in loaded]
    if strict and not report.ok:
        raise LoadIntoError(f"{report}\n(nothing was copied; strict=False loads the matching keys)",
                            report=report, path=where)
    with no_grad():
        for key, (target, value) in plan.items():
            target.copy_(value)
            report.applied.append(key)
    return report
