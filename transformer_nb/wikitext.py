"""WikiText-2 (tokenized, v1): find the files, verify them, build the vocabulary, batch.

Where the loader looks, in this order (the first folder that holds all three of
``train.txt``, ``valid.txt``, ``test.txt`` wins):

1. an explicit ``path`` argument (a folder containing ``wikitext-2/``, or the
   ``wikitext-2`` folder itself);
2. the environment variable ``TNB_DATA_DIR`` (same two forms);
3. the user data cache, ``$XDG_CACHE_HOME/transformer_nb/data/wikitext-2``
   (``~/.cache/transformer_nb/data/wikitext-2`` when ``XDG_CACHE_HOME`` is unset).
   This is deliberately *not* ``TNB_CACHE_DIR`` (the trained-model cache, which CI
   points at a fresh folder): the data is downloaded once per user, not per run;
4. only then a download of the original files (byte-identical copies kept in
   pytorch/examples, at a pinned commit) into the user cache, with a progress bar
   and a sha256 check. Pass ``download=False`` (or set ``TNB_OFFLINE=1``) to forbid it.

When nothing is found and the download is impossible, a ``FileNotFoundError`` lists
every place that was looked at and says how to get the data.

Every load verifies the sha256 of the three files (13 MB; about 20 ms measured on a
2-core machine, so no stamp file is needed). A mismatch raises ``ValueError``.

The vocabulary is built the way pytorch/examples' ``word_language_model`` builds it:
each line becomes ``line.split() + ['<eos>']``. The dataset authors already replaced
rare words by ``<unk>``; at encode time an unknown word also maps to ``<unk>``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import torch

SPLITS = ("train", "valid", "test")
SHA256 = {
    "train": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
    "valid": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
    "test": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
}
N_BYTES = {"train": 10_797_148, "valid": 1_121_681, "test": 1_256_449}
N_TOKENS = {"train": 2_088_628, "valid": 217_646, "test": 245_569}
VOCAB_SIZE = 33_278
EOS, UNK = "<eos>", "<unk>"

#: Where the files are downloaded from: pytorch/examples at a pinned commit. The files
#: there are byte-for-byte the original WikiText-2 v1 release (CC BY-SA 3.0,
#: Merity et al. 2016, arXiv:1609.07843).
BASE_URL = (
    "https://raw.githubusercontent.com/pytorch/examples/"
    "77f55b912142e11fcfdf5b530231fb9c52f181e8/word_language_model/data/wikitext-2/"
)

HOW_TO_GET = (
    "How to get the data: download train.txt, valid.txt and test.txt from\n"
    f"  {BASE_URL}\n"
    "(the original WikiText-2 v1 'wiki.*.tokens' files, renamed) into a folder named\n"
    "'wikitext-2', then either pass its path, or set TNB_DATA_DIR to it (or to its parent),\n"
    "or put it in the user cache folder listed above."
)


# --------------------------------------------------------------------------- finding
def user_cache_dir() -> Path:
    """The per-user data cache: ``$XDG_CACHE_HOME/transformer_nb/data`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "transformer_nb" / "data"


def _candidates(root: str | os.PathLike) -> list[Path]:
    """A folder may be the wikitext-2 folder itself or its parent."""
    root = Path(root).expanduser()
    return [root, root / "wikitext-2"] if root.name == "wikitext-2" else [root / "wikitext-2", root]


def _complete(folder: Path) -> bool:
    return all((folder / f"{s}.txt").is_file() for s in SPLITS)


def find_data_dir(
    path: str | os.PathLike | None = None, *, download: bool | None = None, progress: bool = True, timeout: float = 30.0
) -> Path:
    """Return the ``wikitext-2`` folder, looking in the documented order.

    ``path``: explicit folder (``wikitext-2`` or its parent). If given and incomplete,
    that is an error at once (an explicit wish is not silently replaced).
    ``download``: allow the download step (default: yes unless ``TNB_OFFLINE=1``).
    Raises ``FileNotFoundError`` listing every place looked at.
    """
    looked: list[str] = []
    if path is not None:
        for c in _candidates(path):
            if _complete(c):
                return c
        folder = next((c for c in _candidates(path) if c.is_dir()), Path(path))
        missing = _missing(folder)
        raise FileNotFoundError(
            f"WikiText-2 not found at the explicit path {str(path)!r}: expected a folder "
            f"'wikitext-2' (or its parent) holding train.txt, valid.txt, test.txt; "
            f"missing: {missing}.\n" + HOW_TO_GET
        )
    env = os.environ.get("TNB_DATA_DIR")
    if env:
        for c in _candidates(env):
            if _complete(c):
                return c
        looked.append(f"TNB_DATA_DIR={env} (checked {', '.join(map(str, _candidates(env)))})")
    else:
        looked.append("TNB_DATA_DIR (not set)")
    cache = user_cache_dir() / "wikitext-2"
    if _complete(cache):
        return cache
    looked.append(f"user cache {cache}")
    if download is None:
        download = os.environ.get("TNB_OFFLINE", "").strip() not in ("1", "true", "yes")
    if download:
        try:
            return download_wikitext2(cache, progress=progress, timeout=timeout)
        except (urllib.error.URLError, OSError, TimeoutError) as err:
            looked.append(f"download from {BASE_URL} failed ({type(err).__name__}: {err}); are you offline?")
    else:
        looked.append("download (disabled: download=False or TNB_OFFLINE=1)")
    raise FileNotFoundError(
        "WikiText-2 not found. Looked at, in order:\n  - " + "\n  - ".join(looked) + "\n" + HOW_TO_GET
    )


def _missing(folder: Path) -> list[str]:
    return [f"{s}.txt" for s in SPLITS if not (folder / f"{s}.txt").is_file()]


def download_wikitext2(
    dest: str | os.PathLike, *, base_url: str | None = None, progress: bool = True, timeout: float = 30.0
) -> Path:
    """Download the three files into ``dest`` with a progress bar, checking sha256.

    Each file is written to a temporary name and renamed only after its checksum
    matched, so an interrupted download never leaves a file that looks complete.
    Not exercised in this project's CI (no network there); the offline failure path is.
    """
    from tqdm.auto import tqdm

    base_url = BASE_URL if base_url is None else base_url
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        target = dest / f"{split}.txt"
        if target.is_file() and sha256_of(target) == SHA256[split]:
            continue
        url = base_url + f"{split}.txt"
        h = hashlib.sha256()
        fd, tmp = tempfile.mkstemp(dir=dest, prefix=f".{split}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                total = int(resp.headers.get("Content-Length") or N_BYTES[split])
                with tqdm(
                    total=total, unit="B", unit_scale=True, desc=f"wikitext-2/{split}.txt", disable=not progress
                ) as bar:
                    while chunk := resp.read(1 << 16):
                        out.write(chunk)
                        h.update(chunk)
                        bar.update(len(chunk))
            if h.hexdigest() != SHA256[split]:
                raise ValueError(
                    f"downloaded {url} has sha256 {h.hexdigest()}, expected {SHA256[split]}; not keeping it"
                )
            shutil.move(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return dest


# --------------------------------------------------------------------------- verifying
def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def verify(folder: str | os.PathLike) -> None:
    """Raise ``ValueError`` if any of the three files does not have the published sha256."""
    folder = Path(folder)
    for split in SPLITS:
        got = sha256_of(folder / f"{split}.txt")
        if got != SHA256[split]:
            raise ValueError(
                f"checksum mismatch for {folder / f'{split}.txt'}: sha256 {got}, expected "
                f"{SHA256[split]} (WikiText-2 v1 tokenized). The file is corrupt or a different "
                f"version; delete it and fetch it again.\n" + HOW_TO_GET
            )


# --------------------------------------------------------------------------- vocabulary
def read_words(path: str | os.PathLike) -> list[str]:
    """All tokens of a file, pytorch/examples style: ``line.split() + ['<eos>']`` per line."""
    words: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words.extend(line.split())
            words.append(EOS)
    return words


class Vocab:
    """Word <-> id mapping. Ids follow first appearance (as in pytorch/examples)."""

    def __init__(self, words):
        self.itos: list[str] = []
        self.stoi: dict[str, int] = {}
        for w in words:
            if w not in self.stoi:
                self.stoi[w] = len(self.itos)
                self.itos.append(w)
        for special in (EOS, UNK):
            if special not in self.stoi:
                self.stoi[special] = len(self.itos)
                self.itos.append(special)
        self.unk = self.stoi[UNK]
        self.eos = self.stoi[EOS]

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    def encode(self, text: str | list[str]) -> torch.Tensor:
        """Text (split on whitespace) or a list of words -> ``(N,)`` int64; unknown -> ``<unk>``."""
        words = text.split() if isinstance(text, str) else list(text)
        get, unk = self.stoi.get, self.unk
        return torch.tensor([get(w, unk) for w in words], dtype=torch.long)

    def decode(self, ids) -> str:
        """``(N,)`` ids (tensor or list) -> space-joined words."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"decode expects a 1-D tensor of ids, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        n = len(self.itos)
        bad = [i for i in ids if not 0 <= int(i) < n]
        if bad:
            raise IndexError(f"ids must lie in [0, {n}); got {bad[:5]}")
        return " ".join(self.itos[int(i)] for i in ids)


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


def load_wikitext2(
    path: str | os.PathLike | None = None, *, check: bool = True, download: bool | None = None, progress: bool = True
) -> WikiText2:
    """Find (see the module docstring), verify and encode WikiText-2.

    The vocabulary is built from the training split; every valid/test word type also
    occurs in train, so it equals pytorch/examples' union vocabulary (33,278 types).
    Takes about 1 s on 2 CPU cores.
    """
    folder = find_data_dir(path, download=download, progress=progress)
    if check:
        verify(folder)
    words = {s: read_words(folder / f"{s}.txt") for s in SPLITS}
    vocab = Vocab(words["train"])
    for s in ("valid", "test"):
        words[s] = vocab.encode(words[s])
    return WikiText2(
        train=vocab.encode(words["train"]), valid=words["valid"], test=words["test"], vocab=vocab, folder=folder
    )


# --------------------------------------------------------------------------- batching
def batchify(data: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Cut a flat ``(N,)`` stream into ``batch_size`` contiguous streams: ``(B, N // B)``.

    The tail that does not fill a row is dropped (as in pytorch/examples, which
    keeps the transposed ``(N // B, B)`` layout instead).
    """
    if data.dim() != 1:
        raise ValueError(f"batchify expects a 1-D token stream, got shape {tuple(data.shape)}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    n = data.numel() // batch_size
    if n < 2:
        raise ValueError(f"a stream of {data.numel()} tokens is too short for {batch_size} rows")
    return data[: n * batch_size].view(batch_size, n)


def get_batch(streams: torch.Tensor, i: int, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``x = streams[:, i:i+T]`` and targets ``y = streams[:, i+1:i+1+T]``, both ``(B, T)``.

    ``T = min(seq_len, N - 1 - i)``; target ``y[:, t]`` is the token right after ``x[:, t]``.
    """
    if streams.dim() != 2:
        raise ValueError(f"streams must be (B, N), got shape {tuple(streams.shape)}")
    n = streams.size(1)
    if not 0 <= i < n - 1:
        raise IndexError(f"start i must be in [0, {n - 1}), got {i}")
    t = min(seq_len, n - 1 - i)
    return streams[:, i : i + t], streams[:, i + 1 : i + 1 + t]


def iter_batches(streams: torch.Tensor, seq_len: int):
    """Yield consecutive ``(x, y)`` windows covering every target of ``(B, N)`` streams once."""
    for i in range(0, streams.size(1) - 1, seq_len):
        yield get_batch(streams, i, seq_len)


def random_windows(
    data: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random windows of a flat ``(N,)`` stream: ``x, y`` of shape ``(B, T)``, y = x shifted by one."""
    if data.dim() != 1 or data.numel() < seq_len + 1:
        raise ValueError(f"need a 1-D stream longer than seq_len={seq_len}, got shape {tuple(data.shape)}")
    starts = torch.randint(0, data.numel() - seq_len, (batch_size,), generator=generator)
    idx = starts[:, None] + torch.arange(seq_len + 1)
    w = data[idx]
    return w[:, :-1], w[:, 1:]
