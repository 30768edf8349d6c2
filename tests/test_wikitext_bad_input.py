"""Bad inputs to the WikiText-2 loader, vocabulary and batching: a clear error naming the argument
(issue 18: a fractional id, a negative or zero window length each gave a wrong result or an obscure crash)."""

import numpy as np
import pytest
import torch

from transformer_nb import wikitext as wt

VOCAB = wt.Vocab(["the", "cat", "sat"])
STREAMS = wt.batchify(torch.arange(40), 2)  # (2, 20)


@pytest.mark.parametrize(
    "ids, err, msg",
    [
        ([0.9], TypeError, r"ids must be an int.*0\.9"),  # was "the": int(0.9) is 0
        (torch.tensor([0.9]), TypeError, r"ids must hold integer token ids"),
        ([True], TypeError, r"ids must be an int"),
        ("12", TypeError, r"ids must be a 1-D tensor or a sequence of ints, got str"),
        ([-1], ValueError, r"ids must be >= 0, got -1"),
        ([0, 5], ValueError, r"ids must lie in \[0, 5\)"),
        (torch.tensor([[0, 1]]), ValueError, r"ids must be 1-D"),
    ],
)
def test_decode_bad_ids(ids, err, msg):
    with pytest.raises(err, match=msg):
        VOCAB.decode(ids)


def test_decode_accepts_every_integer_form():
    assert VOCAB.decode([1, 2]) == VOCAB.decode(torch.tensor([1, 2], dtype=torch.int32)) == "cat sat"
    assert VOCAB.decode(np.array([1, 2])) == VOCAB.decode((np.int64(1), torch.tensor(2))) == "cat sat"


@pytest.mark.parametrize("words", ["the cat", ["the", 3], 7])
def test_vocab_and_encode_refuse_what_is_not_a_list_of_words(words):
    with pytest.raises(TypeError, match=r"words must (be a list of|hold) str words"):
        wt.Vocab(words)  # one str would have built a vocabulary of characters
    if not isinstance(words, str):
        with pytest.raises(TypeError, match=r"text must (be a list of|hold) str words"):
            VOCAB.encode(words)  # [1, 2] was [<unk>, <unk>], silently
    assert VOCAB.encode("the dog").tolist() == [0, VOCAB.unk]


@pytest.mark.parametrize(
    "fn, args, err, msg",
    [
        (wt.batchify, (torch.arange(40), True), TypeError, r"batch_size must be an int, got True"),
        (wt.batchify, (torch.arange(40), 0), ValueError, r"batch_size must be >= 1, got 0"),
        (wt.batchify, (torch.arange(40.0), 2), TypeError, r"data must hold integer token ids, got dtype torch\.float"),
        (wt.batchify, (list(range(40)), 2), TypeError, r"data must be a torch\.Tensor of token ids, got list"),
        (wt.batchify, (torch.arange(40).view(4, 10), 2), ValueError, r"data must be 1-D, got shape \(4, 10\)"),
        (wt.batchify, (torch.arange(3), 2), ValueError, r"too short for batch_size=2"),
        (wt.get_batch, (STREAMS, 0, -3), ValueError, r"seq_len must be >= 1, got -3"),  # was (2, 17) windows
        (wt.get_batch, (STREAMS, 1.5, 4), TypeError, r"i must be an int, got float"),
        (wt.get_batch, (STREAMS, 19, 4), ValueError, r"start i must be in \[0, 19\)"),
        (wt.get_batch, (STREAMS[0], 0, 4), ValueError, r"streams must be 2-D, got shape \(20,\)"),
        (wt.get_batch, (STREAMS[:0], 0, 4), ValueError, r"start i must be in"),
        (wt.iter_batches, (STREAMS, 0), ValueError, r"seq_len must be >= 1, got 0"),  # at the call, not at next()
        (wt.iter_batches, (STREAMS.float(), 5), TypeError, r"streams must hold integer token ids"),
        (wt.random_windows, (torch.arange(50), 0, 4), ValueError, r"batch_size must be >= 1, got 0"),
        (wt.random_windows, (torch.arange(50), 2, 0), ValueError, r"seq_len must be >= 1, got 0"),
        (wt.random_windows, (torch.arange(50), 2, 50), ValueError, r"data must be longer than seq_len=50, got 50"),
    ],
)
def test_batching_bad_input(fn, args, err, msg):
    with pytest.raises(err, match=msg):
        fn(*args)


def test_batching_accepts_numpy_ints_and_keeps_windows_inside_the_stream():
    assert wt.batchify(torch.arange(40), np.int64(4)).shape == (4, 10)
    x, y = wt.random_windows(torch.arange(9), 64, 8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, torch.arange(8).expand(64, 8)) and torch.equal(y, x + 1)  # the one window there is


@pytest.mark.parametrize(
    "kwargs, err, msg",
    [
        ({"download": "no"}, TypeError, r"download must be True or False, got 'no'"),
        ({"timeout": 0}, ValueError, r"timeout must be a finite positive number, got 0"),
        ({"timeout": "5"}, TypeError, r"timeout must be a real number, got str '5'"),
        ({"path": 123}, TypeError, r"path must be a str or os\.PathLike folder, got int"),
    ],
)
def test_find_data_dir_bad_arguments(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        wt.find_data_dir(**kwargs)


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
