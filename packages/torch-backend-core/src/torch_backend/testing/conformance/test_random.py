"""Per-device generators: seeds and state, as torch.cuda's."""

import pytest
import torch

from torch_backend.testing.conformance._support import DEVICE, dev, needs_two_devices, on


@needs_two_devices
def test_manual_seed_sets_current_device_only():
    dev.manual_seed(123)
    assert dev.initial_seed() == 123
    with dev.device(1):
        dev.manual_seed(7)
        assert dev.initial_seed() == 7
    assert dev.initial_seed() == 123


def test_torch_manual_seed_seeds_every_device():
    torch.manual_seed(99)
    for index in range(dev.device_count()):
        with dev.device(index):
            assert dev.initial_seed() == 99


def test_seed_picks_a_new_random_seed():
    dev.manual_seed(5)
    dev.seed()
    first = dev.initial_seed()
    assert first != 5  # a 64-bit random seed equals 5 with negligible odds
    dev.seed_all()
    shared = dev.initial_seed()
    assert shared != first
    for index in range(dev.device_count()):
        with dev.device(index):
            assert dev.initial_seed() == shared  # one seed for every device


def test_rng_state_round_trip_and_depends_on_seed():
    dev.manual_seed(1)
    state1 = dev.get_rng_state()
    assert state1.dtype == torch.uint8 and state1.device.type == "cpu"
    dev.manual_seed(2)
    assert not torch.equal(dev.get_rng_state(), state1)
    dev.set_rng_state(state1)
    assert torch.equal(dev.get_rng_state(), state1)
    states = dev.get_rng_state_all()
    assert len(states) == dev.device_count()
    dev.set_rng_state_all(states)
    with pytest.raises(TypeError):
        dev.set_rng_state(torch.zeros(3))


def test_device_generator_objects():
    g = torch.Generator(device=DEVICE)
    assert g.device == torch.device(on(0))
    g.manual_seed(42)
    assert g.initial_seed() == 42
    state = g.get_state()
    g.manual_seed(43)
    g.set_state(state)
    assert torch.equal(g.get_state(), state)


def test_same_seed_same_numbers():
    dev.manual_seed(11)
    first = torch.rand(64, device=DEVICE).cpu()
    dev.manual_seed(11)
    assert torch.equal(torch.rand(64, device=DEVICE).cpu(), first)
    assert not torch.equal(torch.rand(64, device=DEVICE).cpu(), first)
