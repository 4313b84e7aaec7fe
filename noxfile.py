"""Developer and CI sessions. Fresh machine: `pip install nox && nox -t ci -j 2` (tests), `nox -s demo`.

CI's layout (`nox -t ci -j 2`, two sessions at a time on CI's two cores):

- `build` makes one virtualenv with the default torch and editable installs of
  every package (npu against the ACL emulator, gpu's kernels by nvcc) and runs
  core's GoogleTest suite. The default-torch test sessions (tests-*, opinfo,
  exit-stress, bench-smoke) require it and run in that virtualenv: one build
  and one torch install for all of them, and each of them small enough that
  the two workers stay busy until the end.
- `compat`, `wheels`, `lint` and `docs` have virtualenvs of their own.
- ccache is shared by every session and every clone (CCACHE_BASEDIR is the
  repository, so its paths are relative to the build folder): a package built
  editable and as a wheel, or in another clone, compiles once per torch
  release and compiler flags. ccache keys objects by the preprocessed sources
  and the flags, so it never hands one torch's objects to another's build.

Sessions reuse their virtualenvs, so only the first run installs torch.
C++ packages are built with `--no-build-isolation` against the pinned torch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
PACKAGES = ROOT / "packages"
# The development torch: the only release with a CPU-only wheel here (190 MB);
# the registry's builds of the others bring ~3 GB of CUDA libraries per venv.
DEFAULT_TORCH = "2.13.0"
# The oldest and the newest supported release, which CI also tests (compat sessions).
OTHER_TORCH = {"2.11": "2.11.0", "2.15": "2.15.0"}
# torchvision for the kit's ResNet-18 test, where PyPI has the release built for that torch (its wheels
# are CUDA builds, loadable only beside a CUDA build of torch: not the default torch's CPU wheel).
TORCHVISION = {"2.11": ["torchvision==0.26.0", "pillow==12.0.0"]}
# numpy: torch warns on first use without it, as every user environment has it.
NUMPY = "numpy==2.4.6"
TORCH = [f"torch=={DEFAULT_TORCH}", NUMPY]
# cuBLAS's headers and library for the gpu backend's build (the CUDA toolkit
# here has none), from the wheel its package depends on at run time: the
# release torch 2.11's CUDA build takes (the GPU machines' torch). CUDA builds
# of torch pin their own, so the compat sessions take theirs.
CUBLAS = "nvidia-cublas==13.1.0.3"
# NCCL likewise (its wheel ships nccl.h), for the gpu backend's collectives.
NCCL = "nvidia-nccl-cu13==2.32.3"
# cuDNN likewise, for the gpu backend's convolutions: the release torch 2.11's CUDA build takes
# (a 470 MB install, as large as cuBLAS's).
CUDNN = "nvidia-cudnn-cu13==9.19.0.56"
# torch.compile's Triton kernels (fake's under Triton's interpreter, gpu's compiled): the release
# torch 2.13 requires (its CPU wheel does not bring it; the compat sessions' CUDA builds of
# torch bring theirs: 2.11 triton 3.6.0, 2.15 triton 3.9.0). A 170 MB download, 690 MB installed.
TRITON = "triton==3.7.1"
HATCHLING = "hatchling==1.33.0"
# Core's build needs nlohmann/json.hpp, which PyTorch's flight-recorder template includes and torch
# does not ship (a header-only package).
NLOHMANN_JSON = "nlohmann-json==3.12.0"
CORE_BUILD_TOOLS = [HATCHLING, NLOHMANN_JSON]
BUILD_TOOLS = [*CORE_BUILD_TOOLS, CUBLAS, NCCL, CUDNN]
TEST_TOOLS = ["pytest==9.0.3", "expecttest==0.3.0"]
# The kit's real-model test builds Hugging Face models from tiny configs (no weights downloaded).
MODELS = "transformers==5.24.0"
DOCS_TOOLS = ["sphinx==9.0.4", "myst-parser==5.2.0"]
# Device name -> package folder.
BACKENDS = {"fake": "torch-backend-fake", "npu": "torch-backend-npu", "gpu": "torch-backend-cuda"}
FAKE_TESTS = PACKAGES / BACKENDS["fake"] / "tests"
# fake with its device kernels on and its memory discrete (host code may not
# address it): the paths npu and gpu take (device kernels through core's kernel
# layer, copy fallback for the rest, staged copies, pinned collectives).
DISCRETE = {"TORCH_BACKEND_FAKE_DISCRETE": "1", "TORCH_BACKEND_FAKE_KERNELS": "1"}

nox.options.reuse_venv = "yes"

nox.options.sessions = ["lint", "tests-fake"]
WHEEL_PACKAGES = ("torch-backend-core", *BACKENDS.values())
# Compiler command lines name sources relative to the build folder, so ccache
# serves a package's second build (editable, wheel, another clone) from the first.
os.environ.setdefault("CCACHE_BASEDIR", str(ROOT))
# Core's libraries compiled as one unit each (its CMakeLists.txt): torch's headers parsed once per library.
os.environ.setdefault("TORCH_BACKEND_UNITY_BUILD", "1")


def system_deps(session: nox.Session) -> None:
    """cmake, ninja, ccache and GoogleTest from Debian, installed when missing."""
    session.run("bash", str(ROOT / "ci" / "install-system-deps.sh"), external=True)


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


# Where build_acl_emulator installs the emulator, in CANN's layout; tests-npu points ASCEND_HOME_PATH here.
ACL_HOME = ROOT / "build" / "acl-emulator" / "ascend-toolkit" / "latest"


def build_acl_emulator(session: nox.Session) -> Path:
    """The npu package's ACL emulator, installed in CANN's layout (include/, lib64/); returns that toolkit home."""
    build = ACL_HOME.parents[1]
    torch_root = session.run("python", "-c", "import os, torch; print(os.path.dirname(torch.__file__))", silent=True)
    session.run(
        "cmake", "-S", str(PACKAGES / "torch-backend-npu" / "emulator"), "-B", str(build / "cmake"), "-G", "Ninja",
        f"-DCMAKE_INSTALL_PREFIX={ACL_HOME}", f"-DTORCH_ROOT={torch_root.strip()}", external=True,
    )  # fmt: skip
    session.run("cmake", "--build", str(build / "cmake"), "--target", "install", external=True)
    return ACL_HOME


@nox.session(tags=["ci"], allow_parallel=True)
def build(session: nox.Session) -> None:
    """Every package installed editable against the default torch, in the virtualenv the test sessions use.

    npu builds as against a real CANN installation: ASCEND_TOOLKIT_HOME points at
    the ACL emulator's toolkit layout, and every ACL and aclnn symbol must resolve
    there at link time. gpu's kernels are compiled by nvcc against cuBLAS. Then
    core's GoogleTest suite.
    """
    system_deps(session)
    # gpu's kernels for the released architectures (its CMakeLists.txt's default), as in every CI session:
    # they include no torch, so ccache compiles them once per clone (nvcc's sm_80 and sm_90 are five minutes
    # of one core), here; the compat sessions build gpu's wheel after their kit, by when this compile is done.
    session.install(*TORCH, TRITON, *BUILD_TOOLS, *TEST_TOOLS, MODELS)
    # Core first: backends build with the hatch plugin core installs, as they would outside this repo.
    session.install("--no-build-isolation", "-e", str(PACKAGES / "torch-backend-core"))
    home = build_acl_emulator(session)
    backends = [arg for folder in BACKENDS.values() for arg in ("-e", str(PACKAGES / folder))]
    session.install("--no-build-isolation", *backends, env={"ASCEND_TOOLKIT_HOME": str(home)})
    library = PACKAGES / BACKENDS["gpu"] / "src" / "torch_backend_cuda" / "lib" / "libtorch_backend_cuda.so"
    if not library.is_file():
        session.error(f"the CUDA kernels were not built ({library} missing): is the CUDA toolkit installed?")
    run_cpp_tests(session)


def built_env_session(name: str, **kwargs: object) -> Callable:
    """A session that runs in `build`'s virtualenv (which it requires) instead of a virtualenv of its own.

    Its body gets `run(program, *args, env=...)`, which runs a program of that virtualenv.
    """
    bin_dir = ROOT / ".nox" / "build" / "bin"

    def decorate(body: Callable) -> None:
        @nox.session(name=name, venv_backend="none", requires=["build"], allow_parallel=True, **kwargs)
        def session_func(session: nox.Session) -> None:
            if not (bin_dir / "python").is_file():
                session.error(f"no virtualenv at {bin_dir.parent}: run `nox -s build` first")
            base = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(bin_dir.parent)}

            def run(program: str, *args: str, env: dict[str, str] | None = None, **options: object) -> object:
                return session.run(str(bin_dir / program), *args, env=base | (env or {}), external=True, **options)

            body(session, run)

        session_func.__doc__ = body.__doc__

    return decorate


#: The kit's tests that run a second time with expandable segments on (their allocator paths differ).
EXPANDABLE_KIT = {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}


#: The kit's tests that other sessions run in the same configuration: on fake in either memory mode the
#: exit-status test (exit-stress runs the same training exits, with status 0 and 3, 30 times in host memory
#: and 6 in discrete; the kit's fresh interpreters run them in the compat sessions and on npu); in host
#: memory and on npu the OpInfo subset (the opinfo session and tests-npu sweep every op there, against the
#: same known failures).
RUN_ELSEWHERE = {
    "host": "not test_training_process_exits_with_its_own_status and not test_op_matches_cpu",
    "discrete": "not test_training_process_exits_with_its_own_status",
    "npu": "not test_op_matches_cpu",
}


def run_conformance_kit(
    session: nox.Session,
    run: Callable,
    backend: str,
    env: dict[str, str],
    *,
    expandable: str | None = None,
    run_elsewhere: str | None = None,
) -> None:
    """Core's conformance kit against the backend, with core's known failures (all fake and npu need); then,
    where `expandable` names them (a `-k` expression), those tests again with expandable segments on.
    `run_elsewhere` (a `-k` expression) leaves out what another session runs in the same configuration."""
    # A `-k` filter may select nothing of the kit (pytest's status 5): fine then, not otherwise.
    codes = [0, 5] if session.posargs else [0]
    select = session.posargs or (["-k", run_elsewhere] if run_elsewhere else [])
    run("python", "-m", "torch_backend.testing", backend, *select, env=env, success_codes=codes)
    if expandable and not session.posargs:
        run(
            "python", "-m", "torch_backend.testing", backend, "-k", expandable,
            env={**env, **EXPANDABLE_KIT},
        )  # fmt: skip


def session_run(session: nox.Session) -> Callable:
    """`run` for sessions with a virtualenv of their own (the signature built_env_session bodies get)."""
    return lambda program, *args, **options: session.run(program, *args, **options)


# With `-j 2` the parallel sessions start in the order they are defined here
# once what they require has finished: the longest first, so that the two
# workers finish together (measured: compat 7-16 min each, exit-stress 11-13,
# tests-fake 6, wheels 6, tests-fake-discrete 4, tests-npu 3, the rest 2 or
# less). `build` (defined above) and the first compat start at once.


@nox.session(tags=["ci"], allow_parallel=True)
@nox.parametrize("torch", list(OTHER_TORCH))
def compat(session: nox.Session, torch: str) -> None:
    """On another supported torch release: every wheel built against it, the kit on fake, the cross-package
    tests (CUDA coexistence needs this CUDA build of torch) on those wheels, fake's Triton compile tests
    (this torch's Inductor and Triton), and the wheel check.

    fake's other tests run on the default torch only (tests-fake, tests-fake-discrete).
    """
    torch_version = OTHER_TORCH[torch]
    # The exact release asked for, whatever cap the machine's pip configuration
    # sets on torch (this one is CI's to choose; the default torch is local).
    session.env["PIP_CONSTRAINT"] = os.devnull
    system_deps(session)
    session.install(f"torch=={torch_version}", NUMPY, *CORE_BUILD_TOOLS, *TEST_TOOLS, *TORCHVISION.get(torch, []))
    # gpu's wheel last, after the kit: its kernels (the released architectures, nvcc's five minutes of one
    # core) include no torch, and by then ccache holds `build`'s compile of them. Built with the others, the
    # first compat session compiled them at the same time as `build` (a race ccache cannot see).
    dist = build_wheels(session, torch_version, [name for name in WHEEL_PACKAGES if name != BACKENDS["gpu"]])
    # The tests run on the installed wheels (no editable sources on sys.path).
    session.install("--no-deps", "--force-reinstall", *map(str, dist.glob("*.whl")))
    # The kit as the core wheel ships it.
    run_conformance_kit(session, session_run(session), "fake", {"TORCH_BACKEND": "fake"})
    build_wheels(session, torch_version, [BACKENDS["gpu"]], fresh=False)
    session.install("--no-deps", "--force-reinstall", *map(str, dist.glob("torch_backend_cuda-*.whl")))
    if torch in TORCHVISION:  # torchvision's ResNet-18 on fake's kernels in discrete memory
        session.run(
            "python",
            "-m",
            "torch_backend.testing",
            "fake",
            "-q",
            "-k",
            "torchvision",
            env={"TORCH_BACKEND": "fake", **DISCRETE},
        )
    codes = [0, 5] if session.posargs else [0]  # a `-k` filter may select none of tests/
    session.run("pytest", str(ROOT / "tests"), *session.posargs, env={"TORCH_BACKEND": "fake"}, success_codes=codes)
    # This torch's Inductor and Triton with fake's Triton backend, in host memory: its registration, a small
    # compiled function run beside an active vendor driver, the C++ wrapper refused. The three-model training,
    # the cubin compile, discrete memory and the cache isolation (core's own key) run on the default torch only.
    triton = [
        str(FAKE_TESTS / "test_compile_triton.py"),
        "-k",
        "not cached and not discrete and not training and not cubins",
    ]
    session.run("pytest", *triton, *session.posargs, env={"TORCH_BACKEND": "fake"}, success_codes=codes)
    # In this session's venv, which holds the wheels: the `wheels` session checks a fresh one.
    check_wheels(session, dist, torch_version, installed=True)


@built_env_session("exit-stress", tags=["ci", "tests"])
def exit_stress(session: nox.Session, run: Callable) -> None:
    """The process-exit stress test (fake/tests/test_process_exit.py) in both of fake's memory modes.

    Every exit status is asserted; the runs are forked from the kit's fork server (the kit's own exit-status
    test starts fresh interpreters, in the compat sessions and on npu). In host memory the training exit runs 30 times
    (a 10% failure rate shows with 95% probability, 0.9**30 < 0.05; the test's own default, 60, catches 5%:
    set TORCH_BACKEND_EXIT_RUNS=60 for that); in discrete memory at a fifth of it.
    """
    runs = int(os.environ.get("TORCH_BACKEND_EXIT_RUNS", "30"))
    test = str(FAKE_TESTS / "test_process_exit.py")
    run("pytest", test, *session.posargs, env={"TORCH_BACKEND": "fake", "TORCH_BACKEND_EXIT_RUNS": str(runs)})
    discrete = {"TORCH_BACKEND": "fake", **DISCRETE, "TORCH_BACKEND_EXIT_RUNS": str(max(3, runs // 5))}
    run("pytest", test, *session.posargs, env=discrete)


@built_env_session("tests-fake", tags=["ci", "tests"])
def tests_fake(session: nox.Session, run: Callable) -> None:
    """fake's own tests, the cross-package tests and the conformance kit, fake's memory host-addressable.

    `-- <pytest args>` pass through to both. The exit stress test has its own session (exit-stress); the kit
    leaves out what exit-stress and opinfo run in this configuration (RUN_ELSEWHERE).
    """
    env = {"TORCH_BACKEND": "fake"}
    run(
        "pytest", str(FAKE_TESTS), str(ROOT / "tests"),
        "--ignore", str(FAKE_TESTS / "test_kernels.py"), "--ignore", str(FAKE_TESTS / "test_kernels_elementwise.py"),
        "--ignore", str(FAKE_TESTS / "test_process_exit.py"),
        *session.posargs, env=env,
    )  # fmt: skip
    run_conformance_kit(
        session, run, "fake", env, expandable="test_memory or test_mutation", run_elsewhere=RUN_ELSEWHERE["host"]
    )


@nox.session(tags=["ci"], allow_parallel=True)
def wheels(session: nox.Session) -> None:
    """Build platform wheels, install them in a fresh venv with torch, and use them away from the source tree;
    there `python -m torch_backend new` writes a backend, which builds, installs and passes the conformance kit."""
    system_deps(session)
    session.install(*TORCH, *BUILD_TOOLS)
    check_wheels(session, build_wheels(session, DEFAULT_TORCH), DEFAULT_TORCH, CUBLAS, NCCL, CUDNN, kit=True)


@built_env_session("tests-fake-discrete", tags=["ci", "tests"])
def tests_fake_discrete(session: nox.Session, run: Callable) -> None:
    """fake's own tests (its kernel tests included) and the kit with fake's device kernels on and its memory
    discrete: the paths npu and gpu take. `-- <pytest args>` pass through to both."""
    env = {"TORCH_BACKEND": "fake", **DISCRETE}
    once = [
        arg for name in ("test_process_exit.py", "test_examples.py") for arg in ("--ignore", str(FAKE_TESTS / name))
    ]
    run("pytest", str(FAKE_TESTS), *once, *session.posargs, env=env)
    run_conformance_kit(session, run, "fake", env, expandable="test_memory", run_elsewhere=RUN_ELSEWHERE["discrete"])


@built_env_session("tests-npu", tags=["ci", "tests"])
def tests_npu(session: nox.Session, run: Callable) -> None:
    """npu over the ACL emulator (no Ascend hardware here): its own tests, core's kit, the OpInfo sweep.

    npu was built against the emulator's toolkit (`build`); it runs as with CANN's set_env.sh sourced.
    """
    env = {"TORCH_BACKEND": "npu", "ASCEND_HOME_PATH": str(ACL_HOME)}
    run("pytest", str(PACKAGES / BACKENDS["npu"] / "tests"), *session.posargs, env=env)
    run_conformance_kit(session, run, "npu", env, expandable="test_memory", run_elsewhere=RUN_ELSEWHERE["npu"])
    run("python", "-m", "torch_backend.testing.opinfo", "--known", env=env)  # core's list is all npu needs


@built_env_session("bench-smoke", tags=["ci"])
def bench_smoke(session: nox.Session, run: Callable) -> None:
    """Every benchmark in its quick mode on fake: benchmarks are never timed tests, CI checks that they run."""
    env = {"TORCH_BACKEND": "fake"}
    out = ROOT / "build"
    run("python", "-m", "torch_backend.bench", "--quick", "--json", str(out / "bench-smoke.json"), env=env)
    run("python", "-m", "torch_backend.bench.allreduce", "--quick", env=env)
    run("python", "-m", "torch_backend.bench.fragmentation", "--limit-mib", "320", env=env)
    for quick in ("separate", "compile"):
        json_out = str(out / f"bench-{quick}-smoke.json")
        run("python", "-m", f"torch_backend.bench.{quick}", "--quick", "--json", json_out, env=env)
    # Replayed graphs against eager steps: on fake's device kernels (the CPU fallback cannot be captured).
    graphs_json = str(out / "bench-graphs-smoke.json")
    run("python", "-m", "torch_backend.bench.graphs", "--quick", "--json", graphs_json,
        env={**env, "TORCH_BACKEND_FAKE_KERNELS": "1"})  # fmt: skip
    # The benchmark against another device (gpu vs cuda on the GPU machines), here fake vs the CPU.
    run(
        "python", "-m", "torch_backend.bench.reference", "--quick", "--reference", "cpu",
        "--json", str(out / "bench-reference-smoke.json"), env=env,
    )  # fmt: skip


@built_env_session("opinfo", tags=["ci", "tests"])
def opinfo(session: nox.Session, run: Callable) -> None:
    """PyTorch's OpInfo database on fake vs CPU (`-- ARGS` pass through), through core's fallback, then with
    fake's device kernels on: >= 99% of samples equal, failures exactly as core lists (no backend passes them
    on core's fallback); the kernel layer must keep every sample equal to CPU. Half a minute each."""
    for kernels in ({}, {"TORCH_BACKEND_FAKE_KERNELS": "1"}):
        run(
            "python",
            "-m",
            "torch_backend.testing.opinfo",
            "--known",
            *session.posargs,
            env={"TORCH_BACKEND": "fake", **kernels},
        )


@built_env_session("tests-gpu", tags=["ci", "tests"])
def tests_gpu(session: nox.Session, run: Callable) -> None:
    """gpu without a GPU: its CUDA kernels compiled with nvcc against cuBLAS (`build`), its GPU tests (which
    skip, saying why), and its portable kernels compiled for the host and run through core's checks."""
    run("pytest", str(PACKAGES / BACKENDS["gpu"] / "tests"), "-rs", *session.posargs)


@nox.session(tags=["ci"], allow_parallel=True)
def docs(session: nox.Session) -> None:
    """The documentation site (Sphinx, MyST Markdown), warnings as errors, into build/docs."""
    session.install(*TORCH, *DOCS_TOOLS)
    out = ROOT / "build" / "docs"
    session.run("sphinx-build", "-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs"), str(out))
    session.log(f"open {out / 'index.html'}")


@nox.session(tags=["ci"], allow_parallel=True)
def lint(session: nox.Session) -> None:
    """The pre-commit hooks (ruff, ruff-format, clang-format) over every file."""
    session.install("pre-commit==4.7.0")
    session.run("pre-commit", "run", "--all-files", "--show-diff-on-failure")


@nox.session
def demo(session: nox.Session) -> None:
    """Train a small model on the best available device (fake here) and print losses (core and fake only)."""
    system_deps(session)
    session.install(*TORCH, *CORE_BUILD_TOOLS)
    for folder in ("torch-backend-core", BACKENDS["fake"]):
        session.install("--no-build-isolation", "-e", str(PACKAGES / folder))
    session.run("python", str(ROOT / "examples" / "demo_train.py"))


@built_env_session("bench")
def bench(session: nox.Session, run: Callable) -> None:
    """Device-vs-CPU benchmarks, measured side by side (`-- --device NAME --json PATH` pass through)."""
    run("python", "-m", "pip", "install", "matplotlib==3.11.2")
    run("python", "-m", "torch_backend.bench", *session.posargs)
    bench_dir = ROOT / "docs" / "bench"
    run("python", "-m", "torch_backend.bench.allreduce", "--json", str(bench_dir / "allreduce.json"))
    run("python", "-m", "torch_backend.bench.separate", "--json", str(bench_dir / "separate.json"))
    run("python", "-m", "torch_backend.bench.compile", "--json", str(bench_dir / "compile.json"))


#: What the lent GPU machines run (docs/compatibility.md): torch 2.11.0's CUDA 13.0 build on Python 3.12, an
#: H100 or H200 (sm_90). They reach no registry, and one call carries 64 MiB at most.
GPU_MACHINE = {"python": "3.12", "torch": OTHER_TORCH["2.11"], "archs": "90"}
GPU_WHEELS = ROOT / "build" / "gpu-wheels"


def interpreter(version: str) -> str:
    """Python `version` for a session: pyenv's own where it has one (its shims serve only the versions
    `pyenv global` names, so `python3.12` on PATH may refuse to run), else the version for nox to find."""
    found = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))
    return str(found[-1]) if found else version


@nox.session(name="gpu-wheels", python=interpreter(GPU_MACHINE["python"]))
def gpu_wheels(session: nox.Session) -> None:
    """The wheels a lent GPU machine installs, built here against its torch and Python: core, cuda (its
    kernels for sm_90 only) and fake, and expecttest (the kit's requirement the machine lacks), into
    build/gpu-wheels. Then, through the device tool with `carry` ["build/gpu-wheels"]:
    `GPU_CHECKS_WHEELS=build/gpu-wheels GPU_CHECKS_TAR=$OUT/r.tgz bash packages/torch-backend-cuda/gpu_checks.sh
    --pending /tmp/r`."""
    session.env["PIP_CONSTRAINT"] = os.devnull  # the exact torch asked for, as in compat
    system_deps(session)
    session.install(f"torch=={GPU_MACHINE['torch']}", NUMPY, *CORE_BUILD_TOOLS)
    packages = ["torch-backend-core", BACKENDS["gpu"], BACKENDS["fake"]]
    build_wheels(session, GPU_MACHINE["torch"], packages, dist=GPU_WHEELS, env={"CUDAARCHS": GPU_MACHINE["archs"]})
    # The compat sessions' wheel check, in this venv: the cuda wheel's device library, RUNPATHs and
    # dependencies, the torch pins, and the wheels used away from the source tree.
    session.install("--no-deps", "--force-reinstall", *map(str, GPU_WHEELS.glob("*.whl")))
    check_wheels(session, GPU_WHEELS, GPU_MACHINE["torch"], installed=True)
    session.run("pip", "wheel", "--no-deps", "-w", str(GPU_WHEELS), "expecttest==0.3.0")
    size = sum(wheel.stat().st_size for wheel in GPU_WHEELS.glob("*.whl"))
    if size > 60 * 2**20:
        session.error(f"{GPU_WHEELS} holds {size / 2**20:.0f} MiB of wheels: a device call carries 64 MiB")
    session.log(f"{GPU_WHEELS}: {size / 2**20:.1f} MiB of wheels for torch {GPU_MACHINE['torch']} on Python 3.12")


def build_wheels(
    session: nox.Session,
    torch_version: str,
    packages: Sequence[str] = WHEEL_PACKAGES,
    *,
    fresh: bool = True,
    dist: Path | None = None,
    env: dict[str, str] | None = None,
) -> Path:
    """Platform wheels of `packages` (core first, if there), built against the session's torch, in their own
    folder (`dist`, default build/wheelhouse-torchX): emptied first if `fresh`, else added to."""
    dist = dist or ROOT / "build" / f"wheelhouse-torch{torch_version}"
    if fresh:
        session.run("rm", "-rf", str(dist), external=True)
    for folder in packages:
        wheel = ["pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(dist), str(PACKAGES / folder)]
        session.run(*wheel, env=env)
        if folder == "torch-backend-core":
            # Backends build against the installed core (else each stages its own).
            session.install("--no-deps", "--force-reinstall", *map(str, dist.glob("torch_backend_core-*.whl")))
    return dist


def check_wheels(
    session: nox.Session, dist: Path, torch_version: str, *extra: str, kit: bool = False, installed: bool = False
) -> None:
    # hatchling too: the check builds a scaffolded backend outside the repo with core's build hook;
    # with `kit`, that backend runs the conformance kit in the fresh venv. `installed`: the session's venv
    # holds the wheels (and this torch): checked there instead of a fresh venv.
    where = ["--installed-in", str(Path(session.virtualenv.location) / "bin" / "python")] if installed else []
    session.run(
        "python", str(ROOT / "ci" / "check_wheels.py"), str(dist), f"torch=={torch_version}", NUMPY, HATCHLING, *extra,
        *where, *(["--kit", *TEST_TOOLS] if kit else []),
    )  # fmt: skip
