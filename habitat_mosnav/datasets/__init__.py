"""The MultiObjectNav-v1 dataset (importing registers it)."""

import habitat  # noqa: F401,I001  (first: importing habitat registers the plugin)
from habitat_mosnav.datasets.episode import MultiObjectGoal, MultiObjectNavEpisode  # noqa
from habitat_mosnav.datasets.multi_object_nav_dataset import (  # noqa: F401
    MultiObjectNavDatasetV1,
    episode_key,
    find_scene_file,
    list_scene_ids,
    scene_name_from_path,
)
from habitat_mosnav.datasets.schema import DatasetFormatError  # noqa: F401
