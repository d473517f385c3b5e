"""The project's metadata says one thing everywhere: version, addresses, supported Pythons."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from osworld_gym.version import __version__

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (the eval extra)")

ROOT = Path(__file__).resolve().parents[1]


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config


def _project_urls() -> dict[str, str]:
    lines = _setup_cfg()["metadata"]["project_urls"].strip().splitlines()
    return {k.strip(): v.strip() for k, v in (line.split("=", 1) for line in lines)}


def test_the_docs_site_names_the_projects_addresses() -> None:
    # mkdocs.yml's tags (!!python/name ...) are not plain YAML: read the two keys only.
    lines = (ROOT / "mkdocs.yml").read_text().splitlines()
    keys = dict(line.split(": ", 1) for line in lines if line.startswith(("site_url", "repo_url")))
    urls = _project_urls()
    assert keys["site_url"] == urls["Documentation"]
    assert keys["repo_url"] == urls["Source"] == _setup_cfg()["metadata"]["url"]


def test_citation_names_this_version_and_the_source() -> None:
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert citation["version"] == __version__
    assert citation["repository-code"] == _project_urls()["Source"]


def test_the_changelog_has_this_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{__version__}] - " in text and "## [Unreleased]" in text


def test_the_declared_pythons_are_the_floor_and_the_classifiers() -> None:
    metadata = _setup_cfg()
    assert metadata["options"]["python_requires"].strip() == ">=3.10"
    classifiers = metadata["metadata"]["classifiers"]
    for version in ("3.10", "3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
