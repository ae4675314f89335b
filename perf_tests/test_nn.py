"""Neural-network layers and models with torch, on every torch device (CPU, CUDA, ROCm, Metal):
convolutions and pooling, a GELU written from primitives against the library's, a ResNet-style
block stack, a transformer encoder (RoBERTa-base layout) for inference and one training step,
autodiff overhead, and eager against ``torch.compile`` variants.

Shapes come from the size preset (``--perf-size``). Compiled variants compile during warm-up
(never timed); they skip when torch.compile cannot run here (it needs a C++ compiler on the CPU).
"""

from __future__ import annotations

import functools
import math
import shutil

import numpy as np
import pytest
from _suite import check, host64, pick

from pytest_burnperf import Work, elementwise_work

BACKENDS = ["torch"]
DTYPES = ["f32"]
MODES = ["eager", "compiled"]


@functools.cache
def _compile_problem() -> str | None:
    """Why torch.compile cannot run here, or None."""
    import torch

    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    if shutil.which("c++") is None and shutil.which("g++") is None:
        return "torch.compile on the CPU needs a C++ compiler (install g++)"
    return None


def _maybe_compile(fn, mode, device):
    if mode == "eager":
        return fn
    problem = _compile_problem() if device.kind == "cpu" else None
    if problem:
        pytest.skip(problem)
    import torch

    return torch.compile(fn, dynamic=False)


# ---------------------------------------------------------------------------------------------
# layers

#: name -> (in channels, out channels, kernel, stride, padding) of a ResNet/VGG-style layer.
CONV_LAYERS = {
    "resnet-3x3": (64, 64, 3, 1, 1),
    "resnet-down": (64, 128, 3, 2, 1),
    "vgg-3x3": (128, 128, 3, 1, 1),
}


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("layer", list(CONV_LAYERS))
def test_conv2d(perf, device, dtype, perf_size, layer):
    """torch.nn.functional.conv2d on ResNet/VGG-style layers (batch and image size by preset)."""
    import torch
    import torch.nn.functional as F

    cin, cout, k, stride, pad = CONV_LAYERS[layer]
    if perf_size == "tiny":
        cin, cout = cin // 16, cout // 16
    batch, hw = pick(perf_size, tiny=(1, 8), small=(1, 28), medium=(8, 56), full=(32, 56))
    x = device.random((batch, cin, hw, hw), dtype)
    w = device.random((cout, cin, k, k), dtype) * (1.0 / math.sqrt(cin * k * k))
    out_hw = (hw + 2 * pad - k) // stride + 1
    flops = 2.0 * batch * cout * out_hw * out_hw * cin * k * k
    item = x.element_size()
    moved = (x.numel() + w.numel() + batch * cout * out_hw * out_hw) * item
    shape = f"{batch}x{cin}x{hw}x{hw} * {cout}x{cin}x{k}x{k}/{stride}"
    perf.work(Work(flops=flops, bytes=float(moved), shape=shape))
    with torch.no_grad():
        out = perf(F.conv2d, x, w, stride=stride, padding=pad)
    ref = F.conv2d(x.double().cpu(), w.double().cpu(), stride=stride, padding=pad).numpy()
    check(device, dtype, out, ref, scale=10)


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("pool", ["k5-s2-p2", "k3-s1-p1"])
def test_max_pool2d(perf, device, dtype, perf_size, pool):
    """max_pool2d with a 5x5 window, stride 2, padding 2 (burn-bench's), and at unit stride."""
    import torch.nn.functional as F

    k, s, p = (int(part[1:]) for part in pool.split("-"))
    batch, ch, hw = pick(perf_size, tiny=(1, 2, 8), small=(1, 32, 64), full=(32, 64, 112))
    x = device.random((batch, ch, hw, hw), dtype)
    out_hw = (hw + 2 * p - k) // s + 1
    moved = (x.numel() + batch * ch * out_hw * out_hw) * x.element_size()
    perf.work(Work(bytes=float(moved), shape=f"{batch}x{ch}x{hw}x{hw}"))
    out = perf(F.max_pool2d, x, k, s, p)
    ref = F.max_pool2d(x.double().cpu(), k, s, p).numpy()
    check(device, dtype, out, ref)


def gelu_from_primitives(x):
    """GELU as users write it by hand: x * Phi(x), with erf."""
    import torch

    return x * 0.5 * (1.0 + torch.erf(x * 0.7071067811865476))


def _gelu(kind):
    import torch.nn.functional as F

    return gelu_from_primitives if kind == "custom" else F.gelu


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pass_", ["forward", "backward"])
@pytest.mark.parametrize("kind", ["custom", "library"])
def test_gelu(perf, device, dtype, perf_size, kind, pass_, mode):
    """GELU from primitives (5 kernels in eager mode) against torch's fused one, forward and
    forward+backward, eager and compiled: what operator fusion buys."""
    import torch

    n = pick(perf_size, tiny=64, small=1 << 18, medium=1 << 22, full=1 << 24)
    x = device.random((n,), dtype)
    fn = _maybe_compile(_gelu(kind), mode, device)
    if pass_ == "forward":
        perf.work(elementwise_work(n, dtype, flops_per_element=5))
        with torch.no_grad():
            out = perf(fn, x)
        ref = torch.nn.functional.gelu(x.double().cpu()).numpy()
        check(device, dtype, out, ref, scale=10)
        return
    xg = x.detach().requires_grad_(True)
    grad = torch.ones_like(xg)

    def forward_backward():
        xg.grad = None
        y = fn(xg)
        y.backward(grad)
        return xg.grad

    perf.work(elementwise_work(n, dtype, inputs=2, outputs=1, flops_per_element=15))
    got = perf(forward_backward)
    xd = x.double().cpu().requires_grad_(True)
    torch.nn.functional.gelu(xd).backward(torch.ones_like(xd))
    check(device, dtype, got, xd.grad.numpy(), scale=10)


# ---------------------------------------------------------------------------------------------
# models


def _resnet_stack(torch, channels, blocks):
    nn = torch.nn

    class Basic(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.b1 = nn.BatchNorm2d(channels)
            self.c2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.b2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(x + self.b2(self.c2(y)))

    return nn.Sequential(*[Basic() for _ in range(blocks)])


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_resnet_blocks(perf, device, dtype, perf_size, mode):
    """Inference through a stack of ResNet basic blocks (conv-bn-relu-conv-bn + residual)."""
    import torch

    channels, blocks, batch, hw = pick(
        perf_size,
        tiny=(4, 1, 1, 8),
        small=(32, 2, 1, 28),
        medium=(64, 4, 8, 56),
        full=(64, 8, 32, 56),
    )
    torch.manual_seed(0)
    model = _resnet_stack(torch, channels, blocks).to(device.zeros((1,), dtype).device).eval()
    x = device.random((batch, channels, hw, hw), dtype)
    run = _maybe_compile(model, mode, device)
    conv = 2.0 * batch * channels * hw * hw * channels * 9
    perf.work(Work(flops=2 * blocks * conv, shape=f"{blocks} blocks, {batch}x{channels}x{hw}x{hw}"))
    with torch.no_grad():
        out = perf(run, x)
        ref = model.double().cpu()(x.double().cpu()).numpy()
    check(device, dtype, out, ref, scale=100)


def _encoder(torch, perf_size):
    """A RoBERTa-base-like encoder layout (hidden 768, 12 heads, MLP 3072), depth and sequence
    length scaled by the size preset."""
    hidden, heads, mlp, depth, batch, seq = pick(
        perf_size,
        tiny=(32, 4, 64, 1, 1, 8),
        small=(768, 12, 3072, 1, 1, 32),
        medium=(768, 12, 3072, 4, 4, 128),
        full=(768, 12, 3072, 12, 8, 512),
    )
    layer = torch.nn.TransformerEncoderLayer(
        hidden, heads, mlp, dropout=0.0, batch_first=True, activation="gelu"
    )
    model = torch.nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
    per_token = depth * (2 * 4 * hidden * hidden + 2 * 2 * hidden * mlp)
    flops = batch * seq * per_token + depth * batch * 2 * 2 * seq * seq * hidden
    return model, (batch, seq, hidden), float(flops)


def _encoder_shape(model, shape):
    batch, seq, hidden = shape
    return f"{len(model.layers)} layers, {batch}x{seq}x{hidden}"


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_transformer_inference(perf, device, dtype, perf_size, mode):
    """Forward pass of the transformer encoder, no autograd."""
    import torch

    torch.manual_seed(0)
    model, shape, flops = _encoder(torch, perf_size)
    model = model.to(device.zeros((1,), dtype).device).eval()
    x = device.random(shape, dtype)
    run = _maybe_compile(model, mode, device)
    perf.work(Work(flops=flops, shape=_encoder_shape(model, shape)))
    with torch.no_grad():
        out = perf(run, x)
        ref = model.double().cpu()(x.double().cpu()).numpy()
    check(device, dtype, out, ref, scale=100)


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_transformer_training_step(perf, device, dtype, perf_size, mode):
    """One training step of the encoder: forward, mean-squared loss, backward, AdamW step
    (about 3x the forward's floating-point work); compiled: the model's forward and backward
    through torch.compile, the optimizer step eager."""
    import torch

    torch.manual_seed(0)
    model, shape, flops = _encoder(torch, perf_size)
    model = model.to(device.zeros((1,), dtype).device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = device.random(shape, dtype)
    target = device.random(shape, dtype)
    run = _maybe_compile(model, mode, device)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(run(x), target)
        loss.backward()
        opt.step()
        return loss

    perf.work(Work(flops=3 * flops, shape=_encoder_shape(model, shape)))
    first = float(perf(step).detach())
    assert math.isfinite(first)
    # the optimizer moves the weights, so the loss keeps changing from step to step
    assert float(step().detach()) != first


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
def test_autodiff_overhead(perf, device, dtype, perf_size):
    """Forward and backward through many tiny ops (16 elements each): the cost of the autograd
    graph and the dispatcher, not of arithmetic."""
    import torch

    ops = pick(perf_size, tiny=4, small=100, full=100)
    x = device.random((16,), dtype).requires_grad_(True)

    def chain():
        x.grad = None
        y = x
        for i in range(ops):
            y = y * 1.01 + 0.01 if i % 2 == 0 else torch.tanh(y)
        y.sum().backward()
        return x.grad

    # each of the ops is about 2 flops per element forward and 4 backward; what the benchmark
    # measures is the per-op overhead, which the low GFLOP/s makes visible
    perf.work(Work(flops=6.0 * ops * 16, shape=f"{ops} ops x 16"))
    grad = perf(chain)
    xd = x.detach().double().cpu().requires_grad_(True)
    y = xd
    for i in range(ops):
        y = y * 1.01 + 0.01 if i % 2 == 0 else torch.tanh(y)
    y.sum().backward()
    check(device, dtype, grad, xd.grad.numpy())
    assert np.isfinite(host64(device, grad)).all()
