"""Fetching task assets into the cache: resume, checksums, retries, failures (loopback HTTP)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from http_helpers import Served, file_server

from osworld_gym.task_setup.asset_fetch import MANIFEST_NAME, AssetFetcher, FetchSettings
from osworld_gym.task_setup.downloads import AssetCache, AssetUnavailableError
from osworld_gym.tasks.requirements import AssetRef

BIG = os.urandom(3 * (1 << 20) + 123)  # several chunks


def fast(**overrides: float) -> FetchSettings:
    settings = {"jobs": 2, "connect_timeout": 5, "read_timeout": 5, "tries": 3, "backoff": 0.01}
    settings.update(overrides)
    return FetchSettings(**settings)  # type: ignore[arg-type]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture()
def cache(tmp_path: Path) -> AssetCache:
    return AssetCache(tmp_path / "cache", offline=True)


def test_a_dropped_download_resumes_with_range(cache: AssetCache) -> None:
    served = Served(files={"/big.bin": BIG}, drop_once={"/big.bin"})
    waits: list[float] = []
    with file_server(served) as base:
        fetcher = AssetFetcher(cache, fast(), sleep=waits.append)
        summary = fetcher.fetch([AssetRef(base + "/big.bin", "t1", "big.bin", "download")])
    (outcome,) = summary.outcomes
    assert (outcome.status, outcome.attempts, outcome.size) == ("downloaded", 2, len(BIG))
    (first, _), (second, resumed) = served.log
    assert first == second == "/big.bin"
    start = int(resumed.removeprefix("bytes=").removesuffix("-"))  # type: ignore[union-attr]
    assert 0 < start <= len(BIG) // 2  # what arrived before the drop was kept
    assert waits == [0.01]
    target = cache.root / "t1" / "big.bin"
    assert target.read_bytes() == BIG and not target.with_name("big.bin.part").exists()
    manifest = json.loads((cache.root / MANIFEST_NAME).read_text())
    assert manifest == {
        "t1/big.bin": {"url": base + "/big.bin", "sha256": sha(BIG), "size": len(BIG)}
    }
    assert cache.fetch(base + "/big.bin", "t1", "big.bin") == target  # the env finds it offline


def test_a_partial_file_is_never_taken_for_the_asset(cache: AssetCache) -> None:
    served = Served(files={"/big.bin": BIG}, drop_once={"/big.bin"})
    with file_server(served) as base:
        fetcher = AssetFetcher(cache, fast(tries=1))
        summary = fetcher.fetch([AssetRef(base + "/big.bin", "t1", "big.bin", "download")])
        (failed,) = summary.failed
        assert failed.attempts == 1 and failed.error
        part = cache.root / "t1" / "big.bin.part"
        half = part.stat().st_size
        assert 0 < half < len(BIG)
        with pytest.raises(AssetUnavailableError):
            cache.fetch(base + "/big.bin", "t1", "big.bin")
        assert not (cache.root / MANIFEST_NAME).exists()
        again = AssetFetcher(cache, fast()).fetch(
            [AssetRef(base + "/big.bin", "t1", "big.bin", "download")]
        )  # a later run resumes the part
    assert again.outcomes[0].status == "downloaded"
    assert served.log[-1] == ("/big.bin", f"bytes={half}-")
    assert (cache.root / "t1" / "big.bin").read_bytes() == BIG


def test_a_server_ignoring_range_restarts_the_file(cache: AssetCache) -> None:
    served = Served(files={"/f": BIG}, drop_once={"/f"}, ignore_range={"/f"})
    with file_server(served) as base:
        summary = AssetFetcher(cache, fast()).fetch([AssetRef(base + "/f", "t1", "f", "download")])
    assert summary.outcomes[0].status == "downloaded"
    assert (cache.root / "t1" / "f").read_bytes() == BIG


def test_one_download_per_url_linked_into_each_task(cache: AssetCache) -> None:
    served = Served(files={"/gold.xlsx": b"gold"})
    with file_server(served) as base:
        url = base + "/gold.xlsx"
        assets = [AssetRef(url, task, "gold.xlsx", "cloud_file") for task in ("a", "b", "c")]
        summary = AssetFetcher(cache, fast()).fetch(assets)
        assert [o.status for o in summary.outcomes] == ["downloaded"]
        assert len(served.log) == 1
        for task in ("a", "b", "c"):
            assert (cache.root / task / "gold.xlsx").read_bytes() == b"gold"
        manifest = json.loads((cache.root / MANIFEST_NAME).read_text())
        assert sorted(manifest) == ["a/gold.xlsx", "b/gold.xlsx", "c/gold.xlsx"]
        again = AssetFetcher(cache, fast()).fetch(assets)
        assert [o.status for o in again.outcomes] == ["cached"] and len(served.log) == 1


def test_files_already_in_the_cache_get_their_checksum_recorded(cache: AssetCache) -> None:
    (cache.root / "t1").mkdir(parents=True)
    (cache.root / "t1" / "x.csv").write_bytes(b"a,b\n")
    summary = AssetFetcher(cache, fast()).fetch(
        [AssetRef("http://127.0.0.1:9/x.csv", "t1", "x.csv", "cloud_file")]
    )  # nothing listens on port 9: a download would fail
    assert summary.outcomes[0].status == "cached"
    manifest = json.loads((cache.root / MANIFEST_NAME).read_text())
    assert manifest["t1/x.csv"]["sha256"] == sha(b"a,b\n")


def test_retries_back_off_and_failures_are_listed(cache: AssetCache) -> None:
    served = Served(files={"/ok": b"ok", "/busy": b"busy"}, fail_first={"/busy": 2})
    waits: list[float] = []
    with file_server(served) as base:
        assets = [
            AssetRef(base + "/ok", "t1", "ok", "download"),
            AssetRef(base + "/busy", "t1", "busy", "download"),
            AssetRef(base + "/missing", "t1", "missing", "download"),
        ]
        settings = fast(jobs=1, tries=4, backoff=0.5, max_backoff=0.75)
        summary = AssetFetcher(cache, settings, sleep=waits.append).fetch(assets)
    status = {o.url.rsplit("/", 1)[1]: o for o in summary.outcomes}
    assert status["ok"].status == "downloaded"
    assert (status["busy"].status, status["busy"].attempts) == ("downloaded", 3)
    assert waits == [0.5, 0.75]  # doubled, capped
    (missing,) = summary.failed
    assert missing.url.endswith("/missing") and missing.attempts == 1  # a 404 is not retried
    assert "HTTP 404" in (missing.error or "")
    assert not (cache.root / "t1" / "missing").exists()


def test_progress_callbacks(cache: AssetCache) -> None:
    served = Served(files={"/a": b"x" * 1000})
    seen: list[str] = []
    counted: list[int] = []
    with file_server(served) as base:
        AssetFetcher(
            cache, fast(), on_progress=lambda o: seen.append(o.status), on_bytes=counted.append
        ).fetch([AssetRef(base + "/a", "t", "a", "download")])
    assert seen == ["downloaded"] and sum(counted) == 1000


def test_a_complete_part_left_by_a_killed_run_is_finished(cache: AssetCache) -> None:
    (cache.root / "t1").mkdir(parents=True)
    (cache.root / "t1" / "f.part").write_bytes(b"whole")
    served = Served(files={"/f": b"whole"})
    with file_server(served) as base:
        summary = AssetFetcher(cache, fast()).fetch([AssetRef(base + "/f", "t1", "f", "download")])
    assert summary.outcomes[0].status == "downloaded"
    assert served.log == [("/f", "bytes=5-")]  # answered 416 with the full size
    assert (cache.root / "t1" / "f").read_bytes() == b"whole"
