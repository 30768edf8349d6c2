"""WikiText-2 (tokenized, v1): load it, build the vocabulary, batch it (notebook 10).

Where the files are found, downloaded and verified is ``transformer_nb.wikitext_files``
(``find_data_dir``, ``user_cache_dir``, ``verify`` are importable from here too); ``load_wikitext2`` does all of it.

The vocabulary is built the way pytorch/examples' ``word_language_model`` builds it:
each line becomes ``line.split() + ['<eos>']``. The dataset authors already replaced
rare words by ``<unk>``; at encode time an unknown word also maps to ``<unk>``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from transformer_nb.core.utils import as_int
from transformer_nb.env import as_path
from transformer_nb.wikitext_files import SPLITS, find_data_dir, user_cache_dir, verify  # noqa: F401  (wikitext.X)

VOCAB_SIZE = 33_278
EOS, UNK = "<eos>", "<unk>"


# --------------------------------------------------------------------------- argument checks
def _ids_tensor(name: str, t, dim: int) -> None:
    """``t`` must be a ``dim``-D tensor of integer token ids."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(t).__name__}")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {t.dtype}")
    if t.dim() != dim:
        raise ValueError(f"{name} must be {dim}-D, got shape {tuple(t.shape)}")


def check_wikitext(data) -> None:
    """``data`` must be what ``load_wikitext2`` returns (splits and a vocabulary)."""
    if not (hasattr(data, "train") and hasattr(data, "vocab") and hasattr(data, "split")):
        raise TypeError(f"data must be load_wikitext2()'s WikiText2, got {type(data).__name__}")


# --------------------------------------------------------------------------- vocabulary
def read_words(path: str | os.PathLike) -> list[str]:
    """All tokens of a file, pytorch/examples style: ``line.split() + ['<eos>']`` per line."""
    with open(as_path("path", path), encoding="utf-8") as f:
        return [w for line in f for w in (*line.split(), EOS)]


def _words(name: str, words) -> list[str]:
    """A list of str words (one str alone is refused: it is not a word list)."""
    if isinstance(words, str) or not hasattr(words, "__iter__"):
        raise TypeError(f"{name} must be a list of str words (a text: {name}.split()), got {type(words).__name__}")
    words = list(words)
    for w in words:
        if not isinstance(w, str):
            raise TypeError(f"{name} must hold str words, got {type(w).__name__} {w!r}")
    return words


class Vocab:
    """Word <-> id mapping. Ids follow first appearance (as in pytorch/examples)."""

    def __init__(self, words):
        self.itos: list[str] = list(dict.fromkeys([*_words("words", words), EOS, UNK]))  # specials last, if new
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(self.itos)}
        self.unk, self.eos = self.stoi[UNK], self.stoi[EOS]

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    def encode(self, text: str | list[str]) -> torch.Tensor:
        """Text (split on whitespace) or a list of words -> ``(N,)`` int64; unknown -> ``<unk>``."""
        words = text.split() if isinstance(text, str) else _words("text", text)
        get, unk = self.stoi.get, self.unk
        return torch.tensor([get(w, unk) for w in words], dtype=torch.long)

    def decode(self, ids) -> str:
        """``(N,)`` integer ids (tensor or sequence) -> space-joined words."""
        if isinstance(ids, torch.Tensor):
            _ids_tensor("ids", ids, dim=1)
            if ids.is_meta:
                raise ValueError("ids are on the meta device: they have shapes but no words to decode")
            ids = ids.tolist()
        elif isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise TypeError(f"ids must be a 1-D tensor or a sequence of ints, got {type(ids).__name__}")
        ids = [as_int("ids", i) for i in ids]
        if any(i >= len(self.itos) for i in ids):
            raise ValueError(f"ids must lie in [0, {len(self.itos)}) (the vocabulary size); got {max(ids)}")
        return " ".join(self.itos[i] for i in ids)


@dataclass
class WikiText2:
    """The three splits as flat ``(N,)`` int64 token streams, and the vocabulary."""

    train: torch.Tensor
    valid: torch.Tensor
    test: torch.Tensor
    vocab: Vocab
    folder: Path

    def split(self, name: str) -> torch.Tensor:
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return getattr(self, name)


def load_wikitext2(path=None, *, check: bool = True, download: bool | None = None, progress=True) -> WikiText2:
    """Find (see the module docstring), verify and encode WikiText-2.

    The vocabulary is built from the training split; every valid/test word type also
    occurs in train, so it equals pytorch/examples' union vocabulary (33,278 types).
    Takes about 1 s on 2 CPU cores.
    """
    folder = find_data_dir(path, download=download, progress=progress)
    if not isinstance(check, bool):
        raise TypeError(f"check must be True or False, got {check!r}")
    if check:
        verify(folder)
    words = {s: read_words(folder / f"{s}.txt") for s in SPLITS}
    vocab = Vocab(words["train"])
    return WikiText2(*(vocab.encode(words[s]) for s in SPLITS), vocab=vocab, folder=folder)


# --------------------------------------------------------------------------- batching
def batchify(data: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Cut a flat ``(N,)`` stream into ``batch_size`` contiguous streams: ``(B, N // B)``.

    The tail that does not fill a row is dropped (as in pytorch/examples, which
    keeps the transposed ``(N // B, B)`` layout instead).
    """
    _ids_tensor("data", data, dim=1)
    batch_size = as_int("batch_size", batch_size, minimum=1)
    n = data.numel() // batch_size
    if n < 2:
        raise ValueError(f"data ({data.numel()} tokens) is too short for batch_size={batch_size} rows of 2 or more")
    return data[: n * batch_size].view(batch_size, n)


def get_batch(streams: torch.Tensor, i: int, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``x = streams[:, i:i+T]`` and targets ``y = streams[:, i+1:i+1+T]``, both ``(B, T)``.

    ``T = min(seq_len, N - 1 - i)``; target ``y[:, t]`` is the token right after ``x[:, t]``.
    """
    _ids_tensor("streams", streams, dim=2)
    n, i, seq_len = streams.size(1), as_int("i", i), as_int("seq_len", seq_len, minimum=1)
    if i >= n - 1 or not streams.numel():
        raise ValueError(f"start i must be in [0, {n - 1}) (the last token has no target), got {i}")
    t = min(seq_len, n - 1 - i)
    return streams[:, i : i + t], streams[:, i + 1 : i + 1 + t]


def iter_batches(streams: torch.Tensor, seq_len: int):
    """Consecutive ``(x, y)`` windows covering every target of ``(B, N)`` streams once.

    The arguments are checked at the call, not at the first ``next()``.
    """
    get_batch(streams, 0, seq_len)  # checks the arguments now
    return (get_batch(streams, i, seq_len) for i in range(0, streams.size(1) - 1, seq_len))


def random_windows(data: torch.Tensor, batch_size: int, seq_len: int, generator=None) -> tuple[torch.Tensor, ...]:
    """``batch_size`` random windows of a flat ``(N,)`` stream: ``x, y`` of shape ``(B, T)``, y = x shifted by one."""
    _ids_tensor("data", data, dim=1)
    batch_size, seq_len = as_int("batch_size", batch_size, minimum=1), as_int("seq_len", seq_len, minimum=1)
    if data.numel() < seq_len + 1:
        raise ValueError(f"data must be longer than seq_len={seq_len}, got {data.numel()} tokens")
    starts = torch.randint(0, data.numel() - seq_len, (batch_size,), generator=generator)
    w = data[starts[:, None] + torch.arange(seq_len + 1)]
    return w[:, :-1], w[:, 1:]
