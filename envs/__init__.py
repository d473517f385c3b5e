"""Environment suites shipped as data (installed as ``osworld_gym_envs``).

Each sub-folder is a task suite in OSWorld's JSON format with its asset files.
"""
