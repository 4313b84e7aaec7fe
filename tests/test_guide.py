"""What the docs state about the interface, checked against the code: the guide's device symbols (those
`DeviceRuntime.h` declares), its scaffold files and snippets, the architecture's exported symbols, the npu
README's line counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "packages" / "torch-backend-core" / "include" / "torch_backend" / "DeviceRuntime.h"
GUIDE = ROOT / "docs" / "writing-a-backend.md"


def header_methods() -> tuple[set[str], set[str]]:
    """(required, optional) virtual methods of DeviceRuntime, destructor aside."""
    body = HEADER.read_text().split("class TORCH_BACKEND_API DeviceRuntime", 1)[1].split("\n};", 1)[0]
    body = re.sub(r"//[^\n]*", "", body)
    required, optional = set(), set()
    for declaration in re.findall(r"virtual\s+[^;]*;", body):
        name = re.search(r"(~?\w+)\s*\(", declaration).group(1)
        if name.startswith("~"):
            continue
        (required if re.search(r"\)\s*=\s*0\s*;$", declaration) else optional).add(name)
    return required, optional


def guide_methods() -> tuple[set[str], set[str]]:
    """The names under the guide's `// required` and `// optional` comments."""
    block = GUIDE.read_text().split("class MyRuntime final", 1)[1].split("};", 1)[0]
    lists: dict[str, set[str]] = {"required": set(), "optional": set()}
    current = None
    for line in block.splitlines():
        text = line.strip().removeprefix("//").strip()
        heading = re.match(r"(required|optional)\b", text)
        if heading:
            current = heading.group(1)
            continue
        if current is not None:
            text = text.split(":", 1)[-1]
            lists[current] |= {name for name in re.findall(r"\w+", text)}
    return lists["required"], lists["optional"]


def test_header_parses_to_the_known_core_of_the_interface():
    required, optional = header_methods()
    assert {"malloc", "memcpy_async", "event_elapsed_time", "is_out_of_memory"} <= required
    assert {"stream_sleep", "capabilities"} <= optional
    assert not required & optional


def test_guide_lists_every_method_of_the_header_and_no_other():
    assert guide_methods() == header_methods()


NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def guide_block(after: str, language: str) -> str:
    """The first ```language block after the heading ``after`` in the guide."""
    text = GUIDE.read_text().split(after, 1)[1]
    return text.split(f"```{language}\n", 1)[1].split("\n```", 1)[0] + "\n"


def test_guide_shows_the_scaffolds_files_as_it_writes_them():
    # The guide's build files are the scaffold's for `mydev`, which CI builds and runs the kit on (wheels
    # session): a snippet copied from the guide builds.
    from torch_backend._scaffold import files

    written = files("mydev")
    listed = GUIDE.read_text().split("<!-- scaffold-files-start -->", 1)[1].split("<!-- scaffold-files-end -->")[0]
    assert re.findall(r"`([^`]+)`", listed) == sorted(written)
    assert guide_block("## 2. `CMakeLists.txt`", "cmake") == written["CMakeLists.txt"]
    assert guide_block("## 3. `pyproject.toml`", "toml") == written["pyproject.toml"]
    assert guide_block("## 3. `pyproject.toml`", "python") == written["src/torch_backend_mydev/__init__.py"]
    assert f"writes {NUMBER_WORDS[len(written)]} files" in GUIDE.read_text().replace("\n", " ")


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def test_architecture_lists_every_symbol_a_device_library_can_export():
    include = HEADER.parent
    exported = set()
    for header in include.glob("*.h"):
        exported |= set(re.findall(r'extern "C" TORCH_BACKEND_EXPORT[^(]*?\b(torch_backend_\w+)\(', header.read_text()))
    table = ARCHITECTURE.read_text().split("A device library exports", 1)[1].split("\n\n", 2)[1]
    assert set(re.findall(r"`(torch_backend_\w+)`", table)) == exported
    assert f"A device library exports up to {NUMBER_WORDS[len(exported)]} symbols" in ARCHITECTURE.read_text()


NPU = ROOT / "packages" / "torch-backend-npu"


def test_npu_readme_line_counts_are_the_files():
    rows = re.findall(r"^\| `(csrc/\w+\.(?:cpp|h)|src/[\w/]+\.py)` \| (\d+) \|", (NPU / "README.md").read_text(), re.M)
    assert len(rows) >= 4
    for path, lines in rows:
        assert int(lines) == len((NPU / path).read_text().splitlines()), f"{path}: README says {lines} lines"


DEVELOPMENT = ROOT / "docs" / "development.md"


def test_development_docs_list_every_nox_session_and_no_other():
    import shutil
    import subprocess

    nox = shutil.which("nox")
    if nox is None:
        pytest.skip("nox is not installed in this environment (CI's sessions run from the nox that `.ci/run` installs)")
    listing = subprocess.run([nox, "-l"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout
    listed = listing.split("Sessions defined in", 1)[1]  # after the noxfile's docstring
    sessions = {line.split()[1] for line in listed.splitlines() if re.match(r"[*-] \S", line)}
    table = DEVELOPMENT.read_text().split("## Developer sessions", 1)[1].split("\n\n", 2)[1]
    documented = set(re.findall(r'^\| `nox -s "?([^`"]+)"?` \|', table, re.M))
    assert documented | {"compat(torch='2.15')"} == sessions, "docs/development.md's sessions table"


USER_GUIDE = ROOT / "docs" / "user-guide.md"
# Settings the kit's own processes pass to each other (runner -> pytest, test -> rank, test -> script): not
# for users, so not in the guide's table.
KIT_INTERNAL_VARIABLES = {"TORCH_BACKEND_KNOWN_FAILURES", "TORCH_BACKEND_TEST_DIST_BACKEND", "TORCH_BACKEND_EXIT_RUNS"}
SETTING = re.compile(r"""["'](TORCH_BACKEND(?:_[A-Z0-9]+)*|PYTORCH_ALLOC_CONF|TORCH_(?:FR|NCCL)(?:_[A-Z0-9]+)+)["']""")
# PyTorch's flight-recorder settings that torch's own code reads for core's recorder (the template in
# c10d/FlightRecorder.hpp, its DebugInfoWriter, its stack-trace switch): in the guide, not in our sources.
READ_FOR_US_BY_TORCH = {"TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE", "TORCH_INCLUDE_STACK_TRACE"}


def variables_read(paths: list[Path]) -> set[str]:
    return {name for path in paths for name in SETTING.findall(path.read_text())}


def product_sources() -> list[Path]:
    """Every source of the packages that users run: Python, C++ and CUDA, the test kit and tests aside."""
    suffixes = {".py", ".cpp", ".h", ".cu", ".cuh"}
    return [
        path
        for path in (ROOT / "packages").rglob("*")
        if path.suffix in suffixes and not {"tests", "testing"} & set(path.relative_to(ROOT).parts)
    ]


def documented_variables() -> set[str]:
    """First column of the user guide's environment table; "`X_RTOL`, `_ATOL`" names X_RTOL and X_ATOL."""
    table = USER_GUIDE.read_text().split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in re.findall(r"^\| (`[^|]+) \|", table, re.M):
        first = None
        for name in re.findall(r"`(\w+)`", row):
            if name.startswith("_") and first is not None:
                name = first.rsplit("_", 1)[0] + name
            first = first or name
            names.add(name)
    return names


def test_user_guide_lists_every_setting_the_packages_read_and_no_other():
    read = variables_read(product_sources()) | READ_FOR_US_BY_TORCH
    assert {"TORCH_BACKEND", "TORCH_BACKEND_FAKE_KERNELS", "TORCH_BACKEND_FALLBACK"} <= read  # the scan works
    documented = documented_variables()
    assert read - documented == set(), "read by the packages but missing from docs/user-guide.md's table"
    assert documented - read == set(), "in docs/user-guide.md's table but read by no package"


def test_the_kits_settings_are_documented_or_internal():
    kit = [p for p in (ROOT / "packages").rglob("*.py") if "testing" in p.relative_to(ROOT).parts]
    tests = [p for p in (ROOT / "packages").rglob("*.py") if "tests" in p.relative_to(ROOT).parts]
    read = variables_read(kit + tests) - variables_read(product_sources()) - READ_FOR_US_BY_TORCH
    assert "TORCH_BACKEND_OPINFO" in read  # the scan works
    docs = GUIDE.read_text() + DEVELOPMENT.read_text()
    undocumented = {name for name in read - KIT_INTERNAL_VARIABLES if f"`{name}" not in docs}
    assert not undocumented, "the kit's settings: document them in writing-a-backend.md or development.md"
    assert KIT_INTERNAL_VARIABLES <= read, "a setting listed as internal is no longer read"


def test_benchmarks_stress_tables_are_their_json():
    # Issue 68's figures: each table in docs/benchmarks.md's stress section is rendered from its JSON
    # (python -m torch_backend.testing.stress --json ...), never typed by hand.
    import json

    from torch_backend.testing.stress import render

    page = (ROOT / "docs" / "benchmarks.md").read_text()
    files = sorted((ROOT / "docs" / "bench").glob("stress-*.json"))
    assert len(files) >= 3, files
    for path in files:
        assert f"`docs/bench/{path.name}`" in page, path.name
        assert render(json.loads(path.read_text())) in page, f"{path.name}: re-render with --markdown"


def test_development_docs_say_what_the_ci_tag_leaves_out_and_how_often_exits_run():
    # Issue 73, items 7 and 8: both drifted from the noxfile within days.
    import shutil
    import subprocess

    nox = shutil.which("nox")
    if nox is None:
        pytest.skip("nox is not installed in this environment (CI's sessions run from the nox that `.ci/run` installs)")

    def sessions(*args: str, marks: str) -> set[str]:
        """The sessions `nox -l ARGS` marks with one of `marks` (* selected, - not)."""
        out = subprocess.run([nox, "-l", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
        listed = out.stdout.split("Sessions defined in", 1)[1]
        return {line.split()[1] for line in listed.splitlines() if line[:2] in {f"{m} " for m in marks}}

    left_out = sessions("-t", "ci", marks="*-") - sessions("-t", "ci", marks="*")
    untagged = {name for name in left_out if not name.startswith("compat")}
    page = DEVELOPMENT.read_text()
    row = next(line for line in page.splitlines() if line.startswith("| `nox -t ci -j 2` |"))
    said = set(re.findall(r"`([\w-]+)`", row.split("every session above but", 1)[1].split(":", 1)[0]))
    assert said == untagged, f"development.md says -t ci leaves out {said}; the noxfile leaves out {untagged}"
    noxfile = (ROOT / "noxfile.py").read_text()
    runs = int(re.search(r'"TORCH_BACKEND_EXIT_RUNS", "(\d+)"', noxfile).group(1))
    assert f"{runs} in host memory by default" in page and f"{max(3, runs // 5)}, in discrete memory" in page


def test_user_guides_ops_example_counts_core_kernel_table_as_kernels_md_does():
    # Issue 73, item 5: the guide's example said 246 of 246 after the table had grown to 253. kernels.md's
    # fake section is checked against `python -m torch_backend ops` by fake's own tests.
    kernels = (ROOT / "docs" / "kernels.md").read_text()
    counts = re.findall(r"^(\d+) of the (\d+) ops of core's kernel table run on device kernels", kernels, re.M)
    fake_on_kernels, table = counts[0]
    assert fake_on_kernels == table, "fake runs every op of core's table on its kernels"
    guide = USER_GUIDE.read_text()
    assert f"ops on 'fake': {table} of {table} in core's kernel table run on device kernels" in guide


def test_npu_readme_counts_its_headers_and_the_emulators_libraries():
    # Issue 73, item 10: both counts drifted when a header and a library were added.
    readme = (NPU / "README.md").read_text()
    include = NPU / "csrc" / "cann" / "include"
    operators = [p for p in include.rglob("aclnn_*.h")]
    others = [p for p in include.rglob("*.h") if not p.name.startswith("aclnn_")]
    assert f"| `csrc/cann/include/` | {len(operators)} operator headers + {len(others)} |" in readme
    libraries = re.findall(r"^add_library\((\w+) SHARED", (NPU / "emulator" / "CMakeLists.txt").read_text(), re.M)
    assert f"{NUMBER_WORDS[len(libraries)].capitalize()} shared libraries with CANN's names" in readme
    for name in libraries:
        assert f"- `lib{name}.so`:" in readme, name
    # Item 11: "302 tests, all passing" was stale within a day; the README points to CI's session instead.
    assert not re.search(r"\b\d+ tests\b", readme), "npu's README counts tests: point to CI's tests-npu instead"


def test_npus_kernel_count_is_kernels_mds_wherever_it_is_said():
    # Issue 73, item 12: "68 kernels" counted nothing a test could check. kernels.md's npu section is checked
    # against `python -m torch_backend ops` by npu's own tests; every page that counts npu's kernels says that.
    kernels = (ROOT / "docs" / "kernels.md").read_text().split("<!-- kernels:npu -->", 1)[1]
    on_kernels, table = re.match(r"\s*(\d+) of the (\d+) ops of core's kernel table", kernels).groups()
    claim = f"{on_kernels} of the {table} ops of core's kernel table"
    for page in (ROOT / "README.md", GUIDE, NPU / "README.md"):
        text = " ".join(page.read_text().split())  # wrapped lines
        assert claim in text, f"{page.name} does not say {claim!r}"
        assert not re.search(r"\b\d+ kernels (of core's families )?(through|onto) aclnn", text), page.name


def test_changelog_names_every_abi_version_of_the_device_interfaces():
    # Issue 73, item 14: the changelog said "collectives ABI 2" a week after the version became 3. The newest
    # entry's ABI line must name each header's current version: bump one without a changelog entry and this fails.
    include = ROOT / "packages" / "torch-backend-core" / "include" / "torch_backend"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    newest = re.search(r"^ABI: (.*)$", changelog, re.M).group(1)
    for interface in ("DeviceRuntime", "DeviceKernels", "DeviceCollectives"):
        version = re.search(rf"k{interface}AbiVersion = (\d+);", (include / f"{interface}.h").read_text()).group(1)
        assert f"{interface} {version}" in newest, f"CHANGELOG.md's newest ABI line does not name {interface} {version}"


def test_rendered_facts_match_their_data():
    # Issue 73, items 1 and 2: the README's gpu ratios (with target and met/missed) are rendered from the GPU
    # runs' JSON by ci/docs_facts.py; new data or a hand edit leaves the block stale, and this fails.
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_facts", ROOT / "ci" / "docs_facts.py")
    facts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(facts)
    assert facts.gpu_runs(), "no GPU run's gpu-vs-cuda.json found under docs/bench"
    assert facts.stale_blocks() == [], "run python ci/docs_facts.py"


def test_readmes_proven_on_row_names_every_gpu_run():
    # Issue 73, item 1: the row said "not yet on a GPU" after two GPU runs. Each run's date and GPU (from its
    # JSON) must be in it.
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_facts", ROOT / "ci" / "docs_facts.py")
    facts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(facts)
    row = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| **proven on** |"))
    gpu_cell = row.split("|")[4]
    for date, _, run in facts.gpu_runs():
        model = re.search(r"\b([AHB]\d{2,3})\b", run["machine"]).group(1)  # "NVIDIA H100 80GB HBM3" -> H100
        assert f"{model} ({date}" in gpu_cell, f"the README's 'proven on' row does not name the {model} run of {date}"
    assert "not yet on a GPU" not in gpu_cell
