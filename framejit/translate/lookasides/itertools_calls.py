"""itertools' functions called in the frame: each makes the lazy iterator kind that models it
(values/iterators/itertools_kinds.py).
"""
import itertools

from ..dispatch import LOOKASIDES
from ..values.iterators import itertools_kinds

ITERTOOLS_KINDS = {
    itertools.product: itertools_kinds.product_lookaside,
    itertools.combinations: itertools_kinds.combinations_lookaside,
    itertools.combinations_with_replacement: itertools_kinds.combinations_wr_lookaside,
    itertools.permutations: itertools_kinds.permutations_lookaside,
    itertools.chain: itertools_kinds.chain_lookaside,
    itertools.chain.from_iterable: itertools_kinds.chain_from_iterable_lookaside,
    itertools.zip_longest: itertools_kinds.zip_longest_lookaside,
    itertools.islice: itertools_kinds.islice_lookaside,
    itertools.accumulate: itertools_kinds.accumulate_lookaside,
    itertools.repeat: itertools_kinds.repeat_lookaside,
    itertools.count: itertools_kinds.count_lookaside,
    itertools.cycle: itertools_kinds.cycle_lookaside,
    itertools.starmap: itertools_kinds.starmap_lookaside,
    itertools.pairwise: itertools_kinds.pairwise_lookaside,
    itertools.takewhile: itertools_kinds.takewhile_lookaside,
    itertools.dropwhile: itertools_kinds.dropwhile_lookaside,
    itertools.filterfalse: itertools_kinds.filterfalse_lookaside,
    itertools.compress: itertools_kinds.compress_lookaside,
    itertools.groupby: itertools_kinds.groupby_lookaside,
}
LOOKASIDES.update(ITERTOOLS_KINDS)
