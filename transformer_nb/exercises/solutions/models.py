"""Notebook 08: the masks of each variant, the next-token shift, and mean pooling."""

import torch


def variant_masks(variant, src_keep, tgt_keep):
    def padding(keep, n_queries):  # (B, T_k) -> (B, 1, n_queries, T_k): padded keys blocked
        return keep[:, None, None, :].expand(-1, 1, n_queries, -1)

    S, T = src_keep.shape[1], tgt_keep.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    masks = {"encoder_self": None, "decoder_self": None, "cross": None}
    if variant in ("encoder-only", "encoder-decoder"):
        masks["encoder_self"] = padding(src_keep, S)  # bidirectional: only padding is blocked
    if variant in ("decoder-only", "encoder-decoder"):
        masks["decoder_self"] = padding(tgt_keep, T) & causal  # padding AND no future
    if variant == "encoder-decoder":
        masks["cross"] = padding(src_keep, T)  # target queries may read every real source token
    return masks


def lm_shift(ids, keep):
    inputs = ids[:, :-1]  # the last token has nothing after it to predict
    targets = ids[:, 1:].masked_fill(~keep[:, 1:], -100)  # a target counts only if it is a real token
    return inputs, targets


def mean_pool(hidden, keep):
    w = keep.to(hidden.dtype)[..., None]  # (B, T, 1): 1 at real tokens, 0 at padding
    return (hidden * w).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)  # an empty sequence gives zeros, not NaN
