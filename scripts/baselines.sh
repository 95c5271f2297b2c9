#!/usr/bin/env bash
# `make baselines`: random, the frontier agent with ground-truth detection, the PPO
# checkpoint (when one is trained) and the oracle on one benchmark setting, then their
# leaderboard with mosnav-report ($BASELINES_OUT/report/leaderboard.md, index.html).
#
#   BASELINES_BENCHMARK  benchmark setting (default demo/official; HM3D: mosnav-v1/val/official)
#   BASELINES_ARGS       extra mosnav-eval flags (HM3D: --dataset-dir DIR --scene-root DIR)
#   BASELINES_OUT        output directory (default baselines_output), one run folder per agent
#   BASELINES_PPO_CONFIG habitat-baselines config of the checkpoint (default ppo_mos_demo; it
#                        evaluates with its own settings: the config's episodes, steps, sensors)
#   BASELINES_PPO_CKPT   checkpoint (default data/mosnav/$BASELINES_PPO_CONFIG/checkpoints/latest.pth)
#   BASELINES_PPO_ARGS   extra Hydra overrides for its evaluation (HM3D: habitat.dataset.data_path=...)
#   BIN                  where mosnav-eval and python live (default .venv/bin)
set -euo pipefail
BIN=${BIN:-.venv/bin}
OUT=${BASELINES_OUT:-baselines_output}
BENCH=${BASELINES_BENCHMARK:-demo/official}
ARGS=${BASELINES_ARGS:-}
PPO_CONFIG=${BASELINES_PPO_CONFIG:-ppo_mos_demo}
PPO_CKPT=${BASELINES_PPO_CKPT:-data/mosnav/$PPO_CONFIG/checkpoints/latest.pth}
PPO_ARGS=${BASELINES_PPO_ARGS:-}
# the frontier agent's privilege: a semantic camera (habitat_mosnav.agents.frontier.SEMANTIC_SENSOR_OVERRIDE)
SEMANTIC="+habitat/simulator/sim_sensors@habitat.simulator.agents.main_agent.sim_sensors.semantic_sensor=mosnav_semantic_sensor"

rm -rf "$OUT"
run() {
    local name=$1
    shift
    echo "== $name"
    # shellcheck disable=SC2086
    "$BIN/mosnav-eval" --benchmark "$BENCH" $ARGS --save-maps --output-dir "$OUT/$name" "$@"
}
run random --agent random
run frontier_gt --agent habitat_mosnav.agents.frontier:FrontierAgent --set "$SEMANTIC"
RUNS=("$OUT/random")
if [ -f "$PPO_CKPT" ]; then
    echo "== ppo ($PPO_CKPT)"
    # shellcheck disable=SC2086
    "$BIN/python" -m habitat_mosnav.run --config-name="$PPO_CONFIG" habitat_baselines.evaluate=True \
        habitat_baselines.eval_ckpt_path_dir="$PPO_CKPT" habitat_baselines.evaluator.output_dir="$OUT/ppo_eval" \
        mosnav_output_dir="$OUT/ppo_run" $PPO_ARGS
    # one checkpoint, one evaluation folder (eval/<checkpoint name>): that is the run
    evals=("$OUT"/ppo_eval/*/)
    mv "${evals[0]}" "$OUT/ppo"
    rm -rf "$OUT/ppo_eval" "$OUT/ppo_run"
    RUNS+=("$OUT/ppo")
else
    echo "== ppo: no checkpoint at $PPO_CKPT (train one: python -m habitat_mosnav.run --config-name=$PPO_CONFIG); skipped"
fi
run oracle --agent oracle
RUNS+=("$OUT/frontier_gt" "$OUT/oracle")
"$BIN/mosnav-report" "${RUNS[@]}" --out "$OUT/report" --no-progress
echo "table: $OUT/report/leaderboard.md"
