"""Imported at interpreter start-up by ``habitat_mosnav_compat.pth`` (site-packages).

Loads ``habitat_mosnav/_compat.py`` by path, without importing the ``habitat_mosnav``
package (which would import habitat and torch into every Python process), and installs its
import hook: the habitat-sim placeholders are seeded only when ``habitat`` is imported and
habitat-sim is missing. Never raises: a broken hook must not break Python start-up.
"""

import importlib.util
import os
import sys


def _install() -> None:
    try:
        if "habitat_mosnav._compat" in sys.modules:
            sys.modules["habitat_mosnav._compat"].install_import_hook()
            return
        spec = importlib.util.find_spec("habitat_mosnav")
        if spec is None or not spec.submodule_search_locations:
            return
        path = os.path.join(list(spec.submodule_search_locations)[0], "_compat.py")
        compat_spec = importlib.util.spec_from_file_location("habitat_mosnav._compat", path)
        module = importlib.util.module_from_spec(compat_spec)
        compat_spec.loader.exec_module(module)
        sys.modules["habitat_mosnav._compat"] = module
        module.install_import_hook()
    except Exception:  # noqa: BLE001 - start-up must go on
        pass


_install()
