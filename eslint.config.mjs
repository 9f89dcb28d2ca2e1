// The linter of the TypeScript and JavaScript (`npm run lint`, and the node layer of `npm test`):
// ESLint's and typescript-eslint's recommended rules, without type information (a lint of the whole
// tree stays a few seconds). What the repository adds is at the end, each rule with why.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // Generated or built: napi writes the binding's loader and declarations; esbuild the bundles.
    ignores: [
      'dist/**',
      'out/**',
      'target/**',
      'fuzz/**',
      'node_modules/**',
      'native/node/index.js',
      'native/node/index.d.ts',
      'native/node/header.d.ts',
      '.vscode-test/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Node's scripts, tests and benches are CommonJS.
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
      // `const crypto = require('crypto')` names the module Node also has as a global: on purpose.
      'no-redeclare': ['error', { builtinGlobals: false }],
    },
  },
  {
    // Functions the UI tests hand to `page.evaluate` run in the browser.
    files: ['tests/ui/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { ...globals.node } },
  },
  {
    files: ['webview/src/**/*.ts'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['extension/src/**/*.ts', 'protocol/**/*.ts', 'tests/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    rules: {
      // `_`-prefixed names are unused on purpose (a destructured field left out, a callback's
      // position); everything else unused is a leftover.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // `try { process.kill(...) } catch {}`: a failure that is the outcome wanted (it had already
      // gone). Any other empty block is a leftover.
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
);
