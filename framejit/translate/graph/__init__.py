"""The torch.fx graph one conversion records, with fake-tensor metadata and the capture-time caches.

Imports values/ and the leaves.
"""
