"""Bad input to ``env`` (the notebooks' environment) and to the WikiText file helpers: a clear error naming the
argument or the path."""

import tempfile
from pathlib import Path

from badinput import Case, parametrize

from transformer_nb import env, fingerprint, wikitext_files

E, W = "transformer_nb.env.", "transformer_nb.wikitext_files."
MISSING = Path("/nonexistent-wikitext")

CASES = {
    "env_path_refuses_a_name_that_is_not_a_str": Case(
        E + "env_path", lambda: env.env_path(None), TypeError, "name must be the name of an environment variable"
    ),
    "check_module_refuses_a_state_dict_by_name": Case(
        E + "check_module", lambda: env.check_module("model", {}), TypeError, "model must be an nn.Module, got dict"
    ),
    "as_path_refuses_a_file_descriptor_number": Case(
        E + "as_path", lambda: env.as_path("folder", 3), TypeError, "folder must be a path (str or os.PathLike)"
    ),
    "sha256_of_refuses_a_file_descriptor_number_naming_path": Case(
        W + "sha256_of", lambda: wikitext_files.sha256_of(3), TypeError, "path must be a path"
    ),
    "download_wikitext2_refuses_a_non_path_dest_by_name": Case(
        W + "download_wikitext2", lambda: wikitext_files.download_wikitext2(3), TypeError, "dest must be a path"
    ),
    "download_wikitext2_refuses_a_non_str_base_url_by_name": Case(
        W + "download_wikitext2",
        lambda: wikitext_files.download_wikitext2(tempfile.mkdtemp(), base_url=3),
        TypeError,
        "base_url must be a URL string",
    ),
    "source_digest_refuses_a_non_str_by_name": Case(
        "transformer_nb.fingerprint.source_digest",
        lambda: fingerprint.source_digest(3),
        TypeError,
        "src must be Python source text",
    ),
    "sha256_of_names_a_missing_file": Case(
        W + "sha256_of", lambda: wikitext_files.sha256_of(MISSING / "train.txt"), FileNotFoundError, str(MISSING)
    ),
    "verify_names_the_missing_split": Case(
        W + "verify", lambda: wikitext_files.verify(MISSING), FileNotFoundError, "train.txt"
    ),
    "download_wikitext2_names_the_url_it_could_not_read": Case(
        W + "download_wikitext2",
        lambda: wikitext_files.download_wikitext2(
            tempfile.mkdtemp(), base_url="file:///nonexistent-mirror/", progress=False
        ),
        OSError,
        "/nonexistent-mirror/train.txt",
    ),
}


@parametrize(CASES)
def test_env_and_file_helpers_refuse_bad_input_by_name(name):
    CASES[name].check()
