"""Benchmarks: ``python -m transformer_nb.bench NAME [options]``; each prints one JSON line last."""

import argparse
import math


def check_positive_flags(parser: argparse.ArgumentParser, args: argparse.Namespace, *flags: str) -> None:
    """``parser.error`` (exit 2, the option named) unless each of ``args``' ``flags`` is None or in ``(0, inf)``."""
    for flag in flags:
        value = getattr(args, flag)
        if value is not None and not 0 < value < math.inf:
            parser.error(f"--{flag.replace('_', '-')} must be a positive finite number, got {value}")
