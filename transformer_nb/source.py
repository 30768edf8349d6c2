"""Show the real source of a package object in a notebook (so notebooks never re-type it)."""

import inspect
from pathlib import Path


def show_source(obj) -> None:
    """Display ``obj``'s source (a function, class, method or module) with syntax highlighting.

    The first line names its file: ``# transformer_nb/...`` for the package, else the full path.
    Plain text outside Jupyter.
    """
    obj = inspect.unwrap(obj)  # a decorated function: show the function, not the decorator's file
    try:
        src, path = inspect.getsource(obj), inspect.getsourcefile(obj)
    except (TypeError, OSError) as err:
        raise TypeError(
            f"obj must be a function, class, method or module with Python source, got {type(obj).__name__} ({err})"
        ) from None
    file, package = Path(path).resolve(), Path(__file__).resolve().parent
    where = f"# transformer_nb/{file.relative_to(package).as_posix()}" if file.is_relative_to(package) else f"# {file}"
    try:
        from IPython.display import Code, display

        display(Code(f"{where}\n{src}", language="python"))
    except ImportError:
        print(where)
        print(src)
