#!/usr/bin/env python3
"""Writes the seed corpus of the .npy fuzzer into corpus/npy/ (next to this
script): valid files of format 1.0, 2.0 and 3.0, float32 and float16, 0-D to
8-D, the header spellings other writers produce, and the edge cases the
reader must refuse. The files are committed; rerun this after changing it.
Standard library only, the header padded as numpy pads it."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'corpus', 'npy')


def npy(dict_text, data=b'', major=1, pad=True):
    pre = 10 if major == 1 else 12
    body = dict_text.encode('utf-8' if major == 3 else 'latin1')
    if pad:
        total = pre + len(body) + 1
        total += -total % 64
        body += b' ' * (total - pre - len(body) - 1) + b'\n'
    length = struct.pack('<H' if major == 1 else '<I', len(body))
    return b'\x93NUMPY' + bytes([major, 0]) + length + body + data


def header(descr, shape, fortran=False):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, 'True' if fortran else 'False', repr(tuple(shape)))


def floats(n, fmt='f'):
    return struct.pack('<%d%s' % (n, fmt), *[0.5 * i - 1 for i in range(n)])


def product(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def array(descr, shape, major=1):
    fmt = {'<f4': 'f', '<f2': 'e'}[descr]
    return npy(header(descr, shape), floats(product(shape), fmt), major)


SEEDS = {
    # Valid: versions, dtypes, ranks 0..8, empty.
    'v1_f4_2d': array('<f4', (2, 3)),
    'v1_f2_1d': array('<f2', (5,)),
    'v2_f4_2d': array('<f4', (2, 3), major=2),
    'v3_f2_3d': array('<f2', (2, 1, 3), major=3),
    'v1_f4_0d': array('<f4', ()),
    'v1_f4_4d_attention': array('<f4', (1, 2, 3, 2)),
    'v1_f2_8d': array('<f2', (1, 2, 1, 2, 1, 1, 2, 1)),
    'v1_f4_empty': npy(header('<f4', (0, 4))),
    'v1_f4_zero_dim_huge_others': npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }"),
    # Valid spellings other writers use.
    'v1_keys_reordered': npy("{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}",
                             floats(2)),
    'v1_double_quotes_odd_space': npy(
        '{ "descr" :\'<f4\' ,"fortran_order":False,"shape":( 2 , ) , }', floats(2)),
    'v1_python2_longs': npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 1L), }",
                            floats(2)),
    'v1_int_shape': npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", floats(2)),
    'v1_native_order': npy("{'descr': '=f4', 'fortran_order': False, 'shape': (1,), }",
                           floats(1)),
    'v1_no_order': npy("{'descr': '|f2', 'fortran_order': False, 'shape': (1,), }",
                       floats(1, 'e')),
    'v1_unpadded': npy("{'descr':'<f4','fortran_order':False,'shape':(1,)}", floats(1),
                       pad=False),
    'v1_tabs_newlines': npy("{'descr':\t'<f4',\n'fortran_order': False,\r'shape': (1,)}",
                            floats(1)),
    # Refused: dtype, order, rank, shape.
    'bad_f8': npy(header('<f8', (2,)), struct.pack('<2d', 1, 2)),
    'bad_big_endian': npy(header('>f4', (2,)), floats(2)),
    'bad_structured': npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                          floats(2)),
    'bad_fortran': npy(header('<f4', (2, 2), fortran=True), floats(4)),
    'bad_9d': npy(header('<f4', (1,) * 9), floats(1)),
    'bad_negative_dim': npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
    'bad_shape_overflow': npy(header('<f4', (4294967296, 4294967296, 4294967296))),
    'bad_dim_too_long': npy(header('<f4', (123456789012345678901234567890,))),
    'bad_bytes_overflow': npy(header('<f4', (4611686018427387905,))),
    'bad_claims_64g': npy(header('<f4', (16, 1 << 30)), bytes(100)),
    # Refused: the dict.
    'bad_dup_key': npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                       "'shape': (1,)}", floats(1)),
    'bad_unknown_key': npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
                           "'extra': 1}", floats(1)),
    'bad_missing_key': npy("{'descr': '<f4', 'shape': (1,)}", floats(1)),
    'bad_open_dict': npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
                         floats(1)),
    'bad_junk_after': npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x",
                          floats(1)),
    'bad_lowercase_bool': npy("{'descr': '<f4', 'fortran_order': false, 'shape': (1,)}",
                              floats(1)),
    'bad_escape': npy("{'descr': '<f\\4', 'fortran_order': False, 'shape': (1,)}", floats(1)),
    # Refused: data length.
    'bad_truncated_data': npy(header('<f4', (4, 3)), floats(5)),
    'bad_trailing_garbage': npy(header('<f4', (2,)), floats(3)),
    # Refused: the preamble.
    'bad_magic': b'PK\x03\x04 a zip file, not npy',
    'bad_version_4': b'\x93NUMPY\x04\x00\x10\x00' + b' ' * 16,
    'bad_version_1_1': b'\x93NUMPY\x01\x01\x10\x00' + b' ' * 16,
    'bad_short_preamble': b'\x93NUMPY\x01',
    'bad_header_length_huge': b'\x93NUMPY\x02\x00\x01\x00\x10\x00{',
    'bad_truncated_header': b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'f",
    'empty': b'',
    # Found by fuzzing: bytes in header strings that are not printable ASCII
    # (a NUL cut '<f4\0junk' to '<f4'; others reached messages raw).
    'regress_descr_nul': npy("{'descr': '<f4\0junk', 'fortran_order': False, 'shape': (1,)}",
                             floats(1)),
    'regress_descr_escape': npy("{'descr': '<f\x1b[31m', 'fortran_order': False, "
                                "'shape': (1,)}", floats(1)),
    'regress_key_newline': npy("{'de\nscr': '<f4', 'fortran_order': False, 'shape': (1,)}",
                               floats(1)),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name + '.npy'), 'wb') as f:
            f.write(data)
    print('%d seeds in %s' % (len(SEEDS), OUT))


if __name__ == '__main__':
    main()
