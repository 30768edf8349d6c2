"""``python -m transformer_nb.bench kvcache``: greedy generation of 256 new tokens with and without a KV cache.

The model is the notebook's full-data recipe (``lm_recipe.RECIPE_MODEL``). If notebook 10 has
trained and cached it (``TNB_CACHE_DIR``), those weights are used; otherwise a freshly
initialised model is timed (the cost of a forward pass does not depend on the weights) and
the JSON says ``"weights": "random-init"``.

Without the cache every new token re-runs the model on the whole sequence so far; with it the
prompt is processed once and each step feeds one token, attending over the stored keys and
values. Both run the same modules (``generation.generate``, what notebook 10 teaches); the tied
embedding table is built once for all runs (``OutputHead.lookup_table``). Each
variant runs ``--repeats`` times; the best time counts. ``speedup`` is for the notebook's 5-token
prompt; ``speedup_prompt_256`` repeats the measurement after a 256-token prompt (the longer the
context, the more recomputation the cache saves).

Each step runs the package's modules, so their per-call costs are part of what is timed: on a
CPU a one-token step does so little arithmetic that checking inputs, making copies and calling
modules can cost as much as computing. ``generate`` checks its arguments once and no step checks
them again, the cache is written in place, and RoPE turns the new keys and queries in place.
On a GPU (``--device cuda``) the JSON also gives tokens/s of each way.
The last line is one JSON object; ``identical`` says whether every pair produced the same tokens.

``time_generation`` is the same comparison for a model in a notebook (notebook 10).
"""

import torch

from transformer_nb import cache, lm_recipe
from transformer_nb.bench._common import at_least, best_time, finish, parser, start
from transformer_nb.core.checks import as_int, check_language_model
from transformer_nb.core.generation import generate
from transformer_nb.core.transformer import LanguageModel
from transformer_nb.params import numel
from transformer_nb.wikitext import load_wikitext2


def time_generation(model: LanguageModel, prompt: torch.Tensor, lengths, repeats: int = 1) -> dict:
    """Seconds to generate ``n`` greedy tokens for each ``n`` in ``lengths``, with and without the
    KV cache (best of ``repeats``). Returns ``{"lengths", "cache", "no_cache", "identical"}``."""
    check_language_model(model)
    repeats = as_int("repeats", repeats, 1)
    out = {"lengths": list(lengths), "cache": [], "no_cache": [], "identical": True}
    with model.head.lookup_table():  # one embedding table for all the runs (the weights stay fixed)
        for n in out["lengths"]:
            seqs = {}
            for use_cache in (True, False):
                fn = lambda: generate(model, prompt, n, use_cache=use_cache)  # noqa: B023 (called at once)
                seconds, seqs[use_cache] = best_time(fn, repeats, prompt.device)
                out["cache" if use_cache else "no_cache"].append(seconds)
            out["identical"] &= bool(torch.equal(seqs[True], seqs[False]))
    return out


def main(argv=None) -> int:
    p = parser("kvcache", __doc__)
    p.add_argument("--new-tokens", type=at_least(1), default=256, help="tokens to generate (>= 1; default 256)")
    p.add_argument("--repeats", type=at_least(1), default=5, help="runs per variant, the best counts (default 5)")
    p.add_argument("--data", default=None, help="WikiText-2 folder (default: TNB_DATA_DIR, then the user cache)")
    p.add_argument("--random-init", action="store_true", help="do not look for the notebook's trained weights")
    p.add_argument("--long-prompt", type=at_least(0), default=256, help="also time this many validation tokens")
    args = p.parse_args(argv)

    device, load = start(args)
    data = load_wikitext2(args.data, progress=False)
    name, model, config, _ = lm_recipe.run("transformer", data, lm_recipe.FULL_STEPS, device="cpu")  # notebook 10's
    weights = "random-init"
    if not args.random_init:
        ok, msg, _ = cache.load(name, model, config)
        print(msg, flush=True)
        weights = "trained" if ok else weights
    model.to(device).eval()
    prompt = data.vocab.encode("The history of machine learning").to(device)
    n = args.new_tokens
    print(
        f"kvcache benchmark | torch {torch.__version__} | {device.type} | threads {torch.get_num_threads()} | "
        f"load average {load:.2f} | {numel(model):,} parameters ({weights}) | prompt {prompt.numel()} tokens + {n} new",
        flush=True,
    )
    text = data.vocab.decode(generate(model, prompt, 30)[prompt.numel() :].cpu())
    print(f"  first 30 generated tokens: {text}", flush=True)
    result = {"bench": "kvcache", "device": device.type, "new_tokens": n, "prompt_tokens": int(prompt.numel())}
    prompts = {"": prompt}
    if args.long_prompt:
        prompts[f"_prompt_{args.long_prompt}"] = data.valid[: args.long_prompt].to(device)
    for suffix, pr in prompts.items():
        t = time_generation(model, pr, [n], args.repeats)
        for way in ("cache", "no_cache"):
            print(f"  {pr.numel()}-token prompt, {way:9s} {t[way][0]:.3f} s ({n / t[way][0]:.1f} tokens/s)", flush=True)
            result[f"seconds_{way}{suffix}"] = round(t[way][0], 3)
            result[f"tokens_per_s_{way}{suffix}"] = round(n / t[way][0], 1)
        result[f"speedup{suffix}"] = round(t["no_cache"][0] / t["cache"][0], 2)
        result[f"identical{suffix}"] = t["identical"]
    result["weights"] = weights
    result["identical"] = identical = all(v for k, v in result.items() if k.startswith("identical"))
    finish(result, load)
    return 0 if identical else 1
