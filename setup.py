"""Package layout that setup.cfg cannot express: three source folders, three import names.

`agents/` installs as `osworld_agents` (the import name `agents` belongs to the OpenAI Agents
SDK) and `envs/` (the bundled task suites, data only) installs as `osworld_gym_envs`.
Metadata and dependencies live in setup.cfg.
"""

from setuptools import find_packages, setup


def _packages(folder: str, import_name: str) -> list[str]:
    return [import_name] + [f"{import_name}.{sub}" for sub in find_packages(folder)]


setup(
    package_dir={
        "osworld_gym": "osworld_gym",
        "osworld_agents": "agents",
        "osworld_gym_envs": "envs",
    },
    packages=(
        _packages("osworld_gym", "osworld_gym")
        + _packages("agents", "osworld_agents")
        + ["osworld_gym_envs"]
    ),
    package_data={
        "osworld_gym": ["py.typed", "guest/*.py", "providers/desktop_bin/*"],
        "osworld_gym_envs": ["**/*"],
    },
    include_package_data=False,
)
