"""Environment variables are read as people write them: one reader for switches (``env.env_flag``) and one
for paths (``env.env_path``), used by every module that reads one. Before, ``TNB_OFFLINE=TRUE`` still
downloaded, ``TNB_RETRAIN=true`` was ignored, ``TNB_CACHE_DIR='~/x'`` made a folder named ``~`` and a
leading space stayed in a path."""

from pathlib import Path

import pytest
import torch.nn as nn

from transformer_nb import cache, companion
from transformer_nb.env import env_flag, env_path


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "True", "yes", "Yes", "on", "ON", " on\n"])
def test_a_switch_written_as_on_is_on(monkeypatch, value):
    monkeypatch.setenv("TNB_X", value)
    assert env_flag("TNB_X") is True


@pytest.mark.parametrize("value", ["0", "false", "FALSE", "no", "No", "off", "", "  "])
def test_a_switch_written_as_off_or_left_empty_is_off(monkeypatch, value):
    monkeypatch.setenv("TNB_X", value)
    assert env_flag("TNB_X") is False
    monkeypatch.delenv("TNB_X")
    assert env_flag("TNB_X") is False


@pytest.mark.parametrize("value", ["2", "y", "maybe", "enabled", "-1"])
def test_a_switch_that_is_neither_is_an_error_naming_the_variable_and_the_choices(monkeypatch, value):
    monkeypatch.setenv("TNB_X", value)
    with pytest.raises(
        ValueError, match=rf"TNB_X must be one of 1, true, yes, on \(on\) or 0, false, no, off .*{value!r}"
    ):
        env_flag("TNB_X")


def test_a_path_is_stripped_and_its_tilde_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TNB_X", "  ~/models \t")
    assert env_path("TNB_X") == tmp_path / "models"
    monkeypatch.setenv("TNB_X", " /srv/a b ")
    assert env_path("TNB_X") == Path("/srv/a b")  # spaces inside a path stay
    for blank in ("", "   "):
        monkeypatch.setenv("TNB_X", blank)
        assert env_path("TNB_X") is None


def test_tnb_cache_dir_with_a_tilde_and_spaces_is_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TNB_CACHE_DIR", " ~/x ")
    assert cache.cache_dir() == tmp_path / "x"
    cache.load_or_train("m", nn.Linear(2, 2), {}, lambda m: {})
    assert (tmp_path / "x" / "m.pt").is_file()


def test_tnb_notebooks_with_a_tilde_is_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TNB_NOTEBOOKS", "~/nb ")
    assert companion.notebooks_dir() == tmp_path / "nb"


@pytest.mark.parametrize("value", ["1", "true", "Yes", "ON"])
def test_tnb_retrain_written_as_on_retrains(monkeypatch, tmp_path, value):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    calls = []

    def train(m):
        calls.append(1)

    cache.load_or_train("m", nn.Linear(2, 2), {}, train)
    monkeypatch.setenv("TNB_RETRAIN", value)
    _, trained = cache.load_or_train("m", nn.Linear(2, 2), {}, train)
    assert trained and calls == [1, 1]


def test_an_unreadable_tnb_retrain_is_an_error_naming_it(monkeypatch, tmp_path):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TNB_RETRAIN", "please")
    with pytest.raises(ValueError, match="TNB_RETRAIN must be one of"):
        cache.load_or_train("m", nn.Linear(2, 2), {}, lambda m: {})
