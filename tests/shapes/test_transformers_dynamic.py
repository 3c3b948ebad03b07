"""The issue's user-visible targets on a tiny random-weight Llama (nothing downloaded): greedy generate()
with a KV cache, and a training loop over batches of varying sequence length."""
import copy
import warnings

import pytest
import torch

import framejit
from framejit.runtime import cache

transformers = pytest.importorskip("transformers")


def tiny_llama(seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                   attn_implementation="eager")
    return transformers.LlamaForCausalLM(cfg)


def live_states():
    return [s for s in list(cache._STATES.values()) if s.conversions]


def test_generate_matches_eager_in_at_most_3_conversions():
    model = tiny_llama().eval()
    ids = torch.randint(0, 96, (1, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model.generate(ids, max_new_tokens=20, do_sample=False, pad_token_id=0)
    counter = framejit.CompileCounter()
    compiled = framejit.compile(model, backend=counter)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)     # a recompile-limit fallback would warn
        got = compiled.generate(ids, max_new_tokens=20, do_sample=False, pad_token_id=0)
        again = compiled.generate(ids, max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert torch.equal(got, expected) and torch.equal(again, expected)
    assert counter.frame_count <= 3
    assert all(s.eager_reason is None for s in live_states())


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_training_loop_over_varying_lengths(backend):
    model = tiny_llama()
    reference = copy.deepcopy(model)
    counter = framejit.CompileCounter(backend)
    compiled = framejit.compile(model, backend=counter)
    gen = torch.Generator().manual_seed(2)
    for n in (5, 9, 12, 17, 6, 23):
        ids = torch.randint(0, 96, (2, n), generator=gen)
        losses = []
        for m in (reference, compiled):
            out = m(input_ids=ids, labels=ids)
            out.loss.backward()
            losses.append(out.loss.detach())
        torch.testing.assert_close(losses[0], losses[1], atol=1e-5, rtol=1e-5)
        for (name, p), q in zip(reference.named_parameters(), model.parameters()):
            torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-5, msg=name)
        reference.zero_grad()
        model.zero_grad()
    assert counter.frame_count <= 2
