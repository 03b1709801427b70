// A preload (`node --import ./test/support/list-scripts.mjs ...`): when the process exits, it
// writes the URLs of the scripts V8 parsed to $LIST_SCRIPTS_FILE, one per line
// (test/architecture/lazy-loading.test.ts).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

const session = new Session();
session.connect();
const urls = [];
session.on("Debugger.scriptParsed", (m) => urls.push(m.params.url));
await session.post("Debugger.enable");
process.on("exit", () => writeFileSync(process.env.LIST_SCRIPTS_FILE, urls.join("\n")));
