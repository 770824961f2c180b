"""A dataset in a SQLite file, for data larger than memory: rows are read one (or one batch) at a time.

Write once with :meth:`SqliteDataset.create` (or a :class:`SqliteWriter` that appends in batches),
then read lazily. Each column has a kind, recorded next to the table, that says how its values
are stored and read back:

========  ==================================  ===================================
kind      Python value                        stored as
========  ==================================  ===================================
array     numpy array                         BLOB in .npy format (no pickle)
tensor    ember tensor                        BLOB in .npy format, read as a tensor
int       int / numpy integer                 INTEGER
float     float / numpy float                 REAL
bool      bool                                INTEGER 0/1
str       str                                 TEXT
bytes     bytes                               BLOB
json      list / dict                         TEXT (JSON)
========  ==================================  ===================================

A table written by something else can be read too: its values come back as sqlite3 gives them,
except BLOBs in .npy format, which are read as arrays. ``None`` (NULL) is allowed in any column.

The dataset opens one connection per thread and per process, lazily, so it can be shared by
threads and by DataLoader worker processes (a connection inherited through ``fork`` is never
used or closed by the child) and pickled (the connections are not).

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "toy.db")
>>> ds = SqliteDataset.create(path, ((np.full(2, i, np.float32), i % 2) for i in range(5)),
...                           columns=["x", "y"])
>>> len(ds), ds[3]
(5, (array([3., 3.], dtype=float32), 1))
"""

from __future__ import annotations

import contextlib
import io
import json
import operator
import os
import pathlib
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .dataset import Dataset

__all__ = ["SqliteDataset", "SqliteWriter"]

_META = "_ember_columns"
_INDEX = "_index"
_NPY_MAGIC = b"\x93NUMPY"
_SQL_TYPE = {"array": "BLOB", "tensor": "BLOB", "int": "INTEGER", "float": "REAL", "bool": "INTEGER",
             "str": "TEXT", "bytes": "BLOB", "json": "TEXT", "any": ""}
_MAX_VARS = 900  # below SQLite's oldest limit on host parameters per statement (999)
# Connections a forked child inherited: kept referenced so they are never closed (or used) in the
# child, which SQLite forbids; the child opens its own.
_INHERITED: list[sqlite3.Connection] = []


def _q(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def _is_tensor(v: Any) -> bool:
    from .. import Tensor
    return isinstance(v, Tensor)


def _kind_of(v: Any) -> str:
    """The column kind a (non-None) value implies."""
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "bytes"
    if isinstance(v, np.ndarray):
        return "array"
    if _is_tensor(v):
        return "tensor"
    if isinstance(v, (list, dict)):
        return "json"
    raise TypeError(f"cannot store a {type(v).__name__}: use a numpy array, an ember tensor, int, float, bool, "
                    "str, bytes, or a JSON-able list/dict")


def _npy(a: np.ndarray, where: str) -> bytes:
    if a.dtype.kind in "OV" or a.dtype.names is not None or type(a.dtype).__module__.startswith("ml_dtypes"):
        raise TypeError(f"{where}: arrays of dtype {a.dtype} cannot be stored without pickle; "
                        "cast to a standard numeric dtype (e.g. float32) first")
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _encode(v: Any, kind: str, where: str) -> Any:
    """A Python value -> what sqlite3 stores, checked against the column's kind."""
    if v is None:
        return None
    got = _kind_of(v)
    ok = got == kind or kind == "any" or (kind == "float" and got in ("int", "bool")) or \
        (kind == "int" and got == "bool") or {got, kind} <= {"array", "tensor"}
    if not ok:
        raise TypeError(f"{where}: column holds {kind} values, got a {type(v).__name__}")
    if got == "array":
        return _npy(v, where)
    if got == "tensor":
        return _npy(v.numpy(force=True), where)
    if kind == "float":
        return float(v)
    if got in ("int", "bool"):
        return int(v)
    if got == "bytes":
        return bytes(v)
    if got == "json":
        return json.dumps(v)
    return v


def _decode(v: Any, kind: str) -> Any:
    if v is None:
        return None
    if kind in ("array", "tensor") or (kind == "any" and isinstance(v, bytes) and v.startswith(_NPY_MAGIC)):
        a = np.load(io.BytesIO(v), allow_pickle=False)
        if kind == "tensor":
            from .. import from_numpy
            return from_numpy(a)
        return a
    if kind == "bool":
        return bool(v)
    if kind == "json":
        return json.loads(v)
    return v


def _ro_uri(path: str) -> str:
    return pathlib.Path(path).absolute().as_uri() + "?" + urllib.parse.urlencode({"mode": "ro"})


def _item_row(item: Any, columns: list[str], where: str) -> list[Any]:
    """One item (dict, tuple/list, or a single value for a one-column table) -> values in column order."""
    if isinstance(item, dict):
        extra = set(item) - set(columns)
        if extra:
            raise ValueError(f"{where}: keys {sorted(extra)} are not columns of the table ({columns})")
        return [item.get(c) for c in columns]
    if isinstance(item, (tuple, list)) and not (len(columns) == 1 and isinstance(item, list)):
        if len(item) != len(columns):
            raise ValueError(f"{where}: {len(item)} values for {len(columns)} columns {columns}")
        return list(item)
    if len(columns) != 1:
        raise ValueError(f"{where}: a single {type(item).__name__} for {len(columns)} columns {columns}; "
                         "give a tuple or a dict")
    return [item]


class SqliteWriter:
    """Append items to a table of a SQLite file, committing every ``batch_size`` rows.

    Args:
        path: the database file (created if missing).
        table: the table name (created at the first flush if missing; appended to if it exists).
        columns: column names, or a dict name -> kind to fix kinds (see the module docs); inferred
            from the first item when omitted: a dict's keys, ``value`` for a single value, or
            ``col0, col1, ...`` for a tuple.
        batch_size: rows per transaction.
        overwrite: drop an existing table of that name first.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.db")
    >>> with SqliteWriter(p, columns=["text", "label"]) as w:
    ...     w.extend([("a", 0), ("b", 1)])
    >>> SqliteDataset(p)[1]
    ('b', 1)
    """

    def __init__(self, path: str | os.PathLike, table: str = "items",
                 columns: Sequence[str] | dict[str, str] | None = None, batch_size: int = 1000,
                 overwrite: bool = False):
        if batch_size < 1:
            raise ValueError(f"SqliteWriter: batch_size must be at least 1, got {batch_size}")
        if str(table).startswith("_ember") or table == _META:
            raise ValueError(f"SqliteWriter: table name {table!r} is reserved")
        self.path, self.table, self.batch_size = os.fspath(path), str(table), int(batch_size)
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self._conn = sqlite3.connect(self.path)
        self._conn.execute(f"CREATE TABLE IF NOT EXISTS {_META} (tbl TEXT, name TEXT, kind TEXT, "
                           "position INTEGER, PRIMARY KEY (tbl, name))")
        if overwrite:
            self._conn.execute(f"DROP TABLE IF EXISTS {_q(self.table)}")
            self._conn.execute(f"DELETE FROM {_META} WHERE tbl = ?", (self.table,))
        self._conn.commit()
        kinds = None
        if isinstance(columns, dict):
            kinds = {c: str(k) for c, k in columns.items()}
            bad = {c: k for c, k in kinds.items() if k not in _SQL_TYPE}
            if bad:
                raise ValueError(f"SqliteWriter: unknown column kinds {bad}; kinds are {sorted(_SQL_TYPE)}")
        self._columns: list[str] | None = list(columns) if columns is not None else None
        self._kinds: dict[str, str | None] = dict(kinds) if kinds else {}
        self._buffer: list[list[Any]] = []
        self._created = False
        existing = self._conn.execute("SELECT name, kind FROM " + _META + " WHERE tbl = ? ORDER BY position",
                                      (self.table,)).fetchall()
        if existing:
            names = [n for n, _ in existing]
            if self._columns is not None and self._columns != names:
                raise ValueError(f"SqliteWriter: table {self.table!r} in {self.path} has columns {names}, "
                                 f"not {self._columns}; pass overwrite=True to replace it")
            self._columns, self._kinds, self._created = names, dict(existing), True
            self.count = self._conn.execute(f"SELECT COUNT(*) FROM {_q(self.table)}").fetchone()[0]
        else:
            if self._has_table():
                raise ValueError(f"SqliteWriter: table {self.table!r} in {self.path} was not written by "
                                 "ember; pass overwrite=True to replace it or choose another table name")
            self.count = 0
        for c in self._columns or []:
            if c == _INDEX:
                raise ValueError(f"SqliteWriter: column name {_INDEX!r} is reserved")

    def _has_table(self) -> bool:
        return self._conn.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?",
                                  (self.table,)).fetchone() is not None

    def append(self, item: Any) -> None:
        """Add one item (a dict, a tuple in column order, or one value for a one-column table)."""
        if self._conn is None:
            raise ValueError("SqliteWriter: the writer is closed")
        where = f"SqliteWriter({self.table!r}) item {self.count + len(self._buffer)}"
        if self._columns is None:
            if isinstance(item, dict):
                self._columns = list(item)
            elif isinstance(item, tuple):
                self._columns = [f"col{i}" for i in range(len(item))]
            else:
                self._columns = ["value"]
        row = _item_row(item, self._columns, where)
        for c, v in zip(self._columns, row):
            if v is not None and self._kinds.get(c) is None:
                self._kinds[c] = _kind_of(v)
        self._buffer.append(row)
        if len(self._buffer) >= self.batch_size:
            self.flush()

    def extend(self, items: Iterable[Any]) -> None:
        """Add every item of an iterable (consumed lazily, so it may be larger than memory)."""
        for item in items:
            self.append(item)

    def _create(self) -> None:
        kinds = {c: self._kinds.get(c) or "any" for c in self._columns}
        self._kinds = kinds
        cols = ", ".join(f"{_q(c)} {_SQL_TYPE[kinds[c]]}".rstrip() for c in self._columns)
        self._conn.execute(f"CREATE TABLE {_q(self.table)} ({_INDEX} INTEGER PRIMARY KEY, {cols})")
        self._conn.executemany(f"INSERT INTO {_META} VALUES (?, ?, ?, ?)",
                               [(self.table, c, kinds[c], i) for i, c in enumerate(self._columns)])
        self._created = True

    def flush(self) -> None:
        """Write the buffered rows in one transaction."""
        if not self._buffer or self._conn is None:
            return
        with self._conn:  # one transaction: all of the batch or none of it
            if not self._created:
                self._create()
            rows = []
            for k, row in enumerate(self._buffer):
                where = f"SqliteWriter({self.table!r}) item {self.count + k}"
                rows.append([self.count + k] + [_encode(v, self._kinds[c], f"{where}, column {c!r}")
                                                for c, v in zip(self._columns, row)])
            marks = ", ".join("?" * (len(self._columns) + 1))
            self._conn.executemany(f"INSERT INTO {_q(self.table)} VALUES ({marks})", rows)
        self.count += len(self._buffer)
        self._buffer = []

    def close(self) -> None:
        """Flush and close (an empty table is still created when columns are known)."""
        if self._conn is None:
            return
        try:
            self.flush()
            if not self._created and self._columns is not None:
                with self._conn:
                    self._create()
        finally:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> SqliteWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self._conn is not None:
            self._buffer = []  # a failed run keeps what was committed, not the half batch
        self.close()


class SqliteDataset(Dataset):
    """Rows of a SQLite table as a map-style dataset, read lazily.

    Args:
        path: the database file.
        table: the table to read.
        columns: which columns to return, in order (default: all, in table order).
        transform: applied to each item.
        readonly: open the file read-only (default). With ``readonly=False`` the dataset also
            has :meth:`append` / :meth:`extend`.
        as_dict: items as ``{column: value}`` instead of a tuple (or a bare value for one column).

    ``len`` is counted when the dataset is opened (and after its own appends); call
    :meth:`refresh` to see rows another process added.
    """

    def __init__(self, path: str | os.PathLike, table: str = "items", columns: Sequence[str] | None = None,
                 transform: Callable | None = None, readonly: bool = True, as_dict: bool = False):
        self.path, self.table = os.fspath(path), str(table)
        self.transform, self.readonly, self.as_dict = transform, bool(readonly), bool(as_dict)
        if not os.path.isfile(self.path):
            raise FileNotFoundError(f"SqliteDataset: no such database file: {self.path}")
        self._init_local()
        conn = self._conn()
        found = conn.execute("SELECT type FROM sqlite_master WHERE name = ? AND type IN ('table', 'view')",
                             (self.table,)).fetchone()
        if found is None:
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                                                "AND name NOT LIKE 'sqlite_%' AND name != ?", (_META,))]
            raise ValueError(f"SqliteDataset: {self.path} has no table {self.table!r}; it has {names}")
        all_cols = [r[1] for r in conn.execute(f"PRAGMA table_info({_q(self.table)})")]
        kinds: dict[str, str] = {}
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (_META,)).fetchone():
            kinds = dict(conn.execute(f"SELECT name, kind FROM {_META} WHERE tbl = ?", (self.table,)).fetchall())
        available = [c for c in all_cols if c != _INDEX or not kinds]
        if columns is None:
            self.columns = available
        else:
            self.columns = [str(c) for c in ([columns] if isinstance(columns, str) else columns)]
            missing = [c for c in self.columns if c not in available]
            if missing:
                raise ValueError(f"SqliteDataset: table {self.table!r} in {self.path} has no column(s) {missing}; "
                                 f"its columns are {available}")
        if not self.columns:
            raise ValueError(f"SqliteDataset: table {self.table!r} in {self.path} has no columns to read")
        self._kinds = [kinds.get(c, "any") for c in self.columns]
        self._select = f"SELECT rowid, {', '.join(_q(c) for c in self.columns)} FROM {_q(self.table)}"
        self.refresh()

    # ---- connections: one per (process, thread), opened on first use --------------------------
    def _init_local(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[tuple[int, sqlite3.Connection]] = []

    def _conn(self) -> sqlite3.Connection:
        pid = os.getpid()
        held = getattr(self._local, "conn", None)
        if held is not None and held[0] == pid:
            return held[1]
        if held is not None:  # inherited through fork: never touch it here
            _INHERITED.append(held[1])
        # autocommit (isolation_level=None): reads never leave a transaction open that would
        # hold a lock and block a writer
        target, uri = (_ro_uri(self.path), True) if self.readonly else (self.path, False)
        conn = sqlite3.connect(target, uri=uri, check_same_thread=False, isolation_level=None)
        self._local.conn = (pid, conn)
        with self._lock:
            if any(p != pid for p, _ in self._opened):
                _INHERITED.extend(c for p, c in self._opened if p != pid)
                self._opened = [(p, c) for p, c in self._opened if p == pid]
            self._opened.append((pid, conn))
        return conn

    def close(self) -> None:
        """Close every connection this process opened (they reopen on the next read)."""
        pid = os.getpid()
        with self._lock:
            mine = [c for p, c in self._opened if p == pid]
            self._opened = [(p, c) for p, c in self._opened if p != pid]
        for c in mine:
            c.close()
        self._local = threading.local()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for k in ("_local", "_lock", "_opened"):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._init_local()

    def __enter__(self) -> SqliteDataset:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- length and row addressing -------------------------------------------------------------
    def refresh(self) -> None:
        """Count the rows again (after another process appended to the table)."""
        lo, hi, n = self._conn().execute(f"SELECT MIN(rowid), MAX(rowid), COUNT(*) FROM {_q(self.table)}").fetchone()
        self._n = int(n)
        if n == 0 or hi - lo + 1 == n:
            self._first, self._rowids = (lo or 0), None  # rows i -> rowid first + i
        else:  # gaps (deleted rows, a foreign table): remember the rowids in order, 8 bytes a row
            rows = self._conn().execute(f"SELECT rowid FROM {_q(self.table)} ORDER BY rowid")
            self._first, self._rowids = 0, np.fromiter((r[0] for r in rows), np.int64, count=n)

    def __len__(self) -> int:
        return self._n

    def _rowid(self, index: Any) -> int:
        try:
            i = operator.index(index)
        except TypeError:
            raise TypeError(f"SqliteDataset indices must be integers, got {type(index).__name__}") from None
        if not -self._n <= i < self._n:
            raise IndexError(f"SqliteDataset: index {i} is out of range for {self._n} rows")
        if i < 0:
            i += self._n
        return int(self._rowids[i]) if self._rowids is not None else self._first + i

    def _item(self, values: Sequence[Any]) -> Any:
        vals = [_decode(v, k) for v, k in zip(values, self._kinds)]
        if self.as_dict:
            item: Any = dict(zip(self.columns, vals))
        else:
            item = vals[0] if len(vals) == 1 else tuple(vals)
        return self.transform(item) if self.transform is not None else item

    def __getitem__(self, index: int) -> Any:
        rid = self._rowid(index)
        row = self._conn().execute(self._select + " WHERE rowid = ?", (rid,)).fetchone()
        if row is None:
            raise IndexError(f"SqliteDataset: row {index} disappeared from {self.table!r}; call refresh()")
        return self._item(row[1:])

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """Many items with one query per 900 rows (what a DataLoader asks for a batch)."""
        rids = [self._rowid(i) for i in indices]
        got: dict[int, tuple] = {}
        conn = self._conn()
        uniq = list(dict.fromkeys(rids))
        for s in range(0, len(uniq), _MAX_VARS):
            chunk = uniq[s:s + _MAX_VARS]
            marks = ", ".join("?" * len(chunk))
            for row in conn.execute(self._select + f" WHERE rowid IN ({marks})", chunk):
                got[row[0]] = row[1:]
        missing = [r for r in uniq if r not in got]
        if missing:
            raise IndexError(f"SqliteDataset: rows disappeared from {self.table!r}; call refresh()")
        return [self._item(got[r]) for r in rids]

    # ---- writing (readonly=False) ----------------------------------------------------------------
    def extend(self, items: Iterable[Any], batch_size: int = 1000) -> None:
        """Append items to the table (only when opened with ``readonly=False``)."""
        if self.readonly:
            raise PermissionError(f"SqliteDataset: {self.path} is open read-only; "
                                  "open it with readonly=False to append")
        with SqliteWriter(self.path, self.table, batch_size=batch_size) as w:
            w.extend(items)
        self.refresh()

    def append(self, item: Any) -> None:
        """Append one item (only when opened with ``readonly=False``)."""
        self.extend([item])

    @classmethod
    def create(cls, path: str | os.PathLike, items: Iterable[Any], table: str = "items",
               columns: Sequence[str] | dict[str, str] | None = None, batch_size: int = 1000,
               overwrite: bool = False, **kwargs: Any) -> SqliteDataset:
        """Write ``items`` (any iterable, consumed lazily) to a new table and open it for reading.

        ``columns`` and ``batch_size`` are :class:`SqliteWriter`'s; an existing table of that name
        is an error unless ``overwrite`` (to add rows to a table, use a :class:`SqliteWriter` or
        ``extend`` on a dataset opened with ``readonly=False``). Other keyword arguments go to
        the dataset.
        """
        if not overwrite and os.path.isfile(path):
            with contextlib.closing(sqlite3.connect(_ro_uri(os.fspath(path)), uri=True)) as c:
                if c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (str(table),)).fetchone():
                    raise ValueError(f"SqliteDataset.create: {os.fspath(path)} already has a table {table!r}; "
                                     "pass overwrite=True to replace it")
        with SqliteWriter(path, table, columns, batch_size, overwrite) as w:
            w.extend(items)
            if w._columns is None:
                raise ValueError("SqliteDataset.create: no items and no columns: nothing to create")
        return cls(path, table, **kwargs)

    def __repr__(self) -> str:
        return f"SqliteDataset({self.path!r}, table={self.table!r}, columns={self.columns}, rows={self._n})"
