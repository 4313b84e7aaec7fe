"""Per-device generators: seeds and state."""

import pytest
import torch


def test_manual_seed_sets_current_device_only():
    torch.fake.manual_seed(123)
    assert torch.fake.initial_seed() == 123
    with torch.fake.device(1):
        torch.fake.manual_seed(7)
        assert torch.fake.initial_seed() == 7
    assert torch.fake.initial_seed() == 123


def test_torch_manual_seed_seeds_every_device():
    torch.manual_seed(99)
    for index in range(torch.fake.device_count()):
        with torch.fake.device(index):
            assert torch.fake.initial_seed() == 99


def test_seed_picks_a_new_random_seed():
    torch.fake.manual_seed(5)
    torch.fake.seed()
    first = torch.fake.initial_seed()
    assert first != 5  # a 64-bit random seed equals 5 with negligible odds
    torch.fake.seed_all()
    shared = torch.fake.initial_seed()
    assert shared != first
    with torch.fake.device(1):
        assert torch.fake.initial_seed() == shared  # one seed for every device


def test_rng_state_round_trip_and_depends_on_seed():
    torch.fake.manual_seed(1)
    state1 = torch.fake.get_rng_state()
    assert state1.dtype == torch.uint8 and state1.device.type == "cpu"
    torch.fake.manual_seed(2)
    assert not torch.equal(torch.fake.get_rng_state(), state1)
    torch.fake.set_rng_state(state1)
    assert torch.equal(torch.fake.get_rng_state(), state1)
    states = torch.fake.get_rng_state_all()
    assert len(states) == 2
    torch.fake.set_rng_state_all(states)
    with pytest.raises(TypeError):
        torch.fake.set_rng_state(torch.zeros(3))


def test_device_generator_objects():
    g = torch.Generator(device="fake")
    assert g.device == torch.device("fake:0")
    g.manual_seed(42)
    assert g.initial_seed() == 42
    state = g.get_state()
    g.manual_seed(43)
    g.set_state(state)
    assert torch.equal(g.get_state(), state)
