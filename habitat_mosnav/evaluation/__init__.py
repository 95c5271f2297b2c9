"""Evaluation runs (SPEC §8): selection/sharding, seeds, result files, aggregation.

Light at import: selection, result files and the rollout contract's policy side
(``PolicyAdapter``, ``PolicyStep``, ``EpisodeContext``) need only the standard library
and numpy.
``Evaluator`` / ``EvaluationConfig`` / ``EvaluationSetupError`` (the run through
``habitat.Env``) are imported lazily from :mod:`habitat_mosnav.evaluation.evaluator` on
first use, so importing this package stays cheap.
"""

from habitat_mosnav.evaluation.policy import EpisodeContext, PolicyAdapter, PolicyStep
from habitat_mosnav.evaluation.durable import ResultFileError
from habitat_mosnav.evaluation.rank_files import RankWriter, read_jsonl, write_done
from habitat_mosnav.evaluation.records import error_info, make_record
from habitat_mosnav.evaluation.summary import format_summary, summarize, write_summary
from habitat_mosnav.evaluation.selection import launcher_rank_world, select_episodes
from habitat_mosnav.keys import episode_key, episode_seed, split_key

_LAZY = {"Evaluator", "EvaluationConfig", "EvaluationSetupError"}


def __getattr__(name):
    if name in _LAZY:
        from habitat_mosnav.evaluation import evaluator

        return getattr(evaluator, name)
    raise AttributeError(f"module 'habitat_mosnav.evaluation' has no attribute {name!r}")


__all__ = [
    "EpisodeContext",
    "PolicyAdapter",
    "PolicyStep",
    "EvaluationConfig",
    "EvaluationSetupError",
    "Evaluator",
    "RankWriter",
    "ResultFileError",
    "episode_key",
    "episode_seed",
    "error_info",
    "format_summary",
    "launcher_rank_world",
    "make_record",
    "read_jsonl",
    "select_episodes",
    "split_key",
    "summarize",
    "write_done",
    "write_summary",
]
