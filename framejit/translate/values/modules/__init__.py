"""nn.Module instances as values: attribute reads through nn.Module's own rules, containers and
introspection, a module class's own __len__ / __getitem__ / __contains__, and modules built in forward.
"""
