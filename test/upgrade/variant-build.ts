/**
 * A build whose entity loop differs from this checkout's, for the upgrade test's second move (test/upgrade/upgrade.test.ts):
 * this checkout's dist/ copied to a temporary directory with one harmless change to the controller loop, a 1 ms timer
 * before every pass, which replaying a history of this checkout's loop would refuse (a timer command where the
 * history has a child workflow). Run under its own LBAAS_BUILD_ID: the same commit, other workflow code.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../helpers/cli';

export interface VariantBuild {
  bin: string;
  /** The LBAAS_BUILD_ID its workers run under. */
  buildId: string;
  remove(): void;
}

/** The line of dist/workflows/controller.js the timer goes before (the start of a pass). */
const PASS_START = '        const pass = state.beginPass();\n';

export function buildVariant(buildId: string): VariantBuild {
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'lbaas-upgrade-variant-')), 'lbaas');
  for (const part of ['bin', 'dist', 'package.json']) cpSync(path.join(REPO_ROOT, part), path.join(dir, part), { recursive: true });
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  const file = path.join(dir, 'dist', 'workflows', 'controller.js');
  const code = readFileSync(file, 'utf8');
  if (!code.includes(PASS_START)) throw new Error(`${file}: the start of a pass (${PASS_START.trim()}) is not there to change: update test/upgrade/variant-build.ts`);
  writeFileSync(file, code.replace(PASS_START, `        await (0, workflow_1.sleep)(1);\n${PASS_START}`));
  return { bin: path.join(dir, 'bin', 'lbaas.js'), buildId, remove: () => rmSync(path.dirname(dir), { recursive: true, force: true }) };
}
