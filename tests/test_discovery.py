"""Backend discovery and selection at `import torch`."""

import importlib.metadata
import json
from pathlib import Path

import pytest
from conftest import run_python

from torch_backend import Backend, BackendInfo
from torch_backend._discovery import choose


def info(name: str, priority: int, available: bool, reason: str = "") -> BackendInfo:
    backend = Backend(name=name, library=Path("/nonexistent"), priority=priority)
    return BackendInfo(
        entry_point=name, distribution=f"dist-{name}", backend=backend, available=available, reason=reason
    )


def test_choose_prefers_highest_priority_available():
    infos = [info("npu", 30, False, "no ACL"), info("gpu", 20, True), info("fake", 10, True)]
    assert choose(infos, None)[0].name == "gpu"


def test_choose_honours_request_and_none():
    infos = [info("gpu", 20, True), info("fake", 10, True)]
    assert choose(infos, "fake")[0].name == "fake"
    assert choose(infos, "none") == (None, "")


def test_choose_explains_missing_and_unavailable_requests():
    infos = [info("npu", 30, False, "no ACL runtime")]
    chosen, why = choose(infos, "npu")
    assert chosen is None and "no ACL runtime" in why
    chosen, why = choose(infos, "tpu")
    assert chosen is None and "no such backend is installed (installed: npu)" in why


def test_plain_import_activates_fake():
    out = run_python(
        "import torch, torch_backend; print(torch_backend.active_backend().name, torch.fake.device_count())"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["fake", "2"]
    assert out.stderr == ""


def test_backend_none_leaves_no_fake_device():
    code = (
        "import torch, torch_backend\n"
        "assert torch_backend.active_backend() is None\n"
        "assert not hasattr(torch, 'fake')\n"
        "try:\n"
        "    torch.device('fake')\n"
        "except RuntimeError as e:\n"
        "    print('rejected')\n"
    )
    out = run_python(code, env={"TORCH_BACKEND": "none"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "rejected"


def test_requesting_a_missing_backend_warns():
    out = run_python("import torch; print(hasattr(torch, 'fake'))", env={"TORCH_BACKEND": "tpu"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert "TORCH_BACKEND=tpu: no such backend is installed" in out.stderr


def test_requesting_an_unavailable_backend_warns_with_reason():
    out = run_python("import torch", env={"TORCH_BACKEND": "npu"})
    assert out.returncode == 0, out.stderr
    assert "backend 'npu' is not usable" in out.stderr
    assert "libascendcl" in out.stderr or "no device library" in out.stderr


@pytest.mark.parametrize(
    ("target", "source", "expected"),
    [
        ("broken_plugin:backend", "raise ImportError('vendor SDK missing')", "ImportError: vendor SDK missing"),
        ("broken_plugin:backend", "backend = 42", "is 'int', not a torch_backend.Backend"),
        ("no_such_module:backend", None, "ModuleNotFoundError"),
    ],
)
def test_broken_entry_point_warns_and_fake_still_works(plugin_dir, target, source, expected):
    path = plugin_dir("broken-backend", "broken", target, source)
    out = run_python("import torch; print(torch.ones(2, device='fake').sum().item())", extra_path=path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2.0"
    assert "backend 'broken' (broken-backend)" in out.stderr
    assert expected in out.stderr


def test_backend_whose_library_fails_to_load_warns(plugin_dir, tmp_path):
    bogus = tmp_path / "libbogus.so"
    bogus.write_text("not an ELF file")
    source = (
        f"from torch_backend import Backend\nbackend = Backend(name='bogus', library={str(bogus)!r}, priority=99)\n"
    )
    path = plugin_dir("bogus-backend", "bogus", "bogus_plugin:backend", source)
    out = run_python("import torch, torch_backend; print(torch_backend.active_backend())", extra_path=path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"
    assert "backend 'bogus' could not be activated" in out.stderr
    assert "cannot load device library" in out.stderr


def add_compiled_backend(plugin_dir, tmp_path: Path, built_for_torch: str) -> Path:
    """A backend package whose build info says it was compiled against `built_for_torch`, with fake's library."""
    import torch_backend_fake

    path = plugin_dir("toy-backend", "toy", "toy_backend:backend")
    package = tmp_path / "toy_backend"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from torch_backend import Backend\n"
        f"backend = Backend(name='toy', library={str(torch_backend_fake.backend.library)!r}, priority=99)\n"
    )
    (package / "_build_info.json").write_text(json.dumps({"torch": built_for_torch}))
    return path


def other_torch_release() -> str:
    major, minor = importlib.metadata.version("torch").split(".")[:2]
    return f"{major}.{int(minor) - 1}.0"


def test_backend_built_for_another_torch_refuses_to_activate_naming_both(plugin_dir, tmp_path):
    path = add_compiled_backend(plugin_dir, tmp_path, other_torch_release())
    running = importlib.metadata.version("torch")
    expected = f"toy-backend was built for torch {other_torch_release()}, but torch {running} is installed"
    # Automatic choice passes it over despite its priority, and says why.
    out = run_python("import torch, torch_backend; print(torch_backend.active_backend().name)", extra_path=path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fake"
    assert expected in out.stderr
    code = (
        "import torch, torch_backend\n"
        "try:\n"
        "    torch_backend.activate('toy')\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    out = run_python(code, {"TORCH_BACKEND": "none"}, path)
    assert out.returncode == 0, out.stderr
    assert expected in out.stdout
    # Explicitly requested at import: a warning with the same reason, and `import torch` still works.
    out = run_python(
        "import torch, torch_backend; print(torch_backend.active_backend())", {"TORCH_BACKEND": "toy"}, path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"
    assert expected in out.stderr


def test_backend_built_for_this_torch_release_activates(plugin_dir, tmp_path):
    # Same major.minor, another patch release: the C++ ABI is the same.
    major, minor = importlib.metadata.version("torch").split(".")[:2]
    path = add_compiled_backend(plugin_dir, tmp_path, f"{major}.{minor}.99")
    out = run_python("import torch, torch_backend; print(torch_backend.active_backend().name)", extra_path=path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "toy"


def test_installed_packages_record_the_torch_they_were_built_for():
    import torch_backend
    import torch_backend_fake
    from torch_backend._compat import built_for

    running = importlib.metadata.version("torch").split("+")[0]
    for package in (torch_backend, torch_backend_fake):
        assert built_for(Path(package.__file__).parent) == running
