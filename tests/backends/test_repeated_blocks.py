"""Repeated blocks compiled once (backends/passes/repeated_blocks.py, backends/same_graphs.py).

A model looping over N identical layers is one graph; inductor's pipeline cuts it at the layers and
compiles each distinct layer once. Differential: eager and compiled copies of one model, on the same
inputs and random seed, must give the same outputs, input and parameter gradients, buffers (BatchNorm's
running statistics) and generator state afterwards. Most cases run the inductor pipeline's passes with
AOT autograd's eager compiler as its last step (`BLOCKS_AOT`: the same cutting and sharing, seconds
instead of minutes); the compile counts and one differential case run real inductor.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import framejit
from framejit.backends import inductor as inductor_backend
from framejit.backends.aot import compile_aot
from framejit.backends.passes import repeated_blocks
from framejit.backends.pipeline import INDUCTOR_PASSES, compile_through
from framejit.backends.same_graphs import SharedCompiles


@pytest.fixture(autouse=True)
def compiled_at_the_first_call(monkeypatch):
    """These tests count and inspect what reached the compiler after the calls: the first call waits for the
    compile (by default a static graph compiles behind its first call: backends/compile_behind.py)."""
    monkeypatch.setenv("FRAMEJIT_COMPILE_BEHIND", "0")


class CountingCompiles:
    """A backend: the inductor pipeline's passes, then AOT autograd's eager compiler, compiled once per
    structure; `compiled` holds the graphs that reached the compiler, `plans` what the cutting pass made."""

    def __init__(self):
        self.compiled = []

    def compile(self, gm, inputs):
        self.compiled.append(gm)
        return compile_aot(gm, inputs)

    def __call__(self, gm, example_inputs):
        return compile_through(INDUCTOR_PASSES, SharedCompiles(self.compile), gm, example_inputs)


class Block(nn.Module):
    def __init__(self, width=32, dropout=0.0):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up, self.down = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return x + self.dropout(self.down(F.gelu(self.up(self.norm(x))))) * 0.5


class AutocastBlock(Block):
    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = self.up(self.norm(x))
        return x + self.down(F.gelu(y.float())) * 0.5


class NormBlock(nn.Module):
    """A residual conv block with BatchNorm (running statistics written in training mode)."""

    def __init__(self, c=4):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class WritesInput(Block):
    def forward(self, x):
        y = self.down(F.gelu(self.up(self.norm(x.clone()))))
        x.mul_(0.5)                       # the block writes its input in place
        return x + y


class ReturnsView(Block):
    def forward(self, x):
        h = self.down(F.gelu(self.up(self.norm(x))))
        return x.view(-1), h              # (a view of its input among its outputs)


class Stack(nn.Module):
    def __init__(self, blocks, width=32, head=3):
        super().__init__()
        self.embed = nn.Linear(8, width)
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(blocks[-1].down.out_features if hasattr(blocks[-1], "down") else width, head)

    def forward(self, x):
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h).tanh()


class ViewStack(Stack):
    def forward(self, x):
        h = self.embed(x)
        for block in self.blocks:
            v, h2 = block(h)
            h = v.view_as(h2) * 1.0 + h2
        return self.head(h)


class ConvStack(nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.blocks = nn.Sequential(*[NormBlock() for _ in range(n)])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def differential(model, x, backend, train=True, atol=1e-5):
    """Eager and compiled copies of `model` on copies of `x` under one seed: outputs, gradients of the
    input and of every parameter, buffers and the generator state afterwards must agree."""
    model.train(train)
    eager_model, compiled_model = copy.deepcopy(model), copy.deepcopy(model)
    compiled = framejit.compile(compiled_model, backend=backend)
    results = []
    for m in (eager_model, compiled):
        torch.manual_seed(7)
        xi = x.clone().requires_grad_(x.is_floating_point())
        out = m(xi)
        out.float().sum().backward()
        results.append((out.detach(), xi.grad, torch.get_rng_state()))
    (out_e, gx_e, rng_e), (out_c, gx_c, rng_c) = results
    torch.testing.assert_close(out_c, out_e, atol=atol, rtol=1e-4)
    if gx_e is not None:
        torch.testing.assert_close(gx_c, gx_e, atol=atol, rtol=1e-4)
    assert torch.equal(rng_c, rng_e), "the compiled call drew other random numbers"
    for (name, p_e), p_c in zip(eager_model.named_parameters(), compiled_model.parameters()):
        assert (p_e.grad is None) == (p_c.grad is None), name
        if p_e.grad is not None:
            torch.testing.assert_close(p_c.grad, p_e.grad, atol=atol, rtol=1e-4, msg=name)
    for (name, b_e), b_c in zip(eager_model.named_buffers(), compiled_model.buffers()):
        torch.testing.assert_close(b_c, b_e, atol=atol, rtol=1e-4, msg=name)


def _block_pieces(backend, block_class):
    """How many compiled graphs computed a `block_class` block."""
    return sum(1 for gm in backend.compiled
               if any(block_class in {call[1] for call in n.meta.get(repeated_blocks.MODULE_CALLS, ())}
                      for n in gm.graph.nodes if n.op == "call_function"))


@pytest.fixture(autouse=True)
def _reset():
    framejit.reset()
    yield
    framejit.reset()


def test_identical_blocks_are_compiled_once():
    torch.manual_seed(0)
    backend = CountingCompiles()
    differential(Stack([Block() for _ in range(5)]), torch.randn(6, 8), backend)
    # the embedding piece, one block (for all 5) and the head piece
    assert len(backend.compiled) == 3
    assert _block_pieces(backend, Block) == 1


def test_blocks_that_differ_are_compiled_apart():
    torch.manual_seed(0)
    backend = CountingCompiles()
    blocks = [Block(32), Block(32), Block(32), Block(32, dropout=0.0), AutocastBlock(32)]
    blocks[3].up = nn.Linear(32, 48)          # another shape inside the same class
    blocks[3].down = nn.Linear(48, 32)
    differential(Stack(blocks), torch.randn(6, 8), backend, atol=2e-2)
    # the three equal Blocks share one compile; the odd one is compiled in the piece after them
    assert _block_pieces(backend, Block) == 2
    shapes = {tuple(n.meta["example_value"].shape) for gm in backend.compiled for n in gm.graph.nodes
              if n.op == "placeholder" and hasattr(n.meta.get("example_value"), "shape")}
    assert (48, 32) in shapes                  # the odd one compiled on its own


def test_dropout_inside_blocks_draws_eagers_numbers():
    torch.manual_seed(0)
    backend = CountingCompiles()
    differential(Stack([Block(dropout=0.3) for _ in range(4)]), torch.randn(6, 8), backend)
    assert len(backend.compiled) == 3 and _block_pieces(backend, Block) == 1


def test_autocast_inside_blocks():
    torch.manual_seed(0)
    differential(Stack([AutocastBlock() for _ in range(3)]), torch.randn(6, 8), CountingCompiles(), atol=2e-2)


@pytest.mark.parametrize("train", [True, False])
def test_batchnorm_blocks(train):
    torch.manual_seed(0)
    backend = CountingCompiles()
    differential(ConvStack(), torch.randn(2, 3, 6, 6), backend, train=train, atol=1e-4)
    if not train:                              # running statistics are only read: one compile for 3 blocks
        assert len(backend.compiled) == 3 and _block_pieces(backend, NormBlock) == 1


def test_a_block_writing_its_input_stays_in_place():
    torch.manual_seed(0)
    backend = CountingCompiles()
    differential(Stack([WritesInput() for _ in range(3)]), torch.randn(6, 8), backend)
    assert len(backend.compiled) == 1          # one graph: the blocks are not cut out


def test_a_block_returning_a_view_of_its_input_stays_in_place():
    torch.manual_seed(0)
    backend = CountingCompiles()
    differential(ViewStack([ReturnsView() for _ in range(3)]), torch.randn(6, 8), backend)
    assert len(backend.compiled) == 1          # one graph: the blocks are not cut out


def test_no_grad_call():
    torch.manual_seed(0)
    model, x = Stack([Block() for _ in range(4)]).eval(), torch.randn(6, 8)
    compiled = framejit.compile(copy.deepcopy(model), backend=CountingCompiles())
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))


def test_gpt2_layers_from_transformers():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=3, n_embd=32, n_head=2, n_positions=32, vocab_size=64,
                                     resid_pdrop=0.1, embd_pdrop=0.0, attn_pdrop=0.1)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, 64, (2, 10))

    class Logits(nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, ids):
            return self.lm(ids, use_cache=False).logits
    backend = CountingCompiles()
    differential(Logits(model), ids, backend, atol=1e-4)
    block = transformers.models.gpt2.modeling_gpt2.GPT2Block
    assert len(backend.compiled) == 3 and _block_pieces(backend, block) == 1


def test_inductor_compiles_the_block_once(monkeypatch):
    """Real inductor: 2 and 6 identical blocks take the same three compiles, and match eager."""
    counts = []
    real = inductor_backend.compile_with_caches

    def counting(*args, **kwargs):
        counts[-1] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(inductor_backend, "compile_with_caches", counting)
    monkeypatch.setenv(inductor_backend.REPEATED_BLOCKS_ENV, "1")      # opt-in (backends/inductor.py)
    for n in (2, 6):
        counts.append(0)
        framejit.reset()
        torch.manual_seed(0)
        differential(Stack([Block(16) for _ in range(n)], width=16), torch.randn(4, 8), "inductor", atol=1e-4)
    assert counts == [3, 3]
