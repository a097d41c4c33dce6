#!/usr/bin/env bash
# Thin SLIME launcher, for recipes that run
#
#   ray job submit ... -- bash scripts/slime_launcher.sh <train.py arguments...>
#
# Ray hands the entrypoint to /bin/sh -c as one string, so a recipe that puts
# "${MODEL_ARGS[@]}" in that string has it expanded by the outer shell, where
# the array is undefined: train.py silently gets no model arguments. Here the
# array is defined and expanded inside this script, and every argument crosses
# as argv, never as a shell string.
#
#   MODEL_SCRIPT        optional file sourced first; it defines MODEL_ARGS=(...)
#   SLIME_TRAIN_SCRIPT  the training entry point (default: train.py)
#   PYTHON              interpreter (default: python3)
#   SLIME_REWARD_*      where the reward service is: see docs/slime.md
#
# `reward-service slime launch` runs the preflight, then execs
#   $PYTHON $SLIME_TRAIN_SCRIPT "${MODEL_ARGS[@]}" "$@" --rm-type remote_rm --rm-url <URL>
set -euo pipefail

MODEL_ARGS=()
if [[ -n "${MODEL_SCRIPT:-}" ]]; then
    # shellcheck source=/dev/null
    source "${MODEL_SCRIPT}"
fi
PYTHON="${PYTHON:-python3}"

exec "${PYTHON}" -m reward_service slime launch -- \
    "${PYTHON}" "${SLIME_TRAIN_SCRIPT:-train.py}" "${MODEL_ARGS[@]}" "$@"
