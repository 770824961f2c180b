"""ember.models vision models against plain-torch reference definitions written here (torchvision is
not needed): random weights (and random batch-norm statistics) are saved with ``torch.save``,
loaded into ember through ``ember.store`` (one case in a process where torch cannot be imported),
and the eval-mode logits compared on small images.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import OrderedDict

import numpy as np
import pytest
import torch
from torch import nn

import ember
import ember.models as models

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- plain-torch references ---------------------------------------------------------------------------
class TBasic(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride=1, down=None, groups=1, width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = down

    def forward(self, x):
        idn = x if self.downsample is None else self.downsample(x)
        return torch.relu(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))) + idn)


class TBottle(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride=1, down=None, groups=1, width=64):
        super().__init__()
        w = int(planes * width / 64) * groups
        self.conv1 = nn.Conv2d(cin, w, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.conv2 = nn.Conv2d(w, w, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(w)
        self.conv3 = nn.Conv2d(w, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU()
        self.downsample = down

    def forward(self, x):
        idn = x if self.downsample is None else self.downsample(x)
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return torch.relu(self.bn3(self.conv3(y)) + idn)


class TResNet(nn.Module):
    def __init__(self, block, counts, classes=1000, groups=1, width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, (planes, n) in enumerate(zip((64, 128, 256, 512), counts)):
            stride = 1 if i == 0 else 2
            blocks = []
            for j in range(n):
                down = None
                if j == 0 and (stride != 1 or cin != planes * block.expansion):
                    down = nn.Sequential(nn.Conv2d(cin, planes * block.expansion, 1, stride, bias=False),
                                         nn.BatchNorm2d(planes * block.expansion))
                blocks.append(block(cin, planes, stride if j == 0 else 1, down, groups, width))
                cin = planes * block.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512 * block.expansion, classes)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def t_cna(cin, cout, k=3, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6())


class TInvRes(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hid = cin * t
        layers = [t_cna(cin, hid, 1)] if t != 1 else []
        layers += [t_cna(hid, hid, 3, stride, hid), nn.Conv2d(hid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


class TMobileNetV2(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
               (6, 320, 1, 1)]
        feats, cin = [t_cna(3, 32, stride=2)], 32
        for t, c, n, s in cfg:
            for i in range(n):
                feats.append(TInvRes(cin, c, s if i == 0 else 1, t))
                cin = c
        feats.append(t_cna(cin, 1280, 1))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


class TBlock(nn.Module):
    def __init__(self, heads, dim, mlp):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp, dim),
                                 nn.Dropout(0.0))

    def forward(self, x):
        y = self.ln_1(x)
        x = x + self.self_attention(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class TViT(nn.Module):
    def __init__(self, image, patch, layers, heads, dim, mlp, classes, rep=None):
        super().__init__()
        self.patch, self.dim = patch, dim
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        self.class_token = nn.Parameter(torch.randn(1, 1, dim))
        self.encoder = nn.Module()
        self.encoder.pos_embedding = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim))
        self.encoder.layers = nn.Sequential(OrderedDict((f"encoder_layer_{i}", TBlock(heads, dim, mlp))
                                                        for i in range(layers)))
        self.encoder.ln = nn.LayerNorm(dim, eps=1e-6)
        head = OrderedDict()
        if rep:
            head["pre_logits"], head["act"], head["head"] = nn.Linear(dim, rep), nn.Tanh(), nn.Linear(rep, classes)
        else:
            head["head"] = nn.Linear(dim, classes)
        self.heads = nn.Sequential(head)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], 1) + self.encoder.pos_embedding
        x = self.encoder.ln(self.encoder.layers(x))
        return self.heads(x[:, 0])


# ---- helpers ------------------------------------------------------------------------------------------
def randomised(model: nn.Module, seed: int = 0) -> nn.Module:
    """Random weights everywhere, including batch-norm statistics and the zero-initialised parts."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if name.endswith("running_var"):
                t.copy_(torch.rand(t.shape, generator=g) + 0.5)
            elif t.is_floating_point():
                fan = t[0].numel() if t.dim() > 1 else 1
                t.copy_(torch.randn(t.shape, generator=g) / fan ** 0.5)
    return model.eval()


def check_logits(tmodel: nn.Module, emodel: ember.nn.Module, path: str, size: int, batch: int = 2,
                 tol: float = 1e-4) -> None:
    torch.save(tmodel.state_dict(), path)
    report = ember.store.load_into(emodel, path)
    assert not report.missing and not report.unexpected and not report.mismatched
    emodel.eval()
    x = np.random.default_rng(1).standard_normal((batch, 3, size, size), dtype=np.float32)
    with torch.no_grad():
        want = tmodel(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = emodel(ember.from_numpy(x)).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())))


def same_layout(tmodel: nn.Module, emodel: ember.nn.Module) -> None:
    tsd, esd = tmodel.state_dict(), emodel.state_dict()
    assert list(esd) == list(tsd)
    assert [tuple(v.shape) for v in esd.values()] == [tuple(v.shape) for v in tsd.values()]


# ---- tests --------------------------------------------------------------------------------------------
def test_resnet50_logits_match_torch(tmp_path):
    torch.manual_seed(0)
    check_logits(randomised(TResNet(TBottle, [3, 4, 6, 3], classes=10)), models.resnet50(num_classes=10),
                 str(tmp_path / "r50.pt"), size=32)


def test_resnet18_loads_in_a_process_without_torch(tmp_path):
    """torch.save'd weights -> ember.models.resnet18(weights=...) where ``import torch`` fails."""
    torch.manual_seed(0)
    ref = randomised(TResNet(TBasic, [2, 2, 2, 2], classes=7), seed=3)
    torch.save(ref.state_dict(), tmp_path / "r18.pth")
    x = np.random.default_rng(2).standard_normal((2, 3, 40, 40), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # any import of torch now raises ImportError
        import numpy as np
        import ember, ember.models
        model = ember.models.resnet18(weights={str(tmp_path / "r18.pth")!r}, num_classes=7)
        assert not model.training
        with ember.no_grad():
            out = model(ember.from_numpy(np.load({str(tmp_path / "x.npy")!r})))
        np.save({str(tmp_path / "out.npy")!r}, out.numpy())
        assert "torch" not in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None]
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,block,counts,kw", [
    ("resnet34", TBasic, [3, 4, 6, 3], {}),
    ("resnext50_32x4d", TBottle, [3, 4, 6, 3], {"groups": 32, "width": 4}),
])
def test_resnet_variants_have_torchvision_layout(name, block, counts, kw):
    same_layout(TResNet(block, counts, classes=5, **kw), getattr(models, name)(num_classes=5))


def test_resnext_logits_match_torch(tmp_path):
    """Grouped 3x3 convolutions: a ResNeXt-style net with one bottleneck per stage."""
    torch.manual_seed(0)
    ref = randomised(TResNet(TBottle, [1, 1, 1, 1], classes=4, groups=4, width=8))
    check_logits(ref, models.ResNet(models.resnet.Bottleneck, [1, 1, 1, 1], num_classes=4, groups=4,
                                    width_per_group=8), str(tmp_path / "rx.pt"), size=32)


def test_mobilenet_v2_logits_match_torch(tmp_path):
    torch.manual_seed(0)
    ref = randomised(TMobileNetV2(classes=10))
    emodel = models.mobilenet_v2(num_classes=10)
    same_layout(ref, emodel)
    assert "features.1.conv.0.0.weight" in emodel.state_dict() and "features.18.1.running_var" in emodel.state_dict()
    check_logits(ref, emodel, str(tmp_path / "mnv2.pt"), size=32)


@pytest.mark.parametrize("rep", [None, 12])
def test_vit_logits_match_torch(tmp_path, rep):
    torch.manual_seed(0)
    ref = randomised(TViT(32, 8, 2, 2, 16, 32, 10, rep))
    emodel = models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                                      mlp_dim=32, num_classes=10, representation_size=rep)
    same_layout(ref, emodel)
    check_logits(ref, emodel, str(tmp_path / "vit.pt"), size=32, batch=3)


def test_vit_b_16_names_and_size():
    """vit_b_16's keys and sizes are torchvision's (86,567,656 parameters)."""
    ember.manual_seed(0)
    model = models.vit_b_16()
    sd = model.state_dict()
    assert sd["encoder.pos_embedding"].shape == (1, 197, 768)
    assert sd["encoder.layers.encoder_layer_11.self_attention.in_proj_weight"].shape == (2304, 768)
    assert sd["encoder.layers.encoder_layer_0.mlp.3.weight"].shape == (768, 3072)
    assert sd["conv_proj.weight"].shape == (768, 3, 16, 16) and sd["heads.head.weight"].shape == (1000, 768)
    assert ember.nn.utils.num_params(model) == 86_567_656


@pytest.mark.parametrize("fn,count", [("resnet18", 11_689_512), ("resnet50", 25_557_032),
                                      ("mobilenet_v2", 3_504_872)])
def test_parameter_counts_match_torchvision(fn, count):
    assert ember.nn.utils.num_params(getattr(models, fn)()) == count


def test_vision_errors():
    with pytest.raises(ValueError, match="multiple of patch_size"):
        models.VisionTransformer(image_size=30, patch_size=8, num_layers=1, num_heads=1, hidden_dim=8, mlp_dim=8)
    vit = models.VisionTransformer(image_size=16, patch_size=8, num_layers=1, num_heads=1, hidden_dim=8, mlp_dim=8)
    with pytest.raises(ValueError, match=r"expected images \(N, 3, 16, 16\)"):
        vit(ember.randn(1, 3, 24, 24))
    with pytest.raises(ValueError, match="4 stages"):
        models.ResNet(models.resnet.BasicBlock, [2, 2, 2])
    with pytest.raises(ValueError, match="groups=1"):
        models.ResNet(models.resnet.BasicBlock, [1, 1, 1, 1], groups=2)
    with pytest.raises(FileNotFoundError):
        models.resnet18(weights="/nonexistent/resnet18.pth")
