"""Helpers of scripts/array_api_tests.sh (run by it, not imported).

``array_api_tests.py SUITE/array_api_tests``: let the suite import for a library without
complex dtypes (its ``widest_complex_dtype`` takes max() of an empty list, and test_signatures looks
its name up); a no-op where the text differs.

``array_api_tests.py --summary REPORT``: print the pass/fail counts of a pytest-json-report
file, and the failing test ids (those to fix, or to list in array-api-xfails.txt with a reason).
"""

from __future__ import annotations

import json
import re
import sys

_PATTERN = re.compile(r"widest_complex_dtype = max\(\s*(\[\(dt, dtype_nbits\[dt\]\) for dt in complex_dtypes\]),"
                      r"\s*key=lambda x: x\[1\]\s*\)\[0\]")


_LOOKUP = "cmplx_name = dh.dtype_to_name[dh.widest_complex_dtype]"
_LOOKUP_FIXED = ("cmplx_name = (dh.dtype_to_name[dh.widest_complex_dtype] if dh.widest_complex_dtype "
                 "is not None else 'complex128')")


def fix(suite: str) -> None:
    """Patch the scratch copy of the suite at ``suite`` (its array_api_tests/ folder)."""
    for name, old, new in (("dtype_helpers.py", _PATTERN, None), ("test_signatures.py", _LOOKUP, _LOOKUP_FIXED)):
        path = f"{suite}/{name}"
        src = open(path).read()
        if new is None:
            fixed = old.sub(r"widest_complex_dtype = max(\1, key=lambda x: x[1], default=(None, None))[0]", src)
        else:
            fixed = src.replace(old, new)
        if fixed != src:
            with open(path, "w") as f:
                f.write(fixed)
            print(f"note: {name}: widest_complex_dtype may be None (a library without complex dtypes)")


def summary(path: str) -> None:
    report = json.load(open(path))
    counts = report["summary"]
    failed = sorted(t["nodeid"] for t in report.get("tests", []) if t.get("outcome") in ("failed", "error"))
    if failed:
        print("failing tests (fix them, or list them in array-api-xfails.txt with a reason):")
        for nodeid in failed:
            print("  " + nodeid)
    keys = ("passed", "failed", "xfailed", "xpassed", "skipped", "error")
    print("array-api-tests against ember.array_api: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in keys))


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        summary(sys.argv[2])
    else:
        fix(sys.argv[1])
