// Lint rules that enforce the workflow sandbox boundary (docs/architecture.md#import-rules): workflow code is bundled
// into Temporal's deterministic sandbox, where Node built-ins do not exist and activities must only be imported as
// types.
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
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflow code runs in the Temporal sandbox: no Node built-ins.' })),
          patterns: [
            {
              group: ['**/activities', '**/activities/**', '**/worker/**', '**/client/**', '**/simulator/**', 'undici', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'],
              allowTypeImports: true,
              message: 'Workflow code may only import types from activities/worker/client (sandbox and determinism).',
            },
          ],
        },
      ],
    },
  },
);
