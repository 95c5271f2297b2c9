"""Dataset building: from semantic annotations to goals, queries and episodes (SPEC §6).

``mosnav-build <stage>`` (see :mod:`.cli`); the same stages as Python functions in
:mod:`.pipeline` (``run_extract`` ... ``run_all``) taking a :class:`BuildConfig`.
Geometry goes through :mod:`.geometry` only, so the CPU simulator and habitat-sim are
interchangeable.
"""
from habitat_mosnav.dataset_building.common import BuildError  # noqa: F401
