"""torch.compile on the device: Dynamo's device interface, torch.<device> calls
traced without graph breaks, and Inductor's kernels.

Fake's zero-copy memory is host-addressable, so core gives Inductor's C++ code
generation to it: the compiled MLP and Transformer (forward, backward, an
optimizer step) must give CPU's values. Where memory is not host-addressable
(the discrete pass) Inductor runs graphs whose every op it leaves to the
backend's eager kernels (``options={"fallback_by_default": True}``), refuses
others with a clear error, and ``backend="aot_eager"`` works. CI's zero-copy pass
also reruns this file with device kernels on, where matmuls run on the
device's stream and the C++ kernels must wait for them.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Callable

import pytest
import torch
from kernels_rerun import rerun_with_kernels
from torch import nn

DISCRETE = os.environ.get("TORCH_BACKEND_FAKE_DISCRETE") == "1"
KERNELS = os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1"
DEVICE = "fake"
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
# What Inductor generates kernels for here: the default backend on
# host-addressable memory, the eager kernels path everywhere.
COMPILERS = ["eager", "aot_eager"] + ([] if DISCRETE else ["inductor"])
inductor_only = pytest.mark.skipif(DISCRETE, reason="Inductor's kernels need host-addressable memory")


@pytest.fixture(autouse=True)
def fresh_dynamo() -> None:
    torch._dynamo.reset()


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
        env=os.environ | {"TORCH_BACKEND": "fake"} | env,
    )  # fmt: skip


def cache_unique_constant() -> int:
    """An integer no earlier run used (one in a million collide): code holding it is new to Inductor's cache."""
    return 2 + secrets.randbelow(1_000_000)


def test_import_torch_does_not_import_the_compiler() -> None:
    out = run_python(
        "import sys, torch\n"
        "torch.ones(1, device='fake')\n"
        "print(sorted(m for m in ('torch._dynamo', 'torch._inductor.compile_fx') if m in sys.modules))"
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"


def test_dynamo_has_an_interface_for_the_device() -> None:
    from torch._dynamo.device_interface import get_interface_for_device

    interface = get_interface_for_device(DEVICE)
    assert interface.device_count() == torch.fake.device_count() >= 1
    assert interface.current_device() == torch.fake.current_device()
    assert interface.is_available()
    props = torch.fake.get_device_properties()
    assert interface.get_compute_capability() == props.major * 10 + props.minor
    assert interface.Worker.get_device_properties(0).multi_processor_count == props.multi_processor_count
    assert interface.get_raw_stream(0) == torch.fake.current_stream(0).native_handle
    assert interface.is_bf16_supported()
    assert isinstance(interface.Stream(), torch.Stream)
    with interface.device(0):
        assert interface.current_device() == 0


def device_calls(x: torch.Tensor, side: torch.Stream, done: torch.Event) -> torch.Tensor:
    with torch.fake.stream(side):
        y = x * 2
    done.record(side)
    torch.fake.current_stream().wait_event(done)
    torch.fake.synchronize()
    props = torch.fake.get_device_properties()
    return y + torch.fake.current_device() + torch.fake.device_count() + props.multi_processor_count


@pytest.mark.parametrize("compiler", COMPILERS)
def test_device_module_calls_trace_without_graph_breaks(compiler: str) -> None:
    x = torch.randn(8, device=DEVICE)
    side, done = torch.fake.Stream(), torch.fake.Event()
    compiled = torch.compile(device_calls, backend=compiler, fullgraph=True)
    torch.testing.assert_close(compiled(x, side, done), device_calls(x, side, done))


def streams_made_inside(x: torch.Tensor) -> torch.Tensor:
    side, done = torch.fake.Stream(), torch.fake.Event()
    side.wait_stream(torch.fake.current_stream())
    with torch.fake.stream(side):
        y = x + 1
    done.record(side)
    torch.fake.current_stream().wait_event(done)
    return y * torch.fake.device_count()


@pytest.mark.skipif(
    tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 13),
    reason="torch 2.11's Dynamo cannot trace the device module's Stream constructor (set <= dict_keys)",
)
@pytest.mark.parametrize("compiler", COMPILERS)
def test_streams_and_events_made_inside_compiled_code(compiler: str) -> None:
    x = torch.randn(8, device=DEVICE)
    compiled = torch.compile(streams_made_inside, backend=compiler, fullgraph=True)
    torch.testing.assert_close(compiled(x), streams_made_inside(x))


def test_current_device_is_guarded() -> None:
    if torch.fake.device_count() < 2:
        pytest.skip("needs two devices")
    compiled = torch.compile(lambda x: x + torch.fake.current_device(), fullgraph=True, backend="eager")
    x = torch.zeros(2)
    with torch.fake.device(1):
        assert compiled(x).tolist() == [1.0, 1.0]
    assert compiled(x).tolist() == [float(torch.fake.current_device())] * 2


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def transformer() -> nn.Module:
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Linear(32, 10))


WORKLOADS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "mlp": (mlp, (16, 32)),
    "transformer": (transformer, (4, 12, 32)),
}


def train(model: nn.Module, inputs: torch.Tensor, step: Callable[..., torch.Tensor], steps: int = 3) -> list[float]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = step(inputs).square().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


# Inductor with every op left to ATen: the path for a device Inductor has no kernels for.
ON_EAGER_KERNELS = {"options": {"fallback_by_default": True}}


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("compiler", ["aot_eager", "inductor", "inductor-on-eager-kernels", "fake"])
def test_compiled_training_matches_cpu_eager(workload: str, mode: str, compiler: str) -> None:
    if compiler == "inductor" and DISCRETE:
        pytest.skip("Inductor's kernels need host-addressable memory (see the refusal test)")
    if compiler not in ("inductor", "fake") and mode != "default":
        pytest.skip("one mode is enough where Inductor generates no kernels")
    if compiler == "fake" and mode == "default":
        pytest.skip("backend='fake' in the default mode is inductor-on-eager-kernels")
    build, shape = WORKLOADS[workload]
    torch.manual_seed(0)
    reference = build()
    model = build()
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    inputs = torch.randn(*shape, generator=torch.Generator().manual_seed(1))

    expected = train(reference, inputs, reference)
    options = {
        "inductor": {"mode": mode},
        "inductor-on-eager-kernels": ON_EAGER_KERNELS,
        # Replayed through device graphs (the graph tests in the kit count the replays).
        "fake": {"backend": "fake", "mode": mode},
    }.get(compiler, {"backend": compiler})
    got = train(model, inputs.to(DEVICE), torch.compile(model, **options))

    torch.testing.assert_close(got, expected, **TOLERANCE)
    for name, parameter in model.named_parameters():
        torch.testing.assert_close(parameter.cpu(), reference.get_parameter(name), **TOLERANCE, msg=name)


@inductor_only
def test_host_kernels_wait_for_the_device_stream() -> None:
    # With device kernels the matmul runs on the stream, queued behind a sleep;
    # Inductor's C++ kernel for cos reads its output and must wait for it.
    weight = torch.randn(128, 128, device=DEVICE)
    inputs = torch.randn(128, 128, device=DEVICE)
    compiled = torch.compile(lambda a, w: (a @ w).cos())
    compiled(inputs, weight)
    torch.fake._sleep(100_000)
    scaled = inputs * 3
    got = compiled(scaled, weight)
    torch.testing.assert_close(got.cpu(), ((inputs.cpu() * 3) @ weight.cpu()).cos(), **TOLERANCE)


@pytest.mark.skipif(not DISCRETE, reason="Inductor compiles where memory is host-addressable")
def test_inductor_refuses_clearly_where_memory_is_not_host_addressable() -> None:
    x = torch.randn(16, device=DEVICE)
    with pytest.raises(Exception, match=r"cannot generate kernels for 'fake'.*fallback_by_default.*aot_eager"):
        torch.compile(lambda t: (t.sin() * 2).sum())(x)


@inductor_only
def test_cached_kernels_are_not_reused_for_another_kind_of_memory() -> None:
    # Inductor caches compiled graphs across processes: code made for
    # host-addressable memory must not serve a device whose memory is not.
    # A constant of this run's own makes the code new to the cache (its key
    # holds the constant), so the processes share Inductor's default cache,
    # whose C++ toolchain checks are done once (a private one redoes them in
    # every run: 15 s of a 27 s process).
    offset = cache_unique_constant()
    code = (
        "import torch\n"
        "x = torch.arange(8.0, device='fake')\n"
        "try:\n"
        f"    print(torch.compile(lambda t: (t.cos() + {offset}).sum())(x).item())\n"
        "except Exception as error:\n"
        "    print('refused' if 'cannot generate kernels' in str(error) else repr(error))\n"
    )
    cache = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1"}
    # Inductor compiling in the process itself: what it caches, not how it compiles (its pool of compile
    # workers costs about 4 s a process to start).
    cache["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    host = run_python(code, **cache, TORCH_BACKEND_FAKE_DISCRETE="0")
    assert host.returncode == 0, host.stderr[-3000:]
    expected = (torch.arange(8.0).cos() + offset).sum().item()
    assert float(host.stdout.split()[-1]) == pytest.approx(expected, rel=1e-5)
    discrete = run_python(code, **cache, TORCH_BACKEND_FAKE_DISCRETE="1")
    assert discrete.returncode == 0, discrete.stderr[-3000:]
    assert discrete.stdout.split()[-1] == "refused"


if not KERNELS and not DISCRETE:

    def test_compile_with_kernels_in_this_memory_mode() -> None:
        # Whether importing torch imports the compiler, and Inductor's cache key for the kind of memory, are
        # the same with kernels on.
        rerun_with_kernels(__file__, timeout=900, leave_out=("import_torch_does_not_import", "cached_kernels"))


def test_reduce_overhead_keeps_random_ops_on_the_backends_kernels_without_a_device_randint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Inductor seeds its Triton kernels' random numbers with aten.randint on the device. Without a device
    # kernel for it (random_.from: fake has none, gpu neither) it runs on the CPU fallback, which a graph
    # capture cannot record: the kit's reduce-overhead training with dropout fell back to eager on an
    # H200. The device compiler's choice for Triton kernels a capture can record (fake's run only in the
    # interpreter, so that case is made up here; gpu's kit checks the replay itself).
    import torch._inductor.compile_fx as compile_fx_module

    from torch_backend._activation import active_backend
    from torch_backend._compile import inductor

    assert not inductor.draws_integers_on_device()
    chosen: list[dict] = []
    monkeypatch.setattr(inductor, "codegen_kind", lambda backend: "triton")
    monkeypatch.setattr(inductor, "kernels_capturable", lambda backend, kind: True)
    monkeypatch.setattr(
        compile_fx_module, "compile_fx", lambda gm, inputs, config_patches: chosen.append(config_patches)
    )
    compiler = inductor.device_compiler(active_backend())
    compiler(None, [], mode="reduce-overhead")
    compiler(None, [])  # no device graphs: Inductor's random kernels, seeded through the fallback
    assert chosen[0]["triton.cudagraphs"] and chosen[0]["fallback_random"] is True
    assert "fallback_by_default" not in chosen[0]  # the rest stays on Inductor's Triton kernels
    assert chosen[1] == {}
