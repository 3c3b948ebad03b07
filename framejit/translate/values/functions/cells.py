"""Closure cells as symbolic values.

A CellValue stands for one cell: a real cell from a closure (its contents wrapped lazily, from a Source,
writes recorded as side effects) or a cell created inside the translated code (MAKE_CELL of a local
captured by a nested function or lambda).
"""
from ....errors import GraphBreak
from ...source import AttrSource
from ..base import Value
from ..protocol import wrap_unsourced

EMPTY = object()


class CellValue(Value):
    __slots__ = ("contents", "real", "contents_source")

    def __init__(self, contents=EMPTY, real=None, contents_source=None):
        super().__init__(None)
        self.contents = contents
        self.real = real                      # the real cell object, if any
        self.contents_source = contents_source

    def get(self, tx, name):
        if self.contents is EMPTY and self.real is not None:
            try:
                obj = self.real.cell_contents
            except ValueError:
                raise GraphBreak("name error", f"free variable {name!r} referenced before assignment")
            if self.contents_source is not None:
                self.contents = tx.ctx.wrap(obj, self.contents_source)
            else:
                self.contents = wrap_unsourced(obj)
        if self.contents is EMPTY:
            raise GraphBreak("name error", f"free variable {name!r} referenced before assignment")
        return self.contents

    def set(self, tx, value):
        self.contents = value
        if self.real is not None:
            if self.contents_source is None:
                raise GraphBreak("cell write", "write to a closure cell that framejit cannot reach")
            tx.ctx.side_effects.store_cell(self.contents_source, value)

    def python_type(self):
        return type((lambda: self).__closure__[0])


def real_cell_contents_source(cell_source):
    return AttrSource(cell_source, "cell_contents") if cell_source is not None else None
