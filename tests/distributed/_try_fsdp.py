import sys, time
from tests.distributed.launch import run_ranks
from tests.distributed.fsdp_workers import fsdp_against_eager
if __name__ == "__main__":
    t = time.time()
    for mode in sys.argv[1:]:
        r = run_ranks(fsdp_against_eager, mode)
        for x in r: print(mode, x)
    print(time.time() - t)
