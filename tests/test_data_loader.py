"""ember.data.DataLoader: batching against torch's DataLoader, workers (order, errors, shutdown,
timeouts), determinism across worker counts, and mid-epoch resume."""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.data as ed
from tests.test_data_core import same

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gone(pid: int) -> bool:
    """The process no longer exists (a zombie of ours would still be listed)."""
    return not os.path.exists(f"/proc/{pid}")


def gone_or_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


# ---- datasets used by the tests (module level: workers may need to pickle them) -----------------------
class Aug(ed.Dataset):
    """Items with random 'augmentations' from ember's, numpy's and Python's global generators."""

    def __init__(self, n: int = 13):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"i": i, "noise": ember.rand(2), "np": np.random.rand(), "py": random.random()}


def key(batch) -> tuple:
    return (tuple(batch["i"].tolist()), tuple(np.round(batch["noise"].numpy(), 6).ravel().tolist()),
            tuple(np.round(batch["np"].numpy(), 6).tolist()), tuple(np.round(batch["py"].numpy(), 6).tolist()))


class Pid(ed.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return os.getpid()


class Boom(ed.Dataset):
    def __len__(self):
        return 9

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"item {i} is broken")
        return i


class Sleepy(ed.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 0:
            time.sleep(3)
        return os.getpid()


class Suicide(ed.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class EStream(ed.IterableDataset):
    """0..n-1, split between workers: worker 0 gets the first `cut` items, the others share the rest."""

    def __init__(self, n: int, cut: int):
        self.n, self.cut = n, cut

    def __iter__(self):
        return iter(_share(self.n, self.cut, ed.get_worker_info()))

    def __len__(self):
        return self.n


class TStream(tud.IterableDataset):
    def __init__(self, n: int, cut: int):
        self.n, self.cut = n, cut

    def __iter__(self):
        return iter(_share(self.n, self.cut, tud.get_worker_info()))

    def __len__(self):
        return self.n


def _share(n, cut, info):
    if info is None:
        return range(n)
    if info.id == 0:
        return range(min(cut, n))
    return range(cut + info.id - 1, n, info.num_workers - 1)


# ---- single-process batching against torch ------------------------------------------------------------
def _tensor_pair():
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10) % 3
    return ed.TensorDataset(ember.tensor(x), ember.tensor(y)), tud.TensorDataset(torch.tensor(x), torch.tensor(y))


DICTS = [{"x": np.full(2, i, np.float32), "y": i % 2, "name": f"n{i}", "w": 0.5 * i} for i in range(7)]


@pytest.mark.parametrize("kind", ["tensor", "dicts"])
@pytest.mark.parametrize("kw", [dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                dict(batch_size=4, drop_last=False), dict(batch_size=None),
                                dict(batch_size=20), dict(batch_size=2, sampler=[6, 1, 3, 3])])
def test_batches_match_torch(kind, kw):
    e_ds, t_ds = _tensor_pair() if kind == "tensor" else (ed.InMemoryDataset(DICTS), DICTS)
    e = ed.DataLoader(e_ds, **kw)
    t = tud.DataLoader(t_ds, **kw)
    e_batches, t_batches = list(e), list(t)
    assert len(e) == len(t) == len(e_batches) == len(t_batches)
    for a, b in zip(e_batches, t_batches):
        same(a, b)


def test_batch_sampler_and_collate_fn_match_torch():
    e_ds, t_ds = _tensor_pair()
    bs = [[0, 1], [9], [3, 4, 5]]
    e = list(ed.DataLoader(e_ds, batch_sampler=bs, collate_fn=lambda b: [x for x, _ in b]))
    t = list(tud.DataLoader(t_ds, batch_sampler=bs, collate_fn=lambda b: [x for x, _ in b]))
    for a, b in zip(e, t):
        same(a, b)
    e2 = list(ed.DataLoader(e_ds, batch_sampler=ed.BatchSampler(ed.SequentialSampler(e_ds), 4, True)))
    t2 = list(tud.DataLoader(t_ds, batch_sampler=tud.BatchSampler(tud.SequentialSampler(t_ds), 4, True)))
    for a, b in zip(e2, t2):
        same(a, b)


def test_iterable_dataset_matches_torch_without_workers():
    for kw in (dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=None)):
        e, t = ed.DataLoader(EStream(10, 4), **kw), tud.DataLoader(TStream(10, 4), **kw)
        assert len(e) == len(t)
        for a, b in zip(list(e), list(t), strict=True):
            same(a, b)


@pytest.mark.parametrize("n, cut", [(10, 5), (10, 8), (11, 1)])
def test_iterable_dataset_with_workers_matches_torch_order(n, cut):
    """Each worker reads its own share (get_worker_info); batches come round-robin, as in torch."""
    e = [b.tolist() for b in ed.DataLoader(EStream(n, cut), batch_size=3, num_workers=2)]
    t = [b.tolist() for b in tud.DataLoader(TStream(n, cut), batch_size=3, num_workers=2)]
    assert e == t and sorted(sum(e, [])) == list(range(n))


def _conflicts(lib):
    d = tud if lib is torch else ed
    ds = list(range(6))
    bsamp = d.BatchSampler(d.SequentialSampler(ds), 2, False)
    return [dict(batch_sampler=bsamp, batch_size=2), dict(batch_sampler=bsamp, shuffle=True),
            dict(batch_sampler=bsamp, sampler=d.SequentialSampler(ds)), dict(batch_sampler=bsamp, drop_last=True),
            dict(sampler=d.SequentialSampler(ds), shuffle=True), dict(batch_size=None, drop_last=True),
            dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
            dict(multiprocessing_context="fork"), dict(num_workers=1, multiprocessing_context="nope"),
            dict(batch_size=0), dict(batch_size=2, drop_last="yes")]


@pytest.mark.parametrize("case", range(14))
def test_argument_conflicts_raise_like_torch(case):
    with pytest.raises(ValueError):
        tud.DataLoader(list(range(6)), **_conflicts(torch)[case])
    with pytest.raises(ValueError):
        ed.DataLoader(list(range(6)), **_conflicts(ember)[case])


@pytest.mark.parametrize("kw", [dict(shuffle=True), dict(sampler=[0, 1]), dict(batch_sampler=[[0]])])
def test_iterable_dataset_conflicts_raise_like_torch(kw):
    with pytest.raises(ValueError, match="IterableDataset"):
        tud.DataLoader(TStream(3, 1), **kw)
    with pytest.raises(ValueError, match="IterableDataset"):
        ed.DataLoader(EStream(3, 1), **kw)


def test_configuration_is_frozen_and_pin_memory_is_accepted():
    e, t = ed.DataLoader([1, 2], pin_memory=True), tud.DataLoader([1, 2])
    for attr in ("batch_size", "sampler", "drop_last", "dataset"):
        with pytest.raises(ValueError, match="should not be set after"):
            setattr(t, attr, 3)
        with pytest.raises(ValueError, match="should not be set after"):
            setattr(e, attr, 3)
    assert [b.tolist() for b in e] == [[1], [2]]
    with pytest.raises(TypeError):
        ed.DataLoader([1], generator=torch.Generator())
    class NoLen(ed.IterableDataset):
        def __iter__(self):
            return iter([1])

    with pytest.raises(TypeError):
        len(ed.DataLoader(NoLen()))


def test_iteration_leaves_the_global_generators_alone():
    ember.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    loader = ed.DataLoader(Aug(), batch_size=4, shuffle=True)
    first = [key(b) for b in loader]  # the first epoch draws the loader's seed from the global generator
    states = (ember.get_rng_state().tolist(), np.random.get_state()[1].tolist(), random.getstate())
    second = [key(b) for b in loader]
    assert states == (ember.get_rng_state().tolist(), np.random.get_state()[1].tolist(), random.getstate())
    assert first != second and sorted(sum((list(k[0]) for k in second), [])) == list(range(13))


# ---- workers --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("context", [None, "thread"])
def test_workers_give_the_same_batches_as_the_main_process(context):
    e_ds, _ = _tensor_pair()
    ref = [[t.tolist() for t in b] for b in ed.DataLoader(e_ds, batch_size=3)]
    for nw in (1, 2):
        got = [[t.tolist() for t in b] for b in ed.DataLoader(e_ds, batch_size=3, num_workers=nw,
                                                               multiprocessing_context=context)]
        assert got == ref
    for bs in (3, None):
        dicts = [b for b in ed.DataLoader(ed.InMemoryDataset(DICTS), batch_size=bs, num_workers=2,
                                          multiprocessing_context=context)]
        for a, b in zip(dicts, tud.DataLoader(DICTS, batch_size=bs), strict=True):
            same(a, b)
    with pytest.raises(ValueError, match="prefetch_factor"):
        ed.DataLoader(e_ds, num_workers=1, prefetch_factor=0)


def test_same_seed_same_batches_with_any_number_of_workers():
    """Order and random 'augmentations' do not depend on num_workers (per-batch seeding)."""
    runs = []
    for nw in (0, 1, 2):
        ember.manual_seed(7)
        loader = ed.DataLoader(Aug(), batch_size=4, shuffle=True, num_workers=nw)
        runs.append([[key(b) for b in loader] for _ in range(2)])
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][0] != runs[0][1]


def test_spawned_workers():
    e_ds, _ = _tensor_pair()
    ref = [[t.tolist() for t in b] for b in ed.DataLoader(e_ds, batch_size=4)]
    got = [[t.tolist() for t in b] for b in ed.DataLoader(e_ds, batch_size=4, num_workers=1,
                                                           multiprocessing_context="spawn")]
    assert got == ref


def test_workers_exit_after_an_epoch_a_break_and_with_the_loader():
    loader = ed.DataLoader(Pid(), batch_size=2, num_workers=2)
    pids = {p for b in loader for p in b.tolist()}
    assert len(pids) == 2 and os.getpid() not in pids and all(gone(p) for p in pids)
    for b in loader:
        pids = set(b.tolist())
        break
    gc.collect()
    assert all(gone(p) for p in pids)
    persistent = ed.DataLoader(Pid(), batch_size=2, num_workers=2, persistent_workers=True)
    e1 = {p for b in persistent for p in b.tolist()}
    e2 = {p for b in persistent for p in b.tolist()}
    assert e1 == e2 and not any(gone(p) for p in e1)  # the same workers serve every epoch
    del persistent
    gc.collect()
    assert all(gone(p) for p in e1)


def test_worker_exception_is_reraised_with_worker_batch_and_traceback():
    loader = ed.DataLoader(Boom(), batch_size=2, num_workers=2)
    seen = []
    with pytest.raises(ValueError) as info:
        for b in loader:
            seen.append(b.tolist())
    msg = str(info.value)
    assert seen == [[0, 1], [2, 3]]  # batches before the failing one are delivered, in order
    assert "Caught ValueError in DataLoader worker 0" in msg and "while loading batch 2" in msg
    assert "item 5 is broken" in msg and "in __getitem__" in msg and "Original traceback" in msg
    assert not [p for p in __import__("multiprocessing").active_children() if p.name.startswith("ember-data")]


def test_worker_key_error_and_unpicklable_batches():
    class Missing(ed.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return {}["absent"]

    with pytest.raises(KeyError, match="absent") as info:
        list(ed.DataLoader(Missing(), num_workers=1))
    assert "\n" in str(info.value)  # shown as written, not as an escaped repr
    with pytest.raises(TypeError, match="can't be sent to the main process"):
        list(ed.DataLoader([1, 2], num_workers=1, collate_fn=lambda b: (lambda: b)))


def test_worker_timeout_and_death_raise_instead_of_hanging():
    loader = ed.DataLoader(Sleepy(), batch_size=1, num_workers=1, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        list(loader)
    assert time.monotonic() - t0 < 2.5
    assert not [p for p in __import__("multiprocessing").active_children() if p.name.startswith("ember-data")]
    with pytest.raises(RuntimeError, match=r"exited unexpectedly \(signal SIGKILL\)"):
        list(ed.DataLoader(Suicide(), batch_size=1, num_workers=2))


_INIT = {}


def _init(worker_id):
    _INIT["id"] = worker_id


def _bad_init(worker_id):
    raise OSError(f"no resources for worker {worker_id}")


class WhoAmI(ed.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = ed.get_worker_info()
        return (_INIT.get("id"), info.id, info.num_workers, type(info.dataset).__name__, info.seed - i * 0)


def test_worker_init_fn_and_get_worker_info():
    assert ed.get_worker_info() is None
    rows = [tuple(x.tolist() if isinstance(x, ember.Tensor) else x for x in b)
            for b in ed.DataLoader(WhoAmI(), batch_size=1, num_workers=2, worker_init_fn=_init)]
    ids = [r[0][0] for r in rows]
    assert ids == [0, 1, 0, 1] and [r[1][0] for r in rows] == ids and all(r[2] == [2] for r in rows)
    assert tuple(rows[0][3]) == ("WhoAmI",) and rows[1][4][0] == rows[0][4][0] + 1  # seed = base seed + worker id
    with pytest.raises(OSError, match="worker_init_fn"):
        list(ed.DataLoader(WhoAmI(), num_workers=1, worker_init_fn=_bad_init))


def test_out_of_order_delivery_still_yields_every_batch():
    got = [b.tolist() for b in ed.DataLoader(list(range(10)), batch_size=2, num_workers=2, in_order=False)]
    assert sorted(got) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


def test_workers_die_with_a_killed_main_process():
    code = textwrap.dedent("""
        import os, sys, time
        import ember.data as ed
        class Pid(ed.Dataset):
            def __len__(self): return 100
            def __getitem__(self, i): return os.getpid()
        it = iter(ed.DataLoader(Pid(), batch_size=1, num_workers=2))
        print(sorted({next(it).item() for _ in range(4)}), flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    pids = json.loads(proc.stdout.readline())
    assert len(pids) == 2 and not any(gone_or_zombie(p) for p in pids)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(gone_or_zombie(p) for p in pids):
        time.sleep(0.05)
    assert all(gone_or_zombie(p) for p in pids)


# ---- resuming -----------------------------------------------------------------------------------------
def _make(nw, **kw):
    return ed.DataLoader(Aug(), batch_size=4, shuffle=True, num_workers=nw, **kw)


@pytest.mark.parametrize("nw", [0, 2])
@pytest.mark.parametrize("epoch, k", [(0, 0), (0, 2), (1, 1), (1, 4)])
def test_resume_mid_epoch_in_a_new_loader(nw, epoch, k):
    ember.manual_seed(0)
    full = _make(0)
    ref = [[key(b) for b in full] for _ in range(3)]

    ember.manual_seed(0)
    a = _make(nw)
    for _ in range(epoch):
        list(a)
    it = iter(a)
    head = [key(next(it)) for _ in range(k)]
    state = json.loads(json.dumps(a.state_dict()))  # plain values only
    assert state["epoch"] == epoch and state["batches"] == k and state["num_batches"] == 4
    del it, a

    ember.manual_seed(12345)  # a different global state: the loader's state must carry all it needs
    b = _make(nw)
    b.load_state_dict(state)
    assert b.state_dict() == state
    rest = [key(x) for x in b]
    later = [[key(x) for x in b] for _ in range(2 - epoch)]
    assert head + rest == ref[epoch] and later == ref[epoch + 1:]


def test_resume_with_a_generator_persistent_workers_and_ember_save(tmp_path):
    def make(seed):
        return ed.DataLoader(Aug(9), batch_size=2, shuffle=True, generator=ember.Generator().manual_seed(seed),
                             num_workers=1, persistent_workers=True)

    loader = make(3)
    ref = [[key(b) for b in loader] for _ in range(2)]
    a = make(3)
    it = iter(a)
    head = [key(next(it)), key(next(it))]
    ember.save({"loader": a.state_dict()}, tmp_path / "ckpt.safetensors")
    b = make(999)
    b.load_state_dict(ember.load(tmp_path / "ckpt.safetensors")["loader"])
    assert head + [key(x) for x in b] == ref[0] and [key(x) for x in b] == ref[1]


def test_state_between_epochs_and_after_an_abandoned_epoch():
    ember.manual_seed(1)
    ref_loader = _make(0)
    ref = [[key(b) for b in ref_loader] for _ in range(3)]
    ember.manual_seed(1)
    a = _make(0)
    assert a.state_dict()["epoch"] == 0 and a.state_dict()["batches"] == 0
    assert [key(b) for b in a] == ref[0]
    assert (a.state_dict()["epoch"], a.state_dict()["batches"]) == (1, 0)  # a finished epoch: the next one
    it = iter(a)
    next(it)
    assert [key(b) for b in a] == ref[2]  # abandoning epoch 1 part-way: a new iter() is epoch 2
    b = _make(0)
    b.load_state_dict(a.state_dict())
    assert [key(x) for x in b] != []  # epoch 3 runs whole
    with pytest.raises(ValueError, match="4 batches per epoch but this one has 5"):
        ed.DataLoader(Aug(), batch_size=3, shuffle=True).load_state_dict(a.state_dict())
    with pytest.raises(ValueError, match="epoch"):
        b.load_state_dict({"epoch": -1, "batches": 0, "seed": 0})


def test_persistent_workers_after_an_abandoned_epoch():
    ember.manual_seed(2)
    ref_loader = _make(0)
    ref = [[key(b) for b in ref_loader] for _ in range(3)]
    ember.manual_seed(2)
    a = _make(2, persistent_workers=True)
    old = iter(a)
    assert key(next(old)) == ref[0][0]
    assert [key(b) for b in a] == ref[1]
    with pytest.raises(RuntimeError, match="superseded"):
        next(old)
    assert [key(b) for b in a] == ref[2]


def test_resume_an_iterable_dataset_and_a_stateless_sampler():
    for make in (lambda: ed.DataLoader(EStream(11, 3), batch_size=2, num_workers=2),
                 lambda: ed.DataLoader(list(range(11)), batch_size=2, sampler=list(range(10, -1, -1)))):
        ref = [b.tolist() for b in make()]
        a = make()
        it = iter(a)
        head = [next(it).tolist() for _ in range(3)]
        b = make()
        b.load_state_dict(a.state_dict())
        assert head + [x.tolist() for x in b] == ref
        assert [x.tolist() for x in b] == ref


def test_weighted_sampler_resumes():
    def make():
        return ed.DataLoader(list(range(8)), batch_size=3,
                             sampler=ed.WeightedRandomSampler([1.0] * 8, 9, generator=ember.Generator().manual_seed(4)))

    full = make()
    ref = [[b.tolist() for b in full] for _ in range(2)]
    a = make()
    it = iter(a)
    head = [next(it).tolist()]
    b = make()
    b.load_state_dict(a.state_dict())
    assert head + [x.tolist() for x in b] == ref[0] and [x.tolist() for x in b] == ref[1]


def test_the_loader_is_a_torch_like_iterable():
    e_ds, t_ds = _tensor_pair()
    e, t = iter(ed.DataLoader(e_ds, batch_size=4)), iter(tud.DataLoader(t_ds, batch_size=4))
    assert len(e) == len(t) == 3
    same(next(e), next(t))
