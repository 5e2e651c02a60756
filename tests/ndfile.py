"""Writes MXNet's NDArray list format (V2) from numpy, for building test inputs.

Independent of the runtime under test: a plain transcription of the format
(see predict/ndarray/ndarray_io.h).
"""
import struct

import numpy as np

NUMPY_TO_FLAG = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
                 np.dtype(np.uint8): 3, np.dtype(np.int32): 4, np.dtype(np.int8): 5,
                 np.dtype(np.int64): 6, np.dtype(np.bool_): 7}


def save(arrays):
    """arrays: dict name -> ndarray (names written as given) or a list."""
    names = list(arrays) if isinstance(arrays, dict) else []
    values = list(arrays.values()) if isinstance(arrays, dict) else list(arrays)
    parts = [struct.pack('<QQQ', 0x112, 0, len(values))]  # joined once: linear time
    for value in values:
        value = np.ascontiguousarray(value)
        parts.append(struct.pack('<Iii', 0xF993FAC9, 0, value.ndim))
        parts.append(struct.pack(f'<{value.ndim}q', *value.shape))
        parts.append(struct.pack('<iii', 1, 0, NUMPY_TO_FLAG[value.dtype]))
        parts.append(value.astype(value.dtype.newbyteorder('<')).tobytes())
    parts.append(struct.pack('<Q', len(names)))
    for name in names:
        encoded = name.encode()
        parts.append(struct.pack('<Q', len(encoded)) + encoded)
    return b''.join(parts)
