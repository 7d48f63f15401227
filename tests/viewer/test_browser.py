"""The viewer in a real browser: the pages a user clicks through, and that model output
never runs as code."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from agent_eval.report import compare_runs, load_results
from agent_eval.viewer import export, open_viewer
from agent_eval.viewer.source import RESCAN_SECONDS


def settle(page: Any) -> None:
    """Wait until the page has drawn what its address asks for."""
    page.wait_for_function("document.body.dataset.shown === location.hash")


def _open_run(page: Any, served: Any, mode: str) -> None:
    page.goto(served.url)
    page.wait_for_selector("#runs")
    row = page.locator("#runs tr", has_text=f"results-{mode}.json")
    row.locator("a").first.click()
    settle(page)


def test_three_clicks_from_the_runs_to_the_step_that_went_wrong(
    page: Any, served: Any, shots: Path
) -> None:
    page.goto(served.url)
    page.wait_for_selector("#runs")
    page.screenshot(path=str(shots / "runs.png"), full_page=True)
    page.locator("#runs tr", has_text="results-b.json").locator("a").first.click()  # 1
    page.wait_for_selector("#grid")
    assert "success rate" in page.inner_text("#summary")
    page.screenshot(path=str(shots / "run.png"), full_page=True)
    page.locator("#grid tr[data-task='t-flip'] a.cell").first.click()  # 2
    page.wait_for_selector("#went-wrong")
    # steps count as the attempt does: the route is no step, the failed tool is step 2
    assert page.inner_text("#went-wrong a") == "step 2"
    page.locator("#went-wrong a").click()  # 3
    page.wait_for_selector("details.step.wrong[open]")
    step = page.locator("details.step.wrong[open]")
    assert "tool read_file · ERROR" in step.inner_text()
    assert "refused: outside the workspace" in step.inner_text()
    assert step.locator("summary").inner_text().startswith("step 2 · tool read_file")
    failed = page.locator("#checks tr.failed-check").all_inner_texts()
    assert [line.split("\t")[:2] for line in failed] == [
        ["expect_in_answer", "FAILED"],
        ["state: file notes.txt exists", "FAILED"],
    ]
    titles = page.locator("#timeline details.step summary").all_inner_texts()
    assert [t.split(" · ")[0] for t in titles if t.startswith("step ")] == ["step 1", "step 2",
                                                                             "step 3"]  # fmt: skip
    assert titles[0].startswith("route → researcher: the task needs evidence")
    assert titles[4].startswith("stop: finished")
    page.screenshot(path=str(shots / "attempt.png"), full_page=True)


def test_the_run_page_shows_the_report_figures_and_filters(page: Any, served: Any) -> None:
    _open_run(page, served, "a")
    summary = page.inner_text("#summary")
    report = load_results(served.folder / "results-a.json")
    assert f"({sum(r.passed for r in report.rows)} of {len(report.rows)})" in summary
    assert "Wilson 95%" in summary and "pass@3 / pass^3" in summary
    tasks = page.locator("#grid tr[data-task]")
    assert tasks.count() == 3
    t_port = page.locator("#grid tr[data-task='t-port']")
    assert "1–3" not in t_port.inner_text()  # steps are 3 to 3
    assert "2/3" in t_port.inner_text()
    page.check("#failed")
    settle(page)
    assert "t-flip" not in page.inner_text("#grid")  # run A passed t-flip every time
    assert tasks.count() == 2
    assert page.locator("#grid a.cell:not(.dim)").count() == 2  # r2 of t-port and t-two
    page.select_option("#category", "refusal")
    settle(page)
    assert [t.get_attribute("data-task") for t in tasks.all()] == ["t-two"]
    page.select_option("#category", "")
    settle(page)
    page.uncheck("#failed")
    settle(page)
    assert tasks.count() == 3
    page.fill("#search", "cannot tell")
    page.press("#search", "Enter")
    settle(page)
    assert tasks.count() == 2
    assert "q=cannot" in page.url
    page.select_option("#class", "passed")
    settle(page)
    assert "0 matching" in page.inner_text("#pager")  # no passing answer says "cannot tell"


def test_model_output_is_shown_as_text_and_never_runs(page: Any, served: Any) -> None:
    _open_run(page, served, "b")
    page.locator("#grid tr[data-task='t-flip'] a.cell").first.click()
    page.wait_for_selector("#timeline details")
    for step in page.locator("#timeline details").all():
        step.locator("summary").click()
    page.wait_for_timeout(200)
    answer = page.inner_text("#answer")
    assert "<script>window.PWNED = 1</script>" in answer
    assert '<a id="evil" href="javascript:window.PWNED = 3">click me</a>' in answer
    assert "<img src=x onerror=" in page.inner_text("#timeline")
    assert page.evaluate("window.PWNED") is None
    assert page.locator("#main script, #main img, #evil").count() == 0
    hrefs = page.eval_on_selector_all("a", "links => links.map(a => a.getAttribute('href'))")
    assert all(h.startswith("#") for h in hrefs), hrefs
    page.get_by_text("click me").first.click()
    assert page.evaluate("window.PWNED") is None and page.dialogs == []


def test_compare_shows_the_verdict_flips_and_an_aligned_pair(
    page: Any, served: Any, shots: Path
) -> None:
    page.goto(served.url)
    page.wait_for_selector("#runs")
    for mode in ("a", "b"):
        page.locator("#runs tr", has_text=f"results-{mode}.json").locator("input").check()
    page.click("#compare")
    page.wait_for_selector("#verdict")
    expected = compare_runs(
        load_results(served.folder / "results-a.json"),
        load_results(served.folder / "results-b.json"),
    )
    assert page.inner_text("#verdict") == expected["verdict"]
    assert page.inner_text("#flips") == "pass→fail 1 · fail→pass 0 · unstable 2"
    assert (
        page.locator("#per-task tr[data-task='t-flip']").get_attribute("data-flip") == "pass→fail"
    )
    page.locator("#per-task tr[data-task='t-flip'] a", has_text="side by side").click()
    settle(page)
    assert "part ways at row 3" in page.inner_text("#pair"), page.inner_text("#main")
    heads = page.locator("#aligned th").all_inner_texts()
    assert heads[0].startswith("passing: toy x m r1") and heads[1].startswith("failing: toy x m r1")
    first = page.locator("#first-divergence")
    assert "first divergence" in first.inner_text()
    assert "tool search_documents" in first.inner_text() and "tool read_file" in first.inner_text()
    assert page.locator("#aligned tr.diff").count() == 1  # only the tool step differs
    page.screenshot(path=str(shots / "compare.png"), full_page=True)


def test_a_damaged_results_file_is_named_and_the_other_runs_still_load(
    page: Any, served: Any
) -> None:
    page.goto(served.url)
    page.wait_for_selector("#runs")
    broken = page.locator("#runs tr.broken")
    assert "broken-results.json" in broken.inner_text()
    assert "not valid JSON" in broken.inner_text()
    assert page.locator("#runs tr[data-kind='results']").count() == 2


def test_the_workspace_diff_shows_on_the_attempt_page(page: Any, served: Any) -> None:
    _open_run(page, served, "a")
    page.locator("#grid tr[data-task='t-flip'] a.cell").first.click()
    settle(page)
    assert "notes.txt" in page.inner_text("#diff") and "+port 4000" in page.inner_text("#diff")
    assert "state: file notes.txt exists\tok" in page.inner_text("#checks")


def test_other_attempts_and_tokens_per_role_show_on_the_attempt_page(
    page: Any, served: Any
) -> None:
    _open_run(page, served, "b")
    page.locator("#grid tr[data-task='t-flip'] a.cell").nth(1).click()
    settle(page)
    text = page.inner_text("#main")
    assert "other attempts: r1 BAD r2 BAD r3 BAD" in text
    assert page.inner_text("#roles") == "agent 40"
    assert "Flip?" in text and "null" not in text and "[object" not in text


def test_an_attempt_of_5000_records_opens_collapsed(
    page: Any, make_run: Any, tmp_path: Path
) -> None:
    make_run(tmp_path, "a", repeats=1, records="5000")
    server = open_viewer([tmp_path]).start()
    try:
        page.goto(server.root_url + "/")
        settle(page)
        page.locator("#runs a").first.click()
        settle(page)
        page.locator("#grid a.cell").first.click()
        settle(page)
        assert "Trajectory (5001 records)" in page.inner_text("#main")  # and the score line
        assert page.locator("#timeline details").count() == 200
        assert page.locator("#timeline details[open]").count() == 0
        page.click("#more")
        page.wait_for_function("document.querySelectorAll('#timeline details').length === 400")
        assert "400 of 5001 shown" in page.inner_text("#more")
        page.goto(page.url.split("?")[0] + "?step=4321")
        settle(page)
        assert page.locator("#step-4321[open]").count() == 1
        assert "q4320" in page.inner_text("#step-4321")
    finally:
        server.stop()


def test_a_run_in_progress_appears_from_its_journal_and_fills_in(
    page: Any, served: Any, tmp_path: Path
) -> None:
    rows = json.loads((served.folder / "results-a.json").read_text())["results"]
    journal = tmp_path / "results-live.json.journal.jsonl"
    header = {"journal": {"run_id": "live-run", "started": "2026-01-01T00:00:00+00:00",
                          "suite_hash": "sha256:x", "agent": "toy", "model": "m"}}  # fmt: skip
    journal.write_text(json.dumps(header) + "\n" + json.dumps(rows[0]) + '\n{"task_id": "t-po')
    (tmp_path / "other.json.journal.jsonl").write_text("not a journal\n")
    server = open_viewer([tmp_path]).start()
    try:
        page.goto(server.root_url + "/")
        settle(page)
        live = page.locator("#runs tr[data-kind='journal']")
        assert "in progress" in live.inner_text() and "(1/1)" in live.inner_text()
        assert "1 line(s) skipped" in live.inner_text()
        broken = page.locator("#runs tr.broken").inner_text()
        assert "other.json.journal.jsonl: journal" in broken and "it is not a journal" in broken
        live.locator("a").first.click()
        settle(page)
        assert "line 3: half-written (the run is still writing it)" in page.inner_text("#main")
        page.goto(server.root_url + "/")
        settle(page)
        journal.write_text(
            json.dumps(header) + "\n" + "\n".join(json.dumps(r) for r in rows[:2]) + "\n"
        )
        passed = sum(row["checks"]["passed"] for row in rows[:2])  # rows are attempt-major
        page.wait_for_function(
            "document.querySelector(\"#runs tr[data-kind='journal']\").innerText"
            f".includes('({passed}/2)')",
            timeout=15_000,
        )
        live.locator("a").first.click()
        settle(page)
        assert page.locator("#grid a.cell").count() == 2
        hour_ago = time.time() - 3600  # a run without --out leaves its journal behind
        os.utime(journal, (hour_ago, hour_ago))
        time.sleep(RESCAN_SECONDS)  # the viewer looks at its folders again
        page.goto(server.root_url + "/")
        settle(page)
        assert "journal only" in page.locator("#runs tr[data-kind='journal']").inner_text()
    finally:
        server.stop()


def test_the_exported_site_opens_from_disk(page: Any, served: Any, tmp_path: Path) -> None:
    site = tmp_path / "site"
    export([served.folder], site)
    page.goto((site / "index.html").as_uri())
    settle(page)
    assert page.locator("#runs tr[data-kind='results']").count() == 2
    page.locator("#runs tr", has_text="results-b.json").locator("a").first.click()
    settle(page)
    page.check("#failed")
    settle(page)
    assert page.locator("#grid tr[data-task]").count() == 2  # t-port and t-flip failed in B
    page.locator("#grid tr[data-task='t-flip'] a.cell").first.click()
    settle(page)
    page.locator("#went-wrong a").click()
    settle(page)
    assert "tool read_file · ERROR" in page.inner_text("details.step.wrong[open]")
    assert page.evaluate("window.PWNED") is None
    page.goto((site / "index.html").as_uri())
    settle(page)
    for mode in ("a", "b"):
        page.locator("#runs tr", has_text=f"results-{mode}.json").locator("input").check()
    page.click("#compare")
    settle(page)
    page.locator("#per-task tr[data-task='t-flip'] a", has_text="side by side").click()
    settle(page)
    page.wait_for_selector("#first-divergence")


def test_the_runs_page_shows_cost_as_the_console_does(
    page: Any, tmp_path: Path, agent_eval: Any, make_run: Any
) -> None:
    make_run(tmp_path / "first", "a", repeats=1)  # writes the toy agent and its suite there
    tmp_path = tmp_path / "first"
    price = "7.175233333333333"  # 40 tokens a task: 0.00028700933333333334 per task
    done = agent_eval("run", "--agent", "agent.py", "--tasks", "suite.json", "--option",
                      "mode=a", "--cost-per-million", price, "--out", "r.json",
                      "--allow-empty-workspace", cwd=tmp_path)  # fmt: skip
    assert "cost per task 0.000287  (" in done.stdout
    server = open_viewer([tmp_path]).start()
    try:
        page.goto(server.root_url + "/")
        page.wait_for_selector("#runs")
        row = page.locator("#runs tr", has_text="r.json").inner_text()
        assert "0.000287" in row and "0.0002870" not in row
    finally:
        server.stop()


CRASH_OR_ECHO = """
def pick(items):
    return items[3]


def run_task(task, options):
    if "crash" in task:
        return pick([1])
    return {"answer": task + " " + task + " 4000", "steps": 1, "tokens": 5}
"""


def test_the_attempt_page_shows_a_traceback_and_a_copied_pass(
    page: Any, tmp_path: Path, agent_eval: Any
) -> None:
    tasks = [
        {"id": "t-crash", "category": "c", "task": "crash now", "expect_in_answer": ["4000"]},
        {"id": "t-echo", "category": "c", "expect_in_answer": ["4000"],
         "task": "Which port does the model gateway listen on? Answer with the number."},
    ]  # fmt: skip
    (tmp_path / "s.json").write_text(json.dumps({"name": "v", "version": "1.0.0", "tasks": tasks}))
    (tmp_path / "my_agent.py").write_text(CRASH_OR_ECHO, encoding="utf-8")
    done = agent_eval("run", "--agent", "my_agent.py", "--tasks", "s.json", "--out", "r.json",
                      "--allow-empty-workspace", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    server = open_viewer([tmp_path / "r.json"]).start()
    try:
        page.goto(server.root_url + "/")
        page.locator("#runs tr", has_text="r.json").locator("a").first.click()
        page.wait_for_selector("#grid")
        assert "copied passes" in page.inner_text("#summary")
        assert "1 of 1 passes mostly copy" in page.inner_text("#copied")
        page.locator("#grid tr[data-task='t-crash'] a.cell").first.click()
        page.wait_for_selector("#traceback")  # an attempt with an error renders
        assert "error: run_task raised IndexError" in page.inner_text("body")
        assert page.inner_text("#traceback").splitlines() == [
            "my_agent.py:8 in run_task", "    return pick([1])",
            "my_agent.py:3 in pick", "    return items[3]",
        ]  # fmt: skip
        page.go_back()
        page.wait_for_selector("#grid")
        page.locator("#grid tr[data-task='t-echo'] a.cell").first.click()
        page.wait_for_selector("p#copied")
        assert "copied: 0.96 of this answer" in page.inner_text("p#copied")  # 24 of 25 words
    finally:
        server.stop()
