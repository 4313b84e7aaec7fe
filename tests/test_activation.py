"""Activation happens once per process and fails with Python errors, never aborts."""

import subprocess

import pytest
import torch
from conftest import run_python

import torch_backend


def test_second_activation_raises_runtime_error():
    assert torch_backend.active_backend().name == "fake"
    with pytest.raises(RuntimeError, match="backend 'fake' is already active"):
        torch_backend.activate("fake")
    assert torch.ones(1, device="fake").item() == 1.0


def test_explicit_activation_without_autoload():
    code = (
        "import torch, torch_backend\n"
        "assert torch_backend.active_backend() is None\n"
        "torch_backend.activate()\n"
        "print(torch.arange(3, device='fake').sum().item())\n"
    )
    out = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


def activation_errors(*names: str, setup: str = "") -> list[str]:
    """What `torch_backend.activate(name)` raises for each name, in a fresh process without autoload."""
    code = (
        f"import torch, torch_backend\n{setup}"
        f"for name in {names!r}:\n"
        "    try:\n"
        "        torch_backend.activate(name)\n"
        "    except RuntimeError as e:\n"
        "        print(e)\n"
    )
    out = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().split("\n")


def test_privateuse1_taken_by_another_extension_is_an_error():
    (error,) = activation_errors("fake", setup="torch.utils.rename_privateuse1_backend('other')\n")
    assert "PrivateUse1 is already registered as 'other'" in error


def test_explicit_activation_of_an_unusable_backend_names_the_call_not_the_variable():
    unusable, missing = activation_errors("npu", "tpu")
    assert unusable.startswith("torch_backend.activate('npu'): backend 'npu' is not usable: "), unusable
    assert missing.startswith("torch_backend.activate('tpu'): no such backend is installed"), missing
    assert "TORCH_BACKEND" not in unusable + missing


def test_no_devices_means_not_activated():
    out = run_python(
        "import torch, torch_backend; print(torch_backend.active_backend())",
        env={"TORCH_BACKEND_FAKE_DEVICE_COUNT": "0"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"
    assert "backend 'fake' reports no devices" in out.stderr


def test_automatic_choice_goes_on_past_a_backend_whose_runtime_finds_no_device():
    # A probe only checks files (an NVIDIA driver installed, CUDA_VISIBLE_DEVICES hiding every GPU): when
    # the chosen backend's runtime then counts no device, the next backend by priority is activated.
    code = (
        "import dataclasses, warnings, torch, torch_backend\n"
        "from torch_backend import _activation, _autoload, _discovery\n"
        "fake = next(i for i in _discovery.discover() if i.name == 'fake')\n"
        "renamed = dataclasses.replace(fake.backend, name='empty')\n"
        "empty = dataclasses.replace(fake, entry_point='empty', backend=renamed)\n"
        "_discovery.discover = lambda: [empty, fake]\n"
        "real = _activation.activate_backend\n"
        "def activate(backend):\n"
        "    if backend.name == 'empty':\n"
        "        raise _activation.NoDevicesError(\"torch-backend: backend 'empty' reports no devices\")\n"
        "    real(backend)\n"
        "_activation.activate_backend = activate\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    _autoload._autoload()\n"
        "print(torch_backend.active_backend().name, [str(w.message) for w in caught])\n"
    )
    out = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fake []"


def test_backend_with_its_own_collectives_replaces_staged_gloo():
    code = (
        "import dataclasses, torch, torch.distributed as dist, torch_backend._activation, torch_backend_fake\n"
        "calls = []\n"
        "own = dataclasses.replace(torch_backend_fake.backend, collectives=lambda: calls.append('own'))\n"
        "torch_backend._activation.activate_backend(own)\n"
        "print(calls, dist.Backend.default_device_backend_map.get('fake'))\n"
    )
    out = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['own'] None"


def test_failing_collectives_registration_only_warns():
    code = (
        "import dataclasses, warnings, torch, torch_backend._activation, torch_backend_fake\n"
        "def broken():\n"
        "    raise OSError('no HCCL here')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    backend = dataclasses.replace(torch_backend_fake.backend, collectives=broken)\n"
        "    torch_backend._activation.activate_backend(backend)\n"
        "print([str(w.message) for w in caught if 'c10d' in str(w.message)])\n"
        "print(torch.ones(2, device='fake').sum().item())\n"
    )
    out = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    assert "no c10d backend for 'fake' tensors: no HCCL here" in out.stdout
    assert out.stdout.strip().endswith("2.0")


def test_runtime_libraries_load_first_and_globally(tmp_path):
    # A vendor runtime of one function, loaded at activation RTLD_GLOBAL: its
    # symbol is then in the process's global scope, where a device library
    # built against headers only resolves it.
    source = tmp_path / "myrt.c"
    source.write_text("int my_runtime_version(void) { return 42; }\n")
    library = tmp_path / "libmyrt.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    code = (
        "import ctypes, dataclasses, torch, torch_backend._activation, torch_backend_fake\n"
        "print(hasattr(ctypes.CDLL(None), 'my_runtime_version'))\n"
        f"backend = dataclasses.replace(torch_backend_fake.backend, runtime_libraries=lambda: [{str(library)!r}])\n"
        "torch_backend._activation.activate_backend(backend)\n"
        "print(ctypes.CDLL(None).my_runtime_version(), torch.ones(2, device='fake').sum().item())\n"
    )
    out = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "42", "2.0"]


def test_missing_runtime_library_is_a_clear_error_and_activates_nothing():
    code = (
        "import dataclasses, torch, torch_backend, torch_backend._activation, torch_backend_fake\n"
        "backend = dataclasses.replace(torch_backend_fake.backend, runtime_libraries=lambda: ['/nowhere/libmyrt.so'])\n"
        "try:\n"
        "    torch_backend._activation.activate_backend(backend)\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
        "print(torch_backend.active_backend(), torch._C._get_privateuse1_backend_name())\n"
    )
    out = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(
        "torch-backend: cannot activate 'fake': loading its runtime library /nowhere/libmyrt.so failed"
    )
    assert lines[1] == "None privateuseone"


def test_a_runtime_library_lookup_that_fails_names_the_backend_and_activates_nothing():
    # A backend's lookup raising (its runtime vanished since the probe) is one clear activation error.
    code = (
        "import dataclasses, torch, torch_backend, torch_backend._activation, torch_backend_fake\n"
        "def lookup():\n"
        "    raise RuntimeError('the vendor runtime is no longer found (VENDOR_HOME)')\n"
        "backend = dataclasses.replace(torch_backend_fake.backend, runtime_libraries=lookup)\n"
        "try:\n"
        "    torch_backend._activation.activate_backend(backend)\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
        "print(torch_backend.active_backend(), torch._C._get_privateuse1_backend_name())\n"
    )
    out = run_python(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "torch-backend: cannot activate 'fake': the vendor runtime is no longer found (VENDOR_HOME)",
        "None privateuseone",
    ]
