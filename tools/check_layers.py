#!/usr/bin/env python3
"""Fails when a file of zero/ includes a header of a layer above its own.

Usage: check_layers.py ZERO_DIR

The layers, lowest first, are listed in LAYERS with the layers each may include;
every `#include "zero/<layer>/..."` in zero/<own layer>/ must name the own layer or
one of those. The build runs this before compiling the library (zero/CMakeLists.txt),
so an include that goes the wrong way fails the build with the file, the line and
the rule it breaks. Calls that go the wrong way fail the layer-check links instead.
"""
import pathlib
import re
import sys

# Each layer and the layers below it that it may use (zero/CMakeLists.txt links the same).
BELOW = {
    'core': [],
    'kernels': ['core'],
    'autograd': ['kernels', 'core'],
    'nn': ['autograd', 'kernels', 'core'],
    'optim': ['autograd', 'kernels', 'core'],
    'io': ['autograd', 'kernels', 'core'],
    'data': ['io', 'autograd', 'kernels', 'core'],
    'distributed': ['io', 'autograd', 'kernels', 'core'],
    'train': ['nn', 'optim', 'data', 'distributed', 'io', 'autograd', 'kernels', 'core'],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"zero/([a-z_]+)/')


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1])
    errors = []
    for path in sorted(root.rglob('*')):
        if path.suffix not in ('.h', '.cpp', '.cu', '.cuh') or not path.is_file():
            continue
        own = path.relative_to(root).parts[0]
        if own not in BELOW:
            errors.append(f'{path}: in no layer; add its folder to BELOW in {__file__}')
            continue
        for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
            match = INCLUDE.match(line)
            if match and match.group(1) != own and match.group(1) not in BELOW[own]:
                allowed = ', '.join(BELOW[own]) or 'nothing'
                errors.append(f'{path}:{number}: {own}/ includes zero/{match.group(1)}/, '
                              f'but {own} may use only {allowed}')
    for error in errors:
        print(error, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == '__main__':
    main()
