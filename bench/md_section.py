"""Writes a generated section into a Markdown file between its markers.

The benchmark scripts own one section each of docs/benchmarks.md,
between `<!-- NAME:begin -->` and `<!-- NAME:end -->`: a rerun replaces
it and leaves the rest of the file (analysis included) alone.
"""
import os


def write_section(md, begin, end, lines, new_file="# Benchmarks\n"):
    """Puts `lines` (which start with `begin` and end with `end`) into
    `md` in place of the old section, or appends them."""
    text = open(md).read() if os.path.exists(md) else new_file
    section = "\n".join(lines)
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section + rest.split(end, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(md, "w") as f:
        f.write(text)
