"""readme_block.py NAME [FILE]: replace README.md's block between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` with FILE's text (standard input without FILE), so that a figure in the
README is what its command printed (``make readme-baselines``, ``make readme-dist``)."""

import os
import re
import sys


def main(argv):
    if len(argv) not in (1, 2):
        sys.stderr.write(__doc__)
        return 2
    name = argv[0]
    text = open(argv[1], encoding="utf-8").read() if len(argv) == 2 else sys.stdin.read()
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
    with open(readme, encoding="utf-8") as f:
        doc = f.read()
    pattern = re.compile(
        r"(<!-- %s:start -->)(.*?)(<!-- %s:end -->)" % (re.escape(name), re.escape(name)), re.S
    )
    if len(pattern.findall(doc)) != 1:
        sys.stderr.write(f"error: README.md has no single '{name}' block\n")
        return 2
    inline = "\n" not in text.strip()
    body = text.strip() if inline else "\n" + text.strip() + "\n"
    doc = pattern.sub(lambda m: m.group(1) + body + m.group(3), doc)
    with open(readme + ".tmp", "w", encoding="utf-8") as f:
        f.write(doc)
    os.replace(readme + ".tmp", readme)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
