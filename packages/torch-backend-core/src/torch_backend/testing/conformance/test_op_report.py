"""Where ops ran (``torch_backend.op_report()``): device kernels, the CPU fallback, bytes it copied.

Checked against core's kernel table: an op counted on device kernels is one the table runs on the
backend's kernels; an op without a kernel (convolution: no backend has one) is counted on the
fallback, copying (with the bytes it moved) where the host cannot address device memory.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torch_backend import _C, op_report
from torch_backend.testing.conformance._support import DEVICE, dev

ON_DEVICE = {op for op, _family, _kernel, on_device, _forced in _C._op_table() if on_device}


def transformer_step() -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).to(DEVICE)
    layer(torch.randn(2, 5, 16, device=DEVICE)).square().mean().backward()
    dev.synchronize()


def test_a_transformer_step_is_counted_against_the_kernel_table() -> None:
    with op_report() as report:
        transformer_step()
    assert report.rows, "nothing was counted"
    for row in report.rows:
        assert row.device_calls == 0 or row.op in ON_DEVICE, row
        assert row.device_calls + row.fallback_calls > 0, row
    # Linear layers: on the gemm kernel where the backend has it, else every call on the fallback.
    addmm = report["addmm"]
    if "addmm" in ON_DEVICE:
        assert addmm.device_calls > 0 and addmm.fallback_calls == 0, addmm
    else:
        assert addmm.device_calls == 0 and addmm.fallback_calls > 0, addmm
    assert "OpCount" not in report.table() and "addmm" in report.table()
    assert '"op": "addmm"' in report.to_json()


def test_convolutions_run_on_the_fallback_with_the_bytes_copied() -> None:
    if "convolution" in ON_DEVICE:
        pytest.skip("the backend has a convolution kernel")
    x = torch.randn(2, 3, 8, 8, device=DEVICE)
    weight = torch.randn(4, 3, 3, 3, device=DEVICE)
    with op_report() as report:
        torch.nn.functional.conv2d(x, weight)
    conv = report["convolution"]
    assert conv.fallback_calls == 1 and conv.device_calls == 0
    if _C._host_addressable():
        assert conv.zero_copy_calls == 1 and conv.bytes_copied == 0
    else:  # input, weight and the (2, 4, 6, 6) result
        assert conv.copying_calls == 1
        assert conv.bytes_copied == x.nbytes + weight.nbytes + 2 * 4 * 6 * 6 * 4
    assert conv.host_seconds > 0


def test_nothing_is_counted_outside_a_report_and_reports_do_not_nest() -> None:
    transformer_step()
    with op_report() as report:
        pass
    assert report.rows == []
    with op_report():
        with pytest.raises(RuntimeError, match="already open"):
            with op_report():
                pass
