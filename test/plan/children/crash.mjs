// Child process: creates a plan, moves tasks, then dies without closing the database.
// argv: <plan-tool.js> <db file> <plan_id> <structure JSON>
const [modulePath, file, planId, structure] = process.argv.slice(2);
const { openPlanFile } = await import(modulePath);
const tool = openPlanFile(file);
if (!(await tool.create_plan_from_structure(planId, JSON.parse(structure)))) process.exit(3);
await tool.update_task_status(planId, "t1", "inprogress");
await tool.update_task_status(planId, "t1", "completed", "facts gathered");
await tool.update_task_status(planId, "t3", "inprogress");
await tool.update_task_status(planId, "t3", "error", "reviewer unavailable");
process.kill(process.pid, "SIGKILL");
