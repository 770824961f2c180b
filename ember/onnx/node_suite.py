"""Run ONNX's backend node test suite (``onnx.backend.test``, ~1,900 cases) through ember.

Every case counts: a case whose inputs or outputs use a dtype ember lacks is a failure of class
``unsupported dtype``, not an exclusion. Failure classes: ``unsupported op`` (the importer refused
an operator), ``unsupported dtype``, ``wrong value`` (value, shape or dtype differs from the
expected output; rtol 1e-3, atol 1e-5 or the case's own larger tolerances, two ulps for bfloat16
outputs as onnx's runner allows, exact for integers/bools) and ``error`` (anything raised while
importing or running).

    python -m ember.onnx.node_suite            # the summary and the per-op failure table
    python -m ember.onnx.node_suite -k conv -v  # only cases whose name contains "conv", with reasons
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

RTOL, ATOL = 1e-3, 1e-5
CLASSES = ("unsupported op", "unsupported dtype", "wrong value", "error")
# ONNX element types ember can hold (TensorProto enum): float, uint8, int8, int16, int32, int64,
# bool, float16, double, bfloat16.
EMBER_ELEM_TYPES = {1, 2, 3, 5, 6, 7, 9, 10, 11, 16}


@dataclass
class CaseResult:
    name: str
    op: str
    expanded: bool
    ok: bool
    reason: str = ""      # one of CLASSES when not ok
    detail: str = ""


@dataclass
class SuiteResult:
    cases: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0

    def rate(self, expanded: bool | None = None) -> tuple[int, int]:
        cs = [c for c in self.cases if expanded is None or c.expanded == expanded]
        return sum(c.ok for c in cs), len(cs)


def _read(path: str, tp):
    import onnx
    from onnx import numpy_helper
    data = open(path, "rb").read()
    which = tp.WhichOneof("value") if tp is not None else "tensor_type"
    if which == "sequence_type":
        return numpy_helper.to_list(onnx.SequenceProto.FromString(data))
    if which == "optional_type":
        return numpy_helper.to_optional(onnx.OptionalProto.FromString(data))
    return numpy_helper.to_array(onnx.TensorProto.FromString(data))


def _elem_types(tp, acc: set) -> None:
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        acc.add(tp.tensor_type.elem_type)
    elif which == "sequence_type":
        _elem_types(tp.sequence_type.elem_type, acc)
    elif which == "optional_type":
        _elem_types(tp.optional_type.elem_type, acc)
    elif which == "map_type":
        acc.add(-1)


def _case_op(name: str, model) -> str:
    stem = name[5:] if name.startswith("test_") else name
    types = []
    for n in model.graph.node:
        if n.op_type not in types:
            types.append(n.op_type)
    if len(types) == 1:
        return types[0]
    import re
    for t in types:   # the op an expanded/multi-node case is about: its name starts the test's
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", t).lower()
        if stem.startswith(snake) or stem.startswith(t.lower()):
            return t
    return types[0] if types else "?"


def _compare(ref, out, where: str, rtol: float = RTOL, atol: float = ATOL) -> str:
    """'' when ``out`` matches ``ref``, else what differs. bfloat16 outputs get two bfloat16 ulps
    of relative tolerance (2**-6), as onnx's own backend test runner allows."""
    if isinstance(ref, list):
        if not isinstance(out, list) or len(out) != len(ref):
            return f"{where}: expected a sequence of {len(ref)}, got {type(out).__name__}"
        for i, (r, o) in enumerate(zip(ref, out)):
            d = _compare(r, o, f"{where}[{i}]", rtol, atol)
            if d:
                return d
        return ""
    if ref is None or out is None:
        return "" if ref is None and out is None else f"{where}: optional emptiness differs"
    ref = np.asarray(ref)
    out = np.asarray(out)
    if ref.dtype != out.dtype:
        return f"{where}: dtype {out.dtype}, expected {ref.dtype}"
    if ref.shape != out.shape:
        return f"{where}: shape {out.shape}, expected {ref.shape}"
    if ref.dtype.kind in "fc" or str(ref.dtype) == "bfloat16":
        if str(ref.dtype) == "bfloat16":
            rtol = max(rtol, 2.0 ** -6)
        r64, o64 = ref.astype(np.float64), out.astype(np.float64)
        if not np.allclose(o64, r64, rtol=rtol, atol=atol, equal_nan=True):
            bad = ~np.isclose(o64, r64, rtol=rtol, atol=atol, equal_nan=True)
            return f"{where}: {int(bad.sum())}/{ref.size} values differ (max abs err " \
                   f"{np.nanmax(np.abs(o64 - r64)[bad]) if bad.any() else 0:.3g})"
        return ""
    if not np.array_equal(ref, out):
        return f"{where}: {int((ref != out).sum())}/{ref.size} values differ"
    return ""


def _decode(x):
    """Data-set values may be protos (TensorProto, SequenceProto, OptionalProto): as numpy."""
    import onnx
    from onnx import numpy_helper
    if isinstance(x, onnx.TensorProto):
        return numpy_helper.to_array(x)
    if isinstance(x, onnx.SequenceProto):
        return numpy_helper.to_list(x)
    if isinstance(x, onnx.OptionalProto):
        return numpy_helper.to_optional(x)
    return x


def _data_sets(case, model):
    """(inputs, expected outputs) pairs: generated in memory by newer onnx, else read from the
    case folder's test_data_set_*/input_*.pb and output_*.pb."""
    if getattr(case, "data_sets", None):
        for ins, outs in case.data_sets:
            yield [_decode(x) for x in ins], [_decode(x) for x in outs]
        return
    for ds in sorted(glob.glob(os.path.join(case.model_dir, "test_data_set_*"))):
        n_in = len(glob.glob(os.path.join(ds, "input_*.pb")))
        n_out = len(glob.glob(os.path.join(ds, "output_*.pb")))
        yield ([_read(os.path.join(ds, f"input_{i}.pb"), model.graph.input[i].type) for i in range(n_in)],
               [_read(os.path.join(ds, f"output_{i}.pb"), model.graph.output[i].type) for i in range(n_out)])


def run_case(case) -> CaseResult:
    """Import and run one node-suite case (every data set); classify the outcome."""
    import onnx

    from .backend import EmberBackend
    from .ops._registry import OnnxOpError
    name = case.name
    expanded = "_expanded" in name
    model = case.model if getattr(case, "model", None) is not None else \
        onnx.load(os.path.join(case.model_dir, "model.onnx"))
    op = _case_op(name, model)
    res = CaseResult(name, op, expanded, False)
    types: set = set()
    for v in list(model.graph.input) + list(model.graph.output):
        _elem_types(v.type, types)
    lacking = types - EMBER_ELEM_TYPES
    if lacking:
        from onnx import TensorProto
        names = sorted(TensorProto.DataType.Name(t) if t >= 0 else "map" for t in lacking)
        res.reason, res.detail = "unsupported dtype", f"graph inputs/outputs of type {', '.join(names)}"
        return res
    try:
        rep = EmberBackend.prepare(model, "CPU", check=False)
    except OnnxOpError as e:
        msg = str(e)
        res.reason = "unsupported op" if "does not support" in msg and "operator" in msg else \
            ("unsupported dtype" if "dtype" in msg else "error")
        res.detail = msg.splitlines()[0] if res.reason != "unsupported op" else msg.replace("\n", " ")
        return res
    except Exception as e:  # noqa: BLE001 - every failure is recorded with its reason
        res.reason, res.detail = "error", f"import: {type(e).__name__}: {str(e)[:300]}"
        return res
    for inputs, refs in _data_sets(case, model):
        try:
            outs = rep.run(inputs)
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {str(e)[:300]}"
            res.reason = "unsupported dtype" if ("dtype" in msg and ("support" in msg or "lack" in msg)) \
                or "no ember counterpart" in msg else "error"
            res.detail = "run: " + msg
            return res
        if len(outs) < len(refs):
            res.reason, res.detail = "wrong value", f"{len(outs)} outputs, expected {len(refs)}"
            return res
        for i, (r, o) in enumerate(zip(refs, outs)):
            d = _compare(r, o, f"output {i}", max(RTOL, getattr(case, "rtol", RTOL)),
                         max(ATOL, getattr(case, "atol", ATOL)))
            if d:
                res.reason, res.detail = "wrong value", d
                return res
    res.ok = True
    return res


_CASES: list = []


def load_cases() -> list:
    """Every node-suite case (``onnx.backend.test.loader.load_model_tests(kind="node")``), generated
    once per process (it takes seconds)."""
    import warnings

    from onnx.backend.test.loader import load_model_tests
    if not _CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old = np.seterr(all="ignore")
            try:
                _CASES.extend(load_model_tests(kind="node"))
            finally:
                np.seterr(**old)
    return _CASES


def run_suite(pattern: str | None = None) -> SuiteResult:
    """Run every node case (or those whose name contains ``pattern``)."""
    import warnings

    out = SuiteResult()
    t0 = time.perf_counter()
    cases = load_cases()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases:
            if pattern and pattern not in case.name:
                continue
            try:
                out.cases.append(run_case(case))
            except Exception as e:  # noqa: BLE001 - a broken case file is still a recorded failure
                out.cases.append(CaseResult(case.name, "?", "_expanded" in case.name, False, "error",
                                            f"harness: {type(e).__name__}: {e}"))
    out.seconds = time.perf_counter() - t0
    # an expanded case (the op rewritten as its function body) counts under the op it expands
    ops_by_name = {c.name: c.op for c in out.cases}
    for c in out.cases:
        if c.expanded:
            base = c.name.replace("_expanded_ver18", "").replace("_expanded", "")
            c.op = ops_by_name.get(base, c.op)
    return out


def report(res: SuiteResult, verbose: bool = False) -> str:
    """The summary, per-class counts and per-op failure table, as text."""
    lines = []
    p, n = res.rate()
    pe, ne = res.rate(False)
    px, nx = res.rate(True)
    lines.append(f"ONNX node suite through ember: {p}/{n} passed ({100 * p / max(n, 1):.1f}%) in {res.seconds:.0f}s")
    lines.append(f"  non-expanded: {pe}/{ne} ({100 * pe / max(ne, 1):.1f}%)   "
                 f"expanded: {px}/{nx} ({100 * px / max(nx, 1):.1f}%)")
    cls = Counter(c.reason for c in res.cases if not c.ok)
    lines.append("  failures by class: " + ", ".join(f"{k}: {cls.get(k, 0)}" for k in CLASSES))
    per_op: dict[str, list[CaseResult]] = defaultdict(list)
    for c in res.cases:
        per_op[c.op].append(c)
    lines.append("")
    lines.append(f"{'op':28s} {'pass':>5s} {'total':>5s}  " + "  ".join(f"{k:>8s}" for k in
                 ("no-op", "dtype", "value", "error")))
    for opname in sorted(per_op):
        cs = per_op[opname]
        fails = Counter(c.reason for c in cs if not c.ok)
        if not fails and not verbose:
            continue
        lines.append(f"{opname:28s} {sum(c.ok for c in cs):5d} {len(cs):5d}  "
                     + "  ".join(f"{fails.get(k, 0):8d}" for k in CLASSES))
    full = [o for o in per_op if all(c.ok for c in per_op[o])]
    lines.append(f"(ops with every case passing: {len(full)} of {len(per_op)}; -v lists them too)")
    if verbose:
        lines.append("")
        for c in res.cases:
            if not c.ok:
                lines.append(f"FAIL {c.name} [{c.reason}] {c.detail}")
    return "\n".join(lines)


BEGIN, END = "<!-- node-suite:begin -->", "<!-- node-suite:end -->"


def markdown(res: SuiteResult) -> str:
    """The summary and the per-op coverage table as markdown (every op, passing or not)."""
    p, n = res.rate()
    pe, ne = res.rate(False)
    px, nx = res.rate(True)
    cls = Counter(c.reason for c in res.cases if not c.ok)
    lines = [f"Passing: **{p}/{n}** ({100 * p / max(n, 1):.1f}%); non-expanded cases **{pe}/{ne}** "
             f"({100 * pe / max(ne, 1):.1f}%), expanded {px}/{nx}.",
             "Failures by class: " + ", ".join(f"{k} {cls.get(k, 0)}" for k in CLASSES) + ".", "",
             "| op | pass | cases | unsupported op | unsupported dtype | wrong value | error |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    per_op: dict[str, list[CaseResult]] = defaultdict(list)
    for c in res.cases:
        per_op[c.op].append(c)
    for name in sorted(per_op):
        cs = per_op[name]
        f = Counter(c.reason for c in cs if not c.ok)
        lines.append(f"| {name} | {sum(c.ok for c in cs)} | {len(cs)} | "
                     + " | ".join(str(f.get(k, 0) or "") for k in CLASSES) + " |")
    return "\n".join(lines)


def update_docs(res: SuiteResult, path: str) -> None:
    """Replace the block between the node-suite markers in ``path`` with :func:`markdown`."""
    text = open(path).read()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path} has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + markdown(res) + "\n" + END + tail)


def write_status(res: SuiteResult, path: str) -> None:
    """The tracked status file: one line per case, ``PASS name`` or ``FAIL name [class] reason``."""
    p, n = res.rate()
    pe, ne = res.rate(False)
    lines = [f"# ONNX node suite through ember.onnx: {p}/{n} passed; non-expanded {pe}/{ne}.",
             "# Regenerate: python -m ember.onnx.node_suite --write " + path]
    for c in sorted(res.cases, key=lambda c: c.name):
        lines.append(f"PASS {c.name}" if c.ok else f"FAIL {c.name} [{c.reason}] {c.detail}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def read_status(path: str) -> dict[str, bool]:
    """case name -> passed, from a status file :func:`write_status` wrote."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith(("PASS ", "FAIL ")):
                out[line.split()[1]] = line.startswith("PASS")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ember.onnx.node_suite", description=__doc__.splitlines()[0])
    ap.add_argument("-k", default=None, help="only cases whose name contains this")
    ap.add_argument("-v", action="store_true", help="list every failing case with its reason")
    ap.add_argument("--write", metavar="PATH", default=None,
                    help="write the tracked status file (every case: PASS, or FAIL with its reason)")
    ap.add_argument("--docs", metavar="PATH", default=None,
                    help="rewrite the coverage table between the node-suite markers of this markdown file")
    a = ap.parse_args(argv)
    res = run_suite(a.k)
    print(report(res, a.v))
    if a.write:
        write_status(res, a.write)
    if a.docs:
        update_docs(res, a.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
