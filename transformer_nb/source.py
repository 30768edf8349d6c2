"""Show the real source of a package object in a notebook (so notebooks never re-type it)."""
import inspect


def show_source(obj) -> None:
    """Display ``obj``'s source with syntax highlighting (plain text outside Jupyter)."""
    src = inspect.getsource(obj)
    where = f"# {inspect.getsourcefile(obj).split('transformer_nb')[-1].lstrip('/')}".replace(
        "# ", "# transformer_nb/", 1)
    try:
        from IPython.display import Code, display
        display(Code(f"{where}\n{src}", language="python"))
    except ImportError:
        print(where)
        print(src)
