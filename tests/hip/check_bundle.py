#!/usr/bin/env python3
"""Checks that an offload bundle holds a code object for every gfx target.

    check_bundle.py BUNDLER BUNDLE TARGET [TARGET ...]
    check_bundle.py --skip REASON

lists BUNDLE with `BUNDLER --list --type=o --input=BUNDLE` and fails unless
each TARGET has an entry hipv4-amdgcn-amd-amdhsa--TARGET (with or without
target features such as :xnack-). --skip exits 77, which meson reports as
skipped, printing REASON.
"""
import subprocess
import sys


def main(argv):
    if len(argv) >= 3 and argv[1] == '--skip':
        print('skipped: ' + ' '.join(argv[2:]))
        return 77
    if len(argv) < 4:
        sys.exit(__doc__)
    bundler, bundle, targets = argv[1], argv[2], argv[3:]
    listing = subprocess.run([bundler, '--list', '--type=o', '--input=' + bundle],
                             capture_output=True, text=True)
    if listing.returncode != 0:
        print('%s --list failed (%d): %s' % (bundler, listing.returncode,
                                             listing.stderr.strip()))
        return 1
    entries = [line.strip() for line in listing.stdout.splitlines() if line.strip()]
    print('%s holds: %s' % (bundle, ', '.join(entries)))
    missing = []
    for target in targets:
        prefix = 'hipv4-amdgcn-amd-amdhsa--' + target
        if not any(e == prefix or e.startswith(prefix + ':') for e in entries):
            missing.append(target)
    if missing:
        print('no code object for: ' + ', '.join(missing))
        return 1
    print('a code object for each of: ' + ', '.join(targets))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
