"""The tied adaptive embedding (``OutputHead._embed_rows``) under mixed precision.

Found on an H100 on 2026-11-23: under CUDA bf16 autocast the embedding lookup stays float32 while the tail
clusters' projection product is bfloat16, and ``index_copy`` refuses two dtypes (CPU autocast promotes
``index_copy``; CUDA autocast does not), so notebook 10's recipe could not train on a GPU. ``_embed_rows`` now
casts the product. The mismatch is reproduced here on the CPU (tail clusters in bfloat16, head in float32) so
that the fix is tested on every machine; the CUDA test runs where a GPU is present.
"""

import pytest
import torch

from transformer_nb import lm_recipe

V = 33_278  # the recipe's adaptive cut-offs need WikiText-2's vocabulary size


@pytest.fixture(scope="module")
def model_and_ids():
    model = lm_recipe.build_model("transformer", V, torch.arange(V))
    # every cluster is hit: ids spread over the head (< 2,000) and both tail clusters
    ids = torch.tensor([[0, 5, 1_999, 2_000, 9_999, 10_000, 33_277, 17]])
    return model, ids


def test_the_embedding_runs_under_cpu_autocast_and_casts_a_bfloat16_tail_product(model_and_ids):
    """Then the CUDA failure's exact dtype pair on the CPU: a float32 head lookup, a bfloat16 tail product."""
    model, ids = model_and_ids
    with torch.no_grad():
        ref = model.embed_tokens(ids)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = model.embed_tokens(ids)
        assert got.shape == (1, 8, lm_recipe.RECIPE_MODEL.d_model)
        torch.testing.assert_close(got.float(), ref, rtol=2e-2, atol=2e-2)
        tail = model.head.asm.tail
        tail.to(torch.bfloat16)
        try:
            got = model.embed_tokens(ids)
        finally:
            tail.to(torch.float32)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, ref, rtol=2e-2, atol=2e-2)  # bf16 rounding of the tail rows only
    torch.testing.assert_close(got[0, :3], ref[0, :3])  # head rows never pass through bfloat16


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_embedding_runs_under_cuda_autocast(model_and_ids):
    model, ids = model_and_ids
    model, ids = model.to("cuda"), ids.to("cuda")
    try:
        with torch.no_grad():
            ref = model.embed_tokens(ids)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                got = model.embed_tokens(ids)
        torch.testing.assert_close(got.float(), ref, rtol=2e-2, atol=2e-2)
    finally:
        model.to("cpu")
