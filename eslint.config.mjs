// Lint rules that enforce the room boundaries (docs/architecture.md). Workflow code is bundled into Temporal's
// deterministic sandbox, where Node built-ins do not exist and activities must only be imported as types; domain/
// is the shared model that workflows, activities and the client import, so it obeys the same sandbox rules and
// imports nothing of theirs (every arrow points into it). contract/ is the Temporal contract that workflows,
// activities, the worker and clients share: loaded into the sandbox too, it imports only domain/ and Temporal's
// definitions, never the rooms that use it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test/fixtures/**', 'bin/**', 'scripts/*.js', 'eslint.config.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['workflows/**/*.ts', 'domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflow code runs in the Temporal sandbox: no Node built-ins.' })),
          patterns: [
            {
              group: ['**/activities', '**/activities/**', '**/worker/**', '**/client/**', '**/cli/**', '**/dev/**', '**/common/**', '**/simulator/**', 'undici', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'],
              allowTypeImports: true,
              message: 'Workflow code may only import types from activities/worker/client/cli/dev/common/simulator (sandbox and determinism).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'domain/ is loaded into the workflow sandbox: no Node built-ins.' })),
          patterns: [
            {
              group: ['**/workflows', '**/workflows/**', '**/contract', '**/contract/**', '**/activities', '**/activities/**', '**/worker/**', '**/client/**', '**/cli/**', '**/dev/**', '**/common/**', '**/simulator/**', '**/bench/**', '@temporalio/*', 'undici', 'zod'],
              message: 'domain/ is the shared model: it imports nothing from the rooms that use it, nor Temporal, nor I/O libraries.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['contract/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'contract/ is loaded into the workflow sandbox: no Node built-ins.' })),
          patterns: [
            {
              group: ['**/workflows', '**/workflows/**', '**/activities', '**/activities/**', '**/worker/**', '**/client/**', '**/cli/**', '**/dev/**', '**/common/**', '**/simulator/**', '**/bench/**', '@temporalio/client', '@temporalio/worker', '@temporalio/activity', 'undici', 'zod'],
              message: 'contract/ is what every room shares: it imports only domain/ and Temporal definitions (@temporalio/common, @temporalio/workflow).',
            },
          ],
        },
      ],
    },
  },
);
