"""Real published checkpoints' structure at toy size: the zoo users would actually bring to framejit.

Why this exists: bench/zoo.py's configurations are hand-picked toys; the models people download make
other structural choices (grouped- and multi-query attention ratios, llama3 / longrope / yarn / linear
rope scaling, sliding windows, tied embeddings, logit soft-capping, alternating attention types,
QK-norm, clip_qkv, mixture of experts with shared experts, multi-head latent attention, padded
encoders with token types, encoder-decoders with and without a cache, vision and audio backbones,
CLIP), and those choices are what select the code paths a frontend must follow.

Each entry names a real checkpoint and writes the structural values of its published config.json
(`real`, public facts, written from the published files; nothing is downloaded), then overrides only
width, depth and vocabulary (`scaled`): hidden sizes, head counts at the same query/key-value ratio,
head dims, expert counts, layer counts (keeping the layer pattern, e.g. Gemma-3's 5 sliding : 1 full),
vocabulary and label counts, and the special token ids the smaller vocabulary forces. Lengths that are
structure (sliding windows, rope bases and scaling, position tables, image and audio sizes) keep their
published values. Two things differ from the checkpoints on purpose, so that eager and compiled runs
can be compared exactly in train mode: every dropout / drop-path / layerdrop probability is 0 and
wav2vec2's SpecAugment masking probabilities are 0. Attention uses each model's default
implementation (sdpa), as a user gets it. Weights are random with a fixed seed.

Inputs are what users pass: padded `attention_mask` (left padding for decoder-only models, right
padding for encoders and encoder-decoders), `token_type_ids` where the checkpoint has two segment
types, `labels` for the train-mode call, `use_cache` at its default. `inputs(seed)` with another seed
gives new values of the same shapes (and another padding length), for the no-recompile check.
bench/zoo_real_check.py runs every entry the ways users do; bench/models.py --zoo real times it.
"""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import transformers

BATCH = 2
SEQ = 8                  # tokens per row (decoder rows are left-padded, encoder rows right-padded)
DECODER_SEQ = 6          # decoder_input_ids of encoder-decoders
VOCAB = 256
NUM_LABELS = 4           # classification heads (ImageNet's 1000 classes count as vocabulary)
IMAGE = 224              # published image sizes are kept
AUDIO_SAMPLES = 16000    # one second of 16 kHz audio for wav2vec2
WHISPER_FRAMES = 3000    # Whisper's encoder takes exactly 30 s of mel frames (2 * max_source_positions)
WEIGHT_SEED = 0
PAD, BOS, EOS = 0, 1, 2  # special ids in the scaled vocabulary


@dataclass
class RealModel:
    name: str
    checkpoint: str                       # the published checkpoint whose config.json `real` follows
    kind: str                             # decoder | encoder-decoder | encoder | vision | audio | multimodal
    config_cls: type
    model_cls: type
    real: dict[str, Any]                  # structural values of the published config.json
    scaled: dict[str, Any]                # the width / depth / vocabulary overrides
    make_inputs: Callable[["RealModel", int, bool], dict[str, Any]]
    call_kwargs: dict[str, Any] = field(default_factory=dict)   # e.g. use_cache=False for the no-cache runs
    generate: bool = False                # greedy generate() is part of how users call it
    pad_token_id: int = PAD               # the id padding positions hold

    @property
    def architecture(self) -> str:
        return self.model_cls.__name__

    def config(self) -> transformers.PretrainedConfig:
        config = self.config_cls(**{**self.real, **self.scaled})
        _zero_noise(config)
        return config

    def build(self) -> torch.nn.Module:
        """A fresh eval-mode model with seeded random weights (the caller's RNG is left alone)."""
        config = self.config()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(WEIGHT_SEED)
            model = self.model_cls(config)
        return model.eval()

    def inputs(self, seed: int = 1) -> dict[str, Any]:
        """Forward kwargs for inference: padded masks, token types, use_cache at its default."""
        return {**self.make_inputs(self, seed, False), **self.call_kwargs}

    def train_inputs(self, seed: int = 1) -> dict[str, Any]:
        """Forward kwargs for a train-mode call: the same inputs plus `labels` (or return_loss)."""
        return {**self.make_inputs(self, seed, True), **self.call_kwargs}


_NOISE_WORDS = ("dropout", "pdrop", "drop_path", "layerdrop", "mask_time_prob", "mask_feature_prob")


def _zero_noise(config: Any) -> None:
    """Dropout-like probabilities to 0, in the config and its sub-configs, so train mode is exact."""
    for key, value in list(vars(config).items()):
        if isinstance(value, float) and any(word in key for word in _NOISE_WORDS):
            setattr(config, key, 0.0)
        elif isinstance(value, transformers.PretrainedConfig):
            _zero_noise(value)
    for sub in ("attn_config", "ffn_config"):       # DBRX keeps its router jitter in ffn_config
        if hasattr(getattr(config, sub, None), "moe_jitter_eps"):
            getattr(config, sub).moe_jitter_eps = None


# ---------------------------------------------------------------- inputs


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _pad_count(seed: int) -> int:
    return 2 + seed % 2   # 3 for seed 1, 2 for seed 2: same shapes, other values


def _ids(gen: torch.Generator, rows: int, length: int, vocab: int = VOCAB) -> torch.Tensor:
    return torch.randint(3, vocab, (rows, length), generator=gen)


def _decoder_inputs(entry: RealModel, seed: int, train: bool) -> dict[str, Any]:
    """Left padding, as a tokenizer pads for generation."""
    gen = _gen(seed)
    ids = _ids(gen, BATCH, SEQ)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, :_pad_count(seed)] = 0
    ids = ids.masked_fill(mask == 0, entry.pad_token_id)
    out = {"input_ids": ids, "attention_mask": mask}
    if train:
        out["labels"] = ids.masked_fill(mask == 0, -100)
    return out


def _right_padded(entry: RealModel, gen: torch.Generator, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = _ids(gen, BATCH, SEQ)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, SEQ - _pad_count(seed):] = 0
    return ids.masked_fill(mask == 0, entry.pad_token_id), mask


def _encoder_decoder_inputs(entry: RealModel, seed: int, train: bool) -> dict[str, Any]:
    gen = _gen(seed)
    ids, mask = _right_padded(entry, gen, seed)
    target = _ids(gen, BATCH, DECODER_SEQ)
    if train:   # the model shifts labels right into decoder_input_ids itself
        return {"input_ids": ids, "attention_mask": mask, "labels": target}
    return {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": target}


def _whisper_inputs(entry: RealModel, seed: int, train: bool) -> dict[str, Any]:
    gen = _gen(seed)
    mels = entry.scaled.get("num_mel_bins", entry.real.get("num_mel_bins"))
    features = torch.randn(BATCH, mels, WHISPER_FRAMES, generator=gen)
    target = _ids(gen, BATCH, DECODER_SEQ)
    if train:
        return {"input_features": features, "labels": target}
    return {"input_features": features, "decoder_input_ids": target}


def _whisper_encoder_inputs(entry: RealModel, seed: int, train: bool) -> dict[str, Any]:
    gen = _gen(seed)
    mels = entry.scaled.get("num_mel_bins", entry.real.get("num_mel_bins"))
    out = {"input_features": torch.randn(BATCH, mels, WHISPER_FRAMES, generator=gen)}
    if train:
        out["labels"] = torch.randint(0, NUM_LABELS, (BATCH,), generator=gen)
    return out


def _encoder_inputs(label: str, token_types: bool) -> Callable[[RealModel, int, bool], dict[str, Any]]:
    """Right-padded text; `label` is "sequence" (one class per row), "token" (a class per token: the
    masked-LM ids or ELECTRA's replaced-token bits) or "mlm"."""

    def make(entry: RealModel, seed: int, train: bool) -> dict[str, Any]:
        gen = _gen(seed)
        ids, mask = _right_padded(entry, gen, seed)
        out = {"input_ids": ids, "attention_mask": mask}
        if token_types:   # a sentence pair: the second half is segment 1
            types = torch.zeros(BATCH, SEQ, dtype=torch.long)
            types[:, SEQ // 2:] = 1
            out["token_type_ids"] = types * mask
        if train:
            if label == "sequence":
                out["labels"] = torch.randint(0, NUM_LABELS, (BATCH,), generator=gen)
            elif label == "binary-token":
                out["labels"] = torch.randint(0, 2, (BATCH, SEQ), generator=gen)
            else:
                out["labels"] = ids.masked_fill(mask == 0, -100)
        return out

    return make


def _image_inputs(entry: RealModel, seed: int, train: bool) -> dict[str, Any]:
    gen = _gen(seed)
    size = entry.real.get("image_size", IMAGE)
    out = {"pixel_values": torch.randn(BATCH, 3, size, size, generator=gen)}
    if train:
        out["labels"] = torch.randint(0, NUM_LABELS, (BATCH,), generator=gen)
    return out


def _wav2vec2_inputs(with_mask: bool) -> Callable[[RealModel, int, bool], dict[str, Any]]:
    """Raw audio; checkpoints whose feature extractor returns an attention mask (layer-norm feature
    extractors) get the second row padded with zeros at the end."""

    def make(entry: RealModel, seed: int, train: bool) -> dict[str, Any]:
        gen = _gen(seed)
        audio = torch.randn(BATCH, AUDIO_SAMPLES, generator=gen)
        out = {"input_values": audio}
        if with_mask:
            mask = torch.ones(BATCH, AUDIO_SAMPLES, dtype=torch.long)
            mask[1, AUDIO_SAMPLES - 1600 * _pad_count(seed):] = 0
            out["input_values"] = audio * mask
            out["attention_mask"] = mask
        if train:   # CTC targets: a few characters per row, padded with -100
            labels = torch.randint(1, entry.scaled["vocab_size"], (BATCH, 5), generator=gen)
            labels[1, 3:] = -100
            out["labels"] = labels
        return out

    return make


def _clip_inputs(entry: RealModel, seed: int, train: bool) -> dict[str, Any]:
    """Two captions padded to the longer one (CLIP's tokenizer ends each with the end-of-text id,
    which the legacy eos_token_id == 2 config pools by argmax), and two images."""
    gen = _gen(seed)
    ids, mask = _right_padded(entry, gen, seed)
    out = {"input_ids": ids, "attention_mask": mask,
           "pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE, generator=gen)}
    if train:
        out["return_loss"] = True
    return out


# ---------------------------------------------------------------- the checkpoints

T = transformers
_DECODER_IDS = dict(pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, vocab_size=VOCAB)


def _decoder(name, checkpoint, config_cls, model_cls, real, scaled):
    return RealModel(name, checkpoint, "decoder", config_cls, model_cls, real, {**_DECODER_IDS, **scaled},
                     _decoder_inputs, generate=True)


def _seq2seq(name, checkpoint, config_cls, model_cls, real, scaled, use_cache=None, **kw):
    call = {} if use_cache is None else {"use_cache": use_cache}
    return RealModel(name, checkpoint, "encoder-decoder", config_cls, model_cls, real, scaled,
                     kw.pop("make_inputs", _encoder_decoder_inputs), call_kwargs=call, generate=use_cache is None,
                     **kw)


_LLAMA31_ROPE = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                 "original_max_position_embeddings": 8192, "rope_type": "llama3"}
_LLAMA32_ROPE = {**_LLAMA31_ROPE, "factor": 32.0}

# Phi-3-mini-128k's longrope factors are 48 per list (head_dim 96 / 2); head_dim 16 keeps 8 of them,
# taken evenly from the published lists (short: ~1.0 -> ~2.2, long: ~1.1 -> ~64.8 rising steeply).
_PHI3_SHORT = [1.05, 1.05, 1.1, 1.15, 1.3, 1.6, 1.9, 2.2]
_PHI3_LONG = [1.08, 1.22, 1.7, 3.3, 7.9, 19.3, 39.5, 64.8]

_T5_SMALL = dict(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6, num_heads=8,
                 relative_attention_num_buckets=32, relative_attention_max_distance=128,
                 feed_forward_proj="relu", tie_word_embeddings=True, layer_norm_epsilon=1e-6,
                 vocab_size=32128, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
_T5_SMALL_SCALED = dict(d_model=64, d_kv=8, d_ff=256, num_layers=2, num_decoder_layers=2, vocab_size=VOCAB,
                        pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD)

_BART_BASE = dict(d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
                  decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072,
                  max_position_embeddings=1024, activation_function="gelu", scale_embedding=False,
                  vocab_size=50265, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                  forced_eos_token_id=2, tie_word_embeddings=True)
_BART_BASE_SCALED = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                         decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=VOCAB,
                         pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, decoder_start_token_id=EOS,
                         forced_eos_token_id=EOS)

_WHISPER_TINY = dict(d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                     decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80,
                     max_source_positions=1500, max_target_positions=448, vocab_size=51865,
                     activation_function="gelu", scale_embedding=False, pad_token_id=50257, bos_token_id=50257,
                     eos_token_id=50257, decoder_start_token_id=50258, tie_word_embeddings=True)
_WHISPER_TINY_SCALED = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                            decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256,
                            vocab_size=VOCAB, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS,
                            decoder_start_token_id=BOS, begin_suppress_tokens=None, suppress_tokens=None)

_BERT_BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                  max_position_embeddings=512, type_vocab_size=2, vocab_size=30522, hidden_act="gelu",
                  layer_norm_eps=1e-12, pad_token_id=0)
_BERT_SCALED = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                    vocab_size=VOCAB, pad_token_id=PAD)

_VIT_BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                 image_size=224, patch_size=16, qkv_bias=True, hidden_act="gelu", layer_norm_eps=1e-12)

REAL_ZOO: list[RealModel] = [
    # ------------------------------------------------------------ decoder-only LMs
    _decoder("llama3_1_8b", "meta-llama/Llama-3.1-8B", T.LlamaConfig, T.LlamaForCausalLM,
             dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=8, hidden_act="silu", max_position_embeddings=131072, rms_norm_eps=1e-5,
                  rope_theta=500000.0, rope_scaling=_LLAMA31_ROPE, tie_word_embeddings=False,
                  attention_bias=False, mlp_bias=False),
             dict(hidden_size=64, intermediate_size=224, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=2)),
    _decoder("llama3_2_1b", "meta-llama/Llama-3.2-1B", T.LlamaConfig, T.LlamaForCausalLM,
             dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                  num_key_value_heads=8, head_dim=64, hidden_act="silu", max_position_embeddings=131072,
                  rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=_LLAMA32_ROPE, tie_word_embeddings=True),
             dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=2, head_dim=8)),
    _decoder("tinyllama_1_1b", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", T.LlamaConfig, T.LlamaForCausalLM,
             dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
                  num_key_value_heads=4, max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
                  tie_word_embeddings=False),
             dict(hidden_size=128, intermediate_size=352, num_hidden_layers=2, num_attention_heads=16,
                  num_key_value_heads=2)),
    _decoder("smollm2_135m", "HuggingFaceTB/SmolLM2-135M", T.LlamaConfig, T.LlamaForCausalLM,
             dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                  num_key_value_heads=3, max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=100000.0,
                  tie_word_embeddings=True),
             dict(hidden_size=72, intermediate_size=192, num_hidden_layers=2)),
    _decoder("deepseek_coder_6_7b", "deepseek-ai/deepseek-coder-6.7b-base", T.LlamaConfig, T.LlamaForCausalLM,
             dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=32, max_position_embeddings=16384, rms_norm_eps=1e-6, rope_theta=100000.0,
                  rope_scaling={"type": "linear", "factor": 4.0}, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4)),
    _decoder("mistral_7b_v0_1", "mistralai/Mistral-7B-v0.1", T.MistralConfig, T.MistralForCausalLM,
             dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=8, max_position_embeddings=32768, rms_norm_eps=1e-5, rope_theta=10000.0,
                  sliding_window=4096, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=224, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=2)),
    _decoder("qwen2_5_0_5b", "Qwen/Qwen2.5-0.5B", T.Qwen2Config, T.Qwen2ForCausalLM,
             dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                  num_key_value_heads=2, max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0,
                  use_sliding_window=False, sliding_window=32768, max_window_layers=24, tie_word_embeddings=True),
             dict(hidden_size=112, intermediate_size=608, num_hidden_layers=2, max_window_layers=2)),
    _decoder("qwen2_5_7b_yarn", "Qwen/Qwen2.5-7B-Instruct (with the YaRN rope_scaling its model card gives)",
             T.Qwen2Config, T.Qwen2ForCausalLM,
             dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                  num_key_value_heads=4, max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0,
                  rope_scaling={"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
                  use_sliding_window=False, sliding_window=131072, max_window_layers=28, tie_word_embeddings=False),
             dict(hidden_size=56, intermediate_size=296, num_hidden_layers=2, num_attention_heads=7,
                  num_key_value_heads=1, max_window_layers=2)),
    _decoder("qwen3_0_6b", "Qwen/Qwen3-0.6B", T.Qwen3Config, T.Qwen3ForCausalLM,
             dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                  num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rms_norm_eps=1e-6,
                  rope_theta=1000000.0, attention_bias=False, use_sliding_window=False, max_window_layers=28,
                  tie_word_embeddings=True),
             dict(hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, max_window_layers=2)),
    _decoder("qwen3_30b_a3b", "Qwen/Qwen3-30B-A3B", T.Qwen3MoeConfig, T.Qwen3MoeForCausalLM,
             dict(hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768, num_hidden_layers=48,
                  num_attention_heads=32, num_key_value_heads=4, head_dim=128, num_experts=128,
                  num_experts_per_tok=8, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                  max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0,
                  router_aux_loss_coef=0.001, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=192, moe_intermediate_size=32, num_hidden_layers=2,
                  num_attention_heads=8, num_key_value_heads=1, head_dim=8, num_experts=16)),
    _decoder("qwen1_5_moe_a2_7b", "Qwen/Qwen1.5-MoE-A2.7B", T.Qwen2MoeConfig, T.Qwen2MoeForCausalLM,
             dict(hidden_size=2048, intermediate_size=5632, moe_intermediate_size=1408,
                  shared_expert_intermediate_size=5632, num_experts=60, num_experts_per_tok=4,
                  norm_topk_prob=False, decoder_sparse_step=1, num_hidden_layers=24, num_attention_heads=16,
                  num_key_value_heads=16, max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=1000000.0,
                  router_aux_loss_coef=0.001, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=176, moe_intermediate_size=44, shared_expert_intermediate_size=176,
                  num_experts=8, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4)),
    _decoder("gemma_2b", "google/gemma-2b", T.GemmaConfig, T.GemmaForCausalLM,
             dict(hidden_size=2048, intermediate_size=16384, num_hidden_layers=18, num_attention_heads=8,
                  num_key_value_heads=1, head_dim=256, hidden_activation="gelu_pytorch_tanh",
                  max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=True),
             dict(hidden_size=64, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4, head_dim=16)),
    _decoder("gemma2_2b", "google/gemma-2-2b", T.Gemma2Config, T.Gemma2ForCausalLM,
             dict(hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
                  num_key_value_heads=4, head_dim=256, hidden_activation="gelu_pytorch_tanh",
                  query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0,
                  final_logit_softcapping=30.0, max_position_embeddings=8192, rms_norm_eps=1e-6,
                  rope_theta=10000.0, tie_word_embeddings=True),
             # query_pre_attn_scalar is the head dim in the checkpoint, so it scales with it
             dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16)),
    _decoder("gemma3_1b", "google/gemma-3-1b-it", T.Gemma3TextConfig, T.Gemma3ForCausalLM,
             dict(hidden_size=1152, intermediate_size=6912, num_hidden_layers=26, num_attention_heads=4,
                  num_key_value_heads=1, head_dim=256, hidden_activation="gelu_pytorch_tanh",
                  query_pre_attn_scalar=256, sliding_window=512, sliding_window_pattern=6,
                  rope_theta=1000000.0, rope_local_base_freq=10000.0, final_logit_softcapping=None,
                  attn_logit_softcapping=None, max_position_embeddings=32768, rms_norm_eps=1e-6,
                  tie_word_embeddings=True),
             # six layers keep the 5 sliding : 1 full pattern
             dict(hidden_size=64, intermediate_size=384, num_hidden_layers=6, head_dim=16, query_pre_attn_scalar=16)),
    _decoder("phi3_mini_128k", "microsoft/Phi-3-mini-128k-instruct", T.Phi3Config, T.Phi3ForCausalLM,
             dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=32, max_position_embeddings=131072, original_max_position_embeddings=4096,
                  rope_theta=10000.0, rope_scaling={"type": "longrope", "short_factor": _PHI3_SHORT,
                                                    "long_factor": _PHI3_LONG},
                  rms_norm_eps=1e-5, sliding_window=262144, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=170, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4)),
    _decoder("phi_2", "microsoft/phi-2", T.PhiConfig, T.PhiForCausalLM,
             dict(hidden_size=2560, intermediate_size=10240, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=32, partial_rotary_factor=0.4, qk_layernorm=False, hidden_act="gelu_new",
                  max_position_embeddings=2048, layer_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False),
             dict(hidden_size=80, intermediate_size=320, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4)),
    _decoder("olmo_7b_0424", "allenai/OLMo-7B-0424-hf", T.OlmoConfig, T.OlmoForCausalLM,
             dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=32, clip_qkv=8.0, max_position_embeddings=4096, rope_theta=10000.0,
                  attention_bias=False, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4)),
    _decoder("olmo2_1b", "allenai/OLMo-2-0425-1B", T.Olmo2Config, T.Olmo2ForCausalLM,
             dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=16,
                  num_key_value_heads=16, max_position_embeddings=4096, rms_norm_eps=1e-6, rope_theta=500000.0,
                  attention_bias=False, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4)),
    _decoder("dbrx_base", "databricks/dbrx-base", T.DbrxConfig, T.DbrxForCausalLM,
             dict(d_model=6144, n_heads=48, n_layers=40, max_seq_len=32768,
                  attn_config=dict(clip_qkv=8, kv_n_heads=8, rope_theta=500000),
                  ffn_config=dict(ffn_hidden_size=10752, moe_num_experts=16, moe_top_k=4,
                                  moe_normalize_expert_weights=1.0, moe_loss_weight=0.05),
                  tie_word_embeddings=False),
             dict(d_model=48, n_heads=6, n_layers=2,
                  attn_config=dict(clip_qkv=8, kv_n_heads=1, rope_theta=500000),
                  ffn_config=dict(ffn_hidden_size=84, moe_num_experts=16, moe_top_k=4,
                                  moe_normalize_expert_weights=1.0, moe_loss_weight=0.05))),
    _decoder("deepseek_v2_lite", "deepseek-ai/DeepSeek-V2-Lite", T.DeepseekV2Config, T.DeepseekV2ForCausalLM,
             dict(hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408, num_hidden_layers=27,
                  num_attention_heads=16, num_key_value_heads=16, kv_lora_rank=512, q_lora_rank=None,
                  qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, n_routed_experts=64,
                  n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1, topk_method="greedy",
                  n_group=1, topk_group=1, routed_scaling_factor=1.0, norm_topk_prob=False,
                  max_position_embeddings=163840, rms_norm_eps=1e-6, rope_theta=10000.0,
                  rope_scaling={"type": "yarn", "factor": 40.0, "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
                                "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096},
                  tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=336, moe_intermediate_size=44, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=8,
                  qk_rope_head_dim=4, v_head_dim=8, n_routed_experts=8)),
    _decoder("deepseek_v3", "deepseek-ai/DeepSeek-V3", T.DeepseekV3Config, T.DeepseekV3ForCausalLM,
             dict(hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048, num_hidden_layers=61,
                  num_attention_heads=128, num_key_value_heads=128, q_lora_rank=1536, kv_lora_rank=512,
                  qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, n_routed_experts=256,
                  n_shared_experts=1, num_experts_per_tok=8, n_group=8, topk_group=4, first_k_dense_replace=3,
                  norm_topk_prob=True, routed_scaling_factor=2.5, max_position_embeddings=163840,
                  rms_norm_eps=1e-6, rope_theta=10000.0,
                  rope_scaling={"type": "yarn", "factor": 40.0, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,
                                "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096},
                  tie_word_embeddings=False),
             # 16 experts in the same 8 groups; one dense layer then one MoE layer (3 of 61 dense)
             dict(hidden_size=64, intermediate_size=160, moe_intermediate_size=16, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16,
                  qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, n_routed_experts=16,
                  first_k_dense_replace=1)),
    _decoder("mixtral_8x7b", "mistralai/Mixtral-8x7B-v0.1", T.MixtralConfig, T.MixtralForCausalLM,
             dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=8, num_local_experts=8, num_experts_per_tok=2, sliding_window=None,
                  max_position_embeddings=32768, rms_norm_eps=1e-5, rope_theta=1000000.0,
                  router_aux_loss_coef=0.02, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=224, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=2)),
    _decoder("stablelm_2_1_6b", "stabilityai/stablelm-2-1_6b", T.StableLmConfig, T.StableLmForCausalLM,
             dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=24, num_attention_heads=32,
                  num_key_value_heads=32, partial_rotary_factor=0.25, use_qkv_bias=True, qk_layernorm=False,
                  use_parallel_residual=False, layer_norm_eps=1e-5, max_position_embeddings=4096,
                  rope_theta=10000.0, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4)),
    _decoder("falcon_7b", "tiiuae/falcon-7b", T.FalconConfig, T.FalconForCausalLM,
             dict(hidden_size=4544, num_hidden_layers=32, num_attention_heads=71, multi_query=True,
                  parallel_attn=True, bias=False, new_decoder_architecture=False, alibi=False,
                  layer_norm_epsilon=1e-5, rope_theta=10000.0, tie_word_embeddings=True),
             dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4)),
    _decoder("starcoder2_3b", "bigcode/starcoder2-3b", T.Starcoder2Config, T.Starcoder2ForCausalLM,
             dict(hidden_size=3072, intermediate_size=12288, num_hidden_layers=30, num_attention_heads=24,
                  num_key_value_heads=2, sliding_window=4096, use_bias=True, hidden_act="gelu_pytorch_tanh",
                  norm_epsilon=1e-5, max_position_embeddings=16384, rope_theta=999999.4420358813,
                  tie_word_embeddings=True),
             dict(hidden_size=96, intermediate_size=384, num_hidden_layers=2, num_attention_heads=12,
                  num_key_value_heads=1)),
    _decoder("santacoder", "bigcode/gpt_bigcode-santacoder", T.GPTBigCodeConfig, T.GPTBigCodeForCausalLM,
             dict(n_embd=2048, n_head=16, n_layer=24, n_positions=2048, multi_query=True,
                  activation_function="gelu_pytorch_tanh", layer_norm_epsilon=1e-5, scale_attn_weights=True),
             dict(n_embd=64, n_head=4, n_layer=2)),
    _decoder("gpt2", "openai-community/gpt2", T.GPT2Config, T.GPT2LMHeadModel,
             dict(n_embd=768, n_head=12, n_layer=12, n_positions=1024, activation_function="gelu_new",
                  layer_norm_epsilon=1e-5, scale_attn_weights=True, tie_word_embeddings=True),
             dict(n_embd=64, n_head=4, n_layer=2)),
    _decoder("pythia_160m", "EleutherAI/pythia-160m", T.GPTNeoXConfig, T.GPTNeoXForCausalLM,
             dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                  rotary_pct=0.25, rotary_emb_base=10000, use_parallel_residual=True, hidden_act="gelu",
                  max_position_embeddings=2048, layer_norm_eps=1e-5, tie_word_embeddings=False),
             dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4)),
    _decoder("granite_3_2b", "ibm-granite/granite-3.0-2b-instruct", T.GraniteConfig, T.GraniteForCausalLM,
             dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=40, num_attention_heads=32,
                  num_key_value_heads=8, embedding_multiplier=12.0, logits_scaling=8.0, residual_multiplier=0.22,
                  attention_multiplier=0.015625, max_position_embeddings=4096, rms_norm_eps=1e-5,
                  rope_theta=10000.0, tie_word_embeddings=True),
             dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=2)),
    # ------------------------------------------------------------ encoder-decoders (with and without cache)
    _seq2seq("t5_small", "google-t5/t5-small", T.T5Config, T.T5ForConditionalGeneration, _T5_SMALL, _T5_SMALL_SCALED),
    _seq2seq("t5_small_nocache", "google-t5/t5-small", T.T5Config, T.T5ForConditionalGeneration, _T5_SMALL,
             _T5_SMALL_SCALED, use_cache=False),
    _seq2seq("flan_t5_base", "google/flan-t5-base", T.T5Config, T.T5ForConditionalGeneration,
             {**_T5_SMALL, "d_model": 768, "d_ff": 2048, "num_layers": 12, "num_decoder_layers": 12,
              "num_heads": 12, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False},
             {**_T5_SMALL_SCALED, "d_model": 96, "d_ff": 256}),
    _seq2seq("bart_base", "facebook/bart-base", T.BartConfig, T.BartForConditionalGeneration, _BART_BASE,
             _BART_BASE_SCALED),
    _seq2seq("bart_base_nocache", "facebook/bart-base", T.BartConfig, T.BartForConditionalGeneration, _BART_BASE,
             _BART_BASE_SCALED, use_cache=False),
    _seq2seq("marian_en_de", "Helsinki-NLP/opus-mt-en-de", T.MarianConfig, T.MarianMTModel,
             dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                  decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048, activation_function="swish",
                  scale_embedding=True, static_position_embeddings=True, max_position_embeddings=512,
                  vocab_size=58101, pad_token_id=58100, decoder_start_token_id=58100, eos_token_id=0,
                  share_encoder_decoder_embeddings=True, tie_word_embeddings=True),
             # the pad / decoder-start id is the last id of the vocabulary, as in the checkpoint
             dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                  encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=VOCAB, pad_token_id=VOCAB - 1,
                  decoder_start_token_id=VOCAB - 1, eos_token_id=0),
             pad_token_id=VOCAB - 1),
    _seq2seq("whisper_tiny", "openai/whisper-tiny", T.WhisperConfig, T.WhisperForConditionalGeneration,
             _WHISPER_TINY, _WHISPER_TINY_SCALED, make_inputs=_whisper_inputs),
    _seq2seq("whisper_tiny_nocache", "openai/whisper-tiny", T.WhisperConfig, T.WhisperForConditionalGeneration,
             _WHISPER_TINY, _WHISPER_TINY_SCALED, use_cache=False, make_inputs=_whisper_inputs),
    # ------------------------------------------------------------ encoders (padding masks, token types)
    RealModel("bert_base_uncased", "google-bert/bert-base-uncased", "encoder", T.BertConfig, T.BertForMaskedLM,
              _BERT_BASE, _BERT_SCALED, _encoder_inputs("mlm", token_types=True)),
    RealModel("bert_base_cased_mrpc", "textattack/bert-base-cased-MRPC (sentence pairs)", "encoder", T.BertConfig,
              T.BertForSequenceClassification, {**_BERT_BASE, "vocab_size": 28996},
              {**_BERT_SCALED, "num_labels": NUM_LABELS}, _encoder_inputs("sequence", token_types=True)),
    RealModel("roberta_base", "FacebookAI/roberta-base", "encoder", T.RobertaConfig, T.RobertaForMaskedLM,
              {**_BERT_BASE, "max_position_embeddings": 514, "type_vocab_size": 1, "vocab_size": 50265,
               "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2},
              # RoBERTa numbers positions past its padding id, which stays 1
              {**_BERT_SCALED, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2},
              _encoder_inputs("mlm", token_types=False), pad_token_id=1),
    RealModel("deberta_v3_base", "microsoft/deberta-v3-base", "encoder", T.DebertaV2Config,
              T.DebertaV2ForSequenceClassification,
              dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                   max_position_embeddings=512, relative_attention=True, position_buckets=256,
                   norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
                   position_biased_input=False, max_relative_positions=-1, type_vocab_size=0,
                   layer_norm_eps=1e-7, hidden_act="gelu", vocab_size=128100, pad_token_id=0),
              {**_BERT_SCALED, "num_labels": NUM_LABELS}, _encoder_inputs("sequence", token_types=False)),
    RealModel("electra_small_discriminator", "google/electra-small-discriminator", "encoder", T.ElectraConfig,
              T.ElectraForPreTraining,
              dict(embedding_size=128, hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
                   intermediate_size=1024, max_position_embeddings=512, type_vocab_size=2, vocab_size=30522,
                   hidden_act="gelu", layer_norm_eps=1e-12, pad_token_id=0),
              dict(embedding_size=32, hidden_size=64, num_hidden_layers=2, intermediate_size=256, vocab_size=VOCAB,
                   pad_token_id=PAD),
              _encoder_inputs("binary-token", token_types=True)),
    RealModel("albert_base_v2", "albert/albert-base-v2", "encoder", T.AlbertConfig, T.AlbertForMaskedLM,
              dict(embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                   intermediate_size=3072, num_hidden_groups=1, inner_group_num=1, hidden_act="gelu_new",
                   max_position_embeddings=512, type_vocab_size=2, vocab_size=30000, pad_token_id=0,
                   layer_norm_eps=1e-12),
              dict(embedding_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=256, vocab_size=VOCAB, pad_token_id=PAD),
              _encoder_inputs("mlm", token_types=True)),
    RealModel("distilbert_sst2", "distilbert/distilbert-base-uncased-finetuned-sst-2-english", "encoder",
              T.DistilBertConfig, T.DistilBertForSequenceClassification,
              dict(dim=768, n_layers=6, n_heads=12, hidden_dim=3072, max_position_embeddings=512,
                   sinusoidal_pos_embds=False, activation="gelu", vocab_size=30522, pad_token_id=0),
              dict(dim=64, n_layers=2, n_heads=4, hidden_dim=256, vocab_size=VOCAB, pad_token_id=PAD,
                   num_labels=NUM_LABELS),
              _encoder_inputs("sequence", token_types=False)),
    RealModel("modernbert_base", "answerdotai/ModernBERT-base", "encoder", T.ModernBertConfig, T.ModernBertForMaskedLM,
              dict(hidden_size=768, intermediate_size=1152, num_hidden_layers=22, num_attention_heads=12,
                   global_attn_every_n_layers=3, local_attention=128, global_rope_theta=160000.0,
                   local_rope_theta=10000.0, max_position_embeddings=8192, norm_eps=1e-5, norm_bias=False,
                   hidden_activation="gelu", vocab_size=50368, pad_token_id=50283, tie_word_embeddings=True),
              # three layers keep the 1 global : 2 local pattern
              dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                   vocab_size=VOCAB, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, cls_token_id=BOS,
                   sep_token_id=EOS),
              _encoder_inputs("mlm", token_types=False)),
    # ------------------------------------------------------------ vision backbones
    RealModel("vit_base_patch16_224", "google/vit-base-patch16-224", "vision", T.ViTConfig,
              T.ViTForImageClassification, _VIT_BASE,
              dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                   num_labels=NUM_LABELS), _image_inputs),
    RealModel("convnext_tiny_224", "facebook/convnext-tiny-224", "vision", T.ConvNextConfig,
              T.ConvNextForImageClassification,
              dict(hidden_sizes=[96, 192, 384, 768], depths=[3, 3, 9, 3], patch_size=4, num_stages=4,
                   layer_scale_init_value=1e-6, hidden_act="gelu", image_size=224),
              dict(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_labels=NUM_LABELS), _image_inputs),
    RealModel("resnet_50", "microsoft/resnet-50", "vision", T.ResNetConfig, T.ResNetForImageClassification,
              dict(embedding_size=64, hidden_sizes=[256, 512, 1024, 2048], depths=[3, 4, 6, 3],
                   layer_type="bottleneck", hidden_act="relu", downsample_in_first_stage=False),
              dict(embedding_size=8, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_labels=NUM_LABELS),
              _image_inputs),
    RealModel("swin_tiny_patch4_window7_224", "microsoft/swin-tiny-patch4-window7-224", "vision", T.SwinConfig,
              T.SwinForImageClassification,
              dict(image_size=224, patch_size=4, embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24],
                   window_size=7, mlp_ratio=4.0, qkv_bias=True, hidden_act="gelu", layer_norm_eps=1e-5),
              # two blocks per stage keep the plain / shifted window alternation
              dict(embed_dim=24, depths=[2, 2, 2, 2], num_labels=NUM_LABELS), _image_inputs),
    # ------------------------------------------------------------ audio encoders
    RealModel("wav2vec2_base_960h", "facebook/wav2vec2-base-960h", "audio", T.Wav2Vec2Config, T.Wav2Vec2ForCTC,
              dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                   conv_dim=[512] * 7, conv_stride=[5, 2, 2, 2, 2, 2, 2], conv_kernel=[10, 3, 3, 3, 3, 2, 2],
                   conv_bias=False, feat_extract_norm="group", do_stable_layer_norm=False,
                   num_conv_pos_embeddings=128, num_conv_pos_embedding_groups=16, hidden_act="gelu",
                   ctc_loss_reduction="sum", vocab_size=32, pad_token_id=0),
              dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                   conv_dim=[32] * 7, vocab_size=32),
              _wav2vec2_inputs(with_mask=False)),
    RealModel("wav2vec2_large_lv60", "facebook/wav2vec2-large-960h-lv60-self", "audio", T.Wav2Vec2Config,
              T.Wav2Vec2ForCTC,
              dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                   conv_dim=[512] * 7, conv_stride=[5, 2, 2, 2, 2, 2, 2], conv_kernel=[10, 3, 3, 3, 3, 2, 2],
                   conv_bias=True, feat_extract_norm="layer", do_stable_layer_norm=True,
                   feat_extract_activation="gelu", num_conv_pos_embeddings=128, num_conv_pos_embedding_groups=16,
                   hidden_act="gelu", ctc_loss_reduction="sum", vocab_size=32, pad_token_id=0),
              dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                   conv_dim=[32] * 7, vocab_size=32),
              _wav2vec2_inputs(with_mask=True)),
    RealModel("whisper_base_encoder", "openai/whisper-base (encoder, audio classification head)", "audio",
              T.WhisperConfig, T.WhisperForAudioClassification,
              dict(d_model=512, encoder_layers=6, encoder_attention_heads=8, encoder_ffn_dim=2048, num_mel_bins=80,
                   max_source_positions=1500, activation_function="gelu", scale_embedding=False),
              dict(d_model=64, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=256, decoder_layers=1,
                   vocab_size=VOCAB, num_labels=NUM_LABELS, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS,
                   decoder_start_token_id=BOS),
              _whisper_encoder_inputs),
    # ------------------------------------------------------------ multimodal
    RealModel("clip_vit_base_patch32", "openai/clip-vit-base-patch32", "multimodal", T.CLIPConfig, T.CLIPModel,
              dict(projection_dim=512, logit_scale_init_value=2.6592,
                   text_config=dict(hidden_size=512, intermediate_size=2048, num_hidden_layers=12,
                                    num_attention_heads=8, max_position_embeddings=77, vocab_size=49408,
                                    hidden_act="quick_gelu", bos_token_id=0, eos_token_id=2, pad_token_id=1),
                   vision_config=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                      num_attention_heads=12, image_size=224, patch_size=32, hidden_act="quick_gelu")),
              dict(projection_dim=32,
                   text_config=dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                    max_position_embeddings=77, vocab_size=VOCAB, hidden_act="quick_gelu",
                                    bos_token_id=0, eos_token_id=2, pad_token_id=1),
                   vision_config=dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                                      num_attention_heads=4, image_size=224, patch_size=32, hidden_act="quick_gelu")),
              _clip_inputs, pad_token_id=1),
]

_BY_NAME = {entry.name: entry for entry in REAL_ZOO}


def get(name: str) -> RealModel:
    """The entry called `name`; KeyError lists the known names."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no real-zoo model {name!r}; known: {sorted(_BY_NAME)}") from None


def names() -> list[str]:
    return [entry.name for entry in REAL_ZOO]
