import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'dist-bench/**', 'dist-taskd/**', 'node_modules/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // The core knows no HTTP, no engine and no backend: backends implement its ports, the APIs call it.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['**/api/**', '**/http/**', '**/backends/**'], message: 'src/core imports nothing from the APIs, the HTTP kernel or the backends.' },
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
        patterns: [{ group: ['**/api/**', '**/core/**', '**/backends/**'], message: 'src/http is the kernel: it imports no API, no core and no backend.' }],
      }],
    },
  },
  { files: ['**/*.js', '**/*.cjs'], languageOptions: { globals: { module: 'writable', require: 'readonly', process: 'readonly', __dirname: 'readonly', console: 'readonly' } }, rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
