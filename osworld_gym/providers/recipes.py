"""Where the guest image recipes (``vm_images/``) are: a checkout's, or the installed copy.

Kept free of the docker SDK so ``osworld-gym image build --dry-run`` and ``doctor`` can find
the recipe on any install. Looked up in this order: a folder the caller named (it must hold the
recipe: no fallback to another), ``$OSWORLD_GYM_VM_IMAGES``, the checkout this package runs from
(an editable install), the copy installed with the package (``osworld_gym/vm_images``, package
data), then the current folder and its parents.
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

from osworld_gym.errors import ProviderError

RECIPE_ENV = "OSWORLD_GYM_VM_IMAGES"
"""Environment variable naming a ``vm_images`` folder."""
RECIPE_MARKER = "build_rootfs.sh"
"""The file that makes a folder a recipe."""


class RecipeNotFound(ProviderError, LookupError):
    """No folder holding ``build_rootfs.sh`` where the recipe is looked up."""


def packaged_recipe_dir() -> Path | None:
    """The recipe installed with the package (``osworld_gym/vm_images``), if it is there."""
    # A wheel install unpacks into a real folder; the recipe's scripts must run from a path.
    path = Path(str(importlib.resources.files("osworld_gym") / "vm_images"))
    return path.resolve() if (path / RECIPE_MARKER).is_file() else None


def find_recipe_dir(recipe_dir: str | Path | None = None) -> Path:
    """The ``vm_images`` folder to build from (the order is in the module's docstring).

    Args:
        recipe_dir: A folder the caller named: it must hold the recipe.

    Raises:
        RecipeNotFound: the named folder holds no recipe, or none was found anywhere.
    """
    if recipe_dir is not None:
        named = Path(recipe_dir)
        if not (named / RECIPE_MARKER).is_file():
            raise RecipeNotFound(
                f"{recipe_dir} holds no {RECIPE_MARKER}; point --recipe-dir at a vm_images folder "
                "(an osworld-gym checkout's, or osworld_gym/vm_images of an installed one)"
            )
        return named.resolve()
    candidates: list[Path] = []
    if os.environ.get(RECIPE_ENV):
        candidates.append(Path(os.environ[RECIPE_ENV]))
    candidates.append(Path(__file__).resolve().parents[2] / "vm_images")  # a checkout
    packaged = packaged_recipe_dir()
    if packaged is not None:
        candidates.append(packaged)
    cwd = Path.cwd().resolve()
    candidates += [folder / "vm_images" for folder in (cwd, *cwd.parents)]
    for candidate in candidates:
        if (candidate / RECIPE_MARKER).is_file():
            return candidate.resolve()
    raise RecipeNotFound(
        f"cannot find vm_images/{RECIPE_MARKER}: this osworld-gym was installed without its "
        f"recipes; set {RECIPE_ENV} or --recipe-dir to a checkout's vm_images folder"
    )
