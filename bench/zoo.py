"""A zoo of real transformers architectures at toy size, for framejit's tests and benchmarks.

Why this exists: unit tests of single bytecodes say little about whether framejit can follow
the Python that real models run (config lookups, ModuleList loops, dataclass outputs, mask
helpers, rotary caches...). Each entry here builds a genuine ``transformers`` model class from a
tiny hand-written config with random weights, so nothing is ever fetched from a hub and every
forward takes a few milliseconds on CPU.

Every entry is deterministic: ``build()`` seeds the weights (without disturbing the caller's
RNG), ``inputs()`` seeds the data, all dropout probabilities are 0.0 (so ``model.train()`` is
still deterministic, and equals eval mode except for resnet's BatchNorm), attention uses the
"eager" implementation, and ``use_cache=False`` is set in the configs so that every forward
kwarg is a tensor, except in ``llama_kv``: llama as users call it by default, whose forward builds
a ``DynamicCache`` and returns it. ``mixtral`` is the deliberately hard entry: its expert loop iterates over
``nonzero()`` of the routing mask (data-dependent shapes); see bench/BASELINE.md.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
import transformers

BATCH = 2
SEQ = 8
VOCAB = 128
IMAGE = 32
NUM_LABELS = 3
MEL_BINS = 8
AUDIO_FRAMES = 16  # Whisper's stride-2 conv turns these into AUDIO_FRAMES // 2 positions
WEIGHT_SEED = 0
INPUT_SEED = 1


@dataclass
class ZooModel:
    name: str
    kind: str  # "decoder" | "encoder" | "encoder-decoder" | "vision"
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[], dict[str, torch.Tensor]]
    loss: Callable[[Any], torch.Tensor]


# ---------------------------------------------------------------- builders


def _builder(config_cls: type, model_cls: type, **config_kwargs: Any) -> Callable[[], torch.nn.Module]:
    """A zero-argument function making a fresh, seeded, eval-mode model of `model_cls`."""

    def build() -> torch.nn.Module:
        config = config_cls(**config_kwargs)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(WEIGHT_SEED)
            model = model_cls(config)
        return model.eval()

    build.__name__ = f"build_{model_cls.__name__}"
    return build


def _attention_model(config_cls: type, model_cls: type, **config_kwargs: Any) -> Callable[[], torch.nn.Module]:
    return _builder(config_cls, model_cls, attn_implementation="eager", use_cache=False, **config_kwargs)


def _cached_model(config_cls: type, model_cls: type, **config_kwargs: Any) -> Callable[[], torch.nn.Module]:
    """A decoder as users call it by default: its forward builds a DynamicCache and returns it."""
    return _builder(config_cls, model_cls, attn_implementation="eager", use_cache=True, **config_kwargs)


# ---------------------------------------------------------------- inputs


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(INPUT_SEED)


def _token_ids(gen: torch.Generator, low: int = 3) -> torch.Tensor:
    # Token ids start above the usual special ids (pad/bos/eos) so no model special-cases them.
    return torch.randint(low, VOCAB, (BATCH, SEQ), generator=gen)


def _padded_mask() -> torch.Tensor:
    # The second row has two padding positions at the end, so masks actually do something.
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, -2:] = 0
    return mask


def _decoder_inputs() -> dict[str, torch.Tensor]:
    gen = _generator()
    return {"input_ids": _token_ids(gen)}


def _encoder_inputs() -> dict[str, torch.Tensor]:
    gen = _generator()
    return {"input_ids": _token_ids(gen), "attention_mask": _padded_mask()}


def _encoder_decoder_inputs() -> dict[str, torch.Tensor]:
    gen = _generator()
    return {
        "input_ids": _token_ids(gen),
        "attention_mask": _padded_mask(),
        "decoder_input_ids": _token_ids(gen),
    }


def _audio_inputs() -> dict[str, torch.Tensor]:
    gen = _generator()
    return {
        "input_features": torch.randn(BATCH, MEL_BINS, AUDIO_FRAMES, generator=gen),
        "decoder_input_ids": _token_ids(gen),
    }


def _image_inputs() -> dict[str, torch.Tensor]:
    gen = _generator()
    return {"pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE, generator=gen)}


# ---------------------------------------------------------------- losses


def _token_cross_entropy(output: Any) -> torch.Tensor:
    """Cross entropy of per-token logits against fixed targets (position index mod vocab)."""
    logits = output.logits
    flat = logits.reshape(-1, logits.shape[-1])
    targets = torch.arange(flat.shape[0]) % logits.shape[-1]
    return F.cross_entropy(flat, targets)


def _class_cross_entropy(output: Any) -> torch.Tensor:
    logits = output.logits
    targets = torch.arange(logits.shape[0]) % logits.shape[-1]
    return F.cross_entropy(logits, targets)


def _probe(features: torch.Tensor) -> torch.Tensor:
    """Mean square of features projected on a fixed direction.

    A plain mean square of a LayerNorm output is nearly constant (its gradient is ~0), so the
    features are first projected on a fixed, uneven direction.
    """
    direction = torch.linspace(-1.0, 2.0, features.shape[-1], dtype=features.dtype)
    return (features @ direction).square().mean()


def _hidden_probe(output: Any) -> torch.Tensor:
    return _probe(output.last_hidden_state)


def _pooled_probe(output: Any) -> torch.Tensor:
    return _probe(output.pooler_output)


# ---------------------------------------------------------------- the zoo

_LLAMA_LIKE = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    attention_dropout=0.0,
    tie_word_embeddings=False,
)

_BERT_LIKE = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)

ZOO: list[ZooModel] = [
    # ------------------------------------------------------------ decoder-only LMs
    ZooModel(
        "gpt2",
        "decoder",
        _attention_model(
            transformers.GPT2Config,
            transformers.GPT2LMHeadModel,
            vocab_size=VOCAB,
            n_positions=64,
            n_embd=32,
            n_layer=2,
            n_head=2,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=0,
            eos_token_id=0,
        ),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "llama",
        "decoder",
        _attention_model(transformers.LlamaConfig, transformers.LlamaForCausalLM, **_LLAMA_LIKE),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "llama_kv",
        "decoder",
        _cached_model(transformers.LlamaConfig, transformers.LlamaForCausalLM, **_LLAMA_LIKE),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "mistral",
        "decoder",
        _attention_model(
            transformers.MistralConfig, transformers.MistralForCausalLM, sliding_window=4, **_LLAMA_LIKE
        ),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "qwen2",
        "decoder",
        _attention_model(transformers.Qwen2Config, transformers.Qwen2ForCausalLM, **_LLAMA_LIKE),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "gemma",
        "decoder",
        _attention_model(transformers.GemmaConfig, transformers.GemmaForCausalLM, head_dim=8, **_LLAMA_LIKE),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "gpt_neox",
        "decoder",
        _attention_model(
            transformers.GPTNeoXConfig,
            transformers.GPTNeoXForCausalLM,
            vocab_size=VOCAB,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=64,
            rotary_pct=0.5,
            hidden_dropout=0.0,
            attention_dropout=0.0,
            tie_word_embeddings=False,
        ),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "opt",
        "decoder",
        _attention_model(
            transformers.OPTConfig,
            transformers.OPTForCausalLM,
            vocab_size=VOCAB,
            hidden_size=32,
            word_embed_proj_dim=32,
            ffn_dim=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=64,
            dropout=0.0,
            attention_dropout=0.0,
            activation_dropout=0.0,
            layerdrop=0.0,
        ),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "phi",
        "decoder",
        _attention_model(
            transformers.PhiConfig,
            transformers.PhiForCausalLM,
            vocab_size=VOCAB,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=64,
            partial_rotary_factor=0.5,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attention_dropout=0.0,
        ),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "bloom",  # ALiBi position bias instead of position embeddings
        "decoder",
        _attention_model(
            transformers.BloomConfig,
            transformers.BloomForCausalLM,
            vocab_size=VOCAB,
            hidden_size=32,
            n_layer=2,
            n_head=4,
            hidden_dropout=0.0,
            attention_dropout=0.0,
        ),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        # Mixture of experts with the reference ("eager") expert loop: it iterates over
        # `nonzero()` of the routing mask, i.e. data-dependent shapes and control flow.
        "mixtral",
        "decoder",
        _attention_model(
            transformers.MixtralConfig,
            transformers.MixtralForCausalLM,
            num_local_experts=4,
            num_experts_per_tok=2,
            router_jitter_noise=0.0,
            experts_implementation="eager",
            **_LLAMA_LIKE,
        ),
        _decoder_inputs,
        _token_cross_entropy,
    ),
    # ------------------------------------------------------------ encoders
    ZooModel(
        "bert",
        "encoder",
        _attention_model(transformers.BertConfig, transformers.BertForMaskedLM, **_BERT_LIKE),
        _encoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "roberta",
        "encoder",
        _attention_model(
            transformers.RobertaConfig,
            transformers.RobertaForSequenceClassification,
            num_labels=NUM_LABELS,
            classifier_dropout=0.0,
            **_BERT_LIKE,
        ),
        _encoder_inputs,
        _class_cross_entropy,
    ),
    ZooModel(
        "distilbert",
        "encoder",
        _attention_model(
            transformers.DistilBertConfig,
            transformers.DistilBertModel,
            vocab_size=VOCAB,
            dim=32,
            hidden_dim=64,
            n_layers=2,
            n_heads=2,
            max_position_embeddings=64,
            dropout=0.0,
            attention_dropout=0.0,
        ),
        _encoder_inputs,
        _hidden_probe,
    ),
    ZooModel(
        "albert",
        "encoder",
        _attention_model(
            transformers.AlbertConfig,
            transformers.AlbertModel,
            embedding_size=16,
            classifier_dropout_prob=0.0,
            **_BERT_LIKE,
        ),
        _encoder_inputs,
        _pooled_probe,
    ),
    ZooModel(
        "electra",
        "encoder",
        _attention_model(
            transformers.ElectraConfig,
            transformers.ElectraForTokenClassification,
            embedding_size=16,
            num_labels=NUM_LABELS,
            classifier_dropout=0.0,
            **_BERT_LIKE,
        ),
        _encoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "deberta_v2",  # disentangled relative-position attention
        "encoder",
        _attention_model(
            transformers.DebertaV2Config,
            transformers.DebertaV2Model,
            relative_attention=True,
            position_buckets=8,
            pos_att_type=["p2c", "c2p"],
            **_BERT_LIKE,
        ),
        _encoder_inputs,
        _hidden_probe,
    ),
    # ------------------------------------------------------------ encoder-decoders
    ZooModel(
        "t5",
        "encoder-decoder",
        _attention_model(
            transformers.T5Config,
            transformers.T5ForConditionalGeneration,
            vocab_size=VOCAB,
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            relative_attention_num_buckets=8,
            relative_attention_max_distance=16,
            dropout_rate=0.0,
            decoder_start_token_id=0,
            pad_token_id=0,
        ),
        _encoder_decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "bart",
        "encoder-decoder",
        _attention_model(
            transformers.BartConfig,
            transformers.BartForConditionalGeneration,
            vocab_size=VOCAB,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
            dropout=0.0,
            attention_dropout=0.0,
            activation_dropout=0.0,
            encoder_layerdrop=0.0,
            decoder_layerdrop=0.0,
        ),
        _encoder_decoder_inputs,
        _token_cross_entropy,
    ),
    ZooModel(
        "whisper",  # speech: conv front end over mel features, then a text decoder
        "encoder-decoder",
        _attention_model(
            transformers.WhisperConfig,
            transformers.WhisperForConditionalGeneration,
            vocab_size=VOCAB,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            num_mel_bins=MEL_BINS,
            max_source_positions=AUDIO_FRAMES // 2,
            max_target_positions=16,
            dropout=0.0,
            attention_dropout=0.0,
            activation_dropout=0.0,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            decoder_start_token_id=1,
            begin_suppress_tokens=None,
            suppress_tokens=None,
        ),
        _audio_inputs,
        _token_cross_entropy,
    ),
    # ------------------------------------------------------------ vision
    ZooModel(
        "vit",
        "vision",
        _attention_model(
            transformers.ViTConfig,
            transformers.ViTForImageClassification,
            image_size=IMAGE,
            patch_size=8,
            num_channels=3,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            num_labels=NUM_LABELS,
        ),
        _image_inputs,
        _class_cross_entropy,
    ),
    ZooModel(
        "swin",  # shifted-window attention: window partition/roll reshapes
        "vision",
        _attention_model(
            transformers.SwinConfig,
            transformers.SwinForImageClassification,
            image_size=IMAGE,
            patch_size=4,
            embed_dim=16,
            depths=[2, 1],  # the second block of stage one uses shifted windows
            num_heads=[2, 2],
            window_size=4,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            drop_path_rate=0.0,
            num_labels=NUM_LABELS,
        ),
        _image_inputs,
        _class_cross_entropy,
    ),
    ZooModel(
        "resnet",
        "vision",
        _builder(
            transformers.ResNetConfig,
            transformers.ResNetForImageClassification,
            num_channels=3,
            embedding_size=16,
            hidden_sizes=[16, 32],
            depths=[1, 1],
            layer_type="basic",
            num_labels=NUM_LABELS,
        ),
        _image_inputs,
        _class_cross_entropy,
    ),
    ZooModel(
        "convnext",
        "vision",
        _builder(
            transformers.ConvNextConfig,
            transformers.ConvNextForImageClassification,
            num_channels=3,
            patch_size=4,
            hidden_sizes=[16, 32],
            depths=[1, 1],
            num_stages=2,
            drop_path_rate=0.0,
            num_labels=NUM_LABELS,
        ),
        _image_inputs,
        _class_cross_entropy,
    ),
]

_BY_NAME = {entry.name: entry for entry in ZOO}


def get(name: str) -> ZooModel:
    """The zoo entry called `name`; KeyError lists the known names."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no zoo model {name!r}; known: {sorted(_BY_NAME)}") from None


def names() -> list[str]:
    return [entry.name for entry in ZOO]
