"""Bad input to transformer_nb.core.masks gets a clear error (type and message), never a silent wrong mask."""

import pytest
import torch

from transformer_nb.core.masks import (
    causal_mask,
    key_padding,
    padding_mask,
    padding_mask_from_ids,
    self_attention_mask,
)
from transformer_nb.interop import additive


@pytest.mark.parametrize(
    "fn,exc,words",
    [
        (lambda: padding_mask([3, 7], max_len=5), ValueError, "exceeds max_len=5"),
        (lambda: padding_mask([3, -1]), ValueError, "lengths must be >= 0"),
        (lambda: padding_mask([2.5, 3.0]), ValueError, "1-D integer sequence"),
        (lambda: padding_mask(torch.tensor([2.0, 3.0])), ValueError, "1-D integer sequence"),
        (lambda: padding_mask([True, False]), ValueError, "1-D integer sequence"),
        (lambda: padding_mask([[1, 2], [3, 4]]), ValueError, "1-D integer sequence"),
        (lambda: padding_mask([]), ValueError, "lengths is empty"),
        (lambda: padding_mask([2, 3], max_len=-1), ValueError, "max_len must be >= 0"),
        (lambda: padding_mask([2, 3], max_len=4.0), TypeError, "max_len must be an int"),
        (lambda: padding_mask_from_ids(torch.tensor([1, 2, 0]), 0), ValueError, "ids must have shape (B, T)"),
        (lambda: padding_mask_from_ids(torch.zeros(2, 3, 4).long(), 0), ValueError, "ids must have shape (B, T)"),
        (lambda: padding_mask_from_ids([[1, 2, 0]], 0), TypeError, "ids must be a (B, T) torch.Tensor"),
        (lambda: causal_mask(5, 3), ValueError, "0 <= T_q <= T_k"),
        (lambda: causal_mask(-1), ValueError, "T_q must be >= 0"),
        (lambda: causal_mask(4.0), TypeError, "T_q must be an int"),
        (lambda: causal_mask(4, 6.5), TypeError, "T_k must be an int"),
        (lambda: causal_mask(True), TypeError, "T_q must be an int"),
        (lambda: additive(torch.ones(3, 3)), TypeError, "expects a bool mask"),
        (lambda: additive([[True]]), TypeError, "expects a bool torch.Tensor mask"),
        (lambda: additive(torch.ones(3, 3, dtype=torch.int64)), TypeError, "got dtype torch.int64"),
        (lambda: key_padding(torch.ones(2, 3)), TypeError, "keep must be a (B, T_k) bool mask"),
        (lambda: key_padding(torch.ones(3, dtype=torch.bool)), ValueError, "keep must be a (B, T_k) bool mask"),
        (lambda: key_padding(padding_mask([2, 3]), -2), ValueError, "T_q must be >= 0"),
        (lambda: self_attention_mask(torch.ones(2, 3), causal=True), TypeError, "bool mask"),
        (lambda: self_attention_mask([[True]]), TypeError, "keep must be a (B, T_k) bool mask"),
    ],
)
def test_bad_input_raises_clear_error(fn, exc, words):
    with pytest.raises(exc) as info:
        fn()
    assert words in str(info.value)


def test_errors_show_what_was_received():
    with pytest.raises(ValueError) as info:
        padding_mask([3, 7], max_len=5)
    assert "[3, 7]" in str(info.value)
    with pytest.raises(ValueError) as info:
        causal_mask(5, 3)
    assert "T_q=5" in str(info.value) and "T_k=3" in str(info.value)


def test_valid_edge_cases_still_work():
    assert padding_mask([0, 0], max_len=2).sum() == 0
    assert causal_mask(0).shape == (0, 0)
    assert causal_mask(torch.tensor(3)).shape == (3, 3)  # a 0-d int tensor is an int


# --------------------------------------------------------------------------- issue 18: the rest of the API


@pytest.mark.parametrize(
    "fn,exc,words",
    [
        (lambda: causal_mask(3, device="nonsense"), ValueError, "device must be one of"),
        (lambda: causal_mask(3, device=0), TypeError, "device must be a device name"),
        (lambda: causal_mask(10**8), ValueError, "a causal mask of T_q=100000000"),
        (lambda: causal_mask(1, 10**13), ValueError, "more than the"),
        (lambda: padding_mask([1, 2], max_len=10**13), ValueError, "a padding mask of B=2"),
        (lambda: padding_mask(["a", "b"]), ValueError, "lengths must be a 1-D integer sequence"),
        (lambda: padding_mask({"a": 1}), ValueError, "lengths must be a 1-D integer sequence"),
        (lambda: padding_mask([1, 2], device="gpu"), ValueError, "device must be one of"),
        (lambda: padding_mask_from_ids(torch.ones(2, 3), 0), TypeError, "ids must hold integer token ids"),
        (lambda: padding_mask_from_ids(torch.ones(2, 3, dtype=torch.bool), 0), TypeError, "integer token ids"),
        (lambda: padding_mask_from_ids(torch.ones(2, 3, dtype=torch.long), 0.5), TypeError, "pad_id must be an int"),
        (lambda: padding_mask_from_ids(torch.ones(2, 3, dtype=torch.long), None), TypeError, "pad_id must be an int"),
        (lambda: additive(causal_mask(3), dtype=torch.int64), TypeError, "dtype must be a floating torch.dtype"),
        (lambda: additive(causal_mask(3), dtype="float32"), TypeError, "dtype must be a floating torch.dtype"),
        (lambda: self_attention_mask(padding_mask([2, 3]), causal="no"), TypeError, "causal must be True or False"),
        (lambda: self_attention_mask(padding_mask([2, 3]), causal=1), TypeError, "causal must be True or False"),
        (lambda: key_padding(torch.ones(2, 3, dtype=torch.long)), TypeError, "keep must be a (B, T_k) bool mask"),
        (lambda: key_padding(padding_mask([2, 3]), 2.0), TypeError, "T_q must be an int"),
        (lambda: key_padding(padding_mask([2, 3]), True), TypeError, "T_q must be an int"),
    ],
)
def test_more_bad_input_raises_clear_error(fn, exc, words):
    with pytest.raises(exc) as info:
        fn()
    assert words in str(info.value)


def test_more_valid_edge_cases():
    assert padding_mask_from_ids(torch.tensor([[1, 0]], dtype=torch.int32), 0).tolist() == [[True, False]]
    assert additive(causal_mask(2), dtype=torch.float16).dtype == torch.float16
    assert causal_mask(2, device="meta").device.type == "meta"  # the meta device has shapes only
    assert padding_mask(torch.tensor([0, 2]), max_len=3).tolist() == [[False] * 3, [True, True, False]]
