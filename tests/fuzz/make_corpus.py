#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora of the fuzzers next to this script.

corpus/npy/: valid .npy files of format 1.0, 2.0 and 3.0, float32 and
float16, 0-D to 8-D, the header spellings other writers produce, and the
edge cases the reader must refuse (headers padded as numpy pads them).
corpus/cli/: option values for the parsers of cli/cli_parse.c, valid,
at the limits, and refused.

The files are committed; rerun this after changing it. Standard library
only. It only adds and overwrites: regress_* files found by fuzzing stay."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


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


# Option values: name -> the argument's text.
CLI_SEEDS = {
    'size_zero': '0',
    'size_plain': '4096',
    'size_leading_zeros': '007',
    'size_max_64': '18446744073709551615',
    'size_over_64': '18446744073709551616',
    'size_negative': '-1',
    'size_plus': '+1',
    'size_space': ' 1',
    'size_trailing_space': '1 ',
    'size_hex': '0x10',
    'list_seed': '1024,4096,16384',
    'list_one': '33',
    'list_cap': '1,2,3,4',
    'list_over_cap': '1,2,3,4,5',
    'list_empty_item': '1,,2',
    'list_leading_comma': ',1',
    'list_trailing_comma': '1,',
    'list_only_comma': ',',
    'list_space': '1, 2',
    'double_plain': '0.3',
    'double_exponent': '1e-3',
    'double_negative': '-2.5',
    'double_inf': 'inf',
    'double_nan': 'nan',
    'double_huge': '1e400',
    'double_tiny': '1e-400',
    'double_hex': '0x1p-3',
    'double_space': ' 1',
    'bytes_plain': '512',
    'bytes_kib': '64K',
    'bytes_iec': '2GiB',
    'bytes_decimal': '1.5MB',
    'bytes_tb': '16TB',
    'bytes_fraction': '0.5KiB',
    'bytes_near_2_64': '16777215TiB',
    'bytes_over_2_64': '16777216TiB',
    'bytes_exponent': '1e3K',
    'bytes_bad_suffix': '4Kb',
    'bytes_space': '4 KiB',
    'name_fp16': 'fp16',
    'name_float': 'float',
    'name_half': 'half',
    'name_top_left': 'top-left',
    'name_bottom_right': 'bottom-right',
    'name_br': 'br',
    'name_no': 'no',
    'name_naive': 'naive',
    'name_auto': 'auto',
    'name_nv_mma': 'nv-mma',
    'name_case': 'FP16',
    'params_one': 'stages=3',
    'params_two': 'stages=3,direct=0',
    'params_word': 'gemm=builtin',
    'params_no_value': 'stages=',
    'params_no_name': '=3',
    'params_no_equals': 'stages',
    'params_empty_item': 'a=1,,b=2',
    'params_trailing_comma': 'a=1,',
    'params_space': 'a= 1',
    'params_two_equals': 'a=b=c',
    'empty': '',
    # Found by fuzzing (the replay's mutations of the seeds above): accepted
    # before cli_parse.c refused empty list items, non-finite numbers and
    # leading space.
    'regress_list_trailing_comma': '64,',
    'regress_list_leading_commas': ',,,2',
    'regress_double_inf': 'inf',
    'regress_double_nan': 'nan',
    'regress_double_leading_space': ' 07',
}


def write_all(subdir, seeds, ext):
    out = os.path.join(HERE, 'corpus', subdir)
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name + ext), 'wb') as f:
            f.write(data)
    print('%d seeds in %s' % (len(seeds), out))


def main():
    write_all('npy', SEEDS, '.npy')
    write_all('cli', {k: v.encode() for k, v in CLI_SEEDS.items()}, '.txt')


if __name__ == '__main__':
    main()
