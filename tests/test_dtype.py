"""dtypes against PyTorch: promotion table, result_type of tensors/0-d tensors/scalars, can_cast,
finfo/iinfo and the default dtype."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
PAIRS = list(itertools.product(NAMES, NAMES))
SCALARS = [True, 2, -3, 2.5, np.float64(1.5), np.int32(3)]


def _t(name: str, dim: bool):
    """An ember and a torch tensor of dtype ``name``: shape (2,) or 0-d."""
    shape = (2,) if dim else ()
    return ember.zeros(shape, dtype=getattr(ember, name)), torch.zeros(shape, dtype=getattr(torch, name))


def _name(d) -> str:
    return str(d).split(".")[-1]


def test_promote_types_matches_torch_for_every_pair():
    for a, b in PAIRS:
        got = ember.promote_types(getattr(ember, a), getattr(ember, b))
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert got.name == _name(want), f"promote_types({a}, {b}): {got.name} != torch's {_name(want)}"


def test_promote_types_is_symmetric_and_accepts_names():
    for a, b in PAIRS:
        assert ember.promote_types(a, b) is ember.promote_types(b, a)
    assert ember.promote_types("int8", "uint8") is ember.int16


@pytest.mark.parametrize("dim_a,dim_b", [(True, True), (True, False), (False, True), (False, False)])
def test_result_type_of_tensors_matches_torch(dim_a, dim_b):
    for a, b in PAIRS:
        ea, ta = _t(a, dim_a)
        eb, tb = _t(b, dim_b)
        got = ember.result_type(ea, eb)
        want = torch.result_type(ta, tb)
        where = f"result_type({a}{'[2]' if dim_a else ' 0-d'}, {b}{'[2]' if dim_b else ' 0-d'})"
        assert got.name == _name(want), f"{where}: {got.name} != torch's {_name(want)}"


@pytest.mark.parametrize("dim", [True, False])
def test_result_type_with_python_scalars_matches_torch(dim):
    for name in NAMES:
        e, t = _t(name, dim)
        for s in SCALARS:
            ts = s.item() if isinstance(s, np.generic) else s  # torch takes Python numbers only
            want = _name(torch.result_type(t, ts))
            assert ember.result_type(e, s).name == want, f"result_type({name}, {s!r})"
            assert ember.result_type(s, e).name == want, f"result_type({s!r}, {name})"


def test_result_type_of_two_scalars_matches_torch():
    for a, b in itertools.product([True, 2, 2.5], repeat=2):
        assert ember.result_type(a, b).name == _name(torch.result_type(a, b)), (a, b)


def test_result_type_follows_the_default_dtype():
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.result_type(ember.ones(2, dtype=ember.int32), 2.5) is ember.float64
        assert ember.result_type(ember.ones(2, dtype=ember.float16), 2.5) is ember.float16
    finally:
        ember.set_default_dtype(ember.float32)


def test_binary_op_dtypes_follow_result_type():
    """The ops use the same rule as result_type (spot checks of the cases that trip people up)."""
    i8, u8 = ember.ones(3, dtype=ember.int8), ember.ones(3, dtype=ember.uint8)
    assert (i8 + u8).dtype is ember.int16
    assert (ember.ones(3, dtype=ember.float16) + ember.ones(3, dtype=ember.bfloat16)).dtype is ember.float32
    assert (ember.ones(3, dtype=ember.int32) + 2.5).dtype is ember.float32
    assert (ember.ones(3, dtype=ember.int8) + ember.tensor(1000)).dtype is ember.int8
    assert (ember.ones(3, dtype=ember.int8) + ember.tensor(1.5, dtype=ember.float64)).dtype is ember.float64
    assert (ember.ones(3, dtype=ember.bool) + 1).dtype is ember.int64
    assert (ember.ones(3, dtype=ember.bool) + True).dtype is ember.bool


def test_can_cast_matches_torch():
    for a, b in PAIRS:
        got = ember.can_cast(getattr(ember, a), getattr(ember, b))
        assert got == torch.can_cast(getattr(torch, a), getattr(torch, b)), f"can_cast({a}, {b})"


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    got, want = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(got, attr) == getattr(want, attr), f"finfo({name}).{attr}: {getattr(got, attr)} != " \
                                                          f"{getattr(want, attr)}"


def test_finfo_default_is_the_default_dtype():
    assert ember.finfo().dtype == "float32"
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.finfo().bits == 64
    finally:
        ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    got, want = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "min", "max", "dtype"):
        assert getattr(got, attr) == getattr(want, attr), f"iinfo({name}).{attr}"


@pytest.mark.parametrize("fn,name", [("finfo", "int32"), ("finfo", "bool"), ("iinfo", "float32"),
                                     ("iinfo", "bool"), ("iinfo", "bfloat16")])
def test_info_refuses_the_wrong_kind_like_torch(fn, name):
    with pytest.raises(TypeError):
        getattr(torch, fn)(getattr(torch, name))
    with pytest.raises(TypeError, match=fn):
        getattr(ember, fn)(getattr(ember, name))


def test_dtype_attributes_match_torch():
    for name in NAMES:
        e, t = getattr(ember, name), getattr(torch, name)
        assert e.is_floating_point == t.is_floating_point, name
        assert e.is_signed == t.is_signed, name
        assert e.itemsize == t.itemsize, name
        assert e.is_complex == t.is_complex, name


def test_set_default_dtype_changes_inference_and_refuses_non_floats():
    assert ember.get_default_dtype() is ember.float32
    try:
        for name in ("float64", "float16", "bfloat16"):
            ember.set_default_dtype(getattr(ember, name))
            torch.set_default_dtype(getattr(torch, name))
            assert ember.get_default_dtype().name == _name(torch.get_default_dtype())
            assert ember.tensor([1.5]).dtype.name == _name(torch.tensor([1.5]).dtype)
            assert ember.ones(2).dtype.name == name
            assert ember.exp(ember.ones(2, dtype=ember.int32)).dtype.name == name  # int -> default float
            assert (ember.arange(3) / 2).dtype.name == name
        for bad in (ember.int32, ember.bool, "int64"):
            with pytest.raises(TypeError):
                ember.set_default_dtype(bad)
        with pytest.raises(TypeError):
            torch.set_default_dtype(torch.int32)
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)
    assert ember.get_default_dtype() is ember.float32


def test_as_dtype_spellings():
    assert ember.as_dtype("float32") is ember.float32
    assert ember.as_dtype("torch.int64") is ember.int64
    assert ember.as_dtype("ember.bfloat16") is ember.bfloat16
    assert ember.as_dtype("half") is ember.float16 and ember.as_dtype("long") is ember.int64
    assert ember.as_dtype(float) is ember.get_default_dtype()
    assert ember.as_dtype(int) is ember.int64 and ember.as_dtype(bool) is ember.bool
    assert ember.as_dtype(np.dtype("int16")) is ember.int16
    assert ember.float is ember.float32 and ember.double is ember.float64 and ember.half is ember.float16
    assert ember.short is ember.int16 and ember.int is ember.int32 and ember.long is ember.int64
    for bad in ("complex64", "float128", np.complex64):
        with pytest.raises(TypeError):
            ember.as_dtype(bad)


def test_dtypes_are_interned_singletons():
    for name in NAMES:
        d = getattr(ember, name)
        assert pickle.loads(pickle.dumps(d)) is d
        assert repr(d) == f"ember.{name}"


def test_unsupported_dtype_error_is_type_and_not_implemented_error():
    with pytest.raises(TypeError):
        ember.abs(ember.ones(2, dtype=ember.bool))
    with pytest.raises(NotImplementedError, match="bitwise_and"):
        ember.ones(2) & ember.ones(2)
    assert issubclass(ember._dtype.UnsupportedDtypeError, TypeError)
    assert issubclass(ember._dtype.UnsupportedDtypeError, NotImplementedError)
