"""Rank processes forked from an interpreter that has already imported torch, instead of started fresh.

A rank started fresh spends about 3 s importing torch and ``torch._dynamo`` (which PyTorch's optimizers
import when they are built) before it does anything; the kit starts about a hundred ranks. A fork server
pays that once: it imports them, then forks a child per rank, which runs the rank's script as ``__main__``
and ends through the interpreter's ordinary exit (atexit handlers, its own exit status).

What a child sees is what a fresh ``python SCRIPT ARGS`` would see:
- the environment it asked for, at import too: a server serves one exact environment, and a rank whose
  environment differs gets a server of its own (``Servers`` keeps the few most recently used);
- its own ``sys.argv``, ``sys.path[0]`` (the script's folder), working directory, ``__main__`` module, stdin
  (/dev/null) and stdout/stderr (a file);
- a device runtime not yet initialised: a server whose imports initialised it refuses to serve, and its
  ranks start fresh (``ready`` is false).

``TORCH_BACKEND_TEST_FORKSERVER=0`` starts every rank fresh instead (to rule the server out).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Set to 0 to start every rank in a fresh interpreter.
FORKSERVER_ENV = "TORCH_BACKEND_TEST_FORKSERVER"
#: Variables that differ from test to test and that nothing reads at import: a server does not need to be
#: started again for them (a child still gets its own value, which C++ code reads too: ``os.environ`` sets
#: the process environment). pytest's; the kit's settings for its rank scripts (``distributed_worker.py``,
#: ``parallel_worker.py``), which only those scripts read; the staging mode, read when a process group is
#: made; the flight recorder's dump settings, read when a collective fails. Each server costs a rank
#: process's import of torch (about 3 s), and the kit's distributed tests asked for 15 with these counted.
NOT_READ_AT_IMPORT = frozenset(
    {
        "PYTEST_CURRENT_TEST",
        "TORCH_BACKEND_TEST_DIST_BACKEND",
        "DIST_TEST_TIMEOUT_S",
        "PARALLEL_TEST_DIR",
        "TORCH_BACKEND_DIST_STAGING",
        "TORCH_FR_DUMP_ON_TIMEOUT",
        "TORCH_FR_DUMP_TEMP_FILE",
    }
)
#: What a server imports before it forks: what every rank imports first, and the slow part of starting.
PRELOADED = ("torch", "torch.distributed", "torch._dynamo")


def enabled() -> bool:
    return os.environ.get(FORKSERVER_ENV, "1") != "0"


# ----------------------------------------------------------------------------------------------------
# The server (``python -m torch_backend.testing._forkserver``): requests and replies are JSON lines on
# its stdin and stdout.


def _reply(message: dict) -> None:
    os.write(1, json.dumps(message).encode() + b"\n")


def _preload() -> str | None:
    """Imports what ranks import first; returns why the server cannot serve, or None."""
    import importlib

    try:  # the server learns of its children's exits through pidfds (Linux 5.3)
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as error:
        return f"no pidfds here ({error!r})"

    for name in PRELOADED:
        importlib.import_module(name)
    from torch_backend import active_backend

    backend = active_backend()
    if backend is not None:
        import torch

        module = getattr(torch, backend.name, None)
        if module is not None and module.is_initialized():
            return f"importing torch initialised {backend.name}'s runtime: a forked child could not use it"
    return None


def _serve() -> dict | None:
    """Forks a child per request until stdin closes. Returns the request in the child, None in the server."""
    children: dict[int, int] = {}  # pidfd -> pid: a pidfd becomes readable when its process has exited
    pending = b""
    while True:
        ready, _, _ = select.select([0, *children], [], [])
        for fd in ready:
            if fd != 0:
                pid = children.pop(fd)
                os.close(fd)
                _, status = os.waitpid(pid, 0)
                _reply({"exited": pid, "status": os.waitstatus_to_exitcode(status)})
                continue
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return None
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    for pidfd in children:
                        os.close(pidfd)
                    return request
                children[os.pidfd_open(pid)] = pid
                _reply({"started": request["id"], "pid": pid})


def _become(request: dict) -> None:
    """In a forked child: take the rank's stdio, place and arguments, and run its script as ``__main__``."""
    import atexit
    import gc
    import types

    # The preloaded objects are collectable again when the rank ends, as in a fresh process: at exit Python
    # frees what it can, and bindings that check for leaks then (nanobind's, in Triton) find none.
    atexit.register(gc.unfreeze)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # A rank that hangs tells where: the test process sends SIGUSR1 before it kills one (hang_report).
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)
    argv = request["argv"]
    main = types.ModuleType("__main__")
    if argv[0] == "-c":  # python -c CODE ARGS
        sys.argv, sys.path[0] = ["-c", *argv[2:]], ""
        code = compile(argv[1], "<string>", "exec")
    else:  # python SCRIPT ARGS
        sys.argv, sys.path[0] = list(argv), str(Path(argv[0]).resolve().parent)
        main.__file__ = argv[0]
        code = compile(Path(argv[0]).read_bytes(), argv[0], "exec")
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


# ----------------------------------------------------------------------------------------------------
# The client: the test process's side.


class Rank:
    """A rank started by a fork server or fresh: its pid, exit status (None while it runs) and output."""

    def __init__(self, pid: int, output: Path, server: Server | None, popen: subprocess.Popen | None) -> None:
        self.pid, self.output_path, self._server, self._popen = pid, output, server, popen
        self.returncode: int | None = None
        self._output: str | None = None

    def wait(self, timeout: float | None) -> int:
        """The exit status; raises subprocess.TimeoutExpired after ``timeout`` seconds."""
        if self.returncode is None:
            if self._popen is not None:
                self.returncode = self._popen.wait(timeout)
            else:
                assert self._server is not None
                self.returncode = self._server.wait(self.pid, timeout)
        return self.returncode

    def kill(self) -> None:
        # A server's rank may have ended and been reaped already: its pid could be another process's by now.
        if self.returncode is None and (self._server is None or not self._server.has_exited(self.pid)):
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass

    def output(self) -> str:
        """What it wrote (read once: the file is removed then)."""
        if self._output is None:
            self._output = self.output_path.read_text(errors="replace")
            self.output_path.unlink(missing_ok=True)
        return self._output


class Server:
    """One fork server, serving one exact environment."""

    def __init__(self, env: dict[str, str]) -> None:
        self._log = tempfile.NamedTemporaryFile(prefix="torch-backend-forkserver-", suffix=".log")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._pending = b""
        self._exits: dict[int, int] = {}
        self._next_id = 0
        hello = self._read(timeout=120.0)
        self.refusal: str | None = None if hello is None else hello.get("refused")
        if hello is None or "ready" not in hello:
            self.refusal = self.refusal or f"the fork server did not start:\n{self._log_text()}"
            self.close()

    @property
    def ready(self) -> bool:
        return self.refusal is None

    def _log_text(self) -> str:
        return Path(self._log.name).read_text(errors="replace")

    def _read(self, timeout: float | None) -> dict | None:
        """The server's next message, None if it ended; raises subprocess.TimeoutExpired on ``timeout``."""
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                raise subprocess.TimeoutExpired("fork server", timeout or 0.0)
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def _next(self, timeout: float | None) -> dict:
        message = self._read(timeout)
        if message is None:
            raise RuntimeError(f"the fork server ended unexpectedly:\n{self._log_text()}")
        if "exited" in message:
            self._exits[message["exited"]] = message["status"]
        return message

    def start(self, argv: list[str], env: dict[str, str], cwd: str) -> Rank:
        assert self._proc.stdin is not None
        fd, output = tempfile.mkstemp(prefix="torch-backend-rank-", suffix=".log")
        os.close(fd)
        self._next_id += 1
        request = {"id": self._next_id, "argv": argv, "env": env, "cwd": cwd, "output": output}
        try:
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise RuntimeError(f"the fork server has ended:\n{self._log_text()}") from None
        while True:
            message = self._next(timeout=60.0)
            if message.get("started") == self._next_id:
                return Rank(message["pid"], Path(output), self, None)

    def has_exited(self, pid: int) -> bool:
        """Whether the server has reported ``pid``'s exit (reading what it has sent, without waiting)."""
        try:
            while pid not in self._exits:
                self._next(timeout=0.0)
        except subprocess.TimeoutExpired:
            pass
        return pid in self._exits

    def wait(self, pid: int, timeout: float | None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while pid not in self._exits:
            self._next(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self._exits.pop(pid)

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()


class Servers:
    """The fork servers of a test process, one per environment, the ``keep`` most recently used alive."""

    def __init__(self, keep: int = 3) -> None:
        self._keep = keep
        self._servers: dict[tuple, Server] = {}

    def for_env(self, env: dict[str, str]) -> Server | None:
        """A ready server for exactly this environment, or None (it refused: start ranks fresh)."""
        served = {name: value for name, value in env.items() if name not in NOT_READ_AT_IMPORT}
        key = tuple(sorted(served.items()))
        server = self._servers.pop(key, None)
        if server is None:
            server = Server(served)
        self._servers[key] = server  # most recently used last
        while len(self._servers) > self._keep:
            oldest = next(iter(self._servers))
            self._servers.pop(oldest).close()
        return server if server.ready else None

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()


_SERVERS: Servers | None = None


def start_rank(argv: list[str], env: dict[str, str]) -> Rank:
    """``python ARGV`` (``SCRIPT ARGS`` or ``-c CODE ARGS``) with environment ``env``: forked from a server for
    ``env`` where it can be, else fresh."""
    global _SERVERS
    if enabled() and (argv[0] == "-c" or not argv[0].startswith("-")):  # a script or -c; other options: fresh
        if _SERVERS is None:
            import atexit

            _SERVERS = Servers()
            atexit.register(_SERVERS.close)
        server = _SERVERS.for_env(env)
        if server is not None:
            return server.start(argv, env, os.getcwd())
    fd, output = tempfile.mkstemp(prefix="torch-backend-rank-", suffix=".log")
    with os.fdopen(fd, "w") as out:
        popen = subprocess.Popen([sys.executable, *argv], env=env, stdout=out, stderr=subprocess.STDOUT)
    return Rank(popen.pid, Path(output), None, popen)


if __name__ == "__main__":
    refusal = _preload()
    if refusal is not None:
        _reply({"refused": refusal})
        sys.exit(0)
    # The preloaded objects are long-lived: frozen, the children's collections while they run do not walk
    # them (each child unfreezes them at exit, _become).
    import gc

    gc.freeze()
    _reply({"ready": True})
    request = _serve()
    if request is not None:
        _become(request)
