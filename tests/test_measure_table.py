"""The metric registry (metrics/measure_table.py): the registered classes, their config
dataclasses, the task YAML, the field map, the docs (METRICS.md, EVALUATION.md's measures row,
SPEC.md) all agree with it."""

import inspect
import os
import re

import yaml

import habitat_mosnav  # noqa: F401  (before habitat)
import habitat  # noqa: F401,I001  (registers the plugin)
from habitat.core.registry import registry
from hydra.core.config_store import ConfigStore

from habitat_mosnav.config.default import package_path
from habitat_mosnav.metrics import METRIC_FIELDS
from habitat_mosnav.api import TARGET_MODES
from habitat_mosnav.metrics.measure_table import (
    AGGREGATES,
    FORMATS,
    INTEGER,
    MEASURE_TO_FIELD,
    MEASURES,
    METRICS,
    RATIO,
    TABLES,
    aggregate_spec,
    derived_files,
    format_value,
    glossary,
    metric,
    readme_measures,
)


def _text(doc):
    return " ".join((doc or "").split())


def test_every_measure_is_an_explicit_registered_class_with_the_table_formula():
    from habitat_mosnav.measures import measures as module

    for m in MEASURES:
        cls = registry.get_measure(m.type)
        assert cls is getattr(module, m.type), m.type  # a class written out in measures.py
        assert cls.cls_uuid == m.name
        assert _text(inspect.getdoc(cls)) == _text(m.doc), m.type
    defined = {
        name
        for name, obj in vars(module).items()
        if inspect.isclass(obj) and obj.__module__ == module.__name__ and not name.startswith("_")
    }
    assert defined == {m.type for m in MEASURES}


def test_config_dataclasses_follow_the_table():
    repo = ConfigStore.instance().repo["habitat"]["task"]["measurements"]
    for m in MEASURES:
        node = repo[f"{m.name}.yaml"].node
        assert node.type == m.type
    from habitat_mosnav.config import default_structured_configs as dsc

    for m in MEASURES:
        cls = getattr(dsc, f"{m.type}MeasurementConfig")
        assert _text(cls.__doc__) == _text(m.doc), m.name


def test_task_yaml_lists_every_measure_in_table_order():
    with open(package_path("config/habitat/task/mosnav.yaml")) as f:
        defaults = yaml.safe_load(f)["defaults"]
    listed = next(
        d["measurements"] for d in defaults if isinstance(d, dict) and "measurements" in d
    )
    assert listed == [m.name for m in MEASURES]


def test_field_map_names_real_metric_fields():
    assert set(MEASURE_TO_FIELD.values()) <= set(METRIC_FIELDS)
    assert (
        MEASURE_TO_FIELD["path_efficiency"] == "pe"
        and MEASURE_TO_FIELD["space_coverage"] == "coverage"
    )
    assert "mos_reward" not in MEASURE_TO_FIELD


# ----------------------------------------------------------------------------- the registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_files_derived_from_the_registry_are_up_to_date():
    """The task YAML's measurement list, docs/METRICS.md and docs/EVALUATION.md's measures row are
    written from the registry: ``python scripts/metric_files.py --write`` after a change."""
    for rel, (now, new) in derived_files(ROOT).items():
        assert now == new, (
            f"{rel} drifted from metrics/measure_table.py: run python scripts/metric_files.py --write"
        )
    with open(os.path.join(ROOT, "docs", "EVALUATION.md"), encoding="utf-8") as f:
        assert readme_measures(f.read()) == [m.name for m in MEASURES]


def _spec_sections():
    with open(os.path.join(ROOT, "docs", "SPEC.md"), encoding="utf-8") as f:
        text = f.read()
    return {part.split(".", 1)[0]: part for part in re.split(r"\n## ", text)[1:]}


def test_spec_defines_every_record_field_and_names_every_measure():
    """docs/SPEC.md defines each record field (named in §4, or the field of a measure of the
    contract's §9 row, ``targets_found``) or a paragraph of §4 marked as this
    implementation's addition names it; each measure is in the §9 row or its additions; the
    aggregation of each addition is stated in §5."""
    sections = _spec_sections()
    s4, s5, s9 = sections["4"], sections["5"], sections["9"]
    words = set(re.findall(r"\w+", s4))
    additions = " ".join(
        p for p in s4.split("\n\n") if p.startswith("Addition of this implementation")
    )
    contract = next(line for line in s9.splitlines() if line.startswith("| measures |"))
    for m in METRICS:
        if not m.field:
            continue
        contract_field = m.field in words or (m.name and f"`{m.name}`" in contract)
        assert contract_field or f"`{m.field}`" in additions, (
            f"docs/SPEC.md §4 does not define {m.field!r} (add an 'Addition of this "
            "implementation:' paragraph naming it)"
        )
        if not contract_field and m.aggregates:
            assert f"`{m.field}`" in s5, (
                f"docs/SPEC.md §5 does not say how {m.field!r} is aggregated"
            )
    for m in MEASURES:
        if f"`{m.name}`" not in contract:  # named only as an addition
            assert re.search(rf"Additions of this implementation[^#]*`{m.name}`", s9), (
                f"docs/SPEC.md §9 does not name the measure {m.name!r}"
            )


def test_registry_is_complete_and_consistent():
    fields = [m.field for m in METRICS if m.field]
    assert len(fields) == len(set(fields)) and tuple(fields) == METRIC_FIELDS
    names = [a.name for a in AGGREGATES]
    assert len(names) == len(set(names))
    assert {a.field for a in AGGREGATES} <= set(METRIC_FIELDS)
    for m in METRICS:
        assert m.format in FORMATS, m
        assert m.spec.startswith("§"), m
        assert (m.name is None) == (m.type is None), m
        assert all(
            a.table in TABLES and set(a.modes) <= set(TARGET_MODES) and a.modes
            for a in m.aggregates
        ), m
        if m.episode_column or any(a.shown for a in m.aggregates):
            assert m.glossary and m.title, (
                f"{m.field}: a shown column needs a label and a glossary line"
            )
    shown = [a.label for a in AGGREGATES if a.shown]
    assert len(shown) == len(set(shown)), "two shown columns with the same label"
    # every glossary entry (the page's) has its label, text and section
    for key, (label, text, section) in glossary().items():
        assert label and len(text) > 20 and section.startswith("§"), key


def test_integer_metrics_are_shown_as_integers():
    assert format_value(27, INTEGER) == "27" and format_value(27.0, INTEGER) == "27"
    assert format_value(27.5, INTEGER) == "27.5" and format_value(None, INTEGER) == "–"
    assert format_value(0.5, RATIO) == "0.500" and format_value(0.5, RATIO, 4) == "0.5000"
    assert metric("time_to_first_target").format == INTEGER
    assert aggregate_spec("time_to_first_target").table == "diagnostic"
    assert aggregate_spec("time_to_first_target").modes == ("many", "all")
