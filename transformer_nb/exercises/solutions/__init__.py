"""Solutions to every exercise, written as a student would write them (one module per notebook topic).

They are the checkers' hidden references and what ``ex.solution()`` shows; ``make solutions`` puts each
one in place of its stub and runs the notebook top to bottom. Each function has the stub's name and
signature, and uses only torch (never the package function it replaces).
"""
