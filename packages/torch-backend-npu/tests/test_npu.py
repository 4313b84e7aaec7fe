"""npu-specific behaviour, against the ACL emulator (no Ascend hardware here).

The device-generic behaviour is core's conformance kit (`python -m
torch_backend.testing npu`), which `nox -s tests-npu` runs beside this file.
Each test runs a script in a fresh process: the emulator's configuration
(ACL_EMULATOR_*) is read once, at aclInit.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch  # noqa: F401  (activates npu, whose name run_python passes on)

from torch_backend.testing import run_python

pytestmark = pytest.mark.skipif(
    os.environ.get("TORCH_BACKEND") != "npu", reason="runs against npu (nox -s tests-npu sets TORCH_BACKEND=npu)"
)


def run(code: str, **env: str) -> str:
    """stdout of `code` run on npu; run_python checks the exit status."""
    return run_python(code, **env).stdout


def test_device_count_and_properties_come_from_acl() -> None:
    out = run(
        "import torch\n"
        "props = torch.npu.get_device_properties(2)\n"
        "print(torch.npu.device_count(), props.name, props.total_memory)\n",
        ACL_EMULATOR_DEVICE_COUNT="3",
        ACL_EMULATOR_MEMORY_MB="512",
        ACL_EMULATOR_SOC_NAME="Ascend910B3",
    )
    assert out.split() == ["3", "Ascend910B3", str(512 << 20)]


def test_device_memory_is_not_host_addressable() -> None:
    # The emulator's device addresses fault on any host access, so copies must
    # go through aclrtMemcpy: a host read of a device pointer kills the process.
    code = (
        "import ctypes, torch\n"
        "t = torch.ones(4, device='npu')\n"
        "print(torch.ones(4).equal(t.cpu()), flush=True)\n"
        "ctypes.string_at(t.data_ptr(), 4)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["True"]
    assert result.returncode < 0  # killed by SIGSEGV, not an exception


def test_out_of_memory_is_torch_out_of_memory_and_recoverable() -> None:
    out = run(
        "import torch\n"
        "keep = torch.full((1024,), 3.0, device='npu')\n"
        "try:\n"
        "    torch.empty(40 << 20, device='npu')\n"
        "except torch.OutOfMemoryError as error:\n"
        "    print('oom:', 'npu:0 out of memory. Tried to allocate 160.00 MiB' in str(error),\n"
        "          'total capacity of 64.00 MiB' in str(error))\n"
        "small = torch.ones(1 << 20, device='npu')\n"
        "print(float(small.sum()), float(keep.sum()))\n",
        ACL_EMULATOR_MEMORY_MB="64",
    )
    assert out.splitlines() == ["oom: True True", "1048576.0 3072.0"]


def test_injected_runtime_failure_is_a_clear_error_and_transient() -> None:
    # The first synchronous copy (arange fills `t` on the device) fails inside the
    # runtime, with ACL's error code and aclGetRecentErrMsg's text; the next works.
    out = run(
        "import torch\n"
        "t = torch.arange(6.0, device='npu')\n"
        "try:\n"
        "    t.cpu()\n"
        "except RuntimeError as error:\n"
        "    print('failed:', 'ACL error 507000: EE9999: [acl emulator] aclrtMemcpy: injected failure' in str(error))\n"
        "print(t.cpu().tolist())\n",
        ACL_EMULATOR_FAIL="aclrtMemcpy:1",
    )
    assert out.splitlines() == ["failed: True", "[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]"]


def test_failed_allocation_keeps_existing_tensors() -> None:
    out = run(
        "import torch\n"
        "a = torch.full((256,), 2.0, device='npu')\n"
        "torch.npu.empty_cache()\n"
        "try:\n"
        "    torch.empty(1 << 24, device='npu')\n"
        "except RuntimeError as error:\n"
        "    print('failed:', 'injected failure' in str(error))\n"
        "print(float(a.sum()), torch.npu.memory_allocated() == a.untyped_storage().nbytes())\n",
        ACL_EMULATOR_FAIL="aclrtMalloc:2",
    )
    assert out.splitlines() == ["failed: True", "512.0 True"]


def test_hot_ops_run_through_aclnn() -> None:
    out = run("from torch_backend.__main__ import ops_report\nprint(ops_report())\n")
    rows = {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}
    for op in ("add.Tensor", "mm", "addmm", "sum.dim_IntList", "_softmax", "_log_softmax", "native_layer_norm"):
        assert "device kernel" in rows[op], rows[op]


def test_cpu_scalars_take_aclnn_scalar_forms_or_a_device_fill() -> None:
    # x * 2 is aclnnMuls (no fill_ first); 5 - x has no scalar form with the scalar first, so the
    # kernel declines the host scalar and core calls it again with a filled device tensor.
    out = run(
        "import torch\n"
        "from torch_backend import op_report\n"
        "x = torch.randn(16)\n"
        "d = x.npu()\n"
        "with op_report() as r:\n"
        "    doubled = d * 2\n"
        "print(sorted(row.op for row in r.rows), torch.equal(doubled.cpu(), x * 2))\n"
        "with op_report() as r:\n"
        "    flipped = 5 - d\n"
        "print(sorted(row.op for row in r.rows), torch.equal(flipped.cpu(), 5 - x))\n"
    )
    assert out.splitlines() == ["['mul.Tensor'] True", "['fill_.Scalar', 'sub.Tensor'] True"]


def test_kernel_uses_workspace_from_core_allocator() -> None:
    # The emulator's matmul plans with a workspace and checks, at launch, that
    # it is device memory of that size: a wrong or missing one fails the op.
    out = run(
        "import torch\n"
        "a = torch.randn(8, 16)\n"
        "b = torch.randn(16, 4)\n"
        "print(torch.allclose((a.npu() @ b.npu()).cpu(), a @ b, atol=1e-5))\n"
    )
    assert out.split() == ["True"]


def test_emulator_refuses_null_handles_as_acl_does() -> None:
    # The emulator stands in for CANN in CI: a null handle or result pointer must be ACL's
    # ACL_ERROR_INVALID_PARAM (100000) with a recent-error message, never a crash.
    out = run(
        "import ctypes, os\n"
        "acl = ctypes.CDLL(os.path.join(os.environ['ASCEND_HOME_PATH'], 'lib64', 'libascendcl.so'))\n"
        "acl.aclGetRecentErrMsg.restype = ctypes.c_char_p\n"
        "assert acl.aclInit(None) in (0, 100002)\n"
        "assert acl.aclrtSetDevice(0) == 0\n"
        "event = ctypes.c_void_p()\n"
        "assert acl.aclrtCreateEventWithFlag(ctypes.byref(event), 0) == 0\n"
        "calls = [acl.aclrtQueryEventStatus(None, ctypes.byref(ctypes.c_int())),\n"
        "         acl.aclrtQueryEventStatus(event, None), acl.aclrtSynchronizeEvent(None),\n"
        "         acl.aclrtRecordEvent(None, None), acl.aclrtStreamWaitEvent(None, None),\n"
        "         acl.aclrtEventElapsedTime(None, event, event), acl.aclrtStreamQuery(None, None),\n"
        "         acl.aclrtCreateStream(None), acl.aclrtCreateEventWithFlag(None, 0)]\n"
        "print(calls, acl.aclGetRecentErrMsg().decode())\n"
    )
    codes = "[" + ", ".join(["100000"] * 9) + "]"
    assert out.splitlines()[-1] == f"{codes} EE9999: [acl emulator] aclrtCreateEventWithFlag: null event"


def test_docs_list_the_ops_on_npus_kernels() -> None:
    from pathlib import Path

    from torch_backend.testing import assert_kernel_list_documented

    env = {k: v for k, v in os.environ.items() if k != "TORCH_BACKEND_FORCE_FALLBACK"}
    assert_kernel_list_documented(Path(__file__).resolve().parents[3] / "docs" / "kernels.md", "npu", env)
