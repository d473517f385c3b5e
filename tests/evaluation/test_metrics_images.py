"""Image metrics on PNG files drawn with Pillow; SSIM against known properties."""

from __future__ import annotations

from pathlib import Path

import pytest

Image = pytest.importorskip("PIL.Image")
np = pytest.importorskip("numpy")

from osworld_gym.evaluation.metrics import get_metric  # noqa: E402
from osworld_gym.evaluation.metrics.images import ssim  # noqa: E402


def gradient(width: int = 64, height: int = 48, shift: int = 0) -> object:
    x = np.linspace(0, 255, width)[None, :] + np.linspace(0, 60, height)[:, None]
    return Image.fromarray(((x + shift) % 256).astype(np.uint8), mode="L").convert("RGB")


def save(img: object, path: Path) -> str:
    img.save(path)
    return str(path)


def test_ssim_properties() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (32, 40), dtype=np.uint8)
    noisy = np.clip(a.astype(int) + rng.integers(-30, 30, a.shape), 0, 255).astype(np.uint8)
    other = rng.integers(0, 256, (32, 40), dtype=np.uint8)
    assert ssim(a, a) == 1.0
    assert ssim(a, noisy) == pytest.approx(ssim(noisy, a))
    assert 0.5 < ssim(a, noisy) < 1.0
    assert abs(ssim(a, other)) < 0.2
    rgb = np.stack([a, noisy, other], axis=2)
    assert ssim(rgb, rgb) == 1.0
    with pytest.raises(ValueError, match="shapes differ"):
        ssim(a, a[:-1])
    with pytest.raises(ValueError, match="smaller than"):
        ssim(a[:5, :5], a[:5, :5])


def test_ssim_matches_scikit_image_when_installed() -> None:
    structural_similarity = pytest.importorskip("skimage.metrics").structural_similarity
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (30, 50), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-40, 40, a.shape), 0, 255).astype(np.uint8)
    assert ssim(a, b) == pytest.approx(structural_similarity(a, b), abs=1e-12)


def test_compare_images(tmp_path: Path) -> None:
    metric = get_metric("compare_images")
    gold = save(gradient(), tmp_path / "gold.png")
    assert metric(save(gradient(), tmp_path / "same.png"), gold) == pytest.approx(1.0)
    # a larger copy is resized to the smaller size first
    assert metric(save(gradient(128, 96), tmp_path / "big.png"), gold) > 0.9
    shifted = save(gradient(shift=128), tmp_path / "shifted.png")
    assert metric(shifted, gold) < 0.9


def test_compare_images_reference_base_result(tmp_path: Path) -> None:
    metric = get_metric("compare_images")
    gold = save(gradient(), tmp_path / "gold.png")
    same = save(gradient(), tmp_path / "same.png")
    assert metric(same, gold, reference_base_result=0.5) == pytest.approx(1.0)
    shifted = save(gradient(shift=128), tmp_path / "shifted.png")
    raw = metric(shifted, gold)
    assert metric(shifted, gold, reference_base_result=raw) == 0.0  # must beat base by 0.01
    assert metric(shifted, gold, reference_base_result=raw - 0.2) == pytest.approx(
        0.2 / (1 - (raw - 0.2))
    )


def test_compare_images_missing_empty_or_not_images(tmp_path: Path) -> None:
    metric = get_metric("compare_images")
    gold = save(gradient(), tmp_path / "gold.png")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    text = tmp_path / "text.png"
    text.write_text("not an image")
    assert metric(None, gold) == 0.0
    assert metric(str(tmp_path / "absent.png"), gold) == 0.0
    assert metric(str(empty), gold) == 0.0
    assert metric(str(text), gold) == 0.0


@pytest.mark.parametrize(
    ("rules", "score"),
    [
        ({"width": 64, "height": 48}, 1.0),
        ({"height": 48}, 1.0),
        ({"width": 65}, 0.0),
        ({"height": 10, "ignore_transparent": True}, 1.0),  # content box of the RGBA image
        ({"height": 48, "ignore_transparent": True}, 0.0),
    ],
)
def test_check_image_size(tmp_path: Path, rules: dict, score: float) -> None:
    metric = get_metric("check_image_size")
    img = Image.new("RGBA", (64, 48), (0, 0, 0, 0))
    img.paste((255, 0, 0, 255), (5, 5, 25, 15))  # a 20x10 opaque box
    assert metric(save(img, tmp_path / "resized.png"), rules) == score
    assert metric(None, rules) == 0.0


def test_check_image_file_size(tmp_path: Path) -> None:
    metric = get_metric("check_image_file_size")
    path = tmp_path / "compressed.jpeg"
    path.write_bytes(b"x" * 1000)
    assert metric(str(path), {"max_size": 1001}) == 1.0
    assert metric(str(path), {"max_size": 1000}) == 0.0
    assert metric(None, {"max_size": 1}) == 0.0


def test_compare_image_list(tmp_path: Path) -> None:
    metric = get_metric("compare_image_list")
    gold = save(gradient(), tmp_path / "gold.png")
    assert metric(save(gradient(), tmp_path / "same.png"), gold) == 1.0
    assert metric([save(gradient(), tmp_path / "a.png")], [gold]) == 1.0
    assert metric(save(gradient(shift=1), tmp_path / "off.png"), gold) == 0.0
    assert metric([None], [gold]) == 0.0


def test_check_structure_sim(tmp_path: Path) -> None:
    metric = get_metric("check_structure_sim")
    gold = save(gradient(), tmp_path / "gold.png")
    assert metric(save(gradient(), tmp_path / "same.png"), gold) == 1.0
    assert metric(save(gradient(shift=128), tmp_path / "shifted.png"), gold) == 0.0
    assert metric(save(gradient(32, 24), tmp_path / "small.png"), gold) == 0.0  # sizes differ
    assert metric(None, gold) == 0.0
