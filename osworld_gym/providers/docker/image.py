"""Building the guest desktop image ``osworld-gym/desktop`` from Debian packages, with caching.

The image is made in two layers, each skipped when its inputs did not change:

1. the base: ``vm_images/build_rootfs.sh --no-project`` debootstraps Debian 12 with the
   packages of ``vm_images/packages.txt`` and the guest's Python packages; the root filesystem
   is kept as a tarball ``<cache_dir>/rootfs-<hash>.tar`` (the hash covers the package lists
   and the recipe's version) and imported with ``docker import`` as ``osworld-gym/base:<hash>``;
2. the project: a ``docker build`` FROM that base installs osworld-gym (a wheel of this
   repository's source), the session script and the default HOME. The image carries the label
   ``org.osworld-gym.content`` (a hash of the base and of every file that went in); a build
   with the same content reuses the existing image and only (re)tags it.

Nothing is pulled from a registry. The base step needs root, ``debootstrap`` and access to a
Debian mirror and PyPI; later builds need neither. ``bash scripts/build_guest_image.sh`` runs
``build_image()``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from osworld_gym.errors import ProviderError
from osworld_gym.providers.docker.client import connect
from osworld_gym.providers.recipes import find_recipe_dir

if TYPE_CHECKING:
    import docker

logger = logging.getLogger(__name__)

IMAGE_REPOSITORY = "osworld-gym/desktop"
BASE_REPOSITORY = "osworld-gym/base"
DEFAULT_CACHE_DIR = "/var/cache/osworld-gym"
CONTENT_LABEL = "org.osworld-gym.content"
BASE_LABEL = "org.osworld-gym.base"

# The project layer. The base has no metadata (docker import), so everything is set here.
# MOZ_APP_REMOTINGNAME: Thunderbird's window class as on OSWorld's Ubuntu (see the local
# provider's environment). No USER: the entrypoint starts as root to keep the guest's token
# from the desktop's user `user`, as whom it runs every desktop program (osworld-gym-desktop).
_DOCKERFILE = """\
FROM {base}
COPY bundle /tmp/osworld-gym-bundle
RUN sh /tmp/osworld-gym-bundle/install_project.sh /tmp/osworld-gym-bundle \\
 && rm -rf /tmp/osworld-gym-bundle
ENV LANG=C.UTF-8 \\
    PATH=/opt/osworld-gym/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    MOZ_APP_REMOTINGNAME=thunderbird
WORKDIR /home/user
ENTRYPOINT ["/usr/local/bin/osworld-gym-desktop"]
"""


@dataclass(frozen=True)
class ImageBuild:
    """What ``build_image()`` produced.

    Attributes:
        tags: The image's tags, ``osworld-gym/desktop:<version>`` first, then ``:latest``.
        image_id: The image's ID.
        base_hash: Hash of the base layer's inputs (package lists, recipe version).
        content_hash: The image's content label.
        built_base: Whether the base was made now (False: taken from the cache).
        built_image: Whether ``docker build`` ran (False: an image with this content existed).
        seconds: Wall time of the whole call.
        size_bytes: The image's size as the engine reports it.
    """

    tags: tuple[str, ...]
    image_id: str
    base_hash: str
    content_hash: str
    built_base: bool
    built_image: bool
    seconds: float
    size_bytes: int

    @property
    def tag(self) -> str:
        """The versioned tag."""
        return self.tags[0]


def base_hash(recipe_dir: Path) -> str:
    """Hash of the base layer's inputs, as ``build_rootfs.sh --print-hash`` computes it."""
    return _run_recipe(recipe_dir, ["--print-hash"]).strip()


def build_image(
    *,
    recipe_dir: str | Path | None = None,
    cache_dir: str | Path = DEFAULT_CACHE_DIR,
    repository: str = IMAGE_REPOSITORY,
    client: docker.DockerClient | None = None,
    base_url: str | None = None,
    rebuild: bool = False,
) -> ImageBuild:
    """Build (or find in the caches) the guest desktop image and tag it.

    Args:
        recipe_dir: The ``vm_images`` folder (default: see ``find_recipe_dir()``).
        cache_dir: Where root filesystem tarballs are kept between builds.
        repository: Image repository; tags are ``<version>`` and ``latest``.
        client: A docker client (default: ``connect()``
            to ``base_url``).
        base_url: Engine to build on when no client is given.
        rebuild: Redo the project layer even if an image with the same content exists (the
            cached root filesystem is still used; delete it from ``cache_dir`` to redo it).

    Raises:
        ProviderError: a step failed; the message carries its output's tail.
    """
    start = time.perf_counter()
    recipe = find_recipe_dir(recipe_dir)
    client = client or connect(base_url)
    with _build_lock(Path(cache_dir)):
        return _build_locked(client, recipe, Path(cache_dir), repository, rebuild, start)


@contextlib.contextmanager
def _build_lock(cache_dir: Path) -> Iterator[None]:
    """One build at a time per cache folder (parallel test sessions share the caches)."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(cache_dir / "build.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a cache we cannot write: building the base would fail with its message
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _build_locked(
    client: docker.DockerClient,
    recipe: Path,
    cache_dir: Path,
    repository: str,
    rebuild: bool,
    start: float,
) -> ImageBuild:
    from osworld_gym import __version__

    base_key = base_hash(recipe)
    base_tag = f"{BASE_REPOSITORY}:{base_key}"
    built_base = _ensure_base(client, recipe, cache_dir, base_key, base_tag)

    with tempfile.TemporaryDirectory(prefix="osworld-gym-image-") as work:
        context = Path(work)
        _run_recipe(recipe, ["--bundle", str(context / "bundle")])
        dockerfile = _DOCKERFILE.format(base=base_tag)
        (context / "Dockerfile").write_text(dockerfile)
        content = _content_hash(base_key, dockerfile, context / "bundle")
        tags = (f"{repository}:{__version__}", f"{repository}:latest")
        image = None if rebuild else _image_with_content(client, content)
        built_image = image is None
        if image is None:
            logger.info("docker build of %s (content %s)", tags[0], content)
            image = _docker_build(client, context, tags[0], base_key, content)
    for tag in tags:
        name, _, version = tag.rpartition(":")
        image.tag(name, version)
    image.reload()
    _prune_untagged(client)
    result = ImageBuild(
        tags=tags,
        image_id=image.id,
        base_hash=base_key,
        content_hash=content,
        built_base=built_base,
        built_image=built_image,
        seconds=time.perf_counter() - start,
        size_bytes=int(image.attrs.get("Size", 0)),
    )
    logger.info("image %s ready in %.1f s", result.tag, result.seconds)
    return result


def _ensure_base(
    client: docker.DockerClient, recipe: Path, cache_dir: Path, key: str, tag: str
) -> bool:
    """Import the base image from the cached rootfs tarball, building that first if needed."""
    sdk_errors = _sdk_errors()
    try:
        client.images.get(tag)
        return False
    except sdk_errors.ImageNotFound:
        pass
    tarball = cache_dir / f"rootfs-{key}.tar"
    built = False
    if not tarball.exists():
        _build_rootfs_tarball(recipe, cache_dir, key, tarball)
        built = True
    logger.info("docker import %s as %s", tarball, tag)
    name, _, version = tag.rpartition(":")
    try:
        client.api.import_image_from_file(str(tarball), repository=name, tag=version)
        client.images.get(tag)
    except sdk_errors.DockerException as e:
        raise ProviderError(f"docker import of {tarball} failed: {e}") from e
    return built


def _build_rootfs_tarball(recipe: Path, cache_dir: Path, key: str, tarball: Path) -> None:
    if os.geteuid() != 0:
        raise ProviderError(
            "building the guest's root filesystem (debootstrap) needs root: run "
            "`sudo bash scripts/build_guest_image.sh` once; later builds reuse "
            f"{tarball}"
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    rootfs = cache_dir / f"rootfs-{key}"
    log = cache_dir / f"rootfs-{key}.log"
    logger.info("building the root filesystem in %s (several minutes; log %s)", rootfs, log)
    # A build killed in its chroot leaves /proc, /sys and /dev mounted there, and the recipe
    # mounts only what is not mounted yet (and unmounts only what it mounted): release them.
    _release_mounts_under(rootfs)
    _run_recipe(recipe, ["--no-project", str(rootfs)], log=log)
    _release_mounts_under(rootfs)
    partial = tarball.with_suffix(".tar.partial")
    # Numeric owners: the image's users are the root filesystem's, not this host's. One file
    # system: whatever is still mounted inside is the host's, never the image's.
    _check_call(
        ["tar", "--numeric-owner", "--one-file-system", "-C", str(rootfs), "-cf", str(partial), "."]
    )
    partial.rename(tarball)  # a complete tarball or none: an interrupted build starts over
    shutil.rmtree(rootfs)


def mounts_under(folder: Path, mounts_file: Path = Path("/proc/self/mounts")) -> list[Path]:
    """The mount points at or below ``folder``, deepest first (the order to unmount them).

    Args:
        folder: The folder.
        mounts_file: The mount table to read (``/proc/self/mounts``; a file in tests).
    """
    root = Path(os.path.realpath(folder))
    found = []
    for line in mounts_file.read_text().splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        # The table escapes spaces, tabs, newlines and backslashes as octal.
        point = Path(fields[1].encode().decode("unicode_escape"))
        if point == root or root in point.parents:
            found.append(point)
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def _release_mounts_under(folder: Path) -> None:
    for point in mounts_under(folder):
        logger.warning("unmounting %s, left mounted by an interrupted build", point)
        _check_call(["umount", "--lazy", str(point)])


def _docker_build(
    client: docker.DockerClient, context: Path, tag: str, base_key: str, content: str
) -> docker.models.images.Image:
    sdk_errors = _sdk_errors()
    labels = {CONTENT_LABEL: content, BASE_LABEL: base_key, "org.osworld-gym.image": "desktop"}
    try:
        # No network during the build: the project layer installs a local wheel only.
        image, _ = client.images.build(
            path=str(context), tag=tag, labels=labels, network_mode="none", rm=True, forcerm=True
        )
    except sdk_errors.BuildError as e:
        output = "".join(str(chunk.get("stream", chunk)) for chunk in e.build_log)
        raise ProviderError(f"docker build of {tag} failed: {e}\n{output[-3000:]}") from e
    except sdk_errors.DockerException as e:
        raise ProviderError(f"docker build of {tag} failed: {e}") from e
    return image


def _prune_untagged(client: docker.DockerClient) -> None:
    """Remove earlier builds of the desktop image that lost their tags to the new one."""
    sdk_errors = _sdk_errors()
    filters = {"label": "org.osworld-gym.image=desktop", "dangling": True}
    for old in client.images.list(filters=filters):
        try:
            client.images.remove(old.id)
        except sdk_errors.APIError as e:  # still used by a container: keep it
            logger.info("keeping untagged image %s: %s", old.short_id, e)


def _image_with_content(
    client: docker.DockerClient, content: str
) -> docker.models.images.Image | None:
    images = client.images.list(filters={"label": f"{CONTENT_LABEL}={content}"})
    return images[0] if images else None


def _content_hash(base_key: str, dockerfile: str, bundle: Path) -> str:
    """Hash of everything that goes into the project layer (wheel by its members' contents)."""
    digest = hashlib.sha256(f"{base_key}\n{dockerfile}".encode())
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(bundle)).encode() + b"\0")
        digest.update(oct(path.stat().st_mode & 0o777).encode())
        if path.suffix == ".whl":
            # A wheel's zip timestamps change on every build; its members' bytes do not.
            with zipfile.ZipFile(path) as wheel:
                for name in sorted(wheel.namelist()):
                    digest.update(name.encode() + b"\0" + wheel.read(name))
        else:
            digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def _run_recipe(recipe: Path, args: list[str], *, log: Path | None = None) -> str:
    """Run ``build_rootfs.sh`` with ``args``; its output goes to ``log`` when given."""
    argv = ["bash", str(recipe / "build_rootfs.sh"), *args]
    # The recipe builds wheels with this interpreter, which has pip (it installed osworld-gym).
    env = {**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)}
    if log is None:
        return _check_call(argv, env)
    with open(log, "w") as out:
        code = subprocess.call(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise ProviderError(f"{' '.join(argv)} failed (exit {code}); log {log}:\n{tail}")
    return ""


def _check_call(argv: list[str], env: dict[str, str] | None = None) -> str:
    """Run a command; its stdout, or a ProviderError carrying its output's tail."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    except OSError as e:
        raise ProviderError(f"cannot run {argv[0]}: {e}") from e
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-3000:]
        raise ProviderError(f"{' '.join(argv)} failed (exit {done.returncode}):\n{output}")
    return done.stdout


def _sdk_errors() -> object:
    from osworld_gym.providers.docker.client import docker_sdk

    return docker_sdk().errors
