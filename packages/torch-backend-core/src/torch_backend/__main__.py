"""``python -m torch_backend`` / ``torch-backend``: installed backends, availability, active device."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch_backend._backend import BackendInfo
    from torch_backend._intree import InTreeAccelerator


def report() -> str:
    import torch

    from torch_backend import __version__, active_backend, discover
    from torch_backend._activation import coexistence_warning
    from torch_backend._compat import unsupported_torch
    from torch_backend._discovery import SELECT_ENV
    from torch_backend._intree import in_tree_accelerator

    lines = [f"torch-backend {__version__} (torch {torch.__version__})"]
    unsupported = unsupported_torch()
    if unsupported is not None:
        lines.append(f"warning: {unsupported}")
    setting = os.environ.get(SELECT_ENV) or "unset: automatic"
    lines.append(f"{SELECT_ENV}: {setting}")
    accelerator = in_tree_accelerator()
    if accelerator is None:
        lines.append("PyTorch's own accelerator: none (a CPU-only build of torch)")
    else:
        state = "usable" if accelerator.usable else "not usable here"
        lines.append(f"PyTorch's own accelerator: {accelerator.device_type}, {state}: {accelerator.detail}")
    infos = discover()
    lines.append("installed backends (highest priority first):")
    if not infos:
        lines.append("  none")
    for info in infos:
        state = "available" if info.available else "unavailable"
        lines.append(f"  {info.name:<6} {info.distribution:<22} priority {info.priority:<3} {state}: {info.reason}")
    active = active_backend()
    if active is None:
        lines.append(f"active: none{_why_none_active(infos, accelerator)}")
        return "\n".join(lines)
    if accelerator is not None and accelerator.usable:
        lines.append(f"warning: {coexistence_warning(active.name, accelerator)}")
    module = getattr(torch, active.name)
    count = module.device_count()
    lines.append(f"active: {active.name} ({count} device{'s' if count != 1 else ''})")
    for index in range(count):
        props = module.get_device_properties(index)
        lines.append(
            f"  {active.name}:{index}  {props.name}  {props.total_memory >> 20} MiB  capability {props.capability}"
        )
    lines.append(f"torch.distributed: {_collectives(active.name)}")
    return "\n".join(lines)


def _collectives(device: str) -> str:
    """Which c10d backend init_process_group() gives the device, and what it runs on."""
    import torch.distributed as dist

    from torch_backend import _C

    if not dist.is_available():
        return "not in this build of torch"
    default = dist.Backend.default_device_backend_map.get(device, "none")
    if _C._has_device_collectives():
        from torch_backend import _distributed

        library = _distributed.collectives_library_name()
        return f"init_process_group() gives '{default}' ({library}, on the device's streams); 'staged_gloo' by name"
    return f"init_process_group() gives '{default}' (through Gloo: the device library has no collectives)"


def _why_none_active(infos: list[BackendInfo], accelerator: InTreeAccelerator | None) -> str:
    from torch_backend._discovery import requested

    if requested() is not None:
        return ""  # none requested, or the request failed (its warning said why)
    available = [i.name for i in infos if i.available]
    if not available:
        return " (no installed backend is available)"
    if accelerator is not None and accelerator.usable:
        return (
            f" (PyTorch's own '{accelerator.device_type}' is usable, so no backend is activated implicitly: "
            f"PyTorch serves one accelerator type per process; set TORCH_BACKEND={available[0]} to activate "
            f"'{available[0]}' anyway, which breaks backward through '{accelerator.device_type}' tensors)"
        )
    return ""


def ops_report() -> str:
    """Which ops of core's kernel table run on the active backend's device kernels, and which fall back."""
    import torch  # noqa: F401  (activates the backend)

    from torch_backend import _C, active_backend

    active = active_backend()
    if active is None:
        return "ops: no backend is active (TORCH_BACKEND=none or none available)"
    rows = _C._op_table()
    on_device = [r for r in rows if r[3]]
    lines = [f"ops on '{active.name}': {len(on_device)} of {len(rows)} in core's kernel table run on device kernels"]
    forced = [r for r in rows if r[4]]
    if forced:
        lines[0] += f"; {len(forced)} forced onto the CPU fallback (TORCH_BACKEND_FORCE_FALLBACK)"
    for op, family, kernel, device, is_forced in rows:
        where = "device kernel" if device else "CPU fallback (forced)" if is_forced else "CPU fallback (no kernel)"
        lines.append(f"  {op:<24} {family:<8} {kernel:<10} {where}")
    lines.append("every other op runs on the CPU fallback")
    return "\n".join(lines)


def ops_markdown() -> str:
    """The active backend's ops on device kernels by kernel family, as docs/kernels.md lists them."""
    import torch  # noqa: F401  (activates the backend)

    from torch_backend import _C, active_backend

    if active_backend() is None:
        raise RuntimeError("ops --markdown: no backend is active (TORCH_BACKEND=none or none available)")
    rows = _C._op_table()
    families: dict[str, list[str]] = {}
    for op, family, _kernel, on_device, _forced in rows:
        families.setdefault(family, [])
        if on_device:
            families[family].append(op)
    count = sum(map(len, families.values()))
    lines = [f"{count} of the {len(rows)} ops of core's kernel table run on device kernels:", ""]
    for family, ops in families.items():
        listed = ", ".join(f"`{op}`" for op in sorted(ops)) if ops else "none (the CPU fallback)"
        lines.append(f"- {family} ({len(ops)}): {listed}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="torch-backend",
        description="torch-backend: the installed PyTorch backends, which one is active, and its ops.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("report", help="installed backends, availability and the active devices (the default)")
    ops = commands.add_parser(
        "ops", help="which ops run on the active backend's device kernels, which on the CPU fallback"
    )
    ops.add_argument(
        "--run",
        nargs=argparse.REMAINDER,
        metavar="SCRIPT [ARGS]",
        help="run a Python script and report where each op it called ran (counts, bytes copied, host "
        "time); last: what follows goes to the script",
    )
    ops.add_argument("--json", help="with --run (and before it): also write the report here as JSON")
    ops.add_argument(
        "--markdown", action="store_true", help="the ops on device kernels by family, as docs/kernels.md lists them"
    )
    new = commands.add_parser("new", help="write a new backend package that builds against this core")
    new.add_argument("name", help="the device name (torch.device('NAME'), torch.NAME)")
    new.add_argument("--dest", default=".", help="folder to create torch-backend-NAME in (default: here)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "new":
        return new_backend(args.name, args.dest)
    if args.command == "ops" and args.run is not None:
        return run_with_op_report(args.run, args.json)
    if args.command == "ops" and args.markdown:
        return emit(ops_markdown())
    return emit(ops_report() if args.command == "ops" else report())


def run_with_op_report(command: list[str], json_path: str | None) -> int:
    """Runs ``command`` (a script and its arguments) as ``python SCRIPT ARGS`` would, counting where its ops
    run; prints the report (and writes it as JSON) even if the script fails, then returns its status."""
    import runpy

    from torch_backend import op_report

    if not command:
        print("error: ops --run needs a script", file=sys.stderr)
        return 2
    status = 0
    sys.argv = list(command)
    sys.path.insert(0, str(Path(command[0]).resolve().parent))
    with op_report() as report:
        try:
            runpy.run_path(command[0], run_name="__main__")
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        except Exception:
            import traceback

            traceback.print_exc()
            status = 1
    if json_path:
        Path(json_path).write_text(report.to_json())
    emitted = emit(report.table())
    return status or emitted


def emit(text: str) -> int:
    """Prints ``text``; a reader that stops early (``| head``) ends the command quietly, as it does `ls`."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python would report the pipe again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def new_backend(name: str, destination: str) -> int:
    from torch_backend._scaffold import write

    try:
        root = write(name, Path(destination))
    except (ValueError, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {root}")
    print(f"next: pip install --no-build-isolation {root}  and  python -m torch_backend.testing {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
