"""F.scaled_dot_product_attention through a backend's fused attention kernels (the SDPA hook).

With device kernels (TORCH_BACKEND_FAKE_KERNELS=1) fake registers an attention
kernel pair; core then answers PyTorch's SDPA choice with "overrideable" for the
calls the kernel covers, so forward and backward run as
_scaled_dot_product_fused_attention_overrideable(_backward). Without kernels, and
for calls the kernel does not cover (dropout, grouped-query heads, float64),
PyTorch's math path runs. Values and gradients are compared with the CPU either
way. CI's first pass (zero-copy, no kernels) also reruns this file with kernels
on, so the hook is tested in both memory modes.
"""

from __future__ import annotations

import os

import pytest
import torch
from kernels_rerun import rerun_with_kernels
from torch.nn.attention import SDPBackend
from torch.nn.functional import scaled_dot_product_attention as sdpa
from torch.utils._python_dispatch import TorchDispatchMode

KERNELS = os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1"
FUSED = "_scaled_dot_product_fused_attention_overrideable"


class OpsSeen(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def inputs(dtype: torch.dtype = torch.float32, kv_heads: int = 3) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(2, 3, 5, 8, generator=generator, dtype=dtype)
    key = torch.randn(2, kv_heads, 7, 8, generator=generator, dtype=dtype)
    value = torch.randn(2, kv_heads, 7, 4, generator=generator, dtype=dtype)
    return query, key, value


CASES = {
    "plain": {},
    "causal": {"is_causal": True},
    "float mask, broadcast": {"attn_mask": torch.randn(5, 7)},
    "bool mask": {"attn_mask": torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(1)) > 0.3},
    "scale": {"scale": 0.3},
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_attention_matches_cpu_forward_and_backward(case: str, dtype: torch.dtype) -> None:
    kwargs = CASES[case]
    if "attn_mask" in kwargs and kwargs["attn_mask"].is_floating_point():
        kwargs = {"attn_mask": kwargs["attn_mask"].to(dtype)}
    cpu = [t.requires_grad_() for t in inputs(dtype)]
    device = [t.detach().to("fake").requires_grad_() for t in cpu]
    device_kwargs = {k: v.to("fake") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    expected_path = SDPBackend.OVERRIDEABLE if KERNELS else SDPBackend.MATH
    mask = device_kwargs.get("attn_mask")
    choice = torch._fused_sdp_choice(*device, mask, is_causal=kwargs.get("is_causal", False))
    assert choice == expected_path.value
    with OpsSeen() as seen:
        out = sdpa(*device, **device_kwargs)
        out.float().sin().sum().backward()
    assert (FUSED in seen.names) == KERNELS, sorted(seen.names)
    assert (f"{FUSED}_backward" in seen.names) == KERNELS
    expected = sdpa(*cpu, **kwargs)
    expected.float().sin().sum().backward()
    tolerance = {"atol": 2e-2, "rtol": 2e-2} if dtype == torch.bfloat16 else {"atol": 1e-5, "rtol": 1e-4}
    torch.testing.assert_close(out.cpu(), expected, **tolerance)
    for name, on_device, on_cpu in zip(("query", "key", "value"), device, cpu, strict=True):
        torch.testing.assert_close(on_device.grad.cpu(), on_cpu.grad, **tolerance, msg=name)


def test_non_contiguous_inputs() -> None:
    query, key, value = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in inputs())
    assert not query.is_contiguous()
    out = sdpa(query.to("fake"), key.to("fake"), value.to("fake"))
    torch.testing.assert_close(out.cpu(), sdpa(query, key, value), atol=1e-5, rtol=1e-4)


def test_calls_the_kernel_does_not_cover_take_the_math_path() -> None:
    query, key, value = (t.to("fake") for t in inputs())
    math = SDPBackend.MATH.value
    assert torch._fused_sdp_choice(query, key, value, dropout_p=0.5) == math
    assert torch._fused_sdp_choice(query.double(), key.double(), value.double()) == math
    gqa = [t.to("fake") for t in inputs(kv_heads=1)]
    assert torch._fused_sdp_choice(*gqa, enable_gqa=True) == math
    # And they compute the right thing there.
    cpu_gqa = inputs(kv_heads=1)
    out = sdpa(*gqa, enable_gqa=True)
    torch.testing.assert_close(out.cpu(), sdpa(*cpu_gqa, enable_gqa=True))
    dropped = sdpa(query, key, value, dropout_p=0.5)
    assert dropped.shape == (2, 3, 5, 4) and torch.isfinite(dropped).all()
    assert not torch.allclose(dropped, sdpa(query, key, value))


def test_transformer_layer_trains_like_cpu() -> None:
    torch.manual_seed(0)
    cpu_layer = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
    device_layer = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
    device_layer.load_state_dict(cpu_layer.state_dict())
    device_layer.to("fake")
    generator = torch.Generator().manual_seed(2)
    batches = [torch.randn(3, 6, 16, generator=generator) for _ in range(5)]
    losses: dict[str, list[float]] = {}
    for name, layer, device in (("fake", device_layer, "fake"), ("cpu", cpu_layer, "cpu")):
        optimizer = torch.optim.SGD(layer.parameters(), lr=0.05)
        losses[name] = []
        for batch in batches:
            loss = (
                layer(
                    batch.to(device),
                    is_causal=True,
                    src_mask=torch.nn.Transformer.generate_square_subsequent_mask(6, device=device),
                )
                .square()
                .mean()
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses[name].append(loss.item())
    torch.testing.assert_close(torch.tensor(losses["fake"]), torch.tensor(losses["cpu"]), atol=1e-4, rtol=1e-4)


if not KERNELS:  # with kernels on, the tests above already took the hook

    def test_the_hook_with_kernels_in_this_memory_mode() -> None:
        rerun_with_kernels(__file__)
