import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The console's views (console/src/*.tsx) are TSX on Preact's automatic runtime, as esbuild bundles them.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  test: {
    include: ['{contracts,client,cloud,console,edge-agent,cli,test,scripts}/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', './scripts/summary-reporter.ts'],
  },
});
