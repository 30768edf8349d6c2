"""Bad input to the claims ledger's functions: a clear error naming the argument (``tests/badinput.py``)."""

from badinput import Case, parametrize

from transformer_nb import claims
from transformer_nb.claims import figures

L, F = "transformer_nb.claims.", "transformer_nb.claims.figures."

CASES = {
    "get_suggests_close_ids_for_an_unknown_id": Case(L + "get", lambda: claims.get("000-1"), KeyError, "no claim"),
    "get_refuses_an_id_that_is_not_a_str": Case(L + "get", lambda: claims.get(["000-01"]), TypeError, "claim_id"),
    "claims_refuses_an_unknown_status": Case(
        L + "claims", lambda: claims.claims(status="false"), ValueError, "status='false' is not one of"
    ),
    "counts_refuses_ids_instead_of_entries": Case(
        L + "counts", lambda: claims.counts(["000-01"]), TypeError, "entries must be a list of claims"
    ),
    "cite_refuses_a_truthy_str_for_reveal": Case(
        L + "cite", lambda: claims.cite(claims.LEDGER[0].id, reveal="no"), TypeError, "reveal must be True or False"
    ),
    "run_checks_refuses_a_str_for_entries": Case(
        L + "run_checks", lambda: claims.run_checks("000-01"), TypeError, "entries must be a list of claims"
    ),
    "report_refuses_an_unknown_notebook": Case(
        L + "report", lambda: claims.report(notebook="99"), ValueError, "notebook='99' is not one of"
    ),
    "markdown_refuses_one_claim_instead_of_a_list": Case(
        L + "markdown", lambda: claims.markdown(claims.LEDGER[0]), TypeError, "entries must be a list of claims"
    ),
    "markdown_refuses_a_truthy_str_for_reveal": Case(
        L + "markdown", lambda: claims.markdown(reveal="False"), TypeError, "reveal must be True or False"
    ),
    "read_names_an_unknown_figure": Case(F + "read", lambda: figures.read("99:nope"), KeyError, "no figure '99:nope'"),
}


@parametrize(CASES)
def test_claims_refuse_bad_input_by_name(name):
    CASES[name].check()
