"""The subcommands of ``osworld-gym``, one module each, and what they share.

* ``.doctor`` -- checks the host for each provider and prints the fix for what is missing.
* ``.tasks`` -- lists suites and tasks, shows one, reports which are fully supported.
* ``.run`` -- runs an agent (``.agents``; the bundled suites' scripted solutions are
  ``osworld_gym.policies.oracles``) over tasks on an env pool, writing OSWorld's results
  layout (``.results``), a live progress display (``.progress``) and a summary
  (``.summary``); resumable.
* ``.view`` -- a self-contained HTML report of a run (``.html_report``).
* ``.export`` -- a run or a replay buffer as a Hugging Face ``datasets`` Parquet dataset.
* ``.guest`` -- ``serve-guest``: the guest server of a desktop.
* ``.image`` -- builds guest images from the recipes in ``vm_images/``.
* ``.desktop`` and ``.play`` -- a bare desktop, and a few quick episodes.

Each subcommand module has ``add_parser(subparsers)`` and a handler taking the parsed args.
"""
