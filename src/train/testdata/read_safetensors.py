"""An independent reader of distflow checkpoint shards: plain json and numpy.

Usage: read_safetensors.py FILE

Parses the safetensors layout by hand (no safetensors package), checks that the
tensors tile the data section, recomputes every tensor's CRC32C with its own
bitwise implementation and compares it with the header's metadata, then prints
{name: {"dtype": numpy dtype, "shape": [...], "values": [...]}} as JSON.
Exits non-zero with a message on any mismatch.
"""

import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32,
          "I64": np.int64, "U8": np.uint8, "BOOL": np.bool_}


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def main(path):
    with open(path, "rb") as f:
        blob = f.read()
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + header_len])
    data = blob[8 + header_len:]
    metadata = header.pop("__metadata__", {})
    out = {}
    end = 0
    for name, info in sorted(header.items(),
                             key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = info["data_offsets"]
        if begin != end:
            sys.exit(f"{path}: tensor {name} starts at {begin}, not {end}")
        end = stop
        raw = data[begin:stop]
        expected = metadata.get("crc32c/" + name)
        if expected is None or int(expected, 16) != crc32c(raw):
            sys.exit(f"{path}: CRC32C of tensor {name} does not match")
        array = np.frombuffer(raw, dtype=DTYPES[info["dtype"]])
        array = array.reshape(info["shape"])
        out[name] = {"dtype": str(array.dtype), "shape": list(array.shape),
                     "values": array.reshape(-1).tolist()}
    if end != len(data):
        sys.exit(f"{path}: {len(data) - end} bytes after the last tensor")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
