"""framejit under torch.distributed: what a compiled program needs to know about the process group's
wrappers, computed per rank from torch.distributed's own state (framejit never communicates itself).

  ddp_buckets     the gradient buckets DistributedDataParallel's reducer forms for a model
  ddp_split       a captured graph cut at those buckets, one backend call per piece (DDPOptimizer's idea)
  exec_order      the forward execution order of modules and parameters: through a torch.fx tracer, or
                  read from framejit's own capture (models fx cannot trace)
  prefetch        FSDP2 prefetching set from that order, and the cross-rank check of the order
"""
from .exec_order import ExecutionInfo, TracingConfig, execution_order
from .prefetch import check_same_forward_order, prefetch_plan
from .ddp_buckets import ddp_buckets

__all__ = ["TracingConfig", "ExecutionInfo", "execution_order", "prefetch_plan", "check_same_forward_order",
           "ddp_buckets"]
