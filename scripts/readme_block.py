"""readme_block.py NAME [FILE]: replace the block between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` with FILE's text (standard input without FILE), so that a figure in the
docs is what its command printed (``make readme-baselines``: docs/BASELINES.md,
``make readme-dist``: docs/DEVELOPMENT.md). The block is looked for in README.md and
docs/*.md; exactly one of them must hold it, once."""

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def docs():
    """README.md and docs/*.md, the files a block may live in."""
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def main(argv):
    if len(argv) not in (1, 2):
        sys.stderr.write(__doc__)
        return 2
    name = argv[0]
    text = open(argv[1], encoding="utf-8").read() if len(argv) == 2 else sys.stdin.read()
    pattern = re.compile(
        r"(<!-- %s:start -->)(.*?)(<!-- %s:end -->)" % (re.escape(name), re.escape(name)), re.S
    )
    holders = []
    for path in docs():
        with open(path, encoding="utf-8") as f:
            doc = f.read()
        found = len(pattern.findall(doc))
        if found:
            holders.append((path, doc, found))
    if len(holders) != 1 or holders[0][2] != 1:
        sys.stderr.write(f"error: README.md and docs/*.md have no single '{name}' block\n")
        return 2
    path, doc, _ = holders[0]
    inline = "\n" not in text.strip()
    body = text.strip() if inline else "\n" + text.strip() + "\n"
    doc = pattern.sub(lambda m: m.group(1) + body + m.group(3), doc)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(doc)
    os.replace(path + ".tmp", path)
    print(f"wrote the '{name}' block of {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
