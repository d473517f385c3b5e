"""A run as one self-contained HTML page: no server, no network, images embedded.

The page carries the run as JSON (screenshots re-encoded as downscaled JPEG data URIs) and a
small vanilla-JS renderer: per task the instruction, score, outcome, and every step's screen
with its actions drawn over it in SVG (click points, drag paths, scroll arrows, typed text and
keys), the model text, parse and action errors and timings; filters by domain, outcome and
text. Model text is only ever inserted as text (``textContent``), never as markup.

Once rendered, ``<body>`` carries ``data-rendered="ok"`` and the number of steps drawn; a script
error lands in ``#js-errors`` and sets ``data-rendered="error"``, so a headless browser's
``--dump-dom`` shows whether the page worked.
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osworld_gym.commands.results import TaskRecord

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageOptions:
    """How screenshots are embedded.

    Attributes:
        max_width: Downscale wider screenshots to this width (pixels).
        quality: JPEG quality, 1-95.
    """

    max_width: int = 960
    quality: int = 70


def outcome(score: float | None) -> str:
    """``success`` (score 1), ``partial``, ``failure`` (0) or ``error`` (not scored)."""
    if score is None:
        return "error"
    if score >= 1.0:
        return "success"
    return "partial" if score > 0 else "failure"


class _Images:
    """Embeds each screenshot once; returns keys into the page's image table."""

    def __init__(self, options: ImageOptions) -> None:
        self.options = options
        self.table: dict[str, str] = {}
        self.sizes: dict[str, tuple[int, int]] = {}
        self.bytes = 0

    def add(self, path: Path | None) -> str | None:
        if path is None or not path.is_file():
            return None
        key = f"i{len(self.table)}"
        try:
            uri, size = _jpeg_data_uri(path.read_bytes(), self.options)
        except OSError as e:  # a truncated or unreadable file: the step shows no image
            logger.warning("cannot embed %s: %s", path, e)
            return None
        self.table[key] = uri
        self.sizes[key] = size
        self.bytes += len(uri)
        return key


def _jpeg_data_uri(data: bytes, options: ImageOptions) -> tuple[str, tuple[int, int]]:
    """A downscaled JPEG data URI of an image, and the image's original size."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        size = image.size
        rgb = image.convert("RGB")
    if rgb.width > options.max_width:
        # reducing_gap: a fast integer reduction first, then a bilinear pass (crisp enough for
        # text at half size, several times faster than Lanczos on full-HD screens).
        rgb.thumbnail((options.max_width, rgb.height), Image.Resampling.BILINEAR, reducing_gap=2.0)
    buffer = io.BytesIO()
    rgb.save(buffer, format="JPEG", quality=options.quality)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode(), size


def report_data(
    records: Sequence[TaskRecord],
    summary: Mapping[str, Any] | None,
    options: ImageOptions,
    title: str,
) -> dict[str, Any]:
    """The JSON the page renders: settings, tasks with their steps, and the image table."""
    images = _Images(options)
    tasks = []
    for record in records:
        steps = []
        for step in record.steps:
            key = images.add(record.observation_path(step))
            info = step.get("info") or {}
            steps.append(
                {
                    "n": step.get("step_num"),
                    "image": key,
                    "time": step.get("action_timestamp"),
                    "actions": step.get("parsed_actions") or [],
                    "action": step.get("action"),
                    "text": step.get("response"),
                    "parse_error": info.get("parse_error"),
                    "action_error": info.get("action_error"),
                    "fail_replaced": bool(info.get("fail_replaced")),
                    "timings": info.get("timings") or {},
                    "reward": step.get("reward"),
                }
            )
        final = None
        if record.steps and record.steps[-1].get("screenshot_file"):
            final = images.add(record.task_dir / str(record.steps[-1]["screenshot_file"]))
        screen = record.meta.get("screen_size")
        tasks.append(
            {
                "id": record.task_id,
                "domain": record.domain,
                "instruction": record.instruction,
                "score": record.score,
                "outcome": outcome(record.score),
                "error": record.error or record.meta.get("evaluation_error"),
                "wall_seconds": record.meta.get("wall_seconds"),
                "terminated": record.meta.get("terminated"),
                "truncated": record.meta.get("truncated"),
                "fail_replaced": record.meta.get("fail_replaced"),
                "screen": list(screen) if screen else None,
                "steps": steps,
                "final_image": final,
            }
        )
    for task in tasks:  # the screen's size, when task.json did not record it
        if task["screen"] is None:
            for key in [s["image"] for s in task["steps"]] + [task["final_image"]]:
                if key:
                    task["screen"] = list(images.sizes[key])
                    break
    logger.info("report: %d tasks, %.1f MB of images", len(tasks), images.bytes / 1e6)
    return {
        "title": title,
        "settings": dict((summary or {}).get("settings") or {}),
        "invocation": dict((summary or {}).get("invocation") or {}),
        "tasks": tasks,
        "images": images.table,
    }


def render_html(data: Mapping[str, Any]) -> str:
    """The page: styles, the data as JSON, and the renderer."""
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    return (
        _TEMPLATE.replace("__TITLE__", html.escape(str(data.get("title", "osworld-gym run"))))
        .replace("__STYLE__", _STYLE)
        .replace("__DATA__", payload)
        .replace("__SCRIPT__", _SCRIPT)
    )


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>__STYLE__</style>
</head>
<body data-rendered="no">
<header>
  <h1 id="title"></h1>
  <div id="overview"></div>
  <details id="settings-box"><summary>Settings that move the score</summary>
    <table id="settings"></table></details>
  <div id="filters">
    <label>Domain <select id="f-domain"><option value="">all</option></select></label>
    <label>Outcome <select id="f-outcome">
      <option value="">all</option><option>success</option><option>partial</option>
      <option>failure</option><option>error</option></select></label>
    <label>Search <input id="f-text" type="search" placeholder="task id or instruction"></label>
    <span id="shown"></span>
  </div>
  <pre id="js-errors" hidden></pre>
</header>
<main id="tasks"></main>
<script type="application/json" id="run-data">__DATA__</script>
<script>__SCRIPT__</script>
</body>
</html>
"""

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #f4f5f7; }
header { position: sticky; top: 0; background: #fff; padding: 8px 16px; z-index: 2;
  border-bottom: 1px solid #ddd; }
h1 { font-size: 18px; margin: 4px 0; }
#overview table, #settings { border-collapse: collapse; font-size: 13px; }
#overview td, #overview th, #settings td { border: 1px solid #ddd; padding: 2px 8px; }
#filters { display: flex; gap: 16px; align-items: center; margin: 6px 0; flex-wrap: wrap; }
#js-errors { color: #b00020; white-space: pre-wrap; }
main { padding: 8px 16px; }
.task { background: #fff; border: 1px solid #ddd; border-radius: 6px; margin: 8px 0; }
.task > summary { cursor: pointer; padding: 8px 12px; display: flex; gap: 12px;
  align-items: baseline; }
.task .id { font-family: monospace; font-weight: 600; }
.badge { border-radius: 10px; padding: 0 8px; font-size: 12px; color: #fff; }
.success { background: #1e8e3e; } .partial { background: #e37400; }
.failure { background: #c5221f; } .error { background: #5f6368; }
.instruction { color: #444; flex: 1; }
.steps { display: flex; flex-direction: column; gap: 12px; padding: 8px 12px 12px; }
.step { display: grid; grid-template-columns: minmax(320px, 640px) 1fr; gap: 12px;
  border-top: 1px solid #eee; padding-top: 8px; }
.shot { position: relative; line-height: 0; }
.shot img { width: 100%; height: auto; border: 1px solid #ccc; }
.shot svg { position: absolute; left: 0; top: 0; width: 100%; height: 100%; }
.no-image { background: #eee; color: #666; padding: 24px; line-height: 1.4; }
.meta pre { white-space: pre-wrap; background: #f7f7f9; padding: 6px; margin: 4px 0;
  max-height: 240px; overflow: auto; }
.err { color: #b00020; } .warn { color: #a05a00; }
.timings, .actions { font-size: 12px; color: #555; }
"""

_SCRIPT = r"""
"use strict";
(function () {
  const errors = document.getElementById("js-errors");
  function reportError(message) {
    errors.hidden = false;
    errors.textContent += message + "\n";
    document.body.dataset.rendered = "error";
  }
  window.addEventListener("error", (e) => reportError(String(e.message)));
  const SVG = "http://www.w3.org/2000/svg";
  const data = JSON.parse(document.getElementById("run-data").textContent);

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function describe(a) {
    const at = (a.x !== undefined && a.x !== null) ? ` at (${a.x}, ${a.y})` : "";
    switch (a.kind) {
      case "type": return `type ${JSON.stringify(a.text)}`;
      case "hotkey": return `hotkey ${(a.keys || []).join("+")}`;
      case "press": return `press ${a.key}` + (a.presses > 1 ? ` x${a.presses}` : "");
      case "key_down": case "key_up": return `${a.kind} ${a.key}`;
      case "drag": return `drag (${a.x}, ${a.y}) -> (${a.to_x}, ${a.to_y})`;
      case "scroll": return `scroll dx=${a.dx} dy=${a.dy}${at}`;
      case "wait": return "wait" + (a.seconds ? ` ${a.seconds} s` : "");
      case "done": return "DONE" + (a.answer ? ` (${a.answer})` : "");
      case "fail": return "FAIL" + (a.reason ? ` (${a.reason})` : "");
      default: return a.kind + at;
    }
  }
  function overlay(step, screen) {
    const [w, h] = screen;
    const r = Math.max(6, Math.round(Math.max(w, h) / 80));
    const font = Math.max(12, Math.round(h / 30));
    const layer = svg("svg", {viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: "none",
                              class: "overlay"});
    const defs = svg("defs");
    const marker = svg("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 8, refY: 5,
                                  markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse"});
    marker.appendChild(svg("path", {d: "M0,0 L10,5 L0,10 z", fill: "#ff1744"}));
    defs.appendChild(marker);
    layer.appendChild(defs);
    let labelRow = 0;
    function label(text, x, y) {
      const tx = x === undefined ? 8 : Math.min(x + r + 4, w - 8);
      const ty = y === undefined ? font + 8 + labelRow++ * (font + 8) : Math.max(y - r, font);
      const t = svg("text", {x: tx, y: ty, "font-size": font, fill: "#fff",
                             stroke: "#000", "stroke-width": Math.max(2, font / 6),
                             "paint-order": "stroke", "font-family": "sans-serif",
                             class: "action-label"}, text.slice(0, 80));
      layer.appendChild(t);
    }
    for (const a of step.actions) {
      const point = a.x !== undefined && a.x !== null;
      if (a.kind === "drag") {
        if (point) layer.appendChild(svg("circle", {cx: a.x, cy: a.y, r: r, fill: "none",
                                                    stroke: "#ff1744", "stroke-width": 3}));
        layer.appendChild(svg("line", {x1: point ? a.x : a.to_x, y1: point ? a.y : a.to_y,
                                       x2: a.to_x, y2: a.to_y, stroke: "#ff1744",
                                       "stroke-width": 4, "marker-end": "url(#arrow)",
                                       class: "drag-path"}));
        label(describe(a), a.to_x, a.to_y);
      } else if (a.kind === "scroll") {
        const x = point ? a.x : w / 2, y = point ? a.y : h / 2;
        const len = 6 * r, dy = a.dy > 0 ? -len : a.dy < 0 ? len : 0;
        const dx = a.dx > 0 ? len : a.dx < 0 ? -len : 0;
        layer.appendChild(svg("line", {x1: x, y1: y, x2: x + dx, y2: y + dy, stroke: "#2979ff",
                                       "stroke-width": 4, "marker-end": "url(#arrow)",
                                       class: "scroll-arrow"}));
        label(describe(a), x, y);
      } else if (point) {
        const colour = a.kind === "right_click" ? "#2979ff" : "#ff1744";
        layer.appendChild(svg("circle", {cx: a.x, cy: a.y, r: r, fill: "none", stroke: colour,
                                         "stroke-width": 3, class: "click-point"}));
        layer.appendChild(svg("circle", {cx: a.x, cy: a.y, r: 2, fill: colour}));
        if (a.kind === "double_click") layer.appendChild(
          svg("circle", {cx: a.x, cy: a.y, r: r * 1.6, fill: "none", stroke: colour,
                         "stroke-width": 2}));
        label(describe(a), a.x, a.y);
      } else {
        label(describe(a));
      }
    }
    if (step.fail_replaced) label("replaced by FAIL (step limit)");
    return layer;
  }
  function renderStep(task, step) {
    const box = el("div", {class: "step", "data-step": step.n});
    const shot = el("div", {class: "shot"});
    const uri = step.image ? data.images[step.image] : null;
    if (uri) {
      shot.appendChild(el("img", {src: uri, alt: `screen before step ${step.n}`}));
      if (task.screen) shot.appendChild(overlay(step, task.screen));
    } else {
      shot.appendChild(el("div", {class: "no-image"}, "no screenshot recorded"));
    }
    box.appendChild(shot);
    const meta = el("div", {class: "meta"});
    meta.appendChild(el("div", {}, `step ${step.n}` + (step.time ? ` · ${step.time}` : "")));
    const actions = el("div", {class: "actions"});
    actions.textContent = step.actions.length ? step.actions.map(describe).join("; ")
                                              : "(no action)";
    meta.appendChild(actions);
    if (step.text) meta.appendChild(el("pre", {class: "model-text"}, step.text));
    if (step.parse_error) meta.appendChild(el("div", {class: "err parse-error"},
                                              "parse error: " + step.parse_error));
    if (step.action_error) meta.appendChild(el("div", {class: "err"},
                                               "action error: " + step.action_error));
    if (step.fail_replaced) meta.appendChild(el("div", {class: "warn"},
                                                "the step limit replaced this action by FAIL"));
    const timings = Object.entries(step.timings || {})
      .map(([k, v]) => `${k} ${Number(v).toFixed(2)} s`).join(" · ");
    if (timings) meta.appendChild(el("div", {class: "timings"}, timings));
    box.appendChild(meta);
    return box;
  }
  function renderTask(task) {
    const card = el("details", {class: "task", "data-domain": task.domain,
                                "data-outcome": task.outcome, "data-task": task.id});
    const head = el("summary");
    head.appendChild(el("span", {class: "badge " + task.outcome},
                        task.score === null ? "not scored" : `score ${task.score}`));
    head.appendChild(el("span", {class: "id"}, `${task.domain}/${task.id}`));
    head.appendChild(el("span", {class: "instruction"}, task.instruction));
    const secs = task.wall_seconds ? ` · ${Number(task.wall_seconds).toFixed(1)} s` : "";
    head.appendChild(el("span", {}, `${task.steps.length} steps${secs}`));
    card.appendChild(head);
    const steps = el("div", {class: "steps"});
    if (task.error) steps.appendChild(el("div", {class: "err"}, task.error));
    let drawn = 0;
    for (const step of task.steps) { steps.appendChild(renderStep(task, step)); drawn++; }
    if (task.final_image) {
      const last = el("div", {class: "step final"});
      const shot = el("div", {class: "shot"});
      shot.appendChild(el("img", {src: data.images[task.final_image], alt: "final screen"}));
      last.appendChild(shot);
      last.appendChild(el("div", {class: "meta"}, "final screen (what was scored)"));
      steps.appendChild(last);
    }
    card.appendChild(steps);
    return [card, drawn];
  }
  function overview() {
    const domains = {};
    for (const t of data.tasks) {
      const d = domains[t.domain] || (domains[t.domain] = {n: 0, scored: 0, sum: 0});
      d.n++; if (t.score !== null) { d.scored++; d.sum += t.score; }
    }
    const table = el("table");
    const head = el("tr");
    for (const h of ["domain", "tasks", "scored", "success"]) head.appendChild(el("th", {}, h));
    table.appendChild(head);
    let all = {n: 0, scored: 0, sum: 0};
    for (const [name, d] of Object.entries(domains).sort()) {
      all = {n: all.n + d.n, scored: all.scored + d.scored, sum: all.sum + d.sum};
      table.appendChild(row(name, d));
    }
    table.appendChild(row("all", all));
    function row(name, d) {
      const tr = el("tr");
      const rate = d.scored ? (100 * d.sum / d.scored).toFixed(1) + "%" : "-";
      for (const v of [name, d.n, d.scored, rate]) tr.appendChild(el("td", {}, v));
      return tr;
    }
    return [table, Object.keys(domains).sort()];
  }
  function applyFilters() {
    const domain = document.getElementById("f-domain").value;
    const result = document.getElementById("f-outcome").value;
    const text = document.getElementById("f-text").value.trim().toLowerCase();
    let shown = 0;
    for (const card of document.querySelectorAll(".task")) {
      const task = data.tasks[Number(card.dataset.index)];
      const visible = (!domain || task.domain === domain) && (!result || task.outcome === result)
        && (!text || (task.id + " " + task.instruction).toLowerCase().includes(text));
      card.hidden = !visible;
      if (visible) shown++;
    }
    document.getElementById("shown").textContent = `${shown} of ${data.tasks.length} tasks`;
  }
  try {
    document.getElementById("title").textContent = data.title;
    document.title = data.title;
    const [table, domains] = overview();
    document.getElementById("overview").appendChild(table);
    const settings = document.getElementById("settings");
    for (const [k, v] of Object.entries(data.settings)) {
      const tr = el("tr");
      tr.appendChild(el("td", {}, k));
      tr.appendChild(el("td", {}, typeof v === "object" ? JSON.stringify(v) : v));
      settings.appendChild(tr);
    }
    const select = document.getElementById("f-domain");
    for (const d of domains) select.appendChild(el("option", {value: d}, d));
    const main = document.getElementById("tasks");
    let steps = 0;
    data.tasks.forEach((task, index) => {
      const [card, drawn] = renderTask(task);
      card.dataset.index = index;
      main.appendChild(card);
      steps += drawn;
    });
    for (const id of ["f-domain", "f-outcome", "f-text"]) {
      document.getElementById(id).addEventListener("input", applyFilters);
    }
    const params = new URLSearchParams(window.location.search);
    if (params.get("domain")) select.value = params.get("domain");
    if (params.get("outcome")) document.getElementById("f-outcome").value = params.get("outcome");
    if (params.get("q")) document.getElementById("f-text").value = params.get("q");
    if (params.get("open")) document.querySelectorAll(".task").forEach((c) => c.open = true);
    applyFilters();
    document.body.dataset.steps = String(steps);
    if (document.body.dataset.rendered !== "error") document.body.dataset.rendered = "ok";
  } catch (e) {
    reportError(String(e && e.stack || e));
  }
})();
"""
