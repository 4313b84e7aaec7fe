"""The processes test_compile_triton.py starts (Triton reads TRITON_INTERPRET once, at import).

``python triton_worker.py train`` (under ``TRITON_INTERPRET=1``): MLP, CNN and
Transformer training steps compiled by ``torch.compile`` with default options
on fake, against the same steps eagerly on the CPU; prints one JSON line.

``python triton_worker.py cubins ARCH...`` (no interpreter): every Triton
kernel Inductor generated into ``TORCHINDUCTOR_CACHE_DIR`` compiled for each
NVIDIA architecture through fake's Triton backend, without a GPU; prints one
JSON line.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

DEVICE = "fake"
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 10))


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(8 * 8 * 8, 10),
    )  # fmt: skip


def transformer() -> nn.Module:
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Linear(32, 10))


# Triton's interpreter runs a kernel's programs one after another, and a persistent reduction has one
# program per row: the Transformer's batch of one keeps its softmax a reduction over 12 (Inductor turns
# one over 8 or fewer into pointwise code) on 48 rows. A batch of four took 40 s more per memory mode,
# most of it in that one kernel.
WORKLOADS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "mlp": (mlp, (16, 32)),
    "cnn": (cnn, (4, 3, 16, 16)),
    "transformer": (transformer, (1, 12, 32)),
}


def train(model: nn.Module, forward: Callable[..., torch.Tensor], inputs: torch.Tensor, compile_step: bool) -> list:
    """Three SGD-with-momentum steps; with ``compile_step`` the optimizer step is compiled too."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = torch.compile(optimizer.step) if compile_step else optimizer.step
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = forward(inputs).square().mean()
        loss.backward()
        step()
        losses.append(loss.item())
    return losses


def train_all() -> dict[str, Any]:
    from torch._inductor.utils import run_and_get_code

    results: dict[str, Any] = {}
    for name, (build, shape) in WORKLOADS.items():
        torch.manual_seed(0)
        reference = build()
        model = build()
        model.load_state_dict(reference.state_dict())
        model.to(DEVICE)
        inputs = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
        expected = train(reference, reference, inputs, compile_step=False)
        compiled = torch.compile(model)
        got, code = run_and_get_code(train, model, compiled, inputs.to(DEVICE), True)
        torch.testing.assert_close(got, expected, **TOLERANCE, msg=f"{name}: losses")
        for parameter_name, parameter in model.named_parameters():
            torch.testing.assert_close(
                parameter.detach().cpu(), reference.get_parameter(parameter_name).detach(), **TOLERANCE,
                msg=f"{name}: {parameter_name}",
            )  # fmt: skip
        results[name] = {"losses": got, "code": "\n".join(code)}
    return results


def compile_cubins(archs: list[int]) -> dict[str, Any]:
    """Compile every generated Triton kernel in Inductor's cache for each of ``archs``."""
    import torch._inductor.compile_fx  # noqa: F401  (registers fake's Triton backend)
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    sources = [
        path
        for path in Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]).rglob("*.py")
        # Kernel modules (a decorated @triton.jit function), not the wrappers that name them.
        if "@triton_heuristics." in (text := path.read_text()) and "async_compile.triton(" not in text
    ]
    compiled: dict[str, list[dict[str, Any]]] = {str(arch): [] for arch in archs}
    for path in sources:
        for arch in archs:
            # A fresh copy of the module per architecture: an autotuner compiles once.
            namespace: dict[str, Any] = {"__name__": f"kernel_{path.stem}_{arch}", "__file__": str(path)}
            exec(compile(path.read_text(), str(path), "exec"), namespace)
            for kernel in (value for value in namespace.values() if isinstance(value, CachingAutotuner)):
                kernel.device_props = kernel.device_props._replace(cc=arch)
                # Every kernel, in the configuration the interpreter ran (the first): the
                # autotuner's other configurations differ only in block sizes.
                kernel.configs = kernel.configs[:1]
                kernel.precompile(warm_cache_only=True)
                for result in kernel.compile_results:
                    binary = result.kernel
                    compiled[str(arch)].append(
                        {
                            "kernel": kernel.fn.__name__,
                            "target": [binary.metadata.target.backend, binary.metadata.target.arch],
                            "elf": binary.asm["cubin"][:4] == b"\x7fELF",
                            "ptx_target": f".target sm_{arch}" in binary.asm["ptx"],
                        }
                    )
    return {"sources": len(sources), "compiled": compiled}


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "train":
        output = train_all()
    else:
        output = compile_cubins([int(arch) for arch in sys.argv[2:]])
    print(json.dumps(output))
