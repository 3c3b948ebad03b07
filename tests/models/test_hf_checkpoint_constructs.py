"""Tiny random-weight transformers models whose real checkpoints brought the constructs of issue 13, called
as users call them (the cache left at its default): each is one graph with no break, matches eager, and
does not convert again on a second call with new inputs of the same shapes.

  Llama-3-style GQA on sdpa   os.environ.get in use_gqa_in_sdpa (lookasides/process_state.py)
  T5 with the cache on        copy.deepcopy of the config, len()/truth of DynamicCache, ModelOutput.keys
                              bound fresh on each access
  DeBERTa-v2 classification   ACT2FN["gelu"] builds a GELUActivation in forward
  Mixtral (MoE)               torch.ops.transformers.grouped_mm_fallback
  wav2vec2 CTC                is_torch_distributed_available()
"""
import pytest
import torch

import framejit

transformers = pytest.importorskip("transformers")
T = transformers


def _llama():
    return T.LlamaForCausalLM(T.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
                                            max_position_embeddings=64, attn_implementation="sdpa")), \
        lambda g: dict(input_ids=torch.randint(0, 100, (2, 7), generator=g))


def _t5():
    return T.T5ForConditionalGeneration(T.T5Config(d_model=32, d_ff=64, num_layers=2, num_heads=4, d_kv=8,
                                                   vocab_size=100)), \
        lambda g: dict(input_ids=torch.randint(0, 100, (2, 7), generator=g),
                       decoder_input_ids=torch.randint(0, 100, (2, 5), generator=g))


def _deberta():
    return T.DebertaV2ForSequenceClassification(T.DebertaV2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=100,
        max_position_embeddings=64, relative_attention=True, position_buckets=16, pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm", share_att_key=True, position_biased_input=False)), \
        lambda g: dict(input_ids=torch.randint(0, 100, (2, 7), generator=g))


def _mixtral():
    return T.MixtralForCausalLM(T.MixtralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                                num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
                                                max_position_embeddings=64, num_local_experts=4,
                                                num_experts_per_tok=2)), \
        lambda g: dict(input_ids=torch.randint(0, 100, (2, 7), generator=g))


def _wav2vec2():
    return T.Wav2Vec2ForCTC(T.Wav2Vec2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, conv_dim=(16, 16), conv_stride=(5, 2),
                                             conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                             num_conv_pos_embedding_groups=2, vocab_size=32)), \
        lambda g: dict(input_values=torch.randn(2, 400, generator=g))


def _tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in _tensors(item)]
    if hasattr(out, "self_attention_cache"):
        return _tensors(out.self_attention_cache) + _tensors(out.cross_attention_cache)
    if hasattr(out, "layers"):
        return [t for layer in out.layers for t in (layer.keys, layer.values)]
    return []


@pytest.mark.parametrize("make", [_llama, _t5, _deberta, _mixtral, _wav2vec2],
                         ids=["llama3_gqa_sdpa", "t5_cache", "deberta_v2", "mixtral", "wav2vec2"])
def test_one_graph_no_break_no_recompile(make):
    torch.manual_seed(0)
    model, inputs = make()
    model.eval()
    g = torch.Generator().manual_seed(1)
    first, second = inputs(g), inputs(g)
    with torch.no_grad():
        explained = framejit.explain(model)(**first)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
        framejit.reset()
        compiled = framejit.compile(model)
        for call in (first, second):
            want, got = model(**call), compiled(**call)
            for a, b in zip(_tensors(want), _tensors(got), strict=True):
                torch.testing.assert_close(b, a)
            if call is first:
                conversions = len(framejit.metrics())
        assert len(framejit.metrics()) == conversions         # no conversion on the second call
