"""Defaults of an evaluation run that several entry points share (``mosnav-eval``,
``mosnav-replay``, the maps of a finished run), kept below all of them."""

#: The demo MOS+MOC configuration: bundled scenes, CPU simulator, many/all episodes.
DEFAULT_CONFIG = "benchmark/nav/mosnav/mos_demo.yaml"
