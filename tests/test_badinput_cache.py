"""Bad input to the digests the cache keys trained models by (``fingerprint``)."""

from badinput import Case, parametrize

from transformer_nb import fingerprint

F = "transformer_nb.fingerprint."

CASES = {
    "file_digest_names_a_missing_file": Case(
        F + "file_digest", lambda: fingerprint.file_digest("/nonexistent-module.py"), FileNotFoundError, "nonexistent"
    ),
    "source_digest_refuses_a_number": Case(
        F + "source_digest", lambda: fingerprint.source_digest(3), TypeError, "src must be Python source text"
    ),
}


@parametrize(CASES)
def test_cache_digests_refuse_bad_input(name):
    CASES[name].check()
