"""Download-and-cache for dataset files: mirrors tried in order, checksums verified, atomic writes.

Files go to ``root`` when a dataset is given one, else to the cache directory: ``$EMBER_DATA`` if
set, otherwise ``~/.cache/ember/datasets``. A download streams into a temporary file in the
destination folder, is hashed as it arrives, and is renamed into place (``os.replace``) only once
its checksum matches, so an interrupted or corrupted download never leaves a file that looks
finished, and two processes downloading the same file at once cannot see each other's halves.

>>> import tempfile, os, pathlib
>>> d = tempfile.mkdtemp(); src = pathlib.Path(d, "src.bin"); _ = src.write_bytes(b"hello")
>>> p = download_url([src.as_uri()], os.path.join(d, "cache", "hello.bin"),
...                  md5="5d41402abc4b2a76b9719d911017c592", progress=False)
>>> open(p, "rb").read()
b'hello'
"""

from __future__ import annotations

import hashlib
import http.client
import os
import posixpath
import sys
import tarfile
import urllib.request
from collections.abc import Sequence

__all__ = ["DownloadError", "default_data_dir", "download_url", "file_digest", "check_file", "extract_tar"]

_CHUNK = 1 << 20
# Module-level so tests (and users behind unusual proxies) can swap in their own opener.
_urlopen = urllib.request.urlopen


class DownloadError(OSError):
    """Every mirror failed (no network, HTTP error, or a file whose checksum did not match)."""


def default_data_dir() -> str:
    """The dataset cache: ``$EMBER_DATA`` if set, else ``~/.cache/ember/datasets``."""
    env = os.environ.get("EMBER_DATA")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return os.path.join(os.path.expanduser("~"), ".cache", "ember", "datasets")


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in 1 MiB chunks (``algorithm``: 'md5', 'sha256', ...)."""
    h = hashlib.new(algorithm, usedforsecurity=False)  # an integrity check, not security
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _expected(md5: str | None, sha256: str | None) -> tuple[str, str] | None:
    """The (algorithm, lowercase hex) to verify; sha256 wins when both are given."""
    if sha256:
        return "sha256", sha256.lower()
    if md5:
        return "md5", md5.lower()
    return None


def check_file(path: str | os.PathLike, md5: str | None = None, sha256: str | None = None) -> bool:
    """True when ``path`` exists and matches the checksum (or exists, when no checksum is given)."""
    if not os.path.isfile(path):
        return False
    want = _expected(md5, sha256)
    return want is None or file_digest(path, want[0]) == want[1]


def _fetch_one(url: str, dest: str, want: tuple[str, str] | None, timeout: float, progress: bool) -> None:
    """Stream ``url`` into a temp file next to ``dest``, verify, then rename it into place."""
    folder = os.path.dirname(dest) or "."
    tmp = os.path.join(folder, f".{os.path.basename(dest)}.{os.getpid()}.part")
    h = None
    if want is not None:
        h = hashlib.new(want[0], usedforsecurity=False)
    try:
        with _urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:
            total = resp.headers.get("Content-Length") if getattr(resp, "headers", None) else None
            total = int(total) if total and str(total).isdigit() else None
            done = 0
            while chunk := resp.read(_CHUNK):
                out.write(chunk)
                if h is not None:
                    h.update(chunk)
                done += len(chunk)
                if progress:
                    pct = f" {100 * done // total:3d}%" if total else ""
                    print(f"\r  {done / 1e6:8.1f} MB{pct}", end="", file=sys.stderr, flush=True)
            out.flush()
            os.fsync(out.fileno())
        if progress:
            print(file=sys.stderr)
        if h is not None and h.hexdigest() != want[1]:
            raise ValueError(f"{want[0]} checksum mismatch: got {h.hexdigest()}, expected {want[1]}")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def download_url(urls: str | Sequence[str], path: str | os.PathLike, md5: str | None = None,
                 sha256: str | None = None, timeout: float = 60.0, progress: bool = True) -> str:
    """Download one file to ``path`` unless it is already there with the right checksum.

    ``urls`` is one URL or several mirrors of the same file, tried in order; the first whose bytes
    match ``md5``/``sha256`` wins. Returns ``path``. Raises :class:`DownloadError` naming every URL
    tried and why it failed, and saying where to put the file by hand when there is no network.

    >>> download_url("https://example.invalid/x.bin", "/tmp/x.bin")  # doctest: +SKIP
    """
    mirrors = [urls] if isinstance(urls, str) else list(urls)
    if not mirrors:
        raise ValueError("download_url: no URL given")
    dest = os.fspath(path)
    want = _expected(md5, sha256)
    if os.path.isfile(dest):
        if want is None or file_digest(dest, want[0]) == want[1]:
            return dest
        if progress:
            print(f"{dest}: checksum does not match; downloading it again", file=sys.stderr)
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    failures = []
    for url in mirrors:
        if progress:
            print(f"Downloading {url} -> {dest}", file=sys.stderr)
        try:
            _fetch_one(url, dest, want, timeout, progress)
            return dest
        except (OSError, ValueError, http.client.HTTPException) as e:  # URLError, timeouts: OSErrors
            reason = getattr(e, "reason", None) or e
            failures.append(f"  {url}: {reason}")
    check = f" ({want[0]} {want[1]})" if want else ""
    raise DownloadError(
        f"could not download {os.path.basename(dest)} from any mirror:\n" + "\n".join(failures) +
        f"\nWithout network access, download the file elsewhere from one of those URLs and copy it to "
        f"{dest}{check}; it is then used without downloading.")


def extract_tar(archive: str | os.PathLike, dest: str | os.PathLike,
                members: Sequence[str] | None = None) -> list[str]:
    """Extract a .tar/.tar.gz safely: regular files and folders only, never outside ``dest``.

    ``members`` (archive paths) limits what is extracted. Each file is written to a temp name and
    renamed, so a half-extracted file never appears under its final name. Returns the member
    names extracted (a name in ``members`` that the archive lacks is simply not in the list).
    """
    dest = os.path.abspath(dest)
    wanted = {posixpath.normpath(n) for n in members} if members is not None else None
    done: list[str] = []
    with tarfile.open(archive, "r:*") as tar:
        for m in tar:
            name = posixpath.normpath(m.name)  # "./a/b" and "a/b" are the same member
            if wanted is not None and name not in wanted:
                continue
            target = os.path.abspath(os.path.join(dest, name))
            if os.path.commonpath([dest, target]) != dest:
                raise ValueError(f"extract_tar: {archive} has a member outside the destination: {m.name!r}")
            if m.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            if not m.isfile():  # links, devices, fifos: never needed by a dataset, never followed
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            src = tar.extractfile(m)
            tmp = f"{target}.{os.getpid()}.part"
            try:
                with src, open(tmp, "wb") as out:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
            done.append(name)
    return done
