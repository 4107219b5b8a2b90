#!/usr/bin/env python3
"""Fails when a comment or a README names a file of the repository that does not exist.

Comments and READMEs point readers at other files ("Read next: nn/gpt.h"); after a file is
moved or renamed such a pointer sends the reader nowhere. This script reads every tracked
source, script and Markdown file and checks three kinds of name:

  - a path from the repository root: zero/core/tensor.h, chapters/11_gpt/README.md, tools/...
  - a path that starts with a layer's folder: nn/gpt.h, kernels/cuda/blas.cu (from zero/,
    or from the folder of the file that names it)
  - a bare file name of a C++/CUDA source: tensor_context.cpp (it must exist somewhere)

A name that is not ours (a system header, a file of nanoGPT or llm.c that the text compares
with, a file the build generates) is listed in NOT_OURS below with why. Brace forms such as
zero/io/atomic_file.{h,cpp} are expanded; names with wildcards or placeholders are skipped.

    tools/check_paths.py            exit 0, or 1 with one line per dangling name
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

TOP = r'(?:zero|chapters|tools|tests|exercises|solutions|docs|cmake|\.ci)'
LAYERS = r'(?:core|kernels|autograd|nn|optim|data|io|distributed|train)'
EXT = r'(?:h|cpp|cu|cuh|py|sh|md|txt|cmake|json)'
ROOTED = re.compile(r'(?<![\w./-])(' + TOP + r'/[\w./-]*\w(?:\.\{[\w,]+\})?)')
LAYERED = re.compile(r'(?<![\w./-])(' + LAYERS + r'/[\w/-]*\.(?:h|cpp|cu|cuh)\b)')
# Not followed by ".": "transformer.h.0.attn" is a tensor's name, not a header.
BARE = re.compile(r'(?<![\w/.*<>}$-])(\w[\w-]*\.(?:h|cpp|cu|cuh))(?![\w.{])')

NOT_OURS = {
    # system, CUDA, NCCL and BLAS headers named in includes and comments
    'cblas.h', 'cublasLt.h', 'cublas_v2.h', 'cuda_fp16.h', 'cuda_runtime.h', 'cxxabi.h',
    'fcntl.h', 'nccl.h', 'omp.h', 'stdlib.h', 'unistd.h',
    # stb's PNG encoder and decoder, from Debian's libstb-dev (cmake/ZeroStb.cmake)
    'stb_image.h', 'stb_image_write.h',
    # llm.c's trainer, which the chapters compare with
    'train_gpt2.cu',
    # written into the build folder by cmake/EmbedCorpus.cmake
    'project_corpus_data.cpp',
    'chinese_corpus_data.cpp',
    # placeholders in the usage lines of cmake/ZeroHelpers.cmake
    'k.cu', 'f.cpp',
    # made up by the CPU quickstart's model in the sample the READMEs show
    'x.cpp',
}

# Root-relative names that are build products, not files: programs, and the placeholders
# that tools print in their help (NN_topic, CHAPTER).
BUILT = re.compile(r'^(tools/(bench_\w+|dump_gpt_step|wgmma_probe)|chapters/\d\d_\w+/ch\d\d_\w+|zero/openblas)$'
                   r'|/(NN_topic|CHAPTER)(/|$)')


def tracked_files():
    """git's list of files; outside a checkout (a source archive), every file but build
    output and hidden folders."""
    try:
        out = subprocess.run(['git', 'ls-files'], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [str(p.relative_to(ROOT)) for p in ROOT.rglob('*') if p.is_file()
               and not any(part.startswith(('.', 'build')) for part in
                           p.relative_to(ROOT).parts[:-1])]
    keep = re.compile(r'\.' + EXT + r'$|^tools/check_exercise$|^\.ci/run$')
    return [f for f in out if keep.search(f) and not f.startswith('tests/fuzz/corpus/')]


def expand(name):
    """zero/io/atomic_file.{h,cpp} -> both names; a name without braces -> itself."""
    m = re.match(r'^(.*)\.\{([\w,]+)\}$', name)
    if not m:
        return [name]
    return [m.group(1) + '.' + ext for ext in m.group(2).split(',')]


def exists_rooted(name):
    """A path from the root; a source named without its extension (RunOp in
    zero/autograd/tensor_op) counts when a file with that stem exists."""
    path = ROOT / name
    if path.exists():
        return True
    return path.suffix == '' and any(path.parent.glob(path.name + '.*'))


def main():
    files = tracked_files()
    basenames = {pathlib.Path(f).name for f in files}
    problems = []
    for f in files:
        text = (ROOT / f).read_text(errors='replace')
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in ROOTED.finditer(line):
                raw = m.group(1).rstrip('.')
                if BUILT.search(raw):
                    continue
                for name in expand(raw):
                    if not exists_rooted(name):
                        problems.append(f'{f}:{lineno}: names {name}, which does not exist')
            for m in LAYERED.finditer(line):
                if line[max(0, m.start() - 5):m.start()].endswith('zero/'):
                    continue  # already checked as a rooted path
                name = m.group(1)
                here = (ROOT / f).parent
                if not any((base / name).exists() for base in (ROOT / 'zero', here, ROOT)):
                    problems.append(f'{f}:{lineno}: names {name} (zero/{name}), '
                                    'which does not exist')
            # In Python, "tr.h" is an attribute, so bare names are checked in C++, CMake,
            # shell and Markdown only.
            for m in (BARE.finditer(line) if not f.endswith('.py') else ()):
                name = m.group(1)
                if name not in basenames and name not in NOT_OURS:
                    problems.append(f'{f}:{lineno}: names {name}; no file of the '
                                    'repository has that name')
    for p in problems:
        print(p)
    if problems:
        print(f'check_paths: {len(problems)} dangling name(s); fix the text, or add a name '
              'that is not ours to NOT_OURS with why', file=sys.stderr)
        return 1
    print(f'check_paths: every file named in {len(files)} files exists')
    return 0


if __name__ == '__main__':
    sys.exit(main())
