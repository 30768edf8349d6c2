"""The core: the Transformer the chapter teaches, one concept a module, in book order.

``attention`` -> ``masks`` -> ``multihead`` (and its KV cache) -> ``positional`` / ``rope`` -> ``config`` (the one
``TransformerConfig``, validated once) -> ``block`` ->
``stack`` -> ``transformer`` (one configuration, one model for the three variants) -> ``generation``.
Every input check lives in ``checks``: a public function or module is checked once, at its outermost call
(``@checks.boundary``), and its body is the computation alone. These modules import only each other;
everything else in ``transformer_nb`` is the companion (exercises, claims ledger, widgets, lecture mode,
benchmarks, cache, notebook tools), which imports them.
"""
