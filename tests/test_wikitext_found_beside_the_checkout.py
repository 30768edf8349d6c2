"""With TNB_DATA_DIR unset, the loader finds the WikiText-2 copy beside the checkout (../shared/data, where CI
keeps it) by itself; an installed package (no pyproject.toml beside it) does not look
there; and when nothing is found, the message names that folder among the places looked at."""

from pathlib import Path

import pytest

from transformer_nb import wikitext_files

ROOT = Path(__file__).resolve().parents[1]
BESIDE = ROOT.parent / "shared" / "data"


def test_the_folder_beside_a_checkout_is_shared_data_and_an_install_has_none(tmp_path, monkeypatch):
    assert wikitext_files.beside_checkout() == BESIDE
    installed = tmp_path / "site-packages" / "transformer_nb" / "wikitext_files.py"
    monkeypatch.setattr(wikitext_files, "__file__", str(installed))
    assert wikitext_files.beside_checkout() is None


def test_it_is_found_when_tnb_data_dir_is_unset_and_named_when_empty(tmp_path, monkeypatch):
    monkeypatch.delenv("TNB_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    beside = tmp_path / "shared" / "data"
    monkeypatch.setattr(wikitext_files, "beside_checkout", lambda: beside)
    with pytest.raises(FileNotFoundError, match=rf"{beside} \(beside the checkout\)"):
        wikitext_files.find_data_dir(download=False)
    (beside / "wikitext-2").mkdir(parents=True)
    for split in wikitext_files.SPLITS:
        (beside / "wikitext-2" / f"{split}.txt").write_text("")
    assert wikitext_files.find_data_dir(download=False) == beside / "wikitext-2"
    monkeypatch.setenv("TNB_DATA_DIR", str(tmp_path / "elsewhere"))  # a chosen TNB_DATA_DIR is not replaced
    with pytest.raises(FileNotFoundError):
        wikitext_files.find_data_dir(download=False)
