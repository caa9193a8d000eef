# SPDX-License-Identifier: MIT
"""Range checks of the numeric arguments, before they reach a ctypes field:
ctypes stores an out-of-range integer modulo the field's width (2**33 in a
uint32 is 0, -1 in a size_t is 2**64 - 1) and a float32 rounds 1e-50 to 0,
so each value is checked here and refused with the argument's name, by the
rules the command-line tool applies to the same options."""
import ctypes
import math
import numbers
import operator

SIZE_MAX = 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1
U32_MAX = 2 ** 32 - 1
U64_MAX = 2 ** 64 - 1
FLT_MAX = 3.4028234663852886e38
FLT_MIN = 1.1754943508222875e-38  # the smallest normal float32


def integer(name, value, lo=1, hi=SIZE_MAX):
    """value as an int in [lo, hi]: TypeError for what is not an integer
    (a bool, a float, a string), ValueError outside the range."""
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, not %r" % (name, value))
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %r" % (name, value)) from None
    if not lo <= n <= hi:
        raise ValueError("%s must be an integer from %d to %d, not %d" % (name, lo, hi, n))
    return n


def scale(value):
    """The score scale as the float32 the library gets: None (1/sqrt(d)), or
    a positive finite number whose float32 is a normal number, as `clattn run
    --scale` requires (1e-50 would round to 0, which means 1/sqrt(d))."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("scale must be a number, not %r" % (value,))
    v = float(value)
    f = ctypes.c_float(v).value if math.isfinite(v) and 0 < v <= FLT_MAX else 0.0
    if not f >= FLT_MIN:
        raise ValueError("scale must be a positive number a float32 holds as a normal number "
                         "(%.3g to %.3g; None for 1/sqrt(d)), not %r" % (FLT_MIN, FLT_MAX, value))
    return f


def figure(name, value, integral):
    """A device figure for the model: a finite number >= 0 (0: unknown);
    byte counts (integral) at most 2**64 - 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("figure %s must be a number, not %r" % (name, value))
    try:
        v = float(value)
    except OverflowError:  # an integer past any float
        v = math.inf
    if not (math.isfinite(v) and v >= 0) or (integral and v > U64_MAX):
        raise ValueError("figure %s must be a finite number >= 0%s, not %r"
                         % (name, " and at most 2**64 - 1" if integral else "", value))
    return int(value) if integral else v


def lengths(name, values, count, limit):
    """Per-sequence lengths: `count` integers, each from 0 to `limit` (at
    most 2**32 - 1, the library's uint32)."""
    try:
        values = list(values)
    except TypeError:
        raise TypeError("%s must be a sequence of integers, not %r" % (name, values)) from None
    if len(values) != count:
        raise ValueError("%s needs %d lengths, one per sequence, not %d"
                         % (name, count, len(values)))
    return [integer("%s[%d]" % (name, i), x, 0, min(limit, U32_MAX))
            for i, x in enumerate(values)]


def window(value):
    """A sliding window (left, right) as FlashAttention's window_size: two
    integers >= -1, -1 leaving that side unbounded."""
    try:
        left, right = value
    except (TypeError, ValueError):
        raise TypeError("window_size must be a pair (left, right), not %r" % (value,)) from None
    return (integer("window_size[0]", left, -1, 2 ** 31 - 1),
            integer("window_size[1]", right, -1, 2 ** 31 - 1))


def softcap(value):
    """The softcap as the float32 the library gets: 0 (none) or a positive
    finite number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("softcap must be a number, not %r" % (value,))
    v = float(value)
    if not (math.isfinite(v) and 0 <= v <= FLT_MAX) or (v > 0 and ctypes.c_float(v).value == 0):
        raise ValueError("softcap must be 0 (none) or a positive finite number, not %r"
                         % (value,))
    return v
