#!/usr/bin/env python3
"""Keeps each README.md and its Chinese twin README.zh.md in step.

The Chinese page is written for a Chinese reader, so its prose is free; what it shows must
be the English page's exactly. For every pair this script compares:

  - the headings: the same number, the same levels, in the same order (their text is
    translated, so only the structure is compared);
  - every fenced block (code, commands, printed output): byte for byte, in the same order;
  - every image: the same files, in the same order;
  - the links between the twins: the English page links README.zh.md and the Chinese page
    links README.md.

A difference fails with a message naming the pair, the block and the line on each side.

    tools/check_translations.py          every pair in the repository
    tools/check_translations.py FILE...  only these pages (either language)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FENCE = re.compile(r'^(`{3,}|~{3,})')
HEADING = re.compile(r'^(#{1,6})\s+\S')
IMAGE = re.compile(r'!\[[^\]]*\]\(([^)\s]+)[^)]*\)|<img\s[^>]*src="([^"]+)"')


class Page:
    """The parts of a Markdown page that must agree between languages."""

    def __init__(self, path):
        self.path = path
        self.headings = []  # (line, level)
        self.blocks = []    # (line, text of the whole block, fences included)
        self.images = []    # (line, target)
        lines = path.read_text(encoding='utf-8').splitlines(keepends=True)
        fence = None
        for n, line in enumerate(lines, 1):
            if fence is not None:
                self.blocks[-1][1].append(line)
                if line.strip() == fence:
                    fence = None
                continue
            m = FENCE.match(line)
            if m:
                fence = m.group(1)
                self.blocks.append((n, [line]))
                continue
            m = HEADING.match(line)
            if m:
                self.headings.append((n, len(m.group(1))))
            for m in IMAGE.finditer(line):
                self.images.append((n, m.group(1) or m.group(2)))
        self.blocks = [(n, ''.join(b)) for n, b in self.blocks]
        self.text = ''.join(lines)


def first_difference(a, b):
    """The 1-based line inside two blocks where they first differ, and both lines."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return i + 1, x, y
    i = min(len(la), len(lb))
    return i + 1, (la[i] if i < len(la) else '<end of block>'), (lb[i] if i < len(lb) else '<end of block>')


def compare(en_path, zh_path):
    en, zh = Page(en_path), Page(zh_path)
    name = en_path.parent.relative_to(ROOT).as_posix() or '.'
    problems = []

    def say(msg):
        problems.append(f'{name}: {msg}')

    for i, ((ln, lv), (zn, zv)) in enumerate(zip(en.headings, zh.headings), 1):
        if lv != zv:
            say(f'heading {i} is level {lv} in README.md:{ln} but level {zv} in README.zh.md:{zn}')
            break
    if len(en.headings) != len(zh.headings):
        say(f'README.md has {len(en.headings)} headings, README.zh.md has {len(zh.headings)}')

    for i, ((ln, a), (zn, b)) in enumerate(zip(en.blocks, zh.blocks), 1):
        if a != b:
            k, x, y = first_difference(a, b)
            say(f'fenced block {i} (README.md:{ln}, README.zh.md:{zn}) differs at its line {k}:\n'
                f'    en: {x!r}\n    zh: {y!r}')
    if len(en.blocks) != len(zh.blocks):
        extra = en.blocks[len(zh.blocks):] or zh.blocks[len(en.blocks):]
        side = 'README.md' if len(en.blocks) > len(zh.blocks) else 'README.zh.md'
        say(f'README.md has {len(en.blocks)} fenced blocks, README.zh.md has {len(zh.blocks)}; '
            f'the first unmatched one is {side}:{extra[0][0]}')

    en_images = [t for _, t in en.images]
    zh_images = [t for _, t in zh.images]
    if en_images != zh_images:
        say(f'images differ: README.md shows {en_images}, README.zh.md shows {zh_images}')

    if 'README.zh.md' not in en.text:
        say('README.md does not link its Chinese page README.zh.md')
    if not re.search(r'\]\((\./)?README\.md\)', zh.text):
        say('README.zh.md does not link the English page README.md')
    return problems


def pairs(args):
    if args:
        found = set()
        for a in args:
            p = pathlib.Path(a).resolve()
            found.add(p.parent)
        return sorted(found)
    return sorted(p.parent for p in ROOT.rglob('README.zh.md')
                  if not any(part.startswith(('build', '.')) for part in
                             p.relative_to(ROOT).parts[:-1]))


def main(argv):
    problems, checked = [], 0
    for folder in pairs(argv):
        en, zh = folder / 'README.md', folder / 'README.zh.md'
        if not en.exists() or not zh.exists():
            missing = en if not en.exists() else zh
            problems.append(f'{folder.relative_to(ROOT)}: {missing.name} is missing')
            continue
        problems += compare(en, zh)
        checked += 1
    for p in problems:
        print(p)
    if problems:
        print(f'check_translations: {len(problems)} difference(s) in {checked} pair(s); '
              'make the same change on both pages', file=sys.stderr)
        return 1
    print(f'check_translations: {checked} pair(s) agree')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
