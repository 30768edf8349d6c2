"""Show the real source of a package object in a notebook (so notebooks never re-type it)."""

import inspect


def show_source(obj) -> None:
    """Display ``obj``'s source with syntax highlighting (plain text outside Jupyter)."""
    obj = inspect.unwrap(obj)  # a decorated function: show the function, not the decorator's file
    src = inspect.getsource(obj)
    where = "# transformer_nb/" + inspect.getsourcefile(obj).replace("\\", "/").split("transformer_nb/")[-1]
    try:
        from IPython.display import Code, display

        display(Code(f"{where}\n{src}", language="python"))
    except ImportError:
        print(where)
        print(src)
