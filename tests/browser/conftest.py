"""Run the browser test last in a session (``make test`` runs unit tests, then the notebooks under
nbval, then this): the other results come first, and a widget that needs a trained model finds it
in ``TNB_CACHE_DIR``, which the notebooks' own run has just filled."""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(session, config, items):
    here = [it for it in items if HERE in Path(str(it.path)).resolve().parents]
    if here and len(here) < len(items):
        rest = [it for it in items if HERE not in Path(str(it.path)).resolve().parents]
        items[:] = rest + here
