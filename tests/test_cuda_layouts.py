"""Memory layouts on the CUDA backend: when a reshape can be a view (numpy's rule, checked here without a
GPU), and, on a GPU, cuBLAS products of transposed, permuted and broadcast operands (transposed ones go to
cuBLAS as op T instead of being copied) and reshapes that need a copy (16-byte gathers)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import ember
from ember.backend.cuda.movement import view_strides

gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a CUDA GPU")


def _layouts(seed: int, count: int):
    """Random strided views (a column picked, permuted, every other row, size-1 dims), as (contiguous base,
    how the view was made, the view) with a new shape of the same size."""
    rng = random.Random(seed)
    for _ in range(count):
        nd = rng.randint(1, 4)
        shape = [rng.choice([1, 2, 3, 4, 6]) for _ in range(nd)]
        base = np.arange(int(np.prod(shape)) * 3, dtype=np.float32).reshape(shape + [3])
        col = rng.randint(0, 2)
        perm = list(range(nd))
        rng.shuffle(perm)
        halve = rng.random() < 0.3 and base.shape[perm[0]] > 1
        x = _view(base, (col, perm, halve))
        factors, rest = [], x.size
        for p in (2, 3, 2, 3, 2):
            while rest % p == 0 and rng.random() < 0.5:
                factors.append(p)
                rest //= p
        factors.append(rest)
        rng.shuffle(factors)
        if rng.random() < 0.3:
            factors.insert(rng.randint(0, len(factors)), 1)
        yield base, (col, perm, halve), x, tuple(factors)


def _view(t, how):
    """The same view of a numpy array or an ember tensor."""
    col, perm, halve = how
    t = t[..., col].permute(*perm) if hasattr(t, "permute") else t[..., col].transpose(perm)
    return t[::2] if halve else t


def test_view_strides_follow_numpys_reshape():
    checked = 0
    for _, _, x, new in _layouts(0, 2000):
        got = view_strides(x.shape, x.strides, new)
        y = x.reshape(new)
        assert (got is not None) == np.shares_memory(x, y), (x.shape, x.strides, new)
        if got is not None:
            assert [s for s, n in zip(got, new) if n != 1] == [s for s, n in zip(y.strides, new) if n != 1]
            checked += 1
    assert checked > 200  # the views were exercised, not only the copies


def test_which_products_run_on_padded_copies():
    """Large 16-bit products with a dim that isn't a multiple of 8 (the LM head's vocabulary); not small ones,
    not aligned ones, not float32 (whose kernels the odd dim doesn't slow as much)."""
    from ml_dtypes import bfloat16

    from ember.backend.cuda.cublas import needs_alignment
    bf16 = np.dtype(bfloat16)
    assert needs_alignment(8192, 50257, 768, bf16)            # logits = x @ wteᵀ
    assert needs_alignment(8192, 768, 50257, np.float16)      # their input gradient
    assert needs_alignment(50257, 768, 8192, bf16)            # the weight gradient
    assert not needs_alignment(8192, 768, 768, bf16)
    assert not needs_alignment(8192, 50257, 768, np.float32)
    assert not needs_alignment(64, 33, 64, bf16)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_cublas_products_of_every_layout(dtype):
    import cupy
    from ml_dtypes import bfloat16

    from ember.backend.cuda import cublas
    np_dtype = bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(0)

    def arr(shape):
        return rng.standard_normal(shape).astype(np.float32).astype(np_dtype)

    qkv = arr((2, 33, 3, 4, 16))                      # (B, T, 3, H, D): heads permuted out of a projection
    q = qkv.transpose(2, 0, 3, 1, 4)[0]               # (B, H, T, D), batch dims not one stride
    k = qkv.transpose(2, 0, 3, 1, 4)[1]
    w = arr((2, 4, 33, 33))
    cases = [(q, k.swapaxes(-1, -2)),                  # q @ kᵀ: kᵀ permuted and transposed
             (w.swapaxes(-1, -2), q),                  # weightsᵀ @ dO: a contiguous transpose
             (w, q), (q.swapaxes(-1, -2), w),
             (arr((5, 7)).T, arr((5, 3))),             # 2-d transposed
             (arr((2, 4, 6, 5)), arr((3, 5)).T),       # a matrix shared by the batch, transposed
             (arr((1, 4, 6, 5)).swapaxes(-1, -2), arr((2, 4, 6, 7))),  # broadcast batch
             (arr((3, 1, 8)).swapaxes(-1, -2), arr((3, 1, 4)))]        # k = 1
    tol = {"float64": 1e-12, "float32": 1e-5}.get(dtype, 2e-2)
    for a, b in cases:
        want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        ga, gb = _on_gpu(cupy, a), _on_gpu(cupy, b)
        got = cublas.matmul(ga, gb)
        assert got.shape == want.shape and got.dtype == np.dtype(np_dtype)
        np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64), want, rtol=tol, atol=tol * 10)


def _on_gpu(cupy, a):
    """``a``'s layout on the GPU: the same strides over a copy of its whole base array."""
    base = a.base if a.base is not None else a
    while base.base is not None:
        base = base.base
    g = cupy.asarray(np.ascontiguousarray(base))
    offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return cupy.ndarray(a.shape, a.dtype, memptr=g.data + offset, strides=a.strides)


@gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_reshapes_that_copy_match_numpy(dtype):
    d = getattr(ember, dtype)
    from ml_dtypes import bfloat16

    def rounded(a):  # the values the tensor holds (bfloat16 keeps 8 bits of these integers)
        return a.astype(bfloat16).astype(np.float32) if dtype == "bfloat16" else a

    for base, how, x, new in _layouts(1, 200):
        y = _view(ember.tensor(base, device="cuda").to(d), how).reshape(new)
        np.testing.assert_array_equal(y.float().cpu().numpy(), rounded(x.reshape(new)))
    a = np.arange(2 * 4 * 64 * 64, dtype=np.float32).reshape(2, 4, 64, 64)
    heads = ember.tensor(a, device="cuda").to(d).transpose(1, 2)           # (B, T, H, D) view
    merged = heads.reshape(2, 64, 4 * 64)                                      # needs a copy
    want = rounded(a.transpose(0, 2, 1, 3).reshape(2, 64, 256))
    np.testing.assert_array_equal(merged.float().cpu().numpy(), want)


@gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_products_with_rows_of_odd_lengths_are_realigned(dtype):
    """Large 16-bit products whose rows aren't whole 16-byte pieces (a 50,257-word vocabulary) run on copies with
    padded rows (cuBLAS's aligned kernels) and give the plain product: odd n (the LM head), odd k (its input
    gradient), a transposed operand (its weight gradient), batches, through ember and through cuBLAS directly."""
    import cupy
    from ml_dtypes import bfloat16

    from ember.backend.cuda import cublas
    np_dtype = bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(1)

    def arr(*shape):
        return (rng.standard_normal(shape) * 0.5).astype(np.float32).astype(np_dtype)

    cases = [(arr(1024, 768), arr(777, 768).T),        # logits = x @ wᵀ: n = 777
             (arr(1024, 777), arr(777, 768)),          # dX = G @ w: k = 777
             (arr(1024, 777).T, arr(1024, 768)),       # dW = Gᵀ @ x: m = 777, transposed
             (arr(3, 512, 333), arr(333, 1027))]       # batched, odd k and n
    for a, b in cases:
        assert cublas.needs_alignment(int(np.prod(a.shape[:-1])), b.shape[-1], a.shape[-1], a.dtype)
        want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        got = cublas.matmul(cupy.asarray(a), cupy.asarray(b))
        assert got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64), want, rtol=2e-2, atol=2e-1)
        ea = ember.tensor(np.ascontiguousarray(a).astype(np.float32), device="cuda").to(getattr(ember, dtype))
        eb = ember.tensor(np.ascontiguousarray(b).astype(np.float32), device="cuda").to(getattr(ember, dtype))
        np.testing.assert_allclose((ea @ eb).float().cpu().numpy(), want, rtol=2e-2, atol=2e-1)
