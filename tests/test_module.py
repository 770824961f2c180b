"""nn.Module, Parameter, containers, nn.init and nn.utils against torch's semantics.

The same model is built in both libraries from one description (``build(lib)``), so names, orders,
reprs, hooks and errors can be compared directly.
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import nn

LIBS = {"ember": ember, "torch": torch}


def build(lib):
    """A small nested model using every container, Identity, buffers (persistent or not) and a
    shared submodule."""
    N = lib.nn

    class Block(N.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = N.Parameter(lib.ones(n, n) * 0.5)
            self.register_buffer("running", lib.zeros(n))
            self.register_buffer("scratch", lib.zeros(1), persistent=False)
            self.act = N.Identity()

        def forward(self, x):
            return self.act(x @ self.weight + self.running)

    class Net(N.Module):
        def __init__(self):
            super().__init__()
            self.stem = N.Sequential(Block(3), N.Identity())
            self.blocks = N.ModuleList([Block(3), Block(3), Block(3)])
            self.heads = N.ModuleDict({"main": Block(3), "aux": N.Identity()})
            self.extra = N.ParameterList([N.Parameter(lib.zeros(2)), N.Parameter(lib.ones(3))])
            self.table = N.ParameterDict({"b": N.Parameter(lib.ones(2, 2)), "a": N.Parameter(lib.zeros(1))})
            self.bias = N.Parameter(lib.zeros(3))
            self.shared = self.blocks[0]

        def forward(self, x):
            x = self.stem(x)
            for b in self.blocks:
                x = b(x)
            return self.heads["main"](x) + self.bias

    return Net()


def np_of(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


# ---- registration, naming, iteration -------------------------------------------------------------
def test_names_and_orders_match_torch():
    e, t = build(ember), build(torch)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in t.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_modules(remove_duplicate=False)] == \
        [n for n, _ in t.named_modules(remove_duplicate=False)]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in e.named_parameters(recurse=False)] == [n for n, _ in t.named_parameters(recurse=False)]
    assert [n for n, _ in e.stem.named_parameters(prefix="p")] == [n for n, _ in t.stem.named_parameters(prefix="p")]
    assert len(list(e.parameters())) == len(list(t.parameters()))
    assert len(list(e.modules())) == len(list(t.modules()))
    assert len(list(e.children())) == len(list(t.children()))


def test_state_dict_values_are_detached_views_and_keep_vars():
    m = build(ember)
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    w = sd["bias"]
    assert not w.requires_grad and not isinstance(w, nn.Parameter)
    with ember.no_grad():
        m.bias.add_(1.0)
    assert w.tolist() == [1.0, 1.0, 1.0]  # shares memory with the parameter, like torch
    kv = m.state_dict(keep_vars=True)
    assert kv["bias"] is m.bias
    pre = m.state_dict(prefix="model.")
    assert list(pre) == ["model." + k for k in sd]
    assert "stem.0.scratch" not in sd and "stem.0.running" in sd


def test_repr_matches_torch():
    e, t = build(ember), build(torch)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert repr(nn.Sequential()) == "Sequential()"
    assert repr(nn.ModuleList()) == "ModuleList()"
    seq_e = nn.Sequential(nn.Identity(), nn.ModuleList([nn.Identity(), nn.Identity(), nn.Sequential()]))
    seq_t = torch.nn.Sequential(torch.nn.Identity(),
                                torch.nn.ModuleList([torch.nn.Identity(), torch.nn.Identity(), torch.nn.Sequential()]))
    assert repr(seq_e) == repr(seq_t)
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert repr(p) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))


def test_extra_repr_and_none_children():
    class Lin(nn.Module):
        def extra_repr(self):
            return "in=2, out=3"

    class TLin(torch.nn.Module):
        def extra_repr(self):
            return "in=2, out=3"
    e, t = nn.Sequential(Lin()), torch.nn.Sequential(TLin())
    e.add_module("gone", None)
    t.add_module("gone", None)
    assert repr(e).replace("Lin", "X") == repr(t).replace("TLin", "X")


def test_getattr_setattr_delattr():
    m = nn.Module()
    m.w = nn.Parameter(ember.zeros(2))
    m.sub = nn.Identity()
    m.register_buffer("b", ember.ones(1))
    m.plain = 3
    assert "w" in m._parameters and "sub" in m._modules and m.plain == 3
    assert m.b.tolist() == [1.0]
    m.b = ember.zeros(1)  # assigning a tensor into a registered buffer slot updates the buffer
    assert m._buffers["b"].tolist() == [0.0]
    m.w = None
    assert m._parameters["w"] is None and m.w is None
    assert list(m.state_dict()) == ["b"]
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="no attribute 'sub'"):
        m.sub  # noqa: B018
    d = dir(m)
    assert "w" in d and "b" in d and "forward" in d
    # a Parameter replaces a plain attribute or a submodule of the same name (not the reverse)
    m.plain = nn.Parameter(ember.zeros(1))
    assert "plain" in m._parameters and "plain" not in m.__dict__
    with pytest.raises(TypeError):
        m.plain = nn.Identity()
    m.sub2 = nn.Identity()
    m.sub2 = nn.Parameter(ember.zeros(1))
    assert "sub2" in m._parameters and "sub2" not in m._modules


@pytest.mark.parametrize("action", ["param_into_module_slot", "tensor_as_param", "int_buffer", "int_module",
                                    "param_before_init", "module_before_init", "buffer_dot", "buffer_empty",
                                    "param_exists", "add_module_type", "buffer_type", "nonleaf_param"])
def test_registration_errors_match_torch(action):
    def run(lib):
        N = lib.nn
        m = N.Module()
        m.lin = N.Identity()
        m.p = N.Parameter(lib.zeros(2))
        m.register_buffer("buf", lib.zeros(2))
        m.attr = 1
        if action == "param_into_module_slot":
            m.lin = 5
        elif action == "tensor_as_param":
            m.p = lib.zeros(2)
        elif action == "int_buffer":
            m.buf = 3
        elif action == "int_module":
            m.register_parameter("q", lib.zeros(2))
        elif action == "param_before_init":
            class Bad(N.Module):
                def __init__(self):
                    self.w = N.Parameter(lib.zeros(1))
            Bad()
        elif action == "module_before_init":
            class Bad2(N.Module):
                def __init__(self):
                    self.m = N.Identity()
            Bad2()
        elif action == "buffer_dot":
            m.register_buffer("a.b", None)
        elif action == "buffer_empty":
            m.register_buffer("", None)
        elif action == "param_exists":
            m.register_parameter("attr", None)
        elif action == "add_module_type":
            m.add_module("x", 3)
        elif action == "buffer_type":
            m.register_buffer("x", 3)
        elif action == "nonleaf_param":
            x = lib.ones(2, requires_grad=True)
            m.register_parameter("y", x * 2)
    errors = {}
    for name, lib in LIBS.items():
        with pytest.raises(Exception) as info:
            run(lib)
        errors[name] = type(info.value)
    assert errors["ember"] is errors["torch"], errors


def test_get_submodule_parameter_buffer():
    for lib in (ember, torch):
        m = build(lib)
        assert m.get_submodule("blocks.1") is m.blocks[1]
        assert m.get_submodule("") is m
        assert m.get_parameter("heads.main.weight") is m.heads["main"].weight
        assert m.get_buffer("stem.0.running") is m.stem[0].running
        with pytest.raises(AttributeError):
            m.get_submodule("blocks.7")
        with pytest.raises(AttributeError):
            m.get_parameter("stem.0.running")
        with pytest.raises(AttributeError):
            m.get_submodule("bias.x")
    e = build(ember)
    e.set_submodule("heads.aux", nn.Sequential())
    assert isinstance(e.heads["aux"], nn.Sequential)


def test_forward_missing_and_call():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)
    e, t = build(ember), build(torch)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(np_of(e(ember.tensor(x))), np_of(t(torch.tensor(x))), rtol=1e-6)


# ---- modes, grads, apply, conversion ------------------------------------------------------------
def test_train_eval_requires_grad_zero_grad():
    m = build(ember)
    assert all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    m.blocks.train(False)
    assert not m.blocks[2].training and m.stem.training
    with pytest.raises(ValueError, match="boolean"):
        m.train("yes")
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    out = m(ember.ones(2, 3)).sum()
    out.backward()
    assert all(p.grad is not None for p in m.heads.parameters())
    m.zero_grad(set_to_none=False)
    assert all(p.grad is None or float(p.grad.abs().sum()) == 0.0 for p in m.parameters())
    assert m.bias.grad is not None
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_apply_order_matches_torch():
    seen = {}
    for name, lib in LIBS.items():
        order = []
        build(lib).apply(lambda mod, order=order: order.append(type(mod).__name__))
        seen[name] = order
    assert seen["ember"] == seen["torch"]


def test_to_and_casts_keep_parameter_identity():
    m = build(ember)
    m.register_buffer("count", ember.tensor([3]))
    p = m.bias
    m(ember.ones(2, 3)).sum().backward()
    assert m.double() is m
    assert m.bias is p and p.dtype is ember.float64 and p.requires_grad and isinstance(p, nn.Parameter)
    assert p.grad.dtype is ember.float64
    assert m.count.dtype is ember.int64  # only floating tensors change dtype
    m.to(ember.float16)
    assert p.dtype is ember.float16 and m.stem[0].running.dtype is ember.float16
    m.to("cpu", ember.float32)
    assert p.dtype is ember.float32
    m.to(dtype=ember.bfloat16).float()
    assert p.dtype is ember.float32
    m.to(ember.zeros(1, dtype=ember.float64))
    assert p.dtype is ember.float64
    m.half()
    assert p.dtype is ember.float16
    m.type(ember.float32)
    assert m.count.dtype is ember.float32
    with pytest.raises(TypeError, match="floating point"):
        m.to(ember.int32)
    with pytest.raises(TypeError, match="floating point"):
        torch.nn.Linear(2, 2).to(torch.int32)


# ---- state dict loading -------------------------------------------------------------------------
def _copy_weights(src_torch: torch.nn.Module, dst: nn.Module):
    dst.load_state_dict({k: ember.tensor(v.numpy()) for k, v in src_torch.state_dict().items()})


def test_load_state_dict_copies_values():
    t = build(torch)
    with torch.no_grad():
        for i, p in enumerate(t.parameters()):
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(i)))
    e = build(ember)
    p_before = e.bias
    res = _copy_weights(t, e)
    assert res is None or True
    assert e.bias is p_before  # copied in place
    for (k, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
        np.testing.assert_array_equal(np_of(a), b.numpy(), err_msg=k)
    x = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    np.testing.assert_allclose(np_of(e(ember.tensor(x))), np_of(t(torch.tensor(x))), rtol=1e-5, atol=1e-6)


def _ember_sd(t_sd):
    return OrderedDict((k, ember.tensor(v.numpy())) for k, v in t_sd.items())


def test_load_state_dict_missing_unexpected_match_torch():
    e, t = build(ember), build(torch)
    t_sd = t.state_dict()
    del t_sd["bias"], t_sd["blocks.1.weight"]
    t_sd["blocks.9.weight"] = torch.zeros(1)
    t_sd["stem.0.nothing"] = torch.zeros(1)
    t_sd["stem.0.scratch"] = torch.zeros(1)  # non-persistent buffers are unexpected too
    e_sd = _ember_sd(t_sd)
    r_t = t.load_state_dict(t_sd, strict=False)
    r_e = e.load_state_dict(e_sd, strict=False)
    assert r_e.missing_keys == r_t.missing_keys
    assert r_e.unexpected_keys == r_t.unexpected_keys
    assert r_e == (r_t.missing_keys, r_t.unexpected_keys)
    with pytest.raises(RuntimeError) as info:
        e.load_state_dict(e_sd)
    msg = str(info.value)
    assert "Error(s) in loading state_dict for Net" in msg
    for k in r_t.missing_keys + r_t.unexpected_keys:
        assert f'"{k}"' in msg
    assert msg.index("Missing") < msg.index("Unexpected")
    ok = e.load_state_dict(_ember_sd(t.state_dict()))
    assert ok.missing_keys == [] and ok.unexpected_keys == [] and repr(ok) == "<All keys matched successfully>"


def test_load_state_dict_shape_mismatch_always_raises():
    e = build(ember)
    sd = e.state_dict()
    sd["bias"] = ember.zeros(4)
    sd["blocks.0.weight"] = ember.zeros(2, 2)
    for strict in (True, False):
        with pytest.raises(RuntimeError) as info:
            e.load_state_dict(sd, strict=strict)
        msg = str(info.value)
        assert "size mismatch for bias" in msg and "[4]" in msg and "[3]" in msg
        assert "size mismatch for blocks.0.weight" in msg and "[2, 2]" in msg and "[3, 3]" in msg
    with pytest.raises(TypeError, match="dict-like"):
        e.load_state_dict([1, 2])
    bad = e.state_dict()
    bad["bias"] = 3
    with pytest.raises(RuntimeError, match="bias"):
        e.load_state_dict(bad)


def test_load_state_dict_assign_and_dtype_conversion():
    m = nn.Module()
    m.w = nn.Parameter(ember.zeros(2))
    m.load_state_dict({"w": ember.tensor([1.0, 2.0], dtype=ember.float64)})
    assert m.w.dtype is ember.float32 and m.w.tolist() == [1.0, 2.0]
    new = ember.tensor([5.0, 6.0], dtype=ember.float64)
    m.load_state_dict({"w": new}, assign=True)
    assert isinstance(m.w, nn.Parameter) and m.w.dtype is ember.float64 and m.w.requires_grad


def test_extra_state_and_state_dict_hooks():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 1

        def get_extra_state(self):
            return {"k": self.k}

        def set_extra_state(self, state):
            self.k = state["k"]

    m = nn.Sequential(WithExtra())
    sd = m.state_dict()
    assert list(sd) == ["0._extra_state"] and sd["0._extra_state"] == {"k": 1}
    m2 = nn.Sequential(WithExtra())
    m2[0].k = 5
    m2.load_state_dict(sd)
    assert m2[0].k == 1
    with pytest.raises(RuntimeError, match="_extra_state"):
        m2.load_state_dict({})

    calls = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep: calls.append(("pre", prefix)))
    h = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.__setitem__("added", 1))
    assert "added" in m.state_dict() and calls == [("pre", "")]
    h.remove()
    assert "added" not in m.state_dict()
    m.register_load_state_dict_pre_hook(
        lambda mod, sd, prefix, *rest: sd.__setitem__("0._extra_state", {"k": 9}))
    post = []
    m.register_load_state_dict_post_hook(lambda mod, keys: post.append(list(keys.missing_keys)))
    m.load_state_dict({"0._extra_state": {"k": 2}})
    assert m[0].k == 9 and post == [[]]


# ---- hooks --------------------------------------------------------------------------------------
def _hook_log(lib):
    N = lib.nn
    log = []
    m = N.Sequential(N.Identity(), N.Identity())
    h1 = m.register_forward_pre_hook(lambda mod, args: log.append(("pre1", len(args))))
    m.register_forward_pre_hook(lambda mod, args: log.append(("pre0",)), prepend=True)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (log.append(("prekw", sorted(kwargs))), None)[1],
                                with_kwargs=True)
    m[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    m[1].register_forward_pre_hook(lambda mod, args: args[0] + 1)  # a non-tuple return is wrapped
    m.register_forward_hook(lambda mod, args, out: log.append(("fwd1",)))
    m.register_forward_hook(lambda mod, args, out: (log.append(("fwd0",)), out * 10)[1], prepend=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("fwdkw", len(args))), with_kwargs=True)
    out1 = m(lib.ones(2))
    h1.remove()
    out2 = m(lib.ones(2))
    with m.register_forward_hook(lambda mod, args, out: out + 100):
        out3 = m(lib.ones(2))
    out4 = m(lib.ones(2))
    return log, [o.tolist() for o in (out1, out2, out3, out4)]


def test_forward_hooks_order_and_results_match_torch():
    assert _hook_log(ember) == _hook_log(torch)


def test_always_call_hook_and_kwargs_pre_hook():
    for lib in (ember, torch):
        N = lib.nn

        class Boom(N.Module):
            def forward(self, x, scale=1.0):
                if scale < 0:
                    raise ValueError("boom")
                return x * scale
        m = Boom()
        seen = []
        m.register_forward_hook(lambda mod, args, out, seen=seen: seen.append(out), always_call=True)
        m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": kwargs.get("scale", 1.0) * 3}),
                                    with_kwargs=True)
        assert m(lib.ones(1), scale=2.0).tolist() == [6.0]
        with pytest.raises(ValueError, match="boom"):
            m(lib.ones(1), scale=-1.0)
        assert len(seen) == 2 and seen[1] is None


# ---- Parameter ----------------------------------------------------------------------------------
def test_parameter_basics():
    src = ember.tensor([1.0, 2.0])
    p = nn.Parameter(src)
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter) and ember.is_tensor(p)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    with ember.no_grad():
        src.add_(1.0)
    assert p.tolist() == [2.0, 3.0]  # shares memory with its source, like torch
    q = nn.Parameter(ember.zeros(2), requires_grad=False)
    assert not q.requires_grad
    assert nn.Parameter().shape == (0,)
    assert type(p * 2) is ember.Tensor and type(p.detach()) is ember.Tensor and type(p.clone()) is ember.Tensor
    with pytest.raises(RuntimeError):
        nn.Parameter(ember.tensor([1, 2]))
    assert not nn.Parameter(ember.tensor([1, 2]), requires_grad=False).requires_grad
    with pytest.raises(TypeError):
        nn.Parameter([1.0])
    y = (p * p).sum()
    y.backward()
    assert p.grad.tolist() == [4.0, 6.0]
    p.tag = "decay"  # parameters carry attributes, as in torch
    c = copy.deepcopy(p)
    assert isinstance(c, nn.Parameter) and c.requires_grad and c.tag == "decay"
    assert c.tolist() == p.tolist() and c.data_ptr() != p.data_ptr()


def test_deepcopy_module():
    m = build(ember)
    c = copy.deepcopy(m)
    assert all(isinstance(p, nn.Parameter) for p in c.parameters())
    assert c.shared is c.blocks[0]  # sharing is preserved
    with ember.no_grad():
        c.bias.fill_(7.0)
    assert m.bias.tolist() == [0.0, 0.0, 0.0]
    assert list(c.state_dict()) == list(m.state_dict())


# ---- containers ---------------------------------------------------------------------------------
def _tags(seq):
    return [getattr(m, "tag", None) for m in seq]


def _tagged(lib, n):
    out = []
    for i in range(n):
        m = lib.nn.Identity()
        m.tag = i
        out.append(m)
    return out


def test_sequential_ops_match_torch():
    results = {}
    for name, lib in LIBS.items():
        S = lib.nn.Sequential
        s = S(*_tagged(lib, 4))
        r = [_tags(s), s[-1].tag, _tags(s[1:3]), list(s[1:3]._modules), len(s)]
        s.append(_tagged(lib, 5)[4])
        s.insert(1, _tagged(lib, 7)[6])
        s.insert(-1, _tagged(lib, 9)[8])
        r.append(_tags(s))
        del s[0]
        r += [_tags(s), list(s._modules)]
        r.append(s.pop(2).tag)
        s.extend(_tagged(lib, 2))
        r.append(_tags(s))
        s[0] = _tagged(lib, 12)[11]
        r.append(_tags(s))
        r.append(_tags(s + S(*_tagged(lib, 1))))
        r.append(_tags(s * 2))
        named = S(OrderedDict([("a", lib.nn.Identity()), ("b", lib.nn.Identity())]))
        r.append(list(named._modules))
        r.append(list(named[1:]._modules))
        with pytest.raises(IndexError):
            s[99]
        results[name] = r
    assert results["ember"] == results["torch"]
    s = nn.Sequential(nn.Identity(), nn.Identity())
    assert s(ember.ones(2)).tolist() == [1.0, 1.0]


def test_modulelist_moduledict_match_torch():
    results = {}
    for name, lib in LIBS.items():
        ml = lib.nn.ModuleList(_tagged(lib, 3))
        r = [_tags(ml), _tags(ml[::-1]), ml[-1].tag]
        ml.append(_tagged(lib, 4)[3])
        ml.extend(_tagged(lib, 2))
        ml.insert(1, _tagged(lib, 9)[8])
        r.append(_tags(ml))
        del ml[0]
        r += [_tags(ml), list(ml._modules), ml.pop(1).tag, len(ml)]
        ml += _tagged(lib, 1)
        r.append(_tags(ml))
        with pytest.raises(IndexError):
            ml[50]
        md = lib.nn.ModuleDict({"b": lib.nn.Identity(), "a": lib.nn.Tanh() if lib is torch else lib.nn.Sequential()})
        md["c"] = lib.nn.Identity()
        md.update([("d", lib.nn.Identity())])
        r += [list(md.keys()), "a" in md, len(md), type(md.pop("b")).__name__, list(md)]
        del md["c"]
        r.append(list(md.keys()))
        results[name] = r
    assert results["ember"] == results["torch"]


def test_parameterlist_parameterdict_match_torch():
    results = {}
    for name, lib in LIBS.items():
        pl = lib.nn.ParameterList([lib.ones(2), lib.nn.Parameter(lib.zeros(3))])
        pl.append(lib.ones(1))
        pl.extend([lib.zeros(2, 2)])
        r = [len(pl), [type(p).__name__ for p in pl], [list(p.shape) for p in pl], list(pl.state_dict()),
             pl[-1].requires_grad, [list(p.shape) for p in pl[1:3]]]
        pl[0] = lib.ones(5)
        r.append(list(pl[0].shape))
        pd = lib.nn.ParameterDict({"z": lib.ones(1), "a": lib.zeros(2)})  # plain dicts are sorted
        pd["m"] = lib.ones(3)
        pd.update(OrderedDict([("y", lib.ones(1)), ("b", lib.ones(1))]))
        r += [list(pd.keys()), type(pd["m"]).__name__, "a" in pd, pd.get("nope"), len(pd),
              list(pd.state_dict())]
        r.append(list(pd.pop("a").shape))
        r.append(list(pd.keys()))
        results[name] = r
    assert results["ember"] == results["torch"]
    e = nn.ParameterDict({"w": ember.ones(2, 3), "s": ember.ones(())})
    t = torch.nn.ParameterDict({"w": torch.ones(2, 3), "s": torch.ones(())})
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_identity():
    x = ember.ones(2)
    assert nn.Identity(3, k=4)(x) is x
    assert repr(nn.Identity()) == "Identity()"


# ---- nn.utils -----------------------------------------------------------------------------------
def _grad_pairs(seed=0, scale=1.0):
    rs = np.random.RandomState(seed)
    shapes = [(3, 4), (4,), (2, 2, 2), ()]
    vals = [np.asarray(rs.randn(*s), dtype=np.float32) * scale for s in shapes]
    grads = [np.asarray(rs.randn(*s), dtype=np.float32) * scale for s in shapes]
    pe = [nn.Parameter(ember.tensor(v)) for v in vals]
    pt = [torch.nn.Parameter(torch.tensor(v)) for v in vals]
    for p, g in zip(pe, grads):
        p.grad = ember.tensor(g)
    for p, g in zip(pt, grads):
        p.grad = torch.tensor(g)
    return pe, pt


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    pe, pt = _grad_pairs()
    te = nn.utils.clip_grad_norm_(pe, max_norm, norm_type=norm_type)
    tt = torch.nn.utils.clip_grad_norm_(pt, max_norm, norm_type=norm_type)
    np.testing.assert_allclose(float(te), float(tt), rtol=1e-6)
    assert te.shape == ()
    for a, b in zip(pe, pt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_edge_cases():
    p = nn.Parameter(ember.zeros(2))
    assert float(nn.utils.clip_grad_norm_([p], 1.0)) == 0.0  # no gradients at all
    p.grad = ember.tensor([3.0, 4.0])
    assert float(nn.utils.clip_grad_norm_(p, 1.0)) == 5.0  # a single tensor is accepted
    p.grad = ember.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    total = nn.utils.clip_grad_norm_([p], 1.0, foreach=True)
    assert math.isnan(float(total))


def test_clip_grad_value_matches_torch():
    pe, pt = _grad_pairs(1, scale=3.0)
    assert nn.utils.clip_grad_value_(pe, 1.5) is None
    torch.nn.utils.clip_grad_value_(pt, 1.5)
    for a, b in zip(pe, pt):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_parameters_vector_round_trip():
    pe, pt = _grad_pairs(2)
    ve = nn.utils.parameters_to_vector(pe)
    vt = torch.nn.utils.parameters_to_vector(pt)
    np.testing.assert_array_equal(ve.detach().numpy(), vt.detach().numpy())
    assert ve.requires_grad  # differentiable, like torch's
    nn.utils.vector_to_parameters(ve.detach() * 2, pe)
    torch.nn.utils.vector_to_parameters(vt.detach() * 2, pt)
    for a, b in zip(pe, pt):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert isinstance(a, nn.Parameter) and a.requires_grad
    with pytest.raises(TypeError):
        nn.utils.vector_to_parameters([1.0], pe)
    with pytest.raises(RuntimeError, match="elements"):
        nn.utils.vector_to_parameters(ember.zeros(3), pe)


def test_num_params_and_summary():
    m = build(ember)
    total = sum(p.numel() for p in build(torch).parameters())
    assert nn.utils.num_params(m, trainable_only=False) == total
    m.heads.requires_grad_(False)
    assert nn.utils.num_params(m) == total - 9
    s = nn.utils.summary(m, (2, 3))
    assert s.total_params == total and s.trainable_params == total - 9 and s.non_trainable_params == 9
    names = [r.name for r in s.rows]
    assert names[0] == "" and "stem.0" in names and "heads.main" in names and "heads.aux" not in names
    assert all(r.output_shape == [2, 3] for r in s.rows)
    # shared blocks count once; the ParameterList/Dict (10 elements) are never called, so have no row
    assert sum(r.params for r in s.rows) == total - 10
    text = str(s)
    assert "Net" in text and "0 (Block)" in text and f"Total params: {total}" in text
    s2 = nn.utils.summary(m, ember.ones(4, 3), depth=1)
    assert {r.depth for r in s2.rows} == {0, 1} and s2.rows[0].output_shape == [4, 3]
    assert not m._forward_hooks and not m.stem[0]._forward_pre_hooks  # hooks removed again
    with pytest.raises(TypeError):
        nn.utils.summary(m, "bad")


# ---- nn.init ------------------------------------------------------------------------------------
@pytest.mark.parametrize("nl,param", [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                                      ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None),
                                      ("conv_transpose3d", None)])
def test_calculate_gain_matches_torch(nl, param):
    assert nn.init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)


def test_calculate_gain_errors():
    for bad in [("softmax", None), ("leaky_relu", "x")]:
        with pytest.raises(ValueError):
            torch.nn.init.calculate_gain(*bad)
        with pytest.raises(ValueError):
            nn.init.calculate_gain(*bad)


@pytest.mark.parametrize("shape", [(5, 3), (8, 4, 3), (6, 2, 3, 3), (4, 2, 1, 2, 3), (0, 3)])
def test_fans_match_torch(shape):
    assert nn.init._calculate_fan_in_and_fan_out(ember.empty(shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    with pytest.raises(ValueError):
        nn.init._calculate_fan_in_and_fan_out(ember.empty(3))


@pytest.mark.parametrize("fn,kw,bound", [
    ("xavier_uniform_", {}, lambda fi, fo: math.sqrt(6 / (fi + fo))),
    ("xavier_uniform_", {"gain": 2.0}, lambda fi, fo: 2 * math.sqrt(6 / (fi + fo))),
    ("kaiming_uniform_", {}, lambda fi, fo: math.sqrt(2) * math.sqrt(3 / fi)),  # a=0: gain sqrt(2)
    ("kaiming_uniform_", {"a": math.sqrt(5)}, lambda fi, fo: math.sqrt(1 / fi)),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, lambda fi, fo: math.sqrt(6 / fo)),
])
def test_uniform_inits_respect_bounds(fn, kw, bound):
    ember.manual_seed(0)
    w = nn.Parameter(ember.empty(64, 32, 3))
    getattr(nn.init, fn)(w, **kw)
    fi, fo = 32 * 3, 64 * 3
    b = bound(fi, fo)
    a = w.detach().numpy()
    slack = b * 1e-6  # the bound itself is rounded to float32
    assert a.max() <= b + slack and a.min() >= -b - slack and a.max() > 0.95 * b and a.min() < -0.95 * b
    assert abs(a.std() - b / math.sqrt(3)) < 0.03 * b
    assert w.grad_fn is None and w.requires_grad and w.is_leaf  # ran under no_grad


@pytest.mark.parametrize("fn,kw,std", [
    ("xavier_normal_", {}, math.sqrt(2 / (96 + 192))),
    ("kaiming_normal_", {"nonlinearity": "relu"}, math.sqrt(2 / 96)),
    ("kaiming_normal_", {"mode": "fan_out", "a": 0.1}, math.sqrt(2 / 1.01) / math.sqrt(192)),
    ("normal_", {"mean": 1.0, "std": 0.5}, 0.5),
])
def test_normal_inits_std(fn, kw, std):
    w = ember.empty(64, 32, 3)
    getattr(nn.init, fn)(w, **kw)
    a = w.numpy()
    assert abs(a.std() - std) < 0.03 * std
    assert abs(a.mean() - kw.get("mean", 0.0)) < 0.05 * std + 1e-3


def test_trunc_normal_and_simple_fills():
    w = ember.empty(20000)
    nn.init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=1.5)
    a = w.numpy()
    assert a.min() >= -1.0 and a.max() <= 1.5
    ref = torch.empty(50000)
    torch.nn.init.trunc_normal_(ref, mean=0.5, std=1.0, a=-1.0, b=1.5, generator=torch.Generator().manual_seed(0))
    assert abs(a.mean() - ref.mean().item()) < 0.02 and abs(a.std() - ref.std().item()) < 0.02
    u = nn.init.uniform_(ember.empty(1000), -2.0, -1.0)
    assert u.numpy().min() >= -2.0 and u.numpy().max() < -1.0
    assert nn.init.constant_(ember.empty(3), 2.5).tolist() == [2.5] * 3
    assert nn.init.ones_(ember.empty(2)).tolist() == [1.0, 1.0]
    assert nn.init.zeros_(nn.Parameter(ember.empty(2))).tolist() == [0.0, 0.0]


def test_eye_dirac_orthogonal_sparse():
    for shape in [(3, 5), (4, 2)]:
        np.testing.assert_array_equal(nn.init.eye_(ember.empty(shape)).numpy(),
                                      torch.nn.init.eye_(torch.empty(shape)).numpy())
    with pytest.raises(ValueError):
        nn.init.eye_(ember.empty(2, 2, 2))
    for shape, groups in [((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((2, 4, 1, 3, 3), 1), ((4, 4, 2, 2), 4)]:
        np.testing.assert_array_equal(nn.init.dirac_(ember.empty(shape), groups).numpy(),
                                      torch.nn.init.dirac_(torch.empty(shape), groups).numpy())
    with pytest.raises(ValueError):
        nn.init.dirac_(ember.empty(3, 3), 1)
    with pytest.raises(ValueError):
        nn.init.dirac_(ember.empty(3, 3, 3), 2)
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        w = nn.init.orthogonal_(ember.empty(shape), gain=2.0)
        m = w.reshape(shape[0], -1).numpy().astype(np.float64)
        small = min(m.shape)
        gram = m @ m.T if m.shape[0] == small else m.T @ m
        np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)
    with pytest.raises(ValueError):
        nn.init.orthogonal_(ember.empty(3))
    s = nn.init.sparse_(ember.empty(10, 4), sparsity=0.3)
    assert ((s.numpy() == 0).sum(axis=0) >= 3).all()


def test_init_generator_reproducible():
    g1, g2 = ember.Generator().manual_seed(5), ember.Generator().manual_seed(5)
    a = nn.init.kaiming_uniform_(ember.empty(4, 3), generator=g1)
    b = nn.init.kaiming_uniform_(ember.empty(4, 3), generator=g2)
    assert ember.equal(a, b)
    c = nn.init.orthogonal_(ember.empty(4, 3), generator=ember.Generator().manual_seed(1))
    d = nn.init.orthogonal_(ember.empty(4, 3), generator=ember.Generator().manual_seed(1))
    assert ember.equal(c, d)
    with pytest.warns(UserWarning, match="no-op"):
        nn.init.kaiming_normal_(ember.empty(0, 3))
