#!/usr/bin/env python3
"""Runs a compiler with a temporary directory of its own, then removes it.

    private_tmpdir.py PARENT COMMAND [ARG ...]

clang, under hipcc, makes a directory in $TMPDIR for each device code
object it links (two per gfx target of a --genco build) and removes only
the files it put there, so every HIP build of kiln used to leave dozens of
empty /tmp/<source>-XXXXXX directories behind. This makes a fresh directory
under PARENT (the build step's private directory in the build tree), runs
COMMAND with TMPDIR set to it, and removes it with whatever is left in it,
however COMMAND ends. The exit status is COMMAND's (128 + N when signal N
ended it).
"""
import os
import shutil
import subprocess
import sys
import tempfile


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    os.makedirs(argv[1], exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix='tmp-', dir=argv[1])
    try:
        status = subprocess.run(argv[2:],
                                env=dict(os.environ, TMPDIR=tmpdir)).returncode
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return 128 - status if status < 0 else status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
