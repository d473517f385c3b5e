"""The default HOME's LibreOffice settings name properties the installed LibreOffice knows."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from osworld_gym.providers.desktop.home_skeleton import write_default_home

OOR = "{http://openoffice.org/2001/registry}"
LIBREOFFICE_SCHEMA = Path("/usr/lib/libreoffice/share/registry/main.xcd")
TEMPLATE_CHOOSER = ("/org.openoffice.Office.Impress/Misc/NewDoc", "AutoPilot")


def _settings(home: Path) -> dict[tuple[str, str], str | None]:
    xcu = home / ".config" / "libreoffice" / "4" / "user" / "registrymodifications.xcu"
    root = ElementTree.parse(xcu).getroot()
    return {
        (item.get(f"{OOR}path"), prop.get(f"{OOR}name")): prop.findtext("value")
        for item in root.iter("item")
        for prop in item.iter("prop")
    }


def test_impress_template_chooser_is_off(tmp_path: Path) -> None:
    write_default_home(tmp_path)
    assert _settings(tmp_path)[TEMPLATE_CHOOSER] == "false"


def test_template_chooser_setting_is_in_the_installed_schema() -> None:
    # LibreOffice drops a registrymodifications item its schema lacks, silently: the skeleton's
    # earlier `Misc/StartWithTemplate` left 7.4's chooser on.
    if not LIBREOFFICE_SCHEMA.is_file():
        pytest.skip("LibreOffice is not installed here")
    root = ElementTree.parse(LIBREOFFICE_SCHEMA).getroot()
    impress = next(
        schema
        for schema in root.iter("{http://openoffice.org/2001/registry}component-schema")
        if schema.get(f"{OOR}name") == "Impress"
    )
    query = "./component/group[@oor:name='Misc']/group[@oor:name='NewDoc']/prop"
    names = {p.get(f"{OOR}name") for p in impress.findall(query, {"oor": OOR[1:-1]})}
    assert TEMPLATE_CHOOSER[1] in names
