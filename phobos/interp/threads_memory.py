"""Memory of the threads interpreter: global memory as byte arrays at fake 64-bit
addresses, and the byte-level loads and stores every space shares.

`GlobalMemory` places numpy arrays at 256-byte-aligned addresses with unmapped gaps
between them, so a `u64` pointer parameter holds an address and an access past a buffer
or between buffers is caught (a memcheck on the CPU):

    >>> import numpy as np
    >>> mem = GlobalMemory()
    >>> x = mem.place(np.arange(4, dtype=np.float32), "x")
    >>> hex(x), mem.read(x).tolist()
    ('0x7f0000000000', [0.0, 1.0, 2.0, 3.0])
    >>> y = mem.alloc(8, "y")
    >>> y - x >= 16 + GlobalMemory.GAP
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Buffer:
    """One allocation: `data` (uint8) at `address`; `dtype`/`shape` of what was placed."""

    name: str
    address: int
    data: np.ndarray
    dtype: np.dtype
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(self.data.size)


class GlobalMemory:
    """The device's global memory: buffers at fake addresses, byte arrays underneath.

    `place` copies an array in and returns its address (what a pointer parameter takes),
    `alloc` reserves zeroed bytes, `read` copies a buffer back out (as the array placed,
    or as `dtype`/`shape`), `write` copies an array into a buffer.
    """

    BASE = 0x7F00_0000_0000
    ALIGN = 256
    GAP = 1 << 16  # unmapped bytes after every buffer

    def __init__(self):
        self.buffers: list[Buffer] = []
        self._next = self.BASE
        self._starts = np.zeros(0, np.uint64)
        self._ends = np.zeros(0, np.uint64)

    def alloc(self, nbytes: int, name: str | None = None, *, dtype=np.uint8, shape=None) -> int:
        """Reserve `nbytes` zeroed bytes; returns the address."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        address = self._next
        name = name or f"buffer{len(self.buffers)}"
        dtype = np.dtype(dtype)
        shape = (nbytes // max(dtype.itemsize, 1),) if shape is None else tuple(shape)
        self.buffers.append(Buffer(name, address, np.zeros(nbytes, np.uint8), dtype, shape))
        span = -(-max(nbytes, 1) // self.ALIGN) * self.ALIGN
        self._next = address + span + self.GAP
        self._starts = np.append(self._starts, np.uint64(address))
        self._ends = np.append(self._ends, np.uint64(address + nbytes))
        return address

    def place(self, array, name: str | None = None) -> int:
        """Copy `array` (C order) into a new buffer; returns its address."""
        array = np.ascontiguousarray(array)
        address = self.alloc(array.nbytes, name, dtype=array.dtype, shape=array.shape)
        self.buffers[-1].data[:] = array.reshape(-1).view(np.uint8)
        return address

    def buffer(self, address: int) -> Buffer:
        """The buffer starting at `address`."""
        for buf in self.buffers:
            if buf.address == address:
                return buf
        raise KeyError(f"no buffer starts at {address:#x}")

    def read(self, address: int, dtype=None, shape=None) -> np.ndarray:
        """A copy of the buffer at `address`, as the array placed there (or `dtype`/`shape`)."""
        buf = self.buffer(address)
        dtype = buf.dtype if dtype is None else np.dtype(dtype)
        out = buf.data.view(dtype).copy()
        return out.reshape(buf.shape if shape is None and dtype == buf.dtype else (shape or -1))

    def write(self, address: int, array) -> None:
        """Copy `array`'s bytes into the buffer at `address` (from its start)."""
        buf = self.buffer(address)
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        if raw.size > buf.size:
            raise ValueError(f"{raw.size} bytes do not fit buffer `{buf.name}` ({buf.size})")
        buf.data[: raw.size] = raw

    def locate(self, addresses, nbytes: int):
        """(buffer index, offset, ok) for each address of an `nbytes` access; `ok` is False
        where the access is not wholly inside one buffer."""
        addresses = np.asarray(addresses, np.uint64)
        index = np.searchsorted(self._starts, addresses, side="right").astype(np.int64) - 1
        safe = np.maximum(index, 0)
        if self._starts.size == 0:
            return safe, np.zeros(addresses.shape, np.int64), np.zeros(addresses.shape, bool)
        start = self._starts[safe]
        offset = (addresses - start).astype(np.int64)
        end = self._ends[safe]
        ok = (index >= 0) & (addresses + np.uint64(nbytes) <= end) & (addresses >= start)
        return safe, offset, ok

    def describe(self, address: int, nbytes: int) -> str:
        """Why an `nbytes` access at `address` is refused, in words."""
        index, offset, ok = self.locate(np.array([address], np.uint64), nbytes)
        if self.buffers and int(index[0]) >= 0:
            buf = self.buffers[int(index[0])]
            off = address - buf.address
            if 0 <= off < buf.size + self.GAP and address >= buf.address:
                return (
                    f"{nbytes} bytes at {address:#x}, past the end of `{buf.name}` "
                    f"({buf.size} bytes at {buf.address:#x}; offset {off})"
                )
        return f"{nbytes} bytes at {address:#x}, outside every buffer"


def gather(data, offsets, nbytes: int):
    """The `nbytes` bytes at each offset of the uint8 array `data`: shape (n, nbytes)."""
    index = np.asarray(offsets, np.int64)[:, None] + np.arange(nbytes, dtype=np.int64)
    return data[index]


def scatter(data, offsets, raw) -> None:
    """Write each row of `raw` (n, nbytes) at its offset; a later thread wins a tie."""
    index = np.asarray(offsets, np.int64)[:, None] + np.arange(raw.shape[1], dtype=np.int64)
    data[index] = raw
