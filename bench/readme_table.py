"""Writes a generated table into a Markdown file, between `<!-- NAME:begin -->` and
`<!-- NAME:end -->` markers (the bench scripts' tables in bench/README.md and
bench/catalogue/README.md)."""

from pathlib import Path


def replace_between(path, name, text):
    path = Path(path)
    doc = path.read_text()
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{text}\n{end}{tail}")


def take_option(args, flag):
    """The path after `flag` in `args` (removed from it), or None."""
    if flag not in args:
        return None
    i = args.index(flag)
    path = Path(args[i + 1])
    del args[i:i + 2]
    return path
