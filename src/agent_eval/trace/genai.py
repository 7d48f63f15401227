"""The attribute keys and names our traces use, written out once.

The keys follow the OpenTelemetry GenAI semantic conventions. The packaged constants
(``opentelemetry.semconv._incubating``) are marked deprecated while those conventions
move, so we pin the strings here: a rename upstream is then one edit in one file, and
this module imports nothing, so the span planner works without the otel extra.
Keys under ``agent_eval.`` are ours, for what the conventions do not cover.
"""

from __future__ import annotations

# --- operations and span names -------------------------------------------------------

OP_INVOKE_AGENT = "invoke_agent"
"""The operation of the root span: one attempt of one agent at one task."""
OP_CHAT = "chat"
"""The operation of a model call."""
OP_EXECUTE_TOOL = "execute_tool"
"""The operation of a tool call."""
ROUTE_SPAN = "route"
"""The name and operation of a routing decision's span; the conventions have none for it,
so the span also says it is an OpenInference CHAIN, a step that passes work on."""
EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The event on the root span that carries the verdict."""

# --- GenAI semantic-convention keys ---------------------------------------------------

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
ERROR_TYPE = "error.type"

# --- OpenInference keys: how Phoenix tells a span's kind and fills its trace list ------

SPAN_KIND = "openinference.span.kind"
KIND_AGENT = "AGENT"
KIND_LLM = "LLM"
KIND_TOOL = "TOOL"
KIND_CHAIN = "CHAIN"
INPUT_VALUE = "input.value"
INPUT_MIME = "input.mime_type"
OUTPUT_VALUE = "output.value"
OUTPUT_MIME = "output.mime_type"
TEXT = "text/plain"
JSON = "application/json"

# --- resource keys --------------------------------------------------------------------

SERVICE_NAME = "service.name"
SERVICE_VERSION = "service.version"

# --- agent-eval's own keys ------------------------------------------------------------

RUN_ID = "agent_eval.run.id"
SUITE_NAME = "agent_eval.suite.name"
SUITE_VERSION = "agent_eval.suite.version"
SUITE_HASH = "agent_eval.suite.hash"
TASK_ID = "agent_eval.task.id"
ATTEMPT = "agent_eval.attempt"
VERDICT = "agent_eval.verdict"
PASSED = "agent_eval.passed"
STOP_REASON = "agent_eval.stop.reason"
STEPS = "agent_eval.steps"
TOKENS = "agent_eval.tokens"
ROLE = "agent_eval.role"
TOOL_CALLS = "agent_eval.tool_calls"
ROUTE = "agent_eval.route"
ROUTE_REASON = "agent_eval.route.reason"
ENGINE = "agent_eval.engine"
ENGINE_VERSION = "agent_eval.engine_version"
LAB = "agent_eval.lab"

EVALUATION = "verdict"
"""Our value of ``gen_ai.evaluation.name``: the task's program checks, all or nothing."""
TOOL_ERROR = "tool_error"
"""Our ``error.type`` for a tool call whose observation was an error."""
DEFAULT_PROVIDER = "openai_compatible"
"""``gen_ai.provider.name`` when the run records no engine: the wire protocol, not a vendor."""
