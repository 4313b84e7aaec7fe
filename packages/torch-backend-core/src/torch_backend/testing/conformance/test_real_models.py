"""Hugging Face models built from tiny configs (no weights downloaded), moved to the device as users move
them, trained three AdamW steps: the CPU's losses, parameters and greedy `generate()` tokens.

Both tie their input embedding to their output projection (GPT-2 always, Llama where its config
asks, as Llama 3.2's does): a tie split by `.to(device)` trains two copies and drifts from the CPU.
Needs `transformers` (CI installs it).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from torch_backend.testing.conformance._support import DEVICE

transformers = pytest.importorskip("transformers")

VOCAB = 64
STEPS = 3
LR = 1e-2
# Room for a device's own reduction order (float32): losses and tokens follow the forward pass closely.
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
# Adam divides each gradient by its own running magnitude, so a weight whose gradient is near zero moves
# by up to LR per step whichever way its last bits fall (measured: 1e-3 between fake and the CPU, which
# differ by 1e-8 in gradients). A split tie moves whole matrices by about LR a step; the tie and the
# parameter count are checked exactly besides.
PARAMETER_TOLERANCE = {"rtol": 0.0, "atol": LR / 4}


def gpt2() -> torch.nn.Module:
    config = transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def llama() -> torch.nn.Module:
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        tie_word_embeddings=True,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config)


def run(make: Callable[[], torch.nn.Module], device: str) -> dict[str, object]:
    torch.manual_seed(0)
    model = make().to(device)  # built on the CPU, then moved: no tie_weights() afterwards
    # The same implementation on both sides (PyTorch picks foreach for accelerators only).
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, foreach=True)
    tokens = torch.randint(0, VOCAB, (2, 12), generator=torch.Generator().manual_seed(1)).to(device)
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        generated = model.generate(tokens[:1, :4], max_new_tokens=8, do_sample=False, pad_token_id=0)
    return {
        "parameters": len(list(model.parameters())),
        "tied": model.get_input_embeddings().weight is model.get_output_embeddings().weight,
        "losses": torch.tensor(losses),
        "state": {name: p.detach().cpu() for name, p in model.named_parameters()},
        "generated": generated.cpu(),
    }


@pytest.mark.parametrize("make", [gpt2, llama], ids=["gpt2", "llama"])
def test_trains_and_generates_as_on_cpu(make: Callable[[], torch.nn.Module]):
    cpu, device = run(make, "cpu"), run(make, DEVICE)
    assert cpu["tied"] and device["tied"], "the embedding tie was split by .to(device)"
    assert device["parameters"] == cpu["parameters"]
    torch.testing.assert_close(device["losses"], cpu["losses"], **TOLERANCE)
    assert device["state"].keys() == cpu["state"].keys()
    for name, value in cpu["state"].items():
        torch.testing.assert_close(device["state"][name], value, **PARAMETER_TOLERANCE, msg=name)
    assert torch.equal(device["generated"], cpu["generated"]), (device["generated"], cpu["generated"])


# What a Llama training step with AdamW calls beyond GEMM, softmax and the common element-wise ops.
LLAMA_KERNELS = {"silu", "silu_backward", "cos", "sin", "pow.Tensor_Scalar", "rsqrt", "mean.dim",
                 "masked_fill_.Scalar", "arange.start_out", "lerp_.Scalar", "addcdiv_", "sqrt", "mm"}  # fmt: skip


def test_a_llama_adamw_step_copies_nothing_through_the_host():
    from torch_backend import _C, op_report

    on_device = {op for op, _family, _kernel, present, _forced in _C._op_table() if present}
    missing = LLAMA_KERNELS - on_device
    if missing:
        pytest.skip(f"the backend has no kernels for {sorted(missing)}: those run on the fallback")
    torch.manual_seed(0)
    model = llama().to(DEVICE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    tokens = torch.randint(0, VOCAB, (2, 12)).to(DEVICE)
    for _ in range(2):  # the second step: AdamW's state exists
        optimizer.zero_grad()
        with op_report() as report:
            model(input_ids=tokens, labels=tokens).loss.backward()
            optimizer.step()
    copying = {row.op: row.copying_calls for row in report.rows if row.copying_calls}
    assert not copying, f"ops on the copying fallback: {copying}\n{report.table()}"
    assert sum(row.device_calls for row in report.rows) > 100, report.table()
