#!/usr/bin/env node
// The `sortie` bin: the CLI is TypeScript run directly by Node 24 (no build step), so this shim only
// hands over to it. npx puts the project's Node 24 (the `node` devDependency) first on PATH.
import { run } from '../src/main.ts';

process.exitCode = await run(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
