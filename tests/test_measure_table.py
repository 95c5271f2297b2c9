"""One table of measures (metrics/measure_table.py): the registered classes, their config
dataclasses, the task YAML and the field map all agree with it."""
import inspect

import yaml

import habitat_mosnav  # noqa: F401  (before habitat)
import habitat  # noqa: F401,I001  (registers the plugin)
from habitat.core.registry import registry
from hydra.core.config_store import ConfigStore

from habitat_mosnav.config.default import package_path
from habitat_mosnav.metrics import METRIC_FIELDS
from habitat_mosnav.metrics.measure_table import MEASURE_TO_FIELD, MEASURES


def _text(doc):
    return " ".join((doc or "").split())


def test_every_measure_is_an_explicit_registered_class_with_the_table_formula():
    from habitat_mosnav.measures import measures as module

    for m in MEASURES:
        cls = registry.get_measure(m.type)
        assert cls is getattr(module, m.type), m.type  # a class written out in measures.py
        assert cls.cls_uuid == m.name
        assert _text(inspect.getdoc(cls)) == _text(m.doc), m.type
    defined = {name for name, obj in vars(module).items()
               if inspect.isclass(obj) and obj.__module__ == module.__name__ and not name.startswith("_")}
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
    listed = next(d["measurements"] for d in defaults if isinstance(d, dict) and "measurements" in d)
    assert listed == [m.name for m in MEASURES]


def test_field_map_names_real_metric_fields():
    assert set(MEASURE_TO_FIELD.values()) <= set(METRIC_FIELDS)
    assert MEASURE_TO_FIELD["path_efficiency"] == "pe" and MEASURE_TO_FIELD["space_coverage"] == "coverage"
    assert "mos_reward" not in MEASURE_TO_FIELD
