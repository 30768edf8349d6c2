# ruff: noqa: E501  (a table: one configuration per line)
"""tools/uv_args.py: pip's index configuration (`pip config list`, PIP_* variables) as `uv pip install` arguments."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import uv_args

STRATEGY = ["--index-strategy", "unsafe-best-match"]


def args_for(config_text: str, environ: dict[str, str] | None = None, index_url: str = "") -> list[str]:
    return uv_args.uv_args(uv_args.settings(config_text, environ or {}), index_url)


XIU, FL, IU = "global.extra-index-url=", "global.find-links=", "global.index-url="
#: name: (`pip config list`, PIP_* variables, --index-url, the arguments after the index strategy)
CASES = {
    "nothing": ("", {}, "", []),
    "each find-links entry a flag": (FL + "'/a /b'", {}, "", ["--find-links", "/a", "--find-links", "/b"]),
    "each extra index a flag": (XIU + "'file:///a file:///b'", {}, "", ["--extra-index-url", "file:///a", "--extra-index-url", "file:///b"]),
    "other settings left out": ("global.cert='/etc/ca.crt'\n:env:.default-timeout='180'", {}, "", []),
    "variables override the files": (FL + "'/a'\n" + IU + "'https://m/s'", {"PIP_FIND_LINKS": "/e", "PIP_INDEX_URL": "https://e/s"}, "", ["--index-url", "https://e/s", "--find-links", "/e"]),
    "the extra-index variable replaces the list": (XIU + "'file:///a file:///b'", {"PIP_EXTRA_INDEX_URL": "file:///c"}, "", ["--extra-index-url", "file:///c"]),
    "install section over global": ("install.index-url='https://i/s'\n" + IU + "'https://g/s'", {}, "", ["--index-url", "https://i/s"]),
    "env section over both": (":env:.index-url='https://e/s'\ninstall.index-url='https://i/s'\n" + IU + "'https://g/s'", {}, "", ["--index-url", "https://e/s"]),
    "the given index replaces pip's, keeps its extras": (IU + "'https://m/s'\n" + XIU + "'file:///x'", {}, "https://t/s", ["--index-url", "https://t/s", "--extra-index-url", "file:///x"]),
    "no-index passed on": ("global.no-index='true'\n" + FL + "'/w'", {}, "", ["--find-links", "/w", "--no-index"]),
    "no-index false": ("global.no-index='false'", {}, "", []),
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_pip_configuration_becomes_uv_arguments(name):
    config, environ, index_url, expected = CASES[name]
    assert args_for(config + "\n", environ, index_url) == STRATEGY + expected


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
