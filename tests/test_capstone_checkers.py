"""The capstone's checkers (notebook 12, steps 3-7) recognise wrong answers beyond the typical mistakes they list
(causality, names, initialisation, stubs) with a hint aimed at the mistake; what every checker does
(reference, solution, listed mistakes, hints) is tests/test_exercise_checkers.py's."""

import pytest
import torch
import torch.nn as nn

from transformer_nb.exercises.capstone import block_ex, mha_ex
from transformer_nb.exercises.capstone_lm import generate_ex, lm_ex, package_lm, params_ex
from transformer_nb.exercises.solutions import capstone as sol

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny tensors, one thread

EXERCISES = {"mha": mha_ex, "block": block_ex, "lm": lm_ex, "params": params_ex, "generate": generate_ex}


# --------------------------------------------------------------------------- stubs and crashes


class NoWeightsMHA(sol.MultiHeadAttention):
    def forward(self, x, mask=None):
        out = super().forward(x, mask)
        del self.weights
        return out


class RenamedBlock(sol.Block):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__(d_model, n_heads, d_ff)
        self.ffn = nn.Sequential(self.ff1, nn.ReLU(), self.ff2)
        del self.ff1, self.ff2

    def forward(self, x, mask=None):
        x = x + self.attn(self.norm1(x), mask)
        return x + self.ffn(self.norm2(x))


# --------------------------------------------------------------------------- the language model


def _lm_with_mask(mask_fn):
    class LM(sol.LanguageModel):
        def forward(self, ids):
            T = ids.shape[1]
            x = self.tok(ids) + self.pos(torch.arange(T))
            for block in self.blocks:
                x = block(x, mask_fn(T))
            return self.norm(x) @ self.tok.weight.T + self.bias

    return LM


class UntiedLM(sol.LanguageModel):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len):
        super().__init__(vocab_size, d_model, n_heads, d_ff, n_layers, max_len)
        del self.bias
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x, sol.my_causal_mask(ids.shape[1]))
        return self.head(self.norm(x))


class ListLM(sol.LanguageModel):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len):
        nn.Module.__init__(self)
        self.tok, self.pos = nn.Embedding(vocab_size, d_model), nn.Embedding(max_len, d_model)
        self.blocks = [sol.Block(d_model, n_heads, d_ff) for _ in range(n_layers)]  # a Python list
        self.norm, self.bias = nn.LayerNorm(d_model), nn.Parameter(torch.zeros(vocab_size))
        nn.init.normal_(self.tok.weight, std=0.02)


class LoudInitLM(sol.LanguageModel):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len):
        super().__init__(vocab_size, d_model, n_heads, d_ff, n_layers, max_len)
        nn.init.normal_(self.tok.weight)  # nn.Embedding's default: N(0, 1)


class PositionsByIdLM(sol.LanguageModel):
    def forward(self, ids):
        x = self.tok(ids) + self.pos(ids)
        for block in self.blocks:
            x = block(x, sol.my_causal_mask(ids.shape[1]))
        return self.norm(x) @ self.tok.weight.T + self.bias


class Hidden(sol.LanguageModel):
    def forward(self, ids):
        return super().forward(ids) @ self.tok.weight  # (B, T, d): not logits


WRONG = {
    "an attention that keeps no weights": (mha_ex, NoWeightsMHA, "self.weights"),
    "other parameter names": (block_ex, RenamedBlock, ("`ff1.weight`", "`ffn.0.weight`")),
    "no causal mask": (lm_ex, _lm_with_mask(lambda T: None), "sees the future. Does the causal mask reach"),
    "a transposed mask": (lm_ex, _lm_with_mask(lambda T: torch.ones(T, T).bool().triu()), "transposed or inverted"),
    "a diagonal off by one": (lm_ex, _lm_with_mask(lambda T: torch.ones(T, T).bool().tril(1)), "off by one"),
    "an untied output layer": (lm_ex, UntiedLM, "Tie it"),
    "blocks in a list": (lm_ex, ListLM, "nn.ModuleList"),
    "N(0, 1) embeddings": (lm_ex, LoudInitLM, "Start the weights smaller"),
    "positions indexed by the ids": (lm_ex, PositionsByIdLM, "indexed by the positions"),
    "hidden states for logits": (lm_ex, Hidden, "(B, T, vocab_size)"),
}


@pytest.mark.parametrize("case", WRONG)
def test_mistakes_beyond_the_list_get_their_hint(case):
    ex, cls, words = WRONG[case]
    result = ex.check(cls, quiet=True)
    assert not result.passed and all(w in result.message for w in ([words] if isinstance(words, str) else words)), (
        result.message
    )


def test_the_checkers_leave_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for ex in EXERCISES.values():
        ex.check(ex.reference, quiet=True)
    assert torch.equal(torch.rand(3), expected)


# --------------------------------------------------------------------------- the references themselves


@pytest.mark.parametrize("cfg", [(33278, 128, 4, 512, 4, 256), (50, 12, 3, 24, 3, 4), (7, 8, 1, 24, 0, 5)])
def test_the_count_is_numel_of_both_models(cfg):
    expected = sol.count_parameters(*cfg)
    with torch.device("meta"):
        assert sum(p.numel() for p in sol.LanguageModel(*cfg).parameters()) == expected
    if cfg[4]:  # the package's Transformer has at least one block
        assert sum(p.numel() for p in package_lm(*cfg, device="meta").parameters()) == expected


def test_a_model_that_changes_its_ids_in_place_after_using_them_passes():
    class InPlace(sol.LanguageModel):
        def forward(self, ids):
            logits = super().forward(ids)
            ids.zero_()  # done with them
            return logits

    r = lm_ex.check(InPlace, quiet=True)
    assert r.passed, r.message
