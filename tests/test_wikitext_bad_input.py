"""Bad inputs to the WikiText-2 loader, vocabulary and batching: a clear error naming the argument.

The first three tests are issue 18's findings (each returned a wrong result or crashed obscurely
before the fix); the rest probe the rest of the public API the same way.
"""

import numpy as np
import pytest
import torch

from transformer_nb import wikitext as wt

VOCAB = wt.Vocab(["the", "cat", "sat"])
STREAMS = wt.batchify(torch.arange(40), 2)  # (2, 20)


# --------------------------------------------------------------------------- issue 18's findings
def test_decode_refuses_a_fractional_id():
    """Vocab.decode([0.9]) returned "the": int(0.9) is 0."""
    with pytest.raises(TypeError, match=r"ids must be an int.*0\.9"):
        VOCAB.decode([0.9])
    with pytest.raises(TypeError, match=r"ids must hold integer token ids"):
        VOCAB.decode(torch.tensor([0.9]))


def test_get_batch_refuses_a_negative_length():
    """get_batch(streams, 0, -3) returned (2, 17) windows."""
    with pytest.raises(ValueError, match=r"seq_len must be >= 1, got -3"):
        wt.get_batch(STREAMS, 0, -3)
    with pytest.raises(ValueError, match=r"seq_len must be >= 1, got 0"):
        wt.get_batch(STREAMS, 0, 0)


def test_iter_batches_refuses_a_zero_length_at_the_call():
    """iter_batches(streams, 0) crashed with "range() arg 3 must not be zero" at the first next()."""
    with pytest.raises(ValueError, match=r"seq_len must be >= 1, got 0"):
        wt.iter_batches(STREAMS, 0)  # no next(): the call itself checks


# --------------------------------------------------------------------------- the vocabulary
@pytest.mark.parametrize(
    "ids, err, msg",
    [
        ([True], TypeError, r"ids must be an int"),
        ("12", TypeError, r"ids must be a 1-D tensor or a sequence of ints, got str"),
        (5, TypeError, r"ids must be a 1-D tensor or a sequence of ints, got int"),
        ([-1], ValueError, r"ids must be >= 0, got -1"),
        ([0, 5], ValueError, r"ids must lie in \[0, 5\)"),
        (torch.tensor([[0, 1]]), ValueError, r"ids must be 1-D"),
        (torch.tensor([True]), TypeError, r"ids must hold integer token ids"),
        ([[0, 1]], TypeError, r"ids must be an int, got list"),
    ],
)
def test_decode_bad_ids(ids, err, msg):
    with pytest.raises(err, match=msg):
        VOCAB.decode(ids)


def test_decode_accepts_every_integer_form():
    expected = "cat sat"
    assert VOCAB.decode([1, 2]) == VOCAB.decode(torch.tensor([1, 2])) == expected
    assert VOCAB.decode(np.array([1, 2])) == VOCAB.decode((np.int64(1), torch.tensor(2))) == expected
    assert VOCAB.decode(torch.tensor([1, 2], dtype=torch.int32)) == VOCAB.decode([]) + expected


def test_vocab_refuses_one_string_and_non_words():
    with pytest.raises(TypeError, match=r"words must be a list of words, not one str"):
        wt.Vocab("the cat")  # would have built a vocabulary of characters
    with pytest.raises(TypeError, match=r"words must hold str words, got int 3"):
        wt.Vocab(["the", 3])
    with pytest.raises(TypeError, match=r"words must be an iterable of str, got int"):
        wt.Vocab(7)


def test_encode_refuses_non_words():
    with pytest.raises(TypeError, match=r"text must hold str words, got int 1"):
        VOCAB.encode([1, 2])  # was [<unk>, <unk>], silently
    with pytest.raises(TypeError, match=r"text must be an iterable of str, got NoneType"):
        VOCAB.encode(None)
    assert VOCAB.encode("the dog").tolist() == [0, VOCAB.unk]


# --------------------------------------------------------------------------- batching
@pytest.mark.parametrize(
    "args, err, msg",
    [
        ((torch.arange(40), True), TypeError, r"batch_size must be an int, got True"),
        ((torch.arange(40), 2.0), TypeError, r"batch_size must be an int, got float"),
        ((torch.arange(40), 0), ValueError, r"batch_size must be >= 1, got 0"),
        ((torch.arange(40), -2), ValueError, r"batch_size must be >= 1, got -2"),
        ((torch.arange(40.0), 2), TypeError, r"data must hold integer token ids, got dtype torch\.float32"),
        ((list(range(40)), 2), TypeError, r"data must be a torch\.Tensor of token ids, got list"),
        ((torch.arange(40).view(4, 10), 2), ValueError, r"data must be 1-D, got shape \(4, 10\)"),
        ((torch.arange(3), 2), ValueError, r"too short for batch_size=2"),
    ],
)
def test_batchify_bad_input(args, err, msg):
    with pytest.raises(err, match=msg):
        wt.batchify(*args)


def test_batchify_accepts_numpy_ints():
    assert wt.batchify(torch.arange(40), np.int64(4)).shape == (4, 10)


@pytest.mark.parametrize(
    "args, err, msg",
    [
        ((STREAMS, 1.5, 4), TypeError, r"i must be an int, got float"),
        ((STREAMS, -1, 4), ValueError, r"i must be >= 0, got -1"),
        ((STREAMS, 19, 4), ValueError, r"start i must be in \[0, 19\)"),
        ((STREAMS, 0, 2.5), TypeError, r"seq_len must be an int, got float"),
        ((STREAMS.float(), 0, 4), TypeError, r"streams must hold integer token ids"),
        ((STREAMS[0], 0, 4), ValueError, r"streams must be 2-D, got shape \(20,\)"),
        ((STREAMS[:0], 0, 4), ValueError, r"streams must be \(B, N\) with B >= 1 and N >= 2, got shape \(0, 20\)"),
        ((STREAMS[:, :1], 0, 4), ValueError, r"N >= 2, got shape \(2, 1\)"),
    ],
)
def test_get_batch_bad_input(args, err, msg):
    with pytest.raises(err, match=msg):
        wt.get_batch(*args)


@pytest.mark.parametrize(
    "args, err, msg",
    [
        ((STREAMS, -5), ValueError, r"seq_len must be >= 1, got -5"),
        ((STREAMS, None), TypeError, r"seq_len must be an int, got NoneType"),
        ((STREAMS[:0], 5), ValueError, r"streams must be \(B, N\) with B >= 1"),
        ((STREAMS.view(-1), 5), ValueError, r"streams must be 2-D"),
    ],
)
def test_iter_batches_bad_input(args, err, msg):
    with pytest.raises(err, match=msg):
        wt.iter_batches(*args)


@pytest.mark.parametrize(
    "args, kwargs, err, msg",
    [
        ((torch.arange(50), 0, 4), {}, ValueError, r"batch_size must be >= 1, got 0"),
        ((torch.arange(50), -1, 4), {}, ValueError, r"batch_size must be >= 1, got -1"),
        ((torch.arange(50), 2, 0), {}, ValueError, r"seq_len must be >= 1, got 0"),
        ((torch.arange(50), 2, -3), {}, ValueError, r"seq_len must be >= 1, got -3"),
        ((torch.arange(50), 2, 50), {}, ValueError, r"data must be longer than seq_len=50, got 50 tokens"),
        ((torch.arange(50.0), 2, 4), {}, TypeError, r"data must hold integer token ids"),
        ((torch.arange(50), 2, 4), {"generator": 0}, TypeError, r"generator must be a torch\.Generator or None"),
    ],
)
def test_random_windows_bad_input(args, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        wt.random_windows(*args, **kwargs)


def test_random_windows_stay_inside_the_stream():
    x, y = wt.random_windows(torch.arange(9), 64, 8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, torch.arange(8).expand(64, 8)) and torch.equal(y, x + 1)  # the one window there is


# --------------------------------------------------------------------------- finding and loading
@pytest.mark.parametrize(
    "kwargs, err, msg",
    [
        ({"download": "no"}, TypeError, r"download must be True or False, got 'no'"),
        ({"timeout": 0}, ValueError, r"timeout must be a finite positive number, got 0"),
        ({"timeout": float("nan")}, ValueError, r"timeout must be a finite positive number, got nan"),
        ({"timeout": "5"}, TypeError, r"timeout must be a real number, got str '5'"),
        ({"path": 123}, TypeError, r"path must be a str or os\.PathLike folder, got int"),
    ],
)
def test_find_data_dir_bad_arguments(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        wt.find_data_dir(**kwargs)


def test_load_refuses_a_non_bool_check(tmp_path):
    with pytest.raises(TypeError, match=r"check must be True or False, got 'no'"):
        wt.load_wikitext2(_fake_complete_folder(tmp_path), check="no")  # "no" is truthy: it used to verify


def _fake_complete_folder(tmp_path):
    folder = tmp_path / "wikitext-2"
    folder.mkdir()
    for split in wt.SPLITS:
        (folder / f"{split}.txt").write_text("a b\n")
    return folder


def test_split_name_is_checked(tmp_path):
    data = wt.load_wikitext2(_fake_complete_folder(tmp_path), check=False)
    with pytest.raises(ValueError, match=r"split must be one of \('train', 'valid', 'test'\), got 'dev'"):
        data.split("dev")
    assert torch.equal(data.split("valid"), data.valid)
