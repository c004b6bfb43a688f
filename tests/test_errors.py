"""The status table: messages carry index and offset, pickling keeps them (tests/test_kernels_defs.py checks
that ErrorCode, _kernels/defs.py and csrc/pc_status.h agree)."""

import pickle

import pytest

from pulsar_codec import errors
from pulsar_codec.errors import ErrorCode


def test_every_code_has_a_message():
    for code in ErrorCode:
        if code is ErrorCode.OK:
            continue
        exc = errors.error_for(code, 3, 7, 1)
        assert isinstance(exc, errors.DecodeError)
        assert str(exc).endswith("(message 3, byte 7)")
        assert (exc.code, exc.index, exc.offset, exc.detail) == (code, 3, 7, 1)


def test_message_shape():
    with pytest.raises(
        errors.WireFormatError, match=r"^invalid magic byte 0x07, expected 0x00 \(message 12, byte 0\)$"
    ):
        errors.raise_for(ErrorCode.WIRE_BAD_MAGIC, 12, 0, 7, expected="0x00")


def test_decode_errors_pickle_with_attributes():
    exc = errors.error_for(ErrorCode.AVRO_TRUNCATED, 5, 9, 2)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is errors.AvroDecodeError
    assert (str(back), back.code, back.index, back.offset, back.detail) == (str(exc), exc.code, 5, 9, 2)


def test_hierarchy():
    assert issubclass(errors.WireFormatError, errors.DecodeError)
    assert issubclass(errors.DecodeError, ValueError)
    assert issubclass(errors.SchemaError, ValueError)
    assert issubclass(errors.SchemaNotFoundError, LookupError)
