"""The ``TransformerConfig`` fields that give each ``OutputHead`` kind (the LM tests are parametrized by kind)."""

HEAD_FIELDS = {
    "full": dict(tie_output=False, output_bias=True),
    "tied": dict(output_bias=True),
    "adaptive": dict(adaptive=True, tie_output=False),
    "adaptive_tied": dict(adaptive=True),
}
