"""Every argument an op writes ends up as on CPU (torch_backend.testing.mutation)."""

import torch

from torch_backend.testing.conformance._support import DEVICE
from torch_backend.testing.mutation import MutationCheck, MutationReport, generate, run


def test_every_mutated_argument_matches_cpu(capsys):
    cases = generate(DEVICE)
    report = run(iter(cases), DEVICE)
    with capsys.disabled():
        print(
            f"\nmutated arguments: {sum(report.compared.values())} calls of {len(report.compared)} ops "
            f"compared with CPU (written and read-only arguments) over {len(cases)} cases; "
            f"{len(report.differences)} differences"
        )
    assert not report.differences, "\n".join(report.differences[:20])
    # The sweep reaches in-place, out=, foreach and batch-norm ops (not a vacuous pass).
    compared = set(report.compared)
    for op in ("aten.add_.Tensor", "aten.mm.out", "aten._foreach_add_.List", "aten.native_batch_norm.default"):
        assert op in compared, op
    assert len(compared) >= 400


def test_the_check_catches_a_write_that_never_arrives():
    # A device kernel that forgets to write its mutated argument, and one that writes an
    # argument its schema says it only reads: both must be reported.
    library = torch.library.Library("mutation_selftest", "DEF")
    library.define("forgets(Tensor(a!) x) -> ()")
    library.define("scribbles(Tensor x) -> ()")

    def add_one(x: torch.Tensor) -> None:
        x.add_(1)

    def fill_seven(x: torch.Tensor) -> None:
        x.fill_(7)

    library.impl("forgets", add_one, "CPU")
    library.impl("forgets", lambda x: None, "PrivateUse1")
    library.impl("scribbles", lambda x: None, "CPU")
    library.impl("scribbles", fill_seven, "PrivateUse1")
    report = MutationReport()
    with MutationCheck(DEVICE, report):
        torch.ops.mutation_selftest.forgets(torch.zeros(3, device=DEVICE))
        torch.ops.mutation_selftest.scribbles(torch.zeros(3, device=DEVICE))
    assert len(report.differences) == 2, report.differences
    assert "x (written) differs from CPU" in report.differences[0]
    assert "x (not declared written) differs from CPU" in report.differences[1]


def test_batch_norm_training_keeps_cpus_running_statistics():
    def train(device: str) -> torch.nn.Module:
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3),
            torch.nn.BatchNorm2d(4),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(64, 2),
        ).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        generator = torch.Generator().manual_seed(1)
        for _ in range(10):
            optimizer.zero_grad()
            model(torch.randn(8, 3, 6, 6, generator=generator).to(device)).square().mean().backward()
            optimizer.step()
        return model.cpu()

    expected, actual = train("cpu")[1], train(DEVICE)[1]
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(actual, name), getattr(expected, name), msg=name)
