#!/usr/bin/env node
'use strict';
// Thin launcher: the CLI is written in TypeScript and compiled to dist/ by `npm run build` (run by `prepare`).
// Commands that run a worker start node again with the worker's heap limit first (dist/cli/relaunch.js).
const relaunched = require('../dist/cli/relaunch.js').relaunch(process.argv);
(relaunched ?? require('../dist/cli/main.js').main(process.argv)).then(
  (code) => { process.exitCode = code; },
  (err) => { process.stderr.write(`lbaas: ${err && err.message ? err.message : String(err)}\n`); process.exitCode = 1; },
);
