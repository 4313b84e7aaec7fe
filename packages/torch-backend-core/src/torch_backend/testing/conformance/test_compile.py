"""torch.compile on the device: compiled graphs give eager's results.

Inductor generates the device's own kernels (Backend.inductor), Triton kernels
(Backend.triton, where triton can run them), or C++ kernels where the host may
address the device's memory; elsewhere its graphs run every op on the backend's
eager kernels, which `fallback_by_default` asks for, and which the compile
backend named after the device (`backend="<device>"`) chooses itself.
"""

from __future__ import annotations

import pytest
import torch

from torch_backend import active_backend
from torch_backend._compile.inductor import codegen_kind
from torch_backend.testing.conformance._support import DEVICE


def inductor_options() -> dict[str, bool]:
    backend = active_backend()
    assert backend is not None
    return {} if codegen_kind(backend) != "none" else {"fallback_by_default": True}


def test_compiled_model_matches_eager() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to(DEVICE)
    x = torch.randn(5, 8, device=DEVICE)
    compiled = torch.compile(model, options=inductor_options())
    torch.testing.assert_close(compiled(x).cpu(), model(x).cpu(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("compiled_by", ["inductor", "device-named backend"])
def test_compiled_training_step_matches_eager(compiled_by: str) -> None:
    # The device-named backend picks the device's best code generator, or its eager kernels where it
    # has none: no options.
    settings = {"options": inductor_options()} if compiled_by == "inductor" else {"backend": DEVICE}
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(DEVICE)
    x, y = torch.randn(12, 8, device=DEVICE), torch.randn(12, 1, device=DEVICE)

    def loss_of(m: torch.nn.Module) -> torch.Tensor:
        return torch.nn.functional.mse_loss(m(x), y)

    loss_of(model).backward()
    eager = [p.grad.cpu() for p in model.parameters()]
    model.zero_grad()
    loss = torch.compile(loss_of, **settings)(model)
    torch.testing.assert_close(loss.cpu(), loss_of(model).cpu(), rtol=1e-5, atol=1e-6)
    loss.backward()
    for compiled_grad, eager_grad in zip((p.grad.cpu() for p in model.parameters()), eager, strict=True):
        torch.testing.assert_close(compiled_grad, eager_grad, rtol=1e-5, atol=1e-6)


def test_the_device_names_a_compile_backend() -> None:
    import torch._dynamo

    assert DEVICE in torch._dynamo.list_backends()
