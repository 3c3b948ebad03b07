"""Rank functions of the FSDP2 tests (run by launch.run_ranks in spawned processes)."""
import copy

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor

import framejit


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.up = torch.nn.Linear(width, 2 * width)
        self.down = torch.nn.Linear(2 * width, width)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Net(torch.nn.Module):
    def __init__(self, width=16, depth=3):
        super().__init__()
        self.embed = torch.nn.Linear(8, width)
        self.blocks = torch.nn.ModuleList(Block(width) for _ in range(depth))
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x):
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h).pow(2).mean()


class Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self, gm, example_inputs):
        self.calls += 1
        return gm.forward


def _shard(model):
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    return model


def _structure(model):
    """What FSDP made of the model: which modules are FSDP modules, the root, the states it manages."""
    names = {m: n for n, m in model.named_modules()}
    root_state = model._get_fsdp_state()
    states = root_state._state_ctx.all_states
    return {"fsdp": [n for m, n in names.items() if isinstance(m, FSDPModule)],
            "root": [n for m, n in names.items() if isinstance(m, FSDPModule) and m._get_fsdp_state()._is_root],
            "states": [names[s._modules[0]] if len(s._modules) == 1 else "?" for s in states]}


def _sharded_after_forward(model):
    return {n: isinstance(p, DTensor) for n, p in model.named_parameters()}


class _Events:
    """The order in which FSDP unshards and reshards its parameter groups (spied on FSDP's class)."""

    def __init__(self):
        from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPParamGroup
        self.cls = FSDPParamGroup
        self.log = []
        self.saved = {k: getattr(FSDPParamGroup, k) for k in ("unshard", "reshard", "pre_backward", "post_backward")}
        for kind, original in self.saved.items():
            setattr(FSDPParamGroup, kind, self._spy(kind, original))

    def _spy(self, kind, original):
        log = self.log

        def spy(group, *args, **kwargs):
            log.append((kind, tuple(p._param_fqn for p in group.fsdp_params)))
            return original(group, *args, **kwargs)
        return spy

    def close(self):
        for kind, original in self.saved.items():
            setattr(self.cls, kind, original)


def _data(rank, step):
    g = torch.Generator().manual_seed(100 * step + rank)
    return torch.randn(4, 8, generator=g)


def fsdp_against_eager(rank, world_size, mode, steps=3):
    """Eager FSDP2 and FSDP2 with framejit (`mode`: "blocks" = each block compiled in place after
    fully_shard, "root" = the root compiled in place) trained side by side."""
    torch.manual_seed(0)
    base = Net()
    eager = _shard(copy.deepcopy(base))
    model = _shard(copy.deepcopy(base))
    counting = Counting()
    if mode == "blocks":
        for block in model.blocks:
            assert framejit.compile(block, inplace=True, backend=counting) is block
    else:
        assert framejit.compile(model, inplace=True, backend=counting) is model
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in (eager, model)]
    diffs, calls, events, after_forward = [], [], [], []
    for step in range(steps):
        x = _data(rank, step)
        losses = []
        for which, (m, opt) in enumerate(zip((eager, model), opts)):
            spy = _Events()
            try:
                opt.zero_grad()
                loss = m(x)
                after_forward.append((step, which, _sharded_after_forward(m)))
                loss.backward()
            finally:
                spy.close()
            events.append(spy.log)
            losses.append(loss.detach())
        if not torch.allclose(losses[0], losses[1], atol=1e-6):
            diffs.append(f"step {step}: loss {losses[0].item()} vs {losses[1].item()}")
        for (name, p), q in zip(eager.named_parameters(), model.parameters()):
            a, b = p.grad.full_tensor(), q.grad.full_tensor()
            if not torch.allclose(a, b, atol=1e-6):
                diffs.append(f"step {step}: grad of {name}")
        for opt in opts:
            opt.step()
        for (name, p), q in zip(eager.named_parameters(), model.parameters()):
            if not torch.allclose(p.full_tensor(), q.full_tensor(), atol=1e-6):
                diffs.append(f"step {step}: parameter {name}")
        calls.append(counting.calls)
    hook_diffs = [f"step {i // 2}: {events[i]} vs {events[i + 1]}" for i in range(0, len(events), 2)
                  if events[i] != events[i + 1]]
    forward_diffs = [s for (s, w, a), (_, _, b) in zip(after_forward[::2], after_forward[1::2]) if a != b]
    return {"diffs": diffs, "calls": calls, "hook_diffs": hook_diffs, "forward_diffs": forward_diffs,
            "structure": (_structure(eager), _structure(model)), "events": events[1][:6],
            "forward_keeps_object": all("forward" in b.__dict__ for b in model.blocks) if mode == "blocks" else True}


class Reordered(Net):
    """Calls its blocks in an order that depends on the rank: rank 1 runs the last two swapped."""

    def forward(self, x):
        h = self.embed(x)
        order = [0, 1, 2] if dist.get_rank() == 0 else [0, 2, 1]
        for i in order:
            h = self.blocks[i](h)
        return self.head(h).pow(2).mean()


def prefetch_and_order_check(rank, world_size):
    """prefetch_plan on an FSDP2 model (blocks compiled in place): the plan follows the forward order,
    FSDP holds it, training still matches eager; then a model whose order differs by rank is caught."""
    from framejit.distributed import prefetch_plan
    from framejit.distributed.prefetch import ForwardOrderMismatch
    torch.manual_seed(0)
    base = Net()
    eager = _shard(copy.deepcopy(base))
    model = _shard(copy.deepcopy(base))
    for block in model.blocks:
        framejit.compile(block, inplace=True)
    x = _data(rank, 0)
    plan = prefetch_plan(model, x)
    state_name = {m._get_fsdp_state(): n for n, m in model.named_modules() if isinstance(m, FSDPModule)}
    held = {n: [state_name[t] for t in s._states_to_forward_prefetch] for s, n in state_name.items()
            if s._states_to_forward_prefetch}
    held_backward = {n: [state_name[t] for t in s._states_to_backward_prefetch] for s, n in state_name.items()
                     if s._states_to_backward_prefetch}
    losses = []
    for m in (eager, model):
        loss = m(x)
        loss.backward()
        losses.append(loss.item())
    grads_equal = all(torch.allclose(p.grad.full_tensor(), q.grad.full_tensor(), atol=1e-6)
                      for p, q in zip(eager.parameters(), model.parameters()))
    reordered = _shard(Reordered())
    try:
        prefetch_plan(reordered, x)
        message = None
    except ForwardOrderMismatch as e:
        message = str(e)
    return {"order": plan.order, "forward": plan.forward, "backward": plan.backward, "held": held,
            "held_backward": held_backward, "losses": losses, "grads_equal": grads_equal, "mismatch": message,
            "inplace_kept": all("forward" in b.__dict__ for b in model.blocks)}
