"""Notebook 06's toy LM trains on the device it is asked for (a GPU in the notebook when one is present), and
gives the same losses on the CPU whether or not the device is named; a device that does not exist is refused."""

import pytest
import torch

from transformer_nb.experiments import markov_batches, train_toy_lm


def test_train_toy_lm_on_the_named_device_follows_the_default():
    data = markov_batches(4, batch=4, seq_len=8, vocab=8, seed=0)
    default = train_toy_lm(2, True, 1e-3, 0, 4, data=data)
    assert len(default) == 4 and train_toy_lm(2, True, 1e-3, 0, 4, data=data, device="cpu") == default
    if torch.cuda.is_available():
        gpu = train_toy_lm(2, True, 1e-3, 0, 4, data=data, device="cuda")
        assert max(abs(a - b) for a, b in zip(default, gpu)) < 1e-3
    with pytest.raises(ValueError, match="device"):
        train_toy_lm(1, True, 1e-3, 0, 2, device="cuda:7")
