// The CLI as a module, for tests that drive the very code `npx sortie` runs.
export { run, usage } from './main.ts';
export { EXIT } from './core/exit-codes.ts';
