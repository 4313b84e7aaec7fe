"""Benchmarks that compare a torch-backend device with the CPU it runs beside.

Every case is measured on the device and on CPU in the same process, the two
interleaved repeat by repeat, and reported as a ratio of medians: machines here
are noisy, so absolute timings mean little and timed unit tests mean less.
Run: ``python -m torch_backend.bench [--device NAME] [--repeats N] [--json PATH]``.
"""

from torch_backend.bench._runner import Case, Result, run_cases
from torch_backend.bench.cases import CASES

__all__ = ["CASES", "Case", "Result", "run_cases"]
