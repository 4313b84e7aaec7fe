"""Developer and CI sessions. Fresh machine: `pip install nox && nox -t ci -j 2` (tests), `nox -s demo`.

With `-j 2` the sessions marked allow_parallel run two at a time (CI's two
cores: their tests are mostly single-threaded); tests-fake, whose process-exit
stress test keeps a core busy on purpose, runs alone.

Sessions reuse their virtualenvs, so only the first run installs torch.
C++ packages are built with `--no-build-isolation` against the pinned torch.
"""

from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
PACKAGES = ROOT / "packages"
# The development torch: the only release with a CPU-only wheel here (190 MB);
# the registry's builds of the others bring ~3 GB of CUDA libraries per venv.
DEFAULT_TORCH = "2.13.0"
# The oldest and the newest supported release, which CI also tests (compat sessions).
OTHER_TORCH = {"2.11": "2.11.0", "2.15": "2.15.0"}
# numpy: torch warns on first use without it, as every user environment has it.
NUMPY = "numpy==2.4.6"
TORCH = [f"torch=={DEFAULT_TORCH}", NUMPY]
# cuBLAS's headers and library for the gpu backend's build (the CUDA toolkit
# here has none), from the wheel its package depends on at run time: the
# release torch 2.11's CUDA build takes (the GPU machines' torch). CUDA builds
# of torch pin their own, so the compat sessions take theirs.
CUBLAS = "nvidia-cublas==13.1.0.3"
HATCHLING = "hatchling==1.33.0"
BUILD_TOOLS = [HATCHLING, CUBLAS]
TEST_TOOLS = ["pytest==9.0.3", "expecttest==0.3.0"]
DOCS_TOOLS = ["sphinx==9.0.4", "myst-parser==5.2.0"]
# Device name -> package folder.
BACKENDS = {"fake": "torch-backend-fake", "npu": "torch-backend-npu", "gpu": "torch-backend-cuda"}

nox.options.reuse_venv = "yes"

nox.options.sessions = ["lint", "tests-fake"]
WHEEL_PACKAGES = ("torch-backend-core", *BACKENDS.values())


def system_deps(session: nox.Session) -> None:
    """cmake, ninja, ccache and GoogleTest from Debian, installed when missing."""
    session.run("bash", str(ROOT / "ci" / "install-system-deps.sh"), external=True)


def install_packages(session: nox.Session, *folders: str, editable: bool = True) -> None:
    session.install(*TORCH, *BUILD_TOOLS)
    # Core first: backends build with the hatch plugin core installs, as they would outside this repo.
    for group in (["torch-backend-core"], folders):
        args = []
        for folder in group:
            args += ["-e", str(PACKAGES / folder)] if editable else [str(PACKAGES / folder)]
        if args:
            session.install("--no-build-isolation", *args)


def run_cpp_tests(session: nox.Session) -> None:
    """GoogleTest suite of core, built against core's installed CMake package."""
    core = session.run("python", "-c", "import torch_backend; print(torch_backend.cmake_prefix_path)", silent=True)
    build = ROOT / "build" / "cpp-tests"
    session.run(
        "cmake", "-S", str(PACKAGES / "torch-backend-core" / "tests" / "cpp"), "-B", str(build), "-G", "Ninja",
        f"-DTorchBackendCore_DIR={core.strip()}/share/cmake/TorchBackendCore", external=True,
    )  # fmt: skip
    session.run("cmake", "--build", str(build), external=True)
    session.run("ctest", "--test-dir", str(build), "--output-on-failure", external=True)


def make_tests_session(backend: str) -> None:
    @nox.session(name=f"tests-{backend}", tags=["ci", "tests"])
    def tests(session: nox.Session) -> None:
        system_deps(session)
        install_packages(session, *BACKENDS.values())
        session.install(*TEST_TOOLS)
        run_cpp_tests(session)
        package_tests = PACKAGES / BACKENDS[backend] / "tests"
        paths = [str(p) for p in (package_tests, ROOT / "tests") if p.is_dir()]
        kernel_tests = package_tests / "test_kernels.py"
        env = {"TORCH_BACKEND": backend}
        session.run("pytest", *paths, "--ignore", str(kernel_tests), *session.posargs, env=env)
        run_conformance_kit(session, backend, env)
        if backend == "fake":
            # Again with fake's device kernels on and its memory discrete (host
            # code may not address it): the paths npu and gpu take (device kernels
            # through core's kernel layer, copy fallback for the rest, staged
            # copies, pinned collectives).
            discrete = env | {
                "TORCH_BACKEND_FAKE_DISCRETE": "1",
                "TORCH_BACKEND_FAKE_KERNELS": "1",
                "TORCH_BACKEND_EXIT_RUNS": "12",
            }
            session.run("pytest", str(package_tests), *session.posargs, env=discrete)
            run_conformance_kit(session, backend, discrete)
            # In this session's venv rather than the opinfo session's: one
            # torch install and one build fewer in CI.
            run_opinfo_sweeps(session)
        # Benchmarks are never timed tests: CI only checks that they run.
        session.run(
            "python", "-m", "torch_backend.bench", "--quick", "--json", str(ROOT / "build" / "bench-smoke.json"),
            env={"TORCH_BACKEND": backend},
        )  # fmt: skip
        session.run("python", "-m", "torch_backend.bench.allreduce", "--quick", env={"TORCH_BACKEND": backend})
        for quick in ("separate", "compile"):
            session.run(
                "python", "-m", f"torch_backend.bench.{quick}", "--quick",
                "--json", str(ROOT / "build" / f"bench-{quick}-smoke.json"), env={"TORCH_BACKEND": backend},
            )  # fmt: skip
        # The benchmark against another device (gpu vs cuda on the GPU machines), here fake vs the CPU.
        session.run(
            "python", "-m", "torch_backend.bench.reference", "--quick", "--reference", "cpu",
            "--json", str(ROOT / "build" / "bench-reference-smoke.json"), env={"TORCH_BACKEND": backend},
        )  # fmt: skip


def run_conformance_kit(session: nox.Session, backend: str, env: dict[str, str]) -> None:
    """Core's conformance kit against the backend, with the known failures its package keeps (else core's list)."""
    known = PACKAGES / BACKENDS[backend] / "tests" / "known_failures.json"
    args = ["--known-failures", str(known)] if known.is_file() else []
    # A `-k` filter may select nothing of the kit (pytest's status 5): fine then, not otherwise.
    codes = [0, 5] if session.posargs else [0]
    session.run(
        "python", "-m", "torch_backend.testing", backend, *args, *session.posargs, env=env, success_codes=codes
    )  # fmt: skip


make_tests_session("fake")


# With `-j 2`, after tests-fake (alone) the sessions below start in the order
# they are defined here: the longest first, so the two workers finish together.


@nox.session(tags=["ci"], allow_parallel=True)
@nox.parametrize("torch", list(OTHER_TORCH))
def compat(session: nox.Session, torch: str) -> None:
    """On another supported torch release: wheels built against it, their check, and fake's suite on them."""
    torch_version = OTHER_TORCH[torch]
    system_deps(session)
    session.install(f"torch=={torch_version}", NUMPY, HATCHLING, *TEST_TOOLS)
    dist = build_wheels(session, torch_version)
    # The suite runs on the installed wheels (no editable sources on sys.path).
    session.install("--no-deps", "--force-reinstall", *map(str, dist.glob("*.whl")))
    tests = PACKAGES / BACKENDS["fake"] / "tests"
    # The exit stress test at a fifth of its counts: it ran in full on the default torch.
    env = {"TORCH_BACKEND": "fake", "TORCH_BACKEND_EXIT_RUNS": "12"}
    session.run(
        "pytest", str(tests), str(ROOT / "tests"), "--ignore", str(tests / "test_kernels.py"), *session.posargs, env=env
    )  # fmt: skip
    # The kit as the core wheel ships it.
    run_conformance_kit(session, "fake", env)
    check_wheels(session, dist, torch_version)


@nox.session(tags=["ci"], allow_parallel=True)
def wheels(session: nox.Session) -> None:
    """Build platform wheels, install them in a fresh venv with torch, and use them away from the source tree;
    there `python -m torch_backend new` writes a backend, which builds, installs and passes the conformance kit."""
    system_deps(session)
    session.install(*TORCH, *BUILD_TOOLS)
    check_wheels(session, build_wheels(session, DEFAULT_TORCH), DEFAULT_TORCH, CUBLAS, kit=True)


@nox.session(name="tests-gpu", tags=["ci", "tests"], allow_parallel=True)
def tests_gpu(session: nox.Session) -> None:
    """gpu without a GPU: its CUDA kernels compiled with nvcc against cuBLAS, its GPU tests (which skip,
    saying why), and its portable kernels compiled for the host and run through core's checks."""
    system_deps(session)
    session.install(*TORCH, *BUILD_TOOLS, *TEST_TOOLS)
    session.install("--no-build-isolation", "-e", str(PACKAGES / "torch-backend-core"))
    gpu = PACKAGES / BACKENDS["gpu"]
    session.install("--no-build-isolation", "-e", str(gpu))
    library = gpu / "src" / "torch_backend_cuda" / "lib" / "libtorch_backend_cuda.so"
    if not library.is_file():
        session.error(f"the CUDA kernels were not built ({library} missing): is the CUDA toolkit installed?")
    session.run("pytest", str(gpu / "tests"), "-rs", *session.posargs)


def build_acl_emulator(session: nox.Session) -> Path:
    """The npu package's ACL emulator, installed in CANN's layout (include/, lib64/); returns that toolkit home."""
    build = ROOT / "build" / "acl-emulator"
    home = build / "ascend-toolkit" / "latest"
    torch_root = session.run("python", "-c", "import os, torch; print(os.path.dirname(torch.__file__))", silent=True)
    session.run(
        "cmake", "-S", str(PACKAGES / "torch-backend-npu" / "emulator"), "-B", str(build / "cmake"), "-G", "Ninja",
        f"-DCMAKE_INSTALL_PREFIX={home}", f"-DTORCH_ROOT={torch_root.strip()}", external=True,
    )  # fmt: skip
    session.run("cmake", "--build", str(build / "cmake"), "--target", "install", external=True)
    return home


@nox.session(name="tests-npu", tags=["ci", "tests"], allow_parallel=True)
def tests_npu(session: nox.Session) -> None:
    """npu over the ACL emulator (no Ascend hardware here): its own tests, core's kit, the OpInfo sweep.

    The package builds as against a real CANN installation: ASCEND_TOOLKIT_HOME
    points at the emulator's toolkit layout, and every ACL and aclnn symbol
    must resolve there at link time. It runs as with CANN's set_env.sh sourced.
    """
    system_deps(session)
    session.install(*TORCH, HATCHLING, *TEST_TOOLS)
    session.install("--no-build-isolation", "-e", str(PACKAGES / "torch-backend-core"))
    home = str(build_acl_emulator(session))
    npu = PACKAGES / BACKENDS["npu"]
    session.install("--no-build-isolation", "-e", str(npu), env={"ASCEND_TOOLKIT_HOME": home})
    env = {"TORCH_BACKEND": "npu", "ASCEND_HOME_PATH": home}
    session.run("pytest", str(npu / "tests"), *session.posargs, env=env)
    run_conformance_kit(session, "npu", env)
    session.run("python", "-m", "torch_backend.testing.opinfo", "--known", env=env)


@nox.session(tags=["ci"], allow_parallel=True)
def lint(session: nox.Session) -> None:
    """The pre-commit hooks (ruff, ruff-format, clang-format) over every file."""
    session.install("pre-commit==4.7.0")
    session.run("pre-commit", "run", "--all-files", "--show-diff-on-failure")


@nox.session(tags=["ci"], allow_parallel=True)
def docs(session: nox.Session) -> None:
    """The documentation site (Sphinx, MyST Markdown), warnings as errors, into build/docs."""
    session.install(*TORCH, *DOCS_TOOLS)
    out = ROOT / "build" / "docs"
    session.run("sphinx-build", "-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs"), str(out))
    session.log(f"open {out / 'index.html'}")


@nox.session
def demo(session: nox.Session) -> None:
    """Train a small model on the best available device (fake here) and print losses."""
    system_deps(session)
    install_packages(session, "torch-backend-fake")
    session.run("python", str(ROOT / "examples" / "demo_train.py"))


def run_opinfo_sweeps(session: nox.Session, *args: str) -> None:
    sweep = ["python", "-m", "torch_backend.testing.opinfo"]
    known = ["--known"]  # core's list: fake fails only what no backend passes on core's fallback
    session.run(*sweep, *known, *args, env={"TORCH_BACKEND": "fake"})
    # Again with fake's device kernels on: the kernel layer must keep every sample equal to CPU.
    session.run(*sweep, *known, *args, env={"TORCH_BACKEND": "fake", "TORCH_BACKEND_FAKE_KERNELS": "1"})


@nox.session
def opinfo(session: nox.Session) -> None:
    """OpInfo sweep on fake vs CPU, with and without fake's device kernels: >= 99% equal, failures as core lists.

    CI runs the sweeps at the end of tests-fake; this session runs them alone (`-- ARGS` pass through).
    """
    system_deps(session)
    install_packages(session, *BACKENDS.values())
    session.install(*TEST_TOOLS)
    run_opinfo_sweeps(session, *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Device-vs-CPU benchmarks, measured side by side (`-- --device NAME --json PATH` pass through)."""
    system_deps(session)
    install_packages(session, *BACKENDS.values())
    session.install("matplotlib==3.11.2")
    session.run("python", "-m", "torch_backend.bench", *session.posargs)
    allreduce_json = ROOT / "docs" / "bench" / "allreduce.json"
    session.run("python", "-m", "torch_backend.bench.allreduce", "--json", str(allreduce_json))
    session.run(
        "python", "-m", "torch_backend.bench.separate", "--json", str(ROOT / "docs" / "bench" / "separate.json")
    )
    session.run("python", "-m", "torch_backend.bench.compile", "--json", str(ROOT / "docs" / "bench" / "compile.json"))


def build_wheels(session: nox.Session, torch_version: str) -> Path:
    """Platform wheels of every package, built against the session's torch, in their own folder."""
    dist = ROOT / "build" / f"wheelhouse-torch{torch_version}"
    session.run("rm", "-rf", str(dist), external=True)
    for folder in WHEEL_PACKAGES:
        session.run("pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(dist), str(PACKAGES / folder))
        if folder == "torch-backend-core":
            # Backends build against the installed core (else each stages its own).
            session.install("--no-deps", "--force-reinstall", *map(str, dist.glob("torch_backend_core-*.whl")))
    return dist


def check_wheels(session: nox.Session, dist: Path, torch_version: str, *extra: str, kit: bool = False) -> None:
    # hatchling too: the check builds a scaffolded backend outside the repo with core's build hook;
    # with `kit`, that backend runs the conformance kit in the fresh venv.
    session.run(
        "python", str(ROOT / "ci" / "check_wheels.py"), str(dist), f"torch=={torch_version}", NUMPY, HATCHLING, *extra,
        *(["--kit", *TEST_TOOLS] if kit else []),
    )  # fmt: skip
