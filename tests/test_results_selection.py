"""Episode keys, selection/sharding, stable seeds and launcher rank (SPEC §8)."""

import os
import subprocess
import sys

import pytest

from habitat_mosnav.evaluation.selection import episode_pool, launcher_rank_world, select_episodes
from habitat_mosnav.keys import episode_key, episode_seed, split_key

KEYS = [episode_key("val", "sceneA", f"q{i:04d}-many-0") for i in range(7)]


def test_key_format_and_roundtrip():
    key = episode_key("val", "TEEsavR23oF", "q0007-many-0")
    assert key == "val::TEEsavR23oF::q0007-many-0"
    assert split_key(key) == ("val", "TEEsavR23oF", "q0007-many-0")
    with pytest.raises(ValueError, match="episode_id 'a::b' must not contain"):
        episode_key("val", "s", "a::b")


def test_chinese_doc_example_seven_episodes_three_ranks():
    shuffled = KEYS[::-1]
    shards = [select_episodes(shuffled, rank=r, world_size=3) for r in range(3)]
    assert [i for i, _ in shards[0]] == [0, 3, 6]
    assert [i for i, _ in shards[1]] == [1, 4]
    assert [i for i, _ in shards[2]] == [2, 5]
    assert [k for _, k in shards[0]] == [KEYS[0], KEYS[3], KEYS[6]]
    # Union of the shards is the whole selection, each key once.
    assert sorted(k for s in shards for _, k in s) == KEYS


def test_offset_and_limit():
    assert select_episodes(KEYS, limit=0) == []
    assert select_episodes(KEYS, limit=-1) == list(enumerate(KEYS))
    assert select_episodes(KEYS, offset=5) == [(0, KEYS[5]), (1, KEYS[6])]
    assert select_episodes(KEYS, offset=2, limit=3) == [(0, KEYS[2]), (1, KEYS[3]), (2, KEYS[4])]
    assert select_episodes(KEYS, offset=7) == []
    assert select_episodes(KEYS, offset=100, limit=3) == []
    assert select_episodes(KEYS, limit=100) == list(enumerate(KEYS))
    # Sharding applies after offset/limit; global indices are positions in the selection.
    assert select_episodes(KEYS, offset=1, limit=4, rank=1, world_size=2) == [
        (1, KEYS[2]),
        (3, KEYS[4]),
    ]
    # More ranks than episodes: the extra ranks get nothing.
    assert select_episodes(KEYS[:2], rank=3, world_size=4) == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(offset=-1), "offset"),
        (dict(limit=-2), "limit"),
        (dict(world_size=0), "world_size"),
        (dict(rank=3, world_size=3), "rank 3 is outside 0..2"),
        (dict(limit=1.5), "limit"),
    ],
)
def test_bad_selection_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        select_episodes(KEYS, **kwargs)


def test_episode_pool_takes_the_first_scenes_and_episodes_by_name():
    # scenes b, a, c with keys out of order; --limit 2 keeps scenes a and b (by name),
    # --episode-limit 2 their first two keys each
    keyed = [
        ("val::b::q3", "b", "B3"),
        ("val::a::q2", "a", "A2"),
        ("val::c::q1", "c", "C1"),
        ("val::a::q1", "a", "A1"),
        ("val::b::q1", "b", "B1"),
        ("val::a::q3", "a", "A3"),
    ]
    pool = episode_pool(keyed, scene_limit=2, episode_limit=2)
    assert list(pool.items()) == [
        ("val::a::q1", "A1"),
        ("val::a::q2", "A2"),
        ("val::b::q1", "B1"),
        ("val::b::q3", "B3"),
    ]
    assert len(episode_pool(keyed)) == 6 and len(episode_pool(keyed, -1, -1)) == 6
    assert episode_pool(keyed, scene_limit=0) == {}


def test_duplicate_keys_refused():
    with pytest.raises(ValueError, match="duplicate episode key"):
        select_episodes([KEYS[0], KEYS[0]])


def test_seed_stable_across_processes_and_independent_of_order():
    here = [episode_seed(7, k) for k in KEYS]
    code = (
        "from habitat_mosnav.keys import episode_seed, episode_key\n"
        "keys=[episode_key('val','sceneA',f'q{i:04d}-many-0') for i in range(7)]\n"
        "print(','.join(str(episode_seed(7,k)) for k in keys))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONHASHSEED="12345"),
    )
    assert [int(x) for x in out.stdout.strip().splitlines()[-1].split(",")] == here
    assert len(set(here)) == 7
    assert all(0 <= s < 2**31 for s in here)
    assert episode_seed(8, KEYS[0]) != episode_seed(7, KEYS[0])
    # A pinned value: changing the hash would silently change every published run.
    assert episode_seed(0, "val::sceneA::q0000-many-0") == 1527510772


def test_launcher_rank_world():
    assert launcher_rank_world({}) == (0, 1)
    assert launcher_rank_world({"RANK": "2", "WORLD_SIZE": "4"}) == (2, 4)
    assert launcher_rank_world({"SLURM_PROCID": "1", "SLURM_NTASKS": "3"}) == (1, 3)
    # torchrun wins over SLURM (torchrun inside a SLURM allocation).
    assert launcher_rank_world(
        {"RANK": "0", "WORLD_SIZE": "2", "SLURM_PROCID": "5", "SLURM_NTASKS": "8"}
    ) == (0, 2)
    with pytest.raises(ValueError, match="RANK='x'"):
        launcher_rank_world({"RANK": "x", "WORLD_SIZE": "2"})
    with pytest.raises(ValueError, match="not a valid rank"):
        launcher_rank_world({"RANK": "4", "WORLD_SIZE": "2"})
    # given values (--rank/--world-size, EvaluationConfig) win one by one; both given: the
    # launcher's variables are not read at all (a broken one does not matter)
    launched = {"RANK": "2", "WORLD_SIZE": "4"}
    assert launcher_rank_world(launched, rank=1) == (1, 4)
    assert launcher_rank_world(launched, world_size=8) == (2, 8)
    assert launcher_rank_world({"RANK": "x"}, rank=0, world_size=3) == (0, 3)
