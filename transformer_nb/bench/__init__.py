"""Benchmarks: ``python -m transformer_nb.bench NAME [options]``; each prints one JSON line last."""
