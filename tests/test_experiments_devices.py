"""Notebook 06's toy LM trains on the device it is asked for (a GPU in the notebook when one is present), and
gives the same losses on the CPU whether or not the device is named; a device that does not exist is refused."""

import pytest
import torch

from transformer_nb.experiments import markov_batches, train_toy_lm


def test_train_toy_lm_on_the_named_device_matches_the_default():
    data = markov_batches(4, batch=4, seq_len=8, vocab=8, seed=0)
    default = train_toy_lm(2, True, 1e-3, 0, 4, data=data)
    on_cpu = train_toy_lm(2, True, 1e-3, 0, 4, data=data, device="cpu")
    assert len(on_cpu) == 4 and on_cpu == default


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_train_toy_lm_on_cuda_follows_the_cpu_run():
    data = markov_batches(4, batch=4, seq_len=8, vocab=8, seed=0)
    cpu, gpu = train_toy_lm(2, True, 1e-3, 0, 4, data=data), train_toy_lm(2, True, 1e-3, 0, 4, data=data, device="cuda")
    assert max(abs(a - b) for a, b in zip(cpu, gpu)) < 1e-3


def test_a_device_that_is_not_here_is_refused():
    with pytest.raises(ValueError, match="device"):
        train_toy_lm(1, True, 1e-3, 0, 2, device="cuda:7")
