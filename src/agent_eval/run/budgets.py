"""The budgets and authority a run states: what its success rate was earned under.

A success rate means little without the limits it was reached within. This record keeps,
next to the figures, the step, token, time and cost limits of the tasks that ran, and the
authority granted: the tools the suite allows and whether any of them can write.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_eval.records import Suite, Task
from agent_eval.results import Budgets, LimitSpread
from agent_eval.run.settings import RunConfig
from agent_eval.tools import READ_TOOLS, WRITE_TOOLS


def _spread(values: Sequence[float | int | None]) -> LimitSpread | None:
    """The lowest and highest limit and how many tasks have one; None when none has."""
    given = [v for v in values if v is not None]
    if not given:
        return None
    return LimitSpread(low=min(given), high=max(given), tasks=len(given), of=len(values))


def stated_budgets(suite: Suite, tasks: Sequence[Task], config: RunConfig) -> Budgets:
    """The run's ``budgets`` record: limits over the selected tasks, and the authority."""
    granted: dict[str, None] = dict.fromkeys(READ_TOOLS)
    for task in tasks:
        granted.update(dict.fromkeys(suite.tools_for(task)))
    seconds = [task.max_seconds or config.timeout_per_task for task in tasks]
    return Budgets(
        max_steps=_spread([task.max_steps for task in tasks]),
        max_tokens=_spread([task.max_tokens for task in tasks]),
        max_seconds=_spread(seconds),
        max_cost_per_task=config.max_cost_per_task,
        tools=list(granted),
        writes=any(tool in WRITE_TOOLS for tool in granted),
    )
