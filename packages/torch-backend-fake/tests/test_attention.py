"""F.scaled_dot_product_attention through a backend's fused attention kernels (the SDPA hook).

With device kernels (TORCH_BACKEND_FAKE_KERNELS=1) fake registers an attention
kernel pair; core then answers PyTorch's SDPA choice with "overrideable" for the
calls the kernel covers, so forward and backward run as
_scaled_dot_product_fused_attention_overrideable(_backward); for calls the kernel
does not cover (dropout, grouped-query heads, float64) PyTorch's math path runs on
fake's matmul and softmax kernels. Without kernels every op would run on the CPU
through core's fallback, so core answers SDPA's choice as the CPU does: the CPU's
fused kernel (_scaled_dot_product_flash_attention_for_cpu) runs as one fallback
call and returns the CPU's results exactly. Values and gradients are compared
with the CPU either way. CI's first pass (zero-copy, no kernels) also reruns this file with kernels
on, so the hook is tested in both memory modes.
"""

from __future__ import annotations

import os
import warnings

import pytest
import torch
from kernels_rerun import rerun_with_kernels
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa
from torch.utils._python_dispatch import TorchDispatchMode

KERNELS = os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1"
FUSED = "_scaled_dot_product_fused_attention_overrideable"
CPU_FUSED = "_scaled_dot_product_flash_attention_for_cpu"


class OpsSeen(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def inputs(dtype: torch.dtype = torch.float32, kv_heads: int = 3, value_width: int = 4) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(2, 3, 5, 8, generator=generator, dtype=dtype)
    key = torch.randn(2, kv_heads, 7, 8, generator=generator, dtype=dtype)
    value = torch.randn(2, kv_heads, 7, value_width, generator=generator, dtype=dtype)
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
    causal = kwargs.get("is_causal", False)
    cpu_choice = torch._fused_sdp_choice(*cpu, kwargs.get("attn_mask"), is_causal=causal)
    expected_path = SDPBackend.OVERRIDEABLE.value if KERNELS else cpu_choice
    assert torch._fused_sdp_choice(*device, device_kwargs.get("attn_mask"), is_causal=causal) == expected_path
    with OpsSeen() as seen:
        out = sdpa(*device, **device_kwargs)
        out.float().sin().sum().backward()
    assert (FUSED in seen.names) == KERNELS, sorted(seen.names)
    assert (f"{FUSED}_backward" in seen.names) == KERNELS
    expected = sdpa(*cpu, **kwargs)
    expected.float().sin().sum().backward()
    if not KERNELS:  # the CPU's own choice of kernels, through the fallback: the CPU's results exactly
        tolerance = {"atol": 0, "rtol": 0}
    elif dtype == torch.bfloat16:
        tolerance = {"atol": 2e-2, "rtol": 2e-2}
    else:
        tolerance = {"atol": 1e-5, "rtol": 1e-4}
    torch.testing.assert_close(out.cpu(), expected, **tolerance)
    for name, on_device, on_cpu in zip(("query", "key", "value"), device, cpu, strict=True):
        torch.testing.assert_close(on_device.grad.cpu(), on_cpu.grad, **tolerance, msg=name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_one_fused_kernel_serves_each_direction(dtype: torch.dtype) -> None:
    # Query, key and value of one width, which the CPU's fused kernel takes (float64 too).
    cpu = [t.requires_grad_() for t in inputs(dtype, value_width=8)]
    device = [t.detach().to("fake").requires_grad_() for t in cpu]
    assert torch._fused_sdp_choice(*cpu) == SDPBackend.FLASH_ATTENTION.value
    with OpsSeen() as seen:
        out = sdpa(*device, is_causal=True)
        out.float().sin().sum().backward()
    expected = sdpa(*cpu, is_causal=True)
    expected.float().sin().sum().backward()
    if not KERNELS:  # the CPU's kernel through the fallback: the CPU's results exactly
        fused, tolerance = CPU_FUSED, {"atol": 0, "rtol": 0}
    elif dtype == torch.float64:  # fake's kernel takes float32, float16 and bfloat16
        fused, tolerance = None, {}
    else:
        fused, tolerance = FUSED, {"atol": 2e-2, "rtol": 2e-2} if dtype == torch.bfloat16 else {}
    if fused is None:  # the math path on fake's matmul and softmax kernels
        assert {"bmm", "_safe_softmax"} <= seen.names, sorted(seen.names)
    else:  # no matmul or softmax: one kernel forward, one backward
        assert {fused, f"{fused}_backward"} <= seen.names, sorted(seen.names)
        assert not {"bmm", "mm", "_softmax", "_safe_softmax"} & seen.names, sorted(seen.names)
    torch.testing.assert_close(out.cpu(), expected, **tolerance)
    for name, on_device, on_cpu in zip(("query", "key", "value"), device, cpu, strict=True):
        torch.testing.assert_close(on_device.grad.cpu(), on_cpu.grad, **tolerance, msg=name)


def test_sdpa_kernel_restricts_the_choice() -> None:
    # torch.nn.attention.sdpa_kernel restricts the device's choice as it does CUDA's and the CPU's.
    device = [t.to("fake") for t in inputs(value_width=8)]
    cpu = inputs(value_width=8)
    with sdpa_kernel([SDPBackend.MATH]):
        assert torch._fused_sdp_choice(*device) == SDPBackend.MATH.value
        with OpsSeen() as seen:
            out = sdpa(*device)
    assert FUSED not in seen.names and CPU_FUSED not in seen.names, sorted(seen.names)
    torch.testing.assert_close(out.cpu(), sdpa(*cpu))
    fused = SDPBackend.OVERRIDEABLE if KERNELS else SDPBackend.FLASH_ATTENTION
    with sdpa_kernel([fused]):
        assert torch._fused_sdp_choice(*device) == fused.value
        # A call no enabled implementation takes is an error, as on CUDA, not a silent math path (without
        # kernels the CPU's rules say so, warning first why its fused kernel declined).
        refused = "no enabled implementation takes this call" if KERNELS else "No available kernel"
        with pytest.raises(RuntimeError, match=refused), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            sdpa(*device, dropout_p=0.5)


def test_non_contiguous_inputs() -> None:
    query, key, value = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in inputs())
    assert not query.is_contiguous()
    out = sdpa(query.to("fake"), key.to("fake"), value.to("fake"))
    torch.testing.assert_close(out.cpu(), sdpa(query, key, value), atol=1e-5, rtol=1e-4)


def test_calls_the_kernel_does_not_cover_take_the_math_path() -> None:
    query, key, value = (t.to("fake") for t in inputs())
    math = SDPBackend.MATH.value
    assert torch._fused_sdp_choice(query, key, value, dropout_p=0.5) == math
    gqa = [t.to("fake") for t in inputs(kv_heads=1)]
    assert torch._fused_sdp_choice(*gqa, enable_gqa=True) == math
    assert torch._fused_sdp_choice(query.double(), key.double(), value.double()) == math
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
