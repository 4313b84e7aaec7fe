"""Graph capture and replay: ``torch.<device>.graphs`` (every supported torch) and
``torch.accelerator.Graph`` (torch >= 2.12), for backends whose runtime implements the capture
symbols of DeviceRuntime.h and whose kernels run the captured ops on the device (the CPU fallback runs
at once on the host, so no graph can hold it: capturing one is an error that names it)."""

from __future__ import annotations

import copy
import gc
import warnings

import pytest
import torch
from torch import nn
from torch.nn import functional

from torch_backend import _C
from torch_backend.testing.conformance._support import DEVICE, dev

ON_DEVICE = {op for op, _family, _kernel, on_device, _forced in _C._op_table() if on_device}


def _runtime_captures() -> bool:
    graph = dev.Graph()
    try:
        with dev.graph(graph):
            pass
    except NotImplementedError:
        return False
    graph.reset()
    return True


needs_capture = pytest.mark.skipif(not _runtime_captures(), reason="the runtime has no capture symbols")
# What the training step runs: linear layers, ReLU, dropout, cross entropy, Adam (capturable).
STEP_OPS = {"addmm", "mm", "relu", "nll_loss_forward", "_log_softmax", "add.Tensor", "mul.Tensor"}
needs_step_kernels = pytest.mark.skipif(
    not STEP_OPS <= ON_DEVICE, reason=f"needs device kernels for {sorted(STEP_OPS - ON_DEVICE)}"
)
needs_add_kernel = pytest.mark.skipif("add.Tensor" not in ON_DEVICE, reason="add runs on the CPU fallback")
pytestmark = needs_capture


@needs_add_kernel
def test_replay_runs_the_captured_work_again_and_capture_runs_nothing():
    x = torch.zeros(8, device=DEVICE)
    graph = dev.Graph()
    with dev.graph(graph):
        x += 1
        doubled = x * 2
        assert dev.is_current_stream_capturing()
    assert not dev.is_current_stream_capturing()
    assert x.cpu().eq(0).all(), "capturing ran the work"
    for replays in range(1, 4):
        graph.replay()
        assert torch.equal(x.cpu(), torch.full((8,), float(replays)))
        assert torch.equal(doubled.cpu(), torch.full((8,), 2.0 * replays))
    graph.reset()
    with pytest.raises(RuntimeError, match="holds no capture"):
        graph.replay()


class Mlp(nn.Module):
    def __init__(self, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(32, 64), nn.ReLU(), nn.Dropout(dropout), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _train_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=False)
    loss = functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def _optimizer(name: str, model: nn.Module) -> torch.optim.Optimizer:
    if name == "adam":  # its step counts and bias corrections stay on the device
        return torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    return torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)


@needs_step_kernels
@pytest.mark.parametrize(("optimizer_name", "dropout"), [("sgd", 0.0), ("adam", 0.0), ("adam", 0.2)])
def test_replayed_training_step_equals_eager_steps(optimizer_name: str, dropout: float):
    if dropout and "native_dropout" not in ON_DEVICE:
        pytest.skip("dropout runs on the CPU fallback")
    torch.manual_seed(0)
    initial = Mlp(dropout)
    batches = [(torch.randn(16, 32), torch.randint(0, 10, (16,))) for _ in range(23)]

    torch.manual_seed(1)
    eager = copy.deepcopy(initial).to(DEVICE)
    eager_optimizer = _optimizer(optimizer_name, eager)
    eager_losses = [_train_step(eager, eager_optimizer, x.to(DEVICE), y.to(DEVICE)).item() for x, y in batches]

    torch.manual_seed(1)  # the same draws: warm-up steps eagerly, then one draw set per replay
    model = copy.deepcopy(initial).to(DEVICE)
    optimizer = _optimizer(optimizer_name, model)
    static_x, static_y = batches[0][0].to(DEVICE), batches[0][1].to(DEVICE)
    side = dev.Stream()
    side.wait_stream(dev.current_stream())
    with dev.stream(side):  # warm-up off the default stream, as torch.cuda's recipe
        for x, y in batches[:3]:
            static_x.copy_(x)
            static_y.copy_(y)
            _train_step(model, optimizer, static_x, static_y)
    dev.current_stream().wait_stream(side)
    graph = dev.Graph()
    try:
        with dev.graph(graph):
            static_loss = _train_step(model, optimizer, static_x, static_y)
    except RuntimeError as error:
        # A backend without a kernel the optimizer needs: said by name, never skipped silently.
        if DEVICE == "fake" or "runs on the CPU fallback" not in str(error):
            raise
        pytest.skip(f"{optimizer_name}'s step has an op without a device kernel: {str(error).split(', which')[0]}")
    losses = []
    for x, y in batches[3:]:
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        losses.append(static_loss.item())
    assert losses == pytest.approx(eager_losses[3:], abs=1e-6)
    for (name, got), want in zip(model.named_parameters(), eager.parameters(), strict=True):
        assert torch.allclose(got.cpu(), want.cpu(), rtol=0, atol=1e-6), name


@pytest.mark.skipif("native_dropout" not in ON_DEVICE, reason="dropout runs on the CPU fallback")
def test_dropout_in_a_graph_draws_what_eager_dropout_draws_at_each_replay():
    ones = torch.ones(4096, device=DEVICE)
    torch.manual_seed(5)
    eager = [functional.dropout(ones, 0.5).cpu() for _ in range(3)]
    assert not torch.equal(eager[0], eager[1])
    torch.manual_seed(5)
    graph = dev.Graph()
    with dev.graph(graph):
        out = functional.dropout(ones, 0.5)
    for want in eager:
        graph.replay()
        assert torch.equal(out.cpu(), want)


@needs_add_kernel
def test_graphs_sharing_a_pool_replay_in_capture_order():
    pool = dev.graph_pool_handle()
    x = torch.arange(6, dtype=torch.float32, device=DEVICE)
    first, second = dev.Graph(), dev.Graph()
    with dev.graph(first, pool=pool):
        y = x * 2
    with dev.graph(second, pool=pool):
        z = y + 1
    assert first.pool() == second.pool() == pool
    x.add_(10)
    first.replay()
    second.replay()
    assert torch.equal(z.cpu(), (torch.arange(6.0) + 10) * 2 + 1)
    own = dev.Graph()
    with dev.graph(own):
        x.add_(1)
    assert own.pool() not in (pool, (0, 0))


def _assert_usable_after_failed_capture() -> None:
    assert not dev.is_current_stream_capturing()
    t = torch.ones(3, device=DEVICE)
    assert torch.equal((t + 1).cpu(), torch.full((3,), 2.0))
    dev.synchronize()


@needs_add_kernel
@pytest.mark.parametrize(
    ("what", "call"),
    [
        ("Tensor.item()", lambda t: t.sum().item()),
        ("synchronizing the device", lambda t: dev.synchronize()),
        ("a synchronous copy", lambda t: t.cpu()),
    ],
)
def test_host_synchronisation_in_a_capture_raises_naming_it(what, call):
    t = torch.ones(4, device=DEVICE)
    graph = dev.Graph()
    with pytest.raises(RuntimeError, match="capture") as raised:
        with dev.graph(graph):
            t.add_(1)
            call(t)
    assert what in str(raised.value) or what in str(raised.value.__context__), raised.value
    _assert_usable_after_failed_capture()
    with pytest.raises(RuntimeError, match="holds no capture"):
        graph.replay()


def test_an_op_on_the_cpu_fallback_in_a_capture_raises_naming_it():
    candidates = ["aten::lgamma", "aten::digamma", "aten::nonzero"]
    op = next((name for name in candidates if name.removeprefix("aten::") not in ON_DEVICE), None)
    if op is None:
        pytest.skip("every candidate op has a device kernel")
    t = torch.ones(4, device=DEVICE)
    graph = dev.Graph()
    with pytest.raises(RuntimeError, match="CPU fallback") as raised:
        with dev.graph(graph):
            getattr(torch, op.removeprefix("aten::"))(t)
    message = str(raised.value) + str(raised.value.__context__)
    assert f"'{op}" in message and "runs on the CPU fallback" in message, message  # or its out= overload
    _assert_usable_after_failed_capture()


def test_capture_on_the_default_stream_is_refused():
    graph = dev.Graph()
    with dev.stream(dev.default_stream()):
        with pytest.raises(RuntimeError, match="default stream"):
            graph.capture_begin()
    assert not dev.is_current_stream_capturing()


@needs_add_kernel
def test_memory_returns_to_its_baseline_after_reset():
    x = torch.ones(1 << 20, device=DEVICE)
    gc.collect()  # earlier tests' garbage would be freed mid-test
    dev.synchronize()
    dev.empty_cache()
    allocated, reserved = dev.memory_allocated(), dev.memory_reserved()
    graph = dev.Graph()
    with dev.graph(graph):
        temporary = x * 3
        result = temporary + x
        del temporary
    graph.replay()
    assert torch.equal(result.cpu()[:2], torch.full((2,), 4.0))
    assert dev.memory_reserved() > reserved  # the graph's private pool
    del result
    graph.reset()
    dev.empty_cache()
    assert (dev.memory_allocated(), dev.memory_reserved()) == (allocated, reserved)


@needs_add_kernel
@pytest.mark.skipif(not hasattr(torch.accelerator, "Graph"), reason="torch.accelerator.Graph is new in torch 2.12")
def test_torch_accelerator_graph_captures_and_replays():
    x = torch.zeros(4, device=DEVICE)
    graph = torch.accelerator.Graph()
    with dev.stream(dev.Stream()), graph:
        x.add_(2)
    graph.replay()
    graph.replay()
    assert torch.equal(x.cpu(), torch.full((4,), 4.0))
    assert graph.pool() != (0, 0)


@needs_step_kernels
def test_make_graphed_callables_trains_a_module_as_eager_does():
    torch.manual_seed(0)
    initial = Mlp(0.0)
    batches = [(torch.randn(16, 32), torch.randint(0, 10, (16,))) for _ in range(6)]
    eager = copy.deepcopy(initial).to(DEVICE)
    eager_optimizer = _optimizer("sgd", eager)
    eager_losses = [_train_step(eager, eager_optimizer, x.to(DEVICE), y.to(DEVICE)).item() for x, y in batches]

    model = copy.deepcopy(initial).to(DEVICE)
    optimizer = _optimizer("sgd", model)  # its momentum buffers are made by the first step, not captured
    # Warm-up iterations run forward and backward but leave the parameters (and .grad: zeroed below) alone.
    graphed = dev.make_graphed_callables(model, (torch.randn(16, 32, device=DEVICE).requires_grad_(False),))
    assert graphed is model
    optimizer.zero_grad(set_to_none=True)
    losses = [_train_step(graphed, optimizer, x.to(DEVICE), y.to(DEVICE)).item() for x, y in batches]
    assert losses == pytest.approx(eager_losses, abs=1e-6)
    for (name, got), want in zip(model.named_parameters(), eager.parameters(), strict=True):
        assert torch.allclose(got.cpu(), want.cpu(), rtol=0, atol=1e-6), name
    # Out of the training state it was captured in, the module runs eagerly (another batch size works).
    model.eval()
    with torch.no_grad():
        assert torch.allclose(
            model(torch.ones(3, 32, device=DEVICE)).cpu(),
            eager.eval()(torch.ones(3, 32, device=DEVICE)).cpu(),
            atol=1e-6,
        )


@needs_add_kernel
def test_make_graphed_callables_on_functions_in_order_with_gradients():
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x * 3

    def shift(x: torch.Tensor) -> torch.Tensor:
        return x * x + 1

    sample = torch.zeros(8, device=DEVICE, requires_grad=True)
    graphed_scale, graphed_shift = dev.make_graphed_callables(
        (scale, shift), ((sample,), (sample.detach().clone().requires_grad_(),))
    )
    x = torch.arange(8.0, device=DEVICE, requires_grad=True)
    out = graphed_shift(graphed_scale(x))
    assert torch.equal(out.detach().cpu(), (torch.arange(8.0) * 3) ** 2 + 1)
    out.sum().backward()
    assert torch.equal(x.grad.cpu(), 18 * torch.arange(8.0))  # d/dx (3x)^2 = 18x
    with pytest.raises(TypeError, match="structured as its sample_args"):
        graphed_scale(x, x)


# torch.compile(mode="reduce-overhead"): compiled graphs replayed through device graphs.


def _replay_counts() -> dict[str, int]:
    from torch_backend._compile.replay import graph_replay_counts

    return graph_replay_counts()


def _release_compiled() -> None:
    """Forget compiled code and its device graphs (Inductor keeps compiled modules, and so their pools)."""
    from torch_backend._compile.replay import release_compiled_graphs

    torch._dynamo.reset()
    release_compiled_graphs()


def _count_changes(before: dict[str, int]) -> dict[str, int]:
    after = _replay_counts()
    return {key: after.get(key, 0) - before.get(key, 0) for key in ("captures", "replays", "eager_calls")}


@needs_step_kernels
def test_reduce_overhead_training_replays_device_graphs_and_matches_eager():
    dropout = 0.2 if "native_dropout" in ON_DEVICE else 0.0
    torch.manual_seed(0)
    initial = Mlp(dropout)
    batches = [(torch.randn(16, 32), torch.randint(0, 10, (16,))) for _ in range(8)]

    def train(model: nn.Module, forward: nn.Module) -> list[float]:
        optimizer = _optimizer("sgd", model)
        torch.manual_seed(1)
        # A new batch on the device at each step: inputs whose address may change.
        return [_train_step(forward, optimizer, x.to(DEVICE), y.to(DEVICE)).item() for x, y in batches]

    eager = copy.deepcopy(initial).to(DEVICE)
    eager_losses = train(eager, eager)
    model = copy.deepcopy(initial).to(DEVICE)
    before = _replay_counts()
    baseline = dev.memory_allocated()
    losses = train(model, torch.compile(model, backend=DEVICE, mode="reduce-overhead"))
    assert dev.memory_allocated() > baseline  # the graphs' pools
    _release_compiled()
    gc.collect()

    # Warm-up (step 1), capture of the forward and backward graphs (step 2), replays after.
    counts = _count_changes(before)
    assert counts["eager_calls"] == 0 and counts["captures"] >= 2, counts
    assert counts["replays"] == 2 * (len(batches) - 1), counts  # a capture's call replays too
    assert losses == pytest.approx(eager_losses, abs=1e-6)
    for (name, got), want in zip(model.named_parameters(), eager.parameters(), strict=True):
        assert torch.allclose(got.cpu(), want.cpu(), rtol=0, atol=1e-6), name


@needs_add_kernel
def test_a_replayed_output_held_past_the_next_replay_raises_instead_of_changing():
    @torch.compile(backend=DEVICE, mode="reduce-overhead")
    def affine(x: torch.Tensor) -> torch.Tensor:
        return x * 2 + 1

    x = torch.ones(64, device=DEVICE)
    before = _replay_counts()
    affine(x)  # warm-up
    held = affine(x)  # captured, then replayed
    view = held[:4]
    assert torch.equal(view.cpu(), torch.full((4,), 3.0))
    latest = affine(x + 1)
    assert torch.equal(latest.cpu(), torch.full((64,), 5.0))
    for stale in (held, view):
        with pytest.raises(RuntimeError, match="a later replay of that graph has overwritten it"):
            stale.cpu()
    assert _count_changes(before)["replays"] == 2
    _release_compiled()


def test_reduce_overhead_under_inductor_replays_or_says_why():
    # Never a silent fall-back: either the compiled graph replays through device graphs, or a
    # warning says why it cannot (its kernels run on the host, say).
    from torch_backend import active_backend
    from torch_backend._compile.inductor import codegen_kind, kernels_capturable

    backend = active_backend()
    assert backend is not None
    kind = codegen_kind(backend)
    if kind == "none":
        pytest.skip("Inductor generates no kernels for this device: backend='<device>' compiles for it")

    @torch.compile(mode="reduce-overhead")
    def scaled(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * 3

    x = torch.arange(-4.0, 4.0, device=DEVICE)
    before = _replay_counts()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [scaled(x).cpu() for _ in range(3)]
    _release_compiled()
    for result in results:
        assert torch.equal(result, torch.relu(x.cpu()) * 3)
    said_why = [str(warning.message) for warning in caught if "without device graphs" in str(warning.message)]
    replays = _count_changes(before)["replays"]
    assert (replays == 2) != bool(said_why), (replays, said_why)
    if not kernels_capturable(backend, kind):
        assert said_why, "the kernels cannot be captured, and nothing said so"
