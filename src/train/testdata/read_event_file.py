#!/usr/bin/python3
"""An event file reader independent of distflow's C++ code.

Parses the TFRecord framing, checks both masked CRC32Cs of every record with
its own CRC32C, and decodes the Event protos by TensorFlow's field numbers
(tensorflow/core/util/event.proto, framework/summary.proto, graph.proto,
node_def.proto). Prints the events as a JSON list; a framing, CRC or decoding
error goes to stderr with the record's byte offset, and the exit status is 1.

Usage: read_event_file.py EVENT_FILE
"""

import json
import struct
import sys

# CRC-32C (Castagnoli), reflected polynomial, bit by bit into a byte table.
_POLY = 0x82F63B78
_TABLE = []
for _byte in range(256):
    _crc = _byte
    for _ in range(8):
        _crc = (_crc >> 1) ^ _POLY if _crc & 1 else _crc >> 1
    _TABLE.append(_crc)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class DecodeError(Exception):
    pass


def varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("varint runs past the end of the message")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def fields(buf):
    """Yields (field number, wire type, value) of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise DecodeError("unsupported wire type %d" % wire)
        if pos > len(buf):
            raise DecodeError("field %d runs past the end" % number)
        yield number, wire, value


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def decode_summary(buf):
    values = []
    for number, wire, value in fields(buf):
        if number == 1 and wire == 2:  # Summary.value
            entry = {}
            for n, w, v in fields(value):
                if n == 1 and w == 2:  # Value.tag
                    entry["tag"] = v.decode("utf-8")
                elif n == 2 and w == 5:  # Value.simple_value
                    entry["simple_value"] = struct.unpack("<f", v)[0]
            values.append(entry)
    return values


def decode_graph(buf):
    nodes = []
    for number, wire, value in fields(buf):
        if number == 1 and wire == 2:  # GraphDef.node
            node = {"input": [], "attr": []}
            for n, w, v in fields(value):
                if n == 1:  # NodeDef.name
                    node["name"] = v.decode("utf-8")
                elif n == 2:  # NodeDef.op
                    node["op"] = v.decode("utf-8")
                elif n == 3:  # NodeDef.input
                    node["input"].append(v.decode("utf-8"))
                elif n == 4:  # NodeDef.device
                    node["device"] = v.decode("utf-8")
                elif n == 5:  # NodeDef.attr, a map entry: key = 1
                    for k, _, key in fields(v):
                        if k == 1:
                            node["attr"].append(key.decode("utf-8"))
            nodes.append(node)
    return nodes


def decode_event(buf):
    event = {}
    for number, wire, value in fields(buf):
        if number == 1 and wire == 1:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            event["step"] = signed64(value)
        elif number == 3 and wire == 2:
            event["file_version"] = value.decode("utf-8")
        elif number == 4 and wire == 2:
            event["graph"] = decode_graph(value)
        elif number == 5 and wire == 2:
            event["summary"] = decode_summary(value)
    return event


def read_events(data):
    events = []
    offset = 0
    while offset < len(data):
        def fail(what):
            raise DecodeError("record %d at byte %d: %s" %
                              (len(events), offset, what))
        if len(data) - offset < 12:
            fail("header cut short")
        header = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[offset + 8:offset + 12])
        if length_crc != masked_crc(header):
            fail("length CRC mismatch")
        start, end = offset + 12, offset + 12 + length
        if end + 4 > len(data):
            fail("record cut short")
        (data_crc,) = struct.unpack("<I", data[end:end + 4])
        if data_crc != masked_crc(data[start:end]):
            fail("data CRC mismatch")
        try:
            events.append(decode_event(data[start:end]))
        except DecodeError as e:
            fail("bad Event: %s" % e)
        offset = end + 4
    return events


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    try:
        events = read_events(data)
    except DecodeError as e:
        sys.stderr.write("%s: %s\n" % (sys.argv[1], e))
        return 1
    json.dump(events, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
