# ruff: noqa: E501  (a table: one bad call per line)
"""Bad inputs to the WikiText-2 loader, vocabulary and batching: a clear error naming the argument
(issue 18: a fractional id, a negative or zero window length each gave a wrong result or an obscure crash)."""

import numpy as np
import pytest
import torch

from transformer_nb import wikitext as wt

VOCAB = wt.Vocab(["the", "cat", "sat"])
STREAMS = wt.batchify(torch.arange(40), 2)  # (2, 20)

CASES = {  # name: (the call, the exception, what its message says)
    "decode_a_fraction": (lambda: VOCAB.decode([0.9]), TypeError, r"ids must be an int.*0\.9"),  # was "the": int(0.9) is 0
    "decode_float_ids": (lambda: VOCAB.decode(torch.tensor([0.9])), TypeError, r"ids must hold integer token ids"),
    "decode_a_bool": (lambda: VOCAB.decode([True]), TypeError, r"ids must be an int"),
    "decode_a_str": (lambda: VOCAB.decode("12"), TypeError, r"ids must be a 1-D tensor or a sequence of ints, got str"),
    "decode_negative": (lambda: VOCAB.decode([-1]), ValueError, r"ids must be >= 0, got -1"),
    "decode_past_the_vocabulary": (lambda: VOCAB.decode([0, 5]), ValueError, r"ids must lie in \[0, 5\)"),
    "decode_2d": (lambda: VOCAB.decode(torch.tensor([[0, 1]])), ValueError, r"ids must be 1-D"),
    "vocab_of_one_str": (lambda: wt.Vocab("the cat"), TypeError, r"words must be a list of str words"),  # a vocabulary of characters
    "vocab_of_an_int": (lambda: wt.Vocab(7), TypeError, r"words must be a list of str words"),
    "vocab_with_an_int": (lambda: wt.Vocab(["the", 3]), TypeError, r"words must hold str words, got int 3"),
    "encode_ints": (lambda: VOCAB.encode([1, 2]), TypeError, r"text must hold str words, got int 1"),  # was [<unk>, <unk>]
    "encode_none": (lambda: VOCAB.encode(None), TypeError, r"text must be a list of str words"),
    "batchify_bool": (lambda: wt.batchify(torch.arange(40), True), TypeError, r"batch_size must be an int, got True"),
    "batchify_0": (lambda: wt.batchify(torch.arange(40), 0), ValueError, r"batch_size must be >= 1, got 0"),
    "batchify_floats": (lambda: wt.batchify(torch.arange(40.0), 2), TypeError, r"data must hold integer token ids, got dtype torch\.float"),
    "batchify_a_list": (lambda: wt.batchify(list(range(40)), 2), TypeError, r"data must be a torch\.Tensor of token ids, got list"),
    "batchify_2d": (lambda: wt.batchify(torch.arange(40).view(4, 10), 2), ValueError, r"data must be 1-D, got shape \(4, 10\)"),
    "batchify_too_short": (lambda: wt.batchify(torch.arange(3), 2), ValueError, r"too short for batch_size=2"),
    "get_batch_negative_length": (lambda: wt.get_batch(STREAMS, 0, -3), ValueError, r"seq_len must be >= 1, got -3"),  # was (2, 17)
    "get_batch_float_start": (lambda: wt.get_batch(STREAMS, 1.5, 4), TypeError, r"i must be an int, got float"),
    "get_batch_start_at_the_end": (lambda: wt.get_batch(STREAMS, 19, 4), ValueError, r"start i must be in \[0, 19\)"),
    "get_batch_1d": (lambda: wt.get_batch(STREAMS[0], 0, 4), ValueError, r"streams must be 2-D, got shape \(20,\)"),
    "get_batch_no_rows": (lambda: wt.get_batch(STREAMS[:0], 0, 4), ValueError, r"start i must be in"),
    "iter_batches_zero_length": (lambda: wt.iter_batches(STREAMS, 0), ValueError, r"seq_len must be >= 1, got 0"),  # at the call
    "iter_batches_floats": (lambda: wt.iter_batches(STREAMS.float(), 5), TypeError, r"streams must hold integer token ids"),
    "random_windows_batch_0": (lambda: wt.random_windows(torch.arange(50), 0, 4), ValueError, r"batch_size must be >= 1, got 0"),
    "random_windows_length_0": (lambda: wt.random_windows(torch.arange(50), 2, 0), ValueError, r"seq_len must be >= 1, got 0"),
    "random_windows_too_long": (lambda: wt.random_windows(torch.arange(50), 2, 50), ValueError, r"data must be longer than seq_len=50, got 50"),
    "find_download_no": (lambda: wt.find_data_dir(download="no"), TypeError, r"download must be True or False, got 'no'"),
    "find_timeout_0": (lambda: wt.find_data_dir(timeout=0), ValueError, r"timeout must be a finite positive number, got 0"),
    "find_timeout_str": (lambda: wt.find_data_dir(timeout="5"), TypeError, r"timeout must be a real number, got str '5'"),
    "find_path_int": (lambda: wt.find_data_dir(123), TypeError, r"path must be a str or os\.PathLike folder, got int"),
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_refused_by_name(name):
    call, err, msg = CASES[name]
    with pytest.raises(err, match=msg):
        call()


def test_integers_of_every_form_are_accepted_and_windows_stay_inside_the_stream():
    assert VOCAB.decode([1, 2]) == VOCAB.decode(torch.tensor([1, 2], dtype=torch.int32)) == "cat sat"
    assert VOCAB.decode(np.array([1, 2])) == VOCAB.decode((np.int64(1), torch.tensor(2))) == "cat sat"
    assert VOCAB.encode("the dog").tolist() == [0, VOCAB.unk]
    assert wt.batchify(torch.arange(40), np.int64(4)).shape == (4, 10)
    x, y = wt.random_windows(torch.arange(9), 64, 8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, torch.arange(8).expand(64, 8)) and torch.equal(y, x + 1)  # the one window there is


def test_load_refuses_a_non_bool_check_and_a_bad_split_name(tmp_path):
    folder = tmp_path / "wikitext-2"
    folder.mkdir()
    for split in wt.SPLITS:
        (folder / f"{split}.txt").write_text("a b\n")
    with pytest.raises(TypeError, match=r"check must be True or False, got 'no'"):
        wt.load_wikitext2(folder, check="no")  # "no" is truthy: it used to verify
    data = wt.load_wikitext2(folder, check=False)
    with pytest.raises(ValueError, match=r"split must be one of \('train', 'valid', 'test'\), got 'dev'"):
        data.split("dev")
    assert torch.equal(data.split("valid"), data.valid)
