"""ember.data's datasets, samplers, collation and dataset transforms, against torch.utils.data."""

from __future__ import annotations

import collections
import doctest
import gzip
import importlib
import json

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.data as ed
from ember.data.collate import collate_to_wire, from_wire

Point = collections.namedtuple("Point", "x y")


# ---- comparing ember results with torch's ------------------------------------------------------------
def same(e, t, path="batch"):
    """Assert an ember structure equals a torch one: containers, types, tensor values, shapes, dtypes."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"{path}: ember gave {type(e).__name__}, torch a tensor"
        assert e.dtype.name == str(t.dtype).removeprefix("torch."), f"{path}: {e.dtype} vs {t.dtype}"
        assert tuple(e.shape) == tuple(t.shape), f"{path}: {e.shape} vs {t.shape}"
        np.testing.assert_array_equal(e.numpy(force=True), t.numpy(), err_msg=path)
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t), f"{path}: {type(e)} {list(e)} vs {type(t)} {list(t)}"
        for k in t:
            same(e[k], t[k], f"{path}[{k!r}]")
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), f"{path}: {type(e).__name__} vs {type(t).__name__}"
        for i, (a, b) in enumerate(zip(e, t)):
            same(a, b, f"{path}[{i}]")
    else:
        assert type(e) is type(t) and e == t, f"{path}: {e!r} vs {t!r}"


def to_torch(x):
    """An ember-side example with ember tensors replaced by torch ones (numpy and Python values unchanged)."""
    if isinstance(x, ember.Tensor):
        return torch.from_numpy(np.array(x.numpy()))
    if isinstance(x, dict):
        return type(x)((k, to_torch(v)) for k, v in x.items())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(to_torch(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch(v) for v in x)
    return x


BATCHES = {
    "ints": [1, 2, 3],
    "floats": [1.5, 2.0],
    "bools": [True, False],
    "int_then_float": [1, 2.5],
    "float_then_int": [2.5, 1],
    "bool_and_int": [True, 2],
    "np_float32_scalars": [np.float32(1.5), np.float32(2)],
    "np_int32_scalars": [np.int32(1), np.int32(-4)],
    "np_float64_and_float": [np.float64(1.0), 2.0],
    "np_arrays": [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)],
    "np_mixed_dtypes": [np.zeros(2, np.int64), np.ones(2, np.float32)],
    "np_bool": [np.array([True, False]), np.array([False, False])],
    "np_0d": [np.array(3.0), np.array(4.0)],
    "tensors": [ember.arange(6).reshape(2, 3), ember.ones(2, 3, dtype=ember.int64)],
    "tensors_0d": [ember.tensor(1.5), ember.tensor(2.5)],
    "tensors_float16": [ember.ones(2, dtype=ember.float16), ember.zeros(2, dtype=ember.float16)],
    "tensors_mixed": [ember.zeros(2, dtype=ember.int64), ember.ones(2)],
    "tensors_empty": [ember.zeros(0, 3), ember.zeros(0, 3)],
    "strings": ["a", "bc"],
    "bytes": [b"a", b"b"],
    "tuples": [(ember.zeros(2), 1, "a"), (ember.ones(2), 0, "b")],
    "lists": [[1, 2.0], [3, 4.0]],
    "dicts": [{"x": ember.zeros(3), "y": 1, "meta": {"id": "a", "w": 0.5}},
              {"x": ember.ones(3), "y": 0, "meta": {"id": "b", "w": 1.5}}],
    "ordered_dict": [collections.OrderedDict(b=1, a=2.0), collections.OrderedDict(b=3, a=4.0)],
    "namedtuple": [Point(1, np.zeros(2)), Point(2, np.ones(2))],
    "nested_list_of_tuples": [[(1, 2), (3, 4)], [(5, 6), (7, 8)]],
    "single": [{"x": np.arange(3)}],
}


@pytest.mark.parametrize("name", list(BATCHES))
def test_default_collate_matches_torch(name):
    batch = BATCHES[name]
    same(ed.default_collate(batch), tud.default_collate([to_torch(b) for b in batch]))


@pytest.mark.parametrize("name", list(BATCHES))
def test_worker_collation_through_the_wire_is_default_collate(name):
    """Workers collate with numpy and the main process rebuilds tensors: the result is the same."""
    import pickle
    batch = BATCHES[name]
    wired = from_wire(pickle.loads(pickle.dumps(collate_to_wire(batch))))
    same(wired, to_torch(ed.default_collate(batch)))
    same(wired, tud.default_collate([to_torch(b) for b in batch]))


@pytest.mark.parametrize("batch, err", [
    ([np.zeros(2), np.zeros(3)], RuntimeError),
    ([np.array(["a"]), np.array(["b"])], TypeError),
    ([object(), object()], TypeError),
    ([[1, 2], [1]], RuntimeError),
    ([{"a": 1}, 5], TypeError),
])
def test_default_collate_errors_match_torch(batch, err):
    with pytest.raises(err):
        tud.default_collate([to_torch(b) for b in batch])
    with pytest.raises(err):
        ed.default_collate(batch)


def test_default_collate_errors_name_the_element_and_shapes():
    with pytest.raises(RuntimeError, match=r"element 0 of the batch has shape \[2\] but element 2 has shape \[3\]"):
        ed.default_collate([ember.zeros(2), ember.zeros(2), ember.zeros(3)])
    with pytest.raises(RuntimeError, match=r"at \['img'\]"):
        ed.default_collate([{"img": np.zeros((2, 2))}, {"img": np.zeros((2, 3))}])
    with pytest.raises(TypeError, match="element 1 of the batch is a int but element 0 is a Tensor"):
        ed.default_collate([ember.zeros(2), 1])
    with pytest.raises(RuntimeError, match="element 0 has 2 items and element 1 has 1"):
        ed.default_collate([[1, 2], [1]])
    with pytest.raises(KeyError, match="element 1 of the batch lacks the key"):
        ed.default_collate([{"a": 1}, {"b": 2}])
    with pytest.raises(IndexError, match="empty"):
        ed.default_collate([])


def test_default_collate_keeps_autograd_and_devices_of_tensors():
    w = ember.ones(3, requires_grad=True)
    out = ed.default_collate([w * 2, w * 3])
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [5.0, 5.0, 5.0])


@pytest.mark.parametrize("data", [
    np.arange(3.0), np.float32(2), {"a": np.zeros(2), "b": [np.ones(1), 3]}, (np.zeros(1), "s"),
    Point(np.zeros(1), 2), "text", 5, [np.array(["x"])], ember.ones(2),
])
def test_default_convert_matches_torch(data):
    t_data = torch.ones(2) if isinstance(data, ember.Tensor) else data
    same(ed.default_convert(data), tud.default_convert(t_data))


# ---- datasets ------------------------------------------------------------------------------------------
def test_tensor_dataset_matches_torch():
    x, y = np.arange(12, dtype=np.float32).reshape(4, 3), np.array([0, 1, 0, 1])
    e = ed.TensorDataset(ember.tensor(x), ember.tensor(y))
    t = tud.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert len(e) == len(t) == 4
    for i in (0, 3, -1, -4):
        same(e[i], t[i])
    with pytest.raises(IndexError, match="index 4 is out of range for a dataset of length 4"):
        e[4]
    with pytest.raises(IndexError):
        e[-5]
    with pytest.raises(ValueError, match="size mismatch"):
        ed.TensorDataset(ember.zeros(3), ember.zeros(4))
    with pytest.raises(TypeError, match="not an ember.Tensor"):
        ed.TensorDataset(np.zeros(3))


def test_concat_dataset_matches_torch():
    parts = [list(range(3)), list(range(10, 12)), [], list(range(20, 24))]
    e = ed.ConcatDataset([ed.InMemoryDataset(p) for p in parts])
    t = tud.ConcatDataset(parts)
    assert len(e) == len(t) == 9 and e.cumulative_sizes == t.cumulative_sizes
    assert [e[i] for i in range(len(e))] == [t[i] for i in range(len(t))]
    assert [e[-i] for i in range(1, 10)] == [t[-i] for i in range(1, 10)]
    with pytest.raises(IndexError):
        e[9]
    with pytest.raises(IndexError):
        e[-10]
    with pytest.raises(ValueError):
        ed.ConcatDataset([])
    added = ed.InMemoryDataset("ab") + ed.InMemoryDataset("c")
    assert isinstance(added, ed.ConcatDataset) and [added[i] for i in range(3)] == ["a", "b", "c"]


def test_concat_refuses_streams_and_chain_chains_them():
    class Count(ed.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    with pytest.raises(TypeError, match="IterableDataset"):
        ed.ConcatDataset([Count(2)])
    chain = Count(2) + Count(3)
    assert isinstance(chain, ed.ChainDataset) and list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    with pytest.raises(TypeError):
        ed.ChainDataset([ed.InMemoryDataset([1])])


def test_subset_matches_torch():
    base = list("abcdefg")
    e, t = ed.Subset(ed.InMemoryDataset(base), [6, 0, 2]), tud.Subset(base, [6, 0, 2])
    assert len(e) == len(t) and [e[i] for i in range(3)] == [t[i] for i in range(3)]
    assert e[-1] == "c" and e.__getitems__([0, 2]) == ["g", "c"]
    with pytest.raises(IndexError):
        e[3]
    assert ed.Subset(base, ember.tensor([1, 2])).indices == [1, 2]


@pytest.mark.parametrize("n, lengths", [
    (10, [3, 7]), (10, [0.5, 0.5]), (10, [0.33, 0.33, 0.34]), (7, [0.1, 0.2, 0.7]), (5, [1, 0, 4]), (1, [1]),
    (11, [0.25, 0.25, 0.25, 0.25]),
])
def test_random_split_lengths_match_torch(n, lengths):
    e = ed.random_split(list(range(n)), lengths, generator=ember.Generator().manual_seed(0))
    t = tud.random_split(list(range(n)), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in e] == [len(s) for s in t]
    assert sorted(i for s in e for i in s.indices) == list(range(n))


def test_random_split_warns_about_empty_splits_like_torch():
    with pytest.warns(UserWarning):
        t = tud.random_split(range(2), [0.1, 0.1, 0.8])
    with pytest.warns(UserWarning, match="index 1 is 0"):
        e = ed.random_split(range(2), [0.1, 0.1, 0.8])
    assert [len(s) for s in e] == [len(s) for s in t] == [1, 0, 1]


@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [1.5, -0.5], [4, 7]])
def test_random_split_errors_match_torch(lengths):
    with pytest.raises(ValueError):
        tud.random_split(list(range(10)), lengths)
    with pytest.raises(ValueError):
        ed.random_split(list(range(10)), lengths)


def test_random_split_is_reproducible_with_manual_seed():
    ember.manual_seed(3)
    a = [s.indices for s in ed.random_split(range(20), [0.8, 0.2])]
    ember.manual_seed(3)
    b = [s.indices for s in ed.random_split(range(20), [0.8, 0.2])]
    c = [s.indices for s in ed.random_split(range(20), [0.8, 0.2])]
    assert a == b and a != c


def test_in_memory_dataset_sources(tmp_path):
    ds = ed.InMemoryDataset(x * x for x in range(4))
    assert len(ds) == 4 and ds[-1] == 9
    with pytest.raises(IndexError, match="InMemoryDataset index 4"):
        ds[4]
    assert ed.InMemoryDataset(ed.InMemoryDataset("ab")).items == ["a", "b"]
    with pytest.raises(TypeError):
        ed.InMemoryDataset(3)
    p = tmp_path / "t.csv"
    p.write_text("x,label,name\n0.5,1,a\n2,0,b\n\n")
    assert ed.InMemoryDataset.from_csv(p).items == [{"x": 0.5, "label": 1, "name": "a"},
                                                     {"x": 2, "label": 0, "name": "b"}]
    gz = tmp_path / "t.csv.gz"
    with gzip.open(gz, "wt") as f:
        f.write("1;2;3\n4;5;6\n")
    rows = ed.InMemoryDataset.from_csv(gz, delimiter=";", header=False, transform=lambda r: (r[:-1], r[-1]))
    assert rows.items == [([1, 2], 3), ([4, 5], 6)]
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1\n")
    with pytest.raises(ValueError, match="line 2 has 1 fields but the header has 2"):
        ed.InMemoryDataset.from_csv(bad)
    j = tmp_path / "t.jsonl"
    j.write_text(json.dumps({"a": 1}) + "\n\n" + json.dumps({"a": 2}) + "\n")
    assert ed.InMemoryDataset.from_jsonl(j, transform=lambda r: r["a"]).items == [1, 2]
    j.write_text("{oops\n")
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        ed.InMemoryDataset.from_jsonl(j)


# ---- samplers ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, bs, drop", [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False),
                                         (2, 5, True), (0, 2, False), (1, 1, False)])
def test_batch_sampler_matches_torch(n, bs, drop):
    e = ed.BatchSampler(ed.SequentialSampler(range(n)), bs, drop)
    t = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop)
    assert list(e) == list(t) and len(e) == len(t)


@pytest.mark.parametrize("bs, drop", [(0, False), (-1, False), (True, False), (2.0, False), (2, 1), (2, None)])
def test_batch_sampler_errors_match_torch(bs, drop):
    with pytest.raises(ValueError):
        tud.BatchSampler(range(3), bs, drop)
    with pytest.raises(ValueError):
        ed.BatchSampler(range(3), bs, drop)


def test_sequential_sampler_matches_torch():
    assert list(ed.SequentialSampler("abcd")) == list(tud.SequentialSampler("abcd")) == [0, 1, 2, 3]


def test_random_sampler():
    g = ember.Generator().manual_seed(0)
    s = ed.RandomSampler(range(10), generator=g)
    a, b = list(s), list(s)
    assert sorted(a) == sorted(b) == list(range(10)) and a != b and len(s) == 10
    assert list(ed.RandomSampler(range(10), generator=ember.Generator().manual_seed(0))) == a
    long = list(ed.RandomSampler(range(4), num_samples=10, generator=g))
    assert len(long) == 10 and sorted(long[:8]) == [0, 0, 1, 1, 2, 2, 3, 3] and len(set(long[8:])) == 2
    rep = list(ed.RandomSampler(range(3), replacement=True, num_samples=50, generator=g))
    assert len(rep) == 50 and set(rep) == {0, 1, 2}
    ember.manual_seed(5)
    x = list(ed.RandomSampler(range(8)))
    ember.manual_seed(5)
    assert list(ed.RandomSampler(range(8))) == x


@pytest.mark.parametrize("kw, err", [({"replacement": 1}, TypeError), ({"num_samples": 0}, ValueError),
                                     ({"num_samples": 2.5}, ValueError)])
def test_random_sampler_errors_match_torch(kw, err):
    with pytest.raises(err):
        tud.RandomSampler(range(3), **kw)
    with pytest.raises(err):
        ed.RandomSampler(range(3), **kw)
    with pytest.raises(ValueError):  # an empty dataset has nothing to sample
        ed.RandomSampler([])
    with pytest.raises(TypeError, match="ember.Generator"):
        ed.RandomSampler(range(3), generator=torch.Generator())


def test_subset_and_weighted_samplers():
    g = ember.Generator().manual_seed(1)
    s = ed.SubsetRandomSampler([7, 3, 5, 9], generator=g)
    assert sorted(s) == [3, 5, 7, 9] and len(s) == 4
    w = ed.WeightedRandomSampler([0.0, 2.0, 0.0, 1.0], 200, generator=g)
    drawn = list(w)
    assert len(drawn) == len(w) == 200 and set(drawn) == {1, 3} and drawn.count(1) > drawn.count(3)
    assert sorted(ed.WeightedRandomSampler(ember.ones(4), 4, replacement=False, generator=g)) == [0, 1, 2, 3]
    for bad in (dict(weights=[[1.0, 2.0]], num_samples=2), dict(weights=[1.0], num_samples=0),
                dict(weights=[1.0], num_samples=1, replacement=0)):
        with pytest.raises(ValueError):
            tud.WeightedRandomSampler(**bad)
        with pytest.raises(ValueError):
            ed.WeightedRandomSampler(**bad)


@pytest.mark.parametrize("make", [
    lambda g: ed.RandomSampler(range(9), generator=g),
    lambda g: ed.RandomSampler(range(9)),
    lambda g: ed.SubsetRandomSampler(list(range(9)), generator=g),
    lambda g: ed.WeightedRandomSampler([1.0] * 9, 9, generator=g),
    lambda g: ed.BatchSampler(ed.RandomSampler(range(9), generator=g), 4, False),
])
def test_sampler_state_dict_replays_the_stream(make):
    s = make(ember.Generator().manual_seed(2))
    list(s)
    state = json.loads(json.dumps(s.state_dict()))  # plain values
    expected = [list(s), list(s)]
    fresh = make(ember.Generator().manual_seed(99))
    fresh.load_state_dict(state)
    assert [list(fresh), list(fresh)] == expected


# ---- transforms ----------------------------------------------------------------------------------------
def test_mapper_partial_composed_window():
    base = ed.InMemoryDataset(range(10))
    m = ed.Mapper(base, lambda x: x * 10)
    assert len(m) == 10 and m[3] == 30 and m[-1] == 90
    p = ed.Partial(base, 2, 5)
    assert len(p) == 3 and [p[i] for i in range(3)] == [2, 3, 4] and p[-1] == 4
    assert len(ed.Partial(base, -3)) == 3 and ed.Partial(base, 0, 0).__len__() == 0
    c = ed.Composed([ed.Partial(base, 0, 2), ed.Partial(base, 8, 10)])
    assert [c[i] for i in range(len(c))] == [0, 1, 8, 9] and c[-1] == 9
    w = ed.Window(base, 4)
    assert len(w) == 7 and w[0] == [0, 1, 2, 3] and w[-1] == [6, 7, 8, 9]
    assert len(ed.Window(base, 10)) == 1 and len(ed.Window(base, 11)) == 0
    for ds, n in ((m, 10), (p, 3), (c, 4), (w, 7)):
        with pytest.raises(IndexError, match=f"out of range for a dataset of length {n}"):
            ds[n]
        with pytest.raises(IndexError):
            ds[-n - 1]
        with pytest.raises(TypeError):
            ds[1.0]


def test_transform_argument_errors():
    base = ed.InMemoryDataset(range(5))
    with pytest.raises(IndexError, match="end=6 is out of range"):
        ed.Partial(base, 0, 6)
    with pytest.raises(IndexError):
        ed.Partial(base, -6, 2)
    with pytest.raises(ValueError, match="start"):
        ed.Partial(base, 3, 2)
    with pytest.raises(ValueError):
        ed.Window(base, 0)
    with pytest.raises(TypeError):
        ed.Mapper(base, 3)
    with pytest.raises(TypeError, match="map-style"):
        ed.Mapper(ed.ChainDataset([]), str)
    with pytest.raises(ValueError, match="not both"):
        ed.Shuffled(base, 1, generator=ember.Generator())


def test_shuffled_is_a_fixed_reproducible_permutation():
    base = ed.InMemoryDataset(range(20))
    a = ed.Shuffled(base, seed=7)
    order = [a[i] for i in range(20)]
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert [a[i] for i in range(20)] == order  # the same every time it is read
    assert [ed.Shuffled(base, 7)[i] for i in range(20)] == order
    assert [ed.Shuffled(base, ember.Generator().manual_seed(7))[i] for i in range(20)] == order
    assert [ed.Shuffled(base, seed=8)[i] for i in range(20)] != order
    ember.manual_seed(0)
    x = ed.Shuffled(base).permutation
    ember.manual_seed(0)
    assert ed.Shuffled(base).permutation == x
    assert a[-1] == order[-1]


def test_tensor_dataset_fast_path_through_views_equals_item_by_item():
    """DataLoader gathers TensorDataset batches directly (also through Subset/Partial/Shuffled)."""
    x = ember.arange(40.0).reshape(20, 2)
    y = ember.arange(20)
    ds = ed.Partial(ed.Shuffled(ed.Subset(ed.TensorDataset(x, y), list(range(19, -1, -1))), seed=1), 3, 17)
    fast = list(ed.DataLoader(ds, batch_size=4))
    slow = list(ed.DataLoader(ds, batch_size=4, collate_fn=lambda b: ed.default_collate(b)))
    assert len(fast) == len(slow) == 4
    for a, b in zip(fast, slow):
        same(a, to_torch(b))
    fast_w = list(ed.DataLoader(ds, batch_size=4, num_workers=1))
    for a, b in zip(fast_w, slow):
        same(a, to_torch(b))


def test_exports_and_docstring_examples():
    for name in ed.__all__:
        assert hasattr(ed, name), name
    globs = {"ember": ember, "np": np, **{n: getattr(ed, n) for n in ed.__all__}}
    attempted = 0
    for mod in ("dataset", "sampler", "collate", "loader", "transforms", "_workers"):
        m = importlib.import_module(f"ember.data.{mod}")
        r = doctest.testmod(m, extraglobs=globs, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert r.failed == 0, mod
        attempted += r.attempted
    assert attempted > 30
