"""Notebook 09: the teacher-forcing shift and batched greedy decoding."""

import torch

from transformer_nb.reversal import BOS, EOS, PAD


def shift(tgt):
    B, L = tgt.shape
    lengths = (tgt != PAD).sum(dim=1)  # real symbols per row
    full = torch.full((B, L + 2), PAD, dtype=torch.long)
    full[:, 0] = BOS
    full[:, 1 : L + 1] = tgt
    full[torch.arange(B), lengths + 1] = EOS  # EOS right after each row's last symbol
    tgt_in, tgt_out = full[:, :-1], full[:, 1:]  # the input lags the labels by one position
    return tgt_in.masked_fill(tgt_in == EOS, PAD), tgt_out  # no EOS in the decoder input


def greedy(model, src, max_new):
    src_keep = src != PAD
    memory = model.encode(src, src_keep)  # encode once
    B = src.shape[0]
    ys = torch.full((B, 1), BOS, dtype=torch.long)  # every row starts from BOS
    out = torch.full((B, max_new), PAD, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    for t in range(max_new):
        logits = model.decode(ys, memory, src_keep, ys != PAD)  # (B, t + 1, V)
        nxt = logits[:, -1].argmax(-1).masked_fill(done, PAD)  # the last position predicts the next token
        out[:, t] = nxt
        done = done | (nxt == EOS)
        if done.all():
            break
        ys = torch.cat([ys, nxt[:, None]], dim=1)  # feed the prediction back in
    return out
