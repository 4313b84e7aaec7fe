"""One rank of a distributed test: ``python distributed_worker.py SCENARIO PORT RANK WORLD_SIZE``.

Joins the TCP store the test process serves on PORT, runs SCENARIO and exits 0
only if every check held. Run by test_distributed.py (its name keeps pytest from collecting it).
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from torch_backend._compat import gloo_has_list_all_to_all, single_tensor_collectives
from torch_backend.testing import device_module, device_type

DEVICE = device_type()
dev = device_module()

STAGED = "staged_gloo"
#: The c10d backend the ranks use: the staged one unless the test names core's native one.
BACKEND = os.environ.get("TORCH_BACKEND_TEST_DIST_BACKEND", STAGED)
all_gather_single, reduce_scatter_single = single_tensor_collectives()


#: The test's TCP store, as this rank joined it (stalled ranks and survivors meet there after a failure).
STORE: dist.Store | None = None


def join(port: int, rank: int, world: int, timeout_s: float = 60.0, bind_device: bool = False) -> None:
    global STORE
    STORE = store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timedelta(seconds=timeout_s))
    backend = None if BACKEND == "default" else BACKEND  # "default": none named
    # device_id= binds the group to this rank's device (eager communicators; split_group needs it).
    device_id = torch.device(DEVICE, rank % dev.device_count()) if bind_device else None
    dist.init_process_group(
        backend, store=store, rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s), device_id=device_id
    )


def check(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    if actual.device.type != DEVICE:
        raise AssertionError(f"{what}: result moved to {actual.device}")
    torch.testing.assert_close(actual.cpu(), expected, msg=lambda m: f"{what}: {m}")


def layouts(device: str) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Ways to put a 1-D CPU tensor on the device: contiguous, and a strided view."""

    def strided(t: torch.Tensor) -> torch.Tensor:
        # Every other element of a twice-as-long buffer: a non-contiguous view.
        view = torch.full((2 * t.numel(),), -7.0, dtype=t.dtype, device=device)[::2]
        view.copy_(t)
        assert not view.is_contiguous()
        return view

    return {"contiguous": lambda t: t.to(device), "strided": strided}


def run_ops(rank: int, world: int, device: str, make: Callable[[torch.Tensor], torch.Tensor], label: str) -> None:
    n = 6
    W = world  # noqa: N806 - reads like the formulas it checks
    val = float(rank + 1)

    def ones(v: float) -> torch.Tensor:
        return torch.full((n,), float(v))

    # broadcast from the last rank
    t = make(ones(val))
    dist.broadcast(t, src=W - 1)
    check(t, ones(W), f"{label} broadcast")

    # all_reduce, every op
    expected = {
        dist.ReduceOp.SUM: W * (W + 1) / 2,
        dist.ReduceOp.PRODUCT: float(torch.arange(1, W + 1).prod()),
        dist.ReduceOp.MIN: 1.0,
        dist.ReduceOp.MAX: float(W),
        dist.ReduceOp.AVG: (W + 1) / 2,
    }
    for op, value in expected.items():
        t = make(ones(val))
        dist.all_reduce(t, op=op)
        check(t, ones(value), f"{label} all_reduce {op}")

    if BACKEND != STAGED:  # PREMUL_SUM (FSDP2 on NCCL uses it): each input scaled, then summed
        t = make(ones(val))
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
        check(t, ones(0.5 * W * (W + 1) / 2), f"{label} all_reduce PREMUL_SUM")

    # reduce to rank 1: only the root's result is defined
    t = make(ones(val))
    dist.reduce(t, dst=1, op=dist.ReduceOp.SUM)
    if rank == 1:
        check(t, ones(W * (W + 1) / 2), f"{label} reduce")

    # all_gather (list) and all_gather_single
    outs = [make(ones(-1.0)) for _ in range(W)]
    dist.all_gather(outs, make(ones(val)))
    for i, out in enumerate(outs):
        check(out, ones(i + 1), f"{label} all_gather[{i}]")
    flat = make(torch.zeros(W * n))
    all_gather_single(flat, make(ones(val)))
    check(flat, torch.cat([ones(i + 1) for i in range(W)]), f"{label} all_gather_single")

    # reduce_scatter (list) and reduce_scatter_single: chunk i of rank r holds (r+1)*(i+1)
    total = W * (W + 1) / 2
    out = make(ones(-1.0))
    dist.reduce_scatter(out, [make(ones(val * (i + 1))) for i in range(W)])
    check(out, ones(total * (rank + 1)), f"{label} reduce_scatter")
    out = make(ones(-1.0))
    reduce_scatter_single(out, make(torch.cat([ones(val * (i + 1)) for i in range(W)])), op=dist.ReduceOp.AVG)
    check(out, ones(total * (rank + 1) / W), f"{label} reduce_scatter_single avg")

    # all_to_all_single: rank r sends r*W + j to rank j
    send = make(torch.tensor([float(rank * W + j) for j in range(W)]))
    recv = make(torch.full((W,), -1.0))
    dist.all_to_all_single(recv, send)
    check(recv, torch.tensor([float(j * W + rank) for j in range(W)]), f"{label} all_to_all_single")
    recvs = [make(ones(-1.0)) for _ in range(W)]
    if gloo_has_list_all_to_all() or BACKEND != STAGED:  # the native backend has it on every torch
        dist.all_to_all(recvs, [make(ones(rank * W + j)) for j in range(W)])
        for j, got in enumerate(recvs):
            check(got, ones(j * W + rank), f"{label} all_to_all[{j}]")
    else:  # staged, torch 2.11: a clear error, and the group stays usable
        try:
            dist.all_to_all(recvs, [make(ones(rank * W + j)) for j in range(W)])
        except RuntimeError as error:
            if "needs torch 2.12 or newer" not in str(error):
                raise
        else:
            raise AssertionError(f"{label} all_to_all ran on a torch whose Gloo lacks it")

    # gather to and scatter from rank 0
    gathered = [make(ones(-1.0)) for _ in range(W)] if rank == 0 else None
    dist.gather(make(ones(val)), gathered, dst=0)
    if rank == 0:
        for i, got in enumerate(gathered):
            check(got, ones(i + 1), f"{label} gather[{i}]")
    out = make(ones(-1.0))
    dist.scatter(out, [make(ones(10.0 + i)) for i in range(W)] if rank == 0 else None, src=0)
    check(out, ones(10.0 + rank), f"{label} scatter")

    # send / recv around the ring
    got = make(ones(-1.0))
    reqs = [dist.isend(make(ones(val)), (rank + 1) % W), dist.irecv(got, (rank - 1) % W)]
    for req in reqs:
        req.wait()
    check(got, ones((rank - 1) % W + 1), f"{label} send/recv")

    # a batch both ways round the ring, each message larger than a collective library's eager buffer
    # (fake's mailbox is 1 MiB): it completes only if the batch's sends and receives run together
    big = 3 << 18  # elements: 3 MiB of float32
    prev, after = (rank - 1) % W, (rank + 1) % W
    from_prev, from_next = make(torch.zeros(big)), make(torch.zeros(big))
    batch = [
        dist.P2POp(dist.isend, make(torch.full((big,), val)), after),
        dist.P2POp(dist.isend, make(torch.full((big,), -val)), prev),
        dist.P2POp(dist.irecv, from_prev, prev),
        dist.P2POp(dist.irecv, from_next, after),
    ]
    for req in dist.batch_isend_irecv(batch):
        req.wait()
    check(from_prev, torch.full((big,), float(prev + 1)), f"{label} batch_isend_irecv from the previous rank")
    check(from_next, torch.full((big,), -float(after + 1)), f"{label} batch_isend_irecv from the next rank")

    # coalesced, as DDP and FSDP issue them
    a, b = make(ones(val)), make(ones(2 * val))
    with dist._coalescing_manager(device=torch.device(device)):
        dist.all_reduce(a)
        dist.all_reduce(b)
    check(a, ones(total), f"{label} coalesced all_reduce[0]")
    check(b, ones(2 * total), f"{label} coalesced all_reduce[1]")
    outs = [make(torch.zeros(W * n)) for _ in range(2)]
    with dist._coalescing_manager(device=torch.device(device)):
        for k, o in enumerate(outs):
            all_gather_single(o, make(ones(val + 10 * k)))
    for k, o in enumerate(outs):
        check(o, torch.cat([ones(i + 1 + 10 * k) for i in range(W)]), f"{label} coalesced all_gather[{k}]")
    outs = [make(ones(-1.0)) for _ in range(2)]
    with dist._coalescing_manager(device=torch.device(device)):
        for k, o in enumerate(outs):
            reduce_scatter_single(o, make(torch.cat([ones(val * (i + 1) + k) for i in range(W)])))
    for k, o in enumerate(outs):
        check(o, ones(total * (rank + 1) + W * k), f"{label} coalesced reduce_scatter[{k}]")

    dist.barrier()


def scenario_ops(rank: int, world: int) -> None:
    """Every operation, contiguous and strided, on devices 0 and 1, aliased and pinned-staged."""
    for device in [f"{DEVICE}:{index}" for index in range(min(2, dev.device_count()))]:
        for label, make in layouts(device).items():
            staging = os.environ.get("TORCH_BACKEND_DIST_STAGING", "auto")
            run_ops(rank, world, device, make, f"[{device} {label} {staging}]")


def scenario_ordering(rank: int, world: int) -> None:
    """Collectives see earlier stream work; async work's wait() and future deliver the result."""
    dev.set_device(0)
    side = dev.Stream()
    src = torch.full((1024,), float(rank + 1)).pin_memory()
    t = torch.zeros(1024, device=DEVICE)
    with dev.stream(side):
        dev._sleep(200_000)  # the copy below lands only after 0.2 s
        t.copy_(src, non_blocking=True)
        work = dist.all_reduce(t, async_op=True)
    work.wait()
    check(t, torch.full((1024,), world * (world + 1) / 2), "all_reduce after queued copy")
    fut = dist.all_reduce(t, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2).wait()
    check(t, torch.full((1024,), world * world * (world + 1) / 2), "future result in place")
    check(doubled, torch.full((1024,), float(world * world * (world + 1))), "future value")


def scenario_groups(rank: int, world: int) -> None:
    """Subgroups get their own staged backend; object collectives ride on device tensors."""
    members = [0, world - 1]
    group = dist.new_group(members)  # every rank must take part in creating it
    t = torch.full((3,), float(rank + 1), device=DEVICE)
    if rank in members:
        dist.all_reduce(t, group=group)
        check(t, torch.full((3,), float(1 + world)), "subgroup all_reduce")
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank, "name": f"r{rank}"})
    assert objects == [{"rank": r, "name": f"r{r}"} for r in range(world)], objects
    box = [f"from {rank}"] if rank == 0 else [None]
    dist.broadcast_object_list(box, src=0)
    assert box == ["from 0"], box


def scenario_split(rank: int, world: int) -> None:
    """split_group: the first and last ranks get a group of their own (device and CPU tensors), the
    others none; the parent group keeps working, and a second split from it too."""
    members = [0, world - 1]
    device = torch.device(DEVICE, rank % dev.device_count())
    group = dist.split_group(split_ranks=[members])
    if rank not in members:  # torch 2.15 answers GroupMember.NON_GROUP_MEMBER, earlier releases None
        assert group is None or group == dist.GroupMember.NON_GROUP_MEMBER, group
    else:
        assert group is not None and dist.get_process_group_ranks(group) == members, group
        t = torch.full((3,), float(rank + 1), device=device)
        dist.all_reduce(t, group=group)
        check(t, torch.full((3,), float(1 + world)), "split group all_reduce")
        on_cpu = torch.full((2,), float(rank + 1))
        dist.all_reduce(on_cpu, group=group)
        torch.testing.assert_close(on_cpu, torch.full((2,), float(1 + world)), msg="split group CPU all_reduce")
        dist.destroy_process_group(group)
    t = torch.full((3,), float(rank + 1), device=device)
    dist.all_reduce(t)
    check(t, torch.full((3,), float(world * (world + 1) / 2)), "parent all_reduce after the split")
    pairs = [list(range(world))[i : i + 2] for i in range(0, world, 2)]
    mine = dist.split_group(split_ranks=pairs)
    pair = next(p for p in pairs if rank in p)
    t = torch.full((3,), float(rank + 1), device=device)
    dist.all_reduce(t, group=mine)
    check(t, torch.full((3,), float(sum(r + 1 for r in pair))), "second split's all_reduce")


#: Scenarios whose group is bound to the rank's device (init_process_group(device_id=...)).
BOUND = {"split"}


def scenario_fsdp(rank: int, world: int) -> None:
    """FSDP2 (fully_shard) trains like one process on the whole batches."""
    from torch.distributed.fsdp import fully_shard

    device = torch.device(DEVICE, rank % dev.device_count())
    dev.set_device(device)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    reference.load_state_dict(model.state_dict())
    model.to(device)
    for layer in (model[0], model[2], model):
        fully_shard(layer)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference)]
    generator = torch.Generator().manual_seed(1)
    for _ in range(3):
        x = torch.randn(world * 4, 8, generator=generator)
        losses = [model(x[rank * 4 : (rank + 1) * 4].to(device)).pow(2).mean(), reference(x).pow(2).mean()]
        for optimizer, loss in zip(optimizers, losses, strict=True):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    for name, expected in reference.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name].full_tensor().cpu(), expected, msg=name)


def scenario_errors(rank: int, world: int) -> None:
    """Bad input gets PyTorch's kinds of errors, and the group stays usable."""
    t = torch.ones(4, dtype=torch.int64, device=DEVICE)
    try:
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
    except ValueError as e:
        assert "floating-point" in str(e), e
    else:
        raise AssertionError("AVG on int64 did not raise")
    t = torch.ones(4, device=DEVICE)
    dist.all_reduce(t)
    check(t, torch.full((4,), float(world)), "all_reduce after a rejected call")


def stall_until_survivors_failed(timeout_s: float) -> None:
    """The stalled last rank: alive with its sockets open, joining nothing, until every other rank has seen
    its collective fail (or twice the group's timeout and a second, should one never report); exits 17."""
    assert STORE is not None
    survivors = [f"survivor_failed/{rank}" for rank in range(dist.get_world_size() - 1)]
    try:
        STORE.wait(survivors, timedelta(seconds=2 * timeout_s + 1))
    except dist.DistStoreError:  # a survivor that never failed: the test says so from its output
        pass
    os._exit(17)


def report_failed() -> None:
    """A survivor: its collective has failed, the stalled rank may end."""
    assert STORE is not None
    STORE.set(f"survivor_failed/{dist.get_rank()}", "1")


def expect_failure(collectives: Callable[[], None], what: str) -> None:
    """A surviving rank: `collectives` must raise. Reports the error and how long it took
    (the SURVIVOR_ERROR line test_distributed.py reads) and exits 3."""
    start = time.monotonic()
    try:
        collectives()
    except Exception as e:
        print(f"SURVIVOR_ERROR after {time.monotonic() - start:.1f}s: {type(e).__name__}: {e}", flush=True)
        report_failed()
        os._exit(3)
    raise AssertionError(f"{what} did not fail")


def scenario_die(rank: int, world: int) -> None:
    """The last rank dies after one collective; the others must fail, not hang."""
    t = torch.ones(4, device=DEVICE)
    dist.all_reduce(t)
    if rank == world - 1:
        os._exit(17)
    time.sleep(0.5)

    def many() -> None:
        for _ in range(100):
            dist.all_reduce(t)
            dev.synchronize()  # where collectives return at once (native): wait for each

    expect_failure(many, "collectives with a dead peer")


def scenario_stall(rank: int, world: int) -> None:
    """The last rank stops taking part (alive, sockets open); the others must time out."""
    t = torch.ones(4, device=DEVICE)
    dist.all_reduce(t)
    if rank == world - 1:
        stall_until_survivors_failed(float(os.environ["DIST_TEST_TIMEOUT_S"]))

    def stalled() -> None:
        dist.all_reduce(t)  # staged: raises after the timeout
        dev.synchronize()  # native: the watchdog aborts the collective after it ...
        dist.all_reduce(t)  # ... and the next one raises its error

    expect_failure(stalled, "a collective with a stalled peer")


def read_failed_output(t: torch.Tensor, what: str, point_to_point: bool = False) -> None:
    """A surviving rank's collective (an all_reduce into `t`, or a grouped receive into it from the last
    rank) fails after wait() returned (async_op, so wait() only orders the stream): every read of its
    output must raise, never hand back the stale input. Reports the first error and how long it took
    (SURVIVOR_ERROR), checks that later reads raise too, and exits 3 through the interpreter's ordinary
    exit (the process's own status)."""
    expected = t.cpu() * dist.get_world_size()
    start = time.monotonic()
    if point_to_point:
        ops = [dist.P2POp(dist.irecv, t, dist.get_world_size() - 1)]
        works = dist.batch_isend_irecv(ops)
    else:
        works = [dist.all_reduce(t, async_op=True)]
    for work in works:
        work.wait()
    # Events carry the failure to the streams that wait for them, as they carry the work.
    event = dev.Event()
    event.record()
    side = dev.Stream()
    side.wait_event(event)
    reads: list[tuple[str, Callable[[], object]]] = [
        ("tensor.cpu()", t.cpu),
        ("synchronize()", dev.synchronize),
        ("tensor.item()", lambda: t.sum().item()),
        ("stream.synchronize()", lambda: dev.current_stream().synchronize()),
        ("event.synchronize()", event.synchronize),
        ("a stream that waited for the event: synchronize()", side.synchronize),
    ]
    for name, read in reads:
        try:
            value = read()
        except dist.DistBackendError as e:  # the type torch raises for NCCL's failures, from every read
            if name == reads[0][0]:
                print(f"SURVIVOR_ERROR after {time.monotonic() - start:.1f}s: {type(e).__name__}: {e}", flush=True)
            continue
        raise AssertionError(f"{what}: {name} returned {value!r} with no error (input {expected.tolist()})")
    report_failed()
    sys.exit(3)


def scenario_stale_die(rank: int, world: int) -> None:
    """The last rank dies; a survivor's output of the collective it never joined is never read."""
    t = torch.ones(4, device=DEVICE)
    dist.all_reduce(t)
    dev.synchronize()
    if rank == world - 1:
        os._exit(17)
    time.sleep(0.5)
    read_failed_output(t, "a collective with a dead peer")


def stall_then_read(rank: int, world: int, point_to_point: bool) -> None:
    """The last rank stops joining (alive); the survivor's output fails at the group's timeout."""
    t = torch.ones(4, device=DEVICE)
    dist.all_reduce(t)
    dev.synchronize()
    if rank == world - 1:
        stall_until_survivors_failed(float(os.environ["DIST_TEST_TIMEOUT_S"]))
    read_failed_output(t, "a collective with a stalled peer", point_to_point)


def scenario_stale_stall(rank: int, world: int) -> None:
    stall_then_read(rank, world, point_to_point=False)


def scenario_stale_stall_p2p(rank: int, world: int) -> None:
    """The same for a grouped receive (batch_isend_irecv: the library's group path)."""
    stall_then_read(rank, world, point_to_point=True)


def scenario_default_backend(rank: int, world: int) -> None:
    """init_process_group() naming no backend: the native one serves the device (CPU tensors need a
    backend named, as with CUDA's NCCL)."""
    from torch_backend.distributed import native_backend_name

    device = torch.device(DEVICE, rank % dev.device_count())
    config = dist.get_backend_config()
    assert f"{DEVICE}:{native_backend_name(DEVICE)}" in config, config
    t = torch.full((3,), float(rank + 1), device=device)
    dist.all_reduce(t)
    check(t, torch.full((3,), float(world * (world + 1) / 2)), "all_reduce on the default backend")


def scenario_ddp_timing(rank: int, world: int) -> None:
    """DDP's own runtime statistics read the device's stream clock."""
    device = torch.device(DEVICE, rank % dev.device_count())
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64).to(device), device_ids=[device.index])
    for _ in range(3):
        model(torch.randn(32, 64, device=device)).sum().backward()
    stats = model._get_ddp_logging_data()
    for key in ("avg_backward_compute_time", "avg_backward_comm_time"):
        assert stats.get(key, 0) > 0, f"{key} missing or zero: {stats}"


def scenario_ddp_profiled(rank: int, world: int) -> None:
    """A profiled DDP step shows its gradient all_reduce as NCCL's do: a record_param_comms event in the
    Chrome trace with the collective's name, element count, dtype and group size."""
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    device = torch.device(DEVICE, rank % dev.device_count())
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64).to(device), device_ids=[device.index])
    model(torch.randn(8, 64, device=device)).sum().backward()  # DDP's first step builds its buckets
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(torch.randn(8, 64, device=device)).sum().backward()
        dev.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as trace:
            events = json.load(trace)["traceEvents"]
    comms = [e["args"] for e in events if e.get("name") == "record_param_comms"]
    gradients = 64 * 64 + 64  # one bucket: the weight's and the bias's gradients
    found = [c for c in comms if c.get("Collective name") == "all_reduce" and c.get("In msg nelems") == gradients]
    assert found, f"no all_reduce of {gradients} elements among the trace's collectives: {comms}"
    assert found[0]["dtype"] == "Float" and found[0]["Group size"] == world, found[0]


def scenario_cpu_batched_p2p(rank: int, world: int) -> None:
    """batch_isend_irecv of CPU tensors in a group whose device backend also serves the CPU (through
    Gloo): waiting for the batch's work waits for Gloo's transfers, so the received tensor holds the
    peer's data (pipeline schedules exchange activations and gradients this way)."""
    peer = (rank + 1) % world, (rank - 1) % world
    for step in range(5):
        sent = torch.full((1 << 20,), float(rank * 100 + step))
        received = torch.zeros(1 << 20)
        ops = [dist.P2POp(dist.isend, sent, peer[0]), dist.P2POp(dist.irecv, received, peer[1])]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        expected = torch.full((1 << 20,), float(peer[1] * 100 + step))
        torch.testing.assert_close(received, expected, msg=lambda m, step=step: f"step {step}: {m}")


def seventh_all_reduce_fails_but_on_rank_1(rank: int, world: int, exit_on_error: bool) -> float:
    """Six all_reduces on every rank, then a seventh that rank 1 never issues: on the others it must fail
    (prints FAILED with the error; ``exit_on_error``: then os._exit(0) at once). Returns when the seventh
    began (time.monotonic())."""
    t = torch.ones(4, device=DEVICE)
    for _ in range(6):
        dist.all_reduce(t)
        dev.synchronize()
    check(t, torch.full((4,), float(world**6)), "six all_reduces")
    start = time.monotonic()
    if rank == 1:
        return start
    try:
        dist.all_reduce(t)
        dev.synchronize()
    except Exception as e:
        print(f"FAILED after {time.monotonic() - start:.1f}s: {e}", flush=True)
        if exit_on_error:
            os._exit(0)
        return start
    raise AssertionError("the seventh all_reduce did not fail")


def scenario_flight_recorder(rank: int, world: int) -> None:
    """Rank 1 never issues the seventh all_reduce: it stays in host code past the group's timeout. The
    others' seventh all_reduce fails, and every rank writes its flight-recorder dump (rank 1 told through
    the store). Prints FAILED (the error) and DUMPED_AFTER (seconds from the seventh collective)."""
    timeout_s = float(os.environ["DIST_TEST_TIMEOUT_S"])
    dump = Path(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank))
    start = seventh_all_reduce_fails_but_on_rank_1(rank, world, exit_on_error=False)
    unreadable = None
    while time.monotonic() < start + timeout_s + 30:
        try:
            if dump.exists() and pickle.loads(dump.read_bytes())["entries"]:
                print(f"DUMPED_AFTER {time.monotonic() - start:.1f}s", flush=True)
                return
        except (EOFError, pickle.UnpicklingError) as e:
            # PyTorch's DebugInfoWriter (the default, or one the user registered) writes the file in
            # place, not by renaming: this poll can read it while the watchdog is still writing it.
            unreadable = e
        time.sleep(0.2)
    detail = f" (the last read failed: {unreadable!r})" if unreadable else ""
    raise AssertionError(f"rank {rank} wrote no complete flight-recorder dump to {dump}{detail}")


def scenario_flight_recorder_exit(rank: int, world: int) -> None:
    """As flight_recorder, but each rank whose seventh all_reduce failed ends its process the moment the error
    reaches it (os._exit, as a script that dies on it, or torchrun ending the others, leaves no time). Rank 1
    ends once its own dump is written. Every dump must exist all the same: the error reaches the caller only
    after the group's dumps (TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC bounds the wait). The group's store is served by
    rank 0, as init_process_group's env:// serves it: its exit takes the store, and with it the request to
    dump, away from the others."""
    timeout_s = float(os.environ["DIST_TEST_TIMEOUT_S"])
    dump = Path(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank))
    assert STORE is not None
    if rank == 0:
        served = dist.TCPStore("127.0.0.1", 0, world, is_master=True, wait_for_workers=False)
        STORE.set("rank0_store_port", str(served.port))
    else:
        port = int(STORE.get("rank0_store_port"))
        served = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timedelta(seconds=timeout_s + 60))
    dist.destroy_process_group()
    dist.init_process_group(BACKEND, store=served, rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s))
    start = seventh_all_reduce_fails_but_on_rank_1(rank, world, exit_on_error=True)
    while time.monotonic() < start + timeout_s + 30:
        if dump.exists():
            time.sleep(0.5)  # written in place: let it finish
            print(f"DUMPED_AFTER {time.monotonic() - start:.1f}s", flush=True)
            os._exit(0)
        time.sleep(0.1)
    print(f"rank {rank} wrote no flight-recorder dump to {dump}", flush=True)
    os._exit(1)


def scenario_recorded(rank: int, world: int) -> None:
    """The flight recorder holds every op with its group, global ranks, sequence numbers, sizes and state."""
    from torch_backend.distributed import dump_flight_recorder

    t = torch.ones(8, device=DEVICE)
    dist.all_reduce(t)
    gathered = torch.empty(8 * world, device=DEVICE)
    dist.all_gather_into_tensor(gathered, t)
    peer = (rank + 1) % world, (rank - 1) % world
    dist.batch_isend_irecv([dist.P2POp(dist.isend, t, peer[0]), dist.P2POp(dist.irecv, torch.empty_like(t), peer[1])])
    pair = dist.new_group([1, 2])
    if rank in (1, 2):
        dist.all_reduce(t, group=pair)
    dev.synchronize()
    time.sleep(0.5)  # the watchdog polls every 100 ms: every op is seen finished by then
    trace = pickle.loads(dump_flight_recorder(include_stack_traces=False))
    configs = {c["desc"]: c["ranks"] for c in trace["pg_config"].values()}
    assert configs["default_pg"] == str(list(range(world))), trace["pg_config"]
    if rank in (1, 2):
        assert "[1, 2]" in configs.values(), trace["pg_config"]
    entries = trace["entries"]
    names = [e["profiling_name"].split(":", 1)[1] for e in entries]
    expected = ["all_reduce", "_all_gather_base", f"send {rank}->{peer[0]}", f"recv {rank}<-{peer[1]}"]
    expected += ["all_reduce"] if rank in (1, 2) else []
    assert names == expected, names
    default = [e for e in entries if e["process_group"][1] == "default_pg"]
    assert [(e["collective_seq_id"], e["p2p_seq_id"]) for e in default] == [(1, 0), (2, 0), (2, 1), (2, 2)], default
    assert default[1]["input_sizes"] == [[8]] and default[1]["output_sizes"] == [[8 * world]], default[1]
    assert default[0]["input_dtypes"] == ["Float"] and default[0]["is_p2p"] is False, default[0]
    assert all(e["state"] == "completed" and e["retired"] for e in entries), entries


SCENARIOS = {name.removeprefix("scenario_"): f for name, f in globals().items() if name.startswith("scenario_")}


def main() -> None:
    scenario, port, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    timeout_s = float(os.environ.get("DIST_TEST_TIMEOUT_S", "60"))
    join(port, rank, world, timeout_s, bind_device=scenario in BOUND)
    SCENARIOS[scenario](rank, world)
    dist.destroy_process_group()
    print(f"rank {rank}: {scenario} ok", flush=True)


if __name__ == "__main__":
    main()
