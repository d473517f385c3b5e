"""The subcommands of ``osworld-gym``, one module each, and what they share.

* :mod:`.doctor` -- checks the host for each provider and prints the fix for what is missing.
* :mod:`.tasks` -- lists suites and tasks, shows one, reports which are fully supported.
* :mod:`.run` -- runs an agent (:mod:`.agents`; the bundled suites' scripted solutions are
  :mod:`.oracle_agent` and :mod:`.oracles`) over tasks on an env pool, writing OSWorld's results
  layout (:mod:`.results`), a live progress display (:mod:`.progress`) and a summary
  (:mod:`.summary`); resumable.
* :mod:`.view` -- a self-contained HTML report of a run (:mod:`.html_report`).
* :mod:`.export` -- a run or a replay buffer as a Hugging Face ``datasets`` Parquet dataset.
* :mod:`.guest` -- ``serve-guest``: the guest server of a desktop.
* :mod:`.image` -- builds guest images from the recipes in ``vm_images/``.
* :mod:`.desktop` and :mod:`.play` -- a bare desktop, and a few quick episodes.

Each subcommand module has ``add_parser(subparsers)`` and a handler taking the parsed args.
"""
