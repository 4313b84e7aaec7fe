"""``libdevice`` for Triton's interpreter: for tests only.

Triton's interpreter (``TRITON_INTERPRET=1``) runs kernels in NumPy, but its
``libdevice`` functions are declarations that only a compiler resolves
(``extern_elementwise`` raises in interpreter mode; triton 3.6 to 3.9), and
Inductor's kernels call them for ``erf`` (GELU), ``pow``, ``tanh``, rounding
and more. :func:`provide_libdevice` gives each one Inductor uses a definition
computed by PyTorch's CPU kernels, so generated kernels can be checked on a
machine without a GPU. Core calls it when it registers Triton kernels for a
device in a process that interprets them; it changes nothing otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def _exponent(x: torch.Tensor) -> torch.Tensor:
    # ilogb: the unbiased exponent, as frexp's minus one.
    return (torch.frexp(x).exponent - 1).to(torch.int32)


#: libdevice name -> (CPU computation, result dtype: None for the first operand's).
_FUNCTIONS: dict[str, tuple[Callable[..., torch.Tensor], str | None]] = {
    "abs": (torch.abs, None),
    "acos": (torch.acos, None),
    "acosh": (torch.acosh, None),
    "asin": (torch.asin, None),
    "asinh": (torch.asinh, None),
    "atan": (torch.atan, None),
    "atan2": (torch.atan2, None),
    "atanh": (torch.atanh, None),
    "ceil": (torch.ceil, None),
    "copysign": (torch.copysign, None),
    "cos": (torch.cos, None),
    "cosh": (torch.cosh, None),
    "erf": (torch.erf, None),
    "erfc": (torch.erfc, None),
    "erfinv": (torch.erfinv, None),
    "exp": (torch.exp, None),
    "exp2": (torch.exp2, None),
    "expm1": (torch.expm1, None),
    "fast_tanhf": (torch.tanh, None),
    "floor": (torch.floor, None),
    "fmod": (torch.fmod, None),
    "hypot": (torch.hypot, None),
    "ilogb": (_exponent, "int32"),
    "isinf": (torch.isinf, "int1"),
    "isnan": (torch.isnan, "int1"),
    "ldexp": (lambda x, e: torch.ldexp(x, e).to(x.dtype), None),
    "lgamma": (torch.lgamma, None),
    "llrint": (lambda x: torch.round(x).to(torch.int64), "int64"),
    "log": (torch.log, None),
    "log10": (torch.log10, None),
    "log1p": (torch.log1p, None),
    "log2": (torch.log2, None),
    "nearbyint": (torch.round, None),  # round half to even, as rint
    "nextafter": (torch.nextafter, None),
    "pow": (lambda x, y: torch.pow(x, y.to(x.dtype) if y.is_floating_point() else y).to(x.dtype), None),
    "rint": (torch.round, None),
    "rsqrt": (torch.rsqrt, None),
    "signbit": (torch.signbit, "int1"),
    "sin": (torch.sin, None),
    "sinh": (torch.sinh, None),
    "sqrt": (torch.sqrt, None),
    "tan": (torch.tan, None),
    "tanh": (torch.tanh, None),
    "trunc": (torch.trunc, None),
}


def provide_libdevice() -> None:
    """Define the interpreter's ``libdevice`` functions that Inductor's kernels use.

    Only where Triton interprets (``TRITON_INTERPRET=1``): a compiler needs
    the declarations as they are.
    """
    from triton.runtime import interpreter

    if not interpreter.interpreter_builder:  # pragma: no cover - every interpreter has one
        return
    import triton.language.extra.libdevice as libdevice

    for name, (compute, result_dtype) in _FUNCTIONS.items():
        setattr(libdevice, name, _interpreted(name, compute, result_dtype))


def _interpreted(name: str, compute: Callable[..., torch.Tensor], result_dtype: str | None) -> Callable[..., Any]:
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def function(*args: Any, **_: Any) -> Any:
        first = next((arg for arg in args if isinstance(arg, tl.core.tensor)), None)
        if first is None:
            raise TypeError(f"libdevice.{name} needs a tensor operand in Triton's interpreter")
        operands = [
            torch.from_numpy(np.ascontiguousarray(arg.handle.data))
            if isinstance(arg, tl.core.tensor)
            else torch.tensor(arg, dtype=torch.from_numpy(np.ascontiguousarray(first.handle.data)).dtype)
            for arg in args
        ]
        result = compute(*operands).numpy()
        element = first.dtype if result_dtype is None else getattr(tl, result_dtype)
        if result_dtype is None:
            result = result.astype(first.handle.data.dtype, copy=False)
        kind = tl.block_type(element, list(result.shape)) if result.ndim else element
        return tl.core.tensor(TensorHandle(np.asarray(result), element), kind)

    function.__name__ = function.__qualname__ = name
    return function
