"""Capturing a training step into a device graph and replaying it, as `torch.cuda.graphs` does.

    TORCH_BACKEND_FAKE_KERNELS=1 python examples/graphs_step.py     # on fake: its kernels capture

The step (forward, backward, SGD) is captured once on a side stream into a graph whose memory is
its own pool; each replay runs it again on new data copied into the captured input. The replayed
parameters must equal those of an eager copy trained on the same data; exits non-zero otherwise.
Needs a backend whose runtime captures and whose kernels run every op of the step (the CPU
fallback cannot be captured: such an op is refused by name).
"""

from __future__ import annotations

import copy

import torch
from torch import nn


def main() -> None:
    device = torch.accelerator.current_accelerator()
    assert device is not None, "no accelerator: set TORCH_BACKEND=<name> of an installed backend"
    module = getattr(torch, device.type)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    eager = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    eager_optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
    static_x, static_y = torch.randn(8, 16, device=device), torch.randn(8, 4, device=device)

    def step(net: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> None:
        opt.zero_grad(set_to_none=False)
        nn.functional.mse_loss(net(x), y).backward()
        opt.step()

    # Warm up on a side stream (lazy state, allocator), as CUDA asks, then capture.
    side = module.Stream()
    side.wait_stream(module.current_stream())
    with module.stream(side):
        for _ in range(2):
            step(model, optimizer, static_x, static_y)
            step(eager, eager_optimizer, static_x, static_y)
    module.current_stream().wait_stream(side)
    graph = module.CUDAGraph() if hasattr(module, "CUDAGraph") else module.Graph()
    with module.graph(graph):
        step(model, optimizer, static_x, static_y)

    generator = torch.Generator().manual_seed(1)
    for _ in range(5):
        x, y = torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator)
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        step(eager, eager_optimizer, x.to(device), y.to(device))
    for replayed, reference in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(replayed, reference, rtol=1e-5, atol=1e-6)
    print(f"graph on {device}: 5 replays equal to 5 eager steps: ok")


if __name__ == "__main__":
    main()
