"""placeholder"""
def prefetch_plan(*a, **k): raise NotImplementedError
def check_same_forward_order(*a, **k): raise NotImplementedError
