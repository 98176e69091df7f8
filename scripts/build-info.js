#!/usr/bin/env node
'use strict';
// Part of `npm run build`: records which code dist/ was built from (the package version and, in a git checkout, the
// commit) in dist/build-info.json, where worker/versioning.ts reads it to name the worker's build (its Worker
// Deployment Version). A build outside git (an unpacked release tarball) records no commit; LBAAS_BUILD_ID names the
// build there, or LBAAS_BUILD_COMMIT gives the commit where the sources come without .git (the Containerfile's build
// stage passes its LBAAS_COMMIT build argument).
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
let commit = process.env.LBAAS_BUILD_COMMIT || null;
if (commit !== null && !/^[0-9a-f]{7,64}$/.test(commit)) {
  console.error(`build-info: LBAAS_BUILD_COMMIT must be a hexadecimal commit id, got "${commit}"`);
  process.exit(2);
}
if (commit === null) {
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim() || null;
  } catch {
    // Not a git checkout, or no git: the build id is the version alone.
  }
}
fs.mkdirSync(path.join(root, 'dist'), { recursive: true });
fs.writeFileSync(path.join(root, 'dist', 'build-info.json'), `${JSON.stringify({ version, commit })}\n`);
