"""settle_allocator: a fresh process stops giving its heap back to the system between runs (glibc only)."""

import platform
import subprocess
import sys

import pytest

# Each cycle mallocs four 3 MiB blocks, writes them, frees them. In a fresh glibc process the first
# cycle mmaps them; freeing them raises the mmap threshold to 3 MiB and the trim threshold to 6 MiB
# (mallopt(3)), so later cycles take the 12 MiB from the heap and give it back on free (12 > 6 MiB
# free at the top): 12 MiB / 4 KiB = 3,072 fresh pages, one minor fault each, per cycle. Settled
# (trim threshold 64 MiB), the heap keeps the pages and later cycles fault on none of them.
_SCRIPT = r"""
import ctypes, resource, sys
settle = sys.argv[1] == "1"
if settle:
    from dfx.measure.timing import settle_allocator
    assert settle_allocator()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
SIZE = 3 * 2**20
def cycle():
    blocks = [libc.malloc(SIZE) for _ in range(4)]
    for b in blocks:
        ctypes.memset(b, 1, SIZE)
    for b in blocks:
        libc.free(b)
cycle(); cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    cycle()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(settle: bool) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, "1" if settle else "0"], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")
def test_a_settled_process_reuses_its_heap():
    fresh, settled = _faults(False), _faults(True)
    assert fresh >= 0.9 * 10 * 3072  # ten cycles of 3,072 fresh pages each
    assert settled <= 0.1 * 10 * 3072


def test_settle_allocator_says_whether_it_set_anything():
    from dfx.measure.timing import settle_allocator

    assert settle_allocator() is (platform.libc_ver()[0] == "glibc")
