"""How long the driver takes to map a large device array: what a device result costs when the memory
pool holds no free block of its size.

``cupy.empty`` and a bare ``cudaMalloc`` of ``--bytes`` (default: the float32 n x n result of
luxembourg_osm, 52.5 GB), each followed by a first fill; then the driver's virtual memory API
(``cuMemAddressReserve`` / ``cuMemCreate`` / ``cuMemMap`` / ``cuMemSetAccess`` through ctypes) with the
range created and mapped in 1 to 128 pieces from 1 to 16 threads, to see whether mapping in parallel
pays.  One JSON record (``--tag``, default ``device-allocation``).

    python benchmarks/device_allocation_bench.py --tag library/h100-a7ce9f5
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, write_result  # noqa: E402

_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_READWRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class Driver:
    """The few driver calls of the virtual memory API, on device ``device``."""

    def __init__(self, device: int) -> None:
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self.device = device
        self.prop = _Prop()
        self.prop.type, self.prop.location = _PINNED, _Location(_DEVICE, device)
        granularity = ctypes.c_size_t()
        self.check(self.cuda.cuMemGetAllocationGranularity(ctypes.byref(granularity), ctypes.byref(self.prop),
                                                           ctypes.c_int(1)), "cuMemGetAllocationGranularity")
        self.granularity = granularity.value

    @staticmethod
    def check(result: int, what: str) -> None:
        if result != 0:
            raise RuntimeError(f"{what}: CUresult {result}")

    def map(self, nbytes: int, pieces: int, threads: int):
        """Reserve, create and map ``nbytes`` (rounded up) in ``pieces``; (seconds, base, size, handles)."""
        c, u64, size_t = self.cuda, ctypes.c_ulonglong, ctypes.c_size_t
        unit = self.granularity * pieces
        size = -(-nbytes // unit) * unit
        per = size // pieces
        start = time.perf_counter()
        base = u64()
        self.check(c.cuMemAddressReserve(ctypes.byref(base), size_t(size), size_t(0), u64(0), u64(0)),
                   "cuMemAddressReserve")
        handles = [None] * pieces
        access = _Access(_Location(_DEVICE, self.device), _READWRITE)

        def one(i):
            handle = u64()
            self.check(c.cuMemCreate(ctypes.byref(handle), size_t(per), ctypes.byref(self.prop), u64(0)), "cuMemCreate")
            self.check(c.cuMemMap(u64(base.value + i * per), size_t(per), size_t(0), handle, u64(0)), "cuMemMap")
            self.check(c.cuMemSetAccess(u64(base.value + i * per), size_t(per), ctypes.byref(access), size_t(1)),
                       "cuMemSetAccess")
            handles[i] = handle

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(pieces)))
        return time.perf_counter() - start, base.value, size, handles

    def unmap(self, base: int, size: int, handles) -> None:
        c, u64, size_t = self.cuda, ctypes.c_ulonglong, ctypes.c_size_t
        per = size // len(handles)
        for i, handle in enumerate(handles):
            self.check(c.cuMemUnmap(u64(base + i * per), size_t(per)), "cuMemUnmap")
            self.check(c.cuMemRelease(handle), "cuMemRelease")
        self.check(c.cuMemAddressFree(u64(base), size_t(size)), "cuMemAddressFree")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=114_599 * 114_599 * 4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tag", default="device-allocation")
    args = parser.parse_args()

    import cupy as cp

    cp.zeros(1)  # the context
    sync = cp.cuda.Device().synchronize
    pool = cp.get_default_memory_pool()
    results = []
    for _ in range(args.repeat + 1):  # the first may find the block in the pool
        pool.free_all_blocks()
        t0 = time.perf_counter()
        a = cp.empty(args.bytes // 4, dtype=cp.float32)
        sync()
        t1 = time.perf_counter()
        a.fill(0)
        sync()
        t2 = time.perf_counter()
        del a
        pool.free_all_blocks()
        results.append({"way": "cupy.empty", "map_seconds": t1 - t0, "first_fill_seconds": t2 - t1})
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        ptr = cp.cuda.runtime.malloc(args.bytes)
        t1 = time.perf_counter()
        cp.cuda.runtime.free(ptr)
        results.append({"way": "cudaMalloc", "map_seconds": t1 - t0})
    driver = Driver(cp.cuda.Device().id)
    for pieces, threads in [(1, 1), (8, 1), (8, 8), (32, 8), (32, 16), (64, 16), (128, 16)]:
        for _ in range(args.repeat):
            seconds, base, size, handles = driver.map(args.bytes, pieces, threads)
            t0 = time.perf_counter()
            driver.check(driver.cuda.cuMemsetD8_v2(ctypes.c_ulonglong(base), ctypes.c_ubyte(0), ctypes.c_size_t(size)),
                         "cuMemsetD8")
            sync()
            fill = time.perf_counter() - t0
            driver.unmap(base, size, handles)
            results.append({"way": "virtual memory API", "pieces": pieces, "threads": threads,
                            "map_seconds": seconds, "first_fill_seconds": fill})
    for item in results:
        where = f" {item['pieces']:4d} pieces, {item['threads']:2d} threads" if "pieces" in item else ""
        print(f"{item['way']}{where}: map {item['map_seconds']:.3f} s")
    record = {"benchmark": "device_allocation_bench", "bytes": args.bytes, "granularity": driver.granularity,
              "results": results}
    write_result(record, folder=RESULTS / args.tag, name="device-allocation.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
