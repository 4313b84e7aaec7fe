"""What a backend package declares about itself, and what discovery learns about it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A probe answers "can this backend run here?" and, if not, why.
Probe = Callable[[], "tuple[bool, str]"]


@dataclass(frozen=True)
class TritonTarget:
    """The Triton compiler a backend's generated kernels are built with (``Backend.triton``).

    Core registers, when Inductor first loads (never at ``import torch``), a
    Triton backend named after the device: the vendor's compiler, and a driver
    that launches on the device's current stream. Inductor then generates
    Triton kernels for the device (``torch.compile`` with default options).

    Args:
        vendor: the installed Triton backend to build on: ``"nvidia"``, ``"amd"``,
            or an out-of-tree one (``triton.backends.backends``).
        arch: the architecture the vendor's compiler targets (NVIDIA's 90 for
            sm_90): a value, or a function of the device's properties
            (``torch.<device>.get_device_properties``); by default
            ``major * 10 + minor``, CUDA's convention.
        warp_size: threads per warp, where the device's properties do not say.
        interpreter_only: the kernels can only run under Triton's interpreter
            (``TRITON_INTERPRET=1``: a simulated device, tests); elsewhere the
            device gets the next code generator.
    """

    vendor: str
    arch: int | str | Callable[[Any], int | str] | None = None
    warp_size: int = 32
    interpreter_only: bool = False


@dataclass(frozen=True)
class Backend:
    """A backend, as its package exposes it through the ``torch_backend.backends`` entry point.

    Args:
        name: the PyTorch device name (``torch.device(name)``, ``torch.<name>``).
        library: path of the backend's device library (its device symbols).
        priority: auto-selection order when several are available: higher wins.
        probe: cheap availability check that must not load the device library;
            by default the library file must exist.
        description: one line for ``python -m torch_backend``.
        collectives: registers the device's own c10d backend (its vendor's
            collective library) at activation; by default the staged Gloo
            backend of :mod:`torch_backend.distributed` serves the device.
        inductor: returns the device's own Inductor code generators
            (:class:`torch_backend.InductorCodegen`), called when Inductor
            first compiles for the device; by default a device with
            host-addressable memory gets Inductor's C++ kernels, others none.
        triton: the device's Triton target (:class:`TritonTarget`): Inductor
            generates Triton kernels for it, after ``inductor`` and before the
            C++ kernels.
        runtime_libraries: the vendor runtime's shared libraries (paths), which
            core loads, in order and visible to later libraries
            (``RTLD_GLOBAL``), just before the device library. A device
            library built without the vendor's libraries at hand (only its
            headers) resolves its runtime calls against them.
    """

    name: str
    library: Path
    priority: int = 0
    probe: Probe | None = None
    description: str = ""
    collectives: Callable[[], None] | None = None
    inductor: Callable[[], Any] | None = None
    triton: TritonTarget | None = None
    runtime_libraries: Callable[[], Sequence[str | Path]] | None = None

    def availability(self) -> tuple[bool, str]:
        """(available, reason), without loading the device library."""
        if self.probe is not None:
            available, reason = self.probe()
            if not available:
                return False, reason
        if not Path(self.library).is_file():
            return False, f"device library {self.library} is missing (package not built?)"
        return True, self.description or "ready"


@dataclass
class BackendInfo:
    """One installed entry point: its backend, or why it could not be loaded."""

    entry_point: str
    distribution: str
    backend: Backend | None = None
    available: bool = False
    reason: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.backend.name if self.backend is not None else self.entry_point

    @property
    def priority(self) -> int:
        return self.backend.priority if self.backend is not None else -1
