"""Pip's index configuration as `uv pip install` arguments, one per line (for `make install`).

uv reads no pip configuration, so the indexes and wheel folders pip is configured with are passed on:

    python tools/uv_args.py [--index-url URL]     # runs `python -m pip config list` itself

`find-links` and `extra-index-url` (space-separated lists in pip) become one `--find-links` / `--extra-index-url`
per entry, `index-url` becomes `--index-url` (the `--index-url` given here, e.g. the torch build's index, wins),
`no-index` becomes `--no-index`. As in pip, a PIP_* environment variable overrides the `install` section of a
config file, which overrides `global`. `--index-strategy unsafe-best-match` makes uv pick, like pip, the best
version across all indexes (uv's default takes the first index that has the package). Exit status 2 with a
message on stderr when pip's configuration cannot be read.
"""

import argparse
import ast
import os
import subprocess
import sys

KEYS = ("index-url", "extra-index-url", "find-links", "no-index")
SECTIONS = ("global", "install", ":env:")  # pip's order: a later section overrides an earlier one
ENV_VARS = {f"PIP_{key.upper().replace('-', '_')}": key for key in KEYS}
LIST_KEYS = {"extra-index-url": "--extra-index-url", "find-links": "--find-links"}


class PipConfigError(ValueError):
    """Pip's configuration could not be read."""


def parse_config_list(text: str) -> dict[str, str]:
    """The index settings of `pip config list` output (lines `section.key='value'`), later sections winning."""
    found: dict[str, dict[str, str]] = {section: {} for section in SECTIONS}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, raw = line.partition("=")
        section, dot, key = name.rpartition(".")
        try:
            value = ast.literal_eval(raw) if sep and dot else None
        except (ValueError, SyntaxError):
            value = None
        if not isinstance(value, str):
            raise PipConfigError(f"line {number} of `pip config list` is not section.key='value': {line!r}")
        if section in found and key in KEYS:
            found[section][key] = value
    return {key: value for section in SECTIONS for key, value in found[section].items()}


def settings(config_text: str, environ: dict[str, str]) -> dict[str, str]:
    """Pip's effective index settings: the config list, overridden by the PIP_* environment variables."""
    merged = parse_config_list(config_text)
    merged.update({key: environ[var] for var, key in ENV_VARS.items() if var in environ})
    return merged


def uv_args(config: dict[str, str], index_url: str = "") -> list[str]:
    """The `uv pip install` arguments for pip's settings `config`; `index_url`, when given, replaces its index."""
    args = ["--index-strategy", "unsafe-best-match"]
    if index_url or config.get("index-url"):
        args += ["--index-url", index_url or config["index-url"]]
    for key, flag in LIST_KEYS.items():
        for entry in config.get(key, "").split():
            args += [flag, entry]
    if config.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        args.append("--no-index")
    return args


def pip_config_list(python: str) -> str:
    """The output of `python -m pip config list`."""
    run = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True)
    if run.returncode:
        raise PipConfigError(f"`pip config list` failed: {run.stderr.strip()}")
    return run.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-url", default="", help="the index that replaces pip's (default: pip's own)")
    parser.add_argument("--python", default=sys.executable, help="the python whose pip is asked (default: this one)")
    args = parser.parse_args(argv)
    try:
        config = settings(pip_config_list(args.python), dict(os.environ))
    except PipConfigError as error:
        print(f"uv_args: {error}", file=sys.stderr)
        return 2
    print("\n".join(uv_args(config, args.index_url)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
