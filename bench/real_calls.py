"""How users call a bench/zoo_real.py model, as functions of (the model as called, entry, seed).

Why this exists: the same four calls must run on the eager model, on framejit's compiled model and on
torch.compile's, and be compared tensor by tensor; writing them once keeps the three runs identical.

  eval      model(**inputs) in eval mode under no_grad, use_cache at its default (decoders return a
            DynamicCache, encoder-decoders an EncoderDecoderCache)
  train     model(**train_inputs) in train mode (labels given: the model computes the loss), then
            loss.backward(); the result carries every parameter's gradient
  decode    one decode step on a prefilled cache: prefill with the eval inputs, then the greedy next
            token with the attention mask grown by one (encoder-decoders pass the prefill's encoder
            output, as generate() does); the step's output includes the cache it grew
  generate  model.generate(...) greedy for NEW_TOKENS tokens

`flatten(value)` lists every tensor in an output, recursively (ModelOutputs, tuples, caches), with a
path naming it, so that two outputs compare item by item.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import transformers

NEW_TOKENS = 3
SCENARIOS = ("eval", "train", "decode", "generate")


def scenarios_of(entry) -> list[str]:
    """The calls that apply to an entry: decode and generate for models that generate with a cache."""
    out = ["eval", "train"]
    if entry.generate:
        out += ["decode", "generate"]
    return out


def eval_call(model: Callable, entry, seed: int) -> Any:
    with torch.no_grad():
        return model(**entry.inputs(seed))


def train_call(model: Callable, entry, seed: int, params: list[tuple[str, torch.nn.Parameter]]) -> Any:
    """Forward with labels and backward of the model's own loss; `params` are the module's named
    parameters (their grads are zeroed first and returned)."""
    for _, p in params:
        p.grad = None
    output = model(**entry.train_inputs(seed))
    output.loss.backward()
    return {"output": output, "grads": {name: p.grad for name, p in params}}


def decode_call(model: Callable, entry, seed: int) -> Any:
    """Prefill, then one step on the prefilled cache; returns the step's output (cache included)."""
    inputs = entry.inputs(seed)
    with torch.no_grad():
        prefill = model(**inputs)
        next_token = prefill.logits[:, -1:].argmax(-1)
        mask = inputs["attention_mask"] if "attention_mask" in inputs else None
        if entry.kind == "encoder-decoder":
            encoder_outputs = transformers.modeling_outputs.BaseModelOutput(
                last_hidden_state=prefill.encoder_last_hidden_state)
            step = {"encoder_outputs": encoder_outputs, "decoder_input_ids": next_token,
                    "past_key_values": prefill.past_key_values}
            if mask is not None:
                step["attention_mask"] = mask
        else:
            step = {"input_ids": next_token, "past_key_values": prefill.past_key_values,
                    "attention_mask": torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)}
        return model(**step)


def generate_inputs(entry, seed: int) -> dict[str, Any]:
    inputs = entry.inputs(seed)
    inputs.pop("decoder_input_ids", None)
    return inputs


def generate_call(model, entry, seed: int) -> torch.Tensor:
    with torch.no_grad():
        return model.generate(**generate_inputs(entry, seed), max_new_tokens=NEW_TOKENS, do_sample=False,
                              pad_token_id=entry.pad_token_id)


def flatten(value: Any, path: str = "out") -> list[tuple[str, Any]]:
    """(path, leaf) for every tensor, and every non-tensor scalar leaf, of an output, in order."""
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if isinstance(value, transformers.EncoderDecoderCache):
        return (flatten(value.self_attention_cache, f"{path}.self_attention_cache")
                + flatten(value.cross_attention_cache, f"{path}.cross_attention_cache"))
    if isinstance(value, transformers.Cache):
        out = []
        for i, layer in enumerate(value.layers):
            for attr in ("keys", "values"):
                out += flatten(getattr(layer, attr, None), f"{path}.layers[{i}].{attr}")
        return out
    if isinstance(value, dict):      # ModelOutput is an OrderedDict of its non-None fields
        out = [(f"{path}.keys()", tuple(value.keys()))]
        for key, item in value.items():
            out += flatten(item, f"{path}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        out = [(f"{path}.len", len(value))]
        for i, item in enumerate(value):
            out += flatten(item, f"{path}[{i}]")
        return out
    return [(path, value)]


def differences(actual: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> list[str]:
    """What differs between two outputs (empty when they match), one line per differing leaf."""
    got, want = flatten(actual), flatten(expected)
    if [p for p, _ in got] != [p for p, _ in want]:
        return [f"structure: {[p for p, _ in got]} != {[p for p, _ in want]}"]
    problems = []
    for (path, a), (_, b) in zip(got, want):
        if isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                problems.append(f"{path}: {type(a).__name__} instead of a tensor")
                continue
            try:
                torch.testing.assert_close(a, b, atol=atol, rtol=rtol, equal_nan=True)
            except AssertionError as exc:
                problems.append(f"{path}: {str(exc).splitlines()[0]}")
        elif type(a) is not type(b) or (a != b if not hasattr(b, "__dict__") else False):
            problems.append(f"{path}: {a!r} != {b!r}")
    return problems
