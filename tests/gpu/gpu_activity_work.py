#!/usr/bin/env python3
"""gpu_activity_work.py: one workload of gpu-activity.sh on GPU 0, warmed up
for WARM_S seconds, then "ready" on stdout and on until killed.

  gpu_activity_work.py context|matmul|graphs|blocking|managed|prefetch|smi WARM_S

blocking sets CU_CTX_SCHED_BLOCKING_SYNC on the primary context through the
driver API (libcuda.so.1, which the driver always installs) before PyTorch
makes it; managed and prefetch allocate with cuMemAllocManaged and hand the
memory to PyTorch through __cuda_array_interface__."""
import ctypes
import sys
import time

N = 4096
CU_CTX_SCHED_BLOCKING_SYNC = 0x04
CU_MEM_ATTACH_GLOBAL = 0x1
CU_DEVICE_CPU = -1


def cuda_driver():
    cu = ctypes.CDLL('libcuda.so.1')
    if cu.cuInit(0) != 0:
        raise SystemExit('cuInit failed')
    return cu


def blocking_sync():
    cu = cuda_driver()
    dev = ctypes.c_int()
    if cu.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        raise SystemExit('cuDeviceGet failed')
    r = cu.cuDevicePrimaryCtxSetFlags_v2(dev, CU_CTX_SCHED_BLOCKING_SYNC)
    if r != 0:
        raise SystemExit('cuDevicePrimaryCtxSetFlags: %d' % r)


def step_train(torch, a, b):
    y = (a @ b).relu().sum()
    y.backward()
    a.grad = None
    b.grad = None


def run_for(seconds, fn):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        fn()


class Managed:
    """nbytes of managed memory as a float32 tensor (its __cuda_array_interface__)."""

    def __init__(self, cu, nbytes):
        self.cu, self.nbytes, self.ptr = cu, nbytes, ctypes.c_uint64()
        r = cu.cuMemAllocManaged(ctypes.byref(self.ptr), ctypes.c_size_t(nbytes),
                                 CU_MEM_ATTACH_GLOBAL)
        if r != 0:
            raise SystemExit('cuMemAllocManaged: %d' % r)
        self.__cuda_array_interface__ = {'shape': (nbytes // 4,), 'typestr': '<f4',
                                         'data': (self.ptr.value, False), 'version': 3}

    def prefetch(self, device):
        r = self.cu.cuMemPrefetchAsync(ctypes.c_uint64(self.ptr.value),
                                       ctypes.c_size_t(self.nbytes), ctypes.c_int(device),
                                       ctypes.c_void_p(0))
        if r != 0:
            raise SystemExit('cuMemPrefetchAsync: %d' % r)


def managed(torch, prefetch):
    cu = cuda_driver()
    torch.zeros(1, device='cuda')  # the primary context, made by PyTorch
    mem = Managed(cu, 256 << 20)
    t = torch.as_tensor(mem, device='cuda')

    def step():
        if prefetch:
            mem.prefetch(CU_DEVICE_CPU)
            torch.cuda.synchronize()
        ctypes.memset(mem.ptr.value, 0, mem.nbytes)  # the CPU writes: pages come back
        if prefetch:
            mem.prefetch(0)
        t.mul_(1.0001).add_(1.0)  # the GPU touches every page
        torch.cuda.synchronize()
    return step


def main():
    kind, warm_s = sys.argv[1], float(sys.argv[2])
    if kind == 'blocking':
        blocking_sync()
    import torch
    dev = torch.device('cuda:0')
    a = torch.randn(N, N, device=dev, requires_grad=True)
    b = torch.randn(N, N, device=dev, requires_grad=True)
    if kind in ('context', 'smi'):
        torch.cuda.synchronize()
        print('ready', flush=True)
        while True:
            time.sleep(3600)
    if kind in ('matmul', 'blocking'):
        def step():
            step_train(torch, a, b)
            torch.cuda.synchronize()
    elif kind == 'graphs':
        x = torch.randn(N, N, device=dev)
        w = torch.randn(N, N, device=dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                y = (x @ w).relu() @ w
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = (x @ w).relu() @ w

        def step():
            g.replay()
            torch.cuda.synchronize()
    else:
        step = managed(torch, kind == 'prefetch')
    run_for(warm_s, step)
    print('ready', flush=True)
    while True:
        step()


if __name__ == '__main__':
    main()
