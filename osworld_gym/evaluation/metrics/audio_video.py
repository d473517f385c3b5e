"""Audio and video similarity: OSWorld's ``compare_audios`` and ``compare_videos``.

Both use the libraries OSWorld's ``metrics/vlc.py`` uses (desktop_env 1.0.2), from the
``media`` extra (``pip install 'osworld-gym[media]'``), so the numbers are OSWorld's:

- ``compare_audios``: librosa decodes each file (mono, 22 050 Hz), takes 20 MFCCs per frame,
  scales each coefficient's row to a maximum magnitude of 1, aligns the two frame sequences
  with fastdtw under the cosine distance (SciPy), and returns ``exp(-distance / path length)``:
  a similarity in (0, 1], not a 0/1 verdict.
- ``compare_videos``: OpenCV reads the two videos frame by frame; frames whose 64-bit
  perceptual hashes (imagehash's ``phash``) differ in more than ``threshold`` bits count as
  mismatches; more than ``threshold`` mismatches in the first ``max_frames_to_check`` frames,
  or videos that end at different frames within them, score 0.
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any

from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_EXTRA = "media"


def _load_audio(path: str) -> tuple[Any, int] | None:
    """Samples and rate of an audio file as librosa loads it; None when it cannot be decoded."""
    librosa = require("librosa", _EXTRA)
    audioread = require("audioread", _EXTRA)
    undecodable = (
        OSError,
        EOFError,
        RuntimeError,  # soundfile's LibsndfileError
        ValueError,
        audioread.exceptions.DecodeError,
        librosa.util.exceptions.LibrosaError,
    )
    try:
        samples, rate = librosa.load(path)
    except undecodable as e:
        logger.warning("compare_audios: cannot load %s (empty or corrupt?): %s", path, e)
        return None
    return samples, rate


def compare_audios(audio_path_1: str | None, audio_path_2: str | None) -> float:
    """Similarity in (0, 1] of two recordings (MFCC sequences aligned by DTW).

    Args:
        audio_path_1: The audio the agent produced (host path), or None.
        audio_path_2: The reference audio, or None.

    Returns:
        ``exp(-d)`` where ``d`` is the mean cosine distance along the DTW alignment of the two
        normalised MFCC sequences: 1.0 for the same recording, lower the more they differ.
        0.0 when a path is missing or exactly one file does not decode to samples; 1.0 when
        neither does (OSWorld counts two empty recordings as equal).

    Raises:
        DependencyNotInstalled: The ``media`` extra is not installed.
    """
    if not audio_path_1 or not audio_path_2:
        return 0.0
    librosa = require("librosa", _EXTRA)
    fastdtw = require("fastdtw", _EXTRA).fastdtw
    cosine = require("scipy.spatial.distance", _EXTRA).cosine
    first, second = _load_audio(audio_path_1), _load_audio(audio_path_2)
    first_bad = first is None or first[0].shape[0] == 0
    second_bad = second is None or second[0].shape[0] == 0
    if first_bad and second_bad:
        logger.info("compare_audios: neither file has audio; counted as equal")
        return 1.0
    if first is None or second is None or first_bad or second_bad:
        return 0.0
    try:
        mfcc1 = librosa.feature.mfcc(y=first[0], sr=first[1])
        mfcc2 = librosa.feature.mfcc(y=second[0], sr=second[1])
    except (ValueError, librosa.util.exceptions.LibrosaError) as e:
        logger.error("compare_audios: MFCC extraction failed: %s", e)
        return 0.0
    mfcc1 = librosa.util.normalize(mfcc1, axis=1)
    mfcc2 = librosa.util.normalize(mfcc2, axis=1)
    distance, path = fastdtw(mfcc1.T, mfcc2.T, dist=cosine)
    normalized = distance / len(path) if path else math.inf
    logger.info(
        "compare_audios %s vs %s: DTW distance %.4f over %d steps",
        os.path.basename(audio_path_1),
        os.path.basename(audio_path_2),
        distance,
        len(path),
    )
    return float(math.exp(-normalized))


def compare_videos(
    video_path1: str | None,
    video_path2: str | None,
    max_frames_to_check: int = 100,
    threshold: int = 5,
) -> float:
    """1 when the two videos' first frames look alike (perceptual hashes), else 0.

    Args:
        video_path1: The video the agent produced (host path), or None.
        video_path2: The reference video, or None.
        max_frames_to_check: How many leading frames are compared.
        threshold: The largest hash distance (bits) of frames that still match, and the
            largest number of mismatching frames allowed.

    Returns:
        1.0 or 0.0. A video that ends (or cannot be read) while the other still has frames
        scores 0; two that end at the same frame, or that both cannot be read, score 1, as in
        OSWorld. 0.0 when a path is None (no file was fetched).

    Raises:
        DependencyNotInstalled: The ``media`` extra is not installed.
    """
    if not video_path1 or not video_path2:
        return 0.0
    cv2 = require("cv2", _EXTRA)
    imagehash = require("imagehash", _EXTRA)
    pil_image = require("PIL.Image")
    first, second = cv2.VideoCapture(video_path1), cv2.VideoCapture(video_path2)
    try:
        mismatches = 0
        for _ in range(max_frames_to_check):
            ok1, frame1 = first.read()
            ok2, frame2 = second.read()
            if not ok1 or not ok2:
                return 1.0 if ok1 == ok2 else 0.0
            hash1 = imagehash.phash(pil_image.fromarray(cv2.cvtColor(frame1, cv2.COLOR_BGR2RGB)))
            hash2 = imagehash.phash(pil_image.fromarray(cv2.cvtColor(frame2, cv2.COLOR_BGR2RGB)))
            if hash1 - hash2 > threshold:
                mismatches += 1
                if mismatches > threshold:
                    return 0.0
        return 1.0
    finally:
        first.release()
        second.release()
