"""Batching WikiText-2 into (B, T) windows: targets are the inputs shifted by one, never leaked."""

import torch

from transformer_nb import wikitext as wt


def test_batchify_keeps_contiguous_streams():
    data = torch.arange(103)
    s = wt.batchify(data, 4)
    assert s.shape == (4, 25) and torch.equal(s[1], torch.arange(25, 50))  # row b is a contiguous slice


def test_targets_are_next_tokens_and_never_inputs_at_same_position():
    data = torch.arange(1000)  # token value = its position
    s = wt.batchify(data, 5)
    seen_targets = []
    for x, y in wt.iter_batches(s, 35):
        assert x.shape == y.shape
        assert torch.equal(y, x + 1)  # y[t] is the token after x[t]
        # no target appears among the inputs at or before its own position
        for t in range(x.size(1)):
            assert (x[:, : t + 1] < y[:, t : t + 1]).all()
        seen_targets.append(y)
    # every token except the first of each row is a target exactly once
    flat = torch.cat([y.reshape(5, -1) for y in seen_targets], dim=1)
    assert torch.equal(flat, s[:, 1:])


def test_last_window_is_shorter_not_padded():
    s = wt.batchify(torch.arange(40), 2)  # (2, 20)
    windows = list(wt.iter_batches(s, 7))
    assert [x.size(1) for x, _ in windows] == [7, 7, 5]
