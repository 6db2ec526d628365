import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'dist-cluster/**', 'dist-bench/**', 'dist-taskd/**', 'node_modules/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // Small files (test/house/houseRules.test.ts holds every file of these folders to it, C and shell too).
    files: ['src/**/*.ts', 'taskd/**/*.ts', 'devtools/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 350, skipBlankLines: false, skipComments: false }] },
  },
  {
    // The task daemon (taskd/) is a program of its own in the task containers: the broker imports none
    // of it, and it imports of the broker only the wire they share, which imports nothing.
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/taskd/**'], message: 'src/ imports nothing of the task daemon: shared wire types go in src/core/tasks/taskWire.ts.' }] }] },
  },
  {
    files: ['taskd/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^(\\.\\./)+src/(?!core/tasks/taskWire$)', message: 'taskd/ imports of the broker only src/core/tasks/taskWire.ts.' }] }] },
  },
  {
    // The core knows no HTTP, no engine, no backend and no environment: backends implement its ports,
    // the APIs call it, and the configuration is handed to it in the shapes it declares.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['**/api/**', '**/http/**', '**/backends/**', '**/config/**', '**/taskd/**'], message: 'src/core imports nothing from the APIs, the HTTP kernel, the backends, the configuration (it declares what it reads) or the task daemon.' },
          { group: ['dockerode', 'ws', 'node:http', 'http'], message: 'src/core knows no HTTP and no Docker.' },
        ],
      }],
    },
  },
  {
    // The HTTP kernel serves every API and knows none of them, nor the core or a backend.
    files: ['src/http/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['**/api/**', '**/core/**', '**/backends/**', '**/taskd/**'], message: 'src/http is the kernel: it imports no API, no core, no backend and no task daemon.' }],
      }],
    },
  },
  {
    // After the core's rule, which it narrows for this one file.
    files: ['src/core/tasks/taskWire.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '.', message: 'the task wire imports nothing: the daemon builds it alone.' }] }] },
  },
  { files: ['**/*.js', '**/*.cjs'], languageOptions: { globals: { module: 'writable', require: 'readonly', process: 'readonly', __dirname: 'readonly', console: 'readonly' } }, rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
