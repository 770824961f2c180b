"""Random numbers: seeding and state, independence of draws, distributions, dtypes and errors.

Values are not compared with PyTorch (the generators differ); shapes, dtypes and argument
handling are, and the distributions are checked statistically against scipy's CDFs.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch
from scipy import stats

import ember
from ember.backend.numpy import Numpy


def host(t) -> np.ndarray:
    a = t.numpy()
    return a.astype(np.float64) if t.dtype in (ember.bfloat16, ember.float16) else a


@pytest.fixture(autouse=True)
def _fresh_default_seed():
    ember.manual_seed(12345)
    yield


# ---- reproducibility and state -----------------------------------------------------------------
DRAWS = [
    lambda g: ember.rand(5, 3, generator=g),
    lambda g: ember.randn(7, generator=g),
    lambda g: ember.randint(0, 100, (9,), generator=g),
    lambda g: ember.randperm(20, generator=g),
    lambda g: ember.normal(ember.zeros(4), 2.0, generator=g),
    lambda g: ember.bernoulli(ember.full((6,), 0.4), generator=g),
    lambda g: ember.multinomial(ember.tensor([0.2, 0.3, 0.5]), 2, generator=g),
    lambda g: ember.multinomial(ember.tensor([[0.2, 0.8], [0.5, 0.5]]), 5, replacement=True, generator=g),
    lambda g: ember.poisson(ember.full((5,), 4.0), generator=g),
    lambda g: ember.zeros(6).uniform_(-2, 3, generator=g),
    lambda g: ember.zeros(6).exponential_(generator=g),
    lambda g: ember.zeros(6, dtype=ember.int64).geometric_(0.3, generator=g),
    lambda g: ember.zeros(6).cauchy_(generator=g),
    lambda g: ember.zeros(6).log_normal_(generator=g),
    lambda g: ember.zeros(6, dtype=ember.int32).random_(generator=g),
]


@pytest.mark.parametrize("draw", DRAWS)
def test_manual_seed_reproduces(draw):
    ember.manual_seed(7)
    a = draw(None)
    b = draw(None)
    ember.manual_seed(7)
    assert ember.equal(draw(None), a)
    assert ember.equal(draw(None), b)


@pytest.mark.parametrize("draw", DRAWS)
def test_generator_reproduces_and_is_independent_of_global(draw):
    g = ember.Generator().manual_seed(3)
    a = draw(g)
    ember.rand(10)  # the default generator moving must not matter
    g.manual_seed(3)
    assert ember.equal(draw(g), a)


def test_consecutive_draws_differ():
    a, b = ember.rand(1000), ember.rand(1000)
    assert not ember.equal(a, b)
    assert (a.numpy() == b.numpy()).mean() < 0.01
    g = ember.Generator().manual_seed(0)
    assert not ember.equal(ember.randn(100, generator=g), ember.randn(100, generator=g))


def test_consecutive_draws_never_overlap():
    # each draw uses the Philox blocks right after the previous one, rounded up to whole blocks
    g = ember.Generator().manual_seed(11)
    whole = ember.rand(16, generator=g, dtype=ember.float64).numpy()
    g.manual_seed(11)
    parts = [ember.rand(8, generator=g, dtype=ember.float64).numpy() for _ in range(2)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    g.manual_seed(11)
    a = ember.rand(3, generator=g, dtype=ember.float64).numpy()
    b = ember.rand(3, generator=g, dtype=ember.float64).numpy()
    np.testing.assert_array_equal(a, whole[0:3])
    np.testing.assert_array_equal(b, whole[4:7])
    assert g.get_offset() == 2


def test_offsets_advance_by_words_used():
    g = ember.Generator().manual_seed(0)
    ember.rand(10, generator=g)  # float32: two uniforms per word, 5 words, 2 blocks
    assert g.get_offset() == 2
    ember.rand(10, dtype=ember.float64, generator=g)  # one word each: 3 blocks
    assert g.get_offset() == 5
    ember.randn(5, dtype=ember.float64, generator=g)  # Box-Muller pairs: 6 words, 2 blocks
    assert g.get_offset() == 7
    ember.multinomial(ember.ones(3, 7), 2, generator=g)  # without replacement: one word per category
    assert g.get_offset() == 7 + math.ceil(21 / 4)
    ember.poisson(ember.ones(1000), generator=g)  # its own stream: one block
    assert g.get_offset() == 7 + 6 + 1
    ember.randint(0, 5, (0,), generator=g)  # nothing drawn, nothing used
    assert g.get_offset() == 14


def test_stream_definition():
    # the documented stream: words from numpy's Philox(key=seed, counter=offset); uniforms from top bits
    g = ember.Generator().manual_seed(99)
    words = np.random.Philox(key=99, counter=0).random_raw(12)
    got64 = ember.rand(5, dtype=ember.float64, generator=g).numpy()
    np.testing.assert_array_equal(got64, (words[:5] >> np.uint64(11)) * 2.0**-53)
    got32 = ember.rand(4, generator=g).numpy()  # offset 2: words 8 and 9, low half first
    halves = [int(w) >> s & 0xFFFFFFFF for w in words[8:10] for s in (0, 32)]
    np.testing.assert_array_equal(got32, np.array([h >> 8 for h in halves]) * np.float32(2.0**-24))
    z = ember.randn(2, dtype=ember.float64, generator=ember.Generator().manual_seed(99)).numpy()
    u1, u2 = (words[:2] >> np.uint64(11)) * 2.0**-53
    r = math.sqrt(-2 * math.log(1 - u1))
    np.testing.assert_allclose(z, [r * math.cos(2 * math.pi * u2), r * math.sin(2 * math.pi * u2)], rtol=1e-12)


def test_get_set_state_round_trip():
    state = ember.get_rng_state()
    assert state.dtype is ember.uint8 and state.shape == (16,)
    a = ember.randn(10)
    ember.set_rng_state(state)
    assert ember.equal(ember.randn(10), a)
    g = ember.Generator().manual_seed(5)
    ember.rand(3, generator=g)
    s = g.get_state()
    x = ember.rand(4, generator=g)
    assert ember.equal(ember.rand(4, generator=ember.Generator().set_state(s)), x)
    assert ember.equal(ember.rand(4, generator=g.set_state(s)), x)
    c = g.set_state(s).clone_state()
    assert ember.equal(ember.rand(4, generator=c), x)


def test_state_layout_is_seed_then_offset():
    g = ember.Generator().manual_seed(2**40 + 3)
    ember.rand(9, dtype=ember.float64, generator=g)
    seed, offset = g.get_state().numpy().view("<u8").tolist()
    assert (seed, offset) == (2**40 + 3, 3)


def test_set_state_errors():
    g = ember.Generator()
    with pytest.raises(TypeError, match="uint8"):
        g.set_state([1, 2])
    with pytest.raises(TypeError, match="uint8"):
        g.set_state(ember.zeros(16))
    with pytest.raises(RuntimeError, match="16 bytes"):
        g.set_state(ember.zeros(3, dtype=ember.uint8))
    with pytest.raises(TypeError):
        torch.Generator().set_state(torch.zeros(3))


def test_seeds():
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    ember.manual_seed(-1)
    torch_gen = torch.Generator().manual_seed(-1)
    assert ember.initial_seed() == torch_gen.initial_seed() == 2**64 - 1
    ember.manual_seed(2**64 - 1)
    assert ember.initial_seed() == 2**64 - 1
    for bad in (2**64, -(2**63) - 1):
        with pytest.raises(ValueError, match="out of range"):
            ember.manual_seed(bad)
        with pytest.raises((ValueError, RuntimeError)):
            torch.manual_seed(bad)
    s = ember.seed()
    assert isinstance(s, int) and ember.initial_seed() == s
    g = ember.Generator()
    assert g.seed() == g.initial_seed()
    assert isinstance(ember.manual_seed(3), ember.Generator)
    assert ember.manual_seed(3) is ember.default_generator


def test_fork_rng_and_random_module():
    ember.random.manual_seed(4)
    with ember.random.fork_rng():
        inside = ember.rand(5)
    assert ember.equal(ember.rand(5), inside)
    assert ember.random.initial_seed() == 4
    assert ember.random.get_rng_state().shape == (16,)


def test_generator_pickles():
    g = ember.Generator().manual_seed(8)
    ember.rand(5, generator=g)
    g2 = pickle.loads(pickle.dumps(g))
    assert ember.equal(ember.rand(6, generator=g2), ember.rand(6, generator=g))
    assert str(g2.device) == "cpu"


# ---- devices -------------------------------------------------------------------------------------
def test_devices():
    dev = ember.Device("cuda", 0, backend=Numpy())  # a stand-in accelerator backed by numpy
    x = ember.rand(3, device=dev)
    assert x.device is dev
    assert ember.Generator(dev).device is dev
    assert ember.rand(2, generator=ember.Generator(dev), device=dev).device is dev
    with pytest.raises(RuntimeError, match="device type for generator"):
        ember.rand(3, generator=ember.Generator(dev))
    with pytest.raises(RuntimeError, match="device type for generator"):
        ember.zeros(3, device=dev).normal_(generator=ember.Generator("cpu"))
    assert ember.randn_like(x).device is dev
    assert ember.multinomial(ember.ones(3, device=dev), 2).device is dev
    assert ember.Generator().device == "cpu"


# ---- shapes and dtypes, against torch ------------------------------------------------------------
CASES = [
    lambda L: L.rand(2, 3), lambda L: L.rand((2, 3)), lambda L: L.rand([4]), lambda L: L.rand(()),
    lambda L: L.rand(size=(2,)), lambda L: L.rand(0, 3), lambda L: L.rand(2, dtype=L.float64),
    lambda L: L.rand(2, dtype=L.float16), lambda L: L.rand(2, dtype=L.bfloat16),
    lambda L: L.randn(3, 1), lambda L: L.randn((), dtype=L.float64), lambda L: L.randn(5, dtype=L.bfloat16),
    lambda L: L.rand_like(L.ones(2, 2, dtype=L.float16)), lambda L: L.randn_like(L.ones(3, dtype=L.float64)),
    lambda L: L.rand_like(L.ones(2), dtype=L.float64),
    lambda L: L.randint(5, (3,)), lambda L: L.randint(2, 5, (3, 2)), lambda L: L.randint(5, size=(2, 2)),
    lambda L: L.randint(-3, 3, (4,), dtype=L.int8), lambda L: L.randint(0, 2, (3,), dtype=L.bool),
    lambda L: L.randint(0, 10, (3,), dtype=L.float32), lambda L: L.randint(0, 256, (3,), dtype=L.uint8),
    lambda L: L.randint(-(2**63), 2**63 - 1, (3,)), lambda L: L.randint(3, (0,)),
    lambda L: L.randint_like(L.ones(3), 5), lambda L: L.randint_like(L.ones(3, dtype=L.int32), 2, 5),
    lambda L: L.randint_like(L.ones(3), high=5), lambda L: L.randint_like(L.ones(2, dtype=L.bool), 2),
    lambda L: L.randperm(5), lambda L: L.randperm(0), lambda L: L.randperm(5, dtype=L.float32),
    lambda L: L.randperm(256, dtype=L.uint8), lambda L: L.randperm(2049, dtype=L.float16),
    lambda L: L.normal(L.zeros(3), L.ones(3)), lambda L: L.normal(L.zeros(3), L.ones(2, 3)),
    lambda L: L.normal(L.zeros(3)), lambda L: L.normal(L.zeros(3), 2.0), lambda L: L.normal(0.0, L.ones(3)),
    lambda L: L.normal(0.0, 1.0, (2, 3)), lambda L: L.normal(0.0, 1.0, size=(2,), dtype=L.float64),
    lambda L: L.normal(0, 1, (2,)), lambda L: L.normal(L.zeros(3), L.ones(3, dtype=L.float64)),
    lambda L: L.normal(L.zeros(3, dtype=L.float64), L.ones(3)), lambda L: L.normal(0.0, L.ones(3, dtype=L.float64)),
    lambda L: L.normal(L.zeros(3, dtype=L.float16), L.ones(3)), lambda L: L.normal(L.zeros(()), L.ones(3)),
    lambda L: L.normal(L.zeros(3), L.ones(3, dtype=L.int64)),
    lambda L: L.bernoulli(L.full((3,), 0.5)), lambda L: L.bernoulli(L.full((2, 2), 0.5, dtype=L.float64)),
    lambda L: L.bernoulli(L.ones(3), 0.3), lambda L: L.bernoulli(L.ones(3, dtype=L.int64), 0.3),
    lambda L: L.bernoulli(L.ones(3, dtype=L.bool), 0.3), lambda L: L.full((2,), 0.2).bernoulli(),
    lambda L: L.bernoulli(L.full((3,), 0.5, dtype=L.float16)),
    lambda L: L.multinomial(L.tensor([0.2, 0.3, 0.5]), 2), lambda L: L.multinomial(L.ones(2, 4), 4),
    lambda L: L.multinomial(L.ones(2, 3), 7, True), lambda L: L.multinomial(L.ones(0, 3), 1),
    lambda L: L.multinomial(L.ones(3, dtype=L.float16), 1), lambda L: L.ones(4).multinomial(2),
    lambda L: L.multinomial(L.tensor([0.0, 1.0, 0.0]), 2),
    lambda L: L.poisson(L.ones(3)), lambda L: L.poisson(L.ones(2, 2, dtype=L.float64)),
    lambda L: L.poisson(L.ones(3, dtype=L.float16)),
    lambda L: L.zeros(3).uniform_(), lambda L: L.zeros(3, dtype=L.float64).uniform_(2, 3),
    lambda L: L.zeros(3).normal_(1, 2), lambda L: L.zeros(2, dtype=L.bfloat16).normal_(),
    lambda L: L.zeros(3).bernoulli_(), lambda L: L.zeros(3, dtype=L.int32).bernoulli_(0.4),
    lambda L: L.zeros(3).bernoulli_(L.full((3,), 0.3, dtype=L.float64)),
    lambda L: L.zeros(2, 3).bernoulli_(L.full((3,), 0.3)), lambda L: L.zeros(3, dtype=L.bool).bernoulli_(0.5),
    lambda L: L.zeros(3).random_(), lambda L: L.zeros(3).random_(5), lambda L: L.zeros(3).random_(2, 5),
    lambda L: L.zeros(3, dtype=L.bool).random_(), lambda L: L.zeros(3, dtype=L.int8).random_(-5, None),
    lambda L: L.zeros(3, dtype=L.uint8).random_(), lambda L: L.zeros(3).random_(to=4),
    lambda L: L.zeros(3).exponential_(), lambda L: L.zeros(3, dtype=L.float64).exponential_(float("inf")),
    lambda L: L.zeros(3).geometric_(0.5), lambda L: L.zeros(3, dtype=L.int64).geometric_(0.5),
    lambda L: L.zeros(3).log_normal_(), lambda L: L.zeros(3, dtype=L.float16).cauchy_(),
    lambda L: L.rand(3, generator=L.Generator().manual_seed(1)),
    lambda L: L.randint(0, 3, (2,), generator=L.Generator().manual_seed(1)),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_shape_dtype_device_match_torch(i):
    e, t = CASES[i](ember), CASES[i](torch)
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).replace("ember", "torch") == str(t.dtype)
    assert str(e.device) == str(t.device) == "cpu"


def test_inplace_methods_return_self_and_fill_views():
    x = ember.zeros(4, 6)
    assert x.uniform_(1, 2) is x
    assert (x.numpy() >= 1).all()
    y = ember.zeros(4, 6)
    y[:, ::2].normal_(5.0, 0.1)
    assert (y.numpy()[:, 1::2] == 0).all() and (y.numpy()[:, ::2] > 4).all()
    z = ember.zeros(3, 5)
    z.T.exponential_(2.0)
    assert (z.numpy() > 0).sum() >= 14
    w = ember.zeros(3, dtype=ember.int64)
    assert w.random_(10, 20) is w and ((w.numpy() >= 10) & (w.numpy() < 20)).all()


# ---- distributions -------------------------------------------------------------------------------
N = 200_000


def _ks(sample, cdf, *args):
    return stats.kstest(sample, cdf, args=args).pvalue


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_rand_uniform(dtype):
    x = host(ember.rand(N, dtype=dtype))
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005 and abs(x.var() - 1 / 12) < 0.002
    if dtype in (ember.float32, ember.float64):
        assert _ks(x, "uniform") > 1e-4


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16])
def test_randn_normal(dtype):
    x = host(ember.randn(N, dtype=dtype))
    assert abs(x.mean()) < 0.01 and abs(x.var() - 1) < 0.01
    if dtype is not ember.float16:
        assert _ks(x, "norm") > 1e-4


def test_randn_odd_sizes_and_shapes():
    x = ember.randn(3, 5, 7).numpy()
    assert x.shape == (3, 5, 7) and np.isfinite(x).all() and len(np.unique(x)) == x.size


def test_normal_parameters():
    m = ember.tensor([-10.0, 0.0, 10.0]).reshape(3, 1)
    s = ember.tensor([0.5, 1.0, 3.0]).reshape(3, 1)
    x = ember.normal(m.expand(3, 50_000), s.expand(3, 50_000)).numpy()
    np.testing.assert_allclose(x.mean(1), [-10, 0, 10], atol=0.05)
    np.testing.assert_allclose(x.std(1), [0.5, 1, 3], rtol=0.02)
    y = ember.normal(2.0, 3.0, (N,), dtype=ember.float64).numpy()
    assert _ks(y, "norm", 2.0, 3.0) > 1e-4
    z = ember.zeros(N, dtype=ember.float64).normal_(-1.0, 0.5).numpy()
    assert _ks(z, "norm", -1.0, 0.5) > 1e-4
    assert ember.equal(ember.normal(ember.full((4,), 7.0), 0.0), ember.full((4,), 7.0))


def test_uniform_exponential_cauchy_lognormal():
    u = ember.zeros(N, dtype=ember.float64).uniform_(-2, 3).numpy()
    assert u.min() >= -2 and u.max() < 3 and _ks(u, "uniform", -2, 5) > 1e-4
    e = ember.zeros(N, dtype=ember.float64).exponential_(2.0).numpy()
    assert e.min() >= 0 and _ks(e, "expon", 0, 0.5) > 1e-4
    c = ember.zeros(N, dtype=ember.float64).cauchy_(1.0, 2.0).numpy()
    assert _ks(c, "cauchy", 1.0, 2.0) > 1e-4
    ln = ember.zeros(N, dtype=ember.float64).log_normal_(0.5, 0.25).numpy()
    assert _ks(ln, "lognorm", 0.25, 0, math.exp(0.5)) > 1e-4
    e32 = ember.zeros(N).exponential_(0.5).numpy()
    assert abs(e32.mean() - 2) < 0.03


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32])
def test_uniform_stays_below_to(dtype):
    x = host(ember.zeros(N, dtype=dtype).uniform_(2, 3))
    assert x.min() >= 2 and x.max() < 3
    assert ember.equal(ember.zeros(3, dtype=dtype).uniform_(1.5, 1.5), ember.full((3,), 1.5, dtype=dtype))


def test_geometric():
    p = 0.3
    k = ember.zeros(N, dtype=ember.int64).geometric_(p).numpy()
    assert k.min() == 1
    freq = np.bincount(k, minlength=8)[1:8] / N
    np.testing.assert_allclose(freq, stats.geom.pmf(np.arange(1, 8), p), atol=0.005)
    kf = ember.zeros(N).geometric_(0.9).numpy()
    assert abs(kf.mean() - 1 / 0.9) < 0.01


def test_bernoulli_frequencies():
    p = ember.tensor([0.0, 0.1, 0.5, 0.9, 1.0]).reshape(5, 1).expand(5, 40_000)
    x = ember.bernoulli(p).numpy()
    assert set(np.unique(x)) <= {0.0, 1.0}
    np.testing.assert_allclose(x.mean(1), [0, 0.1, 0.5, 0.9, 1], atol=0.01)
    y = ember.zeros(N, dtype=ember.int32).bernoulli_(0.25).numpy()
    assert abs(y.mean() - 0.25) < 0.005
    assert ember.bernoulli(ember.zeros(10, dtype=ember.bool), 1.0).all().item()


def test_randint_ranges():
    x = ember.randint(3, 7, (N,)).numpy()
    assert x.min() == 3 and x.max() == 6
    np.testing.assert_allclose(np.bincount(x)[3:] / N, 0.25, atol=0.005)
    y = ember.randint(5, (1000,)).numpy()
    assert y.min() == 0 and y.max() == 4
    big = ember.randint(-(2**63), 2**63 - 1, (10_000,)).numpy()
    assert (big < 0).mean() == pytest.approx(0.5, abs=0.03)
    b = ember.randint(0, 2, (1000,), dtype=ember.bool).numpy()
    assert b.dtype == np.bool_ and 400 < b.sum() < 600


@pytest.mark.parametrize("dtype, top", [(ember.bool, 1), (ember.uint8, 255), (ember.int8, 127),
                                        (ember.float16, 2**11), (ember.bfloat16, 2**8)])
def test_random_default_ranges(dtype, top):
    x = host(ember.zeros(20_000, dtype=dtype).random_())
    assert x.min() >= 0 and x.max() <= top
    assert x.max() >= top * 0.95


def test_random_float32_range():
    x = ember.zeros(N).random_().numpy()
    assert x.min() >= 0 and x.max() <= 2**24 and (x == np.round(x)).all()


@pytest.mark.parametrize("n", [0, 1, 2, 5, 1000, 100_003])
def test_randperm_is_permutation(n):
    p = ember.randperm(n).numpy()
    np.testing.assert_array_equal(np.sort(p), np.arange(n))


def test_randperm_is_uniform():
    counts = np.zeros((4, 4))
    g = ember.Generator().manual_seed(0)
    for _ in range(4000):
        p = ember.randperm(4, generator=g).numpy()
        counts[np.arange(4), p] += 1
    np.testing.assert_allclose(counts / 4000, 0.25, atol=0.03)


def test_multinomial_with_replacement_frequencies():
    probs = ember.tensor([[1.0, 2.0, 0.0, 7.0], [0.0, 0.0, 5.0, 5.0]])
    s = ember.multinomial(probs, 50_000, replacement=True).numpy()
    f0 = np.bincount(s[0], minlength=4) / 50_000
    f1 = np.bincount(s[1], minlength=4) / 50_000
    np.testing.assert_allclose(f0, [0.1, 0.2, 0.0, 0.7], atol=0.01)
    np.testing.assert_allclose(f1, [0.0, 0.0, 0.5, 0.5], atol=0.01)
    assert f0[2] == 0 and f1[0] == 0 and f1[1] == 0  # zero probability: never drawn


def test_multinomial_without_replacement():
    probs = ember.tensor([0.1, 0.2, 0.3, 0.4]).expand(20_000, 4).contiguous()
    s = ember.multinomial(probs, 3).numpy()
    assert all(len(set(r)) == 3 for r in s[:2000])  # no repeats within a row
    np.testing.assert_allclose(np.bincount(s[:, 0], minlength=4) / 20_000, [0.1, 0.2, 0.3, 0.4], atol=0.015)
    full = ember.multinomial(ember.tensor([0.0, 3.0, 0.0, 1.0]), 4).numpy()
    assert sorted(full) == [0, 1, 2, 3] and set(full[:2]) == {1, 3}  # zero-probability ones come last


@pytest.mark.parametrize("rate", [0.0, 0.5, 4.0, 100.0, 1e6])
def test_poisson_moments(rate):
    x = ember.poisson(ember.full((50_000,), rate, dtype=ember.float64)).numpy()
    assert (x == np.round(x)).all() and x.min() >= 0
    tol = 4 * math.sqrt(rate / 50_000) + 1e-12
    assert abs(x.mean() - rate) <= tol
    if rate:
        assert abs(x.var() / rate - 1) < 0.05


def test_poisson_huge_rates():
    x = ember.poisson(ember.tensor([1e20, math.inf], dtype=ember.float64)).numpy()
    assert abs(x[0] / 1e20 - 1) < 1e-6 and x[1] == math.inf


# ---- errors --------------------------------------------------------------------------------------
ERRORS = [
    (lambda L: L.rand(2, dtype=L.int64), TypeError, "floating dtype"),
    (lambda L: L.randn(2, dtype=L.bool), TypeError, "floating dtype"),
    (lambda L: L.rand_like(L.ones(2, dtype=L.int64)), TypeError, "floating dtype"),
    (lambda L: L.rand(-1), RuntimeError, "negative"),
    (lambda L: L.rand(2.5), TypeError, "int"),
    (lambda L: L.randint(5, 5, (3,)), RuntimeError, "from=5 >= to=5"),
    (lambda L: L.randint(6, 5, (3,)), RuntimeError, "from=6 >= to=5"),
    (lambda L: L.randint(0, 300, (3,), dtype=L.uint8), RuntimeError, "out of bounds for ember.uint8"),
    (lambda L: L.randint(-1, 3, (3,), dtype=L.uint8), RuntimeError, "out of bounds"),
    (lambda L: L.randint(0, 3, (3,), dtype=L.bool), RuntimeError, "out of bounds for ember.bool"),
    (lambda L: L.randint(5), TypeError, "size"),
    (lambda L: L.randint(5, 3), TypeError, "size"),
    (lambda L: L.randint(0.5, 5, (3,)), TypeError, "must be an int"),
    (lambda L: L.randperm(-1), RuntimeError, "non-negative"),
    (lambda L: L.randperm(5, dtype=L.bool), TypeError, "bool"),
    (lambda L: L.randperm(300, dtype=L.uint8), RuntimeError, "too large"),
    (lambda L: L.randperm(3000, dtype=L.float16), RuntimeError, "too large"),
    (lambda L: L.normal(L.zeros(3), L.ones(2)), RuntimeError, r"\[3\] and \[2\]"),
    (lambda L: L.normal(0.0, -1.0, (2,)), RuntimeError, "std >= 0.0"),
    (lambda L: L.normal(0.0, math.nan, (2,)), RuntimeError, "std >= 0.0"),
    (lambda L: L.normal(L.zeros(3), -1.0), RuntimeError, "std >= 0.0"),
    (lambda L: L.normal(L.zeros(3), -L.ones(3)), RuntimeError, "all elements of std >= 0.0"),
    (lambda L: L.normal(L.zeros(3, dtype=L.int64), 1.0), TypeError, "floating"),
    (lambda L: L.normal(2.0, 3.0), TypeError, "size"),
    (lambda L: L.normal(L.zeros(2), 1.0, dtype=L.float64), TypeError, "dtype"),
    (lambda L: L.bernoulli(L.full((3,), 1.5)), RuntimeError, r"\[0, 1\]"),
    (lambda L: L.bernoulli(L.full((3,), -0.5)), RuntimeError, r"\[0, 1\]"),
    (lambda L: L.bernoulli(L.full((3,), math.nan)), RuntimeError, r"\[0, 1\]"),
    (lambda L: L.bernoulli(L.ones(3, dtype=L.int64)), TypeError, "floating"),
    (lambda L: L.bernoulli(L.ones(3), 1.3), RuntimeError, r"p=1.3"),
    (lambda L: L.ones(3).bernoulli_(1.4), RuntimeError, r"p=1.4"),
    (lambda L: L.ones(3).bernoulli_(L.full((2,), 0.3)), RuntimeError, "broadcast"),
    (lambda L: L.ones(3).bernoulli_(L.full((3,), 2.0)), RuntimeError, r"\[0, 1\]"),
    (lambda L: L.multinomial(L.tensor([0.2, 0.3, 0.5]), 4), RuntimeError, "without replacement"),
    (lambda L: L.multinomial(L.tensor([0.2, 0.3, 0.5]), 0), RuntimeError, "n_sample <= 0"),
    (lambda L: L.multinomial(L.tensor([-0.2, 0.3, 0.5]), 1), RuntimeError, "element < 0"),
    (lambda L: L.multinomial(L.tensor([math.inf, 0.3, 0.5]), 1), RuntimeError, "inf"),
    (lambda L: L.multinomial(L.tensor([math.nan, 0.3, 0.5]), 1, True), RuntimeError, "nan"),
    (lambda L: L.multinomial(L.tensor([0.0, 0.0]), 1), RuntimeError, "sum of probabilities <= 0"),
    (lambda L: L.multinomial(L.tensor([[0.0, 0.0], [1.0, 1.0]]), 1, True), RuntimeError, "sum of probabilities"),
    (lambda L: L.multinomial(L.tensor(1.0), 1), RuntimeError, "1 or 2 dim"),
    (lambda L: L.multinomial(L.ones(2, 2, 2), 1), RuntimeError, "1 or 2 dim"),
    (lambda L: L.multinomial(L.ones(3, dtype=L.int64), 1), TypeError, "floating-point"),
    (lambda L: L.multinomial(L.ones(2, 0), 1), RuntimeError, "without replacement"),
    (lambda L: L.poisson(L.ones(3, dtype=L.int64)), TypeError, "floating"),
    (lambda L: L.poisson(-L.ones(3)), RuntimeError, "non-negative"),
    (lambda L: L.poisson(L.full((3,), math.nan)), RuntimeError, "non-negative"),
    (lambda L: L.ones(3).uniform_(2, 1), RuntimeError, "from=2.0 > to=1.0"),
    (lambda L: L.ones(3, dtype=L.int64).uniform_(), TypeError, "floating"),
    (lambda L: L.ones(3).uniform_(0, math.inf), RuntimeError, "finite"),
    (lambda L: L.ones(3).uniform_(-3e38, 3e38), RuntimeError, "to - from"),
    (lambda L: L.ones(3).normal_(0, -1), RuntimeError, "std >= 0.0"),
    (lambda L: L.ones(3, dtype=L.int64).normal_(), TypeError, "floating"),
    (lambda L: L.ones(3).exponential_(0), RuntimeError, "lambda > 0.0"),
    (lambda L: L.ones(3).exponential_(-1), RuntimeError, "lambda > 0.0"),
    (lambda L: L.ones(3, dtype=L.int64).exponential_(), TypeError, "floating"),
    (lambda L: L.ones(3).geometric_(0), RuntimeError, r"\(0, 1\)"),
    (lambda L: L.ones(3).geometric_(1), RuntimeError, r"\(0, 1\)"),
    (lambda L: L.ones(3, dtype=L.bool).geometric_(0.5), TypeError, "bool"),
    (lambda L: L.ones(3).log_normal_(0, 0), RuntimeError, "std > 0.0"),
    (lambda L: L.ones(3, dtype=L.int64).log_normal_(), TypeError, "floating"),
    (lambda L: L.ones(3).cauchy_(0, 0), RuntimeError, "sigma > 0.0"),
    (lambda L: L.ones(3, dtype=L.int64).cauchy_(), TypeError, "floating"),
    (lambda L: L.ones(3).random_(5, 2), RuntimeError, "from=5 >= to=2"),
    (lambda L: L.ones(3, dtype=L.uint8).random_(0, 300), RuntimeError, "out of bounds"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, exc, match = ERRORS[i]
    with pytest.raises(exc, match=match):
        fn(ember)
    with pytest.raises(Exception):  # noqa: B017 - PyTorch refuses too (its type may be NotImplementedError)
        fn(torch)


def test_generator_argument_errors():
    with pytest.raises(TypeError, match="ember.Generator"):
        ember.rand(2, generator=torch.Generator())
    with pytest.raises(ValueError, match="non-negative"):
        ember.Generator().set_offset(-1)
