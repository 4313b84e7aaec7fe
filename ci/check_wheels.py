"""Check built wheels: self-contained, and working in a fresh venv away from the source tree.

Usage: python ci/check_wheels.py WHEEL_DIR REQUIREMENT... [--installed-in PYTHON] [--kit KIT_REQUIREMENT...]
REQUIREMENTs (torch==X.Y.Z and the like) are installed beside the wheels; with --kit, the
requirements of the conformance kit (pytest, expecttest) too, and a scaffolded backend runs it.
With --installed-in, the wheels are already installed for PYTHON (a session's venv, torch with
them): the checks use it, away from the source tree, instead of installing torch into a fresh venv
again (a CUDA build of torch is 5 GB and over a minute to install).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE_FILES = [
    "torch_backend/lib/libtorch_backend_core.so",
    "torch_backend/include/torch_backend/DeviceRuntime.h",
    "torch_backend/share/cmake/TorchBackendCore/TorchBackendCoreConfig.cmake",
]
ONE_LINER = "import torch; x = torch.randn(4, device='fake'); print((x * 2 + 1).cpu())"
# One-rank group: loads torch_backend._distributed from the wheel.
DIST_ONE_LINER = (
    "import torch, torch.distributed as d; d.init_process_group(store=d.HashStore(), rank=0, world_size=1); "
    "t = torch.ones(2, device='fake'); d.all_reduce(t); print(t.cpu()); d.destroy_process_group()"
)


def fail(message: str) -> None:
    sys.exit(f"check_wheels: FAILED: {message}")


def runpaths(library: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    paths = []
    for line in out.splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            paths += line.split("[", 1)[1].rstrip("]").split(":")
    return paths


def check_contents(wheels: list[Path], scratch: Path) -> None:
    core = next((w for w in wheels if w.name.startswith("torch_backend_core-")), None)
    if core is None:
        fail("no torch_backend_core wheel")
    names = set(zipfile.ZipFile(core).namelist())
    for required in CORE_FILES:
        if required not in names:
            fail(f"{core.name} lacks {required}")
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if not name.endswith(".so"):
                    continue
                extracted = Path(archive.extract(name, scratch / wheel.stem))
                absolute = [p for p in runpaths(extracted) if not p.startswith("$ORIGIN")]
                if absolute:
                    fail(f"{wheel.name}:{name} has absolute RUNPATH entries {absolute}")
                print(f"ok: {wheel.name}:{name} RUNPATH {runpaths(extracted)}")


CUDA_LIBRARY = "torch_backend_cuda/lib/libtorch_backend_cuda.so"
CUBLAS_RUNPATH = "$ORIGIN/../../nvidia/cu13/lib"
NCCL_RUNPATH = "$ORIGIN/../../nvidia/nccl/lib"
CUDNN_RUNPATH = "$ORIGIN/../../nvidia/cudnn/lib"


def check_cuda_wheel(wheels: list[Path], scratch: Path) -> None:
    """The gpu backend's wheel carries its compiled kernels, needs cuBLAS, NCCL and cuDNN, depends on the
    wheels that bring them (as PyTorch's CUDA wheels do), and finds them beside itself in site-packages."""
    cuda = next((w for w in wheels if w.name.startswith("torch_backend_cuda-")), None)
    if cuda is None:
        fail("no torch_backend_cuda wheel")
    with zipfile.ZipFile(cuda) as archive:
        if CUDA_LIBRARY not in archive.namelist():
            fail(f"{cuda.name} has no device library (was the CUDA toolkit found at build time?)")
        library = Path(archive.extract(CUDA_LIBRARY, scratch / "cuda"))
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requires = archive.read(metadata).decode()
    dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    for needed, runpath, wheel in (
        ("libcublas.so.13", CUBLAS_RUNPATH, "nvidia-cublas"),
        ("libnccl.so.2", NCCL_RUNPATH, "nvidia-nccl-cu13"),
        ("libcudnn.so.9", CUDNN_RUNPATH, "nvidia-cudnn-cu13"),
    ):
        if f"[{needed}]" not in dynamic:
            fail(f"{CUDA_LIBRARY} does not load {needed}")
        if runpath not in runpaths(library):
            fail(f"{CUDA_LIBRARY} RUNPATH {runpaths(library)} lacks {runpath}")
        if f"Requires-Dist: {wheel}" not in requires:
            fail(f"{cuda.name} does not depend on {wheel}")
    exported = subprocess.run(["nm", "-D", str(library)], capture_output=True, text=True, check=True).stdout
    if " T torch_backend_device_collectives" not in exported:
        fail(f"{CUDA_LIBRARY} does not export its collectives (NCCL)")
    if (
        " cudnnConvolutionForward"
        not in subprocess.run(
            ["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True, check=True
        ).stdout
    ):
        fail(f"{CUDA_LIBRARY} does not call cuDNN's convolutions")
    print(
        f"ok: {cuda.name}: kernels, cuDNN convolutions and NCCL collectives built, loads libcublas.so.13, "
        f"libnccl.so.2 and libcudnn.so.9 through {CUBLAS_RUNPATH}, {NCCL_RUNPATH} and {CUDNN_RUNPATH}, "
        "requires nvidia-cublas, nvidia-nccl-cu13 and nvidia-cudnn-cu13"
    )


def check_cuda_installed(python: Path, work: Path) -> None:
    """Installed without a GPU: every library the device library needs resolves, and the backend says why
    it is unavailable."""
    where = run(python, "-c", "import torch_backend_cuda as c; print(c.__file__)", cwd=work).strip()
    library = Path(where).parent / "lib" / "libtorch_backend_cuda.so"
    linked = subprocess.run(["ldd", str(library)], capture_output=True, text=True, check=True).stdout
    needed = ("libcublas.so.13", "libnccl.so.2", "libcudnn.so.9")
    if "not found" in linked or not all(name in linked for name in needed):
        fail(f"{library} does not resolve its libraries:\n{linked}")
    report = run(python, "-m", "torch_backend", cwd=work)
    line = next((ln for ln in report.splitlines() if ln.split()[:1] == ["gpu"]), "")
    if "unavailable: no NVIDIA driver found" not in line and not Path("/dev/nvidiactl").exists():
        fail(f"the gpu backend is not reported unavailable for want of a driver:\n{report}")
    print(f"ok: torch-backend-cuda installed without a GPU: libraries resolve; {line.strip()}")


def run(python: Path, *args: str, cwd: Path, backend: str | None = None) -> str:
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(cwd)}
    if backend is not None:
        env["TORCH_BACKEND"] = backend
    done = subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(args)}\n{done.stdout}\n{done.stderr}")
    return done.stdout


def check_torch_pins(wheels: list[Path], torch_version: str) -> None:
    """A wheel with compiled code requires the torch release it was built against."""
    major, minor = torch_version.split(".")[:2]
    pin = f"torch=={major}.{minor}.*"
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
            requires = [
                line.split(":", 1)[1].strip().replace(" ", "")
                for line in archive.read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:")
            ]
            compiled = any(n.endswith(".so") for n in names)
        if compiled and pin not in requires:
            fail(f"{wheel.name} requires {requires}, not {pin}")
        print(f"ok: {wheel.name} requires {[r for r in requires if r.startswith('torch')]}")


def check_fresh_venv(wheels: list[Path], scratch: Path, requirements: list[str], kit_requirements: list[str]) -> None:
    env_dir = scratch / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "-q", *requirements, *map(str, wheels)]
    subprocess.run(install, check=True)
    check_installed(python, env_dir, scratch, kit_requirements)


def check_installed(python: Path, env_dir: Path, scratch: Path, kit_requirements: list[str]) -> None:
    """The installed wheels, used from a folder outside the source tree."""
    work = scratch / "elsewhere"
    work.mkdir()
    located = run(python, "-c", "import torch_backend, torch_backend_fake; print(torch_backend.__file__)", cwd=work)
    if not located.startswith(str(env_dir)) or located.startswith(str(ROOT / "packages")):
        fail(f"torch_backend imported from {located.strip()}, not from the venv's installed wheel")
    out = run(python, "-c", ONE_LINER, cwd=work)
    if not out.startswith("tensor(["):
        fail(f"one-liner printed {out!r}")
    out = run(python, "-c", DIST_ONE_LINER, cwd=work)
    if not out.startswith("tensor([1., 1.])"):
        fail(f"distributed one-liner printed {out!r}")
    report = run(python, "-m", "torch_backend", cwd=work)
    if "active: fake (2 devices)" not in report:
        fail(f"unexpected report:\n{report}")
    print(f"ok: installed wheels, one-liner: {out.strip()}")
    check_cuda_installed(python, work)
    check_scaffold(python, work, kit_requirements)


def check_scaffold(python: Path, work: Path, kit_requirements: list[str]) -> None:
    """A backend outside this repo, as `python -m torch_backend new` writes it, builds with the installed
    core alone (its hatch plugin runs CMake, find_package finds core's CMake package), installs as a wheel,
    is found at `import torch`, and passes the conformance kit (when kit_requirements are given)."""
    run(python, "-m", "torch_backend", "new", "toy", "--dest", str(work), cwd=work)
    project = work / "torch-backend-toy"
    wheel = [str(python), "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", "dist", "."]
    subprocess.run(wheel, cwd=project, check=True)
    built = list((project / "dist").glob("torch_backend_toy-*.whl"))
    if not built:
        fail("the scaffolded backend's wheel was not built")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(built[0])], check=True)
    report = run(python, "-m", "torch_backend", cwd=work)
    if "toy" not in report or "torch-backend-toy" not in report:
        fail(f"the scaffolded backend is not listed:\n{report}")
    out = run(python, "-c", "import torch; print(torch.ones(3, device='toy').sum().item())", cwd=work, backend="toy")
    if out.strip() != "3.0":
        fail(f"the scaffolded backend computed {out!r}")
    print("ok: scaffolded backend built with core's hatch plugin and CMake package, installed, and used")
    if kit_requirements:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *kit_requirements], check=True)
        # Its own tests file runs the kit (in a process of its own, with TORCH_BACKEND=toy).
        run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=project)
        print("ok: the scaffolded backend passes the conformance kit")
        check_wrong_kernel_found(python, work, project)


TRAINING_STEP = Path(__file__).resolve().parents[1] / "docs" / "examples" / "training_step_vs_cpu.py"


def check_wrong_kernel_found(python: Path, work: Path, project: Path) -> None:
    """The bring-up tools on the scaffolded backend with its mul kernel written as add (as the docs walk
    through it): the training step differs from CPU, auto-compare names mul with its shapes, and forcing mul
    onto the fallback makes the step match CPU."""
    kernels = project / "csrc" / "ToyKernels.cpp"
    source = kernels.read_text()
    if source.count("return a * b;") != 1:
        fail(f"the scaffold's mul kernel is not where the check plants its mistake:\n{source}")
    kernels.write_text(source.replace("return a * b;", "return a + b;"))
    wheel = [str(python), "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", "wrong", "."]
    subprocess.run(wheel, cwd=project, check=True)
    built = next((project / "wrong").glob("torch_backend_toy-*.whl"))
    reinstall = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(built)]
    subprocess.run(reinstall, check=True)

    def step(**settings: str) -> subprocess.CompletedProcess:
        env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(work), "TORCH_BACKEND": "toy", **settings}
        return subprocess.run([str(python), str(TRAINING_STEP)], cwd=work, env=env, capture_output=True, text=True)

    wrong = step()
    if wrong.returncode != 0 or "parameters differ from CPU" not in wrong.stdout:
        fail(f"the planted wrong mul kernel went unnoticed:\n{wrong.stdout}\n{wrong.stderr}")
    compared = step(TORCH_BACKEND_AUTOCOMPARE=".")
    named = "AutocompareError: auto-compare: mul.Tensor differs from CPU"
    shapes = "arguments: self: float32[4, 16] strides (16, 1) on toy:0; other: float32[4, 16]"
    if compared.returncode != 1 or named not in compared.stderr or shapes not in compared.stderr:
        fail(f"auto-compare did not name the wrong mul kernel first:\n{compared.stdout}\n{compared.stderr}")
    forced = step(TORCH_BACKEND_FORCE_FALLBACK="^mul", TORCH_BACKEND_AUTOCOMPARE=".")
    if forced.returncode != 0 or "parameters match CPU" not in forced.stdout:
        fail(f"with mul forced onto the fallback the step still differs:\n{forced.stdout}\n{forced.stderr}")
    print("ok: a wrong kernel planted in the scaffolded backend: auto-compare names it, forcing it off fixes the step")


def main() -> None:
    args = sys.argv[1:]
    kit_requirements = args[args.index("--kit") + 1 :] if "--kit" in args else []
    args = args[: args.index("--kit")] if "--kit" in args else args
    installed_in = None
    if "--installed-in" in args:
        at = args.index("--installed-in")
        installed_in = Path(args[at + 1])
        args = args[:at] + args[at + 2 :]
    wheel_dir, requirements = Path(args[0]), args[1:]
    wheels = sorted(wheel_dir.glob("*.whl"))
    if not wheels:
        fail(f"no wheels in {wheel_dir}")
    torch_pin = next((r for r in requirements if r.startswith("torch==")), None)
    if torch_pin is None:
        fail("name the torch to check against (torch==X.Y.Z)")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        check_contents(wheels, scratch)
        check_cuda_wheel(wheels, scratch)
        check_torch_pins(wheels, torch_pin.removeprefix("torch=="))
        if installed_in is None:
            check_fresh_venv(wheels, scratch, requirements, kit_requirements)
        else:
            check_installed(installed_in, installed_in.parent.parent, scratch, kit_requirements)
    print("check_wheels: all checks passed")


if __name__ == "__main__":
    main()
