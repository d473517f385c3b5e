"""Scoring a finished episode the way OSWorld's ``DesktopEnv.evaluate`` does.

Order and rules (``docs/design/evaluators.md#evaluation-order``): run the evaluator's ``postconfig``
steps; an infeasible task scores 1 only if the agent's last action was FAIL; otherwise a last FAIL
scores 0; then each check fetches its ``result`` (and ``expected``) through getters and calls its
metric with ``options``. A list of checks combines with ``conj``: ``and`` stops at the first 0 and
otherwise averages, ``or`` stops at the first 1 and otherwise takes the maximum. A getter that finds
no file (``FileNotFoundError``) scores that check 0.

Where OSWorld would let a metric's exception end the whole run, this evaluator scores the check
0 and records the error, so one broken output file cannot stop a training job; guest failures
(the desktop is gone) still propagate, as infrastructure errors.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from osworld_gym.errors import DependencyNotInstalled, EvaluatorError, GuestError
from osworld_gym.evaluation.getters import EvalContext, Getter, getters_for
from osworld_gym.evaluation.metrics._deps import INSTALL_HINT
from osworld_gym.evaluation.references import DEFAULT_REFERENCE, check_reference
from osworld_gym.tasks.model import Check, EvaluatorSpec, GetterSpec

if TYPE_CHECKING:
    from osworld_gym.extras import Need

logger = logging.getLogger(__name__)

Metric = Callable[..., float]


@dataclass(frozen=True)
class CheckResult:
    """The score of one check and, when it could not be computed, why."""

    func: str
    score: float
    error: str | None = None


@dataclass(frozen=True)
class EvaluationResult:
    """An episode's score, with the per-check details behind it."""

    score: float
    checks: tuple[CheckResult, ...]
    seconds: float
    reason: str = ""  # set when a rule decided the score without metrics (infeasible, FAIL)


def default_metrics(
    mode: str = "osworld", reference: str = DEFAULT_REFERENCE
) -> Mapping[str, Metric]:
    """The metric registry of ``osworld_gym.evaluation.metrics`` for an evaluation mode.

    Args:
        mode: ``"osworld"`` (OSWorld's scores) or ``"fixed"`` (its known metric bugs fixed).
        reference: Whose evaluator code (``osworld_gym.evaluation.references``).
    """
    from osworld_gym.evaluation.metrics import metrics_for

    return metrics_for(mode, reference)


class Evaluator:
    """Evaluates tasks with registered getters and metrics.

    Args:
        metrics: Name -> metric function (default: the package's registry for ``mode``).
        getters: Getter type -> getter (default: the reference's,
            ``getters_for()``).
        mode: ``"osworld"`` (default: score as OSWorld's code does) or ``"fixed"`` (the
            metrics of ``FIXED_METRICS`` corrected);
            ignored when ``metrics`` is given.
        reference: The OSWorld evaluator code scores follow (``"osworld-2026.04"``, the
            default, or ``"osworld-1.0.2"``); ignored for what ``metrics``/``getters`` give.

    Attributes:
        mode: The evaluation mode.
        reference: The evaluator reference.
    """

    def __init__(
        self,
        metrics: Mapping[str, Metric] | None = None,
        getters: Mapping[str, Getter] | None = None,
        *,
        mode: str = "osworld",
        reference: str = DEFAULT_REFERENCE,
    ) -> None:
        self.mode = mode
        self.reference = check_reference(reference)
        self.metrics = dict(metrics if metrics is not None else default_metrics(mode, reference))
        self.getters = dict(getters if getters is not None else getters_for(reference))

    def missing(self, spec: EvaluatorSpec) -> list[str]:
        """What this evaluator lacks to score ``spec`` (empty when fully supported)."""
        if spec.infeasible:
            return []
        lacking = [f"metric {f!r}" for f in spec.funcs if f not in self.metrics]
        lacking += [f"getter {g.type!r}" for g in spec.getters() if g.type not in self.getters]
        return sorted(set(lacking))

    def needs(self, spec: EvaluatorSpec) -> frozenset[Need]:
        """The optional libraries this evaluator's metrics and getters for ``spec`` may import.

        Read from their code (``osworld_gym.extras.callable_needs()``), so a task whose
        libraries are missing can be refused before its episode rather than left unscored after
        it. An infeasible task needs none (its score is the agent's last action); a metric or
        getter this evaluator lacks needs none here (``missing()`` names it).
        """
        from osworld_gym.extras import callable_needs

        if spec.infeasible:
            return frozenset()
        needs: set[Need] = set()
        for func in spec.funcs:
            if func in self.metrics:
                needs |= callable_needs(self.metrics[func])
        for getter in spec.getters():
            if getter.type in self.getters:
                needs |= callable_needs(self.getters[getter.type])
        return frozenset(needs)

    def evaluate(
        self,
        spec: EvaluatorSpec,
        ctx: EvalContext,
        *,
        last_action_fail: bool,
        run_postconfig: Callable[[Iterable[Any]], object] | None = None,
    ) -> EvaluationResult:
        """Score the current desktop state.

        Args:
            spec: The task's evaluator.
            ctx: The desktop and task cache getters read from.
            last_action_fail: Whether the agent's last action was FAIL.
            run_postconfig: Runs the ``postconfig`` steps (a setup interpreter's ``run``).

        Raises:
            EvaluatorError: a metric or getter the task names does not exist.
            GuestError: the desktop stopped answering (an infrastructure fault).
            TaskSetupError: a ``postconfig`` step failed.
        """
        start = time.perf_counter()
        lacking = self.missing(spec)
        if lacking:
            raise EvaluatorError(f"{ctx.task_id}: cannot evaluate, missing {', '.join(lacking)}")
        if spec.postconfig and run_postconfig is not None:
            run_postconfig(spec.postconfig)
        if spec.infeasible:
            score = 1.0 if last_action_fail else 0.0
            return EvaluationResult(score, (), time.perf_counter() - start, "infeasible task")
        if last_action_fail:
            return EvaluationResult(0.0, (), time.perf_counter() - start, "agent answered FAIL")
        results: list[CheckResult] = []
        for check in spec.checks:
            result = self._run_check(check, ctx)
            results.append(result)
            if spec.is_list and spec.conj == "and" and result.score == 0:
                break
            if spec.is_list and spec.conj == "or" and result.score == 1:
                break
        return EvaluationResult(
            _combine(spec, results), tuple(results), time.perf_counter() - start
        )

    def _run_check(self, check: Check, ctx: EvalContext) -> CheckResult:
        try:
            result = self._get(check.result, ctx)
            metric = self.metrics[check.func]
            options = dict(check.options)
            if check.expected is not None:
                value = metric(result, self._get(check.expected, ctx), **options)
            else:
                value = metric(result, **options)
        except FileNotFoundError as e:
            return CheckResult(check.func, 0.0, f"file not found: {e}")
        except (GuestError, DependencyNotInstalled):
            raise  # infrastructure or installation problems are not the agent's score
        except ImportError as e:
            # A library's own lazy import failed (pandas' Excel engine, say): an installation
            # problem too, reported like the metrics' own missing libraries.
            raise DependencyNotInstalled(
                f"check {check.func!r} needs a library that is not installed ({e}): {INSTALL_HINT}"
            ) from e
        except Exception as e:  # noqa: BLE001 - a broken output file scores 0, visibly
            logger.warning("check %s raised %s: %s", check.func, type(e).__name__, e)
            return CheckResult(check.func, 0.0, f"{type(e).__name__}: {e}")
        return CheckResult(check.func, _as_score(value))

    def _get(self, spec: GetterSpec | None, ctx: EvalContext) -> Any:
        if spec is None:
            return None
        return self.getters[spec.type](ctx, _thaw(spec.config))


def _thaw(value: Any) -> Any:
    """Plain dicts and lists for getters and metrics, which may mutate what they receive."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value


def _as_score(value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        logger.warning("metric returned %r, not a number; scoring 0", value)
        return 0.0


def _combine(spec: EvaluatorSpec, results: list[CheckResult]) -> float:
    if not results:
        return 0.0
    if not spec.is_list:
        return results[0].score
    scores = [r.score for r in results]
    if spec.conj == "and":
        return 0.0 if 0.0 in scores else sum(scores) / len(scores)
    return 1.0 if 1.0 in scores else max(scores)
