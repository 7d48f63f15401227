#!/usr/bin/env node
// An agent in another language for agent-eval's `cmd:` protocol (docs/protocol.md).
//
//   agent-eval run --agent 'cmd:node examples/node-agent/agent.js' --base-url ... --model ...
//
// One request line per task on stdin, one result line per task on stdout; everything
// else goes to stderr, which the harness keeps as a log. The loop is the same shape as
// builtin:minimal: the model decides, calls tools, and finishes with a plain reply.
// Zero dependencies: Node 20's fetch and readline are enough.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const readline = require("node:readline");

const PROTOCOL = 1;
const DEFAULT_MAX_STEPS = 24;
const RECORD_CHARS = 2000;
const RESULT_CHARS = 6000; // what a tool result may put in front of the model
const REPEAT_LIMIT = 3;
const SYSTEM =
  "You answer questions about the documents in a workspace. Use the tools to find the " +
  "evidence, then reply with the answer in plain text. Answer only from what the tools " +
  "return; if the documents do not contain the answer, answer with exactly: " +
  '"This is not stated in the documents."';

// Tools, confined to the attempt's workspace.

class ToolError extends Error {}

function inside(workspace, relative) {
  const root = fs.realpathSync(workspace);
  const within = (p) => p === root || p.startsWith(root + path.sep);
  const target = path.resolve(root, String(relative ?? "."));
  if (!within(target)) throw new ToolError(`${relative} is outside the workspace`);
  let real;
  try {
    real = fs.realpathSync(target);
  } catch {
    throw new ToolError(`no such file or folder: ${relative}`);
  }
  // Checked again after following symlinks, so a link cannot lead out of the workspace.
  if (!within(real)) throw new ToolError(`${relative} is outside the workspace`);
  return real;
}

function textFiles(root, folder = root, found = []) {
  for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) textFiles(root, full, found);
    else if (/\.(md|txt|json|csv|ya?ml)$/i.test(entry.name)) found.push(full);
  }
  return found;
}

const words = (text) => text.toLowerCase().match(/[a-z0-9:]+/g) ?? [];

const TOOLS = {
  search_documents: {
    description: "Search the workspace documents; returns the best-matching passages.",
    parameters: { query: { type: "string", description: "a few keywords" } },
    run(workspace, args) {
      const terms = new Set(words(String(args.query ?? "")));
      if (terms.size === 0) throw new ToolError("search_documents: the query is empty");
      const root = fs.realpathSync(workspace);
      const scored = [];
      for (const file of textFiles(root)) {
        const passages = fs.readFileSync(file, "utf8").split(/\n\s*\n/);
        for (const passage of passages) {
          const score = words(passage).filter((w) => terms.has(w)).length;
          if (score > 0) scored.push({ score, file: path.relative(root, file), passage });
        }
      }
      scored.sort((a, b) => b.score - a.score);
      if (scored.length === 0) return "No passage matches the query.";
      return scored.slice(0, 3).map((s) => `[${s.file}]\n${s.passage.trim()}`).join("\n\n");
    },
  },
  read_file: {
    description: "Read a text file in the workspace, by its path relative to the workspace.",
    parameters: { path: { type: "string", description: "relative path of the file" } },
    run(workspace, args) {
      const file = inside(workspace, args.path);
      if (!fs.statSync(file).isFile()) throw new ToolError(`${args.path} is not a file`);
      return fs.readFileSync(file, "utf8");
    },
  },
  run_command: {
    description: "Run a read-only command in the workspace: ls [folder] or cat FILE.",
    parameters: { command: { type: "string", description: "for example: ls" } },
    run(workspace, args) {
      const [program, ...rest] = String(args.command ?? "").trim().split(/\s+/);
      if (program === "ls") {
        const folder = inside(workspace, rest[0] ?? ".");
        return fs.readdirSync(folder).sort().join("\n");
      }
      if (program === "cat" && rest.length === 1) return TOOLS.read_file.run(workspace, { path: rest[0] });
      throw new ToolError(`run_command: only 'ls [folder]' and 'cat FILE' are allowed, not '${program}'`);
    },
  },
};

const TOOL_SPECS = Object.entries(TOOLS).map(([name, tool]) => ({
  type: "function",
  function: {
    name,
    description: tool.description,
    parameters: { type: "object", properties: tool.parameters, required: Object.keys(tool.parameters) },
  },
}));

// The loop.

class Stop extends Error {
  constructor(reason, detail, infra) {
    super(`${reason}: ${detail}`);
    Object.assign(this, { reason, detail, infra });
  }
}

async function chat(options, messages) {
  const timeout = Number(options.request_timeout ?? 120) * 1000;
  const headers = { "content-type": "application/json" };
  if (options.api_key) headers.authorization = `Bearer ${options.api_key}`;
  let response;
  try {
    response = await fetch(`${String(options.base_url).replace(/\/$/, "")}/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: options.model, messages, tools: TOOL_SPECS }),
      signal: AbortSignal.timeout(timeout),
    });
  } catch (error) {
    const kind = error.name === "TimeoutError" ? "timeout" : "connection";
    throw new Stop("model_error", `${kind}: ${error.message}`, { kind, retry_after: null });
  }
  if (!response.ok) {
    const kind = response.status === 429 ? "rate_limit" : "server";
    const retry = Number(response.headers.get("retry-after")) || null;
    throw new Stop("model_error", `HTTP ${response.status}`, { kind, retry_after: retry });
  }
  let body;
  try {
    body = await response.json();
  } catch (error) {
    throw new Stop("model_error", `bad_reply: ${error.message}`, { kind: "bad_reply", retry_after: null });
  }
  const message = body?.choices?.[0]?.message;
  if (!message) throw new Stop("model_error", "bad_reply: no choices", { kind: "bad_reply", retry_after: null });
  return { message, usage: body.usage ?? {}, model: body.model ?? options.model };
}

async function runTask(task, options) {
  const limits = options.limits ?? {};
  const maxSteps = Number(limits.max_steps ?? DEFAULT_MAX_STEPS);
  const started = Date.now();
  const state = { steps: 0, prompt: 0, completion: 0, trajectory: [] };
  const messages = [
    { role: "system", content: SYSTEM },
    { role: "user", content: task },
  ];
  const seen = new Map();
  const budget = (needed) => {
    if (state.steps + needed > maxSteps) throw new Stop("turn_limit", `${state.steps} of ${maxSteps} steps used`);
    const tokens = state.prompt + state.completion;
    if (limits.max_tokens != null && tokens >= limits.max_tokens) {
      throw new Stop("token_budget", `${tokens} of ${limits.max_tokens} tokens used`);
    }
    const elapsed = (Date.now() - started) / 1000;
    if (limits.max_seconds != null && elapsed >= limits.max_seconds) {
      throw new Stop("time_budget", `${elapsed.toFixed(1)} of ${limits.max_seconds} seconds used`);
    }
  };
  let answer = "";
  let stop = { reason: "finished", detail: "" };
  try {
    for (;;) {
      budget(1);
      const asked = Date.now();
      const { message, usage, model } = await chat(options, messages);
      const calls = message.tool_calls ?? [];
      state.steps += 1;
      state.prompt += usage.prompt_tokens ?? 0;
      state.completion += usage.completion_tokens ?? 0;
      state.trajectory.push({
        type: "model",
        role: "agent",
        model,
        tool_calls: calls.map((c) => c.function.name),
        prompt_tokens: usage.prompt_tokens ?? 0,
        completion_tokens: usage.completion_tokens ?? 0,
        seconds: (Date.now() - asked) / 1000,
        content: (message.content ?? "").slice(0, RECORD_CHARS),
      });
      if (calls.length === 0) {
        answer = message.content ?? "";
        break;
      }
      messages.push({ role: "assistant", content: message.content ?? null, tool_calls: calls });
      for (const call of calls) {
        budget(1);
        messages.push({ role: "tool", tool_call_id: call.id, content: useTool(options, call, state, seen) });
      }
    }
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
    stop = error;
  }
  state.trajectory.push({ type: "stop", reason: stop.reason, detail: stop.detail });
  const result = {
    protocol: PROTOCOL,
    answer,
    steps: state.steps,
    tokens: state.prompt + state.completion,
    prompt_tokens: state.prompt,
    completion_tokens: state.completion,
    seconds: (Date.now() - started) / 1000,
    stopped: stop.reason,
    trajectory: state.trajectory,
  };
  if (stop.infra) result.infra_error = stop.infra;
  return result;
}

function useTool(options, call, state, seen) {
  const began = Date.now();
  const name = call.function.name;
  let args = {};
  let result;
  let error = false;
  try {
    args = JSON.parse(call.function.arguments || "{}");
    const key = `${name} ${JSON.stringify(args)}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    if (seen.get(key) >= REPEAT_LIMIT) throw new Stop("repeated_call", `${name} called ${REPEAT_LIMIT} times`);
    if (!(name in TOOLS)) throw new ToolError(`unknown tool '${name}'; the tools are: ${Object.keys(TOOLS).join(", ")}`);
    result = TOOLS[name].run(options.workspace, args);
  } catch (failure) {
    if (failure instanceof Stop) throw failure;
    // A tool's failure is an observation the model can react to, never the end of the run.
    result = failure instanceof SyntaxError ? `the arguments are not JSON: ${failure.message}` : failure.message;
    error = true;
  }
  result = String(result).slice(0, RESULT_CHARS);
  state.steps += 1;
  state.trajectory.push({
    type: "tool",
    tool: name,
    args,
    error,
    result: result.slice(0, RECORD_CHARS),
    seconds: (Date.now() - began) / 1000,
  });
  return result;
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let reply;
    try {
      const request = JSON.parse(line);
      if (request.protocol !== PROTOCOL) throw new Error(`unsupported protocol ${request.protocol}`);
      reply = await runTask(String(request.task), request.options ?? {});
    } catch (error) {
      console.error(error.stack ?? String(error));
      reply = { protocol: PROTOCOL, error: String(error.message ?? error) };
    }
    process.stdout.write(JSON.stringify(reply) + "\n");
  }
}

main();
