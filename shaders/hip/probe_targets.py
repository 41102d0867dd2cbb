#!/usr/bin/env python3
"""Prints which gfx targets a HIP compiler can build the built-in kernels for.

    probe_targets.py SOURCE COMPILER [ARG ...] -- TARGET [TARGET ...]

runs `COMPILER ARG... --offload-arch=TARGET -fsyntax-only SOURCE` for every
TARGET at once and prints, one a line in the order given, each TARGET for
which it succeeds. A target the installed ROCm does not know, or has no
device libraries for, fails there. In parallel because each run costs a
second or more of compiler start-up and configure would otherwise pay for
every target in turn.
"""
import concurrent.futures
import subprocess
import sys


def accepts(command):
    return subprocess.run(command, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def main(argv):
    if '--' not in argv or len(argv) < 4:
        sys.exit(__doc__)
    split = argv.index('--')
    source, compiler = argv[1], argv[2:split]
    targets = argv[split + 1:]
    commands = [compiler + ['--offload-arch=' + t, '-fsyntax-only', source]
                for t in targets]
    with concurrent.futures.ThreadPoolExecutor(len(commands)) as pool:
        results = list(pool.map(accepts, commands))
    for target, ok in zip(targets, results):
        if ok:
            print(target)


if __name__ == '__main__':
    main(sys.argv)
