"""Dispatch ``python -m transformer_nb.bench NAME [args]`` to ``transformer_nb.bench.NAME.main(args)``."""

import importlib
import pkgutil
import sys

import transformer_nb.bench as bench


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    names = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_"))
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: python -m transformer_nb.bench {{{','.join(names)}}} [options]")
        return 0 if argv else 2
    if argv[0] not in names:
        print(f"unknown benchmark {argv[0]!r}; choose one of {names}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"transformer_nb.bench.{argv[0]}")
    return module.main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
