"""``python -m torch_backend new NAME``: writes a backend package that builds against the installed core.

The package passes the conformance kit as written: its device symbols keep device memory in
host memory, each marked with the runtime call that replaces it, and two example kernels (float32
add and mul) compute on the host until the hardware's kernels replace them.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().parent / "template"

# Device types PyTorch has built in: PrivateUse1 cannot be renamed to one of them.
_IN_TREE = {
    "cpu", "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla", "lazy",
    "vulkan", "metal", "xpu", "mps", "meta", "hpu", "mtia", "privateuseone", "ipu",
}  # fmt: skip


def check_name(name: str) -> None:
    """Raises ValueError unless ``name`` can be a PrivateUse1 device name and a Python package suffix."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", name) or keyword.iskeyword(name):
        raise ValueError(
            f"invalid backend name {name!r}: use lowercase letters, digits and '_', starting with a letter "
            "(it becomes torch.device('NAME') and the module torch.NAME)"
        )
    if name in _IN_TREE:
        raise ValueError(f"invalid backend name {name!r}: PyTorch already has a '{name}' device type")


def files(name: str) -> dict[str, str]:
    """Relative path -> contents of the package for backend ``name``."""
    from torch_backend import __version__

    check_name(name)
    title = "".join(part.capitalize() for part in name.split("_"))
    values = {"name": name, "Name": title, "core_version": __version__}

    def render(template: str) -> str:
        return Template((TEMPLATES / template).read_text()).substitute(values)

    package = f"src/torch_backend_{name}"
    return {
        "pyproject.toml": render("pyproject.toml.in"),
        "CMakeLists.txt": render("CMakeLists.txt.in"),
        "README.md": render("README.md.in"),
        f"csrc/{title}Device.cpp": render("Device.cpp.in"),
        f"csrc/{title}Kernels.cpp": render("Kernels.cpp.in"),
        f"{package}/__init__.py": render("__init__.py.in"),
        "tests/test_conformance.py": render("test_conformance.py.in"),
    }


def write(name: str, destination: Path) -> Path:
    """Writes the package into ``destination/torch-backend-NAME`` (which must not exist) and returns it."""
    root = Path(destination) / f"torch-backend-{name}"
    contents = files(name)
    if root.exists():
        raise FileExistsError(f"{root} already exists: choose another destination or remove it")
    for relative, text in contents.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
