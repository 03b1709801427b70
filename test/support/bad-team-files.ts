/**
 * One bad team file per kind of mistake, with the exact problems `runtime
 * validate` must report: `LINE:COL PATH MESSAGE` (`$DIR` stands for the
 * directory the files are written to).
 */

/** The valid base most cases start from (lines 1-8). */
export const BASE = `version: 1
name: t
models:
  offline: { provider: scripted, script: ./script.yaml }
agents:
  solver:
    kind: react
    tools: [calculator, terminate]
`;

export interface BadCase {
  name: string;
  text: string | Buffer;
  expect: string[];
}

const aliasBomb = [
  "version: 1",
  "name: bomb",
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...Array.from({ length: 8 }, (_, i) => {
    const prev = String.fromCharCode(97 + i);
    const next = String.fromCharCode(98 + i);
    return `${next}: &${next} [${Array(9).fill(`*${prev}`).join(",")}]`;
  }),
  "",
].join("\n");

const deepBlock = `${Array.from({ length: 70 }, (_, i) => `${"  ".repeat(i)}k${i}:`).join("\n")} end\n`;

export const BAD_CASES: BadCase[] = [
  {
    name: "unknown-key",
    text: `${BASE}    max_iterations: 5\n`,
    expect: ["9:5 /agents/solver/max_iterations unknown key 'max_iterations' (did you mean 'max_iteration'?)"],
  },
  {
    name: "key-of-another-kind",
    text: `${BASE}    planner: solver\n`,
    expect: ["9:5 /agents/solver/planner unknown key 'planner' for a react agent: 'planner' belongs to plan_and_solve_flow and plan_solver agents"],
  },
  {
    name: "wrong-type",
    text: `${BASE}    max_iteration: many\n`,
    expect: ["9:20 /agents/solver/max_iteration expected an integer, got 'many'"],
  },
  {
    name: "missing-required",
    text: `version: 1\nname: t\nmodels:\n  offline: { provider: scripted, script: ./script.yaml }\nagents:\n  solver:\n    tools: [calculator]\n`,
    expect: [
      "6:3 /agents/solver missing required key 'kind' (the engine: react (docs/design/react-design.md), plan_and_solve (docs/design/plan-and-solve-design.md, docs/design/todo-list-design.md), plan_and_solve_flow (docs/design/plan-and-solve-flow-design.md), plan_solver (docs/design/plan-solver-design.md), sop (docs/design/plan-tool-design.md))",
    ],
  },
  {
    name: "unknown-model",
    text: `${BASE}    model: ofline\n`,
    expect: ["9:12 /agents/solver/model unknown model 'ofline' (did you mean 'offline'?); declared models: offline"],
  },
  {
    name: "unknown-tool",
    text: BASE.replace("[calculator, terminate]", "[calculater, terminate]"),
    expect: ["8:13 /agents/solver/tools/0 unknown tool 'calculater' (did you mean 'calculator'?): expected a tool under 'tools', a built-in tool or an agent"],
  },
  {
    name: "unknown-agent",
    text: `${BASE}  team:\n    kind: plan_solver\n    planner: solver\n    solver: solvr\n`,
    expect: ["12:13 /agents/team/solver unknown agent 'solvr' (did you mean 'solver'?); declared agents: solver, team"],
  },
  {
    name: "unknown-workflow",
    text: `${BASE}  review:
    kind: sop
    workflow: SAFE_SOP_v8
    strategist: solver
workflows:
  SAFE_SOP_v9:
    name: Safety
    steps:
      - step_id: s1
        name: Analyze
        tasks:
          - { task_id: t1, name: Facts, assignee: solver, description: Gather facts. }
`,
    expect: ["11:15 /agents/review/workflow unknown workflow 'SAFE_SOP_v8' (did you mean 'SAFE_SOP_v9'?); declared workflows: SAFE_SOP_v9"],
  },
  {
    name: "unknown-assignee",
    text: `${BASE}workflows:
  W:
    name: Safety
    steps:
      - step_id: s1
        name: Analyze
        tasks:
          - task_id: t1
            name: Facts
            assignee: solvr
            description: Gather facts.
`,
    expect: [
      "18:23 /workflows/W/steps/0/tasks/0/assignee unknown assignee 'solvr' (did you mean 'solver'?): an assignee must be an agent; declared agents: solver",
    ],
  },
  {
    name: "missing-prompt-file",
    text: `${BASE}    system_prompt: ./prompts/missing.hbs\n`,
    expect: ["9:20 /agents/solver/system_prompt prompt file not found: $DIR/prompts/missing.hbs"],
  },
  {
    name: "agent-cycle",
    text: `${BASE}  helper:\n    kind: react\n    tools: [checker]\n  checker:\n    kind: react\n    tools: [solver]\n`.replace(
      "[calculator, terminate]",
      "[calculator, helper]",
    ),
    expect: ["14:13 /agents/checker/tools/0 agent cycle: solver → helper → checker → solver (an agent may not reach itself through its tools or sub-agents)"],
  },
  {
    name: "duplicate-task-id",
    text: `${BASE}workflows:
  W:
    name: Safety
    steps:
      - step_id: s1
        name: Analyze
        tasks:
          - { task_id: t1, name: Facts, assignee: solver, description: Gather facts. }
      - step_id: s2
        name: Review
        tasks:
          - { task_id: t1, name: Verdict, assignee: solver, description: Decide. }
`,
    expect: ["20:24 /workflows/W/steps/1/tasks/0/task_id duplicate task_id 't1' (first used at /workflows/W/steps/0/tasks/0/task_id)"],
  },
  {
    name: "unset-variable",
    text: `version: 1
name: t
models:
  default:
    provider: openai
    model: gpt-4o-mini
    api_key: \${RUNTIME_TEST_SURELY_UNSET_KEY}
agents:
  solver: { kind: react }
`,
    expect: [
      "7:14 /models/default/api_key environment variable RUNTIME_TEST_SURELY_UNSET_KEY is not set (write ${RUNTIME_TEST_SURELY_UNSET_KEY:-default} to give a fallback)",
    ],
  },
  {
    name: "malformed-variable",
    text: `version: 1
name: t
models:
  default:
    provider: openai
    model: gpt-4o-mini
    base_url: "\${ BASE_URL }/v1"
    api_key: \${OPENAI-KEY}
agents:
  solver: { kind: react }
`,
    expect: [
      "7:15 /models/default/base_url malformed variable reference '${ BASE_URL }': write ${NAME} or ${NAME:-default} (NAME of letters, digits and _), or $${ for a literal ${",
      "8:14 /models/default/api_key malformed variable reference '${OPENAI-KEY}': write ${NAME} or ${NAME:-default} (NAME of letters, digits and _), or $${ for a literal ${",
    ],
  },
  {
    name: "duplicate-yaml-key",
    text: `${BASE}    kind: plan_and_solve\n`,
    expect: ["9:5 /agents/solver/kind duplicate key 'kind': each key may appear once in a mapping"],
  },
  {
    name: "alias-bomb",
    text: aliasBomb,
    expect: ["5:8 /d/0/0 more than 100 alias references (an alias bomb?)"],
  },
  {
    name: "ten-megabytes",
    text: `${BASE}# ${"x".repeat(10 * 1024 * 1024)}\n`,
    expect: ["1:1 / file is 10.0 MB: a team file may be at most 1 MB"],
  },
  {
    name: "proto-key",
    text: `${BASE}    __proto__: { polluted: true }\n`,
    expect: ["9:5 /agents/solver/__proto__ key '__proto__' is not allowed"],
  },
  {
    name: "constructor-key",
    text: `${BASE}  constructor:\n    prototype: { polluted: true }\n`,
    expect: ["9:3 /agents/constructor key 'constructor' is not allowed"],
  },
  {
    name: "deep-flow-nesting",
    text: `${BASE}x: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`,
    expect: ["9:68 / nesting deeper than 64 levels"],
  },
  {
    name: "deep-block-nesting",
    text: `${BASE}${deepBlock}`,
    expect: [`73:129 /${Array.from({ length: 65 }, (_, i) => `k${i}`).join("/")} nesting deeper than 64 levels`],
  },
  {
    name: "binary-garbage",
    text: Buffer.concat([Buffer.from("version: 1\nname: "), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0xff])]),
    expect: ["2:7 / binary data (bytes that are not UTF-8): a team file must be UTF-8 text"],
  },
  {
    name: "prompt-and-system-prompt",
    text: `${BASE}    system_prompt: ./script.yaml\n    prompt: You solve.\n`,
    expect: ["10:13 /agents/solver/prompt give either 'system_prompt' (a file) or 'prompt' (inline text), not both"],
  },
  {
    name: "prompt-syntax",
    text: `${BASE}    prompt: "Hi {{#if plan}} unclosed"\n`,
    expect: ["9:13 /agents/solver/prompt invalid Handlebars template: line 1: Expecting 'OPEN_INVERSE_CHAIN', 'INVERSE', 'OPEN_ENDBLOCK', got 'EOF'"],
  },
  {
    name: "prompt-partial",
    text: `${BASE}    prompt: "Hi {{> header}}"\n`,
    expect: ["9:13 /agents/solver/prompt invalid Handlebars template: partials ({{> header}}) are not supported"],
  },
  {
    name: "bad-tool-parameters",
    text: `${BASE}tools:
  lookup:
    command: [node, ./lookup.mjs]
    parameters:
      type: object
      properties: { topic: { type: string } }
      requird: [topic]
`.replace("[calculator, terminate]", "[calculator, lookup]"),
    expect: ["12:5 /tools/lookup/parameters invalid JSON Schema: unknown keyword 'requird' (did you mean 'required'?)"],
  },
  {
    name: "tool-parameters-unknown-format",
    text: `${BASE}tools:
  paint:
    command: [node, ./paint.mjs]
    parameters:
      type: object
      properties: { colour: { type: string, format: color } }
`.replace("[calculator, terminate]", "[calculator, paint]"),
    expect: [
      "12:5 /tools/paint/parameters invalid JSON Schema: unsupported format 'color' at #/properties/colour; supported formats: date, time, date-time, duration, email, hostname, ipv4, ipv6, uri, uuid",
    ],
  },
  {
    name: "unknown-kind",
    text: BASE.replace("kind: react", "kind: reac"),
    expect: [
      "7:11 /agents/solver/kind expected one of 'react', 'plan_and_solve', 'plan_and_solve_flow', 'plan_solver' or 'sop', got 'reac' (did you mean 'react'?)",
    ],
  },
  {
    name: "wrong-version",
    text: BASE.replace("version: 1", "version: 2"),
    expect: ["1:10 /version expected 1, got 2"],
  },
  {
    name: "misspelt-top-level-key",
    text: BASE.replace("agents:", "agent:"),
    expect: [
      "1:1 / missing required key 'agents' (agents by name. The name is the agent_id in events and traces; an agent named in another agent's `tools` is called like a tool ({query} in, its answer out))",
      "5:1 /agent unknown key 'agent' (did you mean 'agents'?)",
    ],
  },
  {
    name: "yaml-syntax",
    text: `${BASE}    description: [unclosed\n`,
    expect: ["10:1 / YAML syntax: Flow sequence in block collection must be sufficiently indented and end with a ]"],
  },
  {
    name: "unquoted-variable-in-flow",
    text: `version: 1\nname: t\nmodels:\n  m: { provider: openai, model: x, api_key: \${KEY} }\nagents:\n  solver: { kind: react }\n`,
    expect: ['4:46 / YAML syntax: Unexpected flow-map-start at node end (inside { } or [ ], quote a variable: "${VAR}")'],
  },
  {
    name: "tool-without-kind",
    text: `${BASE}tools:\n  lookup:\n    comand: [node, ./lookup.mjs]\n`,
    expect: ["10:3 /tools/lookup expected exactly one of the keys 'builtin', 'command', 'http', 'mcp', 'module' or 'a2a' (did you mean 'command'?)"],
  },
  {
    name: "mcp-without-server",
    text: `${BASE}tools:\n  fs:\n    mcp: { tools: [read_file] }\n`,
    expect: ["11:10 /tools/fs/mcp expected exactly one of the keys 'command' or 'url'"],
  },
  {
    name: "mcp-command-and-url",
    text: `${BASE}tools:\n  fs:\n    mcp: { command: [node, x.mjs], url: "http://127.0.0.1:9/mcp", headers: {} }\n`,
    expect: [
      "11:36 /tools/fs/mcp/url unknown key 'url'; expected one of 'command', 'env', 'sandbox', 'tools' or 'connect_timeout_ms'",
      "11:67 /tools/fs/mcp/headers unknown key 'headers'; expected one of 'command', 'env', 'sandbox', 'tools' or 'connect_timeout_ms'",
    ],
  },
  {
    name: "mcp-old-shape",
    text: `${BASE}tools:\n  fs:\n    mcp: { server: [node, x.mjs], tool: read_file }\n`,
    expect: ["11:10 /tools/fs/mcp expected exactly one of the keys 'command' or 'url'"],
  },
  {
    name: "mcp-bad-url-and-tools",
    text: `${BASE}tools:\n  fs:\n    mcp: { url: "ftp://x/mcp", tools: [], env: { A: b } }\n`,
    expect: [
      "11:17 /tools/fs/mcp/url expected an http:// or https:// URL, got 'ftp://x/mcp'",
      "11:39 /tools/fs/mcp/tools expected a list of at least 1 item",
      "11:43 /tools/fs/mcp/env unknown key 'env'; expected one of 'url', 'headers', 'tools' or 'connect_timeout_ms'",
    ],
  },
  {
    name: "unknown-entry",
    text: `${BASE}entry: solvr\n`,
    expect: ["9:8 /entry unknown agent 'solvr' (did you mean 'solver'?); declared agents: solver"],
  },
  {
    name: "invalid-name",
    text: `${BASE}  my agent:\n    kind: react\n`,
    expect: ["9:3 /agents/my agent invalid name 'my agent': use letters, digits, '_' and '-', starting with a letter or '_', at most 64 characters"],
  },
  {
    name: "tool-listed-twice",
    text: BASE.replace("[calculator, terminate]", "[calculator, terminate, calculator]"),
    expect: ["8:36 /agents/solver/tools/2 'calculator' is listed twice"],
  },
  {
    name: "tools-on-a-flow",
    text: `${BASE}  flow:\n    kind: plan_and_solve_flow\n    planner: solver\n    executor: solver\n    tools: [calculator]\n`,
    expect: ["13:12 /agents/flow/tools a plan_and_solve_flow calls no tools itself: give them to its executor agent"],
  },
  {
    name: "http-tool-bad-url",
    text: `${BASE}tools:\n  fetch:\n    http: { url: "ftp://example.com", method: PUT }\n`,
    expect: [
      "11:18 /tools/fetch/http/url expected an http:// or https:// URL, got 'ftp://example.com'",
      "11:47 /tools/fetch/http/method expected one of 'GET' or 'POST', got 'PUT'",
    ],
  },
  {
    name: "empty-file",
    text: "",
    expect: ["1:1 / the file is empty: expected a mapping with version, name, models and agents"],
  },
  {
    name: "top-level-list",
    text: "- version: 1\n- name: t\n",
    expect: ["1:1 / expected a mapping with version, name, models and agents, got a list"],
  },
  {
    name: "top-level-scalar",
    text: "# a team?\nhello\n",
    expect: ["2:1 / expected a mapping with version, name, models and agents, got 'hello'"],
  },
];
