// agent-eval view: runs, a run, an attempt, a comparison. No build step, no network.
// Everything a model or an agent wrote is untrusted: it reaches the page only as text
// nodes (el() below), and links are only ever the app's own "#/..." routes.
"use strict";

const STATIC = document.querySelector('meta[name="agent-eval-mode"]').content === "static";
const STEPS_PAGE = 200;
const GRID_PAGE = 100;
let refreshTimer = null;

// -- DOM ------------------------------------------------------------------------------
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "href") {
      if (typeof value === "string" && value.startsWith("#")) node.setAttribute("href", value);
    } else if (key === "className") node.className = value;
    else if (key === "onclick" || key === "onchange" || key === "oninput" || key === "ontoggle") node[key] = value;
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
const main = () => document.getElementById("main");
function present(nodes) { return nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false); }
function show(...nodes) { main().replaceChildren(...present(nodes)); }
function crumbs(...nodes) { document.getElementById("crumbs").replaceChildren(...present(nodes)); }
function problem(text) { return el("p", { className: "problem" }, text); }
function num(value, digits) {
  if (value === null || value === undefined) return "–";
  return typeof value === "number" && digits !== undefined ? value.toFixed(digits) : String(value);
}
// Money as the console prints it: six decimals, never a float's seventeen digits.
function money(value) {
  return typeof value === "number" ? value.toFixed(6) : num(value);
}
function interval(pair, digits = 3) {
  return Array.isArray(pair) ? `[${num(pair[0], digits)}, ${num(pair[1], digits)}]` : "–";
}
function badge(cls) { return el("span", { className: `badge cls-${cls}` }, cls); }
function pre(text) { return el("pre", {}, text === null || text === undefined ? "" : String(text)); }
function json(value) { return pre(JSON.stringify(value, null, 2)); }

// -- data: JSON endpoints when served, data files when exported ------------------------
const staticData = {};
window.AgentEvalData = (key, value) => { staticData[key] = value; };
function staticKey(path) { return path.replace(/\//g, "-"); }
function load(path, params) {
  if (!STATIC) {
    const query = params ? "?" + new URLSearchParams(params).toString() : "";
    return fetch(`api/${path}${query}`).then((r) => r.json().then((body) => {
      if (!r.ok || body.error) throw new Error(body.error || `HTTP ${r.status}`);
      return body;
    }));
  }
  const key = staticKey(path);
  if (key in staticData) return Promise.resolve(staticData[key]);
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = `data/${key}.js`;
    script.onload = () => {
      const body = staticData[key];
      if (!body) reject(new Error(`${key}: not in this export`));
      else if (body.error) reject(new Error(body.error));
      else resolve(body);
    };
    script.onerror = () => reject(new Error(`${key}: not in this export`));
    document.head.append(script);
  });
}

// -- routing: #/, #/run/ID, #/attempt/ID/N, #/compare/A/B ------------------------------
function route() {
  clearTimeout(refreshTimer);
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  const pages = { run: runPage, attempt: attemptPage, compare: comparePage };
  const page = pages[parts[0]] || runsPage;
  crumbs();
  const hash = location.hash;
  document.body.removeAttribute("data-shown");
  Promise.resolve(page(parts.slice(1), params)).catch((error) => show(problem(error.message)))
    .then(() => { if (location.hash === hash) document.body.setAttribute("data-shown", hash); });
}
window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);
function link(text, ...parts) {
  const [path, params] = typeof parts[parts.length - 1] === "object" ? [parts.slice(0, -1), parts[parts.length - 1]] : [parts, null];
  const query = params ? "?" + new URLSearchParams(params).toString() : "";
  return el("a", { href: "#/" + path.map(encodeURIComponent).join("/") + query }, text);
}
function liveRefresh(active) {
  if (active && !STATIC) refreshTimer = setTimeout(route, 2000);
}

// -- runs -----------------------------------------------------------------------------
async function runsPage() {
  const body = await load("runs");
  const picked = [];
  const compareButton = el("button", { type: "button", disabled: true, id: "compare" }, "Compare the two picked runs");
  compareButton.onclick = () => { location.hash = `#/compare/${picked[0]}/${picked[1]}`; };
  const rows = body.runs.map((run) => {
    const pick = el("input", { type: "checkbox", "data-run": run.id, disabled: run.kind !== "results" || run.problem });
    pick.onchange = () => {
      if (pick.checked) picked.push(run.id); else picked.splice(picked.indexOf(run.id), 1);
      while (picked.length > 2) {
        const old = picked.shift();
        document.querySelector(`input[data-run="${old}"]`).checked = false;
      }
      compareButton.disabled = picked.length !== 2;
    };
    const name = `${run.scaffold || "?"} x ${run.model || "?"}` + (run.quant ? ` (${run.quant})` : "");
    if (run.problem) {
      return el("tr", { className: "broken" }, el("td"), el("td", { colspan: 9 }, problem(`${run.file}: ${run.problem}`)));
    }
    const title = run.kind === "labbook" ? el("span", {}, name, " ", el("span", { className: "muted" }, "(labbook line)"))
      : link(name, "run", run.id);
    return el("tr", { "data-kind": run.kind },
      el("td", {}, pick),
      el("td", {}, title, run.kind === "journal" ? el("span", { className: "badge cls-over_budget" }, run.in_progress ? " in progress " : " journal only ") : null),
      el("td", {}, `${run.suite || ""} ${run.suite_version || ""}`),
      el("td", {}, (run.date || "").slice(0, 16).replace("T", " ")),
      el("td", { className: "num" }, num(run.attempts)),
      el("td", { className: "num" }, run.success_rate === null || run.success_rate === undefined ? "–" : `${num(run.success_rate, 3)} (${run.passed}/${run.attempts})`),
      el("td", { className: "num" }, num(run.mean_steps)),
      el("td", { className: "num" }, num(run.mean_tokens)),
      el("td", { className: "num" }, num(run.mean_seconds)),
      el("td", { className: "num" }, run.cost_per_task === null || run.cost_per_task === undefined ? "not priced" : money(run.cost_per_task)),
      el("td", { className: "muted" }, run.file, run.problems.length ? ` (${run.problems.length} line(s) skipped)` : ""));
  });
  show(el("h1", {}, `${body.runs.length} run(s)`),
    el("table", { id: "runs" },
      el("tr", {}, ["", "run", "suite", "date", "attempts", "success", "mean steps", "mean tokens", "mean seconds", "cost per task", "file"].map((h) => el("th", {}, h))),
      rows),
    el("p", {}, compareButton));
  liveRefresh(body.runs.some((run) => run.in_progress));
}

// -- one run --------------------------------------------------------------------------
function summaryBlock(s) {
  const line = (name, value) => [el("div", { className: "muted" }, name), el("div", {}, value)];
  const k = Object.keys(s.pass_hat_k || {});
  const last = k[k.length - 1];
  return el("div", { className: "summary", id: "summary" },
    line("success rate", `${num(s.success_rate, 3)} (${s.passed} of ${s.attempts}), Wilson 95% ${interval(s.wilson95)}`),
    line("mean over tasks", `${num(s.task_mean, 3)} ± ${num(s.task_se, 3)} SE, t 95% ${interval(s.task_ci95)} over ${s.tasks} task(s)`),
    line("model success", `${num(s.model_success.rate, 3)} (${s.model_success.passed} of ${s.model_success.attempts}, infra errors left out)`),
    last ? line(`pass@${last} / pass^${last}`, `${num(s.pass_at_k[last], 3)} / ${num(s.pass_hat_k[last], 3)} ± ${num(s.pass_hat_k_se[last], 3)}`) : null,
    s.within_task_var !== null ? line("variance within / between tasks", `${num(s.within_task_var, 4)} / ${num(s.between_task_var, 4)}`) : null,
    line("failure classes", Object.entries(s.failure_classes).map(([c, n]) => [badge(c), ` ${n}  `])),
    line("mean steps, tokens, seconds", `${num(s.mean_steps, 2)}, ${num(s.mean_tokens, 1)}, ${num(s.mean_seconds, 1)} (total tokens ${s.total_tokens})`),
    s.tokens_by_role ? line("tokens by role", Object.entries(s.tokens_by_role).map(([r, n]) => `${r} ${n}`).join(", ")) : null,
    line("cost", s.cost ? `${money(s.cost.cost_per_task)} per task, ${money(s.cost.cost_total)} in all` : "not computed (no price given to the run)"),
    s.unstable_tasks.length ? line("unstable tasks", s.unstable_tasks.join(", ")) : null,
    (s.copied_passes || []).length ? line("copied passes", [el("span", { className: "bad", id: "copied" }, `${s.copied_passes.length} of ${s.passed} passes mostly copy the task or the documents: `),
      s.copied_passes.map((c) => `${c.task_id} r${c.attempt} (${num(c.copied_share, 2)})`).join(", ")]) : null);
}

function gridFilters(id, info, params) {
  const set = (key, value) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value); else next.delete(key);
    next.delete("offset");
    location.hash = `#/run/${encodeURIComponent(id)}?${next}`;
  };
  const failed = el("input", { type: "checkbox", id: "failed", checked: params.get("failed") === "1" });
  failed.onchange = () => set("failed", failed.checked ? "1" : "");
  const select = (name, key, options) => {
    const node = el("select", { id: key }, el("option", { value: "" }, `any ${name}`),
      options.map((o) => el("option", { value: o, selected: params.get(key) === o }, o)));
    node.onchange = () => set(key, node.value);
    return node;
  };
  const search = el("input", { type: "search", id: "search", placeholder: "text in answers", value: params.get("q") || "" });
  search.onchange = () => set("q", search.value);
  return el("div", { className: "filters" },
    el("label", {}, failed, " failed only"), select("failure class", "class", info.classes),
    select("category", "category", info.categories), search);
}

function filterLocally(grid, params) {
  // The exported site has no server: the same filters, applied to the exported grid.
  const failed = params.get("failed") === "1", cls = params.get("class") || "";
  const category = params.get("category") || "", needle = (params.get("q") || "").toLowerCase();
  const filtering = failed || cls || needle;
  const tasks = [];
  for (const task of grid.tasks) {
    if (category && task.category !== category) continue;
    let any = false;
    for (const cell of task.cells) {
      cell.match = Boolean(filtering) && (!failed || cell.failure_class !== "passed")
        && (!cls || cell.failure_class === cls) && (!needle || (cell.answer || "").toLowerCase().includes(needle));
      any = any || cell.match;
    }
    if (!filtering || any) tasks.push(task);
  }
  const offset = Number(params.get("offset") || 0);
  return { total: grid.total, matched: tasks.length, offset, limit: GRID_PAGE, tasks: tasks.slice(offset, offset + GRID_PAGE) };
}

async function runPage([id], params) {
  const info = await load(`run/${id}`);
  const query = { offset: params.get("offset") || 0, limit: GRID_PAGE };
  for (const key of ["failed", "class", "category", "q"]) if (params.get(key)) query[key] = params.get(key);
  const grid = STATIC ? filterLocally(await load(`grid/${id}`), params) : await load(`grid/${id}`, query);
  const card = info.card;
  crumbs(" / ", link(`${card.scaffold} x ${card.model}`, "run", id));
  const rows = grid.tasks.map((task) => el("tr", { "data-task": task.task_id },
    el("td", {}, task.task_id), el("td", {}, task.category),
    el("td", {}, task.cells.map((cell) => {
      const a = link(`r${cell.attempt}`, "attempt", id, String(cell.index));
      a.className = `cell cls-${cell.failure_class}` + (grid.tasks.length && (params.get("failed") || params.get("class") || params.get("q")) && !cell.match ? " dim" : "");
      a.title = `${cell.failure_class}, ${cell.steps} step(s), ${cell.tokens} tok` + (cell.failure ? `: ${cell.failure}` : "");
      return a;
    })),
    el("td", { className: "num" }, `${task.successes}/${task.attempts}`),
    el("td", { className: "num" }, num(task.pass_hat_k, 3)),
    el("td", { className: "num" }, `${task.min_steps}–${task.max_steps}`),
    el("td", { className: "num" }, `${task.min_tokens}–${task.max_tokens}`)));
  const page = (offset, text) => {
    const next = new URLSearchParams(params); next.set("offset", String(offset));
    return el("a", { href: `#/run/${encodeURIComponent(id)}?${next}` }, text);
  };
  const pager = el("p", { className: "muted", id: "pager" },
    `tasks ${grid.matched ? grid.offset + 1 : 0}–${grid.offset + grid.tasks.length} of ${grid.matched} matching (${grid.total} in the run) `,
    grid.offset > 0 ? page(Math.max(0, grid.offset - grid.limit), "previous") : null, " ",
    grid.offset + grid.tasks.length < grid.matched ? page(grid.offset + grid.limit, "next") : null);
  show(el("h1", {}, `${card.scaffold} x ${card.model}`, card.in_progress ? " (in progress)" : ""),
    el("p", { className: "muted" }, `${card.suite} ${card.suite_version} · ${card.date || ""} · ${card.file}`),
    card.problems.map((text) => problem(`${card.file}: ${text}`)),
    summaryBlock(info.summary),
    el("h2", {}, "Tasks × attempts"), gridFilters(id, info, params),
    el("table", { id: "grid" },
      el("tr", {}, ["task", "category", "attempts", "passed", `pass^${info.repeats}`, "steps min–max", "tokens min–max"].map((h) => el("th", {}, h))),
      rows),
    pager);
  liveRefresh(card.in_progress);
}

// -- one attempt ----------------------------------------------------------------------
// Steps are numbered as an attempt counts them (model replies and tool results); a
// route, a stop or the score between them has no number.
function stepTitle(record, number) {
  const n = number ? `step ${number} · ` : "";
  switch (record.type) {
    case "model": {
      const asked = (record.tool_calls || []).join(", ");
      return `${n}model reply · ${record.role || "agent"} · ${record.model || ""} · ${num(record.prompt_tokens)} in / ${num(record.completion_tokens)} out tok · ${num(record.seconds, 2)} s` + (asked ? ` · asked for ${asked}` : " · no tool asked");
    }
    case "tool": return `${n}tool ${record.tool}${record.error ? " · ERROR" : ""} · ${JSON.stringify(record.args)}`.slice(0, 300);
    case "route": return `${n}route → ${record.route}: ${record.reason || ""}`;
    case "stop": return `${n}stop: ${record.reason}${record.detail ? ` (${record.detail})` : ""}`;
    case "score": return `${n}score: ${record.passed ? "passed" : "failed"} (${record.failure_class || ""})`;
    default: return `${n}${record.type || "record"}`;
  }
}

// The recorded model calls of the attempt on the page (run --record), by call number.
let shownCalls = {};
function callBody(call) {
  if (!call) return null;
  const part = (p) => (p ? ("json" in p ? p.json : "events" in p ? p.events : p.text) : null);
  const r = call.response;
  return [el("div", { className: "muted" }, `request · call ${call.call} · ${call.method} ${call.path}`),
    el("pre", { className: "call-request" }, JSON.stringify(part(call.request), null, 2)),
    el("div", { className: "muted" }, `response${r ? ` ${r.status}` : ""} · ${num(call.seconds, 3)} s · from the ${call.source || "endpoint"}`),
    r ? el("pre", { className: "call-response" }, JSON.stringify(part(r), null, 2)) : null,
    call.error ? el("p", { className: "problem" }, `${call.error.kind}: ${call.error.message}`) : null];
}
function callsNode(body) {
  return [body.problem ? problem(body.problem) : null,
    body.calls.map((call) => {
      const node = el("details", { className: "call" + (call.error ? " err" : ""), id: `call-${call.call}` },
        el("summary", {}, `call ${call.call} · ${call.method} ${call.path} · ${call.response ? call.response.status : call.error ? call.error.kind : ""} · ${num(call.seconds, 3)} s`));
      node.ontoggle = () => { if (node.open && node.children.length === 1) node.append(...present(callBody(call))); };
      return node;
    })];
}

function stepBody(record) {
  switch (record.type) {
    case "model": return [el("div", { className: "muted" }, "content"), pre(record.content), ...present([callBody(shownCalls[record.call])])];
    case "tool": return [el("div", { className: "muted" }, "arguments"), json(record.args),
      el("div", { className: "muted" }, `result${record.seconds !== undefined ? ` (${num(record.seconds, 3)} s)` : ""}`), pre(record.result)];
    default: return [json(record)];
  }
}

function stepNode(id, index, record, offset, k, wrong, number) {
  const at = offset + k;
  const node = el("details", { className: `step kind-${record.type}` + (record.error ? " err" : "") + (wrong === at ? " wrong" : ""), id: `step-${at + 1}` },
    el("summary", {}, stepTitle(record, number), " ", link("link", "attempt", id, String(index), { step: String(at + 1) })));
  // The body is built on first opening: 5,000 collapsed records stay cheap.
  node.ontoggle = () => { if (node.open && node.children.length === 1) node.append(...stepBody(record)); };
  return node;
}

async function attemptPage([id, index], params) {
  const a = await load(`attempt/${id}/${index}`);
  const recorded = a.recording ? await load(`calls/${id}/${index}`).catch((e) => ({ calls: [], problem: e.message })) : null;
  shownCalls = Object.fromEntries(((recorded || {}).calls || []).map((c) => [c.call, c]));
  const wanted = Number(params.get("step") || 0);
  const wrong = a.went_wrong ? a.went_wrong.step : null;
  crumbs(" / ", link(`${a.card.scaffold} x ${a.card.model}`, "run", id), " / ", `${a.task_id} r${a.attempt}`);
  const timeline = el("div", { id: "timeline" });
  let offset = wanted ? Math.floor((wanted - 1) / STEPS_PAGE) * STEPS_PAGE : 0;
  const first = offset;
  const more = el("button", { type: "button", id: "more" }, "show more records");
  const addPage = async () => {
    const page = STATIC ? sliceSteps(await load(`steps/${id}/${index}`), offset) : await load(`steps/${id}/${index}`, { offset, limit: STEPS_PAGE });
    if (page.problem) timeline.append(problem(page.problem));
    page.records.forEach((record, k) => timeline.append(stepNode(id, index, record, page.offset, k, wrong, (page.numbers || [])[k])));
    offset = page.offset + page.records.length;
    more.hidden = offset >= page.total;
    more.textContent = `show more records (${offset} of ${page.total} shown)`;
  };
  more.onclick = addPage;
  const checks = el("table", { id: "checks" }, el("tr", {}, el("th", {}, "check"), el("th", {}, "outcome"), el("th", {}, "why")),
    a.checks.map((c) => el("tr", { className: c.ok === false ? "failed-check" : "" }, el("td", {}, c.name),
      el("td", { className: c.ok === false ? "bad" : c.ok ? "ok" : "muted" }, c.ok === null ? (c.name === "tools_used" ? "" : "not checked") : c.ok ? "ok" : "FAILED"),
      el("td", {}, c.detail || ""))));
  const others = a.others.map((o) => [link(`r${o.attempt}${o.passed ? " ok" : " BAD"}`, "attempt", id, String(o.index)), " "]);
  show(el("h1", {}, `${a.task_id} r${a.attempt} `, badge(a.failure_class)),
    el("p", { className: "muted" }, `${a.category} · ${a.steps} step(s) · ${a.tokens} tok (${num(a.prompt_tokens)} in / ${num(a.completion_tokens)} out) · ${num(a.seconds, 2)} s · stopped: ${a.stopped}` + (a.copied_share !== null && a.copied_share !== undefined ? ` · copied share ${num(a.copied_share, 2)}` : "")),
    a.went_wrong ? el("p", { id: "went-wrong" }, "Went wrong at ", link(a.went_wrong.label || `record ${a.went_wrong.step + 1}`, "attempt", id, String(index), { step: String(a.went_wrong.step + 1) }), `: ${a.went_wrong.why}`) : null,
    a.copied ? el("p", { className: "problem", id: "copied" }, `copied: ${num(a.copied_share, 2)} of this answer copies the task or the documents word for word; it passed the checks, but look before trusting it`) : null,
    a.failure ? el("p", { className: "problem" }, a.failure) : null,
    a.attempt_error ? el("p", { className: "problem" }, `error: ${a.attempt_error}`) : null,
    a.traceback && a.traceback.length ? [el("h2", {}, "Traceback (the agent's own files)"),
      el("pre", { id: "traceback" }, a.traceback.map((f) => `${f.file}:${f.line} in ${f.function}\n    ${f.code}`).join("\n"))] : null,
    el("p", {}, "other attempts: ", others),
    el("h2", {}, "Score"), checks,
    el("h2", {}, "Answer"), el("pre", { id: "answer" }, a.answer),
    el("h2", {}, "Task"), pre(a.task || "(not recorded)"), a.notes ? el("p", { className: "muted" }, `notes: ${a.notes}`) : null,
    a.roles ? [el("h2", {}, "Tokens per role"), el("p", { id: "roles" }, Object.entries(a.roles).map(([r, n]) => `${r} ${n}`).join(", "))] : null,
    el("h2", {}, `Trajectory (${a.records} records)`),
    a.trajectory_problem ? problem(a.trajectory_problem) : null,
    first > 0 ? el("p", { className: "muted" }, `records before ${first + 1} are not shown; `, link("show from the start", "attempt", id, String(index))) : null,
    timeline, more,
    recorded ? [el("h2", {}, `Model calls (${recorded.calls.length} recorded)`), el("div", { id: "calls" }, callsNode(recorded))] : null,
    el("h2", {}, "Workspace diff"),
    a.diff_problem ? problem(a.diff_problem) : a.diff ? el("pre", { id: "diff" }, a.diff) : el("p", { className: "muted" }, a.changed_files.length ? `changed: ${a.changed_files.join(", ")}` : "no file changed"));
  await addPage();
  if (wanted) {
    const target = document.getElementById(`step-${wanted}`);
    if (target) { target.open = true; target.dispatchEvent(new Event("toggle")); target.scrollIntoView(); }
  }
}

function sliceSteps(all, offset) {
  return { total: all.total, offset, problem: all.problem, records: all.records.slice(offset, offset + STEPS_PAGE), numbers: (all.numbers || []).slice(offset, offset + STEPS_PAGE) };
}

// -- two runs -------------------------------------------------------------------------
async function comparePage([a, b], params) {
  const allow = params.get("allow") === "1";
  let c;
  try {
    c = await load(`compare/${a}/${b}`, allow ? { allow: "1" } : null);
  } catch (error) {
    show(problem(error.message), STATIC ? null : el("p", {}, link("pair the task ids they share anyway", "compare", a, b, { allow: "1" })));
    return;
  }
  const only = params.get("flips") === "1";
  crumbs(" / compare");
  const flips = { "pass→fail": 0, "fail→pass": 0, unstable: 0 };
  c.per_task.forEach((t) => { if (t.flip in flips) flips[t.flip] += 1; });
  const task = params.get("task");
  const rows = c.per_task.filter((t) => !only || t.flip !== "same").map((t) => el("tr", { "data-task": t.task_id, "data-flip": t.flip },
    el("td", {}, t.task_id), el("td", {}, t.category), el("td", { className: "num" }, t.a), el("td", { className: "num" }, t.b),
    el("td", {}, t.change), el("td", {}, t.flip),
    el("td", {}, t.flip === "same" ? "" : link("side by side", "compare", a, b, { ...(allow ? { allow: "1" } : {}), task: t.task_id }))));
  const toggle = el("input", { type: "checkbox", id: "flips-only", checked: only });
  toggle.onchange = () => { const next = new URLSearchParams(params); if (toggle.checked) next.set("flips", "1"); else next.delete("flips"); next.delete("task"); location.hash = `#/compare/${a}/${b}?${next}`; };
  const side = el("div", { id: "pair" });
  show(el("h1", {}, `${c.a.label}  vs  ${c.b.label}`),
    el("p", { className: "muted" }, "A: ", link(c.a.label, "run", a), " · B: ", link(c.b.label, "run", b)),
    el("p", { id: "verdict" }, c.verdict),
    el("div", { className: "summary" },
      el("div", { className: "muted" }, "difference B − A"), el("div", {}, `${num(c.difference, 3)} ± ${num(c.se_paired, 3)} SE, 95% ${interval(c.ci95)}`),
      el("div", { className: "muted" }, "fixed-suite test"), el("div", {}, `${c.fixed_suite_test}: p ${num(c.p_fixed_suite, 4)}`),
      el("div", { className: "muted" }, "paired t (tasks like these)"), el("div", {}, `p ${num(c.p_population, 4)}`),
      el("div", { className: "muted" }, "flips"), el("div", { id: "flips" }, `pass→fail ${flips["pass→fail"]} · fail→pass ${flips["fail→pass"]} · unstable ${flips.unstable}`)),
    el("h2", {}, "Per task"), el("label", {}, toggle, " changed or unstable only"),
    el("table", { id: "per-task" }, el("tr", {}, ["task", "category", "A", "B", "change", "flip", ""].map((h) => el("th", {}, h))), rows),
    side);
  if (task) await pairView(side, a, b, task);
}

async function pairView(side, a, b, task) {
  side.replaceChildren(el("p", { className: "muted" }, "aligning…"));
  let p;
  try { p = await load(`pair/${a}/${b}/${task}`); } catch (error) { side.replaceChildren(problem(error.message)); return; }
  const head = (s) => el("th", {}, `${s.passed ? "passing" : "failing"}: ${s.label} r${s.attempt} `, link("open", "attempt", s.run, String(s.index)),
    s.problem ? problem(s.problem) : null);
  const cell = (record, k) => el("td", {}, record ? [el("div", {}, stepTitle(record, k)),
    record.type === "tool" ? pre(record.result) : record.type === "model" ? pre(record.content) : null] : el("span", { className: "muted" }, "—"));
  let left = 0, right = 0;
  const rows = p.rows.map((row, i) => {
    const tr = el("tr", { className: (row.same ? "" : "diff") + (i === p.first_divergence ? " first" : ""), id: i === p.first_divergence ? "first-divergence" : null },
      cell(row.left, left), cell(row.right, right));
    if (i === p.first_divergence) tr.firstChild.prepend(el("div", { className: "marker" }, "▶ first divergence"));
    if (row.left) left += 1;
    if (row.right) right += 1;
    return tr;
  });
  side.replaceChildren(...present([el("h2", {}, `${task}: a passing and a failing attempt, step by step`),
    p.first_divergence === null ? el("p", {}, "The two attempts took the same steps; only the answers differ.") : el("p", {}, `They part ways at row ${p.first_divergence + 1}.`),
    el("div", { className: "side" }, el("div", {}, el("div", { className: "muted" }, "passing answer"), pre(p.sides[0].answer)),
      el("div", {}, el("div", { className: "muted" }, "failing answer"), pre(p.sides[1].answer))),
    el("table", { className: "aligned", id: "aligned" }, el("tr", {}, head(p.sides[0]), head(p.sides[1])), rows)]));
  const first = document.getElementById("first-divergence");
  if (first) first.scrollIntoView();
}
