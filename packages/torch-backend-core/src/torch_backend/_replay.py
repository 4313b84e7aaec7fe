"""Replaying one device op on the host and comparing what each side produced.

An ATen call seen by a dispatch mode is replayed on host copies of its device arguments
(``host_snapshot``), and ``compare_call`` lists where the device's call and the host's differ:
the arguments the op writes (and those it must leave alone), and, when asked, its outputs.
Shared by the mutation check (``torch_backend.testing.mutation``) and auto-compare
(``TORCH_BACKEND_AUTOCOMPARE``); light to import (no OpInfo database).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_flatten, tree_map

#: Tolerances for a dtype: keyword arguments of torch.testing.assert_close.
Tolerance = Callable[[torch.dtype], dict[str, float]]

# Ops that leave (some of) what they write uninitialised: only shapes can be compared.
UNINITIALISING = ("aten::resize", "aten::_resize_output", "aten::empty", "aten::new_empty")


@dataclass(frozen=True)
class Difference:
    """One way the device's call differs from the host's."""

    text: str
    #: The largest absolute difference between the values, and where (index into the tensor).
    largest: float | None = None
    at: tuple[int, ...] | None = None

    def __str__(self) -> str:
        return self.text


def is_device(value: object, device_type: str) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == device_type


def host_snapshot(args: tuple, kwargs: dict, device_type: str) -> tuple[tuple, dict]:
    """Host copies of the device tensors, sharing storage where the originals share it (aliases stay aliases)."""
    storages: dict[int, torch.UntypedStorage] = {}

    def copy(x: object) -> object:
        if not is_device(x, device_type):
            return x
        storage = x.untyped_storage()
        key = storage._cdata  # the StorageImpl: empty storages all have data_ptr 0
        if key not in storages:
            storages[key] = storage.cpu()
        host = torch.empty(0, dtype=x.dtype)
        host.set_(storages[key], x.storage_offset(), x.size(), x.stride())
        # Lazy conjugation and negation are flags on the view, not in the storage.
        if x.is_conj():
            host = host.conj()
        if x.is_neg():
            host = torch._neg_view(host)
        return host

    return tree_map(copy, (args, kwargs))


def mutation_tolerance(dtype: torch.dtype) -> dict[str, float]:
    # A wrong kernel misses by far more than rounding: a device's own summation order (cuBLAS's
    # products on a GPU) leaves float32 results a few ulps from CPU's, beyond assert_close's float32
    # default (rtol 1.3e-6). Other dtypes keep assert_close's defaults.
    return {"rtol": 1e-4, "atol": 1e-5} if dtype in (torch.float32, torch.float64) else {}


def bound_arguments(schema: torch.FunctionSchema, args: tuple, kwargs: dict) -> list[tuple[object, object]]:
    """(schema argument, value) for each argument given."""
    bound = []
    for index, argument in enumerate(schema.arguments):
        if argument.kwarg_only or index >= len(args):
            if argument.name in kwargs:
                bound.append((argument, kwargs[argument.name]))
        else:
            bound.append((argument, args[index]))
    return bound


def _tensors(value: object) -> list[torch.Tensor]:
    return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def _is_written(argument: object) -> bool:
    return argument.alias_info is not None and argument.alias_info.is_write


def compare_call(
    schema: torch.FunctionSchema,
    device_call: tuple[tuple, dict],
    host_call: tuple[tuple, dict],
    result: object,
    expected: object,
    *,
    tolerance: Tolerance = mutation_tolerance,
    outputs: bool = False,
    strides: bool = False,
) -> Iterator[Difference]:
    """Where the device's call of `schema` differs from the host's replay of it.

    Every tensor argument: one the op writes must hold CPU's values, one it only reads must be
    unchanged (unless it shares storage with a written one). With `outputs`, each returned value
    too (tensors by shape, dtype and values, NaN positions included; numbers by value); with
    `strides`, the strides of written arguments and outputs along dimensions longer than 1.
    """
    shapes_only = schema.name.startswith(UNINITIALISING)
    device_bound = bound_arguments(schema, *device_call)
    host_bound = bound_arguments(schema, *host_call)
    written_storages = {
        t.untyped_storage()._cdata for argument, value in device_bound if _is_written(argument) for t in _tensors(value)
    }
    for (argument, device_value), (_, host_value) in zip(device_bound, host_bound, strict=True):
        written = _is_written(argument)
        for position, (actual, wanted) in enumerate(zip(_tensors(device_value), _tensors(host_value), strict=True)):
            label = argument.name + (f"[{position}]" if isinstance(device_value, list | tuple) else "")
            if not written and actual.untyped_storage()._cdata in written_storages:
                continue  # aliases a written argument: may change with it
            what = f"{label} ({'written' if written else 'not declared written'})"
            difference = _compare_tensor(
                label, what, actual, wanted, tolerance, shapes_only, strides=strides and written, dtypes=False
            )
            if difference is not None:
                yield difference
    if outputs:
        yield from _compare_outputs(result, expected, written_storages, tolerance, shapes_only, strides)
    yield from _check_returned_aliases(schema, device_bound, result)


def _compare_outputs(
    result: object,
    expected: object,
    written_storages: set[int],
    tolerance: Tolerance,
    shapes_only: bool,
    strides: bool,
) -> Iterator[Difference]:
    actual_leaves, wanted_leaves = tree_flatten(result)[0], tree_flatten(expected)[0]
    if len(actual_leaves) != len(wanted_leaves):
        yield Difference(f"returns {len(actual_leaves)} values, {len(wanted_leaves)} on CPU")
        return
    several = len(actual_leaves) > 1
    for position, (actual, wanted) in enumerate(zip(actual_leaves, wanted_leaves, strict=True)):
        label = f"result[{position}]" if several else "result"
        if isinstance(actual, torch.Tensor) and isinstance(wanted, torch.Tensor):
            if actual.untyped_storage()._cdata in written_storages:
                continue  # a written argument returned: compared above
            difference = _compare_tensor(label, label, actual, wanted, tolerance, shapes_only, strides, dtypes=True)
            if difference is not None:
                yield difference
        elif isinstance(actual, torch.Tensor) != isinstance(wanted, torch.Tensor):
            yield Difference(f"{label}: {type(actual).__name__} on the device, {type(wanted).__name__} on CPU")
        elif isinstance(actual, int | float | complex) and isinstance(wanted, int | float | complex):
            if not _numbers_close(actual, wanted, tolerance):
                yield Difference(
                    f"{label}: {actual!r} on the device, {wanted!r} on CPU", largest=_number_gap(actual, wanted)
                )
        elif actual != wanted:
            yield Difference(f"{label}: {actual!r} on the device, {wanted!r} on CPU")


def _compare_tensor(
    label: str,
    what: str,
    actual: torch.Tensor,
    wanted: torch.Tensor,
    tolerance: Tolerance,
    shapes_only: bool,
    strides: bool,
    dtypes: bool,
) -> Difference | None:
    if actual.shape != wanted.shape:
        return Difference(f"{label}: shape {tuple(actual.shape)} after the op, {tuple(wanted.shape)} on CPU")
    if dtypes and actual.dtype != wanted.dtype:
        return Difference(f"{label}: dtype {actual.dtype} on the device, {wanted.dtype} on CPU")
    if strides and actual.numel() > 1:
        mismatched = [d for d in range(actual.dim()) if actual.size(d) > 1 and actual.stride(d) != wanted.stride(d)]
        if mismatched:
            return Difference(f"{label}: strides {actual.stride()} on the device, {wanted.stride()} on CPU")
    if shapes_only:
        return None
    host_actual = actual.detach().cpu().resolve_conj().resolve_neg()
    host_wanted = wanted.detach().resolve_conj().resolve_neg()
    # Equal element for element: within any tolerance (most calls; assert_close costs ten times more).
    same_kind = host_actual.dtype == host_wanted.dtype and host_actual.layout == host_wanted.layout == torch.strided
    if same_kind and not host_actual.is_quantized and torch.equal(host_actual, host_wanted):
        return None
    try:
        torch.testing.assert_close(
            host_actual, host_wanted, equal_nan=True, check_device=False, check_dtype=False, **tolerance(wanted.dtype)
        )
    except AssertionError as error:
        largest, at = largest_difference(host_actual, host_wanted)
        lines = str(error).splitlines()
        summary = next((line for line in lines if line.startswith("Mismatched elements")), lines[-1])
        return Difference(f"{what} differs from CPU: {summary[:160]}", largest, at)
    return None


def largest_difference(actual: torch.Tensor, wanted: torch.Tensor) -> tuple[float, tuple[int, ...] | None]:
    """The largest absolute difference and its index; NaN against a number counts as infinite."""
    if actual.numel() == 0:
        return 0.0, None
    wide = torch.complex128 if actual.is_complex() or wanted.is_complex() else torch.float64
    a, w = actual.to(wide), wanted.to(wide)
    both_nan = a.isnan() & w.isnan()
    gap = torch.where((a == w) | both_nan, 0.0, (a - w).abs().to(torch.float64))
    gap = gap.nan_to_num(nan=math.inf)
    flat = int(gap.argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), gap.shape)) if gap.dim() else ()
    return float(gap.reshape(-1)[flat]), index


def _numbers_close(actual: complex, wanted: complex, tolerance: Tolerance) -> bool:
    if isinstance(actual, bool | int) and isinstance(wanted, bool | int):
        return actual == wanted
    if _isnan(actual) or _isnan(wanted):
        return _isnan(actual) and _isnan(wanted)
    limits = tolerance(torch.float64)
    return abs(actual - wanted) <= limits.get("atol", 1e-7) + limits.get("rtol", 1e-7) * abs(wanted)


def _isnan(value: complex) -> bool:
    return value != value


def _number_gap(actual: complex, wanted: complex) -> float:
    gap = abs(actual - wanted)
    return math.inf if gap != gap else float(gap)


def _check_returned_aliases(
    schema: torch.FunctionSchema, device_bound: list[tuple[object, object]], result: object
) -> Iterator[Difference]:
    returns = result if isinstance(result, tuple | list) else (result,)
    for ret, value in zip(schema.returns, returns, strict=False):
        if ret.alias_info is None or not ret.alias_info.is_write or not isinstance(value, torch.Tensor):
            continue
        for argument, argument_value in device_bound:
            same_set = argument.alias_info is not None and argument.alias_info.before_set == ret.alias_info.before_set
            if same_set and isinstance(argument_value, torch.Tensor) and argument_value is not value:
                if (argument_value.data_ptr(), argument_value.shape) != (value.data_ptr(), value.shape):
                    yield Difference(f"returns a tensor that is not its written argument {argument.name}")
