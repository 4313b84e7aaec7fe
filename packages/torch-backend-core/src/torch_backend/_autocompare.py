"""Auto-compare: each matching device op also runs on a host copy of its inputs, and the two must agree.

``TORCH_BACKEND_AUTOCOMPARE=<regex>`` (at activation) or ``with torch_backend.autocompare(regex):``
compares, for every ATen overload the expression matches (``mul.Tensor``, ``_softmax``, as the op
report and ``TORCH_BACKEND_FORCE_FALLBACK`` name them) that has device tensor arguments, every
output and every argument the op writes with the same op replayed on the host (the mutation
check's replay, ``torch_backend._replay``): shapes, dtypes, strides, values within dtype-aware
tolerances, NaN positions. The first mismatch raises :class:`AutocompareError` naming the op, its
arguments' shapes, dtypes and strides, the largest difference and the Python code that called it;
``TORCH_BACKEND_AUTOCOMPARE_MODE=log`` (``mode="log"``) logs each mismatch instead and goes on.

It is a PyTorch dispatch mode: it sees ops as the backend does (after autograd and decompositions),
on the thread that turned it on and on autograd's threads. Every matched op is copied to the host
and run twice: a bring-up tool, not for production. Ops drawing random numbers are not compared
(the generators differ), nor ops under ``torch.compile`` (Dynamo runs no dispatch mode's code).
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from torch_backend._replay import Difference, compare_call, host_snapshot, is_device, mutation_tolerance

PATTERN_SETTING = "TORCH_BACKEND_AUTOCOMPARE"
MODE_SETTING = "TORCH_BACKEND_AUTOCOMPARE_MODE"
RTOL_SETTING = "TORCH_BACKEND_AUTOCOMPARE_RTOL"
ATOL_SETTING = "TORCH_BACKEND_AUTOCOMPARE_ATOL"
MODES = ("raise", "log")

logger = logging.getLogger("torch_backend.autocompare")

# Where a mismatch's stack starts: the innermost frame outside PyTorch and this file.
_LIBRARY_DIRS = (str(Path(torch.__file__).resolve().parent) + os.sep, __file__)


class AutocompareError(AssertionError):
    """A device op's result differs from the same op on the host (auto-compare, raising mode)."""


AutocompareError.__module__ = "torch_backend"  # where users name it


@dataclass(frozen=True)
class Mismatch:
    """The first difference one op call showed, with what identifies the call."""

    op: str  # "mul.Tensor"
    difference: Difference
    arguments: str  # "self: float32[4, 6] strides (6, 1); other: ..."
    stack: str  # the calling Python code, innermost last

    def __str__(self) -> str:
        largest = "" if self.difference.largest is None else f"\n  largest difference: {self.difference.largest:.6g}"
        if self.difference.at is not None:
            largest += f" at index {self.difference.at}"
        return (
            f"auto-compare: {self.op} differs from CPU: {self.difference}{largest}\n"
            f"  arguments: {self.arguments}\n  called from (most recent call last):\n{self.stack}"
        )


@dataclass
class AutocompareReport:
    """What one auto-compare block saw: calls compared per op, and the mismatches (one per call)."""

    compared: Counter[str] = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)


def overload_name(func: torch._ops.OpOverload) -> str:
    """ "mul.Tensor", "_softmax": the names the op report and TORCH_BACKEND_FORCE_FALLBACK use."""
    schema = func._schema
    name = schema.name.removeprefix("aten::")
    return f"{name}.{schema.overload_name}" if schema.overload_name else name


class AutoCompare(TorchDispatchMode):
    """The dispatch mode behind ``torch_backend.autocompare`` and ``TORCH_BACKEND_AUTOCOMPARE``."""

    def __init__(
        self,
        device_type: str,
        pattern: str,
        mode: str = "raise",
        rtol: float | None = None,
        atol: float | None = None,
    ) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"auto-compare mode must be one of {MODES}, not {mode!r}")
        if (rtol is None) != (atol is None):
            raise ValueError("auto-compare: give rtol and atol together, or neither")
        self.device_type = device_type
        self.pattern = _compile(pattern, "auto-compare pattern")
        self.raise_on_mismatch = mode == "raise"
        self.rtol, self.atol = rtol, atol
        self.report = AutocompareReport()

    def tolerance(self, dtype: torch.dtype) -> dict[str, float]:
        if self.rtol is not None and (dtype.is_floating_point or dtype.is_complex):
            return {"rtol": self.rtol, "atol": self.atol}
        return mutation_tolerance(dtype)

    def __torch_dispatch__(
        self, func: torch._ops.OpOverload, types: tuple, args: tuple = (), kwargs: dict | None = None
    ) -> object:
        kwargs = kwargs or {}
        name = overload_name(func)
        if (
            not self.pattern.search(name)
            or torch.Tag.nondeterministic_seeded in func.tags
            or not any(is_device(x, self.device_type) for x in tree_flatten((args, kwargs))[0])
        ):
            return func(*args, **kwargs)
        host_args, host_kwargs = host_snapshot(args, kwargs, self.device_type)
        result = func(*args, **kwargs)
        try:
            expected = func(*host_args, **host_kwargs)
        except Exception:
            return result
        self.report.compared[name] += 1
        differences = compare_call(
            func._schema,
            (args, kwargs),
            (host_args, host_kwargs),
            result,
            expected,
            tolerance=self.tolerance,
            outputs=True,
            strides=True,
        )
        first = next(iter(differences), None)
        if first is not None:
            mismatch = Mismatch(name, first, describe_arguments(func._schema, args, kwargs), _user_stack())
            self.report.mismatches.append(mismatch)
            if self.raise_on_mismatch:
                raise AutocompareError(str(mismatch))
            logger.warning("%s", mismatch)
        return result


def describe_arguments(schema: torch.FunctionSchema, args: tuple, kwargs: dict) -> str:
    """Each argument by name: tensors as dtype[shape] with strides and device, other values as given."""
    from torch_backend._replay import bound_arguments

    def describe(value: object) -> str:
        if isinstance(value, torch.Tensor):
            dtype = str(value.dtype).removeprefix("torch.")
            return f"{dtype}{list(value.shape)} strides {value.stride()} on {value.device}"
        if isinstance(value, list | tuple) and any(isinstance(v, torch.Tensor) for v in value):
            return "[" + ", ".join(describe(v) for v in value) + "]"
        return repr(value)

    return "; ".join(f"{argument.name}: {describe(value)}" for argument, value in bound_arguments(schema, args, kwargs))


def _user_stack(limit: int = 8) -> str:
    frames = traceback.extract_stack()
    # The innermost frames are this mode's and PyTorch's own: the caller is the first frame outside them.
    while frames and frames[-1].filename.startswith(_LIBRARY_DIRS):
        frames.pop()
    if not frames:  # autograd's engine calls backward ops from C++
        return "    (no Python caller: a backward op run by autograd's engine)"
    return "".join(traceback.format_list(frames[-limit:])).rstrip()


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ValueError(f"{what}={pattern!r} is not a valid regular expression: {error}") from None


def _float_setting(name: str) -> float | None:
    text = os.environ.get(name)
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number") from None


def settings_from_environment() -> dict[str, object] | None:
    """AutoCompare's arguments from TORCH_BACKEND_AUTOCOMPARE*, or None when it is not set.

    Raises:
        ValueError: a setting is invalid (the activation then fails, naming it).
    """
    pattern = os.environ.get(PATTERN_SETTING)
    if not pattern:
        return None
    _compile(pattern, PATTERN_SETTING)
    mode = os.environ.get(MODE_SETTING, "raise")
    if mode not in MODES:
        raise ValueError(f"{MODE_SETTING}={mode!r}: use one of {', '.join(MODES)}")
    rtol, atol = _float_setting(RTOL_SETTING), _float_setting(ATOL_SETTING)
    if (rtol is None) != (atol is None):
        raise ValueError(f"set {RTOL_SETTING} and {ATOL_SETTING} together, or neither")
    return {"pattern": pattern, "mode": mode, "rtol": rtol, "atol": atol}


_from_environment: AutoCompare | None = None


def enable(device_type: str, settings: dict[str, object]) -> AutoCompare:
    """Turns auto-compare on for the rest of the process (TORCH_BACKEND_AUTOCOMPARE)."""
    global _from_environment
    _from_environment = AutoCompare(device_type, **settings)
    _from_environment.__enter__()
    return _from_environment


def autocompare(
    pattern: str = ".*", *, mode: str = "raise", rtol: float | None = None, atol: float | None = None
) -> AutoCompare:
    """A context manager comparing each device op matching `pattern` with CPU; see the module's text.

    ``with torch_backend.autocompare("mul|add") as check:`` ... then ``check.report.mismatches``.

    Raises:
        RuntimeError: no backend is active.
        ValueError: `pattern` is not a regular expression, `mode` not "raise" or "log", or only
            one of rtol and atol is given.
    """
    device_name = torch._C._get_privateuse1_backend_name()
    if device_name == "privateuseone":  # activation renames PrivateUse1 after the backend
        raise RuntimeError("torch_backend.autocompare needs an active backend")
    return AutoCompare(device_name, pattern, mode, rtol, atol)
