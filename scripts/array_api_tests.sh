#!/usr/bin/env bash
# Run the Python Array API standard's test suite (data-apis/array-api-tests) against ember.array_api.
#
#   scripts/array_api_tests.sh SUITE_DIR [SPEC_DIR] [-- extra pytest args, e.g. array_api_tests/test_linalg.py]
#
# SUITE_DIR: a copy of data-apis/array-api-tests. SPEC_DIR: a copy of data-apis/array-api (the
# suite's `array-api` submodule; SUITE_DIR/array-api by default). Neither is ours to commit, so
# neither lives in this repository, and neither is changed: the suite runs from a scratch copy.
# Tests listed in array-api-xfails.txt (at the repository root) are xfailed. Prints the
# pass/fail counts. Environment: MAX_EXAMPLES (hypothesis examples per test, default 25), JOBS
# (pytest-xdist workers, default: the number of CPUs), ARRAY_API_TESTS_VERSION (default: the
# namespace's __array_api_version__, 2025.12), EMBER_SRC (the directory holding the ember package
# to test; default: this repository), REPORT_JSON (where to keep the pytest-json-report file).
set -euo pipefail

if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
    sed -n '2,13p' "$0"; exit 2
fi
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUITE="$(cd "$1" && pwd)"; shift
SPEC=""
if [[ $# -gt 0 && "$1" != "--" ]]; then SPEC="$1"; shift; fi
if [[ $# -gt 0 && "$1" == "--" ]]; then shift; fi
[[ -z "$SPEC" ]] && SPEC="$SUITE/array-api"
if [[ ! -d "$SPEC/spec" ]]; then
    echo "error: no spec at $SPEC (pass SPEC_DIR, a copy of data-apis/array-api)" >&2; exit 2
fi
SPEC="$(cd "$SPEC" && pwd)"

# run from a scratch copy, so that the fetched copies are never changed
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/suite"
(cd "$SUITE" && tar --exclude=./array-api --exclude=./.git -cf - .) | (cd "$WORK/suite" && tar -xf -)
ln -s "$SPEC" "$WORK/suite/array-api"
# The suite (since its PR #430) takes max() over the library's complex dtypes at import time, which
# crashes collection for a library without complex dtypes such as ember. The value is used only by
# complex-dtype cases, which do not run without complex dtypes: let it be None instead.
python "$REPO/scripts/array_api_tests.py" "$WORK/suite/array_api_tests"

# what the suite needs (its requirements.txt), plus xdist to use every core
python -m pip install -q -r "$SUITE/requirements.txt" pytest-xdist 2>&1 | grep -v "Running pip as the 'root'" || true

JOBS="${JOBS:-$(python -c 'import os; print(os.cpu_count() or 1)')}"
# the whole suite, unless the extra arguments name test files or ids themselves
TARGETS=(array_api_tests/)
for arg in "$@"; do [[ "$arg" == array_api_tests/* ]] && TARGETS=(); done
REPORT="${REPORT_JSON:-$WORK/report.json}"
cd "$WORK/suite"
set +e
# (every option as one --name=value token, and the rootdir given: pytest reads the suite's options
# only after it chose the rootdir, so a separate value would count as a path there)
# the standard's dtypes that ember lacks: the suite's documented switch to leave them out
export ARRAY_API_TESTS_SKIP_DTYPES="${ARRAY_API_TESTS_SKIP_DTYPES:-uint16,uint32,uint64,complex64,complex128}"
PYTHONPATH="${EMBER_SRC:-$REPO}${PYTHONPATH:+:$PYTHONPATH}" ARRAY_API_TESTS_MODULE=ember.array_api \
python -m pytest "${TARGETS[@]}" -q --rootdir=. -c pytest.ini -p no:cacheprovider -o addopts="" \
    --json-report --json-report-omit collectors keywords log streams --json-report-file="$REPORT" \
    --xfails-file="$REPO/array-api-xfails.txt" \
    --max-examples="${MAX_EXAMPLES:-25}" --hypothesis-disable-deadline -n "$JOBS" \
    "$@" | tail -n "${TAIL:-40}"
rc=${PIPESTATUS[0]}
set -e
if [[ -f "$REPORT" ]]; then
    python "$REPO/scripts/array_api_tests.py" --summary "$REPORT"
fi
exit "$rc"
