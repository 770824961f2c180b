"""Every example in the documentation runs: the ```python blocks of docs/*.md and README.md.

Rules (also in docs/design.md, "Documentation"):

* The ```python blocks of one file run in order in one namespace, as a reader would type them,
  in a fresh Python process per file (so examples may register devices or change defaults).
* A block may assert things; a failing block fails the test with the file and line.
* A ```python block followed directly by a ```text block must print exactly that text
  (trailing spaces ignored), so output shown in the docs stays true.
* A line ending in ``# doctest: skip`` is not run; a block preceded by the HTML comment
  ``<!-- no-test -->`` is not run at all. Use these only for code that needs a GPU or a network.
* ```bash and other blocks are not run.

Run one file by hand: ``python tests/test_docs.py docs/autograd.md``.
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import subprocess
import sys
import traceback

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
NO_TEST = "<!-- no-test -->"
SKIP_LINE = re.compile(r"#\s*doctest:\s*skip\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


class Block:
    """A fenced code block: its language, first line number (1-based) and text."""

    def __init__(self, lang: str, line: int, text: str, skipped: bool):
        self.lang, self.line, self.text, self.skipped = lang, line, text, skipped
        self.expected: str | None = None  # for python blocks followed by a ```text block


def parse(text: str) -> list[Block]:
    """The fenced blocks of a markdown text; a ```text block right after a python block (blank
    lines between at most) becomes that block's expected output."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i, prev_nonblank, last_end = 0, "", None
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                prev_nonblank = lines[i].strip()
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise ValueError(f"unclosed code block starting at line {i + 1}")
        body = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:j])
        adjacent = last_end is not None and not any(ln.strip() for ln in lines[last_end + 1:i])
        if lang in ("text", "output") and adjacent and blocks and blocks[-1].lang == "python":
            blocks[-1].expected = body
        else:
            blocks.append(Block(lang, i + 2, body, prev_nonblank == NO_TEST))
        prev_nonblank, last_end, i = "", j, j + 1
    return blocks


def runnable(block: Block) -> str:
    """The block's code with ``# doctest: skip`` lines blanked (line numbers kept)."""
    return "\n".join("" if SKIP_LINE.search(ln) else ln for ln in block.text.splitlines())


def normalise(out: str) -> str:
    return "\n".join(ln.rstrip() for ln in out.strip("\n").splitlines())


def run_file(path: pathlib.Path) -> tuple[int, str | None]:
    """Run a file's python blocks in order in this process: (blocks run, first failure or None)."""
    ns: dict = {"__name__": f"docs_{path.stem}"}
    ran = 0
    for b in (b for b in parse(path.read_text()) if b.lang == "python"):
        if b.skipped:
            continue
        # leading newlines make tracebacks point at the markdown file's own line numbers
        code = compile("\n" * (b.line - 1) + runnable(b), str(path), "exec")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(code, ns)
        except BaseException:  # noqa: BLE001 - report any failure of the example, SystemExit included
            return ran, f"{path}:{b.line}: the example raised\n{traceback.format_exc()}"
        if b.expected is not None and normalise(out.getvalue()) != normalise(b.expected):
            return ran, (f"{path}:{b.line}: the example printed\n{normalise(out.getvalue())}\n"
                         f"but the document shows\n{normalise(b.expected)}")
        ran += 1
    return ran, None


def _id(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_examples_run(path: pathlib.Path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), str(path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{_id(path)}:\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    assert "blocks ran" in proc.stdout


# ---- the extractor itself -------------------------------------------------------------------------
SAMPLE = """\
Intro.

```python
x = 1
print(x + 1)
```

```text
2
```

<!-- no-test -->
```python
raise SystemExit("never runs")
```

```bash
echo not python
```

```python
y = x  # doctest: skip
```
"""


def test_parse_attaches_output_and_honours_markers():
    blocks = parse(SAMPLE)
    assert [b.lang for b in blocks] == ["python", "python", "bash", "python"]
    first, second, _, last = blocks
    assert first.line == 4 and first.expected == "2"
    assert second.skipped and not first.skipped
    assert runnable(last).strip() == ""


def test_run_file_reports_wrong_output_and_errors(tmp_path):
    good = tmp_path / "good.md"
    good.write_text(SAMPLE)
    assert run_file(good) == (2, None)
    wrong = tmp_path / "wrong.md"
    wrong.write_text("```python\nprint(1)\n```\n```text\n3\n```\n")
    ran, err = run_file(wrong)
    assert ran == 0 and "printed\n1\nbut the document shows\n3" in err
    broken = tmp_path / "broken.md"
    broken.write_text("text\n\n```python\nx = 1\n```\n\n```python\n\nassert x == 2\n```\n")
    ran, err = run_file(broken)
    assert ran == 1 and f"{broken}:8" in err and f'File "{broken}", line 9' in err


def test_every_guide_page_has_examples():
    """Each page of the guide carries checked examples (install.md and index.md hold only shell and links)."""
    for path in FILES:
        if path.name not in ("install.md", "index.md"):
            assert any(b.lang == "python" for b in parse(path.read_text())), f"{_id(path)} has no python examples"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # the checkout's ember, as under pytest
    total = 0
    for arg in sys.argv[1:]:
        n, failure = run_file(pathlib.Path(arg))
        total += n
        if failure:
            print(failure, file=sys.stderr)
            sys.exit(1)
    print(f"{total} blocks ran")
