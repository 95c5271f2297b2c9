"""Object categories: raw ``semantic.txt`` names -> a clean vocabulary, and the dataset-wide
``categories.json`` (SPEC §6).

HM3D's raw names hold annotator notes and structure (``wall /outside``, ``cabinet
/otherroom``, ``unknown/remove``, ``shower wall``, ``kitchen cabinet, lower``). The default
table ``data/hm3d_categories.json`` (composed for this project) normalises them; a user map
(``--category-map``, JSON ``{raw name: clean name or null}``) overrides any entry. Rules, in
order, for a raw name lower-cased with single spaces:

1. user map entry: its value (null: dropped, reason ``user_map``);
2. ``name / note`` where the note is an annotator note: dropped (``annotator_note``);
   any other ``a/b`` keeps ``a``;
3. placeholder names (``unknown``, ``misc``, ``objects``...): dropped (``unknown``);
4. text after the first comma and any ``(...)`` is cut (``kitchen cabinet, lower`` ->
   ``kitchen cabinet``);
5. synonyms rename (``couch`` -> ``sofa``, ``television`` -> ``tv``);
6. structural names, or names whose last word is a structural head (``shower wall``,
   ``wall panel``, ``door frame``): dropped (``structural``);
7. a plural whose singular is in the vocabulary becomes the singular.

The vocabulary maps each clean category to its mpcat40 class (:meth:`mpcat40`); names
outside it pass through cleaned (counted as ``kept_unlisted``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from habitat_mosnav.safety import MAX_DATASET_BYTES, InputFileError, read_input_text
from habitat_mosnav.dataset_building.common import BuildError, norm_text, read_json, write_json

DEFAULT_TABLE = Path(__file__).resolve().parent / "data" / "hm3d_categories.json"
CATEGORIES_FILE = "categories.json"


class CategoryNormalizer:
    """``normalize(raw) -> (clean name or None, reason)``; see the module docstring."""

    def __init__(
        self,
        table: Optional[Dict[str, Any]] = None,
        user_map: Optional[Dict[str, Optional[str]]] = None,
        drop: Iterable[str] = (),
        table_path: str = str(DEFAULT_TABLE),
    ):
        t = table if table is not None else load_table(table_path)
        self.vocabulary: Dict[str, str] = dict(t.get("vocabulary", {}))
        self.synonyms = {norm_text(k): norm_text(v) for k, v in t.get("synonyms", {}).items()}
        self.structural = {norm_text(x) for x in t.get("structural", [])}
        self.structural_heads = {norm_text(x) for x in t.get("structural_heads", [])}
        self.notes = {norm_text(x) for x in t.get("notes", [])}
        self.unknown = {norm_text(x) for x in t.get("unknown", [])}
        self.user_map = {norm_text(k): v for k, v in (user_map or {}).items()}
        self.drop = {norm_text(d) for d in drop}

    def mpcat40(self, category: str) -> Optional[str]:
        return self.vocabulary.get(category)

    def normalize(self, raw: str) -> Tuple[Optional[str], str]:
        """(clean name, 'mapped'|'kept'|'kept_unlisted') or (None, drop reason)."""
        name = norm_text(raw)
        if name in self.user_map:
            v = self.user_map[name]
            return (norm_text(v), "mapped") if v else (None, "user_map")
        if name in self.drop:
            return None, "drop_list"
        if "/" in name:
            head, _, tail = name.partition("/")
            head, tail = norm_text(head), norm_text(tail)
            if tail in self.notes or head in self.notes:
                return None, "annotator_note"
            name = head
        if not name or name in self.unknown or name.split(" ")[0] in {"unknown"}:
            return None, "unknown"
        cut = norm_text(re.sub(r"\([^)]*\)", " ", name.split(",", 1)[0]))
        changed = cut != norm_text(raw)
        name = cut
        if name in self.synonyms:
            name, changed = self.synonyms[name], True
        if name in self.drop:
            return None, "drop_list"
        if name in self.structural or name.split(" ")[-1] in self.structural_heads:
            return None, "structural"
        if name not in self.vocabulary:
            single = _singular(name)
            if single != name and (single in self.vocabulary or single in self.synonyms):
                name, changed = self.synonyms.get(single, single), True
        if not name or name in self.unknown:
            return None, "unknown"
        if name in self.vocabulary:
            return name, "mapped" if changed else "kept"
        return name, "kept_unlisted"


def _singular(name: str) -> str:
    words = name.split(" ")
    w = words[-1]
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("ches", "shes", "sses", "xes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        w = w[:-1]
    return " ".join(words[:-1] + [w])


def load_table(path: str) -> Dict[str, Any]:
    """The category table (default: the package's); one-line errors name file and field."""
    doc = read_json(Path(path))
    if not isinstance(doc, dict):
        raise BuildError(f"{path}: top level must be an object")
    for key, kind in (
        ("vocabulary", dict),
        ("synonyms", dict),
        ("structural", list),
        ("structural_heads", list),
        ("notes", list),
        ("unknown", list),
    ):
        if not isinstance(doc.get(key, kind()), kind):
            raise BuildError(
                f"{path}: field '{key}' must be a{'n object' if kind is dict else ' list'}"
            )
    return doc


def read_category_map(path: Path) -> Dict[str, Optional[str]]:
    """A user file ``{raw name: clean name or null}``."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise BuildError(f"{path}: expected a JSON object {{raw category: clean name or null}}")
    for k, v in doc.items():
        if not isinstance(v, (str, type(None))):
            raise BuildError(
                f"{path}: entry {k!r}: expected a string or null, got {json.dumps(v)[:40]}"
            )
    return {norm_text(k): v for k, v in doc.items()}


# ----------------------------------------------------------------------------- categories.json
def read_categories(path: Path) -> List[str]:
    """``categories.json``: a JSON list of names; index = ``objectgoal`` id."""
    from habitat_mosnav.datasets.schema import DatasetFormatError, parse_categories

    try:
        return parse_categories(str(path))
    except DatasetFormatError as e:
        raise BuildError(str(e)) from None


def update_categories(path: Path, used: Iterable[str]) -> Tuple[List[str], List[str]]:
    """Append the categories of ``used`` missing from ``path`` (sorted) and write it.

    Existing entries keep their index, so ids never shift when scenes or splits are added;
    returns (all categories, the new ones)."""
    path = Path(path)
    cats = read_categories(path) if path.is_file() else []
    have = set(cats)
    new = sorted(set(used) - have)
    if new or not path.is_file():
        write_json(path, cats + new, indent=1)
    return cats + new, new


def dataset_categories(out: Path) -> List[str]:
    """Every goal category in ``out/<scene>/goals.json``."""
    cats = set()
    out = Path(out)
    for d in sorted(out.iterdir()) if out.is_dir() else []:
        g = d / "goals.json"
        if g.exists():
            try:
                doc = json.loads(read_input_text(str(g), MAX_DATASET_BYTES))
            except (OSError, json.JSONDecodeError, InputFileError) as e:
                raise BuildError(f"{g}: cannot read ({e})") from None
            for i, goal in enumerate(doc.get("goals", []) if isinstance(doc, dict) else []):
                c = goal.get("category") if isinstance(goal, dict) else None
                if not isinstance(c, str) or not c:
                    raise BuildError(f"{g}: goal #{i}: field 'category': expected a string")
                cats.add(c)
    return sorted(cats)


def default_categories_path(out: Path) -> Path:
    """Where ``mosnav-build`` writes the dataset-wide list unless ``--categories`` says."""
    return Path(out) / CATEGORIES_FILE


__all__ = [
    "CategoryNormalizer",
    "DEFAULT_TABLE",
    "load_table",
    "read_category_map",
    "read_categories",
    "update_categories",
    "dataset_categories",
    "CATEGORIES_FILE",
    "default_categories_path",
]
