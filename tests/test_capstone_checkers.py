"""The capstone's checkers (notebook 12, steps 3-7) recognise wrong answers beyond the typical mistakes they list
(causality, names, initialisation, stubs) with a hint aimed at the mistake; what every checker does
(reference, solution, listed mistakes, hints) is tests/test_exercise_checkers.py's."""

import pytest
import torch
import torch.nn as nn

from transformer_nb.exercises.capstone import block_ex, mha_ex, student_names
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


def test_an_attention_that_keeps_no_weights_is_told_to():
    result = mha_ex.check(NoWeightsMHA, quiet=True)
    assert not result.passed and "self.weights" in result.message


class RenamedBlock(sol.Block):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__(d_model, n_heads, d_ff)
        self.ffn = nn.Sequential(self.ff1, nn.ReLU(), self.ff2)
        del self.ff1, self.ff2

    def forward(self, x, mask=None):
        x = x + self.attn(self.norm1(x), mask)
        return x + self.ffn(self.norm2(x))


def test_other_parameter_names_are_listed():
    result = block_ex.check(RenamedBlock, quiet=True)
    assert not result.passed and "`ff1.weight`" in result.message and "`ffn.0.weight`" in result.message


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


@pytest.mark.parametrize(
    ("mask_fn", "words"),
    [
        (lambda T: None, "Does the causal mask reach"),
        (lambda T: torch.ones(T, T, dtype=torch.bool).triu(), "transposed or inverted"),
        (lambda T: torch.ones(T, T, dtype=torch.bool).tril(1), "diagonal off by one"),
    ],
    ids=["no mask", "transposed", "diagonal off by one"],
)
def test_causality_violations_are_named(mask_fn, words):
    result = lm_ex.check(_lm_with_mask(mask_fn), quiet=True)
    assert not result.passed and "the model sees the future" in result.message and words in result.message


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


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        (UntiedLM, "Tie it"),
        (ListLM, "nn.ModuleList"),
        (LoudInitLM, "Start the weights smaller"),
        (PositionsByIdLM, "indexed by the positions"),
    ],
    ids=["untied output layer", "blocks in a list", "N(0, 1) embeddings", "positions indexed by the ids"],
)
def test_language_model_mistakes_beyond_the_list(cls, words):
    result = lm_ex.check(cls, quiet=True)
    assert not result.passed and words in result.message


def test_a_model_returning_the_hidden_states_is_told_the_shape():
    class Hidden(sol.LanguageModel):
        def forward(self, ids):
            return super().forward(ids) @ self.tok.weight  # (B, T, d): not logits

    result = lm_ex.check(Hidden, quiet=True)
    assert not result.passed and "(B, T, vocab_size)" in result.message


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


def test_the_names_map_the_whole_package_model_onto_the_reference():
    pkg, ours = package_lm(40, 16, 2, 32, 2, 8), sol.LanguageModel(40, 16, 2, 32, 2, 8)
    mapped = student_names(pkg.state_dict())
    assert set(mapped) == set(ours.state_dict())
    assert all(mapped[k].shape == v.shape for k, v in ours.state_dict().items())


def test_the_reference_block_is_the_package_block_written_out():
    from transformer_nb.core.block import EncoderLayer
    from transformer_nb.core.config import TransformerConfig

    torch.manual_seed(0)
    cfg = TransformerConfig(d_model=16, n_heads=4, d_ff=32, activation="relu", norm_first=True)  # 000 §8.5.4's block
    pkg, ours = EncoderLayer(cfg), sol.Block(16, 4, 32)
    ours.load_state_dict(student_names(pkg.state_dict()))
    x = torch.randn(2, 6, 16)
    torch.testing.assert_close(ours(x, sol.my_causal_mask(6)), pkg(x, is_causal=True), atol=1e-5, rtol=1e-5)


def test_a_model_that_changes_its_ids_in_place_after_using_them_passes():
    class InPlace(sol.LanguageModel):
        def forward(self, ids):
            logits = super().forward(ids)
            ids.zero_()  # done with them
            return logits

    r = lm_ex.check(InPlace, quiet=True)
    assert r.passed, r.message
