"""load_into: torch checkpoints into ember modules (outputs compared with torch), renaming,
adapters, dtype casting, strictness and the report."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import ember
from ember import nn, store
from ember.store import LoadIntoError, LoadReport, StoreError, adapters


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.deconv = torch.nn.ConvTranspose2d(4, 2, 2, stride=2)
        self.ln = torch.nn.LayerNorm(2)
        self.fc = torch.nn.Linear(2 * 8 * 8, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = self.ln(self.deconv(x).permute(0, 2, 3, 1))
        return self.fc(x.flatten(1))


class EmberNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.deconv = nn.ConvTranspose2d(4, 2, 2, stride=2)
        self.ln = nn.LayerNorm(2)
        self.fc = nn.Linear(2 * 8 * 8, 5)

    def forward(self, x):
        x = nn.functional.relu(self.bn(self.conv(x)))
        x = self.ln(self.deconv(x).permute(0, 2, 3, 1))
        return self.fc(x.flatten(1))


def _trained_torch_net() -> TorchNet:
    torch.manual_seed(0)
    net = TorchNet()
    net.train()
    with torch.no_grad():
        net(torch.randn(4, 3, 4, 4))  # non-trivial running statistics
        for p in net.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return net.eval()


X = np.random.RandomState(1).randn(2, 3, 4, 4).astype(np.float32)


def _compare(enet: EmberNet, tnet: TorchNet, atol=1e-5):
    with torch.no_grad():
        want = tnet(torch.from_numpy(X)).numpy()
    got = enet.eval()(ember.tensor(X)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_torch_checkpoint_into_ember_module_matches_torch_outputs(tmp_path, zip_format):
    tnet = _trained_torch_net()
    path = tmp_path / "net.pt"
    torch.save({"epoch": 7, "model": tnet.state_dict()}, path, _use_new_zipfile_serialization=zip_format)
    enet = EmberNet()
    report = store.load_into(enet, path)
    assert isinstance(report, LoadReport) and report.ok
    assert report.applied == list(tnet.state_dict()) and not report.cast
    _compare(enet, tnet)


def test_layouts_need_no_adapter():
    """ember.nn stores weights as torch does, so every state dict key has the same shape."""
    t = {k: tuple(v.shape) for k, v in TorchNet().state_dict().items()}
    e = {k: tuple(v.shape) for k, v in EmberNet().state_dict().items()}
    assert t == e


def test_half_and_bfloat16_checkpoints_are_cast(tmp_path):
    tnet = _trained_torch_net()
    for dtype in (torch.float16, torch.bfloat16):
        sd = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in tnet.state_dict().items()}
        enet = EmberNet()
        report = store.load_into(enet, sd_to_ember(sd))
        assert {k for k, _, _ in report.cast} == {k for k, v in sd.items() if v.is_floating_point()}
        assert all(b == "float32" for _, _, b in report.cast)
        assert enet.fc.weight.dtype is ember.float32
        ref = TorchNet()
        ref.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in sd.items()})
        _compare(enet, ref.eval(), atol=1e-5)
    with pytest.raises(LoadIntoError, match="mismatched.*fc.weight"):
        store.load_into(EmberNet(), sd_to_ember(sd), dtype_cast=False)
    enet = EmberNet().to(ember.bfloat16)
    report = store.load_into(enet, sd_to_ember(tnet.state_dict()))
    assert report.cast and enet.fc.weight.dtype is ember.bfloat16


def sd_to_ember(sd) -> dict:
    return {k: ember.tensor(v.float().numpy()).to(getattr(ember, str(v.dtype)[6:])) for k, v in sd.items()}


def test_strict_reports_everything_and_changes_nothing():
    tnet = _trained_torch_net()
    sd = sd_to_ember(tnet.state_dict())
    sd["extra.weight"] = ember.zeros(1)
    del sd["fc.bias"]
    sd["ln.weight"] = ember.zeros(3)
    sd["bn.num_batches_tracked"] = ember.tensor(1.0)  # float where the module has int64
    enet = EmberNet()
    before = {k: v.clone() for k, v in enet.state_dict().items()}
    with pytest.raises(LoadIntoError) as info:
        store.load_into(enet, sd)
    r = info.value.report
    assert r.missing == ["fc.bias"] and r.unexpected == ["extra.weight"]
    assert ("ln.weight", ((2,), "float32"), ((3,), "float32")) in r.mismatched
    assert ("bn.num_batches_tracked", ((), "int64"), ((), "float32")) in r.mismatched
    text = str(info.value)
    assert "missing: fc.bias" in text and "unexpected: extra.weight" in text
    assert "ln.weight (module [2] float32, checkpoint [3] float32)" in text and "nothing was copied" in text
    assert not r.applied
    for k, v in enet.state_dict().items():
        assert ember.equal(v, before[k]), k
    r = store.load_into(enet, sd, strict=False)
    assert not r.ok and "conv.weight" in r.applied and "ln.weight" not in r.applied
    assert ember.equal(enet.conv.weight, sd["conv.weight"]) and ember.equal(enet.ln.weight, before["ln.weight"])


def test_remap_filter_and_renamed():
    tnet = _trained_torch_net()
    sd = {"backbone." + re.sub(r"^conv\.", "stem.", k): v for k, v in sd_to_ember(tnet.state_dict()).items()}
    enet = EmberNet()
    report = store.load_into(enet, sd, remap=[(r"^backbone\.", ""), (r"^stem\.", "conv.")])
    assert report.ok and report.renamed["backbone.stem.weight"] == "conv.weight"
    _compare(enet, tnet)
    fresh = EmberNet()
    conv_before = fresh.conv.weight.clone()
    report = store.load_into(fresh, sd, remap={r"^backbone\.": ""}, filter=r"^(fc|ln)\.")
    assert report.ok and sorted(report.applied) == ["fc.bias", "fc.weight", "ln.bias", "ln.weight"]
    assert ember.equal(fresh.conv.weight, conv_before) and len(report.skipped) == len(sd) - 4
    report = store.load_into(EmberNet(), sd, remap=[(r"^backbone\.stem\.", "conv."), (r"^backbone\.", "")],
                             filter=lambda k: not k.startswith("bn."))
    assert report.ok and not any(k.startswith("bn.") for k in report.applied)
    with pytest.raises(StoreError, match="both map to 'fc.weight'"):
        store.load_into(EmberNet(), {"a": ember.zeros(5, 128), "b": ember.zeros(5, 128)},
                        remap=[(r"^[ab]$", "fc.weight")])
    with pytest.raises(TypeError, match="remap entries"):
        store.load_into(EmberNet(), sd, remap=["x"])


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(4, 6)
        self.LayerNorm = nn.LayerNorm(6)


class GPTLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(10, 4)
        self.c_attn = nn.Linear(4, 12)
        self.lm_head = nn.Linear(4, 10, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as GPT-2's


def test_hf_adapter_gamma_beta_and_layer_norm_names():
    rs = np.random.RandomState(0)
    sd = {"bert.dense.weight": rs.randn(6, 4), "bert.dense.bias": rs.randn(6),
          "bert.LayerNorm.gamma": rs.randn(6), "bert.LayerNorm.beta": rs.randn(6)}
    sd = {k: ember.tensor(v.astype(np.float32)) for k, v in sd.items()}
    b = Block()
    report = store.load_into(b, sd, remap=[(r"^bert\.", "")], adapter=adapters.hf())
    assert report.ok and report.renamed["bert.LayerNorm.gamma"] == "LayerNorm.weight"
    assert ember.equal(b.LayerNorm.bias, sd["bert.LayerNorm.beta"])

    class Renamed(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense, self.norm = nn.Linear(4, 6), nn.LayerNorm(6)

    r = store.load_into(Renamed(), sd, adapter=adapters.chain(adapters.rename(lambda k: k.removeprefix("bert.")),
                                                             adapters.hf(layer_norm="norm")))
    assert r.ok and "norm.weight" in r.applied
    assert adapters.rename(lambda k: None).rename("x") is None
    r = store.load_into(Renamed(), sd, adapter=adapters.rename(lambda k: None), strict=False)
    assert len(r.skipped) == 4 and len(r.missing) == 4
    with pytest.raises(ValueError, match="layer_norm"):
        adapters.hf(layer_norm="a.b")


def test_transpose_adapter_and_tied_weights():
    """GPT-2's Conv1D stores (in, out); a tied lm_head absent from the checkpoint is not missing."""
    rs = np.random.RandomState(0)
    conv1d = rs.randn(4, 12).astype(np.float32)
    sd = {"wte.weight": ember.tensor(rs.randn(10, 4).astype(np.float32)), "c_attn.weight": ember.tensor(conv1d),
          "c_attn.bias": ember.zeros(12)}
    m = GPTLike()
    with pytest.raises(LoadIntoError, match=r"c_attn.weight \(module \[12, 4\] float32, checkpoint \[4, 12\]"):
        store.load_into(m, sd)
    sd["attn.bias"] = ember.ones(1, 1, 4, 4)  # GPT-2's constant causal mask: not a parameter
    report = store.load_into(m, sd, adapter=adapters.chain(adapters.transpose(r"c_attn\.weight$"),
                                                          adapters.drop(r"(^|\.)attn\.bias$")))
    assert report.ok and "lm_head.weight" not in report.missing and report.skipped == ["attn.bias"]
    np.testing.assert_array_equal(m.c_attn.weight.detach().numpy(), conv1d.T)
    assert ember.equal(m.lm_head.weight, sd["wte.weight"])


def test_custom_adapter_sees_the_target():
    class Scale(adapters.Adapter):
        def convert(self, key, value, target):
            assert target is None or tuple(target.shape) == tuple(value.shape)
            return value * 2 if key.endswith("bias") else value

    lin = nn.Linear(2, 2)
    store.load_into(lin, {"weight": ember.ones(2, 2), "bias": ember.ones(2)}, adapter=Scale())
    assert lin.bias.tolist() == [2.0, 2.0] and lin.weight.requires_grad


def test_source_types_and_argument_errors(tmp_path):
    lin = nn.Linear(2, 2)
    path = tmp_path / "lin.safetensors"
    store.save_file({"weight": ember.eye(2), "bias": ember.ones(2)}, path)
    assert store.load_into(lin, path).ok and lin.weight.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert store.load_into(lin, str(path)).ok
    assert store.load_into(lin, {"state_dict": {"module.weight": ember.eye(2), "module.bias": ember.ones(2)}}).ok
    with pytest.raises(TypeError, match="source must be a path or a dict"):
        store.load_into(lin, [1, 2])
    with pytest.raises(TypeError, match="ember.nn.Module"):
        store.load_into(torch.nn.Linear(2, 2), path)
    with pytest.raises(TypeError, match="adapter"):
        store.load_into(lin, path, adapter=lambda k: k)
    with pytest.raises(TypeError, match="filter"):
        store.load_into(lin, path, filter=3)


def test_export_round_trip_through_torch(tmp_path):
    """ember -> safetensors -> torch module -> torch.save -> ember: the same numbers all the way."""
    import safetensors.torch
    ember.manual_seed(3)
    enet = EmberNet()
    enet.train()
    enet(ember.randn(4, 3, 4, 4))
    path = tmp_path / "e.safetensors"
    store.save_file(enet.state_dict(), path)
    tnet = TorchNet()
    tnet.load_state_dict(safetensors.torch.load_file(str(path)))
    _compare(enet, tnet.eval())
    torch.save(tnet.state_dict(), tmp_path / "t.pt")
    back = EmberNet()
    assert store.load_into(back, tmp_path / "t.pt").ok
    _compare(back, tnet)
