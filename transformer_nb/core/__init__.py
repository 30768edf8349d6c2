"""The core: the Transformer the chapter teaches, one concept a module, in book order.

``attention`` -> ``masks`` -> ``multihead`` (and its KV cache) -> ``positional`` / ``rope`` -> ``config`` (the one
``TransformerConfig``, validated once) -> ``block`` ->
``stack`` -> ``transformer`` (one configuration, one model for the three variants) -> ``generation``.
These modules import only each other; everything else in ``transformer_nb`` is the companion
(exercises, claims ledger, widgets, lecture mode, benchmarks, cache, notebook tools), which imports them.
"""
