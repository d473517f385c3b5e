#!/usr/bin/env bash
# GRPO on osworld-gym desktops with verl's agent loop.
#
# NEEDS A GPU MACHINE: CUDA GPUs (sized for one 80 GB GPU with UI-TARS-1.5-7B; not run here;
# raise N_GPUS to spread it), verl with its vLLM rollout in an environment of its own
#   pip install 'osworld-gym[verl]' 'verl[vllm]==0.9.1'
# (verl pins transformers<5.11, which clashes with osworld-gym's `train` extra), and the local
# desktop stack (bash scripts/install_system_deps.sh). It does not run on a CPU-only machine;
# tests/integrations/test_verl_on_cpu.py checks its config (DRY_RUN=1) and the agent loop on CPU.
#
# Run from the repository root:
#   bash examples/verl/train_ui_basics_grpo.sh
# DRY_RUN=1 prints verl's arguments, one a line, instead of training.
set -euo pipefail

MODEL=${MODEL:-ByteDance-Seed/UI-TARS-1.5-7B}
DATA=${DATA:-data/osworld-verl}
N_GPUS=${N_GPUS:-1}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# 4 tasks x 8 rollouts = 32 trajectories a step over 2 agent-loop workers: 16 desktops each
# (desk_size in agent_loop.yaml). ui-basics screenshots (336x224) take 96 image tokens each, so a
# 15-step episode fits in 1024 prompt + 6144 response tokens.
ARGS=(
  algorithm.adv_estimator=grpo
  data.train_files="$DATA/train.parquet"
  data.val_files="$DATA/val.parquet"
  data.train_batch_size=4
  data.max_prompt_length=1024
  data.max_response_length=6144
  data.return_raw_chat=True
  data.filter_overlong_prompts=True
  actor_rollout_ref.model.path="$MODEL"
  actor_rollout_ref.model.use_remove_padding=True
  actor_rollout_ref.model.enable_gradient_checkpointing=True
  actor_rollout_ref.actor.optim.lr=1e-6
  actor_rollout_ref.actor.ppo_mini_batch_size=4
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1
  actor_rollout_ref.actor.use_kl_loss=False
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1
  actor_rollout_ref.rollout.name=vllm
  actor_rollout_ref.rollout.mode=async
  actor_rollout_ref.rollout.n=8
  actor_rollout_ref.rollout.tensor_model_parallel_size=1
  actor_rollout_ref.rollout.gpu_memory_utilization=0.5
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1
  actor_rollout_ref.rollout.max_model_len=8192
  +actor_rollout_ref.rollout.limit_images=15
  actor_rollout_ref.rollout.calculate_log_probs=True
  actor_rollout_ref.rollout.agent.num_workers=2
  actor_rollout_ref.rollout.agent.default_agent_loop=osworld_agent
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$HERE/agent_loop.yaml"
  trainer.n_gpus_per_node="$N_GPUS"
  trainer.nnodes=1
  trainer.logger='["console"]'
  trainer.project_name=osworld-gym
  trainer.experiment_name=ui-basics-grpo
  trainer.total_epochs=15
  trainer.save_freq=-1
  trainer.test_freq=5
  trainer.val_before_train=True
)

if [[ "${DRY_RUN:-0}" == 1 ]]; then
  printf '%s\n' "${ARGS[@]}"
  exit 0
fi

python3 "$HERE/make_dataset.py" --tasks ui-basics --out "$DATA"
exec python3 -m verl.trainer.main_ppo "${ARGS[@]}"
