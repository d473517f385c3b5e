"""Drive desktops of an ``osworld-gym serve-env`` server through OpenEnv's WebSocket client.

Terminal 1 (the desktops' machine; the server binds loopback, so reach it over SSH
forwarding, e.g. ``ssh -L 8000:127.0.0.1:8000 host``)::

    osworld-gym serve-env --tasks ui-basics --num-envs 2 --port 8000

Terminal 2::

    python examples/openenv/client.py --url http://127.0.0.1:8000 \\
        --task-id click-colour-01 --task-id type-word-01 --out shots

Each task runs in its own session, all at once. The actions are the ``ui-basics`` oracle's
scripted UI-TARS answers (``--wrong``: a wrong button or word), so the rewards are 1 (0 with
``--wrong``); ``--action`` sends your own texts instead, for any suite. ``--out`` saves every
screenshot.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from osworld_gym.integrations.openenv import (
    OSWorldEnvClient,
    OSWorldObservation,
    decode_screenshot,
)


def scripted_answers(task_id: str, wrong: bool) -> list[str]:
    """The ``ui-basics`` oracle's UI-TARS answers for a task (a wrong one with ``wrong``)."""
    from osworld_gym import load_tasks
    from osworld_gym.policies.oracles.ui_basics import distractor_answer, oracle_responses

    if not wrong:
        return oracle_responses(task_id)
    return oracle_responses(task_id, answer=distractor_answer(load_tasks("ui-basics")[task_id]))


def save(observation: OSWorldObservation, out: Path | None) -> None:
    """Write the observation's screenshot into ``out`` (if given)."""
    if out is not None:
        name = f"{observation.task_id}-{observation.step:02d}.{observation.screenshot_format}"
        (out / name).write_bytes(decode_screenshot(observation))


async def episode(url: str, task_id: str, actions: list[str], out: Path | None) -> str:
    """One episode in a session of its own; returns a line describing it."""
    start = time.monotonic()
    async with OSWorldEnvClient(base_url=url) as env:
        result = await env.reset(task_id=task_id)
        print(f"{task_id}: {result.observation.instruction}")
        save(result.observation, out)
        for action in actions:
            if result.done:
                break
            result = await env.step(action)
            save(result.observation, out)
            error = result.observation.last_action_error
            note = f" -> {error}" if error else ""
            print(f"  {task_id} step {result.observation.step}: {action!r}{note}")
    meta = result.metadata or {}
    return (
        f"{task_id}: reward {result.reward}, done {result.done}, score {meta.get('score')}, "
        f"infra error {meta.get('infra_error')}, {time.monotonic() - start:.1f} s"
    )


async def main(args: argparse.Namespace) -> int:
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    for task_id in args.task_ids:
        actions = args.actions or scripted_answers(task_id, args.wrong)
        runs.append(episode(args.url, task_id, actions, args.out))
    for line in await asyncio.gather(*runs):
        print(line)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--task-id", dest="task_ids", action="append", required=True)
    parser.add_argument("--action", dest="actions", action="append", help="model text to send")
    parser.add_argument("--wrong", action="store_true", help="answer the ui-basics tasks wrongly")
    parser.add_argument("--out", type=Path, help="save each screenshot in this folder")
    sys.exit(asyncio.run(main(parser.parse_args())))
