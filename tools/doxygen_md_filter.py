#!/usr/bin/env python3
"""Doxygen's input filter for Markdown pages (FILTER_PATTERNS in docs/Doxyfile.in).

The READMEs are written for GitHub; five things in them read differently to Doxygen
1.9, and this filter rewrites them on the way in, leaving the files as they are:

  - Image links. Doxygen copies an image into the HTML only when it finds it by name on
    IMAGE_PATH, but a README names it by the relative path GitHub needs
    (../../docs/images/x.svg): the link is cut to the bare name.
  - The link between a chapter's twins, README.md <-> README.zh.md. Doxygen looks a bare
    README.md up from its working directory and finds the top README, which is not one
    of its pages: the link becomes a reference to the twin's page (md_chapters_<folder>_README
    or ..._README_zh, the names Doxygen gives those pages).
  - Links to other Markdown files. Doxygen turns a link to a .md file into a reference to
    that page, warns when there is none, and shows the link's text as it is (backticks
    too, so they are dropped); the pages are the ones docs/CMakeLists.txt lists
    (PAGE_GLOBS below). The top README.md, which README.zh.md links as its English twin,
    becomes the main page, which covers the same ground; any other file that is not a page
    (docs/speed_notes.md) becomes its name as inline code.
  - Links to a heading of the same page, [the chapter map](#chapters). GitHub gives every
    heading an anchor made from its text; Doxygen gives a heading none, and reads the link
    as a reference to a label: the heading gets an explicit label ({#md_README_zh_s1}, its
    page's name and a number) and the link points at it.
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


# The Markdown files Doxygen reads as pages, as docs/CMakeLists.txt lists them.
PAGE_GLOBS = ("docs/mainpage.md", "README.zh.md",
              "chapters/[0-9][0-9]_*/README.md", "chapters/[0-9][0-9]_*/README.zh.md")
MD_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s#]+\.md)\)")
FENCE = re.compile(r"^(`{3,}|~{3,})")


def outside_fences(text, rewrite):
    """rewrite(line) applied to every line outside fenced blocks, whose bytes must stay
    as they are."""
    out, fence = [], None
    for line in text.splitlines(keepends=True):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            line = rewrite(line)
        out.append(line)
    return "".join(out)


def links_to_other_md(text, path):
    """Links to .md files that are not pages: the top README.md -> the main page, any
    other -> the link's text with the file's name (from the root) as inline code, or only
    the name when the text is the name. Twin links inside a chapter folder were already
    rewritten by twin_links."""
    pages = {q.resolve() for g in PAGE_GLOBS for q in ROOT.glob(g)}
    here = path.resolve().parent

    def rewrite(m):
        target = (here / m.group(2)).resolve()
        if target in pages:
            # Doxygen prints the text of a page reference as it is, backticks included.
            return f"[{m.group(1).replace('`', '')}]({m.group(2)})"
        if not target.is_relative_to(ROOT):
            return m.group(0)
        if target == ROOT / "README.md":
            return f"[{m.group(1)}](@ref index)"
        name = "`" + target.relative_to(ROOT).as_posix() + "`"
        return name if m.group(1) in (m.group(2), "`" + m.group(2) + "`") else f"{m.group(1)} ({name})"
    return outside_fences(text, lambda line: MD_LINK.sub(rewrite, line))


ANCHOR_LINK = re.compile(r"\]\(#([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


def github_anchor(heading):
    """The anchor GitHub makes from a heading's text: lower case, punctuation dropped,
    spaces to hyphens (letters of any script are kept)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def heading_labels(text, path):
    """[x](#anchor) -> [x](#label), and the heading GitHub would give that anchor ->
    heading {#label}. An anchor that no heading makes is left alone (Doxygen warns)."""
    wanted = set(ANCHOR_LINK.findall(text))
    if not wanted:
        return text
    stem = "md_" + path.resolve().relative_to(ROOT).with_suffix("").as_posix()
    stem = re.sub(r"[^\w]", "_", stem)
    labels = {}

    def label_heading(line):
        h = HEADING.match(line)
        anchor = h and github_anchor(h.group(2))
        if not h or anchor not in wanted or anchor in labels:
            return line
        labels[anchor] = f"{stem}_s{len(labels) + 1}"
        return f"{h.group(1)} {h.group(2)} {{#{labels[anchor]}}}\n"
    text = outside_fences(text, label_heading)
    return outside_fences(text, lambda line: ANCHOR_LINK.sub(
        lambda m: f"](#{labels.get(m.group(1), m.group(1))})", line))


def space_code_spans(text):
    """A space between inline code and a Chinese character on either side, outside
    fenced blocks."""
    def spaced_line(line):
        def spaced(m):
            before = line[m.start() - 1] if m.start() > 0 else " "
            after = line[m.end()] if m.end() < len(line) else " "
            return ((" " if NON_ASCII.match(before) else "") + m.group(0) +
                    (" " if NON_ASCII.match(after) else ""))
        return CODE_SPAN.sub(spaced, line) if NON_ASCII.search(line) else line
    return outside_fences(text, spaced_line)


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    path = pathlib.Path(argv[0])
    text = path.read_text(encoding="utf-8")
    text = IMAGE_LINK.sub(r"\1\3)", text)
    text = twin_links(text, path)
    text = links_to_other_md(text, path)
    text = heading_labels(text, path)
    text = space_code_spans(text)
    sys.stdout.buffer.write(text.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
