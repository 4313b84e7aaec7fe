"""PyTorch's profiler on the active torch-backend device: a training step's ops, with device time.

    python examples/profile_step.py [TRACE.json]

Profiles one training step with CPU and device activities, prints the ops by total time, and
writes a Chrome trace (open it in chrome://tracing or Perfetto). Checks that the step's matrix
multiply was recorded and that the trace was written; exits non-zero otherwise.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    device = torch.accelerator.current_accelerator()
    assert device is not None, "no accelerator: set TORCH_BACKEND=<name> of an installed backend"
    trace = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "trace.json"
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64, device=device), torch.randint(0, 10, (32,), device=device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        torch.accelerator.synchronize()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=12))
    names = {event.key for event in prof.key_averages()}
    assert "aten::addmm" in names or "aten::mm" in names, sorted(names)
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(event.get("name") == "aten::addmm" for event in events), "the trace lacks the step's ops"
    print(f"profiled on {device}: {len(events)} trace events in {trace}: ok")


if __name__ == "__main__":
    main()
