"""Every argument an op mutates must end up as on CPU: in-place ops, out= variants,
BatchNorm's running statistics, optimizers' foreach ops.

Output comparisons (opinfo.py) cannot see a mutated argument that was not
written back. `MutationCheck` is a dispatch mode that sees each ATen op on its
way to the device (after autograd and decompositions, as the backend sees it).
For every op with device arguments (those whose schema writes one, `Tensor(a!)`,
and the others: some CPU kernels write arguments their schema calls read-only),
it snapshots every device argument to the host first, preserving which arguments share storage,
runs the op on the device, replays it on the host snapshot, and compares every
written argument's shape and values; arguments the op only reads must be left
untouched, and a returned alias of a written argument must be that argument.
Ops drawing random numbers are skipped (generators differ).

Used by the kit's test_mutation.py and by `TORCH_BACKEND=NAME python -m torch_backend.testing.mutation`.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
from torch.testing._internal.common_methods_invocations import (
    foreach_binary_op_db,
    foreach_other_op_db,
    foreach_pointwise_op_db,
    foreach_reduce_op_db,
    foreach_unary_op_db,
    op_db,
)
from torch.testing._internal.opinfo.core import OpInfo, SampleInput
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from torch_backend._replay import compare_call, host_snapshot, is_device
from torch_backend.testing import device_type, quiet


@dataclass
class MutationReport:
    """What a check saw: mutating ops compared, and each difference found."""

    compared: dict[str, int] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)


class MutationCheck(TorchDispatchMode):
    """Compares every argument a device op writes (or must not write) with the same op on the host."""

    def __init__(self, device_type: str, report: MutationReport) -> None:
        super().__init__()
        self.device_type = device_type
        self.report = report

    def __torch_dispatch__(
        self, func: torch._ops.OpOverload, types: tuple, args: tuple = (), kwargs: dict | None = None
    ) -> object:
        kwargs = kwargs or {}
        # Every op, not only those whose schema writes: some CPU kernels write arguments
        # their schema calls read-only (native_batch_norm's running statistics).
        if torch.Tag.nondeterministic_seeded in func.tags:
            return func(*args, **kwargs)
        leaves = tree_flatten((args, kwargs))[0]
        if not any(is_device(x, self.device_type) for x in leaves):
            return func(*args, **kwargs)
        host_args, host_kwargs = host_snapshot(args, kwargs, self.device_type)
        result = func(*args, **kwargs)
        expected = func(*host_args, **host_kwargs)
        name = str(func)
        self.report.compared[name] = self.report.compared.get(name, 0) + 1
        for problem in compare_call(func._schema, (args, kwargs), (host_args, host_kwargs), result, expected):
            self.report.differences.append(f"{name}: {problem}")
        return result


# --- what to run under the check ------------------------------------------------------------


def _to(device: str, value: object) -> object:
    """Tensors moved to `device`, and a factory's device= argument pointed at it."""

    def move(x: object) -> object:
        if isinstance(x, torch.Tensor):
            return x.detach().to(device)
        if isinstance(x, torch.device | str) and str(x) == "cpu":
            return device
        return x

    return tree_map(move, value)


def _empty_like_results(results: object, device: str, resized: bool) -> object:
    # Resized: empty out= tensors the op must resize (and, on a discrete device, whose new
    # storage must reach the caller's tensor).
    return tree_map(lambda t: torch.empty(0 if resized else t.shape, dtype=t.dtype, device=device), results)


def _runs_on_cpu(call: Callable[[str], object]) -> bool:
    try:
        call("cpu")
    except Exception:
        return False
    return True


def opinfo_cases(device: str) -> Iterator[tuple[str, Callable[[], object]]]:
    """(name, call) for every OpInfo op with an in-place variant or out=, float32 samples valid on CPU."""
    for op in op_db:
        key = f"{op.name}.{op.variant_test_name}".rstrip(".")
        if torch.float32 not in op.supported_dtypes("cpu"):
            continue
        try:
            generated = list(op.sample_inputs("cpu", torch.float32))
        except Exception:
            continue
        for sample in generated:
            if op.inplace_variant is not None:

                def in_place(on: str, variant: Callable = op.inplace_variant, s: SampleInput = sample) -> object:
                    return variant(*_to(on, (s.input.clone(), *s.args)), **_to(on, s.kwargs))

                if _runs_on_cpu(in_place):
                    yield f"{key} (in-place)", lambda call=in_place: call(device)
            if op.supports_out:
                try:
                    results = op(sample.input, *sample.args, **sample.kwargs)
                except Exception:
                    continue
                if not all(isinstance(t, torch.Tensor) for t in tree_flatten(results)[0]):
                    continue
                for resized in (False, True):

                    def out_variant(
                        on: str, op: OpInfo = op, s: SampleInput = sample, r: object = results, resized: bool = resized
                    ) -> object:
                        out = _empty_like_results(r, on, resized)
                        return op(*_to(on, (s.input, *s.args)), **_to(on, s.kwargs), out=out)

                    if _runs_on_cpu(out_variant):
                        yield f"{key} (out={'resized' if resized else 'sized'})", lambda call=out_variant: call(device)


FOREACH_OPS = (
    foreach_unary_op_db + foreach_binary_op_db + foreach_pointwise_op_db + foreach_reduce_op_db + foreach_other_op_db
)


def foreach_cases(device: str) -> Iterator[tuple[str, Callable[[], object]]]:
    """Tensor-list ops (optimizers' foreach path): every list element written must match CPU."""
    for op in FOREACH_OPS:
        if op.inplace_variant is None or torch.float32 not in op.supported_dtypes("cpu"):
            continue
        for sample in op.sample_inputs("cpu", torch.float32, num_input_tensors=[3]):

            def in_place(on: str, variant: Callable = op.inplace_variant, s: SampleInput = sample) -> object:
                inputs = [t.clone() for t in s.input]
                return variant(*_to(on, (inputs, *s.args)), **_to(on, s.kwargs))

            if _runs_on_cpu(in_place):
                yield f"{op.name} (in-place)", lambda call=in_place: call(device)


def alias_cases(device: str) -> Iterator[tuple[str, Callable[[], object]]]:
    """Written arguments that share storage with other arguments, and written views."""

    def make(rows: int = 4) -> torch.Tensor:
        return torch.arange(rows * 6, dtype=torch.float32).reshape(rows, 6).div(7).to(device)

    yield "x.add_(x)", lambda: (lambda x: x.add_(x))(make())
    yield "add(x, x, out=x)", lambda: (lambda x: torch.add(x, x, out=x))(make())
    yield "addcmul_(x, x, x)", lambda: (lambda x: x.addcmul_(x, x, value=0.5))(make())
    yield "even rows *= odd rows", lambda: (lambda x: x[::2].mul_(x[1::2]))(make())
    yield "transposed view out=", lambda: (lambda x: torch.mm(make(6)[:4], make(6)[:, :4], out=x.t()[:4]))(make(6))
    yield "column written in place", lambda: (lambda x: x[:, 2].exp_())(make())
    yield "out= aliasing its input", lambda: (lambda x: torch.cumsum(x, 1, out=x))(make())

    def batch_norm_functional() -> torch.Tensor:
        mean, var = torch.zeros(3, device=device), torch.ones(3, device=device)
        x = torch.randn(4, 3, 5, generator=torch.Generator().manual_seed(0)).to(device)
        return torch.nn.functional.batch_norm(x, mean, var, training=True, momentum=0.3)

    yield "F.batch_norm with running statistics", batch_norm_functional


def workload_cases(device: str) -> Iterator[tuple[str, Callable[[], object]]]:
    """BatchNorm in training mode and optimizer steps, whose state lives in mutated arguments."""
    for norm, shape in (
        (torch.nn.BatchNorm1d, (8, 3)),
        (torch.nn.BatchNorm2d, (4, 3, 5, 5)),
        (torch.nn.BatchNorm3d, (2, 3, 2, 3, 3)),
    ):
        for momentum in (0.1, None):

            def batch_norm(
                norm: type[torch.nn.Module] = norm, shape: tuple = shape, momentum: float | None = momentum
            ) -> torch.nn.Module:
                torch.manual_seed(0)
                module = norm(3, momentum=momentum).to(device)
                for _ in range(3):
                    module(torch.randn(shape).to(device))
                return module

            yield f"{norm.__name__}(momentum={momentum}) training", batch_norm
    for name, make in _OPTIMIZERS.items():
        for foreach in (False, True):

            def step(make: Callable = make, foreach: bool = foreach) -> torch.nn.Module:
                torch.manual_seed(0)
                model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).to(device)
                optimizer = make(model.parameters(), foreach=foreach)
                for _ in range(3):
                    optimizer.zero_grad()
                    model(torch.randn(5, 4).to(device)).square().sum().backward()
                    optimizer.step()
                return model

            yield f"{name}(foreach={foreach})", step


_OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {
    "SGD": lambda p, **kw: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, **kw),
    "Adam": lambda p, **kw: torch.optim.Adam(p, lr=0.01, amsgrad=True, **kw),
    "AdamW": lambda p, **kw: torch.optim.AdamW(p, lr=0.01, **kw),
    "RMSprop": lambda p, **kw: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True, **kw),
    "Adagrad": lambda p, **kw: torch.optim.Adagrad(p, lr=0.1, **kw),
}


def all_cases(device: str) -> Iterator[tuple[str, Callable[[], object]]]:
    yield from workload_cases(device)
    yield from alias_cases(device)
    yield from foreach_cases(device)
    yield from opinfo_cases(device)


def generate(device: str) -> list[tuple[str, Callable[[], object]]]:
    """Every case of `all_cases`, generated on a thread of its own with warnings off.

    Why a thread: generating OpInfo samples walks the caller's stack twice per call (PyTorch's
    `extract_test_fn` calls `inspect.stack()` for each sample iterator, and `torch.manual_seed` has
    cuda, xpu and mtia queue their lazy seeding with `traceback.format_stack()`), so it costs more
    the deeper the stack is. Under pytest, generating the kit's 14,581 cases took 48 s; on a new
    thread's short stack, 10 s. The cases then run on the caller's thread."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mutation-cases") as pool:
        return pool.submit(_all_cases_quietly, device).result()


def _all_cases_quietly(device: str) -> list[tuple[str, Callable[[], object]]]:
    with quiet():
        return [*all_cases(device)]


def run(cases: Iterator[tuple[str, Callable[[], object]]], device_type: str, trace: bool = False) -> MutationReport:
    """Runs each case under MutationCheck; a case the device rejects counts as a difference too."""
    report = MutationReport()
    with quiet():
        for name, call in cases:
            before = len(report.differences)
            if trace:
                print(f"running {name}", file=sys.stderr, flush=True)
            try:
                with MutationCheck(device_type, report):
                    call()
            except Exception as error:
                report.differences.append(f"raised {type(error).__name__}: {str(error).splitlines()[0][:160]}")
            for index in range(before, len(report.differences)):
                report.differences[index] = f"{name}: {report.differences[index]}"
    return report


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_backend.testing.mutation")
    parser.add_argument("--device", default=None, help="the device type (default: the active backend's)")
    parser.add_argument("--trace", action="store_true", help="print each case before running it (find crashes)")
    args = parser.parse_args()
    device = args.device or device_type()
    cases = generate(device)
    report = run(iter(cases), device, args.trace)
    print(
        f"mutated arguments: {sum(report.compared.values())} calls of {len(report.compared)} ops "
        f"compared with CPU over {len(cases)} cases; {len(report.differences)} differences"
    )
    for line, count in Counter(report.differences).most_common(50):
        print(f"  {count:>4} x {line}")
    return 1 if report.differences else 0


if __name__ == "__main__":
    sys.exit(main())
