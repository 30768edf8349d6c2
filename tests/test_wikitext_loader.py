"""The WikiText-2 loader on the real shared files: counts, vocabulary, checksums, errors.

Data is found via TNB_DATA_DIR, else ../shared/data relative to the repo root (beside the checkout, where CI keeps
it; an installed package does not look there); the tests that need it skip (saying so) when neither exists.
"""

import shutil
from pathlib import Path

import pytest
import torch
from wikitext_data import DATA, needs_data

from transformer_nb import wikitext as wt
from transformer_nb import wikitext_files


@pytest.fixture(scope="module")
def corpus():
    if DATA is None:
        pytest.skip("WikiText-2 not found: set TNB_DATA_DIR or provide ../shared/data/wikitext-2")
    return wt.load_wikitext2(DATA)


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No TNB_DATA_DIR, an empty user cache, downloads forbidden unless a test allows them."""
    monkeypatch.delenv("TNB_DATA_DIR", raising=False)
    monkeypatch.setattr(wikitext_files, "beside_checkout", lambda: None)  # no data beside the checkout
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TNB_OFFLINE", "1")
    return tmp_path


@needs_data
def test_counts_vocabulary_and_decoding_match_the_files(corpus):
    counts = [corpus.split(s).numel() for s in wt.SPLITS]
    assert counts == [2_088_628, 217_646, 245_569] and corpus.train.dtype == torch.long  # the published counts
    v = corpus.vocab
    assert len(v) == 33_278 == wt.VOCAB_SIZE and (v.itos[v.eos], v.itos[v.unk]) == ("<eos>", "<unk>")
    assert max(int(corpus.valid.max()), int(corpus.test.max())) < len(v)  # train's vocabulary covers them
    with open(corpus.folder / "train.txt", encoding="utf-8") as f:
        f.readline()  # blank first line -> a lone <eos>
        second = f.readline().split()
    assert v.decode(corpus.train[: 1 + len(second)]) == " ".join(["<eos>", *second])
    assert v.decode(v.encode("the zzqxjunknownword history")) == "the <unk> history"


@needs_data
def test_tnb_data_dir_may_name_the_folder_or_its_parent_with_a_tilde_and_spaces_around(monkeypatch):
    monkeypatch.setenv("HOME", str(DATA.parent.parent))
    for value in (DATA, DATA.parent, f"  ~/{DATA.parent.name} \n"):
        monkeypatch.setenv("TNB_DATA_DIR", str(value))
        assert wt.find_data_dir(download=False) == DATA


@needs_data
def test_a_corrupted_or_missing_file_at_an_explicit_path_is_named(tmp_path):
    copy = tmp_path / "wikitext-2"
    shutil.copytree(DATA, copy)
    raw = bytearray((copy / "valid.txt").read_bytes())
    raw[1000] ^= 0x01  # flip one bit
    (copy / "valid.txt").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"checksum mismatch .*valid\.txt"):
        wt.load_wikitext2(copy)
    (copy / "test.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing: \['test.txt'\]"):
        wt.load_wikitext2(copy)


def test_the_folder_beside_a_checkout_is_shared_data_and_an_install_has_none(tmp_path, monkeypatch):
    assert wikitext_files.beside_checkout() == Path(__file__).resolve().parents[2] / "shared" / "data"  # CI keeps it
    installed = tmp_path / "site-packages" / "transformer_nb" / "wikitext_files.py"  # no pyproject.toml beside it
    monkeypatch.setattr(wikitext_files, "__file__", str(installed))
    assert wikitext_files.beside_checkout() is None


def test_with_tnb_data_dir_unset_the_copy_beside_the_checkout_is_found_and_named_when_empty(isolated, monkeypatch):
    beside = isolated / "shared" / "data"
    monkeypatch.setattr(wikitext_files, "beside_checkout", lambda: beside)
    with pytest.raises(FileNotFoundError, match=rf"{beside} \(beside the checkout\)"):
        wt.find_data_dir(download=False)
    (beside / "wikitext-2").mkdir(parents=True)
    for split in wt.SPLITS:
        (beside / "wikitext-2" / f"{split}.txt").write_text("")
    assert wt.find_data_dir(download=False) == beside / "wikitext-2"
    monkeypatch.setenv("TNB_DATA_DIR", str(isolated / "elsewhere"))  # a chosen TNB_DATA_DIR is not replaced
    with pytest.raises(FileNotFoundError):
        wt.find_data_dir(download=False)


def test_nothing_found_offline_says_where_it_looked(isolated):
    with pytest.raises(FileNotFoundError) as err:
        wt.find_data_dir()
    msg = str(err.value)
    assert "TNB_DATA_DIR (not set)" in msg
    assert str(wt.user_cache_dir() / "wikitext-2") in msg
    assert "download (disabled" in msg
    assert "How to get the data" in msg and wikitext_files.BASE_URL in msg


KINDS = ("a folder", "a device", "a symbolic link loop")


@pytest.mark.parametrize("what, kind", [("train.txt", k) for k in KINDS] + [("the folder", k) for k in KINDS[1:]])
def test_a_data_file_or_folder_that_is_a_folder_a_device_or_a_link_loop_is_named_with_what_is_wrong(
    isolated, monkeypatch, kind, what
):
    folder = isolated / "wikitext-2"
    path = folder / "train.txt" if what == "train.txt" else folder
    if what == "train.txt":
        folder.mkdir()
        for split in ("valid", "test"):
            (folder / f"{split}.txt").write_text("x\n")
    path.mkdir() if kind == "a folder" else path.symlink_to("/dev/null" if kind == "a device" else path)
    for env in [None] if what == "train.txt" else [None, str(folder)]:  # an explicit path, then TNB_DATA_DIR
        if env:
            monkeypatch.setenv("TNB_DATA_DIR", env)
        with pytest.raises(FileNotFoundError) as err:
            wt.find_data_dir(None if env else folder)
        msg = str(err.value)
        assert f"{path} is {kind}" in msg and ", not a " in msg and (env or "cannot be read" in msg)


@pytest.mark.parametrize("value, err", [(" Yes ", FileNotFoundError), ("maybe", ValueError)])
def test_tnb_offline_is_read_as_people_write_it_and_an_unreadable_value_is_named(isolated, monkeypatch, value, err):
    monkeypatch.setenv("TNB_OFFLINE", value)
    monkeypatch.setenv("TNB_DATA_URL", "http://127.0.0.1:9/")  # were it tried, the message would say it failed
    with pytest.raises(err, match=r"download \(disabled|TNB_OFFLINE must be one of 1, true, yes, on .* got 'maybe'"):
        wt.find_data_dir(progress=False, timeout=2)
