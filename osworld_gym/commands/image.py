"""``osworld-gym image build``: the guest desktop image from the recipes in ``vm_images/``.

A front door to :func:`osworld_gym.providers.docker_image.build_image` (Debian packages
through debootstrap, ``docker import``, then ``docker build``; nothing pulled from a
registry). The recipe is part of the source checkout, not of the wheel: run it from a checkout
or point ``--recipe-dir`` (or ``$OSWORLD_GYM_VM_IMAGES``) at its ``vm_images`` folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``image``."""
    image = sub.add_parser("image", help="build guest images from vm_images/ recipes")
    actions = image.add_subparsers(dest="image_action", required=True)
    build = actions.add_parser("build", help="build (or find cached) osworld-gym/desktop")
    build.add_argument("--recipe-dir", help="the vm_images folder (default: this checkout's)")
    build.add_argument("--cache-dir", help="root filesystem tarball cache")
    build.add_argument("--repository", help="image repository (default osworld-gym/desktop)")
    build.add_argument("--base-url", help="docker engine (default: DOCKER_HOST or the socket)")
    build.add_argument("--rebuild", action="store_true", help="redo the project layer")
    build.set_defaults(func=image_build_command)


def image_build_command(args: argparse.Namespace) -> int:
    """Run ``image build``."""
    try:
        from osworld_gym.providers import docker_image
    except ImportError as e:  # the docker SDK is an optional dependency
        sys.stderr.write(
            f"osworld-gym image build needs the docker SDK ({e}); pip install docker\n"
        )
        return 1
    from osworld_gym.errors import OSWorldGymError

    if args.recipe_dir and not (Path(args.recipe_dir) / "build_rootfs.sh").is_file():
        # A folder the user named must be the recipe: never fall back to another one.
        sys.stderr.write(
            f"osworld-gym image build: {args.recipe_dir} holds no build_rootfs.sh; point "
            "--recipe-dir at the vm_images folder of an osworld-gym checkout\n"
        )
        return 1
    kwargs: dict[str, Any] = {"recipe_dir": args.recipe_dir, "rebuild": args.rebuild}
    if args.cache_dir:
        kwargs["cache_dir"] = args.cache_dir
    if args.repository:
        kwargs["repository"] = args.repository
    if args.base_url:
        kwargs["base_url"] = args.base_url
    try:
        recipe = docker_image.find_recipe_dir(args.recipe_dir)
        sys.stderr.write(f"building from {recipe} (the first build debootstraps: minutes)\n")
        built = docker_image.build_image(**kwargs)
    except OSWorldGymError as e:  # a failed step, or the docker SDK missing (with its hint)
        sys.stderr.write(f"osworld-gym image build: {e}\n")
        return 1
    sys.stdout.write(
        f"{', '.join(built.tags)} ({built.image_id[:19]}, {built.size_bytes / 2**20:.0f} MiB) "
        f"ready in {built.seconds:.0f} s; base {'built' if built.built_base else 'cached'}, "
        f"image {'built' if built.built_image else 'reused'}\n"
    )
    return 0
