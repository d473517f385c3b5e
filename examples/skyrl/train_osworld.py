"""SkyRL training entrypoint with the ``osworld`` env registered. NEEDS A GPU AND PYTHON 3.12.

SkyRL's trainer (``skyrl`` 0.4, Python >= 3.12, extra ``fsdp`` for vLLM and FSDP) runs the
experiment in a Ray task; its generator calls ``skyrl_gym.make(environment.env_class, ...)``
there, so the env must be registered inside that task. Importing
``osworld_gym.integrations.skyrl`` does it. Desktops are launched by that task's process on its
node (the ``local`` provider: Xvfb, a window manager and the guest server per desktop), one desk
of ``desk_size`` desktops per env setting, reused across episodes.

Arguments are SkyRL's ``key=value`` config overrides; ``run_ui_basics_gpu.sh`` has the full
command. The env settings travel in the dataset rows (``make_dataset.py``), because SkyRL's
command line refuses config keys its classes do not declare.
"""

from __future__ import annotations

import sys

import ray
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.entrypoints.main_base import BasePPOExp
from skyrl.train.utils import validate_cfg
from skyrl.train.utils.utils import initialize_ray


@ray.remote(num_cpus=1)
def osworld_entrypoint(cfg: SkyRLTrainConfig) -> None:
    """The trainer's process: register the env here, where the generator makes the envs."""
    from osworld_gym.integrations import skyrl as osworld_skyrl

    osworld_skyrl.register_osworld(cfg.environment.env_class)
    BasePPOExp(cfg).run()


def main() -> None:
    """Parse SkyRL overrides, start Ray, run the experiment."""
    cfg = SkyRLTrainConfig.from_cli_overrides(sys.argv[1:])
    if not cfg.generator.vision_language_generator:
        raise SystemExit(
            "osworld observations are screenshots: set generator.vision_language_generator=true"
        )
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(osworld_entrypoint.remote(cfg))


if __name__ == "__main__":
    main()
