"""Transformers models called the way users call them, beyond the zoo's plain inputs: with the KV cache
on (the default for decoder LMs: the forward builds a DynamicCache and returns it) and with labels
(classification heads build their loss module inside forward).

Why this exists: the zoo turns the cache off so that every forward argument is a tensor. A user's
`model(input_ids)` does not: it constructs a DynamicCache from the config (whose per-layer view is a
collections.abc.Sequence iterated by its own generator __iter__) and returns it for the next step; a
`BertForSequenceClassification(..., labels=...)` makes `CrossEntropyLoss()` in its forward. Each must
be one graph and match eager, and the returned cache must drive the next decoding step as eager's does.
"""
import copy

import pytest
import torch

import framejit

transformers = pytest.importorskip("transformers")


def _gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64)
    return transformers.GPT2LMHeadModel(config).eval()


def test_a_decoder_with_its_kv_cache_on_is_one_graph_and_its_cache_drives_the_next_step():
    model = _gpt2()
    ids = torch.randint(0, 100, (1, 7), generator=torch.Generator().manual_seed(1))
    explained = framejit.explain(model)(input_ids=ids)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
    compiled = framejit.compile(model)
    with torch.no_grad():
        want, got = model(input_ids=ids), compiled(input_ids=ids)
        torch.testing.assert_close(got.logits, want.logits)
        assert type(got.past_key_values) is type(want.past_key_values)
        assert got.past_key_values.get_seq_length() == 7
        for mine, theirs in zip(got.past_key_values.layers, want.past_key_values.layers):
            torch.testing.assert_close(mine.keys, theirs.keys)
            torch.testing.assert_close(mine.values, theirs.values)
        step = torch.tensor([[3]])
        torch.testing.assert_close(compiled(input_ids=step, past_key_values=got.past_key_values).logits,
                                   model(input_ids=step, past_key_values=want.past_key_values).logits)
        assert got.past_key_values.get_seq_length() == 8


def test_greedy_generate_through_the_compiled_model_gives_eager_tokens():
    model = _gpt2()
    ids = torch.randint(0, 100, (1, 5), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want = model.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=0)
        got = framejit.compile(model).generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=0)
    assert torch.equal(got, want)


def test_a_classification_head_with_labels_trains_in_one_graph_like_eager():
    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=100, max_position_embeddings=64,
                                     num_labels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.BertForSequenceClassification(config)
    ids, labels = torch.randint(0, 100, (2, 7)), torch.tensor([0, 2])
    model(input_ids=ids, labels=labels)                  # the first call sets config.problem_type
    reference = copy.deepcopy(model)
    counter = framejit.CompileCounter()
    compiled = framejit.compile(model, backend=counter)
    compiled(input_ids=ids, labels=labels)
    frames = counter.frame_count
    explained = framejit.explain(model)(input_ids=ids, labels=labels)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(3):
        loss, ref_loss = compiled(input_ids=ids, labels=labels).loss, reference(input_ids=ids, labels=labels).loss
        torch.testing.assert_close(loss, ref_loss)
        loss.backward()
        ref_loss.backward()
        opt.step()
        ref_opt.step()
        opt.zero_grad()
        ref_opt.zero_grad()
    assert counter.frame_count == frames                 # no recompiles after the first call
