"""Notebook 10: Exercise 8.9 (evaluation, a training step, greedy generation, the verdict), sampling, KV cache."""

import math

import torch
import torch.nn.functional as F


def evaluate_perplexity(model, batches):
    model.eval()  # no dropout while measuring
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in batches:
            logits, _ = model(x)  # (B, T, V) scores; no loss without targets
            total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
            count += y.numel()
    return math.exp(total / count)  # exp of the mean loss per target, over all batches together


def train_step(model, optimizer, x, y):
    model.train()
    optimizer.zero_grad()  # gradients add up otherwise
    logits, _ = model(x)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())  # x and y are already shifted by one
    loss.backward()
    optimizer.step()
    return loss.item()


def greedy_continue(model, ids, n_new):
    model.eval()
    with torch.no_grad():
        for _ in range(n_new):
            logits, _ = model(ids)  # (B, T, V)
            next_id = logits[:, -1].argmax(dim=-1)  # the last position predicts the next token
            ids = torch.cat([ids, next_id[:, None]], dim=1)
    return ids


def verdict(results):
    tf, lstm = results["Transformer"], results["LSTM"]
    return {
        "lower_perplexity": "Transformer" if tf["perplexity"] < lstm["perplexity"] else "LSTM",
        "faster_per_epoch": "Transformer" if tf["seconds_per_epoch"] < lstm["seconds_per_epoch"] else "LSTM",
        "comparable_size": 0.8 < tf["parameters"] / lstm["parameters"] < 1.25,
    }


def top_k_distribution(logits, k, temperature):
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # the k-th largest logit of each row
    scaled = (logits / temperature).masked_fill(logits < kth, float("-inf"))  # outside the top k: probability 0
    return torch.softmax(scaled, dim=-1)


def kv_cache_step(q, k_new, v_new, k_cache, v_cache):
    k_all = torch.cat([k_cache, k_new], dim=2)  # the new token's key goes last
    v_all = torch.cat([v_cache, v_new], dim=2)
    scores = q @ k_all.transpose(-2, -1) / math.sqrt(q.shape[-1])  # no mask: the newest token sees everything
    return torch.softmax(scores, dim=-1) @ v_all, k_all, v_all
