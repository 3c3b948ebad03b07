"""The gradient buckets of a DistributedDataParallel model, as its reducer forms them.

DDP all-reduces gradients bucket by bucket: a bucket's all-reduce starts as soon as autograd has
produced every gradient in it. Its reducer puts the parameters in reverse registration order (backward
produces the last layer's gradients first) and cuts a bucket when it reaches the size cap: a small first
bucket (`first_bucket_bytes_cap`, 1 MiB by default) so the first all-reduce starts early, then
`bucket_cap_mb` each. Parameters DDP ignores (`_ddp_params_and_buffers_to_ignore`, frozen ones) are in
no bucket. (DDP starts with a single bucket and rebuilds these after the first backward, from the order
gradients became ready; for a forward that uses parameters in registration order they are these.)

A compiled graph is cut at the same boundaries (ddp_split.py), so the backward of each piece finishes
its bucket's gradients, and the bucket's all-reduce overlaps the backward of the pieces before it.
"""
import torch
import torch.distributed as dist


def reducer_parameters(ddp):
    """The parameters DDP's reducer manages, in its order: module by module (named_modules), each
    module's own parameters that require grad and are not ignored, each parameter once."""
    ignored = getattr(ddp, "parameters_to_ignore", set())
    seen, params, sparse = set(), [], []
    for module_name, module in ddp.module.named_modules():
        for param_name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or f"{module_name}.{param_name}" in ignored or param in seen:
                continue         # (DDP names a root parameter ".name": the same spelling is ignored)
            seen.add(param)
            params.append(param)
            sparse.append(isinstance(module, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and module.sparse)
    return params, sparse


def bucket_limits(ddp):
    """The size caps in bytes, first bucket first: DDP's per-bucket caps if the user gave them, else the
    first-bucket cap then `bucket_cap_mb`."""
    config = getattr(ddp, "_bucket_config", None)
    if config is not None:
        if getattr(config, "per_bucket_bytes_caps", ()):
            return list(config.per_bucket_bytes_caps)
        return [config.first_bucket_bytes_cap, config.bucket_bytes_cap]
    cap = ddp.bucket_bytes_cap
    return [min(dist._DEFAULT_FIRST_BUCKET_BYTES, cap), cap]


def ddp_buckets(ddp):
    """[[param, ...], ...]: DDP's gradient buckets in the order their all-reduces start (bucket 0 holds
    the parameters registered last)."""
    params, sparse = reducer_parameters(ddp)
    if not params:
        return []
    backward_order = params[::-1]
    indices, _ = dist._compute_bucket_assignment_by_size(backward_order, bucket_limits(ddp), sparse[::-1])
    return [[backward_order[i] for i in bucket] for bucket in indices]
