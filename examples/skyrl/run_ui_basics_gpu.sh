#!/usr/bin/env bash
# GRPO on the ui-basics suite with SkyRL. NEEDS A GPU MACHINE AND PYTHON 3.12.
#
# One node, 1 GPU by default (NUM_GPUS=...), UI-TARS-1.5-7B, 16 trajectories in flight
# (train_batch_size 4 x n_samples_per_prompt 4) on 16 local desktops of 336x224, 15 turns.
# Install first (Python 3.12 venv; skyrl[fsdp]==0.4.0 pins torch 2.13.0, vllm 0.30.0, ray 2.57.0
# and flash-attn 2.8.3, which PyPI has no wheel of: it builds from source against CUDA):
#
#   python3.12 -m venv ~/.venvs/skyrl && . ~/.venvs/skyrl/bin/activate
#   bash scripts/install_system_deps.sh        # Xvfb, openbox, xdotool, ... for local desktops
#   pip install "skyrl[fsdp]==0.4.0"
#   pip install -e ".[guest,skyrl]" && pip install --no-deps pyautogui==0.9.54 mouseinfo==0.1.3
#
# Then: bash examples/skyrl/run_ui_basics_gpu.sh [more key=value overrides]
# DRY_RUN=1 prints the command instead of running it.
#
# Rules the numbers follow (see osworld_gym/integrations/skyrl.py):
# * desktops (DESK_SIZE, written into the dataset rows) >= trajectories in flight, for training
#   (TRAIN_BATCH x N_SAMPLES) and for evaluation (EVAL_BATCH x eval_n_samples_per_prompt = 1);
# * generator.max_turns = the env's max_steps (15): the env ends episodes (FAIL replacement on
#   the last step, then scoring); a lower max_turns ends them earlier the same way;
# * the context holds 15 screenshots: 336x224 is 96 image tokens for Qwen2.5-VL (28-pixel
#   patches after merging), so 15 turns stay far below max_input_length.
set -euo pipefail
cd "$(dirname "$0")/../.."

: "${MODEL:=ByteDance-Seed/UI-TARS-1.5-7B}"
: "${NUM_GPUS:=1}"
: "${DATA:=$HOME/data/osworld-ui-basics}"
: "${TRAIN_BATCH:=4}"
: "${N_SAMPLES:=4}"
: "${EVAL_BATCH:=16}"
: "${DESK_SIZE:=16}"
: "${LOGGER:=console}"

if [ ! -f "$DATA/train.parquet" ]; then
  python examples/skyrl/make_dataset.py --out "$DATA" --desk-size "$DESK_SIZE"
fi

CMD=(python examples/skyrl/train_osworld.py
  data.train_data="['$DATA/train.parquet']"
  data.val_data="['$DATA/validation.parquet']"
  environment.env_class=osworld
  environment.skyrl_gym.max_env_workers=32
  generator.vision_language_generator=true
  generator.batched=false
  generator.use_conversation_multi_turn=true
  generator.max_turns=15
  generator.n_samples_per_prompt="$N_SAMPLES"
  generator.eval_n_samples_per_prompt=1
  generator.max_input_length=16384
  generator.sampling_params.max_generate_length=512
  generator.sampling_params.temperature=1.0
  generator.inference_engine.num_engines="$NUM_GPUS"
  generator.inference_engine.tensor_parallel_size=1
  generator.inference_engine.gpu_memory_utilization=0.6
  generator.inference_engine.engine_init_kwargs.max_model_len=20480
  trainer.policy.model.path="$MODEL"
  trainer.strategy=fsdp
  trainer.placement.colocate_all=true
  trainer.placement.policy_num_gpus_per_node="$NUM_GPUS"
  trainer.placement.ref_num_gpus_per_node="$NUM_GPUS"
  trainer.algorithm.advantage_estimator=grpo
  trainer.algorithm.use_kl_loss=true
  trainer.algorithm.kl_loss_coef=0.001
  trainer.policy.optimizer_config.lr=1.0e-6
  trainer.train_batch_size="$TRAIN_BATCH"
  trainer.policy_mini_batch_size="$TRAIN_BATCH"
  trainer.micro_forward_batch_size_per_gpu=1
  trainer.micro_train_batch_size_per_gpu=1
  trainer.max_prompt_length=2048
  trainer.epochs=5
  trainer.eval_batch_size="$EVAL_BATCH"
  trainer.eval_before_train=true
  trainer.eval_interval=5
  trainer.ckpt_interval=10
  trainer.logger="$LOGGER"
  trainer.project_name=osworld-gym
  trainer.run_name=ui-basics-grpo
  trainer.ckpt_path="$HOME/ckpts/osworld-ui-basics"
  trainer.export_path="$HOME/exports/osworld-ui-basics"
  "$@")

if [ "${DRY_RUN:-0}" = "1" ]; then
  printf '%q ' "${CMD[@]}"
  echo
else
  "${CMD[@]}"
fi
