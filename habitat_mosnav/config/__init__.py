"""Configs of habitat_mosnav: structured configs, the YAML search path and ``get_config``."""

import habitat  # noqa: F401,I001  (first: importing habitat registers the plugin)
from habitat_mosnav.config.default import (  # noqa: F401
    MOSNAV_CONFIG_DIR,
    config_path,
    get_config,
    package_path,
    register_configs,
)
from habitat_mosnav.config import default_structured_configs  # noqa: F401
