"""JSON Schemas of the files the benchmark reads from users (a scene's goals, queries and
episodes, a benchmark setting, an episode record) and :func:`first_error`, which turns the
first violation into the one line every reader raises: ``file: record: field 'x': problem``.

The schemas hold the structural rules (types, required fields, choices, ranges); the
readers keep what JSON Schema cannot say (references between files, unique ids). Numbers
are finite (JSON's NaN / Infinity are refused) and integers are Python ints (never 1.0 or
a boolean). A schema may give its own problem text: ``errorMessage``, a string or one per
failing keyword, with ``{got}`` (the failing value as JSON), ``{text}`` (as text),
``{value}`` (the field's whole value), ``{count}`` (its length) and ``{choices}``.
"""

from __future__ import annotations

import functools
import json
import math
import os
from typing import Any, Callable, List, Optional, Tuple


SCHEMA_DIR = os.path.dirname(os.path.abspath(__file__))
_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "a list",
    "object": "an object",
    "boolean": "a boolean",
    "null": "null",
}


@functools.lru_cache(maxsize=None)
def load(name: str) -> dict:
    """The schema ``<name>.schema.json`` of this folder."""
    with open(os.path.join(SCHEMA_DIR, f"{name}.schema.json"), encoding="utf-8") as f:
        return json.load(f)


_DATASET = load("dataset")["$defs"]
#: The largest coordinate a dataset may give (metres), goal image sides (pixels) and fields
#: of view (degrees) that render: the dataset schema's limits, for the readers that check
#: them before a dataset exists (mosnav-build's flags, the GOAT-Bench import).
MAX_COORDINATE = _DATASET["vector3"]["items"]["maximum"]
MIN_IMAGE_SIDE = _DATASET["image_side"]["minimum"]
MAX_IMAGE_SIDE = _DATASET["image_side"]["maximum"]
HFOV_RANGE = tuple(
    float(_DATASET["image_goal"]["properties"]["hfov"][k]) for k in ("minimum", "maximum")
)


def _inline(node: Any, defs: dict, inside: Tuple[str, ...] = ()) -> Any:
    """``node`` with its local ``$ref`` replaced by the definitions (a recursive one, the
    free-form JSON value, stays a reference): a third of the time of a check otherwise."""
    if isinstance(node, list):
        return [_inline(v, defs, inside) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref", "")
    name = ref[len("#/$defs/") :]
    if ref.startswith("#/$defs/") and name not in inside:
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return dict(_inline(defs[name], defs, inside + (name,)), **_inline(rest, defs, inside))
    return {k: v if k == "$defs" else _inline(v, defs, inside) for k, v in node.items()}


@functools.lru_cache(maxsize=None)
def _validator(name: str, definition: str):
    # jsonschema is imported at the first check: the limits above (flag ranges, the GOAT
    # import) need only the schema's JSON
    from jsonschema import Draft202012Validator, validators

    finite = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {
            "integer": lambda _, v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda _, v: (
                isinstance(v, (int, float))
                and not isinstance(v, bool)
                and (isinstance(v, int) or math.isfinite(v))
            ),
        }
    )
    schema = load(name)
    top = dict(schema, **{"$ref": f"#/$defs/{definition}"}) if definition else schema
    checker = validators.extend(Draft202012Validator, type_checker=finite)
    return checker(_inline(top, schema.get("$defs", {})))


def show(value: Any, limit: int = 60) -> str:
    """``value`` as JSON, cut to ``limit`` characters (an error shows no megabyte list)."""
    try:
        return json.dumps(value, default=str)[:limit]
    except ValueError:  # an integer of more digits than Python converts
        return "a huge integer"


def dotted(parts) -> str:
    """``["where", 0, "value"]`` -> ``where[0].value``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def _resolve(root: dict, ref: str) -> dict:
    node = root
    for part in ref[2:].split("/"):  # a local "#/$defs/name"
        node = node[part]
    return node


def _walk(root: dict, error) -> Tuple[dict, int, Optional[dict]]:
    """The schema node that failed, and the depth and node of the innermost declared
    property (``properties``) on the way: the error's field."""
    node, depth, field_depth, field_node, prev = root, 0, 0, None, None
    for part in list(error.absolute_schema_path)[:-1]:
        if isinstance(node, dict) and part not in node and "$ref" in node:
            node = _resolve(root, node["$ref"])
        node = node[part]
        if prev in ("properties", "patternProperties", "prefixItems"):
            depth += 1
            if prev == "properties":
                field_depth, field_node = depth, node
        elif part in ("items", "additionalProperties"):
            depth += 1
        prev = part
    if error.validator not in node and "$ref" in node:
        node = _resolve(root, node["$ref"])
    return node, field_depth, field_node


def _message(node: Optional[dict], keyword: str) -> Optional[str]:
    """The node's own ``errorMessage`` for ``keyword``."""
    custom = (node or {}).get("errorMessage")
    return custom.get(keyword) if isinstance(custom, dict) else custom


def _problem(error) -> str:
    """The wording of a violated keyword (a template, see the module docstring)."""
    kw, want, got = error.validator, error.validator_value, error.instance
    if kw == "type":
        if isinstance(got, float) and not math.isfinite(got):
            return f"expected a finite number, got {got}"
        names = [_TYPE_NAMES[t] for t in ([want] if isinstance(want, str) else want)]
        names = [n for n in names if n != "null"] or ["null"]
        return f"expected {' or '.join(names)}, got {{got}}"
    return {
        "required": "missing",
        "additionalProperties": "unknown field",
        "enum": "expected one of {choices}, got {got}",
        "const": f"expected {show(want)}, got {{got}}",
        "minItems": "empty" if want == 1 else f"expected at least {want} entries, got {{count}}",
        "maxItems": f"expected at most {want} entries, got {{count}}",
        "uniqueItems": "repeated entry",
        "minimum": f"expected >= {want}, got {{got}}",
        "maximum": f"expected <= {want}, got {{got}}",
        "exclusiveMinimum": f"expected > {want}, got {{got}}",
        "exclusiveMaximum": f"expected < {want}, got {{got}}",
        "pattern": f"expected a string matching {want}, got {{got}}",
    }.get(kw, f"{kw} {show(want)} is not met, got {{got}}")


def _at(doc: Any, path: List[Any]) -> Any:
    for part in path:
        try:
            doc = doc[part]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


def first_error(
    doc: Any,
    schema: str,
    where: str,
    definition: str = "",
    record: Callable[[List[Any]], Tuple[str, int]] = lambda path: ("", 0),
) -> Optional[str]:
    """The first violation (in the schema's order) of ``schema`` (its ``$defs`` entry
    ``definition``, else the whole) by ``doc``, as ``where: record: field 'x': problem``;
    None when ``doc`` is valid. ``record(path)``: the name of the record an instance path
    lies in and how many of its parts name it (``("goal 7", 2)`` for ``goals[3]...``)."""
    validator = _validator(schema, definition)
    error = next(iter(validator.iter_errors(doc)), None)
    if error is None:
        return None
    root, kw, want = validator.schema, error.validator, error.validator_value
    node, field_depth, field_node = _walk(root, error)
    path = list(error.absolute_path)
    if kw == "required":  # the field is a key the instance lacks, or should not have
        path.append(next(k for k in want if k not in error.instance))
    elif kw == "additionalProperties":
        path.append(next(k for k in error.instance if k not in node.get("properties", {})))
    if kw in ("required", "additionalProperties"):
        field_depth, field_node = len(path), None
    # the failing node's own message, else its field's (about the field's whole value)
    template, end = _message(node, kw), len(path)
    if template is None and _message(field_node, kw) is not None:
        template, end = _message(field_node, kw), field_depth
    value, got = _at(doc, path[:end]), error.instance
    problem = (template or _problem(error)).format(
        got=show(got),
        text=got[:60] if isinstance(got, str) else show(got),
        value=show(value, 80),
        count=len(value) if isinstance(value, (list, dict, str)) else "",
        choices=", ".join(map(str, want)) if isinstance(want, list) else "",
    )
    name, used = record(path)
    # inside a record, the objects around the field join its name ("goal 7 aabb")
    start = (max(field_depth - 1, used) if field_depth else used) if name else 0
    head = ": ".join(
        p for p in (where, " ".join(filter(None, (name, dotted(path[used:start]))))) if p
    )
    field = dotted(path[start:end])[:120]
    return f"{head}: field '{field}': {problem}" if field else f"{head}: {problem}"
