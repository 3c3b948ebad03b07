"""The models of bench/zoo_ecosystem.py: the libraries next to torch, tiny configs, random weights.

Why this exists: issue 25 tries framejit the way a new user would on diffusers, PEFT, torch_geometric,
einops, torch.nn's own modules, torchvision-style building blocks and the annotations libraries write
for torch.compile. Each Entry builds a fresh seeded model (so eager, framejit and torch.compile each run
an identical copy) and says how one call runs it (`run(model, seed)`); a sampler loop or a training
step is a call too. Entries whose library does not import here are listed with the reason (torchvision
needs a CUDA build of torch 2.13, and timm imports torchvision).
"""
from __future__ import annotations

import functools
import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn
import torch.nn.functional as F


@dataclass
class Entry:
    name: str
    family: str
    build: Callable[[], Any]            # a fresh module (or function), same weights every time
    inputs: Callable[[int], tuple]      # seed -> positional arguments of one call
    run: Callable | None = None         # (model, seed) -> output; default model(*inputs(seed))
    train: bool = False                 # the call is a training step: loss.backward(), grads compared
    needs: str = ""                     # a module that must import for this entry

    def call(self, model, seed):
        torch.manual_seed(1000 + seed)
        if self.run is not None:
            return self.run(model, seed)
        args = self.inputs(seed)
        if not self.train:
            with torch.no_grad():
                return model(*args)
        params = [p for p in _parameters(model) if p.requires_grad]
        for p in params:
            p.grad = None
        out = model(*args)
        _loss(out).backward()
        return out, [p.grad for p in params]

    def available(self) -> str | None:
        """None when this entry can run here, else why not."""
        if not self.needs:
            return None
        try:
            importlib.import_module(self.needs)
        except Exception as exc:          # torchvision raises RuntimeError on CPU torch 2.13
            return f"{self.needs} does not import: {type(exc).__name__}: {str(exc)[:80]}"
        return None


def _parameters(model):
    base = getattr(model, "_framejit_original", None) or getattr(model, "_orig_mod", None) or model
    return list(base.parameters()) if isinstance(base, nn.Module) else []


def _loss(out):
    if isinstance(out, torch.Tensor):
        return out.float().pow(2).mean()
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return sum(_loss(o) for o in out if isinstance(o, (torch.Tensor, list, tuple, dict)))
    return torch.zeros(())


def seeded(fn):
    """A builder that seeds torch before building, so every copy has the same weights."""
    @functools.wraps(fn)
    def build():
        torch.manual_seed(0)
        model = fn()
        return model.eval() if isinstance(model, nn.Module) else model
    return build


def randn(seed, *shape):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def randint(seed, high, *shape):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=g)


ENTRIES: list[Entry] = []


def entry(name, family, inputs, run=None, train=False, needs=""):
    def register(builder):
        ENTRIES.append(Entry(name, family, seeded(builder), inputs, run, train, needs))
        return builder
    return register


# ----------------------------------------------------------------------------------------------- diffusers

def _unet():
    from diffusers import UNet2DConditionModel
    return UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=8)


@entry("unet2d_condition", "diffusers", lambda s: (randn(s, 1, 4, 8, 8), torch.tensor([10 * s]), randn(s + 9, 1, 5, 32)),
       needs="diffusers")
def _b():
    return _unet()


@entry("unet2d", "diffusers", lambda s: (randn(s, 1, 3, 16, 16), torch.tensor([5 * s])), needs="diffusers")
def _b():
    from diffusers import UNet2DModel
    return UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(16, 32),
                       down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                       norm_num_groups=8)


def _vae():
    from diffusers import AutoencoderKL
    return AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(16, 32), latent_channels=4,
                         down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                         norm_num_groups=8, sample_size=16)


class VaeEncode(nn.Module):
    def __init__(self):
        super().__init__()
        self.vae = _vae()

    def forward(self, x):
        return self.vae.encode(x).latent_dist.mode()


class VaeDecode(nn.Module):
    def __init__(self):
        super().__init__()
        self.vae = _vae()

    def forward(self, z):
        return self.vae.decode(z).sample


@entry("vae_encode", "diffusers", lambda s: (randn(s, 1, 3, 16, 16),), needs="diffusers")
def _b():
    return VaeEncode()


@entry("vae_decode", "diffusers", lambda s: (randn(s, 1, 4, 8, 8),), needs="diffusers")
def _b():
    return VaeDecode()


@entry("vae_forward", "diffusers", lambda s: (randn(s, 1, 3, 16, 16),), needs="diffusers")
def _b():
    return _vae()


@entry("dit", "diffusers", lambda s: (randn(s, 1, 4, 8, 8), torch.tensor([3 * s]), torch.tensor([s % 10])),
       needs="diffusers")
def _b():
    from diffusers import DiTTransformer2DModel
    return DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4,
                                 num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=10)


def _flux_inputs(s):
    return (randn(s, 1, 16, 4), randn(s + 1, 1, 6, 32), randn(s + 2, 1, 32), torch.tensor([0.5 + 0.1 * s]),
            torch.zeros(16, 3), torch.zeros(6, 3))


class FluxCall(nn.Module):
    def __init__(self):
        super().__init__()
        from diffusers import FluxTransformer2DModel
        self.model = FluxTransformer2DModel(patch_size=1, in_channels=4, num_layers=1, num_single_layers=1,
                                            attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                            pooled_projection_dim=32, axes_dims_rope=(4, 4, 8))

    def forward(self, x, enc, pooled, t, img_ids, txt_ids):
        return self.model(hidden_states=x, encoder_hidden_states=enc, pooled_projections=pooled, timestep=t,
                          img_ids=img_ids, txt_ids=txt_ids).sample


@entry("flux", "diffusers", _flux_inputs, needs="diffusers")
def _b():
    return FluxCall()


@entry("sd3_transformer", "diffusers", lambda s: (randn(s, 1, 4, 8, 8), randn(s + 1, 1, 6, 32), randn(s + 2, 1, 16),
                                                  torch.tensor([7 * s])), needs="diffusers")
def _b():
    from diffusers import SD3Transformer2DModel
    return SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8,
                                 num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=16,
                                 pooled_projection_dim=16, out_channels=4, pos_embed_max_size=8)


def _ddim_run(model, seed):
    """A 4-step DDIM sampler: the scheduler's Python ints are the UNet's timesteps."""
    from diffusers import DDIMScheduler
    scheduler = DDIMScheduler(num_train_timesteps=100)
    scheduler.set_timesteps(4)
    x = randn(seed, 1, 4, 8, 8)
    enc = randn(seed + 9, 1, 5, 32)
    with torch.no_grad():
        for t in scheduler.timesteps.tolist():           # Python ints, as user samplers pass them
            eps = model(x, t, enc).sample
            x = scheduler.step(eps, t, x).prev_sample
    return x


@entry("ddim_loop_int_t", "diffusers", lambda s: (), run=_ddim_run, needs="diffusers")
def _b():
    return _unet()


# ----------------------------------------------------------------------------------------------- PEFT

def _lora_llama():
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    config._attn_implementation = "sdpa"
    base = LlamaForCausalLM(config)
    return get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0))


class LogitsOf(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).logits


@entry("peft_lora_llama_eval", "peft", lambda s: (randint(s, 64, 1, 8),), needs="peft")
def _b():
    return LogitsOf(_lora_llama())


@entry("peft_lora_llama_train", "peft", lambda s: (randint(s, 64, 1, 8),), train=True, needs="peft")
def _b():
    return LogitsOf(_lora_llama()).train()


@entry("peft_lora_mlp", "peft", lambda s: (randn(s, 4, 16),), needs="peft")
def _b():
    from peft import LoraConfig, get_peft_model
    base = nn.Sequential()
    base.add_module("fc1", nn.Linear(16, 32))
    base.add_module("act", nn.GELU())
    base.add_module("fc2", nn.Linear(32, 8))
    return get_peft_model(base, LoraConfig(r=2, target_modules=["fc1", "fc2"]))


# ----------------------------------------------------------------------------------------------- PyG

def _graph(seed, nodes=10, feats=8, edges=30):
    return randn(seed, nodes, feats), randint(seed + 1, nodes, 2, edges)


class GNN(nn.Module):
    def __init__(self, make):
        super().__init__()
        self.conv1, self.conv2 = make(8, 16), make(16, 4)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def _gnn(name, make):
    @entry(f"pyg_{name}", "pyg", lambda s: _graph(s), needs="torch_geometric")
    def _b():
        return GNN(make)


def _pyg_layers():
    def gcn(i, o):
        from torch_geometric.nn import GCNConv
        return GCNConv(i, o)

    def gat(i, o):
        from torch_geometric.nn import GATConv
        return GATConv(i, o, heads=2, concat=False)

    def sage(i, o):
        from torch_geometric.nn import SAGEConv
        return SAGEConv(i, o)

    def gin(i, o):
        from torch_geometric.nn import GINConv
        return GINConv(nn.Sequential(nn.Linear(i, o), nn.ReLU(), nn.Linear(o, o)))

    def edgeconv(i, o):
        from torch_geometric.nn import EdgeConv
        return EdgeConv(nn.Sequential(nn.Linear(2 * i, o), nn.ReLU()))

    def gatv2(i, o):
        from torch_geometric.nn import GATv2Conv
        return GATv2Conv(i, o, heads=2, concat=False)

    for name, make in (("gcn", gcn), ("gat", gat), ("sage", sage), ("gin", gin), ("edgeconv", edgeconv),
                       ("gatv2", gatv2)):
        _gnn(name, make)


_pyg_layers()


class PooledGCN(nn.Module):
    def __init__(self):
        super().__init__()
        from torch_geometric.nn import GCNConv
        self.conv = GCNConv(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x, edge_index, batch):
        from torch_geometric.nn import global_mean_pool
        return self.head(global_mean_pool(self.conv(x, edge_index).relu(), batch, 2))


@entry("pyg_gcn_pool", "pyg", lambda s: _graph(s) + (torch.tensor([0] * 5 + [1] * 5),), needs="torch_geometric")
def _b():
    return PooledGCN()


# ----------------------------------------------------------------------------------------------- einops

class EinopsViT(nn.Module):
    """A ViT written with rearrange / reduce / repeat as the einops README shows."""

    def __init__(self, dim=32, patch=4, depth=2):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True)
                                    for _ in range(depth))
        self.head = nn.Linear(dim, 10)

    def forward(self, img):
        from einops import rearrange, reduce, repeat
        x = rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=self.patch, p2=self.patch)
        x = self.embed(x)
        cls = repeat(self.cls, "() n d -> b n d", b=x.shape[0])
        x = torch.cat([cls, x], dim=1)
        for block in self.blocks:
            x = block(x)
        return self.head(reduce(x, "b n d -> b d", "mean"))


@entry("einops_vit", "einops", lambda s: (randn(s, 2, 3, 16, 16),), needs="einops")
def _b():
    return EinopsViT()


@entry("einops_layers", "einops", lambda s: (randn(s, 2, 3, 8, 8),), needs="einops")
def _b():
    from einops.layers.torch import Rearrange, Reduce
    return nn.Sequential(Rearrange("b c (h p) (w q) -> b (h w) (p q c)", p=2, q=2), nn.Linear(12, 16),
                         Reduce("b n d -> b d", "max"), nn.Linear(16, 4))


class EinopsMixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        import einops
        q = einops.rearrange(self.proj(x), "b n (h d) -> b h n d", h=2)
        attn = einops.einsum(q, q, "b h i d, b h j d -> b h i j").softmax(-1)
        out = einops.einsum(attn, q, "b h i j, b h j d -> b h i d")
        packed, shapes = einops.pack([out.mean(1), x], "b n *")
        return einops.unpack(packed, shapes, "b n *")[0]


@entry("einops_einsum_pack", "einops", lambda s: (randn(s, 2, 5, 8),), needs="einops")
def _b():
    return EinopsMixed()


# ----------------------------------------------------------------------------------------------- torch.nn

def _seq(s, n=6, d=16):
    return (randn(s, 2, n, d),)


@entry("nn_mha", "torch.nn", lambda s: _seq(s) * 3)
def _b():
    return nn.MultiheadAttention(16, 4, batch_first=True)


@entry("nn_mha_train", "torch.nn", lambda s: _seq(s) * 3, train=True)
def _b():
    return nn.MultiheadAttention(16, 4, batch_first=True, dropout=0.0).train()


@entry("nn_transformer_encoder_layer", "torch.nn", _seq)
def _b():
    return nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)


@entry("nn_transformer_encoder", "torch.nn", _seq)
def _b():
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2,
                                 enable_nested_tensor=False)


@entry("nn_transformer_decoder_layer", "torch.nn", lambda s: _seq(s) + _seq(s + 1))
def _b():
    return nn.TransformerDecoderLayer(16, 4, 32, batch_first=True)


@entry("nn_transformer", "torch.nn", lambda s: _seq(s) + _seq(s + 1))
def _b():
    return nn.Transformer(16, 4, 1, 1, 32, batch_first=True)


@entry("nn_transformer_encoder_layer_train", "torch.nn", _seq, train=True)
def _b():
    return nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True).train()


for _name, _cls in (("rnn", nn.RNN), ("lstm", nn.LSTM), ("gru", nn.GRU)):
    def _register(name=_name, cls=_cls):
        @entry(f"nn_{name}", "torch.nn", lambda s: (randn(s, 2, 5, 8),))
        def _b():
            return cls(8, 16, num_layers=2, batch_first=True)

        @entry(f"nn_{name}_bidir_train", "torch.nn", lambda s: (randn(s, 2, 5, 8),), train=True)
        def _b():
            return cls(8, 16, bidirectional=True, batch_first=True).train()
    _register()


class Cells(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.gru, self.rnn = nn.LSTMCell(8, 8), nn.GRUCell(8, 8), nn.RNNCell(8, 8)

    def forward(self, x):
        h, c = self.lstm(x)
        return self.rnn(self.gru(x, h)) + c


@entry("nn_rnn_cells", "torch.nn", lambda s: (randn(s, 3, 8),))
def _b():
    return Cells()


# ------------------------------------------------------------------------------ torchvision-style blocks

def log_api_usage_once(obj):
    """torchvision.utils._log_api_usage_once, written out: a name for torch's usage logger."""
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if isinstance(obj, type(log_api_usage_once)):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def stochastic_depth(x, p, mode, training=True):
    """torchvision.ops.stochastic_depth's shape: logs its use, then drops rows (or not) at random."""
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        log_api_usage_once(stochastic_depth)
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    survival = 1.0 - p
    size = [x.shape[0]] + [1] * (x.ndim - 1) if mode == "row" else [1] * x.ndim
    noise = torch.empty(size, dtype=x.dtype, device=x.device).bernoulli_(survival)
    if survival > 0.0:
        noise.div_(survival)
    return x * noise


class SwinLikeBlock(nn.Module):
    def __init__(self, dim, drop_path):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.drop_path = drop_path

    def forward(self, x):
        h = self.norm1(x)
        x = x + stochastic_depth(self.attn(h, h, h, need_weights=False)[0], self.drop_path, "row", self.training)
        return x + stochastic_depth(self.mlp(self.norm2(x)), self.drop_path, "row", self.training)


class VisionLike(nn.Module):
    """torchvision's model pattern: usage logged in __init__ and in ops, per-layer drop-path rates."""

    def __init__(self, depth=4):
        super().__init__()
        log_api_usage_once(self)
        self.stem = nn.Conv2d(3, 16, 4, 4)
        self.blocks = nn.Sequential(*[SwinLikeBlock(16, 0.1 * i / depth) for i in range(depth)])
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.blocks(x).mean(1))


@entry("vision_like_eval", "torchvision-like", lambda s: (randn(s, 2, 3, 16, 16),))
def _b():
    return VisionLike()


@entry("vision_like_train", "torchvision-like", lambda s: (randn(s, 2, 3, 16, 16),), train=True)
def _b():
    return VisionLike().train()


# ------------------------------------------------------------------ annotations written for torch.compile

@torch.compiler.disable
def _logged(x):
    print("host-side logging", tuple(x.shape))
    return x + 1


class DisabledHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        return self.b(_logged(self.a(x)).relu())


@entry("compiler_disable", "annotations", lambda s: (randn(s, 2, 8),))
def _b():
    return DisabledHelper()


def _opaque_scale(x):
    return x * 2 + 1


torch.compiler.allow_in_graph(_opaque_scale)


@torch.compiler.assume_constant_result
def _table_size():
    return 4


class Annotated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = _opaque_scale(self.fc(x))
        if torch.compiler.is_compiling():
            y = y + 0          # same value on both paths
        return y[:, :_table_size()]


@entry("allow_in_graph_constant", "annotations", lambda s: (randn(s, 2, 8),))
def _b():
    return Annotated()


class SdpaKernelBlock(nn.Module):
    def forward(self, q):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel([SDPBackend.MATH]):
            out = F.scaled_dot_product_attention(q, q, q)
        with torch.backends.cudnn.flags(enabled=False):
            out = out + 1
        return out


@entry("sdpa_kernel_flags", "annotations", lambda s: (randn(s, 1, 2, 4, 8),))
def _b():
    return SdpaKernelBlock()


# ----------------------------------------------------------------- other libraries' building blocks

class SignatureIntrospect(nn.Module):
    """diffusers/PEFT style: which keyword arguments does the callee accept?"""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, scale=1.0):
        accepted = set(inspect.signature(self.fc.forward).parameters.keys())
        kinds = frozenset({"scale"})
        if "scale" in kinds and "input" in accepted:
            return self.fc(x) * scale
        return self.fc(x)


@entry("inspect_signature_frozenset", "introspection", lambda s: (randn(s, 2, 8),))
def _b():
    return SignatureIntrospect()


@functools.lru_cache(maxsize=None)
def _freqs(dim, theta):
    return tuple(1.0 / theta ** (i / dim) for i in range(0, dim, 2))


class LruCached(nn.Module):
    def forward(self, x):
        return x * torch.tensor(_freqs(8, 10000.0))


@entry("lru_cache_helper", "introspection", lambda s: (randn(s, 3, 4),))
def _b():
    return LruCached()


class RunningMean(nn.Module):
    """A metric-like module keeping a tensor attribute it replaces inside forward."""

    def __init__(self):
        super().__init__()
        self.total = torch.zeros(4)

    def forward(self, x):
        self.total = self.total + x.sum(0)
        return x - self.total


@entry("stateful_tensor_attr", "building blocks", lambda s: (randn(s, 3, 4),))
def _b():
    return RunningMean()


class TryBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        try:
            y = self.fc(x).softmax(-1)
        except RuntimeError:
            y = x
        return y


@entry("ops_in_try", "building blocks", lambda s: (randn(s, 2, 8),))
def _b():
    return TryBlock()


class KeyedByTuples(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, table):
        return self.fc(x) * table[("scale", "a")] + table[("shift", "b")]


@entry("dict_tuple_keys", "building blocks", lambda s: (randn(s, 2, 4), {("scale", "a"): 2.0, ("shift", "b"): 0.5}))
def _b():
    return KeyedByTuples()


class _Registry(type):
    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        obj.tag = cls.__name__
        return obj


class Scaler(metaclass=_Registry):
    def __init__(self, k):
        self.k = k


class MetaclassCall(nn.Module):
    def forward(self, x):
        s = Scaler(3)
        return x * s.k


@entry("metaclass_call", "building blocks", lambda s: (randn(s, 2, 4),))
def _b():
    return MetaclassCall()


class SymHelpers(nn.Module):
    def forward(self, x):
        from torch.fx.experimental.symbolic_shapes import guard_or_true, guard_or_false
        if guard_or_true(x.shape[0] > 1) and not guard_or_false(x.shape[1] == 0):
            return x.sum(0)
        return x


@entry("symbolic_shape_helpers", "building blocks", lambda s: (randn(s, 3, 4),))
def _b():
    return SymHelpers()


def names() -> list[str]:
    return [e.name for e in ENTRIES]


def get(name) -> Entry:
    return next(e for e in ENTRIES if e.name == name)


from bench import zoo_ecosystem_vision  # noqa: E402,F401  (registers the torchvision and timm entries)
from bench import zoo_subclass_models  # noqa: E402,F401  (registers the tensor-subclass entries)
