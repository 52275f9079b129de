# torch: a stand-in for PyTorch in test-gpu-host.sh's rehearsal of
# `bench/gpu-host.sh run` without a GPU.  "The GPU" is the file FAKE_GPU (a
# device the rehearsal's /proc/devices names nvidia), opened by the first
# CUDA tensor and kept; opening it, each product, wait and cache release is
# one ioctl on it, a product about a millisecond; FAKE_TORCH_LIB (a libtorch_cpu.so) is
# mapped, as PyTorch maps its own.  Test processes only.
import ctypes
import fcntl
import os
import termios
import time

__version__ = "0.0+stand-in"
_gpu_fd = None


def _gpu():
    global _gpu_fd
    if _gpu_fd is None:
        ctypes.CDLL(os.environ["FAKE_TORCH_LIB"])
        _gpu_fd = os.open(os.environ["FAKE_GPU"], os.O_RDWR)
        _ioctl()  # as CUDA's initialisation does at once
    return _gpu_fd


def _ioctl():
    try:
        fcntl.ioctl(_gpu(), termios.TCGETS, bytes(64))
    except OSError:
        pass  # the stand-in refuses it; the probe has counted it


class Tensor:
    def __matmul__(self, other):
        time.sleep(0.001)
        _ioctl()
        return Tensor()


def zeros(*shape, device=None):
    _gpu()
    return Tensor()


randn = zeros


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def synchronize():
        _ioctl()

    @staticmethod
    def empty_cache():
        _ioctl()

    @staticmethod
    def get_device_name(index=0):
        return "stand-in GPU (%s)" % os.environ.get("FAKE_GPU")
