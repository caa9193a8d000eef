# SPDX-License-Identifier: MIT
"""python/clattn/_lib.py's ctypes structs lay out as the C headers do: the
size of each and the offset of every field, from layout.c (built against
include/clattn) given as the first argument. A header that changes under
the mirror fails here, not as memory corruption in a user's process."""
import ctypes
import json
import subprocess
import sys
import unittest

from clattn import _lib

LAYOUT_EXE = None


class Layout(unittest.TestCase):
    def test_every_mirrored_struct(self):
        c = json.loads(subprocess.run([LAYOUT_EXE], check=True, capture_output=True,
                                      text=True).stdout)
        self.assertEqual(set(c), set(_lib.MIRRORED), "layout.c and _lib.MIRRORED list "
                         "different structs (list each mirrored field in layout.c)")
        for name, cls in _lib.MIRRORED.items():
            fields = c[name]["fields"]
            self.assertEqual([f for f, _ in cls._fields_], list(fields), name)
            for f, _ in cls._fields_:
                self.assertEqual(getattr(cls, f).offset, fields[f], "%s.%s" % (name, f))
            self.assertEqual(c[name]["size"], ctypes.sizeof(cls), "%s: C has %d bytes, the "
                             "mirror %d" % (name, c[name]["size"], ctypes.sizeof(cls)))


if __name__ == "__main__":
    LAYOUT_EXE = sys.argv.pop(1)
    unittest.main()
