"""Package layout that setup.cfg cannot express: four source folders, three import names.

`agents/` installs as `osworld_agents` (the import name `agents` belongs to the OpenAI Agents
SDK), `envs/` (the bundled task suites, data only) installs as `osworld_gym_envs`, and
`vm_images/` (the guest image recipes, data only) ships inside the package as
`osworld_gym/vm_images/`, so `osworld-gym image build` works from a wheel. Metadata and
dependencies live in setup.cfg.
"""

from setuptools import find_packages, setup


def _packages(folder: str, import_name: str) -> list[str]:
    return [import_name] + [f"{import_name}.{sub}" for sub in find_packages(folder)]


setup(
    package_dir={
        "osworld_gym": "osworld_gym",
        "osworld_agents": "agents",
        "osworld_gym_envs": "envs",
        "osworld_gym.vm_images": "vm_images",
    },
    packages=(
        _packages("osworld_gym", "osworld_gym")
        + _packages("agents", "osworld_agents")
        + ["osworld_gym_envs", "osworld_gym.vm_images"]
    ),
    package_data={
        "osworld_gym": [
            "py.typed",
            "guest/*.py",
            "providers/desktop/bin/*",
            "providers/desktop/gnome_extension/*",
        ],
        "osworld_gym_envs": ["**/*"],
        # Shell scripts and root filesystem files keep their modes (the session scripts under
        # rootfs/usr/local/bin must stay executable in the image).
        "osworld_gym.vm_images": ["**/*"],
    },
    include_package_data=False,
)
