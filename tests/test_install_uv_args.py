"""tools/uv_args.py: pip's index configuration (`pip config list`, PIP_* variables) as `uv pip install` arguments."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import uv_args

STRATEGY = ["--index-strategy", "unsafe-best-match"]


def args_for(config_text: str, environ: dict[str, str] | None = None, index_url: str = "") -> list[str]:
    return uv_args.uv_args(uv_args.settings(config_text, environ or {}), index_url)


def test_no_configuration_gives_only_the_index_strategy():
    assert args_for("") == STRATEGY


def test_each_find_links_entry_becomes_one_flag():
    text = "global.find-links='/opt/wheels /srv/more-wheels'\n"
    assert args_for(text) == STRATEGY + ["--find-links", "/opt/wheels", "--find-links", "/srv/more-wheels"]


def test_space_separated_extra_index_urls_become_one_flag_each():
    text = "global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'\n"
    assert args_for(text) == STRATEGY + [
        "--extra-index-url",
        "file:///opt/pypi/simple",
        "--extra-index-url",
        "file:///opt/pypi-more/simple",
    ]


def test_settings_other_than_indexes_are_left_out():
    text = "global.cert='/etc/ssl/certs/ca-certificates.crt'\n:env:.default-timeout='180'\n"
    assert args_for(text) == STRATEGY


def test_environment_variables_override_the_config_files():
    text = "global.find-links='/opt/wheels'\nglobal.index-url='https://mirror.example/simple'\n"
    environ = {"PIP_FIND_LINKS": "/env/wheels", "PIP_INDEX_URL": "https://env.example/simple"}
    assert args_for(text, environ) == STRATEGY + [
        "--index-url",
        "https://env.example/simple",
        "--find-links",
        "/env/wheels",
    ]


def test_extra_index_url_variable_replaces_the_configured_list():
    text = "global.extra-index-url='file:///a file:///b'\n"
    assert args_for(text, {"PIP_EXTRA_INDEX_URL": "file:///c"}) == STRATEGY + ["--extra-index-url", "file:///c"]


def test_install_section_overrides_global_and_env_section_overrides_both():
    text = "install.index-url='https://install/simple'\nglobal.index-url='https://global/simple'\n"
    assert args_for(text) == STRATEGY + ["--index-url", "https://install/simple"]
    assert args_for(":env:.index-url='https://env/simple'\n" + text)[-1] == "https://env/simple"


def test_given_index_url_replaces_pips_but_keeps_its_extras():
    text = "global.index-url='https://mirror/simple'\nglobal.extra-index-url='file:///opt/pypi/simple'\n"
    assert args_for(text, index_url="https://download.pytorch.org/whl/cu126") == STRATEGY + [
        "--index-url",
        "https://download.pytorch.org/whl/cu126",
        "--extra-index-url",
        "file:///opt/pypi/simple",
    ]


def test_no_index_is_passed_on():
    assert args_for("global.no-index='true'\nglobal.find-links='/w'\n")[-1] == "--no-index"
    assert "--no-index" not in args_for("global.no-index='false'\n")


@pytest.mark.parametrize("line", ["global.find-links=/opt/wheels", "find-links='/opt/wheels'", "garbage", "a.b='x"])
def test_garbled_config_line_is_refused_with_its_line_number(line):
    with pytest.raises(uv_args.PipConfigError, match=r"line 2 of `pip config list`"):
        uv_args.parse_config_list(f"global.timeout='60'\n{line}\n")


@pytest.fixture(autouse=True)
def no_pip_variables(monkeypatch):
    """main() reads the environment: this machine's own PIP_* settings are left out."""
    for var in uv_args.ENV_VARS:
        monkeypatch.delenv(var, raising=False)


def fake_python(tmp_path: Path, body: str) -> str:
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_main_reports_a_garbled_config_on_stderr_with_status_2(tmp_path, capsys):
    python = fake_python(tmp_path, "echo 'global.find-links=/opt/wheels'")
    assert uv_args.main(["--python", python]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "uv_args: line 1 of `pip config list`" in err


def test_main_reports_a_failing_pip_config_list(tmp_path, capsys):
    python = fake_python(tmp_path, "echo 'No module named pip' >&2; exit 1")
    assert uv_args.main(["--python", python]) == 2
    assert "`pip config list` failed: No module named pip" in capsys.readouterr().err


def test_main_prints_one_argument_per_line(tmp_path, capsys):
    python = fake_python(tmp_path, "echo \"global.extra-index-url='file:///a file:///b'\"")
    assert uv_args.main(["--python", python, "--index-url", "https://x/simple"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == STRATEGY + ["--index-url", "https://x/simple"]
    assert lines[4:] == ["--extra-index-url", "file:///a", "--extra-index-url", "file:///b"]


def test_this_machines_pip_configuration_is_readable():
    uv_args.settings(uv_args.pip_config_list(sys.executable), {})
