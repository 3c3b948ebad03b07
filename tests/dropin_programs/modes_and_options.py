"""mode= and options= as torch.compile's docs show them (inductor underneath)."""
import torch


def gelu_mlp(x, w1, w2):
    return torch.nn.functional.gelu(x @ w1) @ w2


@torch.compile(options={"fallback_random": True})
def noisy(x):
    return torch.nn.functional.dropout(x, 0.5) + x.sin()


def main():
    torch.manual_seed(0)
    fast = torch.compile(gelu_mlp, mode="reduce-overhead")
    x, w1, w2 = torch.randn(4, 8), torch.randn(8, 16), torch.randn(16, 8)
    out = fast(x, w1, w2)
    torch.manual_seed(1)
    y = noisy(torch.randn(6))
    return {"mlp": out, "noisy_shape": torch.tensor(y.shape)}
