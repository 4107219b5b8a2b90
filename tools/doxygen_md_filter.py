#!/usr/bin/env python3
"""Doxygen's input filter for Markdown pages (FILTER_PATTERNS in docs/Doxyfile.in).

The READMEs are written for GitHub; three things in them read differently to Doxygen
1.9, and this filter rewrites them on the way in, leaving the files as they are:

  - Image links. Doxygen copies an image into the HTML only when it finds it by name on
    IMAGE_PATH, but a README names it by the relative path GitHub needs
    (../../docs/images/x.svg): the link is cut to the bare name.
  - The link between a chapter's twins, README.md <-> README.zh.md. Doxygen looks a bare
    README.md up from its working directory and finds the top README, which is not one
    of its pages: the link becomes a reference to the twin's page (md_chapters_<folder>_README
    or ..._README_zh, the names Doxygen gives those pages).
  - Inline code right after or before a Chinese character. Doxygen takes a backtick as
    the start of a code span only after a space or ASCII punctuation, and counts the
    bytes of a UTF-8 character as letters; a space is put between them.

    tools/doxygen_md_filter.py FILE      print FILE as Doxygen should read it
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_figures import IMAGE_LINK  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
CODE_SPAN = re.compile(r"`[^`\n]+`")
NON_ASCII = re.compile(r"[^\x00-\x7f]")


def twin_links(text, path):
    """README.md / README.zh.md links inside a chapter folder -> Doxygen page references."""
    try:
        rel = path.resolve().parent.relative_to(ROOT / "chapters")
    except ValueError:
        return text
    page = "md_chapters_" + rel.as_posix().replace("/", "_") + "_README"
    text = re.sub(r"\]\((\./)?README\.md\)", f"](@ref {page})", text)
    return re.sub(r"\]\((\./)?README\.zh\.md\)", f"](@ref {page}_zh)", text)


def space_code_spans(text):
    """A space between inline code and a Chinese character on either side, outside
    fenced blocks (whose bytes must stay as they are)."""
    out, fence = [], None
    for line in text.splitlines(keepends=True):
        m = re.match(r"^(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None and NON_ASCII.search(line):
            def spaced(m):
                before = line[m.start() - 1] if m.start() > 0 else " "
                after = line[m.end()] if m.end() < len(line) else " "
                return ((" " if NON_ASCII.match(before) else "") + m.group(0) +
                        (" " if NON_ASCII.match(after) else ""))
            line = CODE_SPAN.sub(spaced, line)
        out.append(line)
    return "".join(out)


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    path = pathlib.Path(argv[0])
    text = path.read_text(encoding="utf-8")
    text = IMAGE_LINK.sub(r"\1\3)", text)
    text = twin_links(text, path)
    text = space_code_spans(text)
    sys.stdout.buffer.write(text.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
