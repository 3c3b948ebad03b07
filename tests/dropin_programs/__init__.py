"""Programs written for torch.compile, as its tutorials write them. tests/test_dropin.py runs each with
`torch.compile` replaced by `framejit.compile` in its source text (nothing else changed) and compares
what its `main()` returns with the same program run eagerly (torch.compile replaced by a no-op)."""
