#!/usr/bin/env node
// The `sortie` bin. The CLI is TypeScript run directly by Node 24 (no build step); `npx sortie` puts the
// project's Node 24 (the `node` devDependency) first on PATH. Started by an older Node (a `node` on PATH
// that cannot strip types, e.g. Node 20), this shim hands the same arguments to the project's Node instead
// of failing on the `.ts` import.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

if (process.features.typescript) {
  const { run } = await import('../src/main.ts');
  process.exitCode = await run(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
} else {
  const projectNode = fileURLToPath(new URL('../../node_modules/.bin/node', import.meta.url));
  if (!existsSync(projectNode)) {
    process.stderr.write(`sortie: needs Node 24 (this is ${process.version}); run npm install in the repository, then npx sortie\n`);
    process.exit(2);
  }
  const child = spawn(projectNode, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => (signal ? process.kill(process.pid, signal) : process.exit(code ?? 1)));
}
