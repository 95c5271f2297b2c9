"""The scenes package stays usable without habitat: it imports no habitat module itself."""

import ast
import glob
import os

import habitat_mosnav

ALLOWED = {
    "numpy",
    "scipy",
    "trimesh",
    "tqdm",
    "imageio",
    "argparse",
    "base64",
    "json",
    "math",
    "os",
    "re",
    "stat",
    "string",
    "struct",
    "sys",
    "urllib",
    "dataclasses",
    "typing",
    "__future__",
    "habitat_mosnav",
}


def test_scenes_modules_import_only_numeric_libraries():
    pkg = os.path.join(os.path.dirname(habitat_mosnav.__file__), "scenes")
    files = sorted(glob.glob(os.path.join(pkg, "*.py")))
    assert len(files) >= 5
    for path in files:
        with open(path) as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in ALLOWED, (os.path.basename(path), name)
                if name.startswith("habitat_mosnav"):
                    # versions: --version's text, standard library only; flag_ranges: the
                    # tools' numeric flag ranges (standard library and the schema's JSON)
                    light = (
                        "habitat_mosnav.scenes",
                        "habitat_mosnav.versions",
                        "habitat_mosnav.flag_ranges",
                    )
                    assert name.startswith(light), (
                        os.path.basename(path),
                        name,
                    )


def test_the_flag_ranges_scenes_use_import_neither_habitat_nor_jsonschema():
    import subprocess
    import sys

    code = (
        "import sys, habitat_mosnav.flag_ranges, habitat_mosnav.scenes.cli;"
        "print(sorted(m for m in ('habitat', 'habitat_sim', 'jsonschema', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
