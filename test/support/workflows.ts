/** Shared structure_data for the plan tests: a workflow as a team file declares it. */
export const SAFETY_WORKFLOW = {
  id: "SAFE_SOP_v9",
  name: "Safety review",
  description: "Review a change for safety.",
  steps: [
    {
      step_id: "s1",
      name: "Analyze",
      tasks: [
        { task_id: "t1", name: "Gather facts", assignee: "analyst", description: "Collect the facts." },
        { task_id: "t2", name: "List hazards", assignee: "analyst" },
      ],
    },
    {
      step_id: "s2",
      name: "Decide",
      description: "Decide and report.",
      tasks: [
        { task_id: "t3", name: "Assess risk", assignee: "reviewer" },
        { task_id: "t4", name: "Extra notes", assignee: "reviewer", optional: true },
      ],
    },
  ],
};

/** A one-step plan with `n` tasks t1..tn assigned round-robin to `roles`. */
export function wideWorkflow(n: number, roles: string[] = ["worker"]) {
  return {
    name: "Wide",
    steps: [
      {
        step_id: "s1",
        name: "All",
        tasks: Array.from({ length: n }, (_, i) => ({
          task_id: `t${i + 1}`,
          name: `Task ${i + 1}`,
          assignee: roles[i % roles.length] as string,
        })),
      },
    ],
  };
}
