"""WikiText-2 (tokenized, v1) on disk: find the three files, download them, verify them.

Where the loader looks, in this order (the first folder that holds all three of
``train.txt``, ``valid.txt``, ``test.txt`` wins):

1. an explicit ``path`` argument (a folder containing ``wikitext-2/``, or the
   ``wikitext-2`` folder itself);
2. the environment variable ``TNB_DATA_DIR`` (same two forms); when it is unset, in a checkout (the package
   beside its ``pyproject.toml``), the folder ``shared/data`` next to the checkout (``../shared/data`` from the
   repository root, where CI keeps the data);
3. the user data cache, ``$XDG_CACHE_HOME/transformer_nb/data/wikitext-2``
   (``~/.cache/transformer_nb/data/wikitext-2`` when ``XDG_CACHE_HOME`` is unset).
   This is deliberately *not* ``TNB_CACHE_DIR`` (the trained-model cache, which CI
   points at a fresh folder): the data is downloaded once per user, not per run;
4. only then a download of the original files (byte-identical copies kept in
   pytorch/examples, at a pinned commit; ``TNB_DATA_URL`` names a mirror instead) into
   the user cache, with a ``tqdm.auto`` progress bar and a sha256 check. A partial or
   corrupt download raises ``ValueError`` and keeps nothing. Pass ``download=False``
   (or set ``TNB_OFFLINE`` to ``1``, ``true``, ``yes`` or ``on``) to forbid it.

When nothing is found and the download is impossible, a ``FileNotFoundError`` lists
every place that was looked at and says how to get the data; a path that is there but
cannot be read (a folder where a file should be, a device such as ``/dev/null``, a
symbolic link loop) is named with what is wrong with it.

Every load verifies the sha256 of the three files (13 MB; about 20 ms measured on a
2-core machine, so no stamp file is needed). A mismatch raises ``ValueError``.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import shutil
import stat
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from transformer_nb.core.utils import as_real
from transformer_nb.env import as_path, env_flag, env_path

SPLITS = ("train", "valid", "test")
SHA256 = {
    "train": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
    "valid": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
    "test": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
}
N_BYTES = {"train": 10_797_148, "valid": 1_121_681, "test": 1_256_449}

#: Where the files are downloaded from: pytorch/examples at a pinned commit. The files
#: there are byte-for-byte the original WikiText-2 v1 release (CC BY-SA 3.0,
#: Merity et al. 2016, arXiv:1609.07843). ``TNB_DATA_URL`` overrides it (a mirror).
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
    return (env_path("XDG_CACHE_HOME") or Path.home() / ".cache") / "transformer_nb" / "data"


def beside_checkout() -> Path | None:
    """``../shared/data`` from the repository root, when the package runs from a checkout; else None."""
    root = Path(__file__).resolve().parents[1]
    return root.parent / "shared" / "data" if (root / "pyproject.toml").is_file() else None


def data_url() -> str:
    """Where downloads come from: env ``TNB_DATA_URL`` (a mirror of the three files), else ``BASE_URL``."""
    return (os.environ.get("TNB_DATA_URL", "").strip() or BASE_URL).rstrip("/") + "/"


def _candidates(root: str | os.PathLike) -> list[Path]:
    """A folder may be the wikitext-2 folder itself or its parent."""
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike folder, got {type(root).__name__}")
    root = Path(root).expanduser()
    return [root, root / "wikitext-2"] if root.name == "wikitext-2" else [root / "wikitext-2", root]


def _complete(folder: Path) -> bool:
    return all((folder / f"{s}.txt").is_file() for s in SPLITS)


def _what_is(path: Path) -> str:
    """What is at ``path``: ``"a file"``, ``"a folder"``, ``"missing"`` or what makes it unreadable."""
    try:
        mode = path.stat().st_mode
    except OSError as err:
        if err.errno == errno.ELOOP or path.is_symlink():
            return "a symbolic link loop" if err.errno == errno.ELOOP else "a broken symbolic link"
        return "missing" if isinstance(err, FileNotFoundError) else f"unreadable ({err.strerror})"
    return "a folder" if stat.S_ISDIR(mode) else "a file" if stat.S_ISREG(mode) else "a device (such as /dev/null)"


def _wrong(folder: Path) -> str:
    """What is wrong, path by path, with what stands where the data should be ("" when only files are missing)."""
    if _what_is(folder) not in ("a folder", "missing"):
        return f"{folder} is {_what_is(folder)}, not a folder"
    found = [(folder / f"{s}.txt", _what_is(folder / f"{s}.txt")) for s in SPLITS]
    return "; ".join(f"{p} is {what}, not a regular file" for p, what in found if what not in ("a file", "missing"))


def _found(root) -> Path | None:
    return next((c for c in _candidates(root) if _complete(c)), None) if root else None


def find_data_dir(path=None, *, download: bool | None = None, progress=True, timeout=30.0) -> Path:
    """Return the ``wikitext-2`` folder, looking in the documented order.

    ``path``: explicit folder (``wikitext-2`` or its parent). If given and incomplete,
    that is an error at once (an explicit wish is not silently replaced).
    ``download``: allow the download step (default: yes unless ``TNB_OFFLINE`` is on).
    Raises ``FileNotFoundError`` listing every place looked at.
    """
    if download is not None and not isinstance(download, bool):
        raise TypeError(f"download must be True or False, got {download!r}")
    timeout = as_real("timeout", timeout, positive=True)
    if path is not None:
        if found := _found(path):
            return found
        folder = next((c for c in _candidates(path) if c.is_dir()), Path(path).expanduser())
        if wrong := _wrong(folder):
            raise FileNotFoundError(f"WikiText-2 cannot be read at the explicit path {str(path)!r}: {wrong}")
        missing = [f"{s}.txt" for s in SPLITS if not (folder / f"{s}.txt").is_file()]
        raise FileNotFoundError(
            f"WikiText-2 not found at the explicit path {str(path)!r}: expected a folder 'wikitext-2' (or its "
            f"parent) holding train.txt, valid.txt, test.txt; missing: {missing}.\n" + HOW_TO_GET
        )
    env, cache = env_path("TNB_DATA_DIR"), user_cache_dir() / "wikitext-2"
    beside = None if env else beside_checkout()
    if found := _found(env) or _found(beside) or (cache if _complete(cache) else None):
        return found
    if env:
        wrong = "; ".join(filter(None, map(_wrong, _candidates(env))))
        looked = [f"TNB_DATA_DIR={env} (checked {', '.join(map(str, _candidates(env)))}{': ' * bool(wrong)}{wrong})"]
    else:
        looked = ["TNB_DATA_DIR (not set)"] + [f"{beside} (beside the checkout)"] * bool(beside)
    looked.append(f"user cache {cache}" + (f" ({_wrong(cache)}: remove it to download again)" if _wrong(cache) else ""))
    if env_flag("TNB_OFFLINE") if download is None else not download:
        looked.append("download (disabled: download=False or TNB_OFFLINE on)")
    elif not _wrong(cache):  # else a download would not fit where the files should be
        try:
            return download_wikitext2(cache, progress=progress, timeout=timeout)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            looked.append(f"download from {data_url()} failed ({type(err).__name__}: {err}); are you offline?")
    raise FileNotFoundError(
        "WikiText-2 not found. Looked at, in order:\n  - " + "\n  - ".join(looked) + "\n" + HOW_TO_GET
    )


def download_wikitext2(dest: str | os.PathLike, *, base_url: str | None = None, progress=True, timeout=30.0) -> Path:
    """Download the three files into ``dest`` with a ``tqdm.auto`` progress bar, checking sha256.

    ``base_url`` defaults to ``data_url()``. Each file is written to a temporary name and renamed
    only after its size and checksum matched, so an interrupted, partial or corrupt download never
    leaves a file that looks complete: it raises ``ValueError`` saying what arrived.
    """
    from tqdm.auto import tqdm
    from tqdm.utils import CallbackIOWrapper

    dest = as_path("dest", dest)
    if base_url is not None and not isinstance(base_url, str):
        raise TypeError(f"base_url must be a URL string, got {type(base_url).__name__} {base_url!r}")
    base_url = data_url() if base_url is None else base_url.rstrip("/") + "/"
    dest.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        target, url, size = dest / f"{split}.txt", base_url + f"{split}.txt", N_BYTES[split]
        if target.is_file() and sha256_of(target) == SHA256[split]:
            continue
        fd, tmp = tempfile.mkstemp(dir=dest, prefix=f".{split}.", suffix=".part")
        bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"wikitext-2/{split}.txt", disable=not progress)
        try:
            with bar, os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                shutil.copyfileobj(CallbackIOWrapper(bar.update, resp, "read"), out)
            n, got = os.path.getsize(tmp), sha256_of(tmp)
            if got != SHA256[split]:
                raise ValueError(
                    f"the download of {url} is {'partial' if n < size else 'corrupt'}: {n:,} bytes with sha256 {got}, "
                    f"expected {size:,} bytes with sha256 {SHA256[split]}; nothing was kept"
                )
            shutil.move(tmp, target)
        except http.client.IncompleteRead:
            raise ValueError(
                f"the download of {url} broke off after {os.path.getsize(tmp):,} of {size:,} bytes (a partial "
                f"download); nothing was kept, try again"
            ) from None
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return dest


# --------------------------------------------------------------------------- verifying
def sha256_of(path: str | os.PathLike) -> str:
    """The sha256 (hex) of the file at ``path``."""
    with open(as_path("path", path), "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


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
