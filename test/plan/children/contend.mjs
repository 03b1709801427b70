// Child process: races the other children over every task of one plan.
// argv: <plan-tool.js> <db file> <plan_id> <task count>
// Prints {"started", "completed", "first", "last"}: the tasks this process won and completed, and when it worked.
const [modulePath, file, planId, count] = process.argv.slice(2);
const { openPlanFile } = await import(modulePath);
const tool = openPlanFile(file);
const ids = Array.from({ length: Number(count) }, (_, i) => `t${i + 1}`);
// A different order per process, so they collide all along the list.
if (Number(process.env.REVERSE)) ids.reverse();
// Start together: say ready, then wait for the parent's go file (it appears once every child is ready).
const { existsSync } = await import("node:fs");
process.stderr.write("ready\n");
while (!existsSync(process.env.GO_FILE)) await new Promise((resolve) => setTimeout(resolve, 2));
const first = Date.now();
const won = [];
for (const id of ids) {
  if (await tool.update_task_status(planId, id, "inprogress")) won.push(id);
}
let completed = 0;
for (const id of won) {
  if (await tool.update_task_status(planId, id, "completed", `done by ${process.pid}`)) completed++;
}
tool.close();
process.stdout.write(JSON.stringify({ started: won.length, completed, first, last: Date.now() }));
