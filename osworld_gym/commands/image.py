"""``osworld-gym image build``: the guest desktop image from the recipes in ``vm_images/``.

A front door to ``osworld_gym.providers.docker.image.build_image()`` (Debian packages
through debootstrap, ``docker import``, then ``docker build``; nothing pulled from a
registry). The recipe ships with the package (``osworld_gym/vm_images``, package data) and is
also the ``vm_images`` folder of a source checkout. It is looked up in this order: ``--recipe-dir``,
``$OSWORLD_GYM_VM_IMAGES``, the checkout this package runs from (an editable install), the copy
installed with the package, then the current folder and its parents.

``--dry-run`` only says which recipe would be used, its base hash and its files: no docker, no
root. A build without the docker SDK (the ``docker`` extra) is refused with exit status 2 and the
command that installs it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

from osworld_gym.extras import check_modules
from osworld_gym.providers.recipes import (
    RECIPE_ENV,
    RECIPE_MARKER,
    RecipeNotFound,
    find_recipe_dir,
)

__all__ = ["RecipeNotFound", "add_parser", "find_recipe_dir", "image_build_command"]


def add_parser(sub: Any) -> None:
    """Register ``image``."""
    image = sub.add_parser("image", help="build guest images from the vm_images/ recipes")
    actions = image.add_subparsers(dest="image_action", required=True)
    build = actions.add_parser(
        "build",
        help="build (or find cached) osworld-gym/desktop",
        description="Build (or find in the caches) the docker provider's desktop image "
        "osworld-gym/desktop from Debian packages. The recipe ships with the package.",
    )
    build.add_argument(
        "--recipe-dir",
        help=f"the vm_images folder (default: ${RECIPE_ENV}, the checkout's, or the installed one)",
    )
    build.add_argument(
        "--cache-dir", help="root filesystem tarball cache (default: the provider's)"
    )
    build.add_argument("--repository", help="image repository (default osworld-gym/desktop)")
    build.add_argument("--base-url", help="docker engine (default: DOCKER_HOST or the socket)")
    build.add_argument("--rebuild", action="store_true", help="redo the project layer")
    build.add_argument(
        "--dry-run",
        action="store_true",
        help="print the recipe folder, its base hash and files; build nothing",
    )
    build.set_defaults(func=image_build_command)


def recipe_files(recipe: Path) -> list[str]:
    """The recipe's files, relative to its folder, sorted (no caches)."""
    return sorted(
        path.relative_to(recipe).as_posix()
        for path in recipe.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )


def image_build_command(args: argparse.Namespace) -> int:
    """Run ``image build``."""
    try:
        recipe = find_recipe_dir(args.recipe_dir)
    except RecipeNotFound as e:
        sys.stderr.write(f"osworld-gym image build: {e}\n")
        return 1
    if args.dry_run:
        return _dry_run(recipe)
    # The docker SDK is an optional dependency: refused here, with the command that adds it.
    check_modules("docker", ["docker"], "osworld-gym image build")
    from osworld_gym.errors import DependencyNotInstalled, OSWorldGymError
    from osworld_gym.providers.docker import image as docker_image

    kwargs: dict[str, Any] = {"recipe_dir": recipe, "rebuild": args.rebuild}
    if args.cache_dir:
        kwargs["cache_dir"] = args.cache_dir
    if args.repository:
        kwargs["repository"] = args.repository
    if args.base_url:
        kwargs["base_url"] = args.base_url
    try:
        sys.stderr.write(f"building from {recipe} (the first build debootstraps: minutes)\n")
        built = docker_image.build_image(**kwargs)
    except DependencyNotInstalled:
        raise  # paramiko for an ssh:// engine: a missing part, reported as the CLI reports them
    except OSWorldGymError as e:  # a failed step
        sys.stderr.write(f"osworld-gym image build: {e}\n")
        return 1
    sys.stdout.write(
        f"{', '.join(built.tags)} ({built.image_id[:19]}, {built.size_bytes / 2**20:.0f} MiB) "
        f"ready in {built.seconds:.0f} s; base {'built' if built.built_base else 'cached'}, "
        f"image {'built' if built.built_image else 'reused'}\n"
    )
    return 0


def _dry_run(recipe: Path) -> int:
    """Print the recipe that would be used: folder, base hash, files."""
    try:
        done = subprocess.run(
            ["bash", str(recipe / RECIPE_MARKER), "--print-hash"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        sys.stderr.write(f"osworld-gym image build: cannot run {RECIPE_MARKER}: {e}\n")
        return 1
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        sys.stderr.write(
            f"osworld-gym image build: {RECIPE_MARKER} --print-hash failed: "
            f"{why[-1] if why else f'exit status {done.returncode}'}\n"
        )
        return 1
    lines = [f"recipe: {recipe}", f"base hash: {done.stdout.strip()}", "files:"]
    lines += [f"  {name}" for name in recipe_files(recipe)]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
